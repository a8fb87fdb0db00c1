/* tn_internal.h — the tenant table's layout in shared memory and the
 * private state of a process's handle (tn_table.c: join/leave/reap/lock,
 * tn_stats.c: the hot path and the view, tn_ctl.c: the control plane).
 *
 * Concurrency: every word of a process entry has one writer, the owning
 * process (its launching threads and its completion thread serialise on
 * the handle's mutex); readers in other processes load words relaxed and
 * accept a mix of old and new values (figures for decisions, not
 * invariants). The robust lock guards slot allocation and tenant fields. */
#ifndef TN_INTERNAL_H
#define TN_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>

#include "tenant/gx_tenant.h"

#define TN_MAGIC 0x4e545847u /* "GXTN" */
/* 2: per-tenant limits (mem_limit, mem_used, mem_hiwater, mem_denied,
 * gpu_share, gpu_ns) and per-process mem_used/mem_hiwater/gpu_ns.
 * 3: memory limits per GPU (tn_tenant.gpus[], tn_proc.gpu; docs/limits.md).
 * A process of another version is refused (-EBADMSG, one line saying so)
 * and runs unscheduled, with no limit. */
#define TN_VERSION 3
#define TN_GPUS	   GX_TN_MAX_GPUS
#define TN_LAT 256           /* latency samples kept per process (recent: a controller reacts to it) */
#define TN_SVC 32            /* service-time samples (the median counts) */

#define LD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define ST(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

/* A GPU of a tenant (claimed under the lock by its first process there). */
struct tn_gpu {
	uint8_t dev[16]; /* the GPU's UUID */
	uint32_t used;	 /* slot taken */
	uint32_t pad;
	uint64_t mem_limit;   /* bytes on this GPU; 0: the tenant's mem_limit */
	uint64_t mem_used;    /* reserved here by the tenant's live processes (CAS against the limit) */
	uint64_t mem_hiwater; /* highest mem_used */
	uint64_t mem_denied;  /* allocations refused here */
};

struct tn_tenant {
	char name[GX_TN_NAME_MAX];
	uint32_t used;
	uint32_t cls;
	uint32_t window;
	uint32_t pad;
	uint64_t created_ns;
	/* counts of processes that left or died */
	uint64_t launches, completions, untracked, held, throttled_ns;
	/* limits (docs/limits.md): set by the first process, `gpuext tenant
	 * set`; the limit holds per GPU (gpus[]: each GPU's mem_used is what
	 * reservations CAS against its limit); the figures here are the sums
	 * over its GPUs, changed only by atomic read-modify-write */
	uint64_t mem_limit;   /* bytes per GPU, 0: none */
	uint64_t mem_used;    /* bytes reserved by the tenant's live processes, all GPUs */
	uint64_t mem_hiwater; /* highest mem_used */
	uint64_t mem_denied;  /* allocations refused at a limit */
	uint32_t gpu_share;   /* percent, 0: not scheduled by shares */
	uint32_t pad2;
	uint64_t gpu_ns;      /* GPU time of processes that left or died */
	/* version 3 */
	struct tn_gpu gpus[TN_GPUS];
};

struct tn_proc {
	uint32_t pid;            /* 0: free */
	uint32_t tenant;         /* index in tenants[] */
	uint64_t start_time;     /* /proc/PID/stat field 22: a reused pid differs */
	uint64_t pidns;          /* inode of /proc/PID/ns/pid */
	uint8_t dev[16];
	uint64_t cgroup_id;
	uint64_t heartbeat_ns;
	uint32_t inflight, max_inflight;
	uint64_t launches, completions, untracked, held, throttled_ns;
	uint64_t last_launch_ns, last_complete_ns;
	uint64_t kernel_ns;              /* median recent service time */
	uint64_t p50_ns, p99_ns, p999_ns;
	uint64_t burst_ns, period_ns, next_ns; /* LC bursts: last start, period, prediction */
	/* version 2 */
	uint64_t mem_used, mem_hiwater; /* this process's part of its tenant's mem_used (atomic) */
	uint64_t gpu_ns;                /* busy time of its tracked launches (completion spans) */
	/* version 3 */
	uint32_t gpu; /* its GPU in its tenant's gpus[] (TN_GPUS: none, nothing counted) */
	uint32_t pad3;
};

struct tn_table {
	uint32_t magic, version, size, pad;
	pthread_mutex_t lock;   /* robust, process-shared */
	uint32_t gen;           /* futex word */
	uint32_t waiters;
	uint32_t hiwater;       /* procs[] used below this index */
	uint32_t pad2;
	struct tn_tenant tenants[GX_TN_MAX_TENANTS];
	struct tn_proc procs[GX_TN_MAX_PROCS];
};

struct gx_tn {
	struct tn_table *t;
	int fd;
	char path[400];
	uint32_t slot;           /* procs[] */
	uint32_t tenant;
	uint32_t gpu; /* in the tenant's gpus[] (TN_GPUS: none) */
	uint64_t pidns, start_time;
	uint64_t lease_ns, burst_gap_ns;
	uint64_t last_reap_ns;
	pthread_mutex_t mu;      /* this process's writers of its entry */
	uint32_t lat[TN_LAT];    /* µs, ring */
	uint32_t nlat, lat_pos, since_q;
	uint64_t svc[TN_SVC];    /* GPU time per launch over 4 completions of one busy period */
	uint32_t svc_pos;
	uint64_t done[5];        /* the last completions of the busy period */
	uint32_t ndone;
	int regular;             /* consecutive bursts that kept the period */
	uint32_t mypid;
	/* to join again when the entry was reaped (taken for dead) meanwhile */
	char name[GX_TN_NAME_MAX];
	struct gx_tn_opts o;
	uint8_t dev[16];
};

/* Is the entry still this process's? (Reaped by mistake — a stopped
 * process past the other namespace's silence — it may belong to somebody
 * else now: then nothing is written there until gx_tn_tick joins again.) */
static inline bool tn_mine(const struct gx_tn *tn)
{
	return LD(tn->t->procs[tn->slot].pid) == tn->mypid;
}

/* tn_table.c */
int tn_map(int create, struct tn_table **t, int *fd, char *path, size_t plen);
void tn_unmap(struct tn_table *t, int fd);
int tn_lock(struct tn_table *t);
void tn_unlock(struct tn_table *t);
void tn_bump(struct tn_table *t);
uint64_t tn_now(void);
/* Reap dead processes (table locked). */
int tn_reap_locked(struct tn_table *t, uint64_t my_pidns, uint64_t now);
/* Claim an entry for tn (table locked): 0, -ENOSPC. */
int tn_join_locked(struct gx_tn *tn);
/* Fold an entry's counts into its tenant and free it (table locked). */
void tn_release_locked(struct tn_table *t, uint32_t slot);
uint64_t tn_pidns_of(uint32_t pid);
/* *w -= n, not below 0 (atomic). */
void tn_sub_floor(uint64_t *w, uint64_t n);
/* Change the named tenant under the lock (tn_ctl.c); 0 or -errno. */
int tn_update_tenant(const char *name, void (*apply)(struct tn_tenant *, const void *), const void *arg);

#endif
