/* gx_lfu.c — loader for the LFU eviction policy (gx_lfu.bpf.c): open the
 * skeleton, set the knobs (rodata) and the scope, load, attach, print stats
 * until SIGINT/SIGTERM, detach. */
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>

#include "loader_internal.h"
#include "gx_lfu.skel.h"

static struct gx_loader L = { .name = "lfu" };
static unsigned long hot_threshold = 4;

static int opt(int o, const char *arg)
{
	switch (o) {
	case 't':
		return gx_loader_uint(arg, 1, 1u << 30, &hot_threshold);
	}
	return -1;
}

static void stats(void *ud)
{
	struct gx_lfu *s = ud;

	printf("lfu: spared %llu evicted %llu\n", (unsigned long long)s->bss->nr_spared, (unsigned long long)s->bss->nr_evicted);
}

int main(int argc, char **argv)
{
	struct bpf_link *link;
	struct gx_lfu *s;
	int err;

	gx_loader_parse(&L, argc, argv, "t:", "  -t N          accesses since the last reprieve that make a region hot (default 4)\n", opt);
	s = gx_lfu__open();
	if (!s)
		return gx_loader_fail(&L, "open", -errno);
	if (!s->struct_ops.lfu_ops) {
		gx_lfu__destroy(s);
		return gx_loader_fail(&L, "struct_ops shadow (libbpf >= 1.4 needed)", -ENOTSUP);
	}
	s->rodata->hot_threshold = hot_threshold;
	gx_loader_scope(&L, &s->struct_ops.lfu_ops->scope, &s->struct_ops.lfu_ops->scope_id);
	err = gx_lfu__load(s);
	if (err) {
		gx_lfu__destroy(s);
		return gx_loader_fail(&L, "load", err);
	}
	link = bpf_map__attach_struct_ops(s->maps.lfu_ops);
	if (!link) {
		err = -errno;
		gx_lfu__destroy(s);
		return gx_loader_fail(&L, "attach", err);
	}
	gx_loader_run(&L, stats, s);
	bpf_link__destroy(link);
	gx_lfu__destroy(s);
	return 0;
}
