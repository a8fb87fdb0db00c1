/* mcache.c — the rewritten-module cache (see gx_mcache.h for what and why).
 *
 * File format (text header, then the PTX bytes):
 *   gpuext-mcache 1\n
 *   key <32 hex>\n
 *   hooks <n> persistent <n>\n
 *   ptx <bytes> notes <bytes> <16 hex: hash of PTX and notes>\n
 *   \n
 *   <PTX><the rewriter's notes>
 * No lock anywhere: writers use unique temporary names and rename(2), so a
 * reader sees a whole old file, a whole new one, or none. */
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "devbpf/tools/gx_pcache.h"
#include "ptx-rewrite/gx_ptx.h"
#include "shim/gx_mcache.h"
#include "shim/gx_shim.h"

#define MC_MAGIC "gpuext-mcache 1\n"
#define MC_EXT ".gxmod"
#define MC_HDR_MAX 256

/* ---- hashing: two multiplicative lanes (FNV-style), then mixed ---- */
struct h128 {
	uint64_t a, b;
};

static void h_init(struct h128 *h)
{
	h->a = 0xcbf29ce484222325ull;
	h->b = 0x84222325cbf29ce4ull;
}

/* Eight bytes a step (a module can be megabytes), then the tail bytewise. */
static void h_add(struct h128 *h, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	uint64_t a = h->a, b = h->b, w;
	size_t i = 0;
	for (; i + 8 <= len; i += 8) {
		memcpy(&w, p + i, 8);
		a = (a ^ w) * 0x100000001b3ull;
		a ^= a >> 32;
		b = (b ^ w ^ (b >> 29)) * 0x9e3779b97f4a7c15ull;
	}
	for (; i < len; i++) {
		a = (a ^ p[i]) * 0x100000001b3ull;
		b = (b ^ p[i] ^ (b >> 29)) * 0x9e3779b97f4a7c15ull;
	}
	h->a = a, h->b = b;
}

/* A field: its length first, so ("ab","c") and ("a","bc") differ. */
static void h_field(struct h128 *h, const void *buf, size_t len)
{
	uint64_t n = len;
	h_add(h, &n, sizeof(n));
	if (len)
		h_add(h, buf, len);
}

static void h_str(struct h128 *h, const char *s)
{
	h_field(h, s ? s : "", s ? strlen(s) + 1 : 0);
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 30, x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27, x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t content_hash(const void *buf, size_t len)
{
	struct h128 h;
	h_init(&h);
	h_add(&h, buf, len);
	return mix(h.a ^ mix(h.b));
}

/* ---- the build's identity: GNU build id of this library, else its size and mtime ---- */
static char build_id[80];

static int note_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	uintptr_t me = (uintptr_t)data;
	bool mine = false;
	for (int i = 0; i < info->dlpi_phnum && !mine; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		mine = ph->p_type == PT_LOAD && me >= lo && me < lo + ph->p_memsz;
	}
	if (!mine)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *n = (const void *)p;
			const unsigned char *name = p + sizeof(*n), *desc = name + ((n->n_namesz + 3) & ~3u);
			if (desc + n->n_descsz > end)
				break;
			if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && !memcmp(name, "GNU", 4)) {
				size_t k = 0;
				for (unsigned j = 0; j < n->n_descsz && k + 3 < sizeof(build_id); j++)
					k += snprintf(build_id + k, sizeof(build_id) - k, "%02x", desc[j]);
				return 1;
			}
			p = desc + ((n->n_descsz + 3) & ~3u);
		}
	}
	return 1;
}

static void build_id_init(void)
{
	dl_iterate_phdr(note_cb, (void *)build_id_init);
	if (build_id[0])
		return;
	Dl_info di;
	struct stat st;
	if (dladdr((void *)build_id_init, &di) && di.dli_fname && stat(di.dli_fname, &st) == 0)
		snprintf(build_id, sizeof(build_id), "size%lld-mtime%lld", (long long)st.st_size,
			 (long long)st.st_mtime);
}

void gx_mcache_key(const char *ptx, size_t len, const struct gx_ptx_rewrite_opts *o, unsigned dev_sm,
		   struct gx_mcache_key *k)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, build_id_init);
	struct h128 h;
	h_init(&h);
	h_str(&h, "gpuext " GX_GPUEXT_VERSION);
	h_str(&h, build_id);
	h_field(&h, &dev_sm, sizeof(dev_sm));
	h_field(&h, ptx, len);
	unsigned v[4] = { o->hooks, (unsigned)o->persistent, o->max_ptx_version, o->stubs };
	h_field(&h, v, sizeof(v));
	h_field(&h, o->policy_ptx, o->policy_ptx ? o->policy_len : 0);
	for (size_t i = 0; i < o->nr_bindings; i++) {
		h_field(&h, &o->bindings[i].hook, sizeof(o->bindings[i].hook));
		h_str(&h, o->bindings[i].kernel_glob);
		h_str(&h, o->bindings[i].func);
	}
	k->h[0] = mix(h.a);
	k->h[1] = mix(h.b ^ k->h[0]);
}

/* ---- the folder ---- */
static bool cache_off(void)
{
	const char *e = getenv("GPUEXT_CACHE");
	return e && !strcmp(e, "0");
}

static size_t cap_bytes(void)
{
	const char *e = getenv("GPUEXT_CACHE_MAX_MB");
	char *end;
	unsigned long mb = e && *e ? strtoul(e, &end, 10) : 256;
	if (e && *e && *end)
		mb = 256;
	return (size_t)mb << 20;
}

/* Our folder, safe to use: owned by us, not writable by group or others. */
static bool safe_dir(const char *d, bool create)
{
	struct stat st;
	if (lstat(d, &st) != 0) {
		if (!create || errno != ENOENT)
			return false;
		char tmp[4096];
		snprintf(tmp, sizeof(tmp), "%s", d);
		for (char *s = tmp + 1; *s; s++) {
			if (*s != '/')
				continue;
			*s = 0;
			if (mkdir(tmp, 0700) && errno != EEXIST)
				return false;
			*s = '/';
		}
		if (mkdir(tmp, 0700) && errno != EEXIST)
			return false;
		if (lstat(d, &st) != 0)
			return false;
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022)) {
		static int warned;
		if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
			pr_info("module cache: %s is not a folder of this user closed to others (mode %03o); cache not used",
				d, (unsigned)(st.st_mode & 0777));
		return false;
	}
	return true;
}

static int cache_dir(char *buf, size_t n, bool create)
{
	if (cache_off())
		return -ENOENT;
	char base[4000];
	if (gx_pcache_dir(base, sizeof(base)) < 0)
		return -ENOENT;
	if (snprintf(buf, n, "%s/modules", base) >= (int)n)
		return -ENAMETOOLONG;
	return safe_dir(buf, create) ? 0 : -EACCES;
}

static void entry_path(const char *dir, const struct gx_mcache_key *k, char *out, size_t n)
{
	snprintf(out, n, "%s/%016llx%016llx" MC_EXT, dir, (unsigned long long)k->h[0], (unsigned long long)k->h[1]);
}

/* ---- lookup ---- */
static int corrupt(const char *path, const char *why)
{
	pr_warn("module cache: ignoring corrupt entry %s: %s", path, why);
	unlink(path);
	return -EBADMSG;
}

int gx_mcache_get(const struct gx_mcache_key *k, struct gx_mcache_entry *e)
{
	char dir[4096], path[4200];
	if (cache_dir(dir, sizeof(dir), false))
		return -ENOENT;
	entry_path(dir, k, path, sizeof(path));
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -ENOENT;
	struct stat st;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022)) {
		close(fd);
		return corrupt(path, "not a regular file of this user closed to others");
	}
	if ((size_t)st.st_size > cap_bytes() || st.st_size < (off_t)sizeof(MC_MAGIC)) {
		close(fd);
		return corrupt(path, "size out of range");
	}
	size_t sz = (size_t)st.st_size;
	char *buf = malloc(sz + 1);
	size_t got = 0;
	while (buf && got < sz) {
		ssize_t r = read(fd, buf + got, sz - got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	if (buf && got == sz)
		futimens(fd, NULL); /* recently used: evicted last */
	close(fd);
	if (!buf)
		return -ENOMEM;
	if (got != sz) {
		free(buf);
		return corrupt(path, "short read");
	}
	buf[sz] = 0;
	char key[40], want_key[40];
	unsigned long long plen, nlen, phash;
	unsigned hooks, persistent;
	snprintf(key, sizeof(key), "%016llx%016llx", (unsigned long long)k->h[0], (unsigned long long)k->h[1]);
	/* The header ends at the first empty line (the PTX may begin with blanks). */
	char *sep = memmem(buf, sz < MC_HDR_MAX ? sz : MC_HDR_MAX, "\n\n", 2);
	if (!sep || strncmp(buf, MC_MAGIC, sizeof(MC_MAGIC) - 1)) {
		free(buf);
		return corrupt(path, "bad header");
	}
	size_t off = (size_t)(sep - buf) + 2;
	sep[1] = 0;
	int nf = sscanf(buf + sizeof(MC_MAGIC) - 1, "key %32s hooks %u persistent %u ptx %llu notes %llu %llx", want_key,
			&hooks, &persistent, &plen, &nlen, &phash);
	sep[1] = '\n';
	if (nf != 6) {
		free(buf);
		return corrupt(path, "bad header");
	}
	if (strcmp(want_key, key)) {
		free(buf);
		return corrupt(path, "key does not match the file name");
	}
	if (off > sz || plen > sz - off || nlen != sz - off - plen) {
		free(buf);
		return corrupt(path, "sizes do not match the header");
	}
	if (content_hash(buf + off, plen + nlen) != phash) {
		free(buf);
		return corrupt(path, "content hash mismatch");
	}
	e->notes = nlen ? strndup(buf + off + plen, nlen) : NULL;
	memmove(buf, buf + off, plen);
	buf[plen] = 0;
	e->ptx = buf;
	e->len = plen;
	e->nr_hooks = hooks;
	e->nr_persistent = persistent;
	return 0;
}

/* ---- store and size cap ---- */
struct ent {
	char name[64];
	off_t size;
	struct timespec mtime;
};

static int ent_cmp(const void *x, const void *y)
{
	const struct ent *a = x, *b = y;
	if (a->mtime.tv_sec != b->mtime.tv_sec)
		return a->mtime.tv_sec < b->mtime.tv_sec ? -1 : 1;
	return a->mtime.tv_nsec < b->mtime.tv_nsec ? -1 : a->mtime.tv_nsec > b->mtime.tv_nsec;
}

/* Over the cap: remove the least recently used entries down to 3/4 of it.
 * Temporary files older than an hour (a writer that died) go too. */
static void enforce_cap(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct ent *v = NULL;
	size_t n = 0, cap = 0;
	unsigned long long total = 0;
	time_t now = time(NULL);
	for (struct dirent *de; (de = readdir(d));) {
		size_t l = strlen(de->d_name);
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		if (!strncmp(de->d_name, ".tmp.", 5)) {
			if (now - st.st_mtime > 3600)
				unlinkat(dirfd(d), de->d_name, 0);
			continue;
		}
		if (l < sizeof(MC_EXT) || l >= sizeof(v->name) || strcmp(de->d_name + l - (sizeof(MC_EXT) - 1), MC_EXT))
			continue;
		if (n == cap) {
			struct ent *nv = realloc(v, (cap = cap ? 2 * cap : 64) * sizeof(*v));
			if (!nv)
				break;
			v = nv;
		}
		snprintf(v[n].name, sizeof(v[n].name), "%s", de->d_name);
		v[n].size = st.st_size, v[n].mtime = st.st_mtim;
		total += (unsigned long long)st.st_size;
		n++;
	}
	unsigned long long limit = cap_bytes();
	if (total > limit) {
		qsort(v, n, sizeof(*v), ent_cmp);
		unsigned removed = 0;
		for (size_t i = 0; i < n && total > limit / 4 * 3; i++) {
			if (!unlinkat(dirfd(d), v[i].name, 0)) {
				total -= (unsigned long long)v[i].size;
				removed++;
			}
		}
		pr_info("module cache: over %llu MiB, removed %u least recently used entries", limit >> 20, removed);
	}
	free(v);
	closedir(d);
}

int gx_mcache_put(const struct gx_mcache_key *k, const struct gx_mcache_entry *e)
{
	const char *ptx = e->ptx, *notes = e->notes;
	size_t len = e->len;
	static int warned;
	char dir[4096], path[4200], tmp[4200];
	int ret = cache_dir(dir, sizeof(dir), true);
	if (ret)
		return ret;
	if (len + (notes ? strlen(notes) : 0) + MC_HDR_MAX > cap_bytes())
		return -EFBIG;
	entry_path(dir, k, path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s/.tmp.XXXXXX", dir);
	int fd = mkstemp(tmp); /* mode 0600 */
	if (fd < 0) {
		ret = -errno;
		goto fail;
	}
	size_t nlen = notes ? strlen(notes) : 0;
	struct h128 h;
	h_init(&h);
	h_add(&h, ptx, len);
	if (nlen)
		h_add(&h, notes, nlen);
	char hdr[MC_HDR_MAX];
	int hl = snprintf(hdr, sizeof(hdr),
			  MC_MAGIC "key %016llx%016llx\nhooks %u persistent %u\nptx %zu notes %zu %016llx\n\n",
			  (unsigned long long)k->h[0], (unsigned long long)k->h[1], e->nr_hooks, e->nr_persistent, len, nlen,
			  (unsigned long long)mix(h.a ^ mix(h.b)));
	ret = 0;
	const char *parts[3] = { hdr, ptx, notes };
	size_t lens[3] = { (size_t)hl, len, nlen };
	for (int i = 0; i < 3 && !ret; i++)
		for (size_t w = 0; w < lens[i] && !ret;) {
			ssize_t r = write(fd, parts[i] + w, lens[i] - w);
			if (r <= 0)
				ret = r < 0 ? -errno : -EIO;
			else
				w += (size_t)r;
		}
	if (close(fd) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret) {
		unlink(tmp);
		goto fail;
	}
	enforce_cap(dir);
	return 0;
fail:
	if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
		pr_info("module cache: cannot store into %s: %s (further failures not logged)", dir, strerror(-ret));
	return ret;
}
