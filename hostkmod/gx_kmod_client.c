/* gx_kmod_client.c — user-space client of /dev/gpuext (see the header).
 * Speaks ABI version 1 of include/gpuext/gpuext_uapi.h: every call sends the struct
 * size first, so a newer module accepts it and an older one rejects what it
 * does not know (E2BIG) instead of misreading it. */
#include "hostkmod/gx_kmod_client.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "common/gx_util.h"
#include "gpuext/gpuext_uapi.h"

struct gx_kmod {
	int fd;
	uint32_t space_id;
	char backend[16];
};

#define GX_PREP(s)                      \
	do {                            \
		memset(&(s), 0, sizeof(s)); \
		(s).size = sizeof(s);   \
		(s).version = GX_ABI_VERSION; \
	} while (0)

static int xioctl(int fd, unsigned long cmd, void *arg)
{
	int ret;

	do
		ret = ioctl(fd, cmd, arg);
	while (ret < 0 && errno == EINTR);
	return ret < 0 ? -errno : ret;
}

int gx_kmod_open(struct gx_kmod **out)
{
	const char *path = getenv("GPUEXT_DEV");
	struct gx_version v;
	struct gx_kmod *k;
	int ret;

	*out = NULL;
	k = calloc(1, sizeof(*k));
	if (!k)
		return gx_err(-ENOMEM);
	k->fd = open(path && *path ? path : "/dev/" GX_DEV_NAME, O_RDWR | O_CLOEXEC);
	if (k->fd < 0) {
		ret = -errno;
		free(k);
		return gx_err(ret);
	}
	GX_PREP(v);
	ret = xioctl(k->fd, GX_IOC_VERSION, &v);
	if (ret == 0 && v.abi_version != GX_ABI_VERSION)
		ret = -EPROTO;
	if (ret) {
		close(k->fd);
		free(k);
		return gx_err(ret == -ENOTTY ? -EPROTO : ret);
	}
	memcpy(k->backend, v.backend, sizeof(k->backend));
	k->backend[sizeof(k->backend) - 1] = 0;
	*out = k;
	return 0;
}

void gx_kmod__close(struct gx_kmod *k)
{
	if (!k)
		return;
	close(k->fd);
	free(k);
}

int gx_kmod__register(struct gx_kmod *k)
{
	struct gx_register_as ra;
	int ret;

	if (!k)
		return gx_err(-EINVAL);
	if (k->space_id)
		return gx_err(-EEXIST);
	GX_PREP(ra);
	ret = xioctl(k->fd, GX_IOC_REGISTER_AS, &ra);
	if (ret)
		return gx_err(ret);
	k->space_id = ra.space_id;
	return 0;
}

uint32_t gx_kmod__space_id(const struct gx_kmod *k)
{
	return k ? k->space_id : 0;
}

const char *gx_kmod__backend(const struct gx_kmod *k)
{
	return k ? k->backend : "";
}

int gx_kmod__prefetch(struct gx_kmod *k, const struct gx_kmod_range *r, size_t n,
		      unsigned int prio, uint64_t *pages)
{
	struct gx_range buf[GX_MAX_RANGES];
	struct gx_prefetch pf;
	size_t i;
	int ret;

	if (!k || !r || !n)
		return gx_err(-EINVAL);
	if (n > GX_MAX_RANGES)
		return gx_err(-E2BIG);
	if (!k->space_id)
		return gx_err(-ENOENT);
	for (i = 0; i < n; i++) {
		buf[i].va = r[i].va;
		buf[i].len = r[i].len;
	}
	GX_PREP(pf);
	pf.space_id = k->space_id;
	pf.priority = prio;
	pf.nr_ranges = n;
	pf.ranges = (uint64_t)(uintptr_t)buf;
	ret = xioctl(k->fd, GX_IOC_PREFETCH, &pf);
	if (ret)
		return gx_err(ret);
	if (pages)
		*pages = pf.pages;
	return 0;
}

int gx_kmod__stats(struct gx_kmod *k, struct gx_kmod_stats *st)
{
	struct gx_stats s;
	int ret;

	if (!k || !st)
		return gx_err(-EINVAL);
	GX_PREP(s);
	ret = xioctl(k->fd, GX_IOC_STATS, &s);
	if (ret)
		return gx_err(ret);
	st->hints = s.hints;
	st->hint_pages = s.hint_pages;
	st->faults = s.faults;
	st->evictions = s.evictions;
	st->policy_calls = s.policy_calls;
	st->policy_errors = s.policy_errors;
	st->mem_policies = s.mem_policies;
	st->sched_policies = s.sched_policies;
	return 0;
}
