/* gx_kmod_client.h — the shim's side of the /dev/gpuext channel.
 *
 * When gpuext.ko is loaded, the shim registers its process's address space
 * once and sends prefetch hints (ranges + priority) to the module, where
 * the attached struct_ops policies and the GPU backend act on them. Without
 * the module, gx_kmod_open() fails with -ENOENT and the shim runs the host
 * policies in user space instead. All functions return 0 or a negative
 * errno (errno set too); the handle is not thread-safe (one per process,
 * guarded by the caller). GPUEXT_DEV overrides the device path (tests). */
#ifndef GX_KMOD_CLIENT_H
#define GX_KMOD_CLIENT_H

#include <stddef.h>
#include <stdint.h>

struct gx_kmod;

struct gx_kmod_range {
	uint64_t va;
	uint64_t len;
};

struct gx_kmod_stats {
	uint64_t hints, hint_pages, faults, evictions, policy_calls, policy_errors;
	uint32_t mem_policies, sched_policies;
};

/* Open the device and check the ABI version (-EPROTO on mismatch). */
int gx_kmod_open(struct gx_kmod **out);
void gx_kmod__close(struct gx_kmod *k);
/* Register the calling process's address space (once per handle). */
int gx_kmod__register(struct gx_kmod *k);
/* Space id given by the module, 0 before registration. */
uint32_t gx_kmod__space_id(const struct gx_kmod *k);
/* The module's first registered backend ("sim", "nvidia-uvm"), "none"
 * without one. */
const char *gx_kmod__backend(const struct gx_kmod *k);
/* Hint that ranges of our own memory will be used soon. n <= 256;
 * prio 0..7. On success *pages (may be NULL) gets the pages queued. */
int gx_kmod__prefetch(struct gx_kmod *k, const struct gx_kmod_range *r, size_t n,
		      unsigned int prio, uint64_t *pages);
int gx_kmod__stats(struct gx_kmod *k, struct gx_kmod_stats *st);

#endif
