/* gx_tenant.h — tenants sharing GPUs across processes, without a kernel
 * module: one table in shared memory (the maps folder,
 * /dev/shm/gpuext-$UID/tenants.tab, or $GPUEXT_SHM_DIR) where every process
 * under the shim says what it launches and what completed, so a scheduling
 * policy in any process sees the others (docs/tenants.md).
 *
 * A tenant is a name (`gpuext-run --tenant NAME`, a cgroup, or a process's
 * own "<comm>-<pid>") with a class (latency critical or best effort) and an
 * in-flight window; a tenant has one entry per process and GPU. Each process
 * writes only its own entries; the table's robust lock is taken only to join,
 * leave, reap the dead and change a tenant from outside. A process that
 * dies, even by kill -9 while its launches are in flight, is reaped by the
 * others (pid gone, or pid reused) and stops counting at once if it goes
 * silent (a lease); its policy map files go with it. The last process out
 * removes the table.
 *
 * No CUDA here: the shim (shim/tenant.c) feeds launches and completions;
 * the CLI (`gpuext tenant`) reads and changes the table. Functions return 0
 * or a negative errno. */
#ifndef GX_TENANT_H
#define GX_TENANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpuext/gpu_ext.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GX_TN_NAME_MAX 32
#define GX_TN_MAX_TENANTS 64
#define GX_TN_MAX_PROCS 256
#define GX_TN_MAX_GPUS	  16 /* GPUs a tenant may use with their own memory figures */
#define GX_TN_TABLE_FILE "tenants.tab"

struct gx_tn; /* one process's entry for one GPU */

struct gx_tn_opts {
	size_t sz;             /* sizeof(struct gx_tn_opts) */
	const char *name;      /* tenant; NULL: "<comm>-<pid>" */
	int cls;               /* GPU_CLASS_*; -1: the tenant's, else BE */
	uint32_t window;       /* in-flight cap of a new tenant (0: none) */
	const uint8_t *dev;    /* 16-byte GPU identity (UUID); NULL: zeros */
	uint64_t cgroup_id;
	uint64_t lease_ns;     /* silent this long: not counted (0: 1 s) */
	uint64_t burst_gap_ns; /* idle gap that starts a new burst (0: 200 µs) */
	/* limits of a new tenant, or of one that has none yet (docs/limits.md) */
	uint64_t mem_limit;	/* bytes of device memory on each GPU, over its processes (0: none) */
	uint32_t gpu_share;    /* percent of GPU time when others want it (0: none) */
	uint64_t gpu_mem_limit; /* this GPU's own limit, where it has none yet (0: mem_limit) */
};

/* Join: create the table if there is none, find or make the tenant, claim
 * an entry for this process and GPU. */
int gx_tn_open(const struct gx_tn_opts *opts, struct gx_tn **out);
/* Leave: the entry's counts go to the tenant; the tenant goes with its last
 * process, the table with the last tenant. */
void gx_tn_close(struct gx_tn *tn);
/* Leave as gx_tn_close does, but keep the handle and its mapping: calls on
 * it afterwards (another thread still launching while the process exits)
 * write nothing. The memory goes with the process. */
void gx_tn_leave(struct gx_tn *tn);
/* After fork, in the child: forget the parent's entries without touching
 * the table (the child is another process). */
void gx_tn_forget(struct gx_tn *tn);

/* ---- the hot path (any thread of the owning process) ---- */
/* A launch is about to go to the driver: counted in flight before it goes,
 * so that no other tenant's check between its submission and our
 * bookkeeping sees the GPU idle (a preempted launching thread made that
 * gap milliseconds long on a loaded machine). */
void gx_tn_launched(struct gx_tn *tn, uint64_t now_ns);
/* Undo gx_tn_launched: the launch failed (went = false), or went to the
 * driver untracked, so no completion will come (went = true). */
void gx_tn_unlaunched(struct gx_tn *tn, bool went);
/* One went to the driver that is not tracked (no completion will come). */
void gx_tn_untracked(struct gx_tn *tn);
/* A tracked launch submitted at launch_ns was seen complete at done_ns. */
void gx_tn_completed(struct gx_tn *tn, uint64_t launch_ns, uint64_t done_ns);
/* A launch was held ns before it went (hold = 1: one more held launch). */
void gx_tn_throttled(struct gx_tn *tn, uint64_t ns, int held);
/* Fill what a scheduling policy sees: the tenant, and the GPU's classes
 * (l's own fields — held, attempt, geometry — are the caller's). */
void gx_tn_view(struct gx_tn *tn, uint64_t now_ns, struct gpu_tenant *t, struct gpu_launch *l);
/* The tenant's cap (policy: bpf_gpu_set_window). */
void gx_tn_set_window(struct gx_tn *tn, uint32_t n);
int gx_tn_class(const struct gx_tn *tn);
uint32_t gx_tn_window(const struct gx_tn *tn);
uint32_t gx_tn_inflight(const struct gx_tn *tn); /* this process's */

/* Changes: read the generation before looking (gx_tn_view), then wait for
 * it to move (a launch of an LC tenant, any completion, a change from
 * outside, a reap) or for timeout_ns. 0, or -ETIMEDOUT. */
uint32_t gx_tn_gen(const struct gx_tn *tn);
int gx_tn_wait(struct gx_tn *tn, uint32_t gen, uint64_t timeout_ns);
/* Periodic (every few ms, from a background thread): the lease, and every
 * 100 ms a reap of dead processes. Returns how many were reaped. */
int gx_tn_tick(struct gx_tn *tn, uint64_t now_ns);

/* ---- limits (tn_limits.c, docs/limits.md) ---- */
/* Reserve bytes of the tenant's memory budget on this entry's GPU: 0, or
 * -ENOMEM past that GPU's limit (its denied count goes up). Lock-free: a
 * CAS on the tenant's mem_used of that GPU, safe from any thread of any
 * process; never over the limit. An entry no longer ours (left at exit),
 * or one whose GPU found no slot, reserves nothing: 0. */
int gx_tn_mem_reserve(struct gx_tn *tn, uint64_t bytes);
/* Count bytes the driver already holds, even past the limit (a pool that
 * grew by more than was reserved for it). */
void gx_tn_mem_charge(struct gx_tn *tn, uint64_t bytes);
/* Give back what gx_tn_mem_reserve took (never below this process's part). */
void gx_tn_mem_release(struct gx_tn *tn, uint64_t bytes);
/* This entry's GPU: the tenant's limit there (0: none) and the bytes all
 * its processes reserved there. */
void gx_tn_mem_get(const struct gx_tn *tn, uint64_t *limit, uint64_t *used);
/* The compute share: how long (ns) a launch of this tenant should wait now
 * for another tenant's turn; 0: it passes. Turns of a period are laid out
 * by the shares of the GPU's live BE tenants that have one; a tenant whose
 * turn it is but that is idle leaves it to the others (work-conserving). */
uint64_t gx_tn_share_hold(struct gx_tn *tn, uint64_t now_ns);
/* Is the tenant scheduled by shares (a share, not LC)? */
bool gx_tn_share_on(const struct gx_tn *tn);
/* The turn period (ns, default 40 ms) and the idle gap after which a turn
 * is lent (default 500 µs); process-wide, set once before launches. */
void gx_tn_share_config(uint64_t period_ns, uint64_t idle_ns, uint64_t borrow_ns);

/* ---- control plane (gpuext tenant) ---- */
struct gx_tn_info {
	char name[GX_TN_NAME_MAX];
	int cls;
	uint32_t window;
	uint32_t nr_procs, inflight, max_inflight;
	uint32_t pids[8];            /* first processes */
	uint64_t launches, completions, untracked, held;
	uint64_t throttled_ns;
	uint64_t p50_ns, p99_ns, p999_ns; /* launch-to-completion, worst process */
	uint64_t kernel_ns;
	uint64_t created_ns;
	/* limits (table version 2): mem_limit per GPU, the others summed over GPUs */
	uint64_t mem_limit, mem_used, mem_hiwater, mem_denied;
	uint32_t gpu_share;
	uint64_t gpu_ns; /* busy time of its tracked launches, live and gone processes */
	/* per GPU (version 3), in the order its processes first used them */
	uint32_t nr_gpus;
	struct gx_tn_gpu_info {
		uint8_t dev[16];    /* UUID */
		uint64_t mem_limit; /* in force there (its own, else the tenant's); 0: none */
		uint64_t mem_used, mem_hiwater, mem_denied;
	} gpus[GX_TN_MAX_GPUS];
};
/* This process's own figures on its GPU (name, class, window of its tenant). */
void gx_tn_self(const struct gx_tn *tn, struct gx_tn_info *out);
/* This process's own part of its tenant: device memory it holds, its
 * highest, and the busy time of its tracked launches. */
void gx_tn_self_usage(const struct gx_tn *tn, uint64_t *mem_used, uint64_t *mem_hiwater, uint64_t *gpu_ns);
/* Tenants in table order; returns how many (≤ max written), -ENOENT when
 * there is no table. Dead processes are reaped first when `reap`. */
int gx_tn_list(struct gx_tn_info *out, int max, int reap);
/* Change a tenant: cls -1 / window -1 leave that one. -ENOENT: no such. */
int gx_tn_set(const char *name, int cls, int64_t window);
/* Change a tenant's limits: -1 leaves that one; mem_limit 0 / gpu_share 0
 * remove it. mem_limit applies to every GPU (their own limits go). Lowering mem_limit below what is used fails new allocations
 * and frees nothing. -ENOENT: no such tenant; -EINVAL: share > 100. */
int gx_tn_set_limits(const char *name, int64_t mem_limit, int64_t gpu_share);
/* One GPU's own memory limit for a tenant that uses it (dev: its UUID);
 * 0: the tenant's again. -ENOENT: no such tenant; -ENODEV: not on it. */
int gx_tn_set_gpu_mem_limit(const char *name, const uint8_t dev[16], uint64_t bytes);
/* Reap dead processes (and the table itself when nobody is left).
 * Returns the number reaped, or -ENOENT. */
int gx_tn_gc(void);
/* "4G", "512MiB", "1.5g", "1073741824" (K/M/G/T: powers of 1024) -> bytes;
 * -EINVAL otherwise. */
int gx_tn_parse_size(const char *s, uint64_t *out);
/* A memory limit for every GPU and per GPU ordinal: "10G", "0=10G,1=20G",
 * "8G,1=20G" (a bare size is the default). per[] (nper ordinals) gets the
 * ordinals' limits, 0 elsewhere; *dflt the default (0: none). -EINVAL. */
int gx_tn_parse_mem_limits(const char *s, uint64_t *dflt, uint64_t *per, int nper);
/* "lc" / "be", and back (-EINVAL). */
const char *gx_tn_class_name(int cls);
int gx_tn_parse_class(const char *s);

#ifdef __cplusplus
}
#endif
#endif
