/* gx_blocksched.h — blocksched/'s one public header: unmodified kernels run
 * as persistent workers whose blocks an eBPF policy schedules
 * (docs/blocksched.md).
 *
 * Three pieces meet here:
 *  - the device runtime (bs_rt.c compiled to PTX) that the rewriter's
 *    persistent transform links into each module it transforms;
 *  - the launch side, which a process (the shim) drives through host events:
 *    a launch of a kernel with a transformed copy becomes a launch of the
 *    copy with SMs x occupancy workers, the descriptor by value, and — when
 *    the policy claims — a per-stream device state and a per-kernel hint
 *    block;
 *  - the run's schedule log, read back by `gpuext sched`.
 * The launch side never calls into the shim: the driver and the shim's
 * services come in through struct gx_bs_host, as for attach/. Any failure is
 * a log line and the original kernel. */
#ifndef GX_BLOCKSCHED_H
#define GX_BLOCKSCHED_H

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "gpuext/gx_events.h"

struct gx_ptx_rewrite_opts;

/* The device runtime's PTX (.funcs gxbsrt_*, no module header): what
 * gx_ptx_rewrite_opts.persist_rt takes. */
const char *gx_bs_rt_ptx(size_t *len);

/* ---- policies ----
 * A schedule policy is a device policy object (gdev/sched/enter, exit,
 * should_try_steal programs) attached like any other, plus what the launch
 * side reads from its global variables (knobs: "obj.bpf.o,name=value"):
 *   gx_sched_mode    GX_WORK_STATIC (0) or GX_WORK_CLAIM (1, the default)
 *   gx_sched_chunks  claims per worker the launcher sizes chunks for (8)
 * and one knob of the launch side itself, never seen by the device:
 *   kernels=GLOB     the kernels the policy schedules (fnmatch, mangled
 *                    names; default all); the others run unchanged. */
#define GX_BS_VAR_MODE "gx_sched_mode"
#define GX_BS_VAR_CHUNKS "gx_sched_chunks"
/* gx_sched_guard (a policy's knob, 0 by default): time a few launches of each
 * kernel as its persistent copy and as it is, and keep the faster (bs_guard.c) */
#define GX_BS_VAR_GUARD "gx_sched_guard"
#define GX_BS_DEFAULT_CHUNKS 8

/* Split "obj.bpf.o,k=v,kernels=G,..." into the object, the knobs meant for
 * the policy (written to knobs, comma-separated) and the kernel glob
 * (written to glob; "*" when absent). 0 or -EINVAL (a knob without '='). */
int gx_bs_parse_spec(const char *spec, char *obj, size_t on, char *knobs, size_t kn, char *glob, size_t gn);

/* ---- the guard's decision (bs_guard.c; no driver calls) ----
 * Per kernel and grid, over two or three arms — the original (GX_BS_ORIG),
 * the policy's copy (GX_BS_COPY) and, where the module has one, the
 * static-only copy (GX_BS_STATIC):
 *  - explore: each launch runs the arm with the fewest timings (issued or
 *    in), copies first; an arm's first launch of an exploration is not
 *    timed (lazy loading, the adaptive policy's unordered first launch); a
 *    copy whose first GX_BS_GUARD_DROP_N timings are all more than
 *    GX_BS_GUARD_DROP_PCT % above every timing of the original is dropped
 *    at once; when every arm left has GX_BS_GUARD_SAMPLES, the copy whose
 *    median is lowest runs if it is at least GX_BS_GUARD_MARGIN_PCT % below
 *    the original's, else the original;
 *  - settled, the chosen arm is judged on its own launches after the
 *    exploration: the first GX_BS_GUARD_SAMPLES are timed, then one in
 *    GX_BS_GUARD_MONITOR; on a copy, the original runs (timed) one launch in
 *    GX_BS_GUARD_PROBE. The copy is given up (the original runs) as soon as
 *    the median of its last timings is more than GX_BS_GUARD_MARGIN_PCT %
 *    above the original's; when the chosen arm's recent median moves more
 *    than GX_BS_GUARD_DRIFT_PCT % from its median over its first
 *    GX_BS_GUARD_SAMPLES launches after the choice (the workload shifted)
 *    it explores again; and in any case after
 *    GX_BS_GUARD_RECHECK launches, doubled (up to GX_BS_GUARD_RECHECK_MAX)
 *    each time an exploration confirms the last choice.
 * An exploration that gets no timings within GX_BS_GUARD_EXPLORE launches
 * (a stream being captured, events failing) settles on the original. */
#define GX_BS_GUARD_SAMPLES 5
#define GX_BS_GUARD_MARGIN_PCT 1
#define GX_BS_GUARD_DROP_N 2
#define GX_BS_GUARD_DROP_PCT 5
#define GX_BS_GUARD_EXPLORE 64
#define GX_BS_GUARD_MONITOR 16
#define GX_BS_GUARD_PROBE 256
#define GX_BS_GUARD_DRIFT_PCT 10
#define GX_BS_GUARD_RECHECK 4096
#define GX_BS_GUARD_RECHECK_MAX 65536
enum { GX_BS_ORIG = 0, GX_BS_COPY = 1, GX_BS_STATIC = 2, GX_BS_ARMS = 3 };
/* What a timing did (gx_bs_guard_sample). */
enum {
	GX_BS_EV_NONE = 0,
	GX_BS_EV_SETTLED, /* an exploration ended: choice, med[], the exploration's cost */
	GX_BS_EV_GAVE_UP, /* the chosen copy was timed slower than the original: the original runs */
	GX_BS_EV_SHIFTED, /* the chosen arm's time moved: exploring again */
};
struct gx_bs_guard {
	/* exploring: each arm's timings; settled: the chosen arm's timings
	 * since (a ring) and, on a copy, the original's (its exploration's,
	 * then its probes) */
	float ms[GX_BS_ARMS][GX_BS_GUARD_SAMPLES];
	unsigned n[GX_BS_ARMS];           /* timings in ms[] */
	unsigned ring[GX_BS_ARMS];        /* settled: next slot of ms[] to overwrite */
	unsigned pend[GX_BS_ARMS];        /* timed launches whose timing has not come */
	unsigned arms;                    /* 2 (no static copy) or 3 */
	unsigned issued;                  /* launches in this exploration */
	unsigned warm;                    /* 1 << arm: launched once in this exploration */
	unsigned out;                     /* 1 << arm: dropped from this exploration */
	int choice;                       /* -1 exploring, else the arm */
	int last_choice;                  /* the previous exploration's (-1: none) */
	unsigned long long since;         /* launches since the choice */
	unsigned long long recheck;       /* launches after which to explore again */
	float med[GX_BS_ARMS];            /* the medians the choice was made on */
	float now[2];                     /* settled: the last medians judged (the arm's, the original's) */
	float base;                       /* settled: the arm's median over its first launches after the
					   * choice, the reference of a shift (0: not yet) */
	/* what exploring cost: launches, and the timed copies' time beyond the
	 * original's median (ms; negative when they were faster) — this
	 * exploration's and all of them */
	unsigned explore_launches;
	float explore_extra_ms;
	unsigned explorations, gave_up, shifted;
	unsigned untimed; /* explorations that ended with no timing at all (the original runs) */
	unsigned long long explore_launches_all;
	double explore_extra_ms_all;
};
void gx_bs_guard_init(struct gx_bs_guard *g, unsigned arms);
/* This launch's arm; *timed: time it and give the timing to
 * gx_bs_guard_sample (or -1 there if it cannot be timed). */
int gx_bs_guard_next(struct gx_bs_guard *g, int *timed);
/* A timed launch of one arm (ms < 0: its timing failed); a GX_BS_EV_*. */
int gx_bs_guard_sample(struct gx_bs_guard *g, int arm, float ms);
/* A launch the guard wanted timed that the launch side could not time for
 * now (every timing pair still in flight: the application runs ahead of
 * the GPU). Not a failure: while exploring the launch does not count and
 * runs the original; settled, the chosen arm runs untimed. The arm to run. */
int gx_bs_guard_skip(struct gx_bs_guard *g, int arm);

/* ---- in a process ---- */
#define GX_BS_CU_FUNCS(X)                                                              \
	X(cuCtxGetDevice) X(cuDeviceGetAttribute) X(cuOccupancyMaxActiveBlocksPerMultiprocessor) \
	X(cuMemAlloc_v2) X(cuMemFree_v2) X(cuMemsetD8Async) X(cuMemcpyHtoDAsync_v2)        \
	X(cuMemcpyDtoHAsync_v2) X(cuStreamIsCapturing) X(cuModuleGetFunction)              \
	X(cuLibraryGetKernel) X(cuKernelGetFunction) X(cuKernelGetAttribute)               \
	X(cuFuncGetAttribute) X(cuFuncSetAttribute) X(cuEventCreate) X(cuEventRecord)      \
	X(cuEventQuery) X(cuEventDestroy_v2) X(cuMemsetD32Async) X(cuMemHostAlloc)        \
	X(cuMemFreeHost) X(cuMemHostGetDevicePointer_v2) X(cuGetErrorName) X(cuCtxGetCurrent) \
	X(cuModuleLoadData) X(cuModuleUnload) X(cuEventElapsedTime)                       \
	X(cuThreadExchangeStreamCaptureMode) X(cuCtxPushCurrent_v2) X(cuCtxPopCurrent_v2)

struct gx_bs_cu {
#define GX_BS_CU_MEMBER(name) __typeof__(&name) name;
	GX_BS_CU_FUNCS(GX_BS_CU_MEMBER)
#undef GX_BS_CU_MEMBER
};

struct gx_bs_host {
	size_t sz;            /* sizeof(struct gx_bs_host) */
	const char *sched;    /* GPUEXT_SCHED: "obj.bpf.o[,knobs]" or NULL */
	const char *persistent; /* GPUEXT_PERSISTENT: 1/dynamic (claim), static, 0 */
	const struct gx_bs_cu *cu;
	int (*subscribe)(unsigned mask, gx_event_fn fn, void *cookie);
	/* The kernel name and module of a launched handle; 0 or -errno. */
	int (*func_info)(CUcontext ctx, void *f, char *name, size_t n, void **mod);
	/* Register a function handle (the copy) under its name. */
	void (*add_func)(CUcontext ctx, CUfunction f, void *mod, const char *name);
	/* A global variable of the attached device policy `tag` (its knobs as
	 * set); 0, -ENOENT (no such variable) or -ENODEV (not attached). */
	int (*policy_var)(const char *tag, const char *name, void *out, size_t size);
	void (*lock_register)(pthread_mutex_t *m, int order);
	int lock_order;       /* the order of blocksched's lock */
	int (*unsubscribe)(int id); /* a live detach (gx_bs_live_stop) */
};

/* Before a rewrite: with persistent workers asked for (GPUEXT_SCHED or
 * GPUEXT_PERSISTENT), ask for transformed copies and give the runtime, and
 * start following launches. The first call latches `host`. Returns 1 if
 * opts was changed. */
int gx_bs_rewrite_opts(const struct gx_bs_host *host, struct gx_ptx_rewrite_opts *opts);
/* The policy tag blocksched schedules with ("" without GPUEXT_SCHED). */
const char *gx_bs_policy_tag(void);
/* A module or library was loaded from PTX rewritten with `log` (the
 * rewriter's notes): remember its kernels that have a persistent copy.
 * side: NULL when the copies are in `handle`; else the module or library
 * loaded beside it that holds them (the application's image runs as it
 * came: the shim's gx_prep.side). */
void gx_bs_module(void *handle, bool is_library, const char *log, void *side);
/* Forget everything (tests, exit). */
void gx_bs_reset(void);

/* ---- live (`gpuext attach PID --sched P`; the shim's live.c) ----
 * Start scheduling with `spec` ("obj.bpf.o[,knobs][,kernels=GLOB]") in a
 * process that schedules nothing from its start (no GPUEXT_SCHED, no
 * GPUEXT_PERSISTENT). Its policy is attached live first (attach/), so its
 * knobs can be read. The shim then rewrites every loaded module into a
 * copy with gx_bs_live_rewrite_opts() and registers each copy with
 * gx_bs_module(); launches the shim switched to a copy's kernel launch
 * its persistent copy. 0, -EBUSY (scheduling from the start, or live
 * already), -EINVAL (a knob without '='), -ENODEV (the policy is not
 * attached) or the subscription's error. */
int gx_bs_live_start(const struct gx_bs_host *host, const char *spec);
/* Launches of kernels with a copy since gx_bs_live_start: run as claiming
 * and as static persistent workers, and as they are (every fallback and the
 * guard's choice of the original). */
void gx_bs_live_counts(uint64_t *claim, uint64_t *stat, uint64_t *as_is);
/* Fill the persistent-copy options while live; 1 if opts was changed. */
int gx_bs_live_rewrite_opts(struct gx_ptx_rewrite_opts *opts);
/* Stop: unsubscribe, forget the copies' kernels, free the device states
 * and hint blocks (unless keep_device: a graph may still run a copy). The
 * caller made sure no launch of a copy still runs. */
void gx_bs_live_stop(bool keep_device);
/* What launches of kernels with a copy became (persistent, unchanged by
 * reason) and the sampled launches' steals, into the stats file; nothing
 * when no schedule policy is on. From any thread, no lock. */
struct gx_stats_file;
void gx_bs_stats(struct gx_stats_file *f);

/* The copies named in a rewriter log ("persistent: K: copy C transformed
 * (work descriptor: parameter N ..., unit barrier yes|no[, static only])"),
 * one record per kernel (a static-only copy logged after a claiming one is
 * its scopy); malloc'd array of malloc'd strings. 0 or -ENOMEM (then *out holds the *n complete
 * records). */
struct gx_bs_kernel {
	char *name, *copy;
	unsigned nparams;
	bool unit_bar;
	bool static_only; /* the copy has no claim path (GX_PTX_F_PERSIST_STATIC) */
	char *scopy;      /* beside a claiming copy: the static-only one
			   * (GX_PTX_F_PERSIST_STATIC_COPY), or NULL */
};
int gx_bs_parse_log(const char *log, struct gx_bs_kernel **out, size_t *n);
void gx_bs_kernels_free(struct gx_bs_kernel *k, size_t n);

/* ---- the schedule log: "<pid>-sched.log" in the shm folder ----
 * Written when GPUEXT_SCHED_LOG is set (gpuext-run --sched does): one line
 * per kernel decision, and for a sample of launches (the first few of each
 * kernel, then one in GPUEXT_SCHED_SAMPLE, default 64) what each worker
 * did, read back after the launch completed. `gpuext sched` reads it. */
/* Print the report of log file `path`: per kernel the decision, launches,
 * units per SM (min/mean/max), steals and imbalance; JSON with `json`; a
 * Chrome/Perfetto trace (a track per SM, a slice per worker) with `trace`.
 * 0, or -errno with a reason in err. */
int gx_bs_report(const char *path, bool json, const char *trace, char *err, size_t en);

#endif
