/* gx_quota.c — loader for the per-process quota eviction policy (gx_quota.bpf.c): open the
 * skeleton, set the knobs (rodata) and the scope, load, attach, print stats
 * until SIGINT/SIGTERM, detach. */
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>

#include "loader_internal.h"
#include "gx_quota.skel.h"

static struct gx_loader L = { .name = "quota" };
static unsigned long quota = 16;

static int opt(int o, const char *arg)
{
	switch (o) {
	case 'q':
		return gx_loader_uint(arg, 1, 1u << 30, &quota);
	}
	return -1;
}

static void stats(void *ud)
{
	struct gx_quota *s = ud;

	printf("quota: within %llu over %llu\n", (unsigned long long)s->bss->nr_within, (unsigned long long)s->bss->nr_over);
}

int main(int argc, char **argv)
{
	struct bpf_link *link;
	struct gx_quota *s;
	int err;

	gx_loader_parse(&L, argc, argv, "q:", "  -q N          regions (2 MiB) a process keeps at the normal place (default 16)\n", opt);
	s = gx_quota__open();
	if (!s)
		return gx_loader_fail(&L, "open", -errno);
	if (!s->struct_ops.quota_ops) {
		gx_quota__destroy(s);
		return gx_loader_fail(&L, "struct_ops shadow (libbpf >= 1.4 needed)", -ENOTSUP);
	}
	s->rodata->quota = quota;
	gx_loader_scope(&L, &s->struct_ops.quota_ops->scope, &s->struct_ops.quota_ops->scope_id);
	err = gx_quota__load(s);
	if (err) {
		gx_quota__destroy(s);
		return gx_loader_fail(&L, "load", err);
	}
	link = bpf_map__attach_struct_ops(s->maps.quota_ops);
	if (!link) {
		err = -errno;
		gx_quota__destroy(s);
		return gx_loader_fail(&L, "attach", err);
	}
	gx_loader_run(&L, stats, s);
	bpf_link__destroy(link);
	gx_quota__destroy(s);
	return 0;
}
