/* Small utilities shared by all parts. Functions return 0 or a negative
 * errno (and set errno), per the libbpf convention. */
#ifndef GX_UTIL_H
#define GX_UTIL_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define GX_VERSION "0.1.0" /* gpuext's version: CLI, cache keys */
#define GX_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define GX_EXPORT __attribute__((visibility("default")))

/* qsort comparators of unsigned integers (ascending). */
static inline int gx_cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}
static inline int gx_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The one return helper for int-returning public functions: sets errno from a
 * negative result and passes it through. */
static inline int gx_err(int ret)
{
	if (ret < 0)
		errno = -ret;
	return ret;
}

/* Copy a caller's options struct (size first) into a zeroed local one: a
 * smaller caller struct leaves our new fields zero; a larger one is accepted
 * only if its unknown tail is zero. Returns 0 or -EINVAL. */
static inline int gx_opts_copy(void *dst, size_t dst_sz, const void *src, size_t src_sz)
{
	if (!src)
		return 0;
	if (src_sz < sizeof(size_t))
		return -EINVAL;
	for (size_t i = dst_sz; i < src_sz; i++)
		if (((const unsigned char *)src)[i])
			return -EINVAL;
	memcpy(dst, src, src_sz < dst_sz ? src_sz : dst_sz);
	return 0;
}

/* The cache folder: $GPUEXT_CACHE_DIR, else $XDG_CACHE_HOME/gpuext, else
 * ~/.cache/gpuext (not created). Shared by the rewritten-module cache
 * (shim/) and the policy JIT cache (attach/). 0, -ENOENT (no HOME either)
 * or -ENAMETOOLONG. */
int gx_cache_dir(char *buf, size_t n);

/* Read a whole file into a malloc'd buffer (NUL-terminated, len excludes the
 * NUL). Returns 0 or -errno. max_len bounds the size (0: 1 GiB). */
int gx_read_file(const char *path, char **buf, size_t *len, size_t max_len);
/* The same from an open file descriptor (left open). */
int gx_read_fd(int fd, char **buf, size_t *len, size_t max_len);
/* Write a buffer to a file atomically (temp file + rename); an existing
 * device or FIFO (/dev/null, a pipe) is written in place instead. */
int gx_write_file(const char *path, const void *buf, size_t len);
/* The same with the new file's mode (gx_write_file: 0600). */
int gx_write_file_mode(const char *path, const void *buf, size_t len, unsigned mode);
/* mkdir -p: 0 or -errno. The folders it creates get `mode` exactly, not
 * narrowed by the umask (a shared cache must be readable by all); those
 * that exist keep theirs. */
int gx_mkdir_p(const char *dir, unsigned mode);
/* Write `path` (in folder `dir`) as the concatenation of n parts, mode 0600:
 * under a unique temporary name in `dir` (other threads and processes may
 * write the same path), then rename(2) onto it, so readers see a whole file
 * or none. 0 or -errno. */
int gx_write_parts(const char *dir, const char *path, const void *const *parts, const size_t *lens, int n);
/* s as a JSON string literal on f (NULL: ""). */
void gx_json_str(FILE *f, const char *s);

/* Growable byte buffer, used by emitters. On allocation failure the buffer
 * records it in `failed` and further appends are no-ops. */
struct gx_buf {
	char *data;
	size_t len, cap;
	int failed;
};
void gx_buf_init(struct gx_buf *b);
void gx_buf_free(struct gx_buf *b);
void gx_buf_append(struct gx_buf *b, const void *p, size_t n);
void gx_buf_puts(struct gx_buf *b, const char *s);
void gx_buf_printf(struct gx_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Hand the NUL-terminated contents to the caller; the buffer is reset. */
char *gx_buf_steal(struct gx_buf *b, size_t *len);

/* Start time of process pid (/proc/PID/stat field 22), 0 if it is gone. */
uint64_t gx_proc_start_time(uint32_t pid);

#endif
