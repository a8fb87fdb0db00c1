/* gx_kmod_ioc.h — small helpers the in-VM test programs share: open
 * /dev/gpuext, prepare {size, version} headers, call ioctls returning
 * -errno. Test code only. */
#ifndef GX_KMOD_IOC_H
#define GX_KMOD_IOC_H

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "gpuext/gpuext_uapi.h"

#define GX_PREP(s)                            \
	do {                                  \
		memset(&(s), 0, sizeof(s));   \
		(s).size = sizeof(s);         \
		(s).version = GX_ABI_VERSION; \
	} while (0)

static inline int gx_ioc(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) < 0 ? -errno : 0;
}

static inline int gx_dev_open(void)
{
	return open("/dev/" GX_DEV_NAME, O_RDWR | O_CLOEXEC);
}

#endif
