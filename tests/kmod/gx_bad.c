/* gx_bad.c — loader for the deliberately broken test policy (gx_bad.bpf.c). */
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>

#include "loader_internal.h"
#include "gx_bad.skel.h"

static struct gx_loader L = { .name = "bad" };

static void stats(void *ud)
{
	struct gx_bad *s = ud;

	printf("bad: calls %llu\n", (unsigned long long)s->bss->nr_calls);
}

int main(int argc, char **argv)
{
	struct bpf_link *link;
	struct gx_bad *s;
	int err;

	gx_loader_parse(&L, argc, argv, "", NULL, NULL);
	s = gx_bad__open();
	if (!s || !s->struct_ops.bad_ops)
		return gx_loader_fail(&L, "open", -EINVAL);
	gx_loader_scope(&L, &s->struct_ops.bad_ops->scope, &s->struct_ops.bad_ops->scope_id);
	err = gx_bad__load(s);
	if (err) {
		gx_bad__destroy(s);
		return gx_loader_fail(&L, "load", err);
	}
	link = bpf_map__attach_struct_ops(s->maps.bad_ops);
	if (!link) {
		err = -errno;
		gx_bad__destroy(s);
		return gx_loader_fail(&L, "attach", err);
	}
	gx_loader_run(&L, stats, s);
	bpf_link__destroy(link);
	gx_bad__destroy(s);
	return 0;
}
