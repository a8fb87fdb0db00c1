/* test_maps.c — maps runtime on the host: array/hash/sharded/ringbuf
 * semantics, concurrent hash inserts, shared-memory files (mode, visibility
 * from a second process), device copies through memcpy callbacks (flush and
 * push without a GPU). `test_maps --fixture DIR` leaves a few maps in DIR for
 * the CLI test. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "devbpf/hosthelpers_internal.h"
#include "devbpf/gx_bpf.h"
#include "tests/gx_test.h"

/* The producer side of rings, as the helpers use it. */
#define gx_shard_index(m, type) 0
#include "devbpf/helpers/mapimpl_internal.h"

static char dir[256];

static struct gx_map *mk(const char *name, unsigned type, unsigned k, unsigned v, unsigned n,
			 unsigned shards, unsigned flags)
{
	struct gx_map_spec s = { name, type, k, v, n, shards };
	struct gx_map *m = NULL;
	int ret = gx_map__create(&s, flags, &m);
	if (ret)
		printf("# create %s: %d\n", name, ret);
	return m;
}

static void test_layout(void)
{
	struct gx_devrt_map l;
	struct gx_map_spec a = { "a", GX_MAP_ARRAY, 4, 12, 10, 0 };
	GX_CHECK(!gx_map_layout(&a, &l) && l.value_stride == 16 && l.data_size == 160 &&
			 l.nr_shards == 1,
		 "array layout: stride rounds to 8");
	struct gx_map_spec h = { "h", GX_MAP_HASH, 6, 8, 100, 0 };
	GX_CHECK(!gx_map_layout(&h, &l) && l.nr_buckets == 256 && l.bucket_size == 8 + 8 + 8,
		 "hash layout: buckets pow2 >= 2*max, bucket = state+key+value");
	struct gx_map_spec w = { "w", GX_MAP_PERWARP_ARRAY, 4, 8, 3, 132 * 64 };
	GX_CHECK(!gx_map_layout(&w, &l) && l.data_size == 132ull * 64 * 3 * 8,
		 "per-warp layout: shards x entries x stride");
	struct gx_map_spec bad[] = {
		{ "k", GX_MAP_ARRAY, 8, 8, 1, 0 },   { "z", GX_MAP_ARRAY, 4, 0, 1, 0 },
		{ "e", GX_MAP_HASH, 4, 4, 0, 0 },    { "r", GX_MAP_RINGBUF, 0, 0, 1000, 0 },
		{ "t", 99, 4, 4, 4, 0 },
	};
	int rejected = 0;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		rejected += gx_map_layout(&bad[i], &l) == -EINVAL;
	GX_CHECK(rejected == 5, "invalid specs rejected with -EINVAL (%d/5)", rejected);
}

static void test_array(void)
{
	struct gx_map *m = mk("arr", GX_MAP_ARRAY, 4, 8, 4, 0, 0);
	if (!m)
		{ GX_CHECK(0, "array create"); return; }
	uint32_t k = 2;
	uint64_t v = 42, *p;
	GX_CHECK(gx_map__update(m, &k, &v, GX_BPF_ANY) == 0 && (p = gx_map__lookup(m, &k)) && *p == 42,
		 "array update/lookup");
	GX_CHECK(gx_map__update(m, &k, &v, GX_BPF_NOEXIST) == -EEXIST, "array NOEXIST: -EEXIST");
	k = 4;
	GX_CHECK(gx_map__update(m, &k, &v, GX_BPF_ANY) == -E2BIG && !gx_map__lookup(m, &k),
		 "array key out of range: -E2BIG / NULL");
	GX_CHECK(gx_map__delete(m, &k) == -EINVAL, "array delete: -EINVAL");
	uint32_t it, n = 0;
	for (int r = gx_map__next_key(m, NULL, &it); !r; r = gx_map__next_key(m, &it, &it))
		n++;
	GX_CHECK(n == 4, "array iteration visits every index (%u)", n);
	gx_map__free(m);
}

static void test_hash(void)
{
	struct gx_map *m = mk("hash", GX_MAP_HASH, 8, 8, 8, 0, 0);
	if (!m)
		{ GX_CHECK(0, "hash create"); return; }
	int ok = 1;
	for (uint64_t k = 1; k <= 8; k++) {
		uint64_t v = k * 10;
		ok &= gx_map__update(m, &k, &v, GX_BPF_NOEXIST) == 0;
	}
	GX_CHECK(ok, "hash: 8 inserts with NOEXIST");
	uint64_t k = 5, v = 1, *p;
	GX_CHECK((p = gx_map__lookup(m, &k)) && *p == 50, "hash lookup finds value");
	GX_CHECK(gx_map__update(m, &k, &v, GX_BPF_NOEXIST) == -EEXIST, "hash NOEXIST on existing: -EEXIST");
	k = 99;
	GX_CHECK(gx_map__update(m, &k, &v, GX_BPF_EXIST) == -ENOENT, "hash EXIST on missing: -ENOENT");
	GX_CHECK(gx_map__update(m, &k, &v, 7) == -EINVAL, "hash bad flags: -EINVAL");
	k = 5;
	GX_CHECK(gx_map__delete(m, &k) == 0 && !gx_map__lookup(m, &k) && gx_map__delete(m, &k) == -ENOENT,
		 "hash delete, then absent, second delete -ENOENT");
	k = 6;
	GX_CHECK((p = gx_map__lookup(m, &k)) && *p == 60, "keys after a tombstone still found");
	k = 5;
	v = 555;
	GX_CHECK(gx_map__update(m, &k, &v, GX_BPF_ANY) == 0 && (p = gx_map__lookup(m, &k)) && *p == 555,
		 "reinsert after delete reuses a tombstone");
	uint64_t key, n = 0, sum = 0;
	for (int r = gx_map__next_key(m, NULL, &key); !r; r = gx_map__next_key(m, &key, &key))
		n++, sum += key;
	GX_CHECK(n == 8 && sum == 36, "hash iteration: 8 keys, sum 36 (%llu, %llu)",
		 (unsigned long long)n, (unsigned long long)sum);
	/* fill to capacity: nr_buckets = 16 */
	int inserted = 0, last = 0;
	for (uint64_t x = 100; x < 200 && last == 0; x++) {
		last = gx_map__update(m, &x, &x, GX_BPF_ANY);
		inserted += last == 0;
	}
	GX_CHECK(last == -E2BIG && inserted == 8, "hash full after its buckets: -E2BIG (%d more)", inserted);
	gx_map__free(m);
}

struct thr {
	struct gx_map *m;
	int base, failures;
};
static void *inserter(void *arg)
{
	struct thr *t = arg;
	for (int round = 0; round < 3; round++)
		for (uint64_t k = 0; k < 400; k++) {
			uint64_t key = k % 2 ? k : k + (uint64_t)t->base; /* odd keys shared */
			uint64_t one = 1;
			uint64_t *v = gx_map__lookup(t->m, &key);
			if (v)
				__atomic_fetch_add(v, 1, __ATOMIC_RELAXED);
			else if (gx_map__update(t->m, &key, &one, GX_BPF_NOEXIST) == -EEXIST &&
				 (v = gx_map__lookup(t->m, &key)))
				__atomic_fetch_add(v, 1, __ATOMIC_RELAXED);
			else if (!gx_map__lookup(t->m, &key))
				t->failures++;
		}
	return NULL;
}

static void test_hash_concurrent(void)
{
	struct gx_map *m = mk("hc", GX_MAP_HASH, 8, 8, 1024, 0, 0);
	if (!m)
		{ GX_CHECK(0, "hash create"); return; }
	pthread_t th[4];
	struct thr t[4];
	for (int i = 0; i < 4; i++) {
		t[i] = (struct thr){ m, 100000 * (i + 1), 0 };
		pthread_create(&th[i], NULL, inserter, &t[i]);
	}
	int fails = 0;
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL), fails += t[i].failures;
	uint64_t key, n = 0, shared_total = 0;
	for (int r = gx_map__next_key(m, NULL, &key); !r; r = gx_map__next_key(m, &key, &key)) {
		n++;
		if (key % 2 && key < 400)
			shared_total += *(uint64_t *)gx_map__lookup(m, &key);
	}
	/* 200 shared odd keys + 4 x 200 private even keys */
	GX_CHECK(fails == 0 && n == 1000, "concurrent inserts: no lost or duplicate keys (%llu)",
		 (unsigned long long)n);
	GX_CHECK(shared_total == 200ull * 4 * 3, "shared keys counted by every thread (%llu)",
		 (unsigned long long)shared_total);
	gx_map__free(m);
}

static void test_sharded(void)
{
	struct gx_map *m = mk("pw", GX_MAP_PERWARP_ARRAY, 4, 16, 2, 4 * GX_WARP_SLOTS_PER_SM, 0);
	struct gx_map *s = mk("ps", GX_MAP_PERSM_ARRAY, 4, 8, 2, 4, 0);
	if (!m || !s)
		{ GX_CHECK(0, "sharded create"); return; }
	uint32_t k = 1;
	gx_host_env.smid = 2;
	gx_host_env.warpid = 5;
	uint64_t *v = gx_map__lookup(m, &k);
	GX_CHECK(v == gx_map__shard_elem(m, 2 * GX_WARP_SLOTS_PER_SM + 5, 1),
		 "per-warp lookup hits shard smid*64+warpid");
	v[0] = 3, v[1] = 4;
	gx_host_env.smid = 3;
	gx_host_env.warpid = 0;
	v = gx_map__lookup(m, &k);
	v[0] = 10, v[1] = 20;
	uint64_t merged[2];
	GX_CHECK(!gx_map__merged_u64(m, 1, merged) && merged[0] == 13 && merged[1] == 24,
		 "merged view sums each word over shards");
	uint64_t *x = gx_map__lookup(s, &k);
	GX_CHECK(x == gx_map__shard_elem(s, 3, 1), "per-SM lookup hits shard smid %% nr_shards");
	struct gx_map *odd = mk("odd", GX_MAP_PERSM_ARRAY, 4, 12, 1, 2, 0);
	GX_CHECK(odd && gx_map__merged_u64(odd, 0, merged) == -EINVAL,
		 "no merged view for values that are not whole u64 words");
	gx_host_env.smid = gx_host_env.warpid = 0;
	gx_map__free(m);
	gx_map__free(s);
	gx_map__free(odd);
}

struct collect {
	int n;
	uint32_t vals[64];
};
static int collect_cb(void *ctx, unsigned type, const void *rec, size_t len)
{
	struct collect *c = ctx;
	if (type == GX_REC_DATA && len == sizeof(struct gx_rec_hdr) + 4 && c->n < 64)
		memcpy(&c->vals[c->n++], (const char *)rec + sizeof(struct gx_rec_hdr), 4);
	return 0;
}

static void test_ring(void)
{
	struct gx_map *m = mk("rb", GX_MAP_RINGBUF, 0, 0, 64, 0, 0);
	if (!m)
		{ GX_CHECK(0, "ringbuf create"); return; }
	struct gx_ring *r = gx_map__ring(m);
	struct collect c = { 0 };
	int okw = 1;
	/* 16-byte records in a 64-byte ring: 4 fit; drain between to wrap */
	for (uint32_t i = 0; i < 3; i++)
		okw &= gx_h_ringbuf_output((uintptr_t)m, (uintptr_t)&i, 4, 0, 0) == 0;
	long n1 = gx_ring__drain(r, collect_cb, &c);
	for (uint32_t i = 3; i < 7; i++)
		okw &= gx_h_ringbuf_output((uintptr_t)m, (uintptr_t)&i, 4, 0, 0) == 0;
	uint32_t extra = 99;
	long full = (long)gx_h_ringbuf_output((uintptr_t)m, (uintptr_t)&extra, 4, 0, 0);
	long n2 = gx_ring__drain(r, collect_cb, &c);
	int order = c.n == 7;
	for (int i = 0; i < c.n; i++)
		order &= c.vals[i] == (uint32_t)i;
	GX_CHECK(okw && n1 == 3 && n2 == 4 && order, "ring: records drained in order across the wrap");
	GX_CHECK(full == -ENOSPC && r->drops == 1, "ring: full ring refuses and counts a drop");
	/* a reserved but uncommitted record stops the drain */
	struct gx_rec_hdr *h = gx_ring_reserve(r, 16);
	long n3 = gx_ring__drain(r, collect_cb, &c);
	if (h)
		gx_ring_commit(r, h, 12, GX_REC_DATA);
	long n4 = gx_ring__drain(r, collect_cb, &c);
	GX_CHECK(h && n3 == 0 && n4 == 1, "ring: uncommitted record is not consumed until commit");
	GX_CHECK(gx_ring__init(r, 100) == -EINVAL, "ring size must be a power of two");
	gx_map__free(m);

	struct gx_rec_printk p = { .args = { (uint64_t)-5, 0xabc, 7 } };
	memcpy(p.fmt, "a=%d b=%lx c=%u %% %s", sizeof("a=%d b=%lx c=%u %% %s"));
	char out[128];
	gx_printk_format(&p, out, sizeof(out));
	GX_CHECK(!strcmp(out, "a=-5 b=abc c=7 % %s"), "printk format: '%s'", out);
}

static void test_shm(void)
{
	struct gx_map *m = mk("shared/cnt", GX_MAP_ARRAY, 4, 8, 4, 0, GX_MAP_F_SHM);
	if (!m)
		{ GX_CHECK(0, "shm create"); return; }
	struct stat st, sd;
	GX_CHECK(!stat(m->path, &st) && (st.st_mode & 0777) == 0600 && !stat(dir, &sd) &&
			 (sd.st_mode & 0777) == 0700,
		 "shm file 0600 in a 0700 folder (%s)", m->path);
	char expect[300];
	snprintf(expect, sizeof(expect), "%s/%d-shared_cnt", dir, (int)getpid());
	GX_CHECK(!strcmp(m->path, expect), "shm file name <pid>-<name>, no path separators");
	uint32_t k = 1;
	uint64_t v = 1234;
	gx_map__update(m, &k, &v, 0);
	int pipefd[2];
	if (pipe(pipefd))
		return;
	pid_t pid = fork();
	if (pid == 0) {
		/* second process: read what the parent wrote, write back */
		struct gx_map *o;
		uint64_t res = 0;
		if (!gx_map__open(m->path, 1, &o)) {
			uint64_t *p = gx_map__lookup(o, &k);
			res = p ? *p : 0;
			uint32_t k2 = 2;
			uint64_t v2 = 777;
			gx_map__update(o, &k2, &v2, 0);
			gx_map__free(o);
		}
		if (write(pipefd[1], &res, sizeof(res)) != sizeof(res))
			_exit(2);
		_exit(0);
	}
	uint64_t res = 0;
	int status;
	if (read(pipefd[0], &res, sizeof(res)) != sizeof(res))
		res = 0;
	waitpid(pid, &status, 0);
	close(pipefd[0]);
	close(pipefd[1]);
	uint32_t k2 = 2;
	uint64_t *p2 = gx_map__lookup(m, &k2);
	GX_CHECK(res == 1234 && p2 && *p2 == 777, "second process sees the map and its writes come back");
	struct gx_map *ro;
	GX_CHECK(!gx_map__open(m->path, 0, &ro) && gx_map__update(ro, &k, &v, 0) == -EPERM,
		 "read-only open refuses updates");
	gx_map__free(ro);
	char path[400];
	snprintf(path, sizeof(path), "%s", m->path);
	gx_map__free(m);
	GX_CHECK(access(path, F_OK) != 0, "owner removes its shm file on free");
	/* garbage file: clean refusal */
	snprintf(path, sizeof(path), "%s/garbage", dir);
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	char junk[5000] = "not a map";
	if (fd >= 0 && write(fd, junk, sizeof(junk)) == (ssize_t)sizeof(junk))
		close(fd);
	struct gx_map *g;
	GX_CHECK(gx_map__open(path, 0, &g) == -EBADMSG, "a file that is not a map: -EBADMSG");
	unlink(path);
}

/* ---- fake device: malloc'd buffers, address = pointer ---- */
static int fd_alloc(void *c, size_t n, uint64_t *d)
{
	(void)c;
	void *p = calloc(1, n);
	*d = (uintptr_t)p;
	return p ? 0 : -ENOMEM;
}
static void fd_free(void *c, uint64_t d)
{
	(void)c;
	free((void *)(uintptr_t)d);
}
static int fd_htod(void *c, uint64_t d, const void *s, size_t n)
{
	(void)c;
	memcpy((void *)(uintptr_t)d, s, n);
	return 0;
}
static int fd_dtoh(void *c, void *h, uint64_t d, size_t n)
{
	(void)c;
	memcpy(h, (void *)(uintptr_t)d, n);
	return 0;
}
static int fd_map(void *c, void *h, size_t n, uint64_t *d)
{
	(void)c, (void)n;
	*d = (uintptr_t)h;
	return 0;
}

static void test_devmaps(void)
{
	struct gx_map *a = mk("da", GX_MAP_ARRAY, 4, 8, 4, 0, GX_MAP_F_SHM);
	struct gx_map *h = mk("dh", GX_MAP_HASH, 4, 8, 4, 0, 0);
	struct gx_map *r = mk("dr", GX_MAP_RINGBUF, 0, 0, 4096, 0, 0);
	struct gx_map *c = mk("dc.rodata", GX_MAP_ARRAY, 4, 8, 1, 0, GX_MAP_F_SHM);
	if (!a || !h || !r || !c)
		{ GX_CHECK(0, "devmaps maps"); return; }
	uint32_t k = 0;
	uint64_t v = 5;
	gx_map__update(a, &k, &v, 0);
	v = 42;
	gx_map__update(c, &k, &v, 0);
	gx_map__seal(c, NULL, 0);
	struct gx_map *maps[4] = { a, h, r, c };
	static _Alignas(4096) unsigned char rt[4096 + sizeof(struct gx_ring)];
	gx_ring__init((struct gx_ring *)rt, 4096);
	struct gx_dev_ops ops = { NULL, fd_alloc, fd_free, fd_htod, fd_dtoh, fd_map, NULL, NULL, NULL, NULL };
	struct gx_devmaps *d;
	int ret = gx_devmaps__create(maps, 4, (struct gx_ring *)rt, sizeof(rt), GX_DEVRT_F_PRINTK, &ops, &d);
	GX_CHECK(ret == 0, "devmaps create with memcpy callbacks");
	if (ret)
		return;
	const struct gx_devrt *drt = gx_devmaps__devrt(d);
	GX_CHECK(drt->magic == GX_DEVRT_MAGIC && drt->nr_maps == 4 && drt->maps[1].type == GX_MAP_HASH &&
			 drt->maps[0].data != a->l.data && drt->maps[2].data == r->l.data &&
			 drt->ring == (uintptr_t)rt && drt->flags == GX_DEVRT_F_PRINTK,
		 "devrt: descriptors with device addresses, rings mapped not copied");
	GX_CHECK(*(uint64_t *)(uintptr_t)drt->maps[0].data == 5, "upload copies the host contents");
	/* the "kernel" writes device memory through the same helpers */
	uint64_t dv = 77;
	uint32_t hk = 9;
	gx_h_map_update_elem((uintptr_t)&drt->maps[1], (uintptr_t)&hk, (uintptr_t)&dv, 0, 0);
	*(uint64_t *)(uintptr_t)drt->maps[0].data = 6;
	GX_CHECK(*(uint64_t *)(uintptr_t)drt->maps[3].data == 42, "a constant map is uploaded like the others");
	*(uint64_t *)(uintptr_t)drt->maps[3].data = 43; /* what no verified program can do */
	uint64_t gen0 = a->hdr->gen;
	GX_CHECK(gx_devmaps__flush(d) == 0, "flush");
	uint64_t *hv = gx_map__lookup(h, &hk);
	GX_CHECK(hv && *hv == 77 && *(uint64_t *)gx_map__lookup(a, &k) == 6 && a->hdr->gen == gen0 + 1,
		 "after flush the host copy has the device's entries and a new generation");
	GX_CHECK(*(uint64_t *)gx_map__lookup(c, &k) == 42, "... but a constant map's read-only copy is not flushed into");
	v = 8;
	gx_map__update(a, &k, &v, 0);
	GX_CHECK(gx_devmaps__push(d) == 0 && *(uint64_t *)(uintptr_t)drt->maps[0].data == 8,
		 "push copies host updates to the device");
	gx_devmaps__free(d);
	gx_map__free(a);
	gx_map__free(h);
	gx_map__free(r);
	gx_map__free(c);
}

/* Device rings: the fake device's async ops are memcpy/memset too. */
static int fd_zero(void *c, uint64_t d, size_t n)
{
	(void)c;
	memset((void *)(uintptr_t)d, 0, n);
	return 0;
}
static int fd_sync(void *c)
{
	(void)c;
	return 0;
}

struct seqs {
	uint32_t n, bad;
	uint32_t v[4096];
};
static int seq_cb(void *ctx, unsigned type, const void *rec, size_t len)
{
	struct seqs *c = ctx;
	if (type != GX_REC_DATA || len != sizeof(struct gx_rec_hdr) + 16 || c->n >= 4096) {
		c->bad++;
		return 0;
	}
	uint32_t p[4];
	memcpy(p, (const char *)rec + sizeof(struct gx_rec_hdr), sizeof(p));
	if (p[1] != ~p[0] || p[2] != 0x5a5a5a5a || p[3] != p[0] * 3)
		c->bad++;
	c->v[c->n++] = p[0];
	return 0;
}

/* More records than fit between two drains, 24-byte records that pad at
 * the wrap: nothing lost that was accepted, nothing duplicated, every
 * refusal counted as a drop, device headers cleared and the tail published. */
static void test_devring(void)
{
	struct gx_map *r = mk("devring", GX_MAP_RINGBUF, 0, 0, 4096, 0, 0);
	if (!r)
		{ GX_CHECK(0, "devring map"); return; }
	static _Alignas(4096) unsigned char rt[4096 + sizeof(struct gx_ring)];
	gx_ring__init((struct gx_ring *)rt, 4096);
	struct gx_map *maps[1] = { r };
	struct gx_dev_ops ops = { NULL, fd_alloc, fd_free, fd_htod, fd_dtoh, NULL, NULL, fd_zero, fd_htod, fd_sync };
	struct gx_devmaps *d;
	int ret = gx_devmaps__create(maps, 1, (struct gx_ring *)rt, sizeof(rt), GX_DEVRT_F_PRINTK, &ops, &d);
	GX_CHECK(ret == 0, "devmaps create with device rings");
	if (ret)
		return;
	const struct gx_devrt *drt = gx_devmaps__devrt(d);
	struct gx_ring *dr = (struct gx_ring *)(uintptr_t)drt->maps[0].data;
	GX_CHECK(drt->maps[0].data != r->l.data && drt->ring != (uintptr_t)rt && dr->size == 4096 &&
			 ((struct gx_ring *)(uintptr_t)drt->ring)->size == 4096,
		 "device rings: separate device storage initialised from the mirror");
	static struct seqs c;
	memset(&c, 0, sizeof(c));
	uint32_t produced = 0, refused = 0;
	long drained = 0;
	int errs = 0;
	for (int burst = 0; burst < 7; burst++) {
		for (int i = 0; i < 300; i++) {
			uint32_t p[4] = { produced, ~produced, 0x5a5a5a5a, produced * 3 };
			long o = (long)gx_h_ringbuf_output((uintptr_t)&drt->maps[0], (uintptr_t)p, sizeof(p), 0, 0);
			if (o == -ENOSPC)
				refused++;
			else if (o)
				errs++;
			produced++;
		}
		long n = gx_devmaps__drain(d, 0, seq_cb, &c);
		errs += n < 0;
		drained += n > 0 ? n : 0;
	}
	int inorder = c.n > 0;
	for (uint32_t i = 1; i < c.n; i++)
		inorder &= c.v[i] > c.v[i - 1];
	struct gx_ring *mir = gx_map__ring(r);
	GX_CHECK(!errs && !c.bad && inorder && c.n == drained && c.n + refused == produced && refused > 0,
		 "device ring: %u accepted records drained once, in order, intact (%u refused of %u)", c.n,
		 refused, produced);
	GX_CHECK(mir->drops == refused && gx_ring__drops(dr) == refused, "device ring: drops counted exactly (%llu/%u)",
		 (unsigned long long)mir->drops, refused);
	int zero = 1;
	for (size_t i = 0; i < 4096; i++)
		zero &= ((unsigned char *)(dr + 1))[i] == 0;
	GX_CHECK(zero && dr->tail == dr->head && mir->tail == dr->head,
		 "device ring: consumed records cleared on the device, tail published");
	/* a reserved, uncommitted record on the device stops the drain */
	struct gx_rec_hdr *h = gx_ring_reserve(dr, 24);
	uint32_t n0 = c.n;
	long n3 = gx_devmaps__drain(d, 0, seq_cb, &c);
	if (h) {
		uint32_t p[4] = { produced, ~produced, 0x5a5a5a5a, produced * 3 };
		memcpy(h + 1, p, sizeof(p));
		gx_ring_commit(dr, h, 24, GX_REC_DATA);
	}
	long n4 = gx_devmaps__drain(d, 0, seq_cb, &c);
	GX_CHECK(h && n3 == 0 && n4 == 1 && c.n == n0 + 1 && c.v[n0] == produced,
		 "device ring: uncommitted record waits for its commit");
	/* runtime ring through the same consumer */
	struct gx_ring *drt_ring = (struct gx_ring *)(uintptr_t)drt->ring;
	struct gx_rec_hdr *ph = gx_ring_reserve(drt_ring, sizeof(struct gx_rec_printk));
	if (ph)
		gx_ring_commit(drt_ring, ph, sizeof(struct gx_rec_printk), GX_REC_PRINTK);
	GX_CHECK(ph && gx_devmaps__drain(d, GX_DEVMAPS_RT, NULL, NULL) == 1 &&
			 ((struct gx_ring *)rt)->tail == drt_ring->tail && drt_ring->tail == drt_ring->head,
		 "device runtime ring drained through its mirror");
	GX_CHECK(gx_devmaps__drain(d, 1, NULL, NULL) == -EINVAL && gx_devmaps__drain(d, -2, NULL, NULL) == -EINVAL,
		 "drain of a map that is not there: -EINVAL");
	gx_devmaps__free(d);
	gx_map__free(r);
}

/* Record tables (GDEV_F_RECORDS): what the drainer takes and when. */
struct recs {
	unsigned n, bad;
	uint64_t first[16]; /* each record's first word */
};
static int rec_cb(void *ctx, unsigned type, const void *rec, size_t len)
{
	struct recs *c = ctx;
	uint64_t w[3];
	if (type != GX_REC_DATA || len != sizeof(struct gx_rec_hdr) + 24 || c->n >= 16) {
		c->bad++;
		return 0;
	}
	memcpy(w, (const char *)rec + sizeof(struct gx_rec_hdr), sizeof(w));
	if (w[1] != ~w[0] || w[2] != w[0] * 3)
		c->bad++;
	c->first[c->n++] = w[0];
	return 0;
}
static void put_rec(uint64_t slots, unsigned s, uint64_t v)
{
	uint64_t w[3] = { v, ~v, v * 3 };
	memcpy((char *)(uintptr_t)slots + 24 * s, w, sizeof(w));
}
static int slot_zero(uint64_t slots, unsigned s)
{
	const unsigned char *p = (const unsigned char *)(uintptr_t)slots + 24 * s;
	for (int i = 0; i < 24; i++)
		if (p[i])
			return 0;
	return 1;
}

static void test_records(void)
{
	struct gx_map_spec hs = { "rh", GX_MAP_HASH, 4, 8, 4, 0 };
	struct gx_map *bad = NULL;
	GX_CHECK(gx_map__create(&hs, GX_MAP_F_RECORDS, &bad) == -EINVAL && !bad, "a record table is an array");
	struct gx_map *r = mk("rec", GX_MAP_ARRAY, 4, 24, 8, 0, GX_MAP_F_RECORDS | GX_MAP_F_SHM);
	struct gx_map *a = mk("plain", GX_MAP_ARRAY, 4, 8, 4, 0, 0);
	if (!r || !a)
		{ GX_CHECK(0, "record table maps"); return; }
	struct gx_map *maps[2] = { r, a };
	struct gx_dev_ops ops = { NULL, fd_alloc, fd_free, fd_htod, fd_dtoh, NULL, NULL, fd_zero, fd_htod, fd_sync };
	struct gx_devmaps *d;
	if (gx_devmaps__create(maps, 2, NULL, 0, 0, &ops, &d))
		{ GX_CHECK(0, "record table devmaps"); return; }
	uint64_t slots = gx_devmaps__devrt(d)->maps[0].data;
	static struct recs c;
	memset(&c, 0, sizeof(c));
	long left = -1;
	put_rec(slots, 1, 11);
	put_rec(slots, 2, 22);
	long n1 = gx_devmaps__drain_records(d, 0, rec_cb, &c, 0, &left);
	GX_CHECK(n1 == 0 && left == 2 && c.n == 0 && !slot_zero(slots, 1), "a slot seen for the first time waits (%ld, %ld left)",
		 n1, left);
	/* slot 2 still being written (a word landed since), slot 5 new */
	((uint64_t *)(uintptr_t)(slots + 24 * 2))[2] ^= 1;
	put_rec(slots, 5, 55);
	long n2 = gx_devmaps__drain_records(d, 0, rec_cb, &c, 0, &left);
	GX_CHECK(n2 == 1 && left == 2 && c.n == 1 && c.first[0] == 11 && !slot_zero(slots, 1) && !slot_zero(slots, 2),
		 "a slot unchanged since the last look is taken, left on the device; a changed one waits (%ld, %ld "
		 "left)",
		 n2, left);
	((uint64_t *)(uintptr_t)(slots + 24 * 2))[2] ^= 1; /* its last store */
	((uint64_t *)(uintptr_t)(slots + 24 * 2))[2] = 22 * 3;
	long n3 = gx_devmaps__drain_records(d, 0, rec_cb, &c, 0, &left);
	n3 += gx_devmaps__drain_records(d, 0, rec_cb, &c, 0, &left);
	GX_CHECK(n3 == 2 && left == 0 && c.n == 3 && c.first[1] == 55 && c.first[2] == 22,
		 "complete records taken once each, in slot order (%ld)", n3);
	/* a taken slot filled again by the device (a region come round): the
	 * new record is taken once it is stable; the host never writes the
	 * device's slots, so no clear can lose it */
	put_rec(slots, 1, 111);
	long n5 = gx_devmaps__drain_records(d, 0, rec_cb, &c, 0, &left);
	n5 += gx_devmaps__drain_records(d, 0, rec_cb, &c, 0, &left);
	n5 += gx_devmaps__drain_records(d, 0, rec_cb, &c, 0, &left);
	GX_CHECK(n5 == 1 && c.n == 4 && c.first[3] == 111, "a slot written again after it was taken: the new record once (%ld)",
		 n5);
	/* emptied, then the same bytes again: a new record */
	memset((char *)(uintptr_t)slots + 24, 0, 24);
	gx_devmaps__drain_records(d, 0, rec_cb, &c, 0, &left);
	put_rec(slots, 1, 111);
	long n6 = gx_devmaps__drain_records(d, 0, rec_cb, &c, 1, &left);
	GX_CHECK(n6 == 1 && c.n == 5, "a slot emptied and refilled with the same bytes: taken again (%ld)", n6);
	c.n = 3;
	put_rec(slots, 0, 100);
	put_rec(slots, 7, 700);
	long n4 = gx_devmaps__drain_records(d, 0, rec_cb, &c, 1, &left);
	GX_CHECK(n4 == 2 && left == 0 && c.n == 5 && c.first[3] == 100 && c.first[4] == 700,
		 "the last drain takes new slots in one call (%ld)", n4);
	GX_CHECK(gx_devmaps__drain_records(d, 0, rec_cb, &c, 1, NULL) == 0 && c.n == 5 && !c.bad,
		 "nothing taken twice, every record intact");
	/* flush and push leave a record table to the drainer */
	put_rec(slots, 3, 33);
	uint32_t k3 = 3;
	const uint64_t *hv = gx_map__lookup(r, &k3);
	GX_CHECK(gx_devmaps__flush(d) == 0 && hv && hv[0] == 0 && gx_devmaps__push(d) == 0 && !slot_zero(slots, 3),
		 "flush and push do not copy a record table");
	GX_CHECK(gx_devmaps__drain_records(d, 1, rec_cb, &c, 0, NULL) == -EINVAL &&
			 gx_devmaps__drain_records(d, 2, rec_cb, &c, 0, NULL) == -EINVAL &&
			 gx_devmaps__drain(d, 0, rec_cb, &c) == -EINVAL,
		 "drain_records only on record tables; a record table is not a ring");
	gx_devmaps__free(d);
	/* without async ops: the same (the drainer only copies from the device) */
	struct gx_dev_ops sync_ops = { NULL, fd_alloc, fd_free, fd_htod, fd_dtoh, NULL, NULL, NULL, NULL, NULL };
	struct gx_map *r2 = mk("rec2", GX_MAP_ARRAY, 4, 24, 4, 0, GX_MAP_F_RECORDS);
	if (r2 && !gx_devmaps__create(&r2, 1, NULL, 0, 0, &sync_ops, &d)) {
		uint64_t s2 = gx_devmaps__devrt(d)->maps[0].data;
		put_rec(s2, 3, 9);
		memset(&c, 0, sizeof(c));
		long m = gx_devmaps__drain_records(d, 0, rec_cb, &c, 1, NULL);
		GX_CHECK(m == 1 && c.n == 1 && c.first[0] == 9 && !slot_zero(s2, 3), "record table without async ops");
		gx_devmaps__free(d);
	} else {
		GX_CHECK(0, "record table without async ops: create");
	}
	gx_map__free(r2);
	gx_map__free(r);
	gx_map__free(a);
}

/* A constant map (global data the verifier folded): sealed, no writer can
 * change what the process reads: not the map API (-EPERM), not another
 * opener (-EROFS, even as root), not a write into the file (the process
 * reads a private copy), not a store through the pointer (it faults). */
static void test_seal(void)
{
	struct gx_map *m = mk("pol.rodata.cfg", GX_MAP_ARRAY, 4, 16, 1, 0, GX_MAP_F_SHM);
	if (!m)
		{ GX_CHECK(0, "seal: create"); return; }
	uint32_t k = 0;
	uint64_t v[2] = { 3, 7 }, racing[2] = { 9, 9 };
	gx_map__update(m, &k, racing, 0); /* someone wrote the file before the seal */
	const uint64_t *before = (const uint64_t *)(uintptr_t)m->l.data;
	struct stat st;
	GX_CHECK(!gx_map__is_const(m) && gx_map__seal(m, v, sizeof(v)) == 0 && gx_map__is_const(m) && !stat(m->path, &st) &&
			 (st.st_mode & 0777) == 0400 && (m->hdr->flags & GX_SHM_F_CONST),
		 "seal: marked GX_SHM_F_CONST, file 0400");
	const uint64_t *d = gx_map__lookup(m, &k);
	GX_CHECK(d && (const void *)d != before && d[0] == 3 && d[1] == 7,
		 "seal: a private copy of the bytes given, not of a write that came first");
	uint64_t w[2] = { 1000000, 1 };
	GX_CHECK(gx_map__update(m, &k, w, 0) == -EPERM, "seal: updates through the map refused (-EPERM)");
	struct gx_map *o = NULL;
	GX_CHECK(gx_map__open(m->path, 1, &o) == -EROFS && !o, "seal: nobody opens it for writing (-EROFS)");
	GX_CHECK(gx_map__open(m->path, 0, &o) == 0 && gx_map__is_const(o) && ((uint64_t *)gx_map__lookup(o, &k))[0] == 3,
		 "seal: read-only opens see it, and that it is constant");
	gx_map__free(o);
	/* the file itself, made writable again and written behind our back */
	int fd = chmod(m->path, 0600) ? -1 : open(m->path, O_WRONLY);
	bool wrote = fd >= 0 && pwrite(fd, w, sizeof(w), GX_SHM_DATA_OFF) == (ssize_t)sizeof(w);
	if (fd >= 0)
		close(fd);
	GX_CHECK(wrote && d[0] == 3 && d[1] == 7, "seal: a write into the file does not reach the process's copy");
	pid_t pid = fork();
	if (pid == 0) {
		signal(SIGSEGV, SIG_DFL); /* not the sanitizer's report */
		*(volatile uint64_t *)d = 1000000;
		_exit(0);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	GX_CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV, "seal: a store through the pointer faults");
	struct gx_map *a = mk("anon.rodata", GX_MAP_ARRAY, 4, 8, 1, 0, 0);
	uint64_t verified = 5;
	GX_CHECK(a && gx_map__seal(a, &verified, sizeof(verified)) == 0 && gx_map__is_const(a) &&
			 *(uint64_t *)gx_map__lookup(a, &k) == 5,
		 "seal: anonymous maps too, with the bytes the programs were verified with");
	gx_map__free(a);
	struct gx_map *h = mk("h", GX_MAP_HASH, 8, 8, 4, 0, 0);
	GX_CHECK(h && gx_map__seal(h, NULL, 0) == -EINVAL, "seal: arrays only");
	gx_map__free(h);
	char path[400];
	snprintf(path, sizeof(path), "%s", m->path);
	gx_map__free(m);
	GX_CHECK(access(path, F_OK) != 0, "seal: the owner still removes the file");
}

static int fixture(const char *d)
{
	setenv("GPUEXT_SHM_DIR", d, 1);
	struct gx_map *a = mk("fix.counts", GX_MAP_ARRAY, 4, 8, 4, 0, GX_MAP_F_SHM | GX_MAP_F_KEEP);
	struct gx_map *h = mk("fix.kernels", GX_MAP_HASH, 8, 8, 16, 0, GX_MAP_F_SHM | GX_MAP_F_KEEP);
	struct gx_map *s = mk("fix.persm", GX_MAP_PERSM_ARRAY, 4, 8, 2, 3, GX_MAP_F_SHM | GX_MAP_F_KEEP);
	/* constants under any name: .rodata, .rodata.cfg (issue 20), and a
	 * name that says nothing */
	static const char *const consts[] = { "fix.rodata", "fix.rodata.cfg", "fix.knobs" };
	for (int i = 0; i < 3; i++) {
		struct gx_map *c = mk(consts[i], GX_MAP_ARRAY, 4, 8, 1, 0, GX_MAP_F_SHM | GX_MAP_F_KEEP);
		uint64_t v0 = 64;
		if (!c || gx_map__seal(c, &v0, sizeof(v0)))
			return 1;
		gx_map__free(c);
	}
	if (!a || !h || !s)
		return 1;
	for (uint32_t i = 0; i < 4; i++) {
		uint64_t v = (i + 1) * 100;
		gx_map__update(a, &i, &v, 0);
	}
	uint64_t k = 0xabcdef, v = 3;
	gx_map__update(h, &k, &v, 0);
	for (unsigned sh = 0; sh < 3; sh++)
		*(uint64_t *)gx_map__shard_elem(s, sh, 1) = sh + 1;
	gx_map__free(a);
	gx_map__free(h);
	gx_map__free(s);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--fixture"))
		return fixture(argv[2]);
	snprintf(dir, sizeof(dir), "/tmp/gx_test_maps_%d", (int)getpid());
	setenv("GPUEXT_SHM_DIR", dir, 1);
	test_layout();
	test_array();
	test_hash();
	test_hash_concurrent();
	test_sharded();
	test_ring();
	test_shm();
	test_seal();
	test_devmaps();
	test_devring();
	test_records();
	rmdir(dir);
	return gx_test_done();
}
