/* gx_prio.c — loader for the timeslice-by-priority scheduling policy (gx_prio.bpf.c): open the
 * skeleton, set the knobs (rodata) and the scope, load, attach, print stats
 * until SIGINT/SIGTERM, detach. */
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>

#include "loader_internal.h"
#include "gx_prio.skel.h"

static struct gx_loader L = { .name = "prio" };
static unsigned long base_us = 1024;
static unsigned long max_queues = 0;

static int opt(int o, const char *arg)
{
	switch (o) {
	case 'b':
		return gx_loader_uint(arg, 64, 1000000, &base_us);
	case 'm':
		return gx_loader_uint(arg, 0, 65536, &max_queues);
	}
	return -1;
}

static void stats(void *ud)
{
	struct gx_prio *s = ud;

	printf("prio: bound %llu rejected %llu destroyed %llu\n", (unsigned long long)s->bss->nr_bound, (unsigned long long)s->bss->nr_rejected, (unsigned long long)s->bss->nr_destroyed);
}

int main(int argc, char **argv)
{
	struct bpf_link *link;
	struct gx_prio *s;
	int err;

	gx_loader_parse(&L, argc, argv, "b:m:", "  -b N          timeslice of priority 0, in microseconds (default 1024)\n"
		"  -m N          queues a process may bind (0: no limit) (default 0)\n", opt);
	s = gx_prio__open();
	if (!s)
		return gx_loader_fail(&L, "open", -errno);
	if (!s->struct_ops.prio_ops) {
		gx_prio__destroy(s);
		return gx_loader_fail(&L, "struct_ops shadow (libbpf >= 1.4 needed)", -ENOTSUP);
	}
	s->rodata->base_us = base_us;
	s->rodata->max_queues = max_queues;
	gx_loader_scope(&L, &s->struct_ops.prio_ops->scope, &s->struct_ops.prio_ops->scope_id);
	err = gx_prio__load(s);
	if (err) {
		gx_prio__destroy(s);
		return gx_loader_fail(&L, "load", err);
	}
	link = bpf_map__attach_struct_ops(s->maps.prio_ops);
	if (!link) {
		err = -errno;
		gx_prio__destroy(s);
		return gx_loader_fail(&L, "attach", err);
	}
	gx_loader_run(&L, stats, s);
	bpf_link__destroy(link);
	gx_prio__destroy(s);
	return 0;
}
