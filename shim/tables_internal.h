/* tables_internal.h — what the shim remembers about the application's handles.
 *
 * Handle policy: the application always holds the handle of what we loaded
 * (the module/library built from rewritten PTX, or the original when we
 * passed it through). Every later call on that handle therefore reaches the
 * rewritten code without any translation; these tables only add what the
 * driver cannot tell us cheaply (kernel names for events, the rewritten PTX
 * buffer to free at unload, link-state bookkeeping) and are never read on
 * the no-subscriber launch path.
 *
 * Tables are per context (modules and functions belong to one), with a
 * context-less table (ctx NULL) for CUlibrary/CUkernel handles. One mutex
 * guards them all; lookups copy out what they need. */
#ifndef SHIM_TABLES_INTERNAL_H
#define SHIM_TABLES_INTERNAL_H

#include "shim/shim_internal.h"

/* A module or library loaded through us. `keep` (malloc'd, may be NULL) is
 * the image we loaded in place of the application's: freed at unload. */
int gx_tab_add_mod(CUcontext ctx, void *handle, bool is_library, bool rewritten, void *keep, unsigned id);
/* Forget a module/library (and its functions); frees `keep`. 0 or -ENOENT.
 * side (may be NULL): where the module loaded beside it is (gx_tab_set_side),
 * for the caller to unload. */
int gx_tab_del_mod(void *handle, void **side);
/* The module (or library) loaded beside an application's one for its
 * persistent copies (load_internal.h, gx_prep.side). 0 or -ENOENT. */
int gx_tab_set_side(void *handle, void *side);
/* That module or library (NULL if none); *is_library: which. */
void *gx_tab_side(void *handle, bool *is_library);
/* Record a function/kernel handle obtained from a module/library we know. */
int gx_tab_add_func(CUcontext ctx, void *handle, void *mod, bool is_kernel, const char *name);
/* Forget every function recorded under module/library `mod` (a live
 * attach's copy, unloaded: never a module of the tables). */
void gx_tab_forget_funcs(void *mod);
/* Name of a function/kernel (copied into buf), whether it is a CUkernel and
 * its module/library (each out-pointer may be NULL). Looks in ctx's table,
 * then the context-less one. 0 or -ENOENT. */
int gx_tab_func_info(CUcontext ctx, void *handle, char *buf, size_t len, bool *is_kernel, void **mod);
/* The same name for a launch, from this thread's cache of its last few
 * functions (no lock while no function left the tables): valid until this
 * thread's next call; NULL if unknown. Names longer than GX_TAB_NAME_MAX - 1
 * bytes are cut. */
#define GX_TAB_NAME_MAX 512
const char *gx_tab_func_name(CUcontext ctx, void *handle, bool *is_kernel);
/* Module id and rewritten flag of a module/library handle. 0 or -ENOENT. */
int gx_tab_mod_info(void *handle, unsigned *id, bool *rewritten);
/* A live attach (live.c): the PTX a passed-through module's cubin carries
 * (malloc'd, owned by the table from now on, freed at unload). */
int gx_tab_set_src(void *handle, char *src);
/* What a live attach needs of a module: a copy of the PTX it was loaded
 * from (the rewritten text, or the PTX its cubin carries), its context
 * (NULL for a library), library flag, id. 0, -ENOENT (unknown), -ENODATA
 * (no PTX kept: SASS only, an -rdc cubin) or -ENOMEM. */
struct gx_tab_mod {
	void *handle;
	CUcontext ctx;
	bool is_library;
	unsigned id;
	char *ptx; /* malloc'd copy */
};
int gx_tab_mod_source(void *handle, struct gx_tab_mod *out);
/* The application asked for the address of one of the module's variables
 * (modstate.c): the host may write them from now on. 0 or -ENOENT (not a
 * module or library of the tables: a library's module in some context). */
int gx_tab_mark_host_state(void *handle);
bool gx_tab_host_state(void *handle);
/* Up to max module/library handles into out; how many there are. */
size_t gx_tab_mod_handles(void **out, size_t max);
/* A context is gone: drop everything recorded under it. */
void gx_tab_ctx_gone(CUcontext ctx);
/* Primary-context reference counting (cuDevicePrimaryCtxRetain/Release):
 * returns the count after the change. */
int gx_tab_primary_ref(CUcontext ctx, int delta);
/* Counts, for tests and debug logs. */
void gx_tab_counts(size_t *nr_ctx, size_t *nr_mods, size_t *nr_funcs);
/* Free everything (library unload / tests). */
void gx_tab_clear(void);

#endif
