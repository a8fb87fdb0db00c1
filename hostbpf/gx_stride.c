/* gx_stride.c — loader for the stride prefetch policy (gx_stride.bpf.c): open the
 * skeleton, set the knobs (rodata) and the scope, load, attach, print stats
 * until SIGINT/SIGTERM, detach. */
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>

#include "loader_internal.h"
#include "gx_stride.skel.h"

static struct gx_loader L = { .name = "stride" };
static unsigned long confidence = 1;
static unsigned long depth = 2;
static unsigned long chunk = 65536;

static int opt(int o, const char *arg)
{
	switch (o) {
	case 'k':
		return gx_loader_uint(arg, 0, 1000, &confidence);
	case 'd':
		return gx_loader_uint(arg, 1, 8, &depth);
	case 's':
		return gx_loader_uint(arg, 4096, 67108864, &chunk);
	}
	return -1;
}

static void stats(void *ud)
{
	struct gx_stride *s = ud;

	printf("stride: predicted %llu requests %llu\n", (unsigned long long)s->bss->nr_predicted, (unsigned long long)s->bss->nr_requests);
}

int main(int argc, char **argv)
{
	struct bpf_link *link;
	struct gx_stride *s;
	int err;

	gx_loader_parse(&L, argc, argv, "k:d:s:", "  -k N          repeats of a stride before predicting (default 1)\n"
		"  -d N          strides to prefetch ahead (default 2)\n"
		"  -s N          bytes per prediction (default 65536)\n", opt);
	s = gx_stride__open();
	if (!s)
		return gx_loader_fail(&L, "open", -errno);
	if (!s->struct_ops.stride_ops) {
		gx_stride__destroy(s);
		return gx_loader_fail(&L, "struct_ops shadow (libbpf >= 1.4 needed)", -ENOTSUP);
	}
	s->rodata->confidence = confidence;
	s->rodata->depth = depth;
	s->rodata->chunk = chunk;
	gx_loader_scope(&L, &s->struct_ops.stride_ops->scope, &s->struct_ops.stride_ops->scope_id);
	err = gx_stride__load(s);
	if (err) {
		gx_stride__destroy(s);
		return gx_loader_fail(&L, "load", err);
	}
	link = bpf_map__attach_struct_ops(s->maps.stride_ops);
	if (!link) {
		err = -errno;
		gx_stride__destroy(s);
		return gx_loader_fail(&L, "attach", err);
	}
	gx_loader_run(&L, stats, s);
	bpf_link__destroy(link);
	gx_stride__destroy(s);
	return 0;
}
