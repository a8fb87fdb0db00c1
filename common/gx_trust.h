/* gx_trust — the one rule for files gpuext finds in shared places
 * (docs/trust.md lists them): a cache entry, a JIT library, a tool object,
 * a table in /dev/shm. Such a file is trusted only when nobody but this user
 * (or root) could have written it:
 *   - the file: opened with O_NOFOLLOW (a symbolic link is refused), a
 *     regular file, owned by the effective uid or by root, not writable by
 *     its group or by others;
 *   - its folder: lstat'ed (a symbolic link is refused), a directory, owned
 *     by the effective uid or by root, not writable by group or others.
 * A refusal fills `why` with a short reason that names no path ("owned by
 * uid 65534", "writable by others (mode 0666)", "a symbolic link"); the
 * caller logs one line with the path and falls back. */
#ifndef GX_TRUST_H
#define GX_TRUST_H

#include <stddef.h>

enum gx_trust_rule {
	GX_TRUST_ANY_OWNER = 0,	 /* owner = euid or root */
	GX_TRUST_OWN = 1 << 0,	 /* owner = euid only (a folder we write into) */
	GX_TRUST_PRIVATE = 1 << 1, /* no permission bit at all for group or others */
};

/* Open path (oflags | O_NOFOLLOW | O_CLOEXEC) and check the open file
 * (fstat) against rule. Returns the fd, or -EPERM with `why` when the file
 * breaks the rule (a symbolic link included), or another -errno when it
 * cannot be opened (`why` then holds strerror; -ENOENT: no such file). */
int gx_open_trusted(const char *path, int oflags, unsigned rule, char *why, size_t n);
/* The same check on an open file. 0 or -EPERM (why filled). */
int gx_fd_trusted(int fd, unsigned rule, char *why, size_t n);
/* Check a folder (lstat) against rule. 0, -EPERM (why filled) or -errno
 * from lstat (-ENOENT: no such folder). */
int gx_dir_trusted(const char *dir, unsigned rule, char *why, size_t n);
/* gx_open_trusted + read the whole file (gx_read_file's conventions). */
int gx_read_trusted(const char *path, unsigned rule, char **buf, size_t *len, size_t max_len, char *why,
		    size_t n);

#endif
