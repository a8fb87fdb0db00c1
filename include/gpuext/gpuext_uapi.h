/* gpuext_uapi.h — the ioctl ABI of /dev/gpuext (kernel module <-> user space).
 *
 * Extensible like openat2/clone3: every argument struct starts with its
 * size (what user space was compiled with) and an ABI version. The kernel
 * copies min(size, its own) bytes and (copy_struct_from_user semantics)
 * rejects a larger struct whose unknown tail is not all zero with E2BIG;
 * a smaller one gets the missing fields as zero. Outputs are written back up
 * to the caller's size only. Fields are only ever appended.
 *
 * Errors (stable): EINVAL bad size (< first version), flags or values;
 * E2BIG unknown non-zero tail, size > 4096, too many ranges/entries;
 * EPROTO version != GX_ABI_VERSION; EFAULT bad pointer; ENOTTY unknown
 * command; ENOENT unknown address space or queue; EPERM not yours /
 * not privileged / rejected by policy; EEXIST already registered;
 * ENODEV test command without the simulated backend; ENOSPC device full. */
#ifndef GPUEXT_UAPI_H
#define GPUEXT_UAPI_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define GX_DEV_NAME "gpuext"
#define GX_ABI_VERSION 1
#define GX_IOC_MAGIC 0xE7

/* Every argument struct starts with these two fields. */
#define GX_IOC_HEAD   \
	__u32 size;   \
	__u32 version

/* GX_IOC_VERSION: what this module speaks. */
struct gx_version {
	GX_IOC_HEAD;
	__u32 abi_version; /* out */
	__u32 features;    /* out: GX_FEAT_* */
	char backend[16];  /* out: first registered backend: "sim", "nvidia-uvm"; "none" */
};
#define GX_FEAT_SIM 0x1

/* GX_IOC_REGISTER_AS: register the caller's address space (its mm) for
 * hints, on this open file (one per file; closing the file drops it). */
struct gx_register_as {
	GX_IOC_HEAD;
	__u32 flags; /* 0 */
	__u32 pid;   /* 0 or the caller's own tgid; others: EPERM */
	__u32 space_id; /* out */
	__u32 pad;
};

struct gx_range {
	__u64 va;
	__u64 len;
};
#define GX_MAX_RANGES 256
#define GX_VA_LIMIT (1ULL << 57) /* user VA bound (5-level paging) */

/* GX_IOC_PREFETCH: hint that [va, va+len) ranges of the caller's address
 * space will be used on the device soon. */
struct gx_prefetch {
	GX_IOC_HEAD;
	__u32 space_id;
	__u32 priority;   /* 0..GX_PRIO_MAX */
	__u32 nr_ranges;  /* 1..GX_MAX_RANGES */
	__u32 flags;      /* 0 */
	__u64 ranges;     /* user pointer to struct gx_range[nr_ranges] */
	__u64 pages;      /* out: pages queued for migration */
};
#define GX_PRIO_MAX 7

/* GX_IOC_QUEUE_ATTR: read or change a queue's attributes. The owner may set
 * them; raising priority above what the policy gave needs CAP_SYS_NICE. */
struct gx_queue_attr {
	GX_IOC_HEAD;
	__u64 queue_id;
	__u32 op;   /* GX_QATTR_GET / GX_QATTR_SET */
	__u32 mask; /* SET: GX_QATTR_F_* fields to change */
	__s32 priority;
	__u32 timeslice_us;
	__u32 interleave;
	__u32 pad;
};
#define GX_QATTR_GET 0
#define GX_QATTR_SET 1
#define GX_QATTR_F_PRIORITY 0x1
#define GX_QATTR_F_TIMESLICE 0x2
#define GX_QATTR_F_INTERLEAVE 0x4

/* GX_IOC_STATS: module-wide counters. */
struct gx_stats {
	GX_IOC_HEAD;
	__u64 faults;
	__u64 activations;
	__u64 accesses;
	__u64 evictions;
	__u64 prefetch_pages;  /* pages brought in by prefetch (in-region) */
	__u64 migrations;      /* regions brought in by bpf_gpu_migrate_range */
	__u64 hints;           /* GX_IOC_PREFETCH calls accepted */
	__u64 hint_pages;
	__u64 policy_calls;
	__u64 policy_errors;   /* garbage decisions, bad kfunc use */
	__u64 fallbacks;       /* evictions decided by the FIFO fallback */
	__u64 queues_created;
	__u64 queues_rejected;
	__u64 live_objects;    /* spaces + regions + queues + policies alive */
	__u32 mem_policies;    /* attached now */
	__u32 sched_policies;
	__u32 spaces;
	__u32 resident;        /* regions on the eviction list */
};

/* GX_IOC_POLICIES: list attached policies. */
struct gx_policy_info {
	char name[16];
	__u32 kind;  /* GX_POLICY_MEM / GX_POLICY_SCHED */
	__u32 scope; /* enum gpu_scope */
	__u64 scope_id;
	__u64 calls;
	__u64 errors;
	__u32 disabled;
	__u32 pad;
};
#define GX_POLICY_MEM 1
#define GX_POLICY_SCHED 2
struct gx_policies {
	GX_IOC_HEAD;
	__u32 nr;      /* in: entries room; out: entries written */
	__u32 total;   /* out: attached policies */
	__u64 entries; /* user pointer to struct gx_policy_info[nr] */
};

/* ---- TEST group: drives the simulated backend (module param sim=1).
 * Needs CAP_SYS_ADMIN; ENODEV without the simulator. ---- */

/* Reset the simulator: drop all test spaces, regions and queues. */
struct gx_test_config {
	GX_IOC_HEAD;
	__u32 capacity; /* regions the device holds, 1..65536 */
	__u32 flags;    /* 0 */
};

/* Create a test address space owned by `tgid` (no mm; hints not allowed). */
struct gx_test_space {
	GX_IOC_HEAD;
	__u32 tgid;     /* must exist */
	__u32 space_id; /* out */
};

struct gx_fault_result {
	__u64 va;
	__u32 first, outer;  /* pages made resident in the faulting region */
	__u32 nr_migrate;    /* ranges the policy asked for */
	__u32 evicted;       /* regions evicted while serving this fault */
	struct gx_range migrate[8];
};
#define GX_MAX_FAULTS 4096

/* Simulate device faults on a space, in order. */
struct gx_test_fault {
	GX_IOC_HEAD;
	__u32 space_id;
	__u32 nr;        /* 1..GX_MAX_FAULTS */
	__u32 pressure;  /* force enum gpu_pressure for evictions (0: auto) */
	__u32 flags;     /* GPU_FAULT_WRITE */
	__u64 vas;       /* user pointer to __u64[nr] */
	__u64 results;   /* optional user pointer to struct gx_fault_result[nr] */
};

struct gx_region_info {
	__u64 va;
	__u32 space_id;
	__u32 tgid;
	__u32 access_count;
	__u32 resident_pages;
};
#define GX_MAX_LIST 65536
/* The eviction list, head (next victim) first. */
struct gx_test_list {
	GX_IOC_HEAD;
	__u32 nr;      /* in: room; out: written */
	__u32 total;   /* out */
	__u64 entries; /* user pointer to struct gx_region_info[nr] */
};

/* Evict `nr` regions now, as under pressure. */
struct gx_test_evict {
	GX_IOC_HEAD;
	__u32 nr;
	__u32 pressure; /* enum gpu_pressure; 0 means EVICTING */
};

/* Create or destroy a simulated hardware queue. */
struct gx_test_queue {
	GX_IOC_HEAD;
	__u32 op;       /* GX_TQ_CREATE / GX_TQ_DESTROY */
	__u32 tgid;     /* CREATE: owner (must exist) */
	__u32 engine;
	__s32 priority; /* CREATE: requested, 0..GX_PRIO_MAX */
	__u64 queue_id; /* CREATE: out; DESTROY: in */
	__u32 timeslice_us; /* out */
	__u32 interleave;   /* out */
	__s32 granted_priority; /* out */
	__u32 pad;
};
#define GX_TQ_CREATE 0
#define GX_TQ_DESTROY 1

#define GX_IOC_VERSION     _IO(GX_IOC_MAGIC, 0x00)
#define GX_IOC_REGISTER_AS _IO(GX_IOC_MAGIC, 0x01)
#define GX_IOC_PREFETCH    _IO(GX_IOC_MAGIC, 0x02)
#define GX_IOC_QUEUE_ATTR  _IO(GX_IOC_MAGIC, 0x03)
#define GX_IOC_STATS       _IO(GX_IOC_MAGIC, 0x04)
#define GX_IOC_POLICIES    _IO(GX_IOC_MAGIC, 0x05)
#define GX_IOC_TEST_CONFIG _IO(GX_IOC_MAGIC, 0x40)
#define GX_IOC_TEST_SPACE  _IO(GX_IOC_MAGIC, 0x41)
#define GX_IOC_TEST_FAULT  _IO(GX_IOC_MAGIC, 0x42)
#define GX_IOC_TEST_LIST   _IO(GX_IOC_MAGIC, 0x43)
#define GX_IOC_TEST_EVICT  _IO(GX_IOC_MAGIC, 0x44)
#define GX_IOC_TEST_QUEUE  _IO(GX_IOC_MAGIC, 0x45)

#endif
