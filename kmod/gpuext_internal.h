/* gpuext_internal.h — types shared by the files of gpuext.ko only. */
#ifndef GPUEXT_INTERNAL_H
#define GPUEXT_INTERNAL_H

#include <linux/atomic.h>
#include <linux/mutex.h>
#include "gpuext_backend.h"
#include "gpuext/gpuext_uapi.h"

#define GX_EVICT_TRIES 8        /* re-picks a policy may ask for per eviction */
#define GX_POLICY_MAX_ERRORS 16 /* then the policy is disabled: FIFO */

/* Module-wide counters (exported through GX_IOC_STATS). */
struct gx_counters {
	atomic64_t faults, activations, accesses, evictions, prefetch_pages, migrations;
	atomic64_t hints, hint_pages, policy_calls, policy_errors, fallbacks;
	atomic64_t queues_created, queues_rejected, live_objects;
};
extern struct gx_counters gx_stat;
#define gx_inc(f) atomic64_inc(&gx_stat.f)
#define gx_add(f, n) atomic64_add((n), &gx_stat.f)
#define gx_live_inc() atomic64_inc(&gx_stat.live_objects)
#define gx_live_dec() atomic64_dec(&gx_stat.live_objects)

/* An address space: registered by a process (mm set) or made by a test.
 * What a backend keeps for it is the backend's, keyed by id. */
struct gx_space {
	u32 id;
	u32 tgid;
	u64 cgroup_id;
	struct mm_struct *mm; /* mmgrab'd; NULL for test spaces */
	bool test;
};

/* gpuext_core.c: policies, struct_ops, kfuncs, hooks */
int gx_core_init(void);
void gx_core_exit(void);
int gx_policies_fill(struct gx_policy_info *buf, u32 room, u32 *total);
void gx_policy_counts(u32 *mem, u32 *sched);
u64 gx_current_cgroup_id(void);
u64 gx_task_cgroup_id(struct task_struct *t);
int gx_hook_activate(struct gx_dev *dev, struct gpu_region *r);
int gx_hook_access(struct gx_dev *dev, struct gpu_region *r);
struct gpu_region *gx_hook_evict_pick(struct gx_dev *dev, u32 pressure);
int gx_hook_prefetch(struct gx_dev *dev, struct gpu_region *r, struct gpu_fault *f,
		     struct gx_prefetch_out *out);
int gx_hook_task_init(struct gx_dev *dev, struct gpu_queue *q);
void gx_hook_task_destroy(struct gx_dev *dev, struct gpu_queue *q);

/* gpuext_backend.c: the registered backends; gx_lock held unless said */
extern struct mutex gx_lock; /* backends, spaces, what backends keep for /dev/gpuext */
int gx_dev_register(struct gx_dev *dev);   /* takes gx_lock */
void gx_dev_unregister(struct gx_dev *dev); /* takes gx_lock */
const char *gx_backend_name(void);
u32 gx_backend_features(void);
u32 gx_backend_resident(void);
long gx_backend_hint(struct mm_struct *mm, u32 space_id, u64 va, u64 len, u32 prio);
void gx_backend_space_drop(u32 space_id);
int gx_backend_has_queues(void);
int gx_backend_queue_attr(u64 id, int (*update)(struct gpu_queue *q, void *arg), void *arg);
long gx_backend_ioctl(unsigned int cmd, void __user *arg);

/* gpuext_space.c: address spaces (idr) */
struct gx_space *gx_space_new(u32 tgid, u64 cgid, struct mm_struct *mm);
void gx_space_free(struct gx_space *sp);         /* gx_lock held */
struct gx_space *gx_space_find(u32 id);          /* gx_lock held */
u32 gx_space_count(void);
void gx_space_drop_tests(void);                  /* gx_lock held */

/* gpuext_sim.c: the simulated backend; registers itself when sim=1. Only
 * gpuext_main.c calls it: everything else reaches it through its ops. */
int gx_sim_init(void);
void gx_sim_exit(void);

/* gpuext_dev.c */
int gx_copy_in(void *k, size_t ksize, void __user *u, u32 *usize);
int gx_copy_out(void __user *u, const void *k, size_t ksize, u32 usize);
int gx_chardev_init(void);
void gx_chardev_exit(void);

#endif
