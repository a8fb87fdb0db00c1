/* gx_fifo.c — loader for the FIFO eviction policy (gx_fifo.bpf.c): open the
 * skeleton, set the knobs (rodata) and the scope, load, attach, print stats
 * until SIGINT/SIGTERM, detach. */
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>

#include "loader_internal.h"
#include "gx_fifo.skel.h"

static struct gx_loader L = { .name = "fifo" };

static void stats(void *ud)
{
	struct gx_fifo *s = ud;

	printf("fifo: activate %llu access %llu evict %llu\n", (unsigned long long)s->bss->nr_activate, (unsigned long long)s->bss->nr_access, (unsigned long long)s->bss->nr_evict);
}

int main(int argc, char **argv)
{
	struct bpf_link *link;
	struct gx_fifo *s;
	int err;

	gx_loader_parse(&L, argc, argv, "", NULL, NULL);
	s = gx_fifo__open();
	if (!s)
		return gx_loader_fail(&L, "open", -errno);
	if (!s->struct_ops.fifo_ops) {
		gx_fifo__destroy(s);
		return gx_loader_fail(&L, "struct_ops shadow (libbpf >= 1.4 needed)", -ENOTSUP);
	}
	gx_loader_scope(&L, &s->struct_ops.fifo_ops->scope, &s->struct_ops.fifo_ops->scope_id);
	err = gx_fifo__load(s);
	if (err) {
		gx_fifo__destroy(s);
		return gx_loader_fail(&L, "load", err);
	}
	link = bpf_map__attach_struct_ops(s->maps.fifo_ops);
	if (!link) {
		err = -errno;
		gx_fifo__destroy(s);
		return gx_loader_fail(&L, "attach", err);
	}
	gx_loader_run(&L, stats, s);
	bpf_link__destroy(link);
	gx_fifo__destroy(s);
	return 0;
}
