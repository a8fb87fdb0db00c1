/* mcache.c — the rewritten-module cache (see mcache_internal.h for what and why).
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
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "attach/gx_attach.h"
#include "common/gx_trust.h"
#include "ptx-rewrite/gx_ptx.h"
#include "shim/cubin_entry.h"
#include "shim/mcache_internal.h"
#include "shim/shim_internal.h"

#define MC_MAGIC   "gpuext-mcache 1\n"
#define MC_EXT	   ".gxmod"
#define MC_HDR_MAX 256

/* ---- hashing ----
 * One pass over four 8-byte lanes (32 bytes a step, independent multiply
 * chains, so a megabyte-sized module hashes in a fraction of a millisecond),
 * folded into 128 bits. Fields are combined in order with their lengths, so
 * ("ab","c") and ("a","bc") differ. Not cryptographic: the folder is the
 * user's own (see safe_dir), the hash only has to tell inputs apart. */
#define K1 0x9e3779b97f4a7c15ull
#define K2 0xc2b2ae3d27d4eb4full
#define K3 0x165667b19e3779f9ull
#define K4 0xd6e8feb86659fd93ull

static inline uint64_t rotl64(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static inline uint64_t lane(uint64_t acc, uint64_t w)
{
	return rotl64(acc ^ (w * K2), 29) * K1;
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 30, x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27, x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static void hash128(const void *buf, size_t len, uint64_t seed, uint64_t out[2])
{
	const unsigned char *p = buf;
	uint64_t a = seed ^ K1, b = seed ^ K2, c = seed ^ K3, d = seed ^ K4, w[4];
	size_t i = 0;
	for (; i + 32 <= len; i += 32) {
		memcpy(w, p + i, 32);
		a = lane(a, w[0]), b = lane(b, w[1]), c = lane(c, w[2]), d = lane(d, w[3]);
	}
	uint64_t v[4] = { a, b, c, d };
	for (int j = 0; i + 8 <= len; i += 8, j++) {
		memcpy(w, p + i, 8);
		v[j] = lane(v[j], w[0]);
	}
	uint64_t t = 0;
	memcpy(&t, p + i, len - i);
	v[3] = lane(v[3], t ^ ((uint64_t)(len - i) << 56));
	out[0] = mix(v[0] ^ rotl64(v[1], 17) ^ len);
	out[1] = mix(v[2] ^ rotl64(v[3], 23) ^ out[0]);
}

struct h128 {
	uint64_t a, b;
};

static void h_init(struct h128 *h)
{
	h->a = K3, h->b = K4;
}

static void h_field(struct h128 *h, const void *buf, size_t len)
{
	uint64_t o[2];
	hash128(len ? buf : "", len, h->a, o);
	h->a = mix(h->a ^ o[0]);
	h->b = mix(h->b ^ o[1] ^ h->a);
}

static void h_str(struct h128 *h, const char *s)
{
	h_field(h, s ? s : "", s ? strlen(s) + 1 : 0);
}

/* What the header records of an entry's PTX and notes. */
static uint64_t content_hash(const char *ptx, size_t len, const char *notes, size_t nlen)
{
	struct h128 h;
	h_init(&h);
	h_field(&h, ptx, len);
	h_field(&h, notes, nlen);
	return h.a ^ h.b;
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
	h_str(&h, "gpuext " GX_VERSION);
	h_str(&h, build_id);
	h_field(&h, &dev_sm, sizeof(dev_sm));
	h_field(&h, ptx, len);
	unsigned v[6] = { o->hooks, (unsigned)o->persistent, o->max_ptx_version, o->stubs, o->flags, o->mem_sample };
	h_field(&h, v, sizeof(v));
	h_field(&h, o->policy_ptx, o->policy_ptx ? o->policy_len : 0);
	h_str(&h, o->persist_kernels);
	for (size_t i = 0; i < o->nr_bindings; i++) {
		h_field(&h, &o->bindings[i].hook, sizeof(o->bindings[i].hook));
		h_str(&h, o->bindings[i].kernel_glob);
		h_str(&h, o->bindings[i].func);
		unsigned smp = o->bind_samples ? o->bind_samples[i] : 0;
		h_field(&h, &smp, sizeof(smp));
	}
	k->h[0] = mix(h.a);
	k->h[1] = mix(h.b ^ k->h[0]);
}

/* The compiled cubin of a rewritten PTX (cubin.c): what the driver's JIT
 * output depends on, the text, the device arch and the driver. Not the
 * gpuext build: the PTX says all of it. */
void gx_mcache_cubin_key(const char *ptx, size_t len, unsigned sm, int driver, unsigned by, struct gx_mcache_key *k)
{
	struct h128 h;
	h_init(&h);
	h_str(&h, by == GX_CUBIN_BY_PTXAS	 ? "gpuext-cubin-ptxas"
		  : by == GX_CUBIN_BY_LINK_NOPIC ? "gpuext-cubin-nopic"
						 : "gpuext-cubin");
	h_field(&h, &sm, sizeof(sm));
	h_field(&h, &driver, sizeof(driver));
	h_field(&h, ptx, len);
	k->h[0] = mix(h.a);
	k->h[1] = mix(h.b ^ k->h[0]);
}

uint64_t gx_mcache_content_hash(const void *buf, size_t len)
{
	return content_hash(buf, len, "", 0);
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

size_t gx_mcache_cap(void)
{
	return cap_bytes();
}

/* Our folder, safe to use: owned by us, not writable by group or others,
 * not a symbolic link (gx_trust.h: GX_TRUST_OWN, since we write into it). */
static bool safe_dir(const char *d, bool create)
{
	char why[96];
	int r = gx_dir_trusted(d, GX_TRUST_OWN, why, sizeof(why));
	if (r == -ENOENT && create) {
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
		r = gx_dir_trusted(d, GX_TRUST_OWN, why, sizeof(why));
	}
	if (r == -EPERM) {
		static int warned;
		if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
			pr_warn("module cache: %s is not a folder of this user closed to others (%s); cache not used",
				d, why);
	}
	return r == 0;
}

static int cache_dir(char *buf, size_t n, bool create)
{
	if (cache_off())
		return -ENOENT;
	char base[4000];
	if (gx_cache_dir(base, sizeof(base)) < 0)
		return -ENOENT;
	if (snprintf(buf, n, "%s/modules", base) >= (int)n)
		return -ENAMETOOLONG;
	/* modules/ is made inside the cache folder: only in one of ours (a
	 * missing one is created 0700 with it). */
	struct stat st;
	if (create && !lstat(base, &st) && !safe_dir(base, false))
		return -EACCES;
	return safe_dir(buf, create) ? 0 : -EACCES;
}

/* The install's read-only cache (docs/cache.md): GPUEXT_SHARED_CACHE_DIR,
 * else <shim dir>/../share/gpuext/cache; its modules/ folder and entries
 * under the trust rule with root or this user as owner. Never written. */
static int shared_dir(char *buf, size_t n)
{
	if (cache_off())
		return -ENOENT;
	const char *e = getenv("GPUEXT_SHARED_CACHE_DIR");
	char base[4000], rp[PATH_MAX];
	Dl_info di;
	if (e && *e) {
		snprintf(base, sizeof(base), "%.3990s", e);
	} else {
		if (!dladdr((void *)shared_dir, &di) || !di.dli_fname)
			return -ENOENT;
		snprintf(base, sizeof(base), "%.3900s", di.dli_fname);
		char *slash = strrchr(base, '/');
		if (!slash)
			return -ENOENT;
		snprintf(slash, sizeof(base) - (size_t)(slash - base), "/../share/gpuext/cache");
		if (realpath(base, rp)) /* the log names it without lib/.. */
			snprintf(base, sizeof(base), "%.3990s", rp);
	}
	if (snprintf(buf, n, "%s/modules", base) >= (int)n)
		return -ENAMETOOLONG;
	char why[96];
	int r = gx_dir_trusted(buf, GX_TRUST_ANY_OWNER, why, sizeof(why));
	if (r == -EPERM) {
		static int warned;
		if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
			pr_warn("module cache: not using the shared cache %s: %s", buf, why);
	}
	return r;
}

int gx_mcache_dir(int which, char *buf, size_t n, bool create)
{
	return which ? shared_dir(buf, n) : cache_dir(buf, n, create);
}

static void entry_path(const char *dir, const struct gx_mcache_key *k, char *out, size_t n)
{
	snprintf(out, n, "%s/%016llx%016llx" MC_EXT, dir, (unsigned long long)k->h[0], (unsigned long long)k->h[1]);
}

/* ---- lookup ---- */
static int corrupt(const char *path, const char *why, bool mine)
{
	pr_warn("module cache: ignoring corrupt entry %s: %s", path, why);
	if (mine) /* the shared cache is read-only */
		unlink(path);
	return -EBADMSG;
}

static bool read_at(int fd, char *buf, size_t len, size_t off)
{
	for (size_t got = 0; got < len;) {
		ssize_t r = pread(fd, buf + got, len - got, (off_t)(off + got));
		if (r <= 0)
			return false;
		got += (size_t)r;
	}
	return true;
}

static int get_in(const char *dir, bool mine, const struct gx_mcache_key *k, struct gx_mcache_entry *e)
{
	char path[4200];
	entry_path(dir, k, path, sizeof(path));
	char refused[96];
	int fd = gx_open_trusted(path, O_RDONLY, mine ? GX_TRUST_OWN : GX_TRUST_ANY_OWNER, refused, sizeof(refused));
	if (fd == -EPERM) { /* planted, or left by a run under another uid */
		pr_warn("module cache: refusing %s: %s; rewriting again", path, refused);
		if (mine)
			unlink(path);
		return -EPERM;
	}
	if (fd < 0)
		return -ENOENT;
	struct stat st;
	if (fstat(fd, &st)) {
		close(fd);
		return -ENOENT;
	}
	if ((size_t)st.st_size > cap_bytes() || st.st_size < (off_t)sizeof(MC_MAGIC)) {
		close(fd);
		return corrupt(path, "size out of range", mine);
	}
	size_t sz = (size_t)st.st_size;
	/* The header, then the PTX and the notes straight into their own
	 * buffers (no copy of a megabyte-sized module). */
	char hdr[MC_HDR_MAX + 1], key[40], want_key[40];
	ssize_t hl = pread(fd, hdr, MC_HDR_MAX, 0);
	unsigned long long plen = 0, nlen = 0, phash = 0;
	unsigned hooks = 0, persistent = 0;
	snprintf(key, sizeof(key), "%016llx%016llx", (unsigned long long)k->h[0], (unsigned long long)k->h[1]);
	hdr[hl > 0 ? hl : 0] = 0;
	/* The header ends at the first empty line (the PTX may begin with blanks). */
	char *sep = hl > 0 ? strstr(hdr, "\n\n") : NULL;
	const char *why = NULL;
	if (!sep || strncmp(hdr, MC_MAGIC, sizeof(MC_MAGIC) - 1)) {
		why = "bad header";
	} else {
		sep[1] = 0;
		if (sscanf(hdr + sizeof(MC_MAGIC) - 1, "key %32s hooks %u persistent %u ptx %llu notes %llu %llx",
			   want_key, &hooks, &persistent, &plen, &nlen, &phash) != 6)
			why = "bad header";
		else if (strcmp(want_key, key))
			why = "key does not match the file name";
	}
	size_t off = sep ? (size_t)(sep - hdr) + 2 : 0;
	if (!why && (off > sz || plen > sz - off || nlen != sz - off - plen))
		why = "sizes do not match the header";
	char *ptx = NULL, *notes = NULL;
	if (!why) {
		ptx = malloc(plen + 1);
		notes = malloc(nlen + 1);
		if (!ptx || !notes) {
			free(ptx), free(notes);
			close(fd);
			return -ENOMEM;
		}
		if (!read_at(fd, ptx, plen, off) || !read_at(fd, notes, nlen, off + plen))
			why = "short read";
		else if (ptx[plen] = 0, notes[nlen] = 0, content_hash(ptx, plen, notes, nlen) != phash)
			why = "content hash mismatch";
	}
	if (!why && mine)
		futimens(fd, NULL); /* recently used: evicted last */
	close(fd);
	if (why) {
		free(ptx), free(notes);
		return corrupt(path, why, mine);
	}
	if (!nlen) {
		free(notes);
		notes = NULL;
	}
	*e = (struct gx_mcache_entry){
		.ptx = ptx, .len = plen, .nr_hooks = hooks, .nr_persistent = persistent, .notes = notes
	};
	return 0;
}

/* The user's folder first, then the install's read-only one. */
int gx_mcache_get(const struct gx_mcache_key *k, struct gx_mcache_entry *e)
{
	char dir[4096];
	int r = -ENOENT;
	if (!cache_dir(dir, sizeof(dir), false))
		r = get_in(dir, true, k, e);
	if (r && !shared_dir(dir, sizeof(dir)))
		r = get_in(dir, false, k, e) ? r : 0;
	return r;
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

static bool has_ext(const char *name, size_t l, const char *ext)
{
	size_t el = strlen(ext);
	return l > el && !strcmp(name + l - el, ext);
}

/* Over the cap: remove the least recently used entries down to 3/4 of it.
 * Temporary files older than an hour (a writer that died) go too. */
void gx_mcache_enforce_cap(const char *dir)
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
		if (l >= sizeof(v->name) || !(has_ext(de->d_name, l, MC_EXT) || has_ext(de->d_name, l, GX_CUBIN_EXT)))
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
	char dir[4096], path[4200];
	int ret = cache_dir(dir, sizeof(dir), true);
	if (ret)
		return ret;
	if (len + (notes ? strlen(notes) : 0) + MC_HDR_MAX > cap_bytes())
		return -EFBIG;
	entry_path(dir, k, path, sizeof(path));
	size_t nlen = notes ? strlen(notes) : 0;
	char hdr[MC_HDR_MAX];
	int hl = snprintf(hdr, sizeof(hdr),
			  MC_MAGIC "key %016llx%016llx\nhooks %u persistent %u\nptx %zu notes %zu %016llx\n\n",
			  (unsigned long long)k->h[0], (unsigned long long)k->h[1], e->nr_hooks, e->nr_persistent, len,
			  nlen, (unsigned long long)content_hash(ptx, len, notes, nlen));
	const void *parts[3] = { hdr, ptx, notes };
	size_t lens[3] = { (size_t)hl, len, nlen };
	ret = gx_write_parts(dir, path, parts, lens, 3);
	if (ret)
		goto fail;
	gx_mcache_enforce_cap(dir);
	return 0;
fail:
	if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
		pr_info("module cache: cannot store into %s: %s (further failures not logged)", dir, strerror(-ret));
	return ret;
}
