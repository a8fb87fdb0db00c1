/* policy_internal.h — the policy code linked into a module (policy.c): what its
 * symbols were renamed to, which device-runtime blocks it declares, and
 * where it ends. pass_link.c fills it; hook sites (site.c, probe.c) add the
 * built-in probe handler and handler clones after it; the trampolines
 * (pass_tramp.c) go after all of it, since they call it. */
#ifndef PTX_POLICY_H
#define PTX_POLICY_H

#include <stddef.h>

#include "ptx-rewrite/ptx_ir_internal.h"

/* A policy symbol renamed by pass_link (old → new). */
struct ptx_rename {
	const char *from, *to;
};

struct ptx_policy {
	struct ptx_rename *renames;
	size_t nr_renames;
	/* the runtime blocks the policy code declares, bit k for
	 * __gx_devrt__p<k> (bit 0: __gx_devrt, always defined) */
	unsigned devrt_blocks;
	struct ptx_item *last; /* last item of the policy code, NULL: none */
};

/* The name a policy symbol has after linking (itself if not renamed). */
const char *ptx_policy_name(const struct ptx_policy *p, const char *name);
/* Rename `from` to "<prefix>_p_<from>". 0 or -ENOMEM. */
int ptx_policy_rename(struct ptx_policy *p, struct ptx_module *m, const char *from);
/* Insert the chain first..last after the policy code (after the module
 * header when there is none); it becomes the policy code's end. */
void ptx_policy_append(struct ptx_policy *p, struct ptx_module *m, struct ptx_item *first, struct ptx_item *last);
/* Insert first..last after `at` (a policy item); the policy code's end
 * moves when `at` was it. */
void ptx_policy_insert_after(struct ptx_policy *p, struct ptx_module *m, struct ptx_item *at, struct ptx_item *first,
			     struct ptx_item *last);
void ptx_policy_free(struct ptx_policy *p);

#endif
