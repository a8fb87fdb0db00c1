#include "common/gx_util.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int gx_read_file(const char *path, char **bufp, size_t *lenp, size_t max_len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return gx_err(-errno);
	int ret = gx_read_fd(fd, bufp, lenp, max_len);
	close(fd);
	return ret;
}

int gx_read_fd(int fd, char **bufp, size_t *lenp, size_t max_len)
{
	if (!max_len)
		max_len = (size_t)1 << 30;
	struct stat st;
	if (fstat(fd, &st) < 0)
		return gx_err(-errno);
	size_t cap = S_ISREG(st.st_mode) && st.st_size > 0 ? (size_t)st.st_size + 1 : 4096;
	if (cap > max_len + 1)
		cap = max_len + 1;
	char *buf = malloc(cap);
	size_t len = 0;
	int err = 0;
	while (buf) {
		if (len + 1 >= cap) {
			if (cap > max_len) {
				err = -EFBIG;
				break;
			}
			size_t ncap = cap * 2 > max_len + 1 ? max_len + 1 : cap * 2;
			char *nb = realloc(buf, ncap);
			if (!nb)
				break;
			buf = nb, cap = ncap;
		}
		ssize_t n = read(fd, buf + len, cap - 1 - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (!buf)
		return gx_err(-ENOMEM);
	if (err) {
		free(buf);
		return gx_err(err);
	}
	buf[len] = 0;
	*bufp = buf;
	*lenp = len;
	return 0;
}

/* All of buf to fd, through short writes and EINTR: 0 or -errno. */
static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n, len -= (size_t)n;
	}
	return 0;
}

/* JSON string literal of s (quotes, backslashes and control characters
 * escaped); NULL prints "". */
void gx_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* Write to an existing non-regular file (a device such as /dev/null, a
 * FIFO) in place: renaming a temp file over it would replace the device. */
static int write_in_place(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int err = write_all(fd, buf, len);
	if (close(fd) < 0 && !err)
		err = -errno;
	return err;
}

int gx_write_file(const char *path, const void *buf, size_t len)
{
	return gx_write_file_mode(path, buf, len, 0600);
}

int gx_write_parts(const char *dir, const char *path, const void *const *parts, const size_t *lens, int n)
{
	char tmp[4400];
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s/.tmp.XXXXXX", dir) >= sizeof(tmp))
		return -ENAMETOOLONG;
	int fd = mkstemp(tmp); /* mode 0600 */
	if (fd < 0)
		return -errno;
	int ret = 0;
	for (int i = 0; i < n && !ret; i++)
		for (size_t w = 0; w < lens[i] && !ret;) {
			ssize_t r = write(fd, (const char *)parts[i] + w, lens[i] - w);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				ret = r < 0 ? -errno : -EIO;
			else
				w += (size_t)r;
		}
	if (close(fd) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret)
		unlink(tmp);
	return ret;
}

int gx_mkdir_p(const char *dir, unsigned mode)
{
	char tmp[4096];
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s", dir) >= sizeof(tmp))
		return -ENAMETOOLONG;
	for (char *s = tmp + 1;; s++) {
		if (*s && *s != '/')
			continue;
		char c = *s;
		*s = 0;
		if (!mkdir(tmp, mode)) {
			if (chmod(tmp, mode))
				return -errno;
		} else if (errno != EEXIST) {
			return -errno;
		}
		*s = c;
		if (!c)
			return 0;
	}
}

int gx_write_file_mode(const char *path, const void *buf, size_t len, unsigned mode)
{
	struct stat st;
	if (!stat(path, &st) && !S_ISREG(st.st_mode))
		return gx_err(write_in_place(path, buf, len));
	size_t plen = strlen(path);
	char *tmp = malloc(plen + 32);
	if (!tmp)
		return gx_err(-ENOMEM);
	snprintf(tmp, plen + 32, "%s.tmp.%d", path, (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int err = 0;
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	if (mode != 0600 && fchmod(fd, mode) < 0) /* exactly mode, whatever the umask */
		err = -errno;
	if (!err)
		err = write_all(fd, buf, len);
	if (close(fd) < 0 && !err)
		err = -errno;
	if (!err && rename(tmp, path) < 0)
		err = -errno;
	if (err)
		unlink(tmp);
out:
	free(tmp);
	return gx_err(err);
}

void gx_buf_init(struct gx_buf *b)
{
	memset(b, 0, sizeof(*b));
}

void gx_buf_free(struct gx_buf *b)
{
	free(b->data);
	gx_buf_init(b);
}

static int buf_reserve(struct gx_buf *b, size_t extra)
{
	if (b->failed)
		return -1;
	if (b->len + extra + 1 <= b->cap)
		return 0;
	size_t ncap = b->cap ? b->cap : 256;
	while (ncap < b->len + extra + 1)
		ncap *= 2;
	char *nd = realloc(b->data, ncap);
	if (!nd) {
		b->failed = 1;
		return -1;
	}
	b->data = nd, b->cap = ncap;
	return 0;
}

void gx_buf_append(struct gx_buf *b, const void *p, size_t n)
{
	if (buf_reserve(b, n))
		return;
	memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = 0;
}

void gx_buf_puts(struct gx_buf *b, const char *s)
{
	gx_buf_append(b, s, strlen(s));
}

void gx_buf_printf(struct gx_buf *b, const char *fmt, ...)
{
	if (b->failed)
		return;
	/* Format straight into the free space; only a result that does not fit
	 * is formatted a second time (emitters print many short lines). */
	size_t room = b->cap > b->len ? b->cap - b->len : 0;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(room ? b->data + b->len : NULL, room, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < room) {
		b->len += (size_t)n;
		return;
	}
	if (buf_reserve(b, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

char *gx_buf_steal(struct gx_buf *b, size_t *len)
{
	if (b->failed) {
		gx_buf_free(b);
		return NULL;
	}
	if (!b->data) {
		if (buf_reserve(b, 0))
			return NULL;
		b->data[0] = 0; /* an empty buffer is still a string */
	}
	char *d = b->data;
	if (len)
		*len = b->len;
	gx_buf_init(b);
	return d;
}

GX_EXPORT int gx_cache_dir(char *buf, size_t n)
{
	const char *d = getenv("GPUEXT_CACHE_DIR");
	int w;
	if (d && *d)
		w = snprintf(buf, n, "%s", d);
	else if ((d = getenv("XDG_CACHE_HOME")) && *d)
		w = snprintf(buf, n, "%s/gpuext", d);
	else if ((d = getenv("HOME")) && *d)
		w = snprintf(buf, n, "%s/.cache/gpuext", d);
	else
		return gx_err(-ENOENT);
	return w < 0 || (size_t)w >= n ? gx_err(-ENAMETOOLONG) : 0;
}

/* Field 22 of /proc/PID/stat (the start time, in clock ticks since boot),
 * read after the parenthesised comm, which may hold spaces and ')'; 0 if the
 * process is gone. With the pid it names a process for good: pids are
 * reused, start times are not. */
GX_EXPORT uint64_t gx_proc_start_time(uint32_t pid)
{
	char p[64], buf[1024];
	snprintf(p, sizeof(p), "/proc/%u/stat", pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	char *s = strrchr(buf, ')');
	if (!s)
		return 0;
	s++; /* the space before field 3 */
	for (int field = 3; field < 22 && s; field++)
		s = strchr(s + 1, ' ');
	return s ? strtoull(s + 1, NULL, 10) : 0;
}
