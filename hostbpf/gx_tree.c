/* gx_tree.c — loader for the tree-style adaptive prefetch policy (gx_tree.bpf.c): open the
 * skeleton, set the knobs (rodata) and the scope, load, attach, print stats
 * until SIGINT/SIGTERM, detach. */
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>

#include "loader_internal.h"
#include "gx_tree.skel.h"

static struct gx_loader L = { .name = "tree" };
static unsigned long threshold = 51;
static unsigned long adaptive = 1;

static int opt(int o, const char *arg)
{
	switch (o) {
	case 't':
		return gx_loader_uint(arg, 1, 100, &threshold);
	case 'a':
		return gx_loader_uint(arg, 0, 1, &adaptive);
	}
	return -1;
}

static void stats(void *ud)
{
	struct gx_tree *s = ud;

	printf("tree: faults %llu grown %llu\n", (unsigned long long)s->bss->nr_faults, (unsigned long long)s->bss->nr_grown);
}

int main(int argc, char **argv)
{
	struct bpf_link *link;
	struct gx_tree *s;
	int err;

	gx_loader_parse(&L, argc, argv, "t:a:", "  -t N          occupancy percent a subregion needs (default 51)\n"
		"  -a N          lower the threshold on ascending runs (default 1)\n", opt);
	s = gx_tree__open();
	if (!s)
		return gx_loader_fail(&L, "open", -errno);
	if (!s->struct_ops.tree_ops) {
		gx_tree__destroy(s);
		return gx_loader_fail(&L, "struct_ops shadow (libbpf >= 1.4 needed)", -ENOTSUP);
	}
	s->rodata->threshold = threshold;
	s->rodata->adaptive = adaptive;
	gx_loader_scope(&L, &s->struct_ops.tree_ops->scope, &s->struct_ops.tree_ops->scope_id);
	err = gx_tree__load(s);
	if (err) {
		gx_tree__destroy(s);
		return gx_loader_fail(&L, "load", err);
	}
	link = bpf_map__attach_struct_ops(s->maps.tree_ops);
	if (!link) {
		err = -errno;
		gx_tree__destroy(s);
		return gx_loader_fail(&L, "attach", err);
	}
	gx_loader_run(&L, stats, s);
	bpf_link__destroy(link);
	gx_tree__destroy(s);
	return 0;
}
