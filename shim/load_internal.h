/* load_internal.h — the module-load pipeline shared by every load entry point:
 * parse the image, pick the PTX the device would JIT, rewrite it, and say in
 * one log line per module what happened. */
#ifndef SHIM_LOAD_INTERNAL_H
#define SHIM_LOAD_INTERNAL_H

#include "shim/shim_internal.h"

struct gx_prep {
	unsigned id;        /* module number, for log lines */
	char *ptx;          /* rewritten PTX (malloc'd, NUL-terminated) when prepared */
	size_t len;
	unsigned sm;        /* arch of the PTX entry used */
	unsigned nr_hooks;  /* hook sites the rewriter inserted (0: identity) */
	unsigned nr_persistent; /* persistent-worker copies added (GPUEXT_PERSISTENT) */
	char *log;          /* rewriter notes naming those copies (malloc'd) or NULL */
	char why[256];      /* why the image passes through */
	int level;          /* log level of the pass-through line */
	bool cached;        /* p->ptx came from the rewritten-module cache (mcache_internal.h) */
	unsigned rdc_units; /* -rdc: p->ptx is a cubin JIT-linked from this many rewritten units */
	bool from_cubin;    /* the PTX came from the cubin's .nv_debug_ptx_txt (-lineinfo) */
	char *carried;      /* a passed-through cubin's PTX, kept for gpuext attach (malloc'd) */
	int cubin;          /* what was loaded: the PTX (0) or its cubin, GX_CUBIN_JIT/_CACHED */
	double jit_ms;      /* GX_CUBIN_JIT: the driver's JIT of the rewritten PTX */
	/* The image runs as it came (its SASS for this device) and p->ptx is
	 * loaded beside it as a module of its own, for its persistent copies
	 * only: a schedule policy without hooks, on a module with no state a
	 * copy would have to share (gx_ptx_stats.vars). The originals stay
	 * NVIDIA's code, so running "the original" means the native kernel. */
	bool side;
	/* Load p->ptx as PTX, not through the cubin route (cubin.c compiles it
	 * as relocatable code): originals a schedule policy leaves as they
	 * were, compiled as the driver compiles the image natively. */
	bool ptx_load;
	/* The originals' registers, when the image stated them (a cubin's
	 * .nv.info): the rewrite's register caps need no JIT of the original
	 * then (kregs.c). Owned; freed by gx_prep_free. */
	struct gx_ptx_kregs *kregs;
	size_t nkregs;
	/* GPUEXT_JIT_ASYNC (async_jit.c): a copy of the module could stand in
	 * for it (its state shareable), and it has variables at all */
	bool async, async_vars;
};
enum { GX_CUBIN_JIT = 1, GX_CUBIN_CACHED = 2 };

/* Returns true with p->ptx set when the image should be replaced by
 * p->ptx; false with p->why set when it passes through. `all_devices`:
 * pick PTX every device of the process can JIT (libraries are loaded into
 * every context). `avail` as for gx_image_parse. */
bool gx_prepare(const char *api, const void *img, size_t avail, bool all_devices, struct gx_prep *p);
/* Rewrite a PTX text (cuLinkAddData): same contract. */
bool gx_prepare_ptx(const char *api, const char *ptx, size_t len, struct gx_prep *p);
void gx_prep_free(struct gx_prep *p);
/* The rewrite options of this process (hooks, policy, persistent copies);
 * true when persistent copies are asked for. */
struct gx_ptx_rewrite_opts;
bool gx_prep_opts(struct gx_ptx_rewrite_opts *opts);
/* Rewrite one PTX text for a device arch (through the module cache). */
bool gx_prep_rewrite(const char *ptx, size_t len, unsigned dev_sm, struct gx_prep *p);
/* The same with the live policies' hooks (gpuext attach, live.c). */
bool gx_prep_rewrite_live(const char *ptx, size_t len, unsigned dev_sm, struct gx_prep *p);
/* The PTX a passed-through image's cubin for this device carries
 * (ptxas -lineinfo: Triton), malloc'd, or NULL. */
char *gx_prep_carried_ptx(const void *img, size_t avail, bool all_devices, size_t *len);
/* rdc.c: an image whose code is -rdc relocatable units (a version-2 wrapper's
 * prelinked fatbins): 1 with p->ptx = the cubin JIT-linked from the units'
 * rewritten PTX; 0 if there are no such units with PTX; -1 on failure with
 * p->why set. `mixed_archs`: the code must run on devices of several archs
 * (a library): a linked cubin cannot, so units with PTX give -1. */
struct gx_image;
int gx_prepare_rdc(const struct gx_image *im, unsigned sm, bool mixed_archs, struct gx_prep *p);

/* cubin.c: p->ptx compiled for the current device, from the module cache
 * or the driver's JIT (stored then): true with *cubin (malloc'd) to load
 * instead of the PTX, p->cubin and p->jit_ms set. False (load the PTX) when
 * GPUEXT_CUBIN=0, the application's JIT options change code generation,
 * no context is current, `all_devices` (a library) and the devices differ
 * in arch, or the JIT failed. */
bool gx_prep_cubin(struct gx_prep *p, bool all_devices, unsigned n, const CUjit_option *o, void **cubin,
		   size_t *len);

/* cubin_ptxas.c: the ptxas that compiles rewritten modules whole
 * (GPUEXT_CUBIN_PTXAS, TRITON_PTXAS_PATH, $CUDA_HOME/bin, $CUDA_PATH/bin,
 * /usr/local/cuda/bin; never gpuext's own), found once; NULL if none. */
const char *gx_cubin_ptxas(void);
/* ptx (len bytes) compiled by `ptxas` for `arch` (sm_90, sm_90a): 0 with a
 * malloc'd cubin, or -errno with ptxas's message in err. */
int gx_cubin_ptxas_compile(const char *ptxas, const char *ptx, size_t len, const char *arch, void **cubin,
			   size_t *clen, char *err, size_t errn);

/* Is p->ptx's cubin (a module's, current context) in the module cache? 1
 * yes, 0 no (a load would JIT it), -1 it gets no cubin at all. */
int gx_prep_cubin_state(const struct gx_prep *p, unsigned n, const CUjit_option *o);

/* The one line per module. */
void gx_log_reloaded(const char *api, const struct gx_prep *p);
/* How p's cubin came, as the load lines say it ("; cubin: JIT-compiled in
 * X ms, stored", "; cubin: cached"), or "" (its PTX loaded). */
void gx_log_cubin(const struct gx_prep *p, char *buf, size_t n);
/* p->side: the image loaded as it came, its copies beside it. */
void gx_log_side(const char *api, const struct gx_prep *p);
void gx_log_passed(const char *api, const struct gx_prep *p);
void gx_log_fallback(const char *api, const struct gx_prep *p, CUresult rc);

/* attach.c: device policies' hooks, PTX and bindings into opts (attach/);
 * a no-op without GPUEXT_POLICY/GPUEXT_TOOL/GPUEXT_SCHED device objects.
 * gx_attach_init (at cuInit) attaches them before any module is loaded. */
void gx_attach_opts(struct gx_ptx_rewrite_opts *opts);
void gx_attach_init(void);
/* The host table for a live attach (NULL: GPUEXT_DISABLE, or the driver
 * lacks a function the device runtime needs). */
struct gx_attach_host;
const struct gx_attach_host *gx_attach_host_live(void);
/* live.c: gpuext attach/detach of a running process (docs/attach.md). */
void gx_live_init(void);           /* at cuInit: the control channel */
bool gx_live_keeps_src(void);      /* keep passed-through modules' PTX */
void gx_live_loaded(void *handle); /* a module loaded while attached */
/* The application unloaded a module or library: its copy no longer stands
 * in for it (the driver may give its handle, or its functions', to the
 * next load). */
void gx_live_unloaded(void *handle);
/* A context is gone, with its modules and functions. */
void gx_live_ctx_gone(CUcontext ctx);
/* modstate.c: the application asked for the address of a variable of
 * module `handle` (NULL: of some library's module): its copy, which has
 * variables of its own, is retired and none is made. */
void gx_live_state_taken(void *handle);

/* sched.c: persistent workers (blocksched/): with GPUEXT_SCHED or
 * GPUEXT_PERSISTENT, ask for transformed copies (1 if opts changed); a
 * module loaded from PTX rewritten with `log`: its copies. */
int gx_sched_rewrite_opts(struct gx_ptx_rewrite_opts *opts);
void gx_sched_module(void *handle, bool is_library, const char *log, void *side);
/* kregs.c: the registers the driver gives each kernel of `ptx` as it came
 * (JIT'd once in the current context, then unloaded), for the copies'
 * register caps. 0 or -errno (no context: -ENODEV; the driver refused the
 * PTX: -EINVAL): the copies are then not capped. */
struct gx_ptx_kregs;
int gx_kregs_probe(const char *ptx, size_t len, struct gx_ptx_kregs **out, size_t *n);
void gx_kregs_free(struct gx_ptx_kregs *k, size_t n);
/* The same counts as a cubin's SASS states them (.nv.info), no JIT: a
 * module that came as a cubin carrying its PTX. 0 or -errno. */
int gx_kregs_from_cubin(const void *cubin, size_t len, struct gx_ptx_kregs **out, size_t *n);
/* gpuext attach --sched (live.c): blocksched started with `spec` (0 or
 * -errno), the copies' options while it runs (1 if opts changed), and its
 * stop (device states freed unless keep_device; what its launches became
 * into msg, for the detach message). */
int gx_sched_live_start(const char *spec);
int gx_sched_live_opts(struct gx_ptx_rewrite_opts *opts);
void gx_sched_live_stop(bool keep_device, char *msg, size_t n);

/* async_jit.c: GPUEXT_JIT_ASYNC, the driver's JIT off the load path. */
bool gx_jit_async_on(void);
void gx_jit_async_init(void); /* at cuInit, before the device runtime subscribes */
/* p->async from the module's own PTX (before its rewrite). */
void gx_jit_async_judge(const char *orig, size_t len, struct gx_prep *p);
/* Should the module load as it came, its copy compiled by a worker? */
bool gx_jit_async_take(const struct gx_prep *p, unsigned n, const CUjit_option *o);
/* Hand p's rewritten PTX (taken from p) to the workers, for module orig. */
void gx_jit_async_queue(void *orig, CUcontext ctx, struct gx_prep *p);
void gx_log_async(const char *api, const struct gx_prep *p);
/* launch_sample.c: GPUEXT_LAUNCH_SAMPLE, a tool on a sample of each
 * kernel's launches. */
bool gx_launch_sample_on(void);
/* This process's setting: GPUEXT_LAUNCH_SAMPLE, else GX_CTL_SAMPLE_DEFAULT. */
const char *gx_launch_sample_setting(void);
void gx_launch_sample_init(void); /* at cuInit, before the device runtime subscribes */
/* Is the n-th launch (from 1) of a function instrumented? (live.c's
 * switch, under its lock) */
bool gx_launch_sampled(unsigned long long n);
/* The switch samples at all: GPUEXT_LAUNCH_SAMPLE, or an attach's. */
bool gx_launch_sample_active(void);
/* gpuext attach --launch-sample: every (0: none, every launch) and first,
 * set at the attach and cleared at the detach (live.c, under its lock). */
void gx_launch_sample_live(unsigned long every, unsigned long first);
/* p (judged) is loaded as it came with its copy beside it, on the load path. */
bool gx_launch_sample_take(const struct gx_prep *p, unsigned n, const CUjit_option *o);
/* live.c: the launch switch from the start, for the workers' copies (0 or
 * -errno), and one copy handed over: false when its module is gone or
 * its state no longer shareable (the caller unloads it). */
int gx_live_async_start(void);
/* Can a second copy of module `ptx` share its state (copy_state.c)? The
 * number of variables it could not (0: it can, *vars saying whether it has
 * any), the first one's name into name (n bytes), or -1 if ptx does not
 * parse. */
int gx_live_copy_check(const char *ptx, size_t len, bool *vars, char *name, size_t n);
bool gx_live_async_add(void *orig, CUcontext ctx, bool is_library, unsigned id, bool vars, void *copy);

/* Next module number (also for modules that never reach gx_prepare). */
unsigned gx_next_module_id(void);

#endif
