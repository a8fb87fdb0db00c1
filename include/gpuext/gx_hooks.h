/* gx_hooks.h — how policy code is bound to hook sites: the contract between
 * whoever produces policy PTX (devbpf's JIT, attach/) and ptx-rewrite, which
 * places the sites and links the code. Also the kernel id both sides use to
 * name a kernel (struct gdev_ctx.kernel_id, the tools' records). */
#ifndef GX_HOOKS_H
#define GX_HOOKS_H

#include "gpuext/gdev_ctx.h"

/* One policy function bound to a hook, for the kernels matching a glob.
 * Made from a policy's section names (gdev/probe/<glob> etc.). */
struct gx_hook_binding {
	unsigned hook;           /* one enum gdev_hook bit */
	const char *kernel_glob; /* fnmatch(3) pattern on the mangled name; NULL = all */
	const char *func;        /* .func name defined in opts->policy_ptx */
};

/* The u32 .data global a device program declares to be sampled at its
 * memory sites: `__u32 gx_mem_sample SEC(".data") = N;` — the site calls
 * it for 1 warp access in N, decided per warp by the elected leader before
 * any context or call (ptx-rewrite/site_sample.c;
 * gx_ptx_rewrite_opts.bind_samples). */
#define GX_MEM_SAMPLE_VAR "gx_mem_sample"

/* FNV-1a 64 of a kernel name: the kernel_id seen in struct gdev_ctx. */
static inline unsigned long long gx_kernel_id(const char *name)
{
	unsigned long long h = 0xcbf29ce484222325ull;
	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 0x100000001b3ull;
	return h;
}

#endif
