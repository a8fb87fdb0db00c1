/* gpuext_internal.h — types shared by the files of gpuext.ko only. */
#ifndef GPUEXT_INTERNAL_H
#define GPUEXT_INTERNAL_H

#include <linux/atomic.h>
#include <linux/mutex.h>
#include <linux/xarray.h>
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

/* An address space: registered by a process (mm set) or made by a test. */
struct gx_space {
	u32 id;
	u32 tgid;
	u64 cgroup_id;
	struct mm_struct *mm; /* mmgrab'd; NULL for test spaces */
	struct xarray blocks; /* simulator: region index -> struct gx_block */
	u32 nr_resident;
	bool test;
};

/* gpuext_core.c: policies, struct_ops, kfuncs, hooks */
int gx_core_init(void);
void gx_core_exit(void);
int gx_policies_fill(struct gx_policy_info *buf, u32 room, u32 *total);
void gx_policy_counts(u32 *mem, u32 *sched);
u64 gx_current_cgroup_id(void);
u64 gx_task_cgroup_id(struct task_struct *t);
int gx_dev_register(struct gx_dev *dev);
void gx_dev_unregister(struct gx_dev *dev);
long gx_hint_all(struct mm_struct *mm, u64 va, u64 len, u32 prio);
int gx_hook_activate(struct gx_dev *dev, struct gpu_region *r);
int gx_hook_access(struct gx_dev *dev, struct gpu_region *r);
struct gpu_region *gx_hook_evict_pick(struct gx_dev *dev, u32 pressure);
int gx_hook_prefetch(struct gx_dev *dev, struct gpu_region *r, struct gpu_fault *f,
		     struct gx_prefetch_out *out);
int gx_hook_task_init(struct gx_dev *dev, struct gpu_queue *q);
void gx_hook_task_destroy(struct gx_dev *dev, struct gpu_queue *q);

/* gpuext_space.c: address spaces (idr) */
extern struct mutex gx_lock; /* spaces, simulator state, queues */
struct gx_space *gx_space_new(u32 tgid, u64 cgid, struct mm_struct *mm);
void gx_space_free(struct gx_space *sp);         /* gx_lock held */
struct gx_space *gx_space_find(u32 id);          /* gx_lock held */
u32 gx_space_count(void);
void gx_space_drop_tests(void);                  /* gx_lock held */
void gx_space_drop_all_blocks(void);             /* gx_lock held */

/* gpuext_sim.c: the simulated backend */
int gx_sim_init(void);
void gx_sim_exit(void);
bool gx_sim_enabled(void);
void gx_sim_space_drop(struct gx_space *sp);     /* gx_lock held */
long gx_sim_ioctl(unsigned int cmd, void __user *arg);
int gx_sim_queue_attr(struct gx_queue_attr *qa);
u32 gx_sim_resident(void);
long gx_sim_hint_space(struct gx_space *sp, u64 va, u64 len); /* gx_lock held */

/* gpuext_dev.c */
int gx_copy_in(void *k, size_t ksize, void __user *u, u32 *usize);
int gx_copy_out(void __user *u, const void *k, size_t ksize, u32 usize);
int gx_chardev_init(void);
void gx_chardev_exit(void);

#endif
