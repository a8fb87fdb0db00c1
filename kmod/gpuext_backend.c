// SPDX-License-Identifier: GPL-2.0
/* gpuext_backend.c — the registered GPU backends (gpuext_backend.h): the
 * simulator when sim=1, NVIDIA's UVM per GPU, and the calls the rest of the
 * module makes through their ops. The rest of gpuext.ko knows no backend by
 * name: it reaches them only through this list.
 *
 * gx_lock guards the list, the address spaces (gpuext_space.c) and whatever
 * a backend keeps for /dev/gpuext: every optional op is called with it held.
 * The mem hooks, called by backends under their own list locks, never take
 * it. */
#include <linux/list.h>
#include <linux/mutex.h>
#include "gpuext_internal.h"

DEFINE_MUTEX(gx_lock);
static LIST_HEAD(gx_devs);

int gx_dev_register(struct gx_dev *dev)
{
	if (!dev || !dev->ops || !dev->ops->move || !dev->ops->head || !dev->ops->migrate)
		return -EINVAL;
	mutex_lock(&gx_lock);
	list_add_tail(&dev->node, &gx_devs);
	mutex_unlock(&gx_lock);
	return 0;
}

void gx_dev_unregister(struct gx_dev *dev)
{
	mutex_lock(&gx_lock);
	list_del(&dev->node);
	mutex_unlock(&gx_lock);
}

/* The first registered backend's name ("none" without one) and whether one
 * of them has its own commands (GX_FEAT_SIM). gx_lock held. */
const char *gx_backend_name(void)
{
	struct gx_dev *dev = list_first_entry_or_null(&gx_devs, struct gx_dev, node);

	return dev && dev->name ? dev->name : "none";
}

u32 gx_backend_features(void)
{
	struct gx_dev *dev;

	list_for_each_entry(dev, &gx_devs, node)
		if (dev->ops->ioctl)
			return GX_FEAT_SIM;
	return 0;
}

/* Regions resident on all devices. gx_lock held. */
u32 gx_backend_resident(void)
{
	struct gx_dev *dev;
	u32 n = 0;

	list_for_each_entry(dev, &gx_devs, node)
		n += dev->nr_resident;
	return n;
}

/* A user hint goes to every device's backend. gx_lock held. */
long gx_backend_hint(struct mm_struct *mm, u32 space_id, u64 va, u64 len, u32 prio)
{
	struct gx_dev *dev;
	long pages = 0, ret;

	list_for_each_entry(dev, &gx_devs, node) {
		if (!dev->ops->hint)
			continue;
		ret = dev->ops->hint(dev, mm, space_id, va, len, prio);
		if (ret > 0)
			pages += ret;
	}
	return pages;
}

/* gx_lock held. */
void gx_backend_space_drop(u32 space_id)
{
	struct gx_dev *dev;

	list_for_each_entry(dev, &gx_devs, node)
		if (dev->ops->space_drop)
			dev->ops->space_drop(dev, space_id);
}

/* -ENOENT when no backend manages queues (the caller checks nothing else
 * then). gx_lock held. */
int gx_backend_has_queues(void)
{
	struct gx_dev *dev;

	list_for_each_entry(dev, &gx_devs, node)
		if (dev->ops->queue_attr)
			return 0;
	return -ENOENT;
}

/* The first backend that knows queue `id` runs update on it. gx_lock held. */
int gx_backend_queue_attr(u64 id, int (*update)(struct gpu_queue *q, void *arg), void *arg)
{
	struct gx_dev *dev;
	int ret;

	list_for_each_entry(dev, &gx_devs, node) {
		if (!dev->ops->queue_attr)
			continue;
		ret = dev->ops->queue_attr(dev, id, update, arg);
		if (ret != -ENOENT)
			return ret;
	}
	return -ENOENT;
}

/* A backend's own command: the first backend that has commands; -ENODEV if
 * none does. gx_lock held. */
long gx_backend_ioctl(unsigned int cmd, void __user *arg)
{
	struct gx_dev *dev;

	list_for_each_entry(dev, &gx_devs, node)
		if (dev->ops->ioctl)
			return dev->ops->ioctl(dev, cmd, arg);
	return -ENODEV;
}
