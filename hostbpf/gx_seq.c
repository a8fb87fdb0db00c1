/* gx_seq.c — loader for the sequential prefetch policy (gx_seq.bpf.c): open the
 * skeleton, set the knobs (rodata) and the scope, load, attach, print stats
 * until SIGINT/SIGTERM, detach. */
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>

#include "loader_internal.h"
#include "gx_seq.skel.h"

static struct gx_loader L = { .name = "seq" };
static unsigned long ahead_pages = 512;
static unsigned long next_regions = 1;

static int opt(int o, const char *arg)
{
	switch (o) {
	case 'a':
		return gx_loader_uint(arg, 1, 512, &ahead_pages);
	case 'n':
		return gx_loader_uint(arg, 0, 32, &next_regions);
	}
	return -1;
}

static void stats(void *ud)
{
	struct gx_seq *s = ud;

	printf("seq: prefetch %llu next %llu\n", (unsigned long long)s->bss->nr_prefetch, (unsigned long long)s->bss->nr_next);
}

int main(int argc, char **argv)
{
	struct bpf_link *link;
	struct gx_seq *s;
	int err;

	gx_loader_parse(&L, argc, argv, "a:n:", "  -a N          pages to prefetch from the fault on (default 512)\n"
		"  -n N          regions to fetch ahead from the upper half (default 1)\n", opt);
	s = gx_seq__open();
	if (!s)
		return gx_loader_fail(&L, "open", -errno);
	if (!s->struct_ops.seq_ops) {
		gx_seq__destroy(s);
		return gx_loader_fail(&L, "struct_ops shadow (libbpf >= 1.4 needed)", -ENOTSUP);
	}
	s->rodata->ahead_pages = ahead_pages;
	s->rodata->next_regions = next_regions;
	gx_loader_scope(&L, &s->struct_ops.seq_ops->scope, &s->struct_ops.seq_ops->scope_id);
	err = gx_seq__load(s);
	if (err) {
		gx_seq__destroy(s);
		return gx_loader_fail(&L, "load", err);
	}
	link = bpf_map__attach_struct_ops(s->maps.seq_ops);
	if (!link) {
		err = -errno;
		gx_seq__destroy(s);
		return gx_loader_fail(&L, "attach", err);
	}
	gx_loader_run(&L, stats, s);
	bpf_link__destroy(link);
	gx_seq__destroy(s);
	return 0;
}
