/* gx_hostexec.h — run hostbpf struct_ops policies (hostbpf/NAME.bpf.o, the
 * same objects gpuext.ko attaches) in user space, on events a caller feeds.
 *
 * Why: the GPU machine (and many users) cannot load a kernel module; the
 * shim sees managed allocations, launches, streams and syncs, which is
 * enough to drive the same memory/scheduling decisions. The executor keeps
 * the kernel module's semantics: regions are 2 MiB blocks of managed
 * allocations on a FIFO eviction list; policies only reorder (never drop);
 * handler results other than GPU_DEFAULT/GPU_BYPASS, kfunc misuse and
 * run-time faults are errors, and a policy with GX_HX_MAX_ERRORS errors is
 * disabled (logged once; FIFO applies). Decisions leave through the
 * caller's gx_hx_actions (the shim maps them to cuMemPrefetchAsync /
 * cuMemAdvise / stream priorities; tests record them).
 *
 * Not thread-safe: callers serialise (the shim holds one mutex). */
#ifndef GX_HOSTEXEC_H
#define GX_HOSTEXEC_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

#define GX_HX_MAX_ERRORS 16
#define GX_HX_MAX_POLICIES 8

struct gx_hx;

/* Is the object at path a host (struct_ops) policy? A test on its bytes
 * (hx_detect.c); false for device policies and unreadable files. */
bool gx_hx_is_struct_ops(const char *path);

/* What decisions do. Any member may be NULL. */
struct gx_hx_actions {
	void *user;
	/* Make [va, va+len) resident on the device (to_host=0) or move it back
	 * to host memory (to_host=1: a cold region evicted by the policy). */
	void (*prefetch)(void *user, uint64_t va, uint64_t len, int to_host);
	/* A queue's attribute chosen by a sched policy (enum gpu_attr). */
	void (*queue_attr)(void *user, uint64_t queue, uint32_t attr, uint64_t value);
	/* Placement advice for a region (the eviction order made durable):
	 * GX_HX_ADV_COLD when the policy evicts it (the shim: preferred
	 * location host + accessed-by device, so stray device reads map the
	 * host copy instead of pulling it back), GX_HX_ADV_HOT when a policy
	 * brings a cold region back (advice removed), before its prefetch. */
	void (*advise)(void *user, uint64_t va, uint64_t len, int advice);
};
enum { GX_HX_ADV_COLD = 1, GX_HX_ADV_HOT = 2 };

struct gx_hx_opts {
	size_t sz;               /* sizeof(struct gx_hx_opts) */
	uint32_t capacity;       /* regions the device holds (0: 1<<20, never evicts) */
	uint32_t tgid;           /* process (0: getpid()) */
	uint32_t default_pages;  /* runtime default prefetch per fault (0: 16 pages) */
	uint64_t max_walk;       /* bytes a launch's argument may be assumed to touch
				  * (0: 4 GiB) */
	struct gx_hx_actions act;
	/* Keep maps and global data in /dev/shm/gpuext-$UID (GPUEXT_SHM_DIR)
	 * as "<policy>.<map>", visible to `gpuext map list|dump`. */
	int shm_maps;
	/* Prefetch ranges shorter than this (after coalescing) are left to the
	 * GPU's demand paging, unless they cover a whole allocation (0: issue
	 * everything; the shim uses 2 MiB). Counted in gx_hx_stats.small. */
	uint64_t min_prefetch;
	/* Run handlers as native code from the devbpf JIT (libgxjit.so, loaded
	 * with dlopen; the interpreter where it is missing, with one log line
	 * per process). Native code has no run-time checks: it relies on the
	 * load-time verification every policy passes (the shim sets this
	 * unless GPUEXT_HOSTPOLICY_JIT=interp). */
	int native;
	/* Hand coalesced ranges to act.prefetch once they reach this many bytes
	 * (0: only when a run of ranges ends), so a caller can start copies
	 * while the walk goes on. */
	uint64_t max_coalesce;
	/* Append every event to this file as a text line (the stream
	 * gx_hx__replay reads back): `alloc VA LEN`, `free VA`, `touch VA LEN`,
	 * `sync`, `qcreate ID PRIO`, `qdestroy ID`, `qrekey OLD NEW`. NULL: off. */
	const char *record;
};

struct gx_hx *gx_hx__new(const struct gx_hx_opts *opts);
void gx_hx__free(struct gx_hx *hx);

/* Load, check and attach one struct_ops object. `knobs` is NULL or
 * "name=value[,name=value]" for `const volatile` globals in .rodata. 0 or a
 * negative errno; on refusal one line "hostpolicy: FILE: refused: why" is
 * logged and nothing is attached. One mem policy and one sched policy at a
 * time (-EEXIST for a second). */
int gx_hx__load(struct gx_hx *hx, const char *path, const char *knobs);
/* Names of the attached mem / sched policies ("" if none). */
const char *gx_hx__mem_policy(const struct gx_hx *hx);
const char *gx_hx__sched_policy(const struct gx_hx *hx);
/* Whether the mem policy is still enabled (false after GX_HX_MAX_ERRORS). */
int gx_hx__mem_enabled(const struct gx_hx *hx);
/* Value of a 64-bit global (a .bss/.data stat such as nr_prefetch), or -1. */
int64_t gx_hx__global(const struct gx_hx *hx, const char *name);

/* Events. */
int gx_hx__alloc(struct gx_hx *hx, uint64_t va, uint64_t len);  /* managed alloc */
int gx_hx__free_range(struct gx_hx *hx, uint64_t va);           /* its cuMemFree */
/* The device is about to touch [va, va+len) (a launch argument): each
 * region with absent pages gets one fault (gpu_prefetch, at its first absent
 * page; what the policy does not bring is left to demand paging), fully
 * resident ones gpu_access.
 * len 0: up to the end of the allocation (bounded by max_walk). Returns
 * the number of prefetch actions issued, or a negative errno (-ENOENT: not
 * managed memory). */
int gx_hx__touch(struct gx_hx *hx, uint64_t va, uint64_t len);
/* A host synchronisation: the CPU may now touch managed data, so regions
 * count as non-resident again (the next touch re-faults). */
void gx_hx__sync(struct gx_hx *hx);
/* Queues (streams). 0, or -EPERM when the sched policy rejects the bind. */
int gx_hx__queue_create(struct gx_hx *hx, uint64_t id, int priority);
void gx_hx__queue_destroy(struct gx_hx *hx, uint64_t id);
/* A queue bound under a provisional id (before the driver made the stream)
 * takes its real id; no handler runs. 0, -ENOENT, -EEXIST. */
int gx_hx__queue_rekey(struct gx_hx *hx, uint64_t old_id, uint64_t new_id);

/* Launches of tenants (gpu_sched_ops.task_launch), for runtimes that gate
 * launches (the shim's tenant scheduling). Inputs are copied; the decision
 * comes back in g. */
struct gx_hx_gate {
	int decision;     /* GPU_DEFAULT, GPU_BYPASS; -1: the handler failed this call */
	uint64_t hold_us; /* BYPASS after bpf_gpu_hold_launch: hold this long (0: pass) */
	int64_t window;   /* bpf_gpu_set_window: the tenant's new cap; -1: unchanged */
};
struct gpu_tenant;
struct gpu_launch;
/* Whether the sched policy has a task_launch handler and is enabled. */
int gx_hx__has_launch(const struct gx_hx *hx);
/* 0 with g filled, or -ENOENT (no handler, or the policy was disabled:
 * then launches follow the runtime's default). */
int gx_hx__launch(struct gx_hx *hx, const struct gpu_tenant *t, const struct gpu_launch *l, struct gx_hx_gate *g);

/* Feed the events of a recorded stream (opts.record's format; '#' lines
 * are comments) to hx. Returns the number of events, or -errno (-EINVAL:
 * a malformed line, logged with its number). */
long gx_hx__replay(struct gx_hx *hx, const char *path);

/* What the executor did since gx_hx__new. */
struct gx_hx_stats {
	uint64_t calls;          /* handler calls (all policies) */
	uint64_t faults;         /* faults simulated (one per region and launch at most) */
	uint64_t prefetches;     /* prefetch actions issued (to the device) */
	uint64_t prefetch_bytes;
	uint64_t small;          /* ranges under min_prefetch left to demand paging */
	uint64_t small_bytes;
	uint64_t evictions;      /* regions moved back to the host */
	uint64_t advice;         /* advise actions (cold + hot) */
	uint64_t native_calls;   /* handler calls that ran native code */
};
void gx_hx__stats(const struct gx_hx *hx, struct gx_hx_stats *st);

/* Region introspection for tests: va of resident regions in eviction order
 * (head = evicted first). Returns the count (≤ max written). */
size_t gx_hx__resident(const struct gx_hx *hx, uint64_t *va, size_t max);

#ifdef __cplusplus
}
#endif
#endif
