/* gx_tenant.c — loader of the tenant scheduling policies (gx_lcfirst,
 * gx_tbucket, gx_lcslo: `-o OBJ`) into gpuext.ko, through libbpf without a
 * skeleton (one loader for the three objects, whatever their knobs).
 *
 * Why, when gpuext.ko never calls task_launch: the same objects run in the
 * shim where no module can be loaded, and this is where the kernel's
 * verifier checks them against the module's own gpu_sched_ops (the QEMU
 * test attaches each). Their queue handlers, if any, do run here. Knobs
 * keep the defaults they were compiled with. */
#include <bpf/libbpf.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "gpuext/gpu_ext.h"
#include "loader_internal.h"

static struct gx_loader L = { .name = "tenant" };
static const char *obj_path;

static int opt(int o, const char *arg)
{
	if (o != 'o')
		return -1;
	obj_path = arg;
	return 0;
}

static void stats(void *ud)
{
	(void)ud;
}

int main(int argc, char **argv)
{
	struct bpf_object *obj;
	struct bpf_map *ops = NULL, *m;
	struct bpf_link *link;
	int err;

	gx_loader_parse(&L, argc, argv, "o:", "  -o OBJ        the policy object (gx_lcfirst.bpf.o, gx_tbucket.bpf.o, gx_lcslo.bpf.o)\n",
			opt);
	if (!obj_path) {
		fprintf(stderr, "gx_tenant: -o OBJ is required\n");
		return 2;
	}
	obj = bpf_object__open_file(obj_path, NULL);
	if (!obj)
		return gx_loader_fail(&L, "open", -errno);
	bpf_object__for_each_map(m, obj)
		if (bpf_map__type(m) == BPF_MAP_TYPE_STRUCT_OPS)
			ops = m;
	size_t sz = 0;
	struct gpu_sched_ops *shadow = ops ? bpf_map__initial_value(ops, &sz) : NULL;
	if (!shadow || sz < sizeof(*shadow)) {
		bpf_object__close(obj);
		return gx_loader_fail(&L, "finding its gpu_sched_ops", -ENOENT);
	}
	gx_loader_scope(&L, &shadow->scope, (unsigned long long *)&shadow->scope_id);
	err = bpf_object__load(obj);
	if (err) {
		bpf_object__close(obj);
		return gx_loader_fail(&L, "load", err);
	}
	link = bpf_map__attach_struct_ops(ops);
	if (!link) {
		err = -errno;
		bpf_object__close(obj);
		return gx_loader_fail(&L, "attach", err);
	}
	gx_loader_run(&L, stats, NULL);
	bpf_link__destroy(link);
	bpf_object__close(obj);
	return 0;
}
