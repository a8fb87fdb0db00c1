/* gx_mru.c — loader for the MRU eviction policy (gx_mru.bpf.c): open the
 * skeleton, set the knobs (rodata) and the scope, load, attach, print stats
 * until SIGINT/SIGTERM, detach. */
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>

#include "loader_internal.h"
#include "gx_mru.skel.h"

static struct gx_loader L = { .name = "mru" };

static void stats(void *ud)
{
	struct gx_mru *s = ud;

	printf("mru: moved %llu\n", (unsigned long long)s->bss->nr_moved);
}

int main(int argc, char **argv)
{
	struct bpf_link *link;
	struct gx_mru *s;
	int err;

	gx_loader_parse(&L, argc, argv, "", NULL, NULL);
	s = gx_mru__open();
	if (!s)
		return gx_loader_fail(&L, "open", -errno);
	if (!s->struct_ops.mru_ops) {
		gx_mru__destroy(s);
		return gx_loader_fail(&L, "struct_ops shadow (libbpf >= 1.4 needed)", -ENOTSUP);
	}
	gx_loader_scope(&L, &s->struct_ops.mru_ops->scope, &s->struct_ops.mru_ops->scope_id);
	err = gx_mru__load(s);
	if (err) {
		gx_mru__destroy(s);
		return gx_loader_fail(&L, "load", err);
	}
	link = bpf_map__attach_struct_ops(s->maps.mru_ops);
	if (!link) {
		err = -errno;
		gx_mru__destroy(s);
		return gx_loader_fail(&L, "attach", err);
	}
	gx_loader_run(&L, stats, s);
	bpf_link__destroy(link);
	gx_mru__destroy(s);
	return 0;
}
