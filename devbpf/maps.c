/* maps.c — host maps: creation in shared memory, opening from another
 * process, and the host-side operations (same algorithms as the device
 * helpers, through mapimpl_internal.h). See gx_map.h for the model. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "devbpf/hosthelpers_internal.h"
#include "devbpf/gx_bpf.h"
#include "common/gx_log.h"
#include "common/gx_trust.h"
#include "common/gx_util.h"

#define gx_shard_index(m, type)                                                          \
	((type) == GX_MAP_PERWARP_ARRAY                                                  \
		 ? (gx_host_env.smid * GX_WARP_SLOTS_PER_SM + gx_host_env.warpid) % (m)->nr_shards \
		 : gx_host_env.smid % (m)->nr_shards)
#include "devbpf/helpers/mapimpl_internal.h"

GX_EXPORT const char *gx_map_type_name(unsigned type)
{
	switch (type) {
	case GX_MAP_HASH:
		return "hash";
	case GX_MAP_ARRAY:
		return "array";
	case GX_MAP_PERSM_ARRAY:
		return "persm_array";
	case GX_MAP_PERWARP_ARRAY:
		return "perwarp_array";
	case GX_MAP_RINGBUF:
		return "ringbuf";
	default:
		return "unknown";
	}
}

static int pow2(uint64_t x)
{
	return x && !(x & (x - 1));
}

GX_EXPORT int gx_map_layout(const struct gx_map_spec *s, struct gx_devrt_map *l)
{
	memset(l, 0, sizeof(*l));
	if (!s || !s->max_entries)
		return gx_err(-EINVAL);
	l->type = s->type;
	l->key_size = s->key_size;
	l->value_size = s->value_size;
	l->max_entries = s->max_entries;
	l->value_stride = GX_ROUND8(s->value_size);
	l->nr_shards = 1;
	uint64_t size;
	switch (s->type) {
	case GX_MAP_ARRAY:
	case GX_MAP_PERSM_ARRAY:
	case GX_MAP_PERWARP_ARRAY:
		if (s->key_size != 4 || !s->value_size || s->value_size > (1u << 20))
			return gx_err(-EINVAL);
		if (s->type != GX_MAP_ARRAY)
			l->nr_shards = s->nr_shards ? s->nr_shards : 1;
		size = (uint64_t)l->nr_shards * s->max_entries * l->value_stride;
		break;
	case GX_MAP_HASH: {
		if (!s->key_size || s->key_size > 512 || !s->value_size ||
		    s->value_size > (1u << 20) || s->max_entries > (1u << 28))
			return gx_err(-EINVAL);
		uint32_t b = 2;
		while (b < 2ull * s->max_entries)
			b <<= 1;
		l->nr_buckets = b;
		l->bucket_size = 8 + GX_ROUND8(s->key_size) + l->value_stride;
		size = (uint64_t)b * l->bucket_size;
		break;
	}
	case GX_MAP_RINGBUF:
		if (!pow2(s->max_entries) || s->max_entries < 64 || s->key_size || s->value_size)
			return gx_err(-EINVAL);
		size = gx_ring_bytes(s->max_entries);
		break;
	default:
		return gx_err(-EINVAL);
	}
	if (size > (1ull << 36))
		return gx_err(-E2BIG);
	l->data_size = size;
	return 0;
}

/* A folder set by a live attach (gpuext attach: the run folder the CLI
 * made), ahead of GPUEXT_SHM_DIR; under its lock. */
static char shm_override[4096];
static pthread_mutex_t shm_override_lock = PTHREAD_MUTEX_INITIALIZER;

GX_EXPORT void gx_map_shm_dir_set(const char *dir)
{
	pthread_mutex_lock(&shm_override_lock);
	snprintf(shm_override, sizeof(shm_override), "%s", dir ? dir : "");
	pthread_mutex_unlock(&shm_override_lock);
}

GX_EXPORT int gx_map_shm_dir(char *buf, size_t n)
{
	pthread_mutex_lock(&shm_override_lock);
	int olen = shm_override[0] ? snprintf(buf, n, "%s", shm_override) : -2;
	pthread_mutex_unlock(&shm_override_lock);
	if (olen != -2)
		return olen < 0 || (size_t)olen >= n ? gx_err(-ENAMETOOLONG) : 0;
	return gx_map_shm_dir_default(buf, n);
}

GX_EXPORT int gx_map_shm_dir_default(char *buf, size_t n)
{
	const char *env = getenv("GPUEXT_SHM_DIR");
	int len = env && *env ? snprintf(buf, n, "%s", env)
			      : snprintf(buf, n, "/dev/shm/gpuext-%u", (unsigned)getuid());
	return len < 0 || (size_t)len >= n ? gx_err(-ENAMETOOLONG) : 0;
}

/* The folder must be ours, a real directory, and private. */
static int ensure_dir(const char *dir)
{
	struct stat st;
	if (mkdir(dir, 0700) && errno != EEXIST) {
		int e = -errno;
		pr_warn("maps: cannot create %s: %s\n", dir, strerror(errno));
		return e;
	}
	if (lstat(dir, &st))
		return -errno;
	/* Ours but opened up (by hand): closed again. */
	if (S_ISDIR(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & 077) && chmod(dir, 0700))
		return -errno;
	char why[96];
	int ret = gx_dir_trusted(dir, GX_TRUST_OWN | GX_TRUST_PRIVATE, why, sizeof(why));
	if (ret == -EPERM)
		pr_warn("maps: not using the folder %s: %s", dir, why);
	return ret;
}

static void sanitize(char *dst, const char *src, size_t n)
{
	size_t i = 0;
	for (; src && src[i] && i + 1 < n; i++) {
		char c = src[i];
		dst[i] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
					 c == '_' || c == '-' || c == '.' || c == '@' /* "<map>@<ctx>" */
				 ? c
				 : '_';
	}
	dst[i] = 0;
}

static void init_storage(struct gx_map *m)
{
	if (m->l.type == GX_MAP_RINGBUF)
		gx_ring__init((struct gx_ring *)(uintptr_t)m->l.data, m->l.max_entries);
}

GX_EXPORT int gx_map__create(const struct gx_map_spec *spec, unsigned flags, struct gx_map **out)
{
	struct gx_devrt_map l;
	int ret = gx_map_layout(spec, &l);
	if (ret)
		return ret;
	if ((flags & GX_MAP_F_RECORDS) && l.type != GX_MAP_ARRAY)
		return gx_err(-EINVAL); /* record tables are arrays */
	struct gx_map *m = calloc(1, sizeof(*m));
	if (!m)
		return gx_err(-ENOMEM);
	m->l = l;
	m->records = !!(flags & GX_MAP_F_RECORDS);
	sanitize(m->name, spec->name ? spec->name : "map", sizeof(m->name));
	m->map_size = GX_SHM_DATA_OFF + l.data_size;
	m->writable = 1;
	int fd = -1;
	void *base;
	if (flags & GX_MAP_F_SHM) {
		char dir[200];
		if ((ret = gx_map_shm_dir(dir, sizeof(dir))) || (ret = ensure_dir(dir)))
			goto fail;
		snprintf(m->path, sizeof(m->path), "%s/%d-%s", dir, (int)getpid(), m->name);
		unlink(m->path); /* a stale file of a previous process with our pid */
		fd = open(m->path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		/* The file's blocks are allocated now, not on first touch: with
		 * ftruncate (a sparse file), a full /dev/shm made the first store
		 * into the mapping raise SIGBUS and killed the application. */
		int e = fd < 0 || fchmod(fd, 0600) ? errno : posix_fallocate(fd, 0, (off_t)m->map_size);
		if (e) {
			ret = -e;
			pr_warn("maps: cannot create %s: %s\n", m->path, strerror(e));
			goto fail;
		}
		m->owner = 1;
		m->keep = !!(flags & GX_MAP_F_KEEP);
		base = mmap(NULL, m->map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	} else {
		base = mmap(NULL, m->map_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			    -1, 0);
	}
	if (base == MAP_FAILED) {
		ret = -errno;
		goto fail;
	}
	if (fd >= 0)
		close(fd);
	fd = -1;
	m->hdr = base;
	m->hdr->magic = GX_SHM_MAGIC;
	m->hdr->version = GX_SHM_VERSION;
	m->hdr->hdr_size = sizeof(struct gx_shm_hdr);
	m->hdr->pid = (uint32_t)getpid();
	memcpy(m->hdr->name, m->name, sizeof(m->name));
	m->hdr->layout = l;
	m->hdr->layout.data = GX_SHM_DATA_OFF;
	m->l.data = (uint64_t)(uintptr_t)((char *)base + GX_SHM_DATA_OFF);
	init_storage(m);
	*out = m;
	return 0;
fail:
	if (fd >= 0) {
		close(fd);
		unlink(m->path);
	}
	free(m);
	return gx_err(ret);
}

GX_EXPORT int gx_map__open(const char *path, int writable, struct gx_map **out)
{
	struct stat st;
	char why[96];
	/* Maps are read from shared folders (gx_trust.h): a file of another
	 * user, writable by others, or a symbolic link is refused (-EPERM). */
	int fd = gx_open_trusted(path, writable ? O_RDWR : O_RDONLY, GX_TRUST_ANY_OWNER, why, sizeof(why));
	if (fd == -EPERM) {
		pr_warn("maps: not using %s: %s", path, why);
		return gx_err(-EPERM);
	}
	if (fd < 0) {
		int e = -fd;
		struct gx_map *ro;
		/* a constant map's file is 0400: say that, not "permission denied" */
		if (writable && e == EACCES && !gx_map__open(path, 0, &ro)) {
			int c = gx_map__is_const(ro);
			gx_map__free(ro);
			if (c)
				return gx_err(-EROFS);
		}
		return gx_err(-e);
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (size_t)st.st_size < GX_SHM_DATA_OFF) {
		close(fd);
		return gx_err(-EINVAL);
	}
	void *base = mmap(NULL, (size_t)st.st_size, PROT_READ | (writable ? PROT_WRITE : 0),
			  MAP_SHARED, fd, 0);
	close(fd);
	if (base == MAP_FAILED)
		return gx_err(-errno);
	struct gx_shm_hdr *h = base;
	struct gx_devrt_map l;
	struct gx_map_spec s = { .type = h->layout.type,
				 .key_size = h->layout.key_size,
				 .value_size = h->layout.value_size,
				 .max_entries = h->layout.max_entries,
				 .nr_shards = h->layout.nr_shards };
	if (h->magic != GX_SHM_MAGIC || h->version != GX_SHM_VERSION || gx_map_layout(&s, &l) ||
	    l.nr_buckets != h->layout.nr_buckets || l.bucket_size != h->layout.bucket_size ||
	    l.data_size != h->layout.data_size ||
	    GX_SHM_DATA_OFF + l.data_size > (uint64_t)st.st_size) {
		munmap(base, (size_t)st.st_size);
		return gx_err(-EBADMSG);
	}
	if (writable && (h->flags & GX_SHM_F_CONST)) { /* root ignores the 0400 */
		munmap(base, (size_t)st.st_size);
		return gx_err(-EROFS);
	}
	struct gx_map *m = calloc(1, sizeof(*m));
	if (!m) {
		munmap(base, (size_t)st.st_size);
		return gx_err(-ENOMEM);
	}
	m->hdr = h;
	m->map_size = (size_t)st.st_size;
	m->writable = writable;
	m->l = l;
	m->l.data = (uint64_t)(uintptr_t)((char *)base + GX_SHM_DATA_OFF);
	memcpy(m->name, h->name, sizeof(m->name));
	m->name[sizeof(m->name) - 1] = 0;
	snprintf(m->path, sizeof(m->path), "%s", path);
	*out = m;
	return 0;
}

/* The copy the process reads is private and read-only, so the programs
 * keep the bytes the verifier folded whatever happens to the file; it is
 * made from the caller's bytes, not the file's, so not even a write racing
 * with the seal gets in. The file keeps the bytes too, for `gpuext map
 * dump`, and tells writers it is constant. */
GX_EXPORT int gx_map__seal(struct gx_map *m, const void *bytes, size_t len)
{
	if (!m || m->l.type != GX_MAP_ARRAY || len > m->l.data_size || (len && !bytes))
		return gx_err(-EINVAL);
	if (m->sealed)
		return 0;
	if (!m->writable)
		return gx_err(-EPERM);
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), size = (size_t)m->l.data_size;
	size_t rlen = (size + pg - 1) / pg * pg;
	void *ro = mmap(NULL, rlen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ro == MAP_FAILED)
		return gx_err(-errno);
	void *shared = (void *)(uintptr_t)m->l.data;
	if (len)
		memcpy(shared, bytes, len);
	memcpy(ro, shared, size);
	if (len)
		memcpy(ro, bytes, len);
	if (mprotect(ro, rlen, PROT_READ) || (m->path[0] && m->owner && chmod(m->path, 0400))) {
		int e = -errno;
		munmap(ro, rlen);
		return gx_err(e);
	}
	m->hdr->flags |= GX_SHM_F_CONST;
	m->l.data = (uint64_t)(uintptr_t)ro;
	m->sealed = ro;
	m->sealed_len = rlen;
	m->writable = 0;
	return 0;
}

GX_EXPORT int gx_map__is_const(const struct gx_map *m)
{
	return m && (m->sealed || (m->hdr->flags & GX_SHM_F_CONST));
}

GX_EXPORT void gx_map__free(struct gx_map *m)
{
	if (!m)
		return;
	if (m->sealed)
		munmap(m->sealed, m->sealed_len);
	if (m->hdr)
		munmap(m->hdr, m->map_size);
	if (m->owner && !m->keep && m->path[0])
		unlink(m->path);
	free(m);
}

GX_EXPORT void *gx_map__lookup(struct gx_map *m, const void *key)
{
	if (!m || !key) {
		errno = EINVAL;
		return NULL;
	}
	void *v = gx_map_lookup(&m->l, key);
	if (!v)
		errno = ENOENT;
	return v;
}

GX_EXPORT int gx_map__update(struct gx_map *m, const void *key, const void *value, uint64_t flags)
{
	if (!m || !key || !value)
		return gx_err(-EINVAL);
	if (!m->writable)
		return gx_err(-EPERM);
	return gx_err((int)gx_map_update(&m->l, key, value, flags));
}

GX_EXPORT int gx_map__delete(struct gx_map *m, const void *key)
{
	if (!m || !key)
		return gx_err(-EINVAL);
	if (!m->writable)
		return gx_err(-EPERM);
	return gx_err((int)gx_map_delete(&m->l, key));
}

GX_EXPORT int gx_map__next_key(struct gx_map *m, const void *prev, void *next)
{
	if (!m || !next)
		return gx_err(-EINVAL);
	switch (m->l.type) {
	case GX_MAP_ARRAY:
	case GX_MAP_PERSM_ARRAY:
	case GX_MAP_PERWARP_ARRAY: {
		uint32_t i = prev ? *(const uint32_t *)prev + 1 : 0;
		if (i >= m->l.max_entries)
			return gx_err(-ENOENT);
		*(uint32_t *)next = i;
		return 0;
	}
	case GX_MAP_HASH: {
		uint32_t start = 0;
		if (prev) {
			uint8_t *b = gx_hash_find(&m->l, prev);
			/* prev deleted meanwhile: restart from the first bucket */
			start = b ? (uint32_t)((b - gx_bucket(&m->l, 0)) / m->l.bucket_size) + 1 : 0;
		}
		for (uint32_t i = start; i < m->l.nr_buckets; i++) {
			uint8_t *b = gx_bucket(&m->l, i);
			if (gx_load32((uint32_t *)b) == GX_HB_FULL) {
				memcpy(next, b + 8, m->l.key_size);
				return 0;
			}
		}
		return gx_err(-ENOENT);
	}
	default:
		return gx_err(-EINVAL);
	}
}

GX_EXPORT void *gx_map__shard_elem(struct gx_map *m, unsigned shard, unsigned idx)
{
	if (!m || m->l.type == GX_MAP_HASH || m->l.type == GX_MAP_RINGBUF) {
		errno = EINVAL;
		return NULL;
	}
	void *v = gx_array_elem(&m->l, shard, idx);
	if (!v)
		errno = ENOENT;
	return v;
}

GX_EXPORT int gx_map__merged_u64(struct gx_map *m, unsigned idx, uint64_t *out)
{
	if (!m || !out || (m->l.value_size & 7) || m->l.type == GX_MAP_HASH ||
	    m->l.type == GX_MAP_RINGBUF)
		return gx_err(-EINVAL);
	if (idx >= m->l.max_entries)
		return gx_err(-ENOENT);
	unsigned words = m->l.value_size / 8;
	memset(out, 0, words * 8);
	for (unsigned s = 0; s < m->l.nr_shards; s++) {
		const uint64_t *v = gx_array_elem(&m->l, s, idx);
		for (unsigned w = 0; w < words; w++)
			out[w] += v[w];
	}
	return 0;
}

GX_EXPORT struct gx_ring *gx_map__ring(struct gx_map *m)
{
	if (!m || m->l.type != GX_MAP_RINGBUF) {
		errno = EINVAL;
		return NULL;
	}
	return (struct gx_ring *)(uintptr_t)m->l.data;
}
