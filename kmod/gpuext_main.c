// SPDX-License-Identifier: GPL-2.0
/* gpuext_main.c — module entry: struct_ops + kfuncs, the simulated
 * backend (it registers itself when sim=1), then /dev/gpuext. */
#include <linux/module.h>
#include "gpuext_internal.h"

static int __init gx_init(void)
{
	int ret;

	ret = gx_core_init();
	if (ret) {
		pr_err("gpuext: struct_ops/kfunc registration failed: %d\n", ret);
		return ret;
	}
	ret = gx_sim_init();
	if (ret)
		return ret;
	ret = gx_chardev_init();
	if (ret) {
		gx_sim_exit();
		return ret;
	}
	mutex_lock(&gx_lock);
	pr_info("gpuext: loaded (abi %d, backend %s)\n", GX_ABI_VERSION, gx_backend_name());
	mutex_unlock(&gx_lock);
	return 0;
}

static void __exit gx_exit(void)
{
	gx_chardev_exit();
	gx_sim_exit();
	gx_core_exit();
	pr_info("gpuext: unloaded\n");
}

module_init(gx_init);
module_exit(gx_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("gpuext: eBPF struct_ops GPU memory and scheduling policies");
