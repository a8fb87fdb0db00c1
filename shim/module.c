/* module.c — every way an application loads code into a context, and the
 * handle chain after it. Each load goes through gx_prepare(): the rewritten
 * PTX is loaded with the application's own options (JIT options the driver
 * writes back land in the application's arrays, since we pass them through);
 * if the driver rejects it, the original image is loaded instead. The handle
 * returned is always the one of what was loaded (see tables_internal.h), so
 * cuLibraryGetModule, cuModuleGetGlobal, cuLibraryGetGlobal... need no
 * wrapper: they already act on the rewritten code. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim/link_internal.h"
#include "shim/load_internal.h"
#include "shim/shim_ev_internal.h"
#include "shim/stats_internal.h"
#include "shim/tables_internal.h"

static CUcontext cur_ctx(void)
{
	CUcontext c = NULL;
	if (REAL(cuCtxGetCurrent)(&c) != CUDA_SUCCESS)
		c = NULL;
	return c;
}

/* side: the module or library of its persistent copies loaded beside the
 * application's image (p->side), or NULL. */
static void loaded(const char *api, void *handle, bool is_library, struct gx_prep *p, bool rewritten, void *side)
{
	CUcontext c = is_library ? NULL : cur_ctx();
	gx_tab_add_mod(c, handle, is_library, rewritten, rewritten ? p->ptx : NULL, p->id);
	if (side)
		gx_tab_set_side(handle, side);
	if ((rewritten || side) && p->log)
		gx_sched_module(handle, is_library, p->log, side);
	if (rewritten)
		p->ptx = NULL; /* now owned by the table until unload */
	else if (p->carried)
		gx_tab_set_src(handle, p->carried); /* for a later gpuext attach */
	p->carried = NULL;
	gx_live_loaded(handle);
	if (gx_ev_on(GX_EV_MODULE_LOAD)) {
		struct gx_event ev = { .kind = GX_EV_MODULE_LOAD, .ctx = c };
		ev.module.handle = handle;
		ev.module.is_library = is_library;
		ev.module.api = api;
		ev.module.rewritten = rewritten;
		ev.module.reason = rewritten ? NULL : p->why;
		gx_ev_raise(&ev);
	}
	gx_prep_free(p);
}

/* Module loads with options: the common path of four entry points. `orig`
 * loads the application's image as it came. */
typedef CUresult (*orig_fn)(CUmodule *m, const void *arg, unsigned n, CUjit_option *o, void **v);

/* Load code (a cubin or PTX) as a module, or as a library. */
static CUresult load_code(bool is_library, void *out, const void *code, unsigned n, CUjit_option *o, void **v,
			  CUlibraryOption *lo, void **lv, unsigned nl)
{
	return is_library ? REAL(cuLibraryLoadData)(out, code, o, v, n, lo, lv, nl)
			  : REAL(cuModuleLoadDataEx)(out, code, n, o, v);
}

/* Load p's rewritten code: its cubin where the module cache has or makes
 * one (not for p->ptx_load), else, or if the driver refuses the cubin, its
 * PTX. */
static CUresult load_prepared(struct gx_prep *p, bool is_library, void *out, unsigned n, CUjit_option *o, void **v,
			      CUlibraryOption *lo, void **lv, unsigned nl)
{
	void *cubin = NULL;
	size_t clen = 0;
	CUresult rc = CUDA_ERROR_INVALID_IMAGE;
	if (!p->ptx_load && gx_prep_cubin(p, is_library, n, o, &cubin, &clen)) {
		rc = load_code(is_library, out, cubin, n, o, v, lo, lv, nl);
		free(cubin);
		if (rc != CUDA_SUCCESS)
			p->cubin = 0;
	}
	if (rc != CUDA_SUCCESS)
		rc = load_code(is_library, out, p->ptx, n, o, v, lo, lv, nl);
	return rc;
}

/* p->side: the application's image loads as it came, with its own
 * options; the persistent copies load beside it with none (the
 * application's option arrays are written back by its own load only). A
 * copies' module the driver refuses leaves the image's kernels as they are. */
static CUresult load_side(const char *api, void *app, bool is_library, struct gx_prep *p, CUresult app_rc)
{
	if (app_rc != CUDA_SUCCESS) {
		gx_prep_free(p);
		return app_rc;
	}
	void *side = NULL;
	CUresult rs = load_prepared(p, is_library, &side, 0, NULL, NULL, NULL, NULL, 0);
	if (rs != CUDA_SUCCESS) {
		char b[96];
		pr_warn("module %u (%s): loaded as it came; the module of its persistent copies was rejected (%s): its "
			"kernels run unchanged",
			p->id, api, gx_cu_errname(rs, b, sizeof(b)));
		snprintf(p->why, sizeof(p->why), "its copies' module rejected");
		side = NULL;
	} else {
		gx_log_side(api, p);
	}
	loaded(api, app, is_library, p, false, side);
	return app_rc;
}

/* GPUEXT_LAUNCH_SAMPLE (launch_sample.c): the application's image loaded
 * as it came (app_rc; its handle in *out), its instrumented copy beside it,
 * on the load path and with no options, for the launch switch to run on the
 * sampled launches. A copy the driver refuses leaves the image's kernels
 * uninstrumented, as a passed-through image's. */
static CUresult load_sampled(const char *api, void *out, bool is_library, struct gx_prep *p, CUresult app_rc)
{
	if (app_rc != CUDA_SUCCESS) {
		gx_prep_free(p);
		return app_rc;
	}
	void *app = *(void **)out, *copy = NULL;
	unsigned id = p->id, hooks = p->nr_hooks;
	bool vars = p->async_vars;
	CUresult rc = load_prepared(p, is_library, &copy, 0, NULL, NULL, NULL, NULL, 0);
	char b[96];
	if (rc != CUDA_SUCCESS) {
		pr_warn("%s %u (%s): loaded as it came; its instrumented copy was rejected (%s): its kernels run "
			"uninstrumented",
			is_library ? "library" : "module", id, api, gx_cu_errname(rc, b, sizeof(b)));
		snprintf(p->why, sizeof(p->why), "its instrumented copy rejected");
		copy = NULL;
	} else {
		gx_stats_module(GX_STATS_MOD_REWRITTEN, NULL);
		char cub[80];
		gx_log_cubin(p, cub, sizeof(cub));
		pr_info("%s %u (%s): loaded as it came, its instrumented copy (%u hooks, sm_%u%s) beside it for "
			"the sampled launches (GPUEXT_LAUNCH_SAMPLE)",
			is_library ? "library" : "module", id, api, hooks, p->sm, cub[0] ? cub : ", its PTX");
		snprintf(p->why, sizeof(p->why), "instrumented copy for sampled launches");
	}
	loaded(api, app, is_library, p, false, NULL);
	if (copy && !gx_live_async_add(app, is_library ? NULL : cur_ctx(), is_library, id, vars, copy)) {
		if (is_library)
			REAL(cuLibraryUnload)((CUlibrary)copy);
		else
			REAL(cuModuleUnload)((CUmodule)copy);
	}
	return app_rc;
}

static CUresult mod_load(const char *api, CUmodule *module, const void *img, size_t avail, unsigned n, CUjit_option *o,
			 void **v, orig_fn orig, const void *orig_arg)
{
	struct gx_prep p = { 0 };
	unsigned nr_rw, nr_pass;
	if (!module)
		return orig(module, orig_arg, n, o, v);
	if (gx_link_cubin_info(img, &nr_rw, &nr_pass) == 0) {
		/* The output of cuLinkComplete: its PTX inputs went through us. */
		p.id = gx_next_module_id();
		CUresult rc = orig(module, orig_arg, n, o, v);
		if (rc == CUDA_SUCCESS) {
			pr_info("module %u (%s): linked by cuLinkComplete from %u rewritten and %u passed-through "
				"inputs, loaded",
				p.id, api, nr_rw, nr_pass);
			snprintf(p.why, sizeof(p.why), "cuLink output");
			loaded(api, *module, false, &p, false, NULL);
		}
		return rc;
	}
	if (gx_prepare(api, img, avail, false, &p)) {
		if (p.side) {
			CUresult rc = orig(module, orig_arg, n, o, v);
			return load_side(api, rc == CUDA_SUCCESS ? *module : NULL, false, &p, rc);
		}
		if (gx_jit_async_take(&p, n, o)) { /* the copy compiles off the load path */
			CUresult rc = orig(module, orig_arg, n, o, v);
			if (rc == CUDA_SUCCESS) {
				gx_log_async(api, &p);
				/* in the tables before a worker can hand its copy over */
				struct gx_prep a = { .id = p.id,
						     .ptx = p.ptx,
						     .len = p.len,
						     .nr_hooks = p.nr_hooks,
						     .async_vars = p.async_vars };
				p.ptx = NULL;
				snprintf(p.why, sizeof(p.why), "its instrumented copy compiles off the load path");
				loaded(api, *module, false, &p, false, NULL);
				gx_jit_async_queue(*module, cur_ctx(), &a);
				gx_prep_free(&a);
			}
			gx_prep_free(&p);
			return rc;
		}
		if (gx_launch_sample_take(&p, n, o))
			return load_sampled(api, module, false, &p, orig(module, orig_arg, n, o, v));
		CUresult rc = load_prepared(&p, false, module, n, o, v, NULL, NULL, 0);
		if (rc == CUDA_SUCCESS) {
			gx_log_reloaded(api, &p);
			loaded(api, *module, false, &p, true, NULL);
			return rc;
		}
		gx_log_fallback(api, &p, rc);
		snprintf(p.why, sizeof(p.why), "rewritten PTX rejected");
	} else {
		gx_log_passed(api, &p);
	}
	if (gx_live_keeps_src())
		p.carried = gx_prep_carried_ptx(img, avail, false, &(size_t){ 0 });
	CUresult rc = orig(module, orig_arg, n, o, v);
	if (rc == CUDA_SUCCESS)
		loaded(api, *module, false, &p, false, NULL);
	gx_prep_free(&p);
	return rc;
}

static CUresult orig_data_ex(CUmodule *m, const void *img, unsigned n, CUjit_option *o, void **v)
{
	return REAL(cuModuleLoadDataEx)(m, img, n, o, v);
}

static CUresult orig_data(CUmodule *m, const void *img, unsigned n, CUjit_option *o, void **v)
{
	(void)n, (void)o, (void)v;
	return REAL(cuModuleLoadData)(m, img);
}

static CUresult orig_fatbin(CUmodule *m, const void *img, unsigned n, CUjit_option *o, void **v)
{
	(void)n, (void)o, (void)v;
	return REAL(cuModuleLoadFatBinary)(m, img);
}

static CUresult orig_file(CUmodule *m, const void *path, unsigned n, CUjit_option *o, void **v)
{
	(void)n, (void)o, (void)v;
	return REAL(cuModuleLoad)(m, path);
}

GX_EXPORT CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
				      CUjit_option *options, void **optionValues)
{
	return mod_load("cuModuleLoadDataEx", module, image, SIZE_MAX, numOptions, options, optionValues, orig_data_ex,
			image);
}

GX_EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
	return mod_load("cuModuleLoadData", module, image, SIZE_MAX, 0, NULL, NULL, orig_data, image);
}

GX_EXPORT CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
	return mod_load("cuModuleLoadFatBinary", module, fatCubin, SIZE_MAX, 0, NULL, NULL, orig_fatbin, fatCubin);
}

GX_EXPORT CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
	char *buf = NULL;
	size_t len = 0;
	if (!fname || gx_read_file(fname, &buf, &len, 0) < 0) {
		/* Let the driver report the error for the missing/unreadable file. */
		return REAL(cuModuleLoad)(module, fname);
	}
	CUresult rc = mod_load("cuModuleLoad", module, buf, len + 1, 0, NULL, NULL, orig_file, fname);
	free(buf);
	return rc;
}

/* The unload event (a policy may veto it); not for the shim's own unloads. */
static CUresult unload_event(void *handle, bool is_library, const char *api)
{
	if (!gx_ev_on(GX_EV_MODULE_UNLOAD) || gx_ev_nested())
		return CUDA_SUCCESS;
	struct gx_event ev = { .kind = GX_EV_MODULE_UNLOAD };
	ev.module.handle = handle;
	ev.module.is_library = is_library;
	ev.module.api = api;
	return gx_ev_raise(&ev);
}

GX_EXPORT CUresult cuModuleUnload(CUmodule hmod)
{
	CUresult veto = unload_event(hmod, false, "cuModuleUnload");
	if (veto != CUDA_SUCCESS)
		return veto;
	CUresult rc = REAL(cuModuleUnload)(hmod);
	void *side = NULL;
	if (rc == CUDA_SUCCESS && gx_tab_del_mod(hmod, &side) == 0 && side)
		REAL(cuModuleUnload)((CUmodule)side);
	if (rc == CUDA_SUCCESS)
		gx_live_unloaded(hmod);
	return rc;
}

GX_EXPORT CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
	CUresult rc = REAL(cuModuleGetFunction)(hfunc, hmod, name);
	if (rc == CUDA_SUCCESS && hfunc && name)
		gx_tab_add_func(cur_ctx(), *hfunc, hmod, false, name);
	return rc;
}

/* Libraries: context-independent, loaded lazily into each context. */

/* The application's library as it came, from its file or its image. */
static CUresult lib_orig(CUlibrary *library, const void *code, const char *path, CUjit_option *jo, void **jv,
			 unsigned nj, CUlibraryOption *lo, void **lv, unsigned nl)
{
	return path ? REAL(cuLibraryLoadFromFile)(library, path, jo, jv, nj, lo, lv, nl)
		    : REAL(cuLibraryLoadData)(library, code, jo, jv, nj, lo, lv, nl);
}

static CUresult lib_load(const char *api, CUlibrary *library, const void *code, size_t avail, CUjit_option *jo,
			 void **jv, unsigned nj, CUlibraryOption *lo, void **lv, unsigned nl, const char *path)
{
	struct gx_prep p = { 0 };
	if (library && gx_prepare(api, code, avail, true, &p)) {
		if (p.side) {
			CUresult rc = lib_orig(library, code, path, jo, jv, nj, lo, lv, nl);
			return load_side(api, rc == CUDA_SUCCESS ? *library : NULL, true, &p, rc);
		}
		/* a library with variables: which library the host takes an
		 * address in is not known (live.c), so no copy */
		if (!p.async_vars && gx_launch_sample_take(&p, nj, jo)) {
			return load_sampled(api, library, true, &p,
					    lib_orig(library, code, path, jo, jv, nj, lo, lv, nl));
		}
		CUresult rc = load_prepared(&p, true, library, nj, jo, jv, lo, lv, nl);
		if (rc == CUDA_SUCCESS) {
			gx_log_reloaded(api, &p);
			loaded(api, *library, true, &p, true, NULL);
			return rc;
		}
		gx_log_fallback(api, &p, rc);
		snprintf(p.why, sizeof(p.why), "rewritten PTX rejected");
	} else if (library) {
		gx_log_passed(api, &p);
	}
	if (library && gx_live_keeps_src())
		p.carried = gx_prep_carried_ptx(code, avail, true, &(size_t){ 0 });
	CUresult rc = lib_orig(library, code, path, jo, jv, nj, lo, lv, nl);
	if (rc == CUDA_SUCCESS && library)
		loaded(api, *library, true, &p, false, NULL);
	gx_prep_free(&p);
	return rc;
}

GX_EXPORT CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
				     void **jitOptionsValues, unsigned int numJitOptions,
				     CUlibraryOption *libraryOptions, void **libraryOptionValues,
				     unsigned int numLibraryOptions)
{
	return lib_load("cuLibraryLoadData", library, code, SIZE_MAX, jitOptions, jitOptionsValues, numJitOptions,
			libraryOptions, libraryOptionValues, numLibraryOptions, NULL);
}

GX_EXPORT CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName, CUjit_option *jitOptions,
					 void **jitOptionsValues, unsigned int numJitOptions,
					 CUlibraryOption *libraryOptions, void **libraryOptionValues,
					 unsigned int numLibraryOptions)
{
	char *buf = NULL;
	size_t len = 0;
	if (!fileName || gx_read_file(fileName, &buf, &len, 0) < 0)
		return REAL(cuLibraryLoadFromFile)(library, fileName, jitOptions, jitOptionsValues, numJitOptions,
						   libraryOptions, libraryOptionValues, numLibraryOptions);
	CUresult rc = lib_load("cuLibraryLoadFromFile", library, buf, len + 1, jitOptions, jitOptionsValues,
			       numJitOptions, libraryOptions, libraryOptionValues, numLibraryOptions, fileName);
	free(buf);
	return rc;
}

GX_EXPORT CUresult cuLibraryUnload(CUlibrary library)
{
	CUresult veto = unload_event(library, true, "cuLibraryUnload");
	if (veto != CUDA_SUCCESS)
		return veto;
	CUresult rc = REAL(cuLibraryUnload)(library);
	void *side = NULL;
	if (rc == CUDA_SUCCESS && gx_tab_del_mod(library, &side) == 0 && side)
		REAL(cuLibraryUnload)((CUlibrary)side);
	if (rc == CUDA_SUCCESS)
		gx_live_unloaded(library);
	return rc;
}

GX_EXPORT CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
	CUresult rc = REAL(cuLibraryGetKernel)(pKernel, library, name);
	if (rc == CUDA_SUCCESS && pKernel && name)
		gx_tab_add_func(NULL, *pKernel, library, true, name);
	return rc;
}

GX_EXPORT CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
	CUresult rc = REAL(cuKernelGetFunction)(pFunc, kernel);
	if (rc == CUDA_SUCCESS && pFunc) {
		char name[512];
		void *lib = NULL;
		/* Owned by the kernel's library: unloading it forgets this too. */
		if (gx_tab_func_info(NULL, kernel, name, sizeof(name), NULL, &lib) == 0)
			gx_tab_add_func(cur_ctx(), *pFunc, lib, false, name);
	}
	return rc;
}
