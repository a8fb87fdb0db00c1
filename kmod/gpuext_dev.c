// SPDX-License-Identifier: GPL-2.0
/* gpuext_dev.c — /dev/gpuext: the versioned, extensible ioctl channel.
 *
 * Every argument starts with {size, version}; gx_copy_in() applies
 * copy_struct_from_user() semantics (shorter: zero-filled — but below the
 * first version's size is EINVAL; longer: the unknown tail must be zero,
 * else E2BIG) and checks the version (EPROTO). Outputs are copied back up
 * to the caller's size. A process may only hint the address space it
 * registered itself (same mm); the TEST group needs CAP_SYS_ADMIN. The
 * backends are reached only through their ops (gpuext_backend.c): hints,
 * queue attributes and a backend's own commands (the simulator's TEST
 * group) go to whichever backends are registered. */
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include "gpuext_internal.h"

struct gx_file {
	struct gx_space *space; /* registered by GX_IOC_REGISTER_AS; gx_lock */
};

int gx_copy_in(void *k, size_t ksize, void __user *u, u32 *usize)
{
	u32 size, version;
	int ret;

	if (get_user(size, (u32 __user *)u))
		return -EFAULT;
	if (size < ksize)
		return -EINVAL; /* version 1 is the first: all of it is required */
	if (size > PAGE_SIZE)
		return -E2BIG;
	ret = copy_struct_from_user(k, ksize, u, size);
	if (ret)
		return ret;
	version = ((u32 *)k)[1];
	if (version != GX_ABI_VERSION)
		return -EPROTO;
	*usize = size;
	return 0;
}

int gx_copy_out(void __user *u, const void *k, size_t ksize, u32 usize)
{
	if (copy_to_user(u, k, min_t(size_t, ksize, usize)))
		return -EFAULT;
	return 0;
}

static long gx_ioc_version(void __user *arg)
{
	struct gx_version v;
	u32 usize;
	int ret = gx_copy_in(&v, sizeof(v), arg, &usize);

	if (ret)
		return ret;
	v.abi_version = GX_ABI_VERSION;
	mutex_lock(&gx_lock);
	v.features = gx_backend_features();
	strscpy(v.backend, gx_backend_name(), sizeof(v.backend));
	mutex_unlock(&gx_lock);
	return gx_copy_out(arg, &v, sizeof(v), usize);
}

static long gx_ioc_register(struct gx_file *gf, void __user *arg)
{
	struct gx_register_as ra;
	struct gx_space *sp;
	u32 usize;
	int ret = gx_copy_in(&ra, sizeof(ra), arg, &usize);

	if (ret)
		return ret;
	if (ra.flags || ra.pad)
		return -EINVAL;
	if (ra.pid && ra.pid != task_tgid_nr(current))
		return -EPERM; /* only one's own address space */
	if (!current->mm)
		return -EINVAL;
	mutex_lock(&gx_lock);
	if (gf->space) {
		mutex_unlock(&gx_lock);
		return -EEXIST;
	}
	sp = gx_space_new(task_tgid_nr(current), gx_current_cgroup_id(), current->mm);
	if (!IS_ERR(sp))
		gf->space = sp;
	mutex_unlock(&gx_lock);
	if (IS_ERR(sp))
		return PTR_ERR(sp);
	ra.space_id = sp->id;
	return gx_copy_out(arg, &ra, sizeof(ra), usize);
}

static long gx_ioc_prefetch(void __user *arg)
{
	struct gx_prefetch pf;
	struct gx_range *r;
	struct gx_space *sp;
	u64 pages = 0;
	u32 usize, i;
	long ret = gx_copy_in(&pf, sizeof(pf), arg, &usize);

	if (ret)
		return ret;
	if (pf.flags || pf.priority > GX_PRIO_MAX || !pf.nr_ranges)
		return -EINVAL;
	if (pf.nr_ranges > GX_MAX_RANGES)
		return -E2BIG;
	r = kmalloc_array(pf.nr_ranges, sizeof(*r), GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	if (copy_from_user(r, u64_to_user_ptr(pf.ranges), pf.nr_ranges * sizeof(*r))) {
		ret = -EFAULT;
		goto out;
	}
	for (i = 0; i < pf.nr_ranges; i++) {
		if (!r[i].len || r[i].va >= GX_VA_LIMIT || r[i].len > GX_VA_LIMIT - r[i].va) {
			ret = -EINVAL;
			goto out;
		}
		pages += (PAGE_ALIGN(r[i].va + r[i].len) - (r[i].va & PAGE_MASK)) >> PAGE_SHIFT;
	}
	mutex_lock(&gx_lock);
	sp = gx_space_find(pf.space_id);
	if (!sp)
		ret = -ENOENT;
	else if (!sp->mm || sp->mm != current->mm)
		ret = -EPERM; /* not the caller's address space */
	else
		for (i = 0; i < pf.nr_ranges; i++)
			gx_backend_hint(current->mm, sp->id, r[i].va, r[i].len, pf.priority);
	mutex_unlock(&gx_lock);
	if (ret)
		goto out;
	gx_inc(hints);
	gx_add(hint_pages, pages);
	pf.pages = pages;
	ret = gx_copy_out(arg, &pf, sizeof(pf), usize);
out:
	kfree(r);
	return ret;
}

/* Run by the backend that owns the queue, under gx_lock: the caller's
 * rights, the new values, then the change. 1 if q changed. */
static int gx_queue_update(struct gpu_queue *q, void *arg)
{
	struct gx_queue_attr *qa = arg;

	if (q->tgid != task_tgid_nr(current) && !capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (qa->op == GX_QATTR_SET) {
		if (((qa->mask & GX_QATTR_F_PRIORITY) && (qa->priority < 0 || qa->priority > GPU_PRIO_MAX)) ||
		    ((qa->mask & GX_QATTR_F_TIMESLICE) &&
		     (qa->timeslice_us < GPU_TIMESLICE_MIN_US || qa->timeslice_us > GPU_TIMESLICE_MAX_US)) ||
		    ((qa->mask & GX_QATTR_F_INTERLEAVE) && qa->interleave > GPU_IL_HIGH))
			return -EINVAL;
		if ((qa->mask & GX_QATTR_F_PRIORITY) && qa->priority > q->priority && !capable(CAP_SYS_NICE))
			return -EPERM;
		if (qa->mask & GX_QATTR_F_PRIORITY)
			q->priority = qa->priority;
		if (qa->mask & GX_QATTR_F_TIMESLICE)
			q->timeslice_us = qa->timeslice_us;
		if (qa->mask & GX_QATTR_F_INTERLEAVE)
			q->interleave = qa->interleave;
	}
	qa->priority = q->priority;
	qa->timeslice_us = q->timeslice_us;
	qa->interleave = q->interleave;
	return qa->op == GX_QATTR_SET;
}

static long gx_ioc_queue_attr(void __user *arg)
{
	struct gx_queue_attr qa;
	u32 usize;
	int ret = gx_copy_in(&qa, sizeof(qa), arg, &usize);

	if (ret)
		return ret;
	if (qa.pad)
		return -EINVAL;
	mutex_lock(&gx_lock);
	ret = gx_backend_has_queues(); /* without one, ENOENT whatever the values */
	if (!ret && qa.op != GX_QATTR_GET && qa.op != GX_QATTR_SET)
		ret = -EINVAL;
	if (!ret && (qa.mask & ~(GX_QATTR_F_PRIORITY | GX_QATTR_F_TIMESLICE | GX_QATTR_F_INTERLEAVE)))
		ret = -EINVAL;
	if (!ret)
		ret = gx_backend_queue_attr(qa.queue_id, gx_queue_update, &qa);
	mutex_unlock(&gx_lock);
	return ret ?: gx_copy_out(arg, &qa, sizeof(qa), usize);
}

static long gx_ioc_stats(void __user *arg)
{
	struct gx_stats st;
	u32 usize;
	int ret = gx_copy_in(&st, sizeof(st), arg, &usize);

	if (ret)
		return ret;
	st.faults = atomic64_read(&gx_stat.faults);
	st.activations = atomic64_read(&gx_stat.activations);
	st.accesses = atomic64_read(&gx_stat.accesses);
	st.evictions = atomic64_read(&gx_stat.evictions);
	st.prefetch_pages = atomic64_read(&gx_stat.prefetch_pages);
	st.migrations = atomic64_read(&gx_stat.migrations);
	st.hints = atomic64_read(&gx_stat.hints);
	st.hint_pages = atomic64_read(&gx_stat.hint_pages);
	st.policy_calls = atomic64_read(&gx_stat.policy_calls);
	st.policy_errors = atomic64_read(&gx_stat.policy_errors);
	st.fallbacks = atomic64_read(&gx_stat.fallbacks);
	st.queues_created = atomic64_read(&gx_stat.queues_created);
	st.queues_rejected = atomic64_read(&gx_stat.queues_rejected);
	st.live_objects = atomic64_read(&gx_stat.live_objects);
	gx_policy_counts(&st.mem_policies, &st.sched_policies);
	mutex_lock(&gx_lock);
	st.spaces = gx_space_count();
	st.resident = gx_backend_resident();
	mutex_unlock(&gx_lock);
	return gx_copy_out(arg, &st, sizeof(st), usize);
}

#define GX_MAX_POLICY_INFO 1024

static long gx_ioc_policies(void __user *arg)
{
	struct gx_policies pl;
	struct gx_policy_info *buf = NULL;
	u32 usize, total;
	int n, ret = gx_copy_in(&pl, sizeof(pl), arg, &usize);

	if (ret)
		return ret;
	if (pl.nr > GX_MAX_POLICY_INFO)
		return -E2BIG;
	if (pl.nr) {
		buf = kcalloc(pl.nr, sizeof(*buf), GFP_KERNEL);
		if (!buf)
			return -ENOMEM;
	}
	n = gx_policies_fill(buf, pl.nr, &total);
	if (n && copy_to_user(u64_to_user_ptr(pl.entries), buf, n * sizeof(*buf)))
		ret = -EFAULT;
	kfree(buf);
	if (ret)
		return ret;
	pl.nr = n;
	pl.total = total;
	return gx_copy_out(arg, &pl, sizeof(pl), usize);
}

/* A backend's own commands (the simulator's TEST group): CAP_SYS_ADMIN,
 * then -ENODEV unless a backend has commands. */
static long gx_ioc_backend(unsigned int cmd, void __user *arg)
{
	long ret;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	mutex_lock(&gx_lock);
	ret = gx_backend_ioctl(cmd, arg);
	mutex_unlock(&gx_lock);
	return ret;
}

static long gx_ioctl(struct file *file, unsigned int cmd, unsigned long uarg)
{
	void __user *arg = (void __user *)uarg;
	struct gx_file *gf = file->private_data;

	switch (cmd) {
	case GX_IOC_VERSION:
		return gx_ioc_version(arg);
	case GX_IOC_REGISTER_AS:
		return gx_ioc_register(gf, arg);
	case GX_IOC_PREFETCH:
		return gx_ioc_prefetch(arg);
	case GX_IOC_QUEUE_ATTR:
		return gx_ioc_queue_attr(arg);
	case GX_IOC_STATS:
		return gx_ioc_stats(arg);
	case GX_IOC_POLICIES:
		return gx_ioc_policies(arg);
	case GX_IOC_TEST_CONFIG:
	case GX_IOC_TEST_SPACE:
	case GX_IOC_TEST_FAULT:
	case GX_IOC_TEST_LIST:
	case GX_IOC_TEST_EVICT:
	case GX_IOC_TEST_QUEUE:
		return gx_ioc_backend(cmd, arg);
	}
	return -ENOTTY;
}

static int gx_open(struct inode *inode, struct file *file)
{
	struct gx_file *gf = kzalloc(sizeof(*gf), GFP_KERNEL);

	if (!gf)
		return -ENOMEM;
	file->private_data = gf;
	gx_live_inc();
	return 0;
}

static int gx_release(struct inode *inode, struct file *file)
{
	struct gx_file *gf = file->private_data;

	mutex_lock(&gx_lock);
	if (gf->space)
		gx_space_free(gf->space);
	mutex_unlock(&gx_lock);
	kfree(gf);
	gx_live_dec();
	return 0;
}

static const struct file_operations gx_fops = {
	.owner = THIS_MODULE,
	.open = gx_open,
	.release = gx_release,
	.unlocked_ioctl = gx_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

static struct miscdevice gx_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = GX_DEV_NAME,
	.fops = &gx_fops,
	.mode = 0666, /* everyone may hint their own memory */
};

int gx_chardev_init(void)
{
	return misc_register(&gx_misc);
}

void gx_chardev_exit(void)
{
	misc_deregister(&gx_misc);
}
