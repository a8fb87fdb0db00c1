/* gx_trust.c — the trust rule for files in shared places (gx_trust.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/gx_trust.h"
#include "common/gx_util.h"

static int refuse(char *why, size_t n, const char *fmt, unsigned a)
{
	if (why && n)
		snprintf(why, n, fmt, a);
	return gx_err(-EPERM);
}

/* st against rule; `what` says which kind of file is expected. */
static int check(const struct stat *st, bool dir, unsigned rule, char *why, size_t n)
{
	uid_t me = geteuid();
	if (S_ISLNK(st->st_mode))
		return refuse(why, n, "a symbolic link", 0);
	if (dir ? !S_ISDIR(st->st_mode) : !S_ISREG(st->st_mode))
		return refuse(why, n, dir ? "not a folder" : "not a regular file", 0);
	if (st->st_uid != me && (st->st_uid != 0 || (rule & GX_TRUST_OWN)))
		return refuse(why, n, "owned by uid %u", (unsigned)st->st_uid);
	unsigned mode = (unsigned)st->st_mode & 07777;
	if (mode & S_IWOTH)
		return refuse(why, n, "writable by others (mode %04o)", mode);
	if (mode & S_IWGRP)
		return refuse(why, n, "writable by its group (mode %04o)", mode);
	if ((rule & GX_TRUST_PRIVATE) && (mode & 077))
		return refuse(why, n, "open to group or others (mode %04o)", mode);
	return 0;
}

int gx_fd_trusted(int fd, unsigned rule, char *why, size_t n)
{
	struct stat st;
	if (fstat(fd, &st)) {
		int e = -errno;
		snprintf(why, n, "%s", strerror(-e));
		return gx_err(e);
	}
	return check(&st, false, rule, why, n);
}

int gx_dir_trusted(const char *dir, unsigned rule, char *why, size_t n)
{
	struct stat st;
	if (lstat(dir, &st)) {
		int e = -errno;
		snprintf(why, n, "%s", strerror(-e));
		return gx_err(e);
	}
	return check(&st, true, rule, why, n);
}

int gx_open_trusted(const char *path, int oflags, unsigned rule, char *why, size_t n)
{
	/* O_NONBLOCK: a FIFO planted under the name must not hang the open
	 * (the check below refuses it); cleared again for the caller. */
	int fd = open(path, oflags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		int e = -errno;
		struct stat st;
		if (e == -ELOOP && !lstat(path, &st) && S_ISLNK(st.st_mode))
			return refuse(why, n, "a symbolic link", 0);
		snprintf(why, n, "%s", strerror(-e));
		return gx_err(e);
	}
	int ret = gx_fd_trusted(fd, rule, why, n);
	if (!ret && !(oflags & O_NONBLOCK) && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK))
		ret = -errno;
	if (ret) {
		close(fd);
		return gx_err(ret);
	}
	return fd;
}

int gx_read_trusted(const char *path, unsigned rule, char **buf, size_t *len, size_t max_len, char *why,
		    size_t n)
{
	int fd = gx_open_trusted(path, O_RDONLY, rule, why, n);
	if (fd < 0)
		return fd;
	int ret = gx_read_fd(fd, buf, len, max_len);
	close(fd);
	if (ret)
		snprintf(why, n, "%s", strerror(-ret));
	return gx_err(ret);
}
