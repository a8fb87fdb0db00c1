/* gpu_ext.h — the one interface between GPU host policies and whoever runs
 * them: the kernel module (kmod/gpuext.ko, policies attached as struct_ops),
 * the policies themselves (hostbpf/NAME.bpf.c) and the shim's user-space
 * executor, which runs the same .bpf.o objects and provides the same kfuncs.
 *
 * Shaped after gpu_ext: memory policies see regions (2 MiB VA blocks made of
 * 4 KiB pages) on a device eviction list and reorder them; scheduling
 * policies see hardware queues (channel groups) as they are created.
 * Handlers return a decision (GPU_DEFAULT: the runtime applies its default
 * action too; GPU_BYPASS: the policy acted, skip the default). Any other
 * value is a policy error: the runtime counts it and falls back to FIFO.
 * The runtime keeps authority: kfuncs can only reorder regions, never drop
 * one; eviction always evicts exactly one region; under critical pressure
 * policies are bypassed.
 *
 * Everything here is plain C with fixed-size fields (no kernel types), so
 * the same layout holds in the kernel, in BPF and in user space. Kernel-only
 * parts: none; the kfuncs are declared for BPF (__ksym) and for the
 * user-space executor (plain prototypes it implements). */
#ifndef GPU_EXT_H
#define GPU_EXT_H

#if defined(__KERNEL__)
#include <linux/types.h>
#elif !defined(__bpf__)
#include <linux/types.h>
#endif
/* BPF programs include vmlinux.h (which provides __u32 & co) first. */

#define GPU_REGION_SHIFT 21
#define GPU_REGION_SIZE (1ULL << GPU_REGION_SHIFT) /* 2 MiB VA block */
#define GPU_PAGE_SHIFT 12
#define GPU_PAGE_SIZE (1ULL << GPU_PAGE_SHIFT)
#define GPU_REGION_PAGES (GPU_REGION_SIZE / GPU_PAGE_SIZE) /* 512 */
#define GPU_OPS_NAME_LEN 16

/* Handler decisions. */
enum gpu_decision {
	GPU_DEFAULT = 0, /* also apply the runtime's default action */
	GPU_BYPASS = 1,  /* the policy handled it; skip the default */
};

/* Policy scope: which processes' events a policy sees. Several policies may
 * be attached at once, one per scope; a tgid-scoped policy wins over a
 * cgroup-scoped one, which wins over the global one. */
enum gpu_scope {
	GPU_SCOPE_GLOBAL = 0,
	GPU_SCOPE_TGID = 1,   /* scope_id: process id (tgid) */
	GPU_SCOPE_CGROUP = 2, /* scope_id: cgroup v2 id (inode of its folder) */
};

/* Memory pressure levels seen in gpu_mem_ctx.pressure. */
enum gpu_pressure {
	GPU_PRESSURE_NONE = 0,
	GPU_PRESSURE_EVICTING = 1,
	GPU_PRESSURE_CRITICAL = 2, /* policies are bypassed: FIFO */
};

/* The event a memory handler runs for (gpu_mem_ctx.event). */
enum gpu_mem_event {
	GPU_EV_ACTIVATE = 1,
	GPU_EV_ACCESS = 2,
	GPU_EV_EVICT = 3,
	GPU_EV_PREFETCH = 4,
};

/* One region: a 2 MiB VA block of one address space. Read-only to
 * policies; the runtime owns it for the duration of the call. */
struct gpu_region {
	__u64 id;             /* unique per device while the region exists */
	__u64 va_start;       /* GPU_REGION_SIZE aligned */
	__u64 last_access_ns; /* monotonic */
	__u64 cgroup_id;      /* owner's cgroup v2 id when the space was made */
	__u32 tgid;           /* owner process */
	__u32 space_id;       /* address space (as registered with /dev/gpuext) */
	__u32 resident_pages; /* pages of this region resident on the device */
	__u32 access_count;   /* faults/accesses seen on this region */
	__u32 space_resident; /* resident regions of the same address space */
	__u32 flags;
	__u64 resident_mask[GPU_REGION_PAGES / 64]; /* bit per 4 KiB page */
};

/* Context of one memory handler call. */
struct gpu_mem_ctx {
	__u32 event;       /* enum gpu_mem_event */
	__u32 pressure;    /* enum gpu_pressure */
	__u32 nr_resident; /* regions on the device eviction list */
	__u32 capacity;    /* regions the device holds before evicting */
	__u32 attempt;     /* gpu_evict_prepare: how many re-picks so far */
	__u32 tgid;        /* process the event belongs to */
	__u64 cgroup_id;
};

/* A fault, for gpu_prefetch. Page numbers are within the region. */
struct gpu_fault {
	__u64 va;
	__u32 page;
	__u32 flags; /* GPU_FAULT_* */
	__u32 max_first, max_outer;         /* bounds a prefetch region may take */
	__u32 default_first, default_outer; /* what the runtime would prefetch */
};
#define GPU_FAULT_WRITE 0x1

/* A hardware queue (channel group / TSG) being bound. */
struct gpu_queue {
	__u64 id;
	__u64 cgroup_id;
	__u32 tgid;
	__u32 engine;
	__s32 priority;      /* requested by the application, 0..GPU_PRIO_MAX */
	__u32 timeslice_us;  /* current attributes (read-only; set with kfunc) */
	__u32 interleave;    /* enum gpu_interleave */
	__u32 flags;
};
#define GPU_PRIO_MAX 7

enum gpu_interleave { GPU_IL_LOW = 0, GPU_IL_MEDIUM = 1, GPU_IL_HIGH = 2 };

/* Attributes for bpf_gpu_set_attr. */
enum gpu_attr {
	GPU_ATTR_PRIORITY = 1,     /* 0..GPU_PRIO_MAX */
	GPU_ATTR_TIMESLICE_US = 2, /* GPU_TIMESLICE_MIN_US..GPU_TIMESLICE_MAX_US */
	GPU_ATTR_INTERLEAVE = 3,   /* enum gpu_interleave */
};
#define GPU_TIMESLICE_MIN_US 64
#define GPU_TIMESLICE_MAX_US 1000000
#define GPU_TIMESLICE_DEFAULT_US 1024

/* Context of one scheduling handler call. */
struct gpu_sched_ctx {
	__u32 event; /* GPU_EV_TASK_INIT / GPU_EV_TASK_DESTROY / GPU_EV_TASK_LAUNCH */
	__u32 nr_queues;
	__u32 tgid;
	__u32 pad;
	__u64 cgroup_id;
};
enum gpu_sched_event { GPU_EV_TASK_INIT = 16, GPU_EV_TASK_DESTROY = 17, GPU_EV_TASK_LAUNCH = 18 };

/* Tenants (task_launch). A tenant is a process, the processes of one
 * cgroup, or those started with one `gpuext-run --tenant NAME`; several
 * tenants share a GPU. Runtimes that see launches (the shim, in user
 * space) ask the scheduling policy before each launch; gpuext.ko never
 * calls task_launch (it schedules queues with timeslices instead). */
enum gpu_tenant_class {
	GPU_CLASS_BE = 0, /* best effort: throughput work */
	GPU_CLASS_LC = 1, /* latency critical */
};

/* The launching tenant, summed over its live processes on this GPU.
 * Read-only. Times are CLOCK_MONOTONIC ns (bpf_ktime_get_ns). */
struct gpu_tenant {
	__u32 id;             /* slot in the tenant table (stable while it lives) */
	__u32 cls;            /* enum gpu_tenant_class */
	__u32 window;         /* in-flight cap in force, 0: none */
	__u32 inflight;       /* launches submitted and not yet seen complete */
	__u32 nr_procs;
	__u32 tgid;           /* the launching process */
	__u64 cgroup_id;
	__u64 launches;       /* since the tenant appeared */
	__u64 completions;
	__u64 throttled_ns;   /* time its launches were held */
	__u64 kernel_ns;      /* GPU time of one of its launches (recent median), 0: unknown */
	__u64 last_launch_ns;
	__u64 last_complete_ns;
};

/* The launch being decided, and what the GPU's other tenants do. */
struct gpu_launch {
	__u64 now_ns;
	__u64 held_ns;        /* how long this launch was held so far */
	__u32 attempt;        /* 0: first ask; n: asked again after n holds */
	__u32 blocks;         /* grid size (x*y*z, saturated) */
	__u32 threads;        /* threads per block */
	__u32 lc_tenants;     /* live tenants of each class on this GPU */
	__u32 be_tenants;
	__u32 lc_inflight;    /* launches in flight, over the class */
	__u32 be_inflight;
	__u32 be_rank;        /* this BE tenant's place among the live BE tenants (0..be_tenants-1) */
	__u64 lc_last_launch_ns;   /* latest over LC tenants, 0: none */
	__u64 lc_last_complete_ns;
	__u64 lc_p50_ns;      /* launch-to-completion latency of LC launches over */
	__u64 lc_p99_ns;      /* the recent window, worst LC tenant; 0: no data */
	__u64 lc_next_ns;     /* predicted start of the next LC burst, 0: unknown */
	__u64 be_queued_ns;   /* expected GPU time of the BE launches in flight */
	__u64 be_other_last_launch_ns; /* latest launch of the other BE tenants, 0: none */
};

/* Launch holds: at most this long per bpf_gpu_hold_launch call. */
#define GPU_HOLD_MAX_US 1000000

/* Memory policy. Data members after the handlers say where it applies. */
struct gpu_mem_ops {
	/* A region became resident; place it in the eviction list. */
	int (*gpu_activate)(struct gpu_mem_ctx *ctx, struct gpu_region *r);
	/* A resident region was accessed (fault on it). */
	int (*gpu_access)(struct gpu_mem_ctx *ctx, struct gpu_region *r);
	/* The runtime is about to evict `victim` (head of the list). DEFAULT:
	 * evict it; BYPASS after moving it: re-pick (bounded; then FIFO). */
	int (*gpu_evict_prepare)(struct gpu_mem_ctx *ctx, struct gpu_region *victim);
	/* A fault on `r` at f->page: choose what to prefetch. */
	int (*gpu_prefetch)(struct gpu_mem_ctx *ctx, struct gpu_region *r, struct gpu_fault *f);
	__u32 scope;    /* enum gpu_scope */
	__u32 flags;    /* reserved, 0 */
	__u64 scope_id; /* tgid or cgroup id */
	char name[GPU_OPS_NAME_LEN];
};

/* Scheduling policy. */
struct gpu_sched_ops {
	/* A queue is being bound: set attributes, or reject the bind. */
	int (*task_init)(struct gpu_sched_ctx *ctx, struct gpu_queue *q);
	/* A queue is being destroyed. */
	int (*task_destroy)(struct gpu_sched_ctx *ctx, struct gpu_queue *q);
	/* A tenant is about to launch (user-space runtimes only). DEFAULT: the
	 * runtime's rule (pass while t->inflight < t->window, else wait for a
	 * completion and ask again); BYPASS: pass now, or, after
	 * bpf_gpu_hold_launch, hold the launch and ask again. */
	int (*task_launch)(struct gpu_sched_ctx *ctx, struct gpu_tenant *t, struct gpu_launch *l);
	__u32 scope;
	__u32 flags;
	__u64 scope_id;
	char name[GPU_OPS_NAME_LEN];
};

/* kfuncs. All return 0 or a negative errno.
 * bpf_gpu_move_head/tail: reorder a region (head = evicted first); valid in
 *   gpu_activate, gpu_access, gpu_evict_prepare.
 * bpf_gpu_set_prefetch_region: prefetch pages [first, outer) of the faulting
 *   region; valid in gpu_prefetch, within f->max_first..f->max_outer.
 * bpf_gpu_migrate_range: ask for [va, va+len) of the same address space to be
 *   made resident (up to GPU_MIGRATE_MAX per call, each at most
 *   GPU_MIGRATE_MAX_LEN); valid in gpu_prefetch and gpu_access.
 * bpf_gpu_set_attr: set a queue attribute; valid in task_init.
 * bpf_gpu_reject_bind: refuse the queue (creation fails with EPERM).
 * bpf_gpu_hold_launch: hold the launch up to `us` µs (≤ GPU_HOLD_MAX_US;
 *   woken early when a tenant of the GPU launches or completes), then
 *   task_launch runs again; valid in task_launch.
 * bpf_gpu_set_window: cap the tenant's launches in flight at n (0: no
 *   cap), kept in the tenant table until changed; valid in task_launch.
 *   gpuext.ko has no launch path: both return -EOPNOTSUPP there. */
#define GPU_MIGRATE_MAX 8
#define GPU_MIGRATE_MAX_LEN (64ULL << 20)

#if defined(__bpf__)
#ifndef __ksym
#define __ksym __attribute__((section(".ksyms")))
#endif
extern int bpf_gpu_move_head(struct gpu_mem_ctx *ctx, struct gpu_region *r) __ksym;
extern int bpf_gpu_move_tail(struct gpu_mem_ctx *ctx, struct gpu_region *r) __ksym;
extern int bpf_gpu_set_prefetch_region(struct gpu_mem_ctx *ctx, __u32 first, __u32 outer) __ksym;
extern int bpf_gpu_migrate_range(struct gpu_mem_ctx *ctx, __u64 va, __u64 len) __ksym;
extern int bpf_gpu_set_attr(struct gpu_sched_ctx *ctx, struct gpu_queue *q, __u32 attr,
			    __u64 value) __ksym;
extern int bpf_gpu_reject_bind(struct gpu_sched_ctx *ctx, struct gpu_queue *q) __ksym;
extern int bpf_gpu_hold_launch(struct gpu_sched_ctx *ctx, struct gpu_launch *l, __u64 us) __ksym;
extern int bpf_gpu_set_window(struct gpu_sched_ctx *ctx, struct gpu_tenant *t, __u32 n) __ksym;
#elif !defined(__KERNEL__)
/* User space: the shim's executor implements these with the same meaning. */
int bpf_gpu_move_head(struct gpu_mem_ctx *ctx, struct gpu_region *r);
int bpf_gpu_move_tail(struct gpu_mem_ctx *ctx, struct gpu_region *r);
int bpf_gpu_set_prefetch_region(struct gpu_mem_ctx *ctx, __u32 first, __u32 outer);
int bpf_gpu_migrate_range(struct gpu_mem_ctx *ctx, __u64 va, __u64 len);
int bpf_gpu_set_attr(struct gpu_sched_ctx *ctx, struct gpu_queue *q, __u32 attr, __u64 value);
int bpf_gpu_reject_bind(struct gpu_sched_ctx *ctx, struct gpu_queue *q);
int bpf_gpu_hold_launch(struct gpu_sched_ctx *ctx, struct gpu_launch *l, __u64 us);
int bpf_gpu_set_window(struct gpu_sched_ctx *ctx, struct gpu_tenant *t, __u32 n);
#endif

#endif
