// SPDX-License-Identifier: GPL-2.0
/* gpuext_sim.c — the simulated backend (module parameter sim=1).
 *
 * A model of one GPU as UVM sees it: regions (2 MiB VA blocks with a 4 KiB
 * page residency bitmap) of several address spaces, a device eviction list
 * (head = next victim) with a capacity in regions, a fault stream and
 * hardware queues, all driven from the TEST ioctls. It is a backend like
 * NVIDIA's UVM/RM (gpuext_backend.h): it registers its device when sim=1,
 * calls the same hooks, and /dev/gpuext reaches it only through its ops
 * (hint, space_drop, queue_attr and ioctl for the TEST group), so policies
 * run end to end without a GPU.
 *
 * Regions live only while resident (an evicted region is freed), so memory
 * is bounded by the capacity. What the simulator keeps per address space
 * (struct gx_sspace: its regions) is made at its first fault or hint and
 * freed by space_drop. The region being served by a fault is pinned: it is
 * never its own eviction victim. Everything runs under gx_lock: /dev/gpuext
 * holds it when it calls the ops. */
#include <linux/capability.h>
#include <linux/idr.h>
#include <linux/module.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include <linux/xarray.h>
#include "gpuext_internal.h"

static bool sim;
module_param(sim, bool, 0444);
MODULE_PARM_DESC(sim, "Use the simulated GPU backend (tests)");

/* An address space as the simulator sees it (gx_sim_spaces, by space id). */
struct gx_sspace {
	u32 id, tgid;
	u64 cgroup_id;
	struct xarray blocks; /* region index -> struct gx_block */
	u32 nr_resident;
};

struct gx_block {
	struct gpu_region r; /* what policies see */
	struct list_head lru;
	struct gx_sspace *sp;
	bool pinned;
};

struct gx_squeue {
	struct gpu_queue q;
};

static struct gx_dev gx_sim_dev;
static LIST_HEAD(gx_sim_list); /* resident regions, head = next victim */
static DEFINE_IDR(gx_sim_queues);
static DEFINE_XARRAY(gx_sim_spaces); /* space id -> struct gx_sspace */
static u64 gx_sim_next_id = 1;
#define GX_SIM_DEFAULT_CAPACITY 64
#define GX_SIM_MAX_CAPACITY	65536

static void gx_block_count(struct gx_block *b)
{
	u32 i, n = 0;

	for (i = 0; i < ARRAY_SIZE(b->r.resident_mask); i++)
		n += hweight64(b->r.resident_mask[i]);
	b->r.resident_pages = n;
}

static void gx_block_evict(struct gx_block *b)
{
	struct gx_sspace *sp = b->sp;

	list_del(&b->lru);
	xa_erase(&sp->blocks, b->r.va_start >> GPU_REGION_SHIFT);
	sp->nr_resident--;
	gx_sim_dev.nr_resident--;
	kfree(b);
	gx_live_dec();
}

/* The simulator's side of address space sp, made at first use. */
static struct gx_sspace *gx_sspace_get(struct gx_space *sp)
{
	struct gx_sspace *ss = xa_load(&gx_sim_spaces, sp->id);
	int ret;

	if (ss)
		return ss;
	ss = kzalloc(sizeof(*ss), GFP_KERNEL);
	if (!ss)
		return ERR_PTR(-ENOMEM);
	ss->id = sp->id;
	ss->tgid = sp->tgid;
	ss->cgroup_id = sp->cgroup_id;
	xa_init(&ss->blocks);
	ret = xa_err(xa_store(&gx_sim_spaces, sp->id, ss, GFP_KERNEL));
	if (ret) {
		kfree(ss);
		return ERR_PTR(ret);
	}
	gx_live_inc();
	return ss;
}

static void gx_sspace_free(struct gx_sspace *ss)
{
	struct gx_block *b;
	unsigned long idx;

	xa_for_each(&ss->blocks, idx, b)
		gx_block_evict(b);
	xa_destroy(&ss->blocks);
	xa_erase(&gx_sim_spaces, ss->id);
	kfree(ss);
	gx_live_dec();
}

/* Every space's regions (reset, unload). */
static void gx_sspaces_drop(void)
{
	struct gx_sspace *ss;
	unsigned long id;

	xa_for_each(&gx_sim_spaces, id, ss)
		gx_sspace_free(ss);
}

/* Make room for one more region; false if everything left is pinned. */
static bool gx_sim_make_room(u32 pressure, u32 *evicted)
{
	while (gx_sim_dev.nr_resident >= gx_sim_dev.capacity) {
		struct gpu_region *v = gx_hook_evict_pick(&gx_sim_dev, pressure);

		if (!v)
			return false;
		gx_block_evict(container_of(v, struct gx_block, r));
		gx_inc(evictions);
		if (evicted)
			(*evicted)++;
	}
	return true;
}

/* Return the region of `va`, activating it if it is not resident. */
static struct gx_block *gx_sim_get(struct gx_sspace *sp, u64 va, u32 pressure, u32 *evicted, bool *activated)
{
	unsigned long idx = va >> GPU_REGION_SHIFT;
	struct gx_block *b = xa_load(&sp->blocks, idx);
	int ret;

	*activated = false;
	if (b)
		return b;
	if (!gx_sim_make_room(pressure, evicted))
		return ERR_PTR(-ENOSPC);
	b = kzalloc(sizeof(*b), GFP_KERNEL);
	if (!b)
		return ERR_PTR(-ENOMEM);
	ret = xa_err(xa_store(&sp->blocks, idx, b, GFP_KERNEL));
	if (ret) {
		kfree(b);
		return ERR_PTR(ret);
	}
	gx_live_inc();
	b->sp = sp;
	b->r.id = gx_sim_next_id++;
	b->r.va_start = idx << GPU_REGION_SHIFT;
	b->r.tgid = sp->tgid;
	b->r.cgroup_id = sp->cgroup_id;
	b->r.space_id = sp->id;
	b->r.last_access_ns = ktime_get_ns();
	b->r.access_count = 1;
	list_add_tail(&b->lru, &gx_sim_list);
	sp->nr_resident++;
	gx_sim_dev.nr_resident++;
	b->r.space_resident = sp->nr_resident;
	*activated = true;
	b->pinned = true; /* not its own victim while a policy places it */
	gx_hook_activate(&gx_sim_dev, &b->r);
	b->pinned = false;
	return b;
}

static void gx_block_fill(struct gx_block *b, u32 first, u32 outer)
{
	u32 p;

	for (p = first; p < outer && p < GPU_REGION_PAGES; p++)
		b->r.resident_mask[p / 64] |= 1ULL << (p % 64);
	gx_block_count(b);
}

/* Bring [va, va+len) of a space in, whole regions, bounded by capacity. */
static long gx_sim_migrate_space(struct gx_sspace *sp, u64 va, u64 len, u32 *evicted)
{
	u64 end = va + len, a;
	u32 n = 0;
	long pages = 0;

	for (a = va & ~(GPU_REGION_SIZE - 1); a < end && n < gx_sim_dev.capacity; a += GPU_REGION_SIZE, n++) {
		bool act;
		struct gx_block *b = gx_sim_get(sp, a, GPU_PRESSURE_NONE, evicted, &act);
		u32 before;

		if (IS_ERR(b))
			return pages ?: PTR_ERR(b);
		before = b->r.resident_pages;
		gx_block_fill(b, 0, GPU_REGION_PAGES);
		pages += b->r.resident_pages - before;
		if (act)
			gx_inc(migrations);
	}
	return pages;
}

/* ---- backend ops ---- */

static int gx_sim_move(struct gx_dev *dev, struct gpu_region *r, bool head)
{
	struct gx_block *b = container_of(r, struct gx_block, r);

	if (list_empty(&b->lru))
		return -ENOENT;
	if (head)
		list_move(&b->lru, &gx_sim_list);
	else
		list_move_tail(&b->lru, &gx_sim_list);
	return 0;
}

static struct gpu_region *gx_sim_head(struct gx_dev *dev)
{
	struct gx_block *b;

	list_for_each_entry(b, &gx_sim_list, lru)
		if (!b->pinned)
			return &b->r;
	return NULL;
}

static u32 gx_mig_evicted; /* evictions caused by policy migrations (gx_lock) */

static int gx_sim_migrate(struct gx_dev *dev, struct gpu_region *r, u64 va, u64 len)
{
	struct gx_block *b = container_of(r, struct gx_block, r);
	long ret;

	ret = gx_sim_migrate_space(b->sp, va, len, &gx_mig_evicted);
	return ret < 0 ? ret : 0;
}

/* A hint on the caller's registered space: its regions brought in. */
static long gx_sim_hint(struct gx_dev *dev, struct mm_struct *mm, u32 space_id, u64 va, u64 len, u32 prio)
{
	struct gx_space *sp = gx_space_find(space_id);
	struct gx_sspace *ss;

	if (!sp || sp->mm != mm)
		return -ENOENT;
	ss = gx_sspace_get(sp);
	if (IS_ERR(ss))
		return PTR_ERR(ss);
	return gx_sim_migrate_space(ss, va, len, NULL);
}

static void gx_sim_space_drop(struct gx_dev *dev, u32 space_id)
{
	struct gx_sspace *ss = xa_load(&gx_sim_spaces, space_id);

	if (ss)
		gx_sspace_free(ss);
}

/* ---- faults ---- */

static int gx_sim_fault_one(struct gx_sspace *sp, u64 va, u32 pressure, u32 flags, struct gx_fault_result *res)
{
	struct gx_prefetch_out out;
	struct gpu_fault f = {};
	struct gx_block *b;
	u32 evicted = 0, page, before, i;
	bool act;

	gx_inc(faults);
	gx_mig_evicted = 0;
	b = gx_sim_get(sp, va, pressure, &evicted, &act);
	if (IS_ERR(b))
		return PTR_ERR(b);
	if (!act) {
		b->r.access_count++;
		b->r.last_access_ns = ktime_get_ns();
		b->r.space_resident = sp->nr_resident;
		b->pinned = true;
		gx_hook_access(&gx_sim_dev, &b->r);
		b->pinned = false;
	}
	page = (va >> GPU_PAGE_SHIFT) & (GPU_REGION_PAGES - 1);
	gx_block_fill(b, page, page + 1);
	before = b->r.resident_pages;
	f.va = va;
	f.page = page;
	f.flags = flags;
	f.max_first = 0;
	f.max_outer = GPU_REGION_PAGES;
	f.default_first = page;
	f.default_outer = page + 1;
	b->r.space_resident = sp->nr_resident;
	b->pinned = true;
	gx_hook_prefetch(&gx_sim_dev, &b->r, &f, &out);
	evicted += gx_mig_evicted;
	gx_block_fill(b, out.first, out.outer);
	b->pinned = false;
	gx_add(prefetch_pages, b->r.resident_pages - before);
	if (res) {
		memset(res, 0, sizeof(*res));
		res->va = va;
		res->first = out.first;
		res->outer = out.outer;
		res->nr_migrate = out.nr_migrate;
		res->evicted = evicted;
		for (i = 0; i < out.nr_migrate && i < ARRAY_SIZE(res->migrate); i++) {
			res->migrate[i].va = out.migrate[i].va;
			res->migrate[i].len = out.migrate[i].len;
		}
	}
	return 0;
}

static long gx_sim_fault(void __user *arg)
{
	struct gx_test_fault tf;
	struct gx_fault_result *res = NULL;
	struct gx_sspace *ss;
	struct gx_space *sp;
	u64 *vas;
	u32 usize, i;
	long ret;

	ret = gx_copy_in(&tf, sizeof(tf), arg, &usize);
	if (ret)
		return ret;
	if (!tf.nr || tf.pressure > GPU_PRESSURE_CRITICAL || (tf.flags & ~GPU_FAULT_WRITE))
		return -EINVAL;
	if (tf.nr > GX_MAX_FAULTS)
		return -E2BIG;
	vas = kvmalloc_array(tf.nr, sizeof(*vas), GFP_KERNEL);
	if (!vas)
		return -ENOMEM;
	if (copy_from_user(vas, u64_to_user_ptr(tf.vas), tf.nr * sizeof(*vas))) {
		ret = -EFAULT;
		goto out;
	}
	for (i = 0; i < tf.nr; i++) {
		if (vas[i] >= GX_VA_LIMIT) {
			ret = -EINVAL;
			goto out;
		}
	}
	if (tf.results) {
		res = kvcalloc(tf.nr, sizeof(*res), GFP_KERNEL);
		if (!res) {
			ret = -ENOMEM;
			goto out;
		}
	}
	sp = gx_space_find(tf.space_id);
	ss = sp ? gx_sspace_get(sp) : ERR_PTR(-ENOENT);
	if (IS_ERR(ss)) {
		ret = PTR_ERR(ss);
	} else {
		for (i = 0; i < tf.nr; i++) {
			ret = gx_sim_fault_one(ss, vas[i], tf.pressure, tf.flags, res ? &res[i] : NULL);
			if (ret)
				break;
		}
	}
	if (!ret && res && copy_to_user(u64_to_user_ptr(tf.results), res, tf.nr * sizeof(*res)))
		ret = -EFAULT;
out:
	kvfree(res);
	kvfree(vas);
	return ret;
}

/* ---- list, evict, config, spaces ---- */

static long gx_sim_list_ioctl(void __user *arg)
{
	struct gx_test_list tl;
	struct gx_region_info *buf = NULL;
	struct gx_block *b;
	u32 usize, n = 0, total = 0;
	long ret;

	ret = gx_copy_in(&tl, sizeof(tl), arg, &usize);
	if (ret)
		return ret;
	if (tl.nr > GX_MAX_LIST)
		return -E2BIG;
	if (tl.nr) {
		buf = kvcalloc(tl.nr, sizeof(*buf), GFP_KERNEL);
		if (!buf)
			return -ENOMEM;
	}
	list_for_each_entry(b, &gx_sim_list, lru) {
		if (n < tl.nr) {
			buf[n].va = b->r.va_start;
			buf[n].space_id = b->r.space_id;
			buf[n].tgid = b->r.tgid;
			buf[n].access_count = b->r.access_count;
			buf[n].resident_pages = b->r.resident_pages;
			n++;
		}
		total++;
	}
	ret = 0;
	if (n && copy_to_user(u64_to_user_ptr(tl.entries), buf, n * sizeof(*buf)))
		ret = -EFAULT;
	kvfree(buf);
	if (ret)
		return ret;
	tl.nr = n;
	tl.total = total;
	return gx_copy_out(arg, &tl, sizeof(tl), usize);
}

static long gx_sim_evict_ioctl(void __user *arg)
{
	struct gx_test_evict te;
	u32 usize, i;
	long ret;

	ret = gx_copy_in(&te, sizeof(te), arg, &usize);
	if (ret)
		return ret;
	if (te.pressure > GPU_PRESSURE_CRITICAL)
		return -EINVAL;
	if (te.nr > GX_SIM_MAX_CAPACITY)
		return -E2BIG;
	for (i = 0; i < te.nr; i++) {
		struct gpu_region *v = gx_hook_evict_pick(&gx_sim_dev, te.pressure);

		if (!v)
			break;
		gx_block_evict(container_of(v, struct gx_block, r));
		gx_inc(evictions);
	}
	te.nr = i;
	return gx_copy_out(arg, &te, sizeof(te), usize);
}

static void gx_sim_queues_drop(void)
{
	struct gx_squeue *q;
	int id;

	idr_for_each_entry(&gx_sim_queues, q, id) {
		gx_hook_task_destroy(&gx_sim_dev, &q->q);
		idr_remove(&gx_sim_queues, id);
		kfree(q);
		gx_live_dec();
	}
}

static long gx_sim_config(void __user *arg)
{
	struct gx_test_config tc;
	u32 usize;
	long ret;

	ret = gx_copy_in(&tc, sizeof(tc), arg, &usize);
	if (ret)
		return ret;
	if (!tc.capacity || tc.capacity > GX_SIM_MAX_CAPACITY || tc.flags)
		return -EINVAL;
	gx_sspaces_drop();
	gx_space_drop_tests();
	gx_sim_queues_drop();
	gx_sim_dev.capacity = tc.capacity;
	return 0;
}

static long gx_sim_space(void __user *arg)
{
	struct gx_test_space ts;
	struct task_struct *t;
	struct gx_space *sp;
	u64 cgid;
	u32 usize;
	long ret;

	ret = gx_copy_in(&ts, sizeof(ts), arg, &usize);
	if (ret)
		return ret;
	rcu_read_lock();
	t = ts.tgid && ts.tgid <= PID_MAX_LIMIT ? pid_task(find_vpid(ts.tgid), PIDTYPE_TGID) : NULL;
	cgid = t ? gx_task_cgroup_id(t) : 0;
	rcu_read_unlock();
	if (!t)
		return -ESRCH;
	sp = gx_space_new(ts.tgid, cgid, NULL);
	if (!IS_ERR(sp)) {
		sp->test = true;
		ts.space_id = sp->id;
	}
	if (IS_ERR(sp))
		return PTR_ERR(sp);
	return gx_copy_out(arg, &ts, sizeof(ts), usize);
}

/* ---- queues ---- */

static long gx_sim_queue(void __user *arg)
{
	struct gx_test_queue tq;
	struct task_struct *t;
	struct gx_squeue *q;
	u32 usize;
	long ret;
	int id;

	ret = gx_copy_in(&tq, sizeof(tq), arg, &usize);
	if (ret)
		return ret;
	if (tq.op == GX_TQ_DESTROY) {
		if (tq.queue_id > INT_MAX)
			return -ENOENT;
		q = tq.queue_id ? idr_remove(&gx_sim_queues, tq.queue_id) : NULL;
		if (q)
			gx_hook_task_destroy(&gx_sim_dev, &q->q);
		if (!q)
			return -ENOENT;
		kfree(q);
		gx_live_dec();
		return 0;
	}
	if (tq.op != GX_TQ_CREATE || tq.priority < 0 || tq.priority > GX_PRIO_MAX)
		return -EINVAL;
	q = kzalloc(sizeof(*q), GFP_KERNEL);
	if (!q)
		return -ENOMEM;
	rcu_read_lock();
	t = tq.tgid && tq.tgid <= PID_MAX_LIMIT ? pid_task(find_vpid(tq.tgid), PIDTYPE_TGID) : NULL;
	q->q.cgroup_id = t ? gx_task_cgroup_id(t) : 0;
	rcu_read_unlock();
	if (!t) {
		kfree(q);
		return -ESRCH;
	}
	q->q.tgid = tq.tgid;
	q->q.engine = tq.engine;
	q->q.priority = tq.priority;
	q->q.timeslice_us = GPU_TIMESLICE_DEFAULT_US;
	q->q.interleave = GPU_IL_MEDIUM;
	id = idr_alloc(&gx_sim_queues, q, 1, INT_MAX, GFP_KERNEL);
	if (id > 0) {
		q->q.id = id;
		ret = gx_hook_task_init(&gx_sim_dev, &q->q);
		if (ret)
			idr_remove(&gx_sim_queues, id);
	} else {
		ret = id;
	}
	if (!ret) {
		tq.queue_id = id;
		tq.timeslice_us = q->q.timeslice_us;
		tq.interleave = q->q.interleave;
		tq.granted_priority = q->q.priority;
		gx_live_inc();
	}
	if (ret) {
		kfree(q);
		return ret;
	}
	return gx_copy_out(arg, &tq, sizeof(tq), usize);
}

/* GX_IOC_QUEUE_ATTR: /dev/gpuext's update checks and changes the queue;
 * nothing more to apply on a simulated GPU. */
static int gx_sim_queue_attr(struct gx_dev *dev, u64 id, int (*update)(struct gpu_queue *q, void *arg), void *arg)
{
	struct gx_squeue *q = id && id <= INT_MAX ? idr_find(&gx_sim_queues, id) : NULL;
	int ret;

	if (!q)
		return -ENOENT;
	ret = update(&q->q, arg);
	return ret < 0 ? ret : 0;
}

/* The TEST group (CAP_SYS_ADMIN already checked). */
static long gx_sim_ioctl(struct gx_dev *dev, unsigned int cmd, void __user *arg)
{
	switch (cmd) {
	case GX_IOC_TEST_CONFIG:
		return gx_sim_config(arg);
	case GX_IOC_TEST_SPACE:
		return gx_sim_space(arg);
	case GX_IOC_TEST_FAULT:
		return gx_sim_fault(arg);
	case GX_IOC_TEST_LIST:
		return gx_sim_list_ioctl(arg);
	case GX_IOC_TEST_EVICT:
		return gx_sim_evict_ioctl(arg);
	case GX_IOC_TEST_QUEUE:
		return gx_sim_queue(arg);
	}
	return -ENOTTY;
}

static const struct gx_backend_ops gx_sim_ops = {
	.move = gx_sim_move,
	.head = gx_sim_head,
	.migrate = gx_sim_migrate,
	.hint = gx_sim_hint,
	.space_drop = gx_sim_space_drop,
	.queue_attr = gx_sim_queue_attr,
	.ioctl = gx_sim_ioctl,
};

int gx_sim_init(void)
{
	if (!sim)
		return 0;
	gx_sim_dev.ops = &gx_sim_ops;
	gx_sim_dev.name = "sim";
	gx_sim_dev.capacity = GX_SIM_DEFAULT_CAPACITY;
	return gx_dev_register(&gx_sim_dev);
}

void gx_sim_exit(void)
{
	if (!sim)
		return;
	mutex_lock(&gx_lock);
	gx_sspaces_drop();
	gx_space_drop_tests();
	gx_sim_queues_drop();
	mutex_unlock(&gx_lock);
	idr_destroy(&gx_sim_queues);
	gx_dev_unregister(&gx_sim_dev);
}
