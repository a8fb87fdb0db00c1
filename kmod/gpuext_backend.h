/* gpuext_backend.h — how a GPU memory manager plugs into gpuext.ko.
 *
 * A backend (the simulator in gpuext_sim.c, or NVIDIA's UVM/RM with the
 * patch in kmod/nvidia/) describes each GPU as a struct gx_dev with a few
 * operations on its own structures, and calls the hooks below from its
 * fault, prefetch, eviction and channel-group paths. The hooks run the
 * policy attached for the owner of the region/queue and apply the runtime's
 * default when there is none, it declines, or it misbehaves.
 *
 * Locking: the backend calls every mem hook with the lock protecting its
 * eviction list held; the hooks never sleep, and the ops below are called
 * back from inside them (so they must not take that lock again).
 *
 * NVIDIA's modules do not link against gpuext.ko: they take the exported
 * table `gx_hooks` with symbol_get() at load time and run unchanged without
 * it (see kmod/nvidia/README.md). */
#ifndef GPUEXT_BACKEND_H
#define GPUEXT_BACKEND_H

#include <linux/list.h>
#include <linux/types.h>
#include "gpuext/gpu_ext.h"

struct gx_dev;
struct mm_struct;

struct gx_backend_ops {
	/* Move a resident region to the head (evicted first) or tail of the
	 * device's eviction list. -ENOENT if it is not on the list. */
	int (*move)(struct gx_dev *dev, struct gpu_region *r, bool head);
	/* Next eviction candidate (head of the list, skipping regions that
	 * are pinned by the operation in progress); NULL if none. */
	struct gpu_region *(*head)(struct gx_dev *dev);
	/* Make [va, va+len) of r's address space resident (a policy's
	 * bpf_gpu_migrate_range). May be asynchronous. */
	int (*migrate)(struct gx_dev *dev, struct gpu_region *r, u64 va, u64 len);
	/* The ops below are optional and serve /dev/gpuext. They are called in
	 * process context with gpuext's own mutex held (they may sleep; they
	 * must not call dev_register/dev_unregister). */
	/* A user hint from GX_IOC_PREFETCH on address space `space_id` (the
	 * caller's own, registered with GX_IOC_REGISTER_AS; its memory is
	 * `mm`). Returns pages queued or -errno. */
	long (*hint)(struct gx_dev *dev, struct mm_struct *mm, u32 space_id, u64 va, u64 len, u32 prio);
	/* Address space `space_id` is going away: forget what the device keeps
	 * for it. */
	void (*space_drop)(struct gx_dev *dev, u32 space_id);
	/* GX_IOC_QUEUE_ATTR on queue `id`: -ENOENT if the device has no such
	 * queue; else call update(q, arg) under the lock that guards the queue
	 * (gpuext checks the caller's rights and the values there and changes
	 * q's attributes), apply the attributes if it returned 1 (changed) and
	 * return 0, or return its negative errno. */
	int (*queue_attr)(struct gx_dev *dev, u64 id, int (*update)(struct gpu_queue *q, void *arg),
			  void *arg);
	/* The device's own commands (the simulator's GX_IOC_TEST_* group),
	 * after gpuext checked CAP_SYS_ADMIN. Returns a result or -errno. */
	long (*ioctl)(struct gx_dev *dev, unsigned int cmd, void __user *arg);
};

struct gx_dev {
	const struct gx_backend_ops *ops;
	const char *name;
	void *priv;
	u32 capacity;    /* regions before eviction (informational) */
	u32 nr_resident; /* kept current by the backend */
	struct list_head node;
};

/* Prefetch decision returned to the backend. */
struct gx_prefetch_out {
	u32 first, outer; /* pages of the faulting region to bring in */
	u32 nr_migrate;   /* ranges the policy asked for (already passed to ops->migrate) */
	struct { u64 va, len; } migrate[GPU_MIGRATE_MAX];
};

/* The hook table, exported as the symbol `gx_hooks`. */
struct gx_hooks {
	u32 abi; /* GX_HOOKS_ABI */
	int (*dev_register)(struct gx_dev *dev);
	void (*dev_unregister)(struct gx_dev *dev);
	/* mem hooks: return the decision applied (GPU_DEFAULT/GPU_BYPASS). */
	int (*activate)(struct gx_dev *dev, struct gpu_region *r);
	int (*access)(struct gx_dev *dev, struct gpu_region *r);
	/* Pick the region to evict: asks the policy about ops->head()
	 * candidates, bounded, then FIFO. NULL if the list is empty. */
	struct gpu_region *(*evict_pick)(struct gx_dev *dev, u32 pressure);
	/* Decide the prefetch for a fault; out->first/outer always valid. */
	int (*prefetch)(struct gx_dev *dev, struct gpu_region *r, struct gpu_fault *f,
			struct gx_prefetch_out *out);
	/* sched hooks: task_init returns 0 or -EPERM (bind rejected). */
	int (*task_init)(struct gx_dev *dev, struct gpu_queue *q);
	void (*task_destroy)(struct gx_dev *dev, struct gpu_queue *q);
};
#define GX_HOOKS_ABI 2 /* 2: hint takes the space id; space_drop, queue_attr, ioctl */

extern const struct gx_hooks gx_hooks;

#endif
