/* fake_gpuext.c — TEST-ONLY stand-in for gpuext.ko's ioctl channel, for
 * machines without the module (LD_PRELOAD; GPUEXT_DEV points at any file).
 * ioctl() calls whose type is GX_IOC_MAGIC get the module's answers for
 * VERSION (ABI 1, backend "fake"; FAKE_GPUEXT_ABI overrides the version),
 * REGISTER_AS (space 7) and PREFETCH (one stderr line per hint:
 * "fake-gpuext: PREFETCH space=S prio=P n=N va=... len=..."); others go to
 * the real ioctl. */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "gpuext/gpuext_uapi.h"

__attribute__((visibility("default"))) int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	va_start(ap, req);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	if (_IOC_TYPE(req) != GX_IOC_MAGIC) {
		int (*real)(int, unsigned long, ...) = (int (*)(int, unsigned long, ...))dlsym(RTLD_NEXT, "ioctl");
		return real ? real(fd, req, arg) : (errno = ENOSYS, -1);
	}
	__u32 *head = arg;
	if (!head || head[1] != GX_ABI_VERSION) {
		errno = head ? EPROTO : EFAULT;
		return -1;
	}
	if (req == GX_IOC_VERSION && head[0] >= sizeof(struct gx_version)) {
		struct gx_version *v = arg;
		const char *abi = getenv("FAKE_GPUEXT_ABI");
		v->abi_version = abi ? (unsigned)atoi(abi) : GX_ABI_VERSION;
		snprintf(v->backend, sizeof(v->backend), "fake");
		return 0;
	}
	if (req == GX_IOC_REGISTER_AS && head[0] >= sizeof(struct gx_register_as)) {
		((struct gx_register_as *)arg)->space_id = 7;
		return 0;
	}
	if (req == GX_IOC_PREFETCH && head[0] >= sizeof(struct gx_prefetch)) {
		struct gx_prefetch *p = arg;
		const struct gx_range *r = (const struct gx_range *)(uintptr_t)p->ranges;
		if (!p->nr_ranges || p->nr_ranges > GX_MAX_RANGES || !r) {
			errno = EINVAL;
			return -1;
		}
		p->pages = 0;
		fprintf(stderr, "fake-gpuext: PREFETCH space=%u prio=%u n=%u", p->space_id, p->priority, p->nr_ranges);
		for (unsigned i = 0; i < p->nr_ranges; i++) {
			fprintf(stderr, " va=%#llx len=%llu", (unsigned long long)r[i].va, (unsigned long long)r[i].len);
			p->pages += (r[i].len + 4095) / 4096;
		}
		fprintf(stderr, "\n");
		return 0;
	}
	errno = ENOTTY;
	return -1;
}
