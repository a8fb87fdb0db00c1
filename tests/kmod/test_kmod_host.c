/* test_kmod_host.c — host-side checks of the kmod/hostbpf ABI that need no
 * VM: struct layouts that user space, BPF and the kernel must agree on, and
 * the client library's behaviour without /dev/gpuext. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "gpuext/gpu_ext.h"
#include "hostkmod/gx_kmod_client.h"
#include "gpuext/gpuext_uapi.h"
#include "tests/gx_test.h"

int main(void)
{
	struct gx_kmod *k = (void *)1;
	struct gx_kmod_range r = { 0x1000, 0x1000 };

	/* size first, version second, in every ioctl struct */
	GX_CHECK(offsetof(struct gx_prefetch, size) == 0 && offsetof(struct gx_prefetch, version) == 4 &&
			 offsetof(struct gx_test_queue, version) == 4,
		 "abi: size and version lead every struct");
	GX_CHECK(sizeof(struct gx_prefetch) == 40 && sizeof(struct gx_range) == 16 &&
			 sizeof(struct gx_stats) == 136 && sizeof(struct gx_fault_result) == 152 &&
			 sizeof(struct gx_queue_attr) == 40,
		 "abi: v1 struct sizes unchanged (prefetch %zu stats %zu result %zu)",
		 sizeof(struct gx_prefetch), sizeof(struct gx_stats), sizeof(struct gx_fault_result));
	GX_CHECK(sizeof(struct gpu_region) == 120 && offsetof(struct gpu_region, resident_mask) == 56,
		 "gpu_ext: gpu_region layout (%zu)", sizeof(struct gpu_region));
	GX_CHECK(offsetof(struct gpu_mem_ops, scope) == 32 && offsetof(struct gpu_sched_ops, scope) == 24 &&
			 sizeof(struct gpu_mem_ops) == 64,
		 "gpu_ext: struct_ops data members after the handlers");
	GX_CHECK(GPU_REGION_PAGES == 512 && GPU_REGION_SIZE == 2u << 20, "gpu_ext: 2 MiB regions of 4 KiB pages");
	setenv("GPUEXT_DEV", "/nonexistent/gpuext", 1);
	GX_CHECK(gx_kmod_open(&k) == -ENOENT && k == NULL && errno == ENOENT,
		 "client: no device -> -ENOENT (shim falls back to user space)");
	setenv("GPUEXT_DEV", "/dev/null", 1);
	GX_CHECK(gx_kmod_open(&k) == -EPROTO && k == NULL, "client: a device that is not gpuext -> -EPROTO");
	GX_CHECK(gx_kmod__register(NULL) == -EINVAL && gx_kmod__prefetch(NULL, &r, 1, 0, NULL) == -EINVAL,
		 "client: NULL handle refused");
	gx_kmod__close(NULL);
	return gx_test_done();
}
