// SPDX-License-Identifier: GPL-2.0
/* gx_consumer.c — a stand-in for NVIDIA's modules as users of gpuext.ko's
 * hook table, for the QEMU test (tests/kmod/vm-init.sh). It uses gx_hooks
 * the two ways kmod/nvidia/gpuext-hooks.patch does:
 *
 * - like nvidia-uvm (uvm_gpuext_pmm_init/deinit): at load it takes the table
 *   with symbol_get() and registers a device, keeping the module reference
 *   until it unregisters at unload. Without gpuext.ko it loads anyway and
 *   runs without hooks (parameter `hooked` says which).
 * - like nvidia.ko's os_gpuext_tsg_init/destroy: writing the parameter `tsg`
 *   takes the table, runs task_init and task_destroy and puts it back;
 *   reading `tsg` gives 1 if the last call reached gpuext, 0 if not.
 *
 * Its device also owns one queue, GXC_QUEUE, behind the queue_attr op:
 * GX_IOC_QUEUE_ATTR on it reaches this backend (gx_vmtest --consumer), and
 * `qapplied` counts the attribute changes it applied. */
#include <linux/module.h>
#include <linux/moduleparam.h>
#include "gpuext_backend.h"

static const struct gx_hooks *gxc_hooks; /* held while gxc_dev is registered */
static struct gx_dev gxc_dev;
static bool hooked;
module_param(hooked, bool, 0444);
MODULE_PARM_DESC(hooked, "registered with gpuext.ko at load (holds a reference)");
static int tsg;
static int qapplied;
module_param(qapplied, int, 0444);
MODULE_PARM_DESC(qapplied, "queue attribute changes applied through the queue_attr op");

#define GXC_QUEUE 0x4743 /* gx_vmtest.c knows it too */
static struct gpu_queue gxc_queue = { .id = GXC_QUEUE, .timeslice_us = 1024, .interleave = GPU_IL_MEDIUM };

static int gxc_move(struct gx_dev *dev, struct gpu_region *r, bool head)
{
	return -ENOENT; /* no regions */
}

static struct gpu_region *gxc_head(struct gx_dev *dev)
{
	return NULL;
}

static int gxc_migrate(struct gx_dev *dev, struct gpu_region *r, u64 va, u64 len)
{
	return -EOPNOTSUPP;
}

/* Called under gpuext's mutex, so gxc_queue needs no lock of its own. */
static int gxc_queue_attr(struct gx_dev *dev, u64 id, int (*update)(struct gpu_queue *q, void *arg), void *arg)
{
	int ret;

	if (id != GXC_QUEUE)
		return -ENOENT;
	ret = update(&gxc_queue, arg);
	if (ret < 0)
		return ret;
	if (ret > 0)
		qapplied++;
	return 0;
}

static const struct gx_backend_ops gxc_ops = {
	.move = gxc_move,
	.head = gxc_head,
	.migrate = gxc_migrate,
	.queue_attr = gxc_queue_attr,
};

/* One channel group created and destroyed through the hooks, taken and put
 * per call. Returns 1 if gpuext.ko answered, 0 if it is not loaded. */
static int gxc_tsg_call(void)
{
	const struct gx_hooks *hooks = symbol_get(gx_hooks);
	struct gpu_queue q = { .id = 1, .tgid = current->tgid, .timeslice_us = 1024 };
	int ret = 0;

	if (!hooks)
		return 0;
	if (hooks->abi == GX_HOOKS_ABI && hooks->task_init(NULL, &q) == 0)
		hooks->task_destroy(NULL, &q);
	else
		ret = -EPERM;
	symbol_put(gx_hooks);
	return ret ?: 1;
}

static int gxc_tsg_set(const char *val, const struct kernel_param *kp)
{
	int ret = gxc_tsg_call();

	if (ret < 0)
		return ret;
	tsg = ret;
	return 0;
}

static const struct kernel_param_ops gxc_tsg_ops = {
	.set = gxc_tsg_set,
	.get = param_get_int,
};
module_param_cb(tsg, &gxc_tsg_ops, &tsg, 0644);
MODULE_PARM_DESC(tsg, "write: run task_init/task_destroy through gx_hooks; read: 1 if gpuext answered");

static int __init gxc_init(void)
{
	const struct gx_hooks *hooks = symbol_get(gx_hooks);

	if (!hooks) {
		pr_info("gx_consumer: gpuext.ko not loaded, running without hooks\n");
		return 0;
	}
	gxc_dev.ops = &gxc_ops;
	gxc_dev.name = "gx_consumer";
	if (hooks->abi != GX_HOOKS_ABI || hooks->dev_register(&gxc_dev)) {
		symbol_put(gx_hooks);
		pr_warn("gx_consumer: gpuext.ko refused the device, running without hooks\n");
		return 0;
	}
	gxc_hooks = hooks;
	hooked = true;
	return 0;
}

static void __exit gxc_exit(void)
{
	if (!gxc_hooks)
		return;
	gxc_hooks->dev_unregister(&gxc_dev);
	gxc_hooks = NULL;
	symbol_put(gx_hooks);
}

module_init(gxc_init);
module_exit(gxc_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("gpuext test: a user of gx_hooks standing in for nvidia-uvm/nvidia");
