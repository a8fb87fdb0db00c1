/* test_ring.c — the device -> host ring protocol on the host: the producer
 * code of mapimpl_internal.h (the same source the device helpers are built from)
 * against the consumers of ring.c (in place) and maps_dev.c (device rings,
 * with memcpy callbacks standing in for the copy engine).
 *
 * Checks the properties the tools rely on: records come out once, intact
 * and in order per producer; wrap-around pads records that would cross the
 * end; a full ring refuses without moving head; every refused record is
 * counted exactly (sharded counters summed); the overflow path settles
 * (rollback or late success) without leaving a hole; and all of it with
 * producer threads racing each other and a live consumer. */
#include <errno.h>
#include <sched.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "devbpf/gx_bpf.h"
#include "tests/gx_test.h"

static _Thread_local unsigned cur_sm; /* the producer's "SM": its drop shard */
#define gx_shard_index(m, type) 0
#define GX_RING_SHARD() cur_sm
static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
#define GX_RING_NOW() now_ns()
static long settles;
#define GX_RING_SETTLE_TRACE() __atomic_fetch_add(&settles, 1, __ATOMIC_RELAXED)
/* roomy hints on request, on rings of any size (the device: 2 MiB and up) */
static int roomy_on;
static long fast;
#define GX_RING_ROOMY() roomy_on
#define GX_RING_ROOMY_MIN 1
#define GX_RING_FAST_TRACE() __atomic_fetch_add(&fast, 1, __ATOMIC_RELAXED)
#include "devbpf/helpers/mapimpl_internal.h"

/* A record: producer id, its sequence number, then filler words derived
 * from both (so a torn or stale payload is detected). */
struct rec {
	uint32_t prod, seq;
	uint64_t w[];
};

static uint64_t fill(uint32_t prod, uint32_t seq, unsigned i)
{
	return ((uint64_t)prod << 48) ^ ((uint64_t)seq * 0x9e3779b97f4a7c15ull) ^ i;
}

/* words of filler for record seq of prod: 0..13 (16..120-byte payloads) */
static unsigned nwords(uint32_t prod, uint32_t seq)
{
	return (prod * 7 + seq * 5) % 14;
}

static long put(struct gx_ring *r, uint32_t prod, uint32_t seq)
{
	uint64_t buf[16];
	struct rec *p = (struct rec *)buf;
	unsigned n = nwords(prod, seq);
	p->prod = prod, p->seq = seq;
	for (unsigned i = 0; i < n; i++)
		p->w[i] = fill(prod, seq, i);
	return gx_ring_output(r, p, sizeof(*p) + n * 8);
}

#define MAXP 8
struct check {
	uint32_t next[MAXP]; /* lowest sequence number still possible per producer */
	uint64_t got[MAXP];
	long bad;
};

static int check_cb(void *ctx, unsigned type, const void *rec, size_t len)
{
	struct check *c = ctx;
	const struct rec *p = (const void *)((const struct gx_rec_hdr *)rec + 1);
	size_t pl = len - sizeof(struct gx_rec_hdr);
	if (type != GX_REC_DATA || pl < sizeof(*p) || p->prod >= MAXP) {
		c->bad++;
		return 0;
	}
	unsigned n = nwords(p->prod, p->seq);
	int ok = pl == sizeof(*p) + n * 8 && p->seq >= c->next[p->prod];
	for (unsigned i = 0; ok && i < n; i++)
		ok = p->w[i] == fill(p->prod, p->seq, i);
	if (!ok) {
		c->bad++;
		return 0;
	}
	c->next[p->prod] = p->seq + 1;
	c->got[p->prod]++;
	return 0;
}

static void test_wrap(void)
{
	static _Alignas(64) unsigned char mem[sizeof(struct gx_ring) + 1024];
	struct gx_ring *r = (struct gx_ring *)mem;
	gx_ring__init(r, 1024);
	struct check c = { 0 };
	long refused = 0, drained = 0, pads = 0;
	for (uint32_t seq = 0; seq < 3000; seq++) {
		uint64_t before = r->head;
		long o = put(r, 0, seq);
		refused += o == -ENOSPC;
		/* a reservation that crossed the end moved head by more than it */
		if (!o && r->head - before > GX_ROUND8(sizeof(struct rec) + nwords(0, seq) * 8 + 8))
			pads++;
		if (seq % 13 == 12)
			drained += gx_ring__drain(r, check_cb, &c);
	}
	drained += gx_ring__drain(r, check_cb, &c);
	GX_CHECK(!c.bad && c.got[0] == (uint64_t)drained && drained + refused == 3000 && pads > 20,
		 "wrap: %ld records over %llu laps intact and in order, %ld padded at the end, %ld refused",
		 drained, (unsigned long long)(r->head / 1024), pads, refused);
	GX_CHECK(r->drops == (uint64_t)refused && gx_ring__drops(r) == (uint64_t)refused,
		 "wrap: drops counted exactly (%llu of %ld)", (unsigned long long)r->drops, refused);
	int zero = 1;
	for (size_t i = 0; i < 1024; i++)
		zero &= mem[sizeof(struct gx_ring) + i] == 0;
	GX_CHECK(zero && r->tail == r->head, "wrap: consumed bytes cleared, tail caught up");
}

static void test_full(void)
{
	static _Alignas(64) unsigned char mem[sizeof(struct gx_ring) + 256];
	struct gx_ring *r = (struct gx_ring *)mem;
	gx_ring__init(r, 256);
	uint64_t v[3] = { 1, 2, 3 };
	int n = 0;
	while (gx_ring_output(r, v, sizeof(v)) == 0)
		n++;
	uint64_t head = r->head;
	long refused = 1;
	for (unsigned sm = 0; sm < 40; sm++) {
		cur_sm = sm;
		refused += gx_ring_output(r, v, sizeof(v)) == -ENOSPC;
	}
	cur_sm = 0;
	GX_CHECK(n == 8 && r->head == head && refused == 41,
		 "full: 8 records of 32 bytes fill 256, the next 41 are refused, head unmoved");
	unsigned used = 0;
	for (unsigned i = 0; i < GX_RING_DROP_SHARDS; i++)
		used += r->drop_sh[i] != 0;
	GX_CHECK(gx_ring__drops(r) == 41 && used == 40 && r->drop_sh[0] == 2,
		 "full: 41 drops in the counters of the 40 SMs that made them (sum %llu)",
		 (unsigned long long)gx_ring__drops(r));
	cur_sm = 100; /* an SM with no full hint yet */
	GX_CHECK(gx_ring_reserve(r, 512) == NULL && gx_ring_reserve(r, 12) == NULL && gx_ring__drops(r) == 41 &&
			 gx_ring_output(r, v, 0) == -ENOSPC && gx_ring__drops(r) == 42,
		 "full: bad lengths refused (an impossible length is no drop, an empty record is)");
	cur_sm = 0;
	struct check c = { 0 };
	long d = gx_ring__drain(r, NULL, &c);
	GX_CHECK(d == 8 && r->drops == 42 && gx_ring_output(r, v, sizeof(v)) == 0,
		 "full: room again after the drain");
	/* the full hint: once an SM found the ring full it refuses without
	 * looking for GX_RING_FULL_NS, until a drain clears the hints */
	cur_sm = 5;
	while (gx_ring_output(r, v, sizeof(v)) == 0)
		;
	uint64_t drops0 = gx_ring__drops(r), tail0 = r->tail;
	r->tail += 64; /* room, made behind the producers' back */
	long hinted = gx_ring_output(r, v, sizeof(v));
	cur_sm = 6; /* another SM has no hint: it looks and finds the room */
	long other = gx_ring_output(r, v, sizeof(v));
	cur_sm = 5;
	gx_ring__clear_hints(r);
	long cleared = gx_ring_output(r, v, sizeof(v));
	GX_CHECK(hinted == -ENOSPC && other == 0 && cleared == 0 && gx_ring__drops(r) == drops0 + 1,
		 "full: an SM that found the ring full refuses at once until the hints clear (%ld %ld %ld)", hinted,
		 other, cleared);
	r->tail = tail0;
	gx_ring__init(r, 256);
	cur_sm = 0;
	gx_ring_output(r, v, sizeof(v));
	/* an uncommitted record holds back the ones after it */
	struct gx_rec_hdr *h = gx_ring_reserve(r, 16);
	gx_ring_output(r, v, sizeof(v));
	long d1 = gx_ring__drain(r, NULL, NULL);
	if (h)
		gx_ring_commit(r, h, 16, GX_REC_DATA);
	long d2 = gx_ring__drain(r, NULL, NULL);
	GX_CHECK(h && d1 == 1 && d2 == 2, "full: consumer stops at an uncommitted record (%ld, %ld)", d1, d2);
}

/* The overflow slow path on its own: a reservation past the room. */
static void test_settle(void)
{
	static _Alignas(64) unsigned char mem[sizeof(struct gx_ring) + 256];
	struct gx_ring *r = (struct gx_ring *)mem;
	gx_ring__init(r, 256);
	r->head = 240; /* 240 bytes reserved, none consumed */
	uint64_t old = gx_ring_fadd(r, 32);
	GX_CHECK(gx_ring_settle(r, old, 32, 256) == 0 && r->head == 240,
		 "settle: the last overflowing reservation rolls head back");
	old = gx_ring_fadd(r, 32);
	r->tail = 64; /* the consumer made room meanwhile */
	GX_CHECK(gx_ring_settle(r, old, 32, 256) == 1 && r->head == 272,
		 "settle: a fresh tail with room makes the reservation good");
}

/* Two overflowing reservations unwind last in first out: the first one's
 * settle waits (in a thread) until the second has rolled back. */
struct settle_arg {
	struct gx_ring *r;
	uint64_t old;
	int ret;
};
static void *settle_thread(void *arg)
{
	struct settle_arg *a = arg;
	a->ret = gx_ring_settle(a->r, a->old, 32, 256);
	return NULL;
}

static void test_settle_lifo(void)
{
	static _Alignas(64) unsigned char mem[sizeof(struct gx_ring) + 256];
	struct gx_ring *r = (struct gx_ring *)mem;
	gx_ring__init(r, 256);
	r->head = 240;
	struct settle_arg a = { r, gx_ring_fadd(r, 32), -1 };
	uint64_t old_b = gx_ring_fadd(r, 32);
	pthread_t t;
	pthread_create(&t, NULL, settle_thread, &a);
	int rb = gx_ring_settle(r, old_b, 32, 256);
	pthread_join(t, NULL);
	GX_CHECK(rb == 0 && a.ret == 0 && r->head == 240,
		 "settle: two overflowing reservations roll back last in first out (head %llu)",
		 (unsigned long long)r->head);
	/* both overflow, then the consumer frees room for both: no hole */
	a = (struct settle_arg){ r, gx_ring_fadd(r, 32), -1 };
	old_b = gx_ring_fadd(r, 32);
	pthread_create(&t, NULL, settle_thread, &a);
	__atomic_store_n(&r->tail, 240, __ATOMIC_RELEASE); /* as if 240 bytes were consumed */
	rb = gx_ring_settle(r, old_b, 32, 256);
	pthread_join(t, NULL);
	GX_CHECK(rb == 1 && a.ret == 1 && r->head == 304,
		 "settle: room made while both wait: both reservations good, in order");
}

/* ---- producer threads ---- */
struct prod {
	struct gx_ring *r;
	uint32_t id, n;
	long refused;
	struct gx_devmaps *dm; /* device ring: its "device" copy */
};

static void *producer(void *arg)
{
	struct prod *p = arg;
	cur_sm = p->id * 3;
	for (uint32_t s = 0; s < p->n; s++) {
		if (put(p->r, p->id, s) == -ENOSPC)
			p->refused++;
		if (s % 32 == 31)
			sched_yield(); /* let the consumer in (2 cores) */
	}
	return NULL;
}

static volatile int stop_consumer;
struct cons {
	struct gx_ring *r;
	struct gx_devmaps *dm;
	struct check c;
	long n, errs;
};

static void *consumer(void *arg)
{
	struct cons *k = arg;
	while (!__atomic_load_n(&stop_consumer, __ATOMIC_ACQUIRE)) {
		long n = k->dm ? gx_devmaps__drain(k->dm, 0, check_cb, &k->c) : gx_ring__drain(k->r, check_cb, &k->c);
		if (n < 0)
			k->errs++;
		else
			k->n += n;
	}
	return NULL;
}

static void race(const char *what, struct gx_ring *r, struct gx_devmaps *dm, struct gx_ring *mir, int nprod,
		 uint32_t per)
{
	pthread_t pt[MAXP], ct;
	settles = 0;
	struct prod p[MAXP];
	struct cons k = { .r = r, .dm = dm };
	stop_consumer = 0;
	pthread_create(&ct, NULL, consumer, &k);
	for (int i = 0; i < nprod; i++) {
		p[i] = (struct prod){ .r = r, .id = (uint32_t)i, .n = per };
		pthread_create(&pt[i], NULL, producer, &p[i]);
	}
	long refused = 0;
	for (int i = 0; i < nprod; i++)
		pthread_join(pt[i], NULL), refused += p[i].refused;
	__atomic_store_n(&stop_consumer, 1, __ATOMIC_RELEASE);
	pthread_join(ct, NULL);
	long n = dm ? gx_devmaps__drain(dm, 0, check_cb, &k.c) : gx_ring__drain(r, check_cb, &k.c);
	k.n += n > 0 ? n : 0;
	uint64_t got = 0;
	int each = 1;
	for (int i = 0; i < nprod; i++) {
		got += k.c.got[i];
		each &= k.c.got[i] + (uint64_t)p[i].refused == per;
	}
	long total = (long)nprod * per;
	printf("# %s: %ld overflows settled in the slow path\n", what, settles);
	GX_CHECK(!k.errs && !k.c.bad && each && (long)got == k.n && k.n + refused == total && refused > 0 &&
			 k.n > 0,
		 "%s: %d producers x %u: %ld delivered once, intact, in order, %ld refused", what, nprod, per,
		 k.n, refused);
	GX_CHECK(mir->drops == (uint64_t)refused, "%s: drops exact (%llu counted, %ld refused)", what,
		 (unsigned long long)mir->drops, refused);
	GX_CHECK(r->head == r->tail && mir->tail == r->tail, "%s: nothing left reserved (head %llu, tail %llu)",
		 what, (unsigned long long)r->head, (unsigned long long)r->tail);
}

static void test_race_inplace(void)
{
	static _Alignas(64) unsigned char mem[sizeof(struct gx_ring) + 4096];
	struct gx_ring *r = (struct gx_ring *)mem;
	gx_ring__init(r, 4096);
	race("threads, in place", r, NULL, r, 6, 40000);
	/* the same with roomy hints: producers that skip the snapshot race
	 * the ones that take it and the consumer; nothing lost or torn, drops
	 * exact, no hole left */
	roomy_on = 1;
	fast = 0;
	gx_ring__init(r, 4096);
	race("threads, in place, roomy hints", r, NULL, r, 6, 40000);
	GX_CHECK(fast > 0, "roomy hints: %ld reservations took no snapshot", fast);
	roomy_on = 0;
}

static long roomy_bad;
static int roomy_cb(void *ctx, unsigned type, const void *rec, size_t len)
{
	size_t pl = len - sizeof(struct gx_rec_hdr);
	roomy_bad += type != GX_REC_DATA || pl != 7 * sizeof(uint64_t) ||
		     memcmp((const struct gx_rec_hdr *)rec + 1, ctx, pl);
	return 0;
}

/* Roomy hints (GX_RING_ROOMY): a snapshot that finds the ring at most half
 * full marks the SM's hint odd, and its next reservation skips the
 * snapshot; past half full no hint is set; a full hint (even) still
 * refuses; off, no reservation skips it. */
static void test_roomy(void)
{
	static _Alignas(64) unsigned char mem[sizeof(struct gx_ring) + 1024];
	struct gx_ring *r = (struct gx_ring *)mem;
	uint64_t v[7] = { 1, 2, 3, 4, 5, 6, 7 };
	cur_sm = 3;
	gx_ring__init(r, 1024);
	fast = 0;
	GX_CHECK(gx_ring_output(r, v, sizeof(v)) == 0 && gx_ring_output(r, v, sizeof(v)) == 0 && fast == 0 &&
			 r->full_until[3] == 0,
		 "roomy: off, every reservation takes the snapshot and no hint is set");
	gx_ring__init(r, 1024);
	roomy_on = 1;
	long a = gx_ring_output(r, v, sizeof(v));
	uint64_t h = r->full_until[3];
	long b = gx_ring_output(r, v, sizeof(v));
	GX_CHECK(a == 0 && (h & 1) && h > now_ns() - 1000000 && b == 0 && fast == 1,
		 "roomy: a half-empty ring marks the SM's hint odd, its next record skips the snapshot (%ld)", fast);
	cur_sm = 4; /* another SM has no hint yet: it looks */
	GX_CHECK(gx_ring_output(r, v, sizeof(v)) == 0 && fast == 1 && (r->full_until[4] & 1),
		 "roomy: hints are per SM");
	/* past half full: the snapshot path sets no roomy hint */
	gx_ring__clear_hints(r);
	while (r->head - r->tail <= 512)
		gx_ring_output(r, v, sizeof(v));
	gx_ring__clear_hints(r);
	long f0 = fast;
	GX_CHECK(gx_ring_output(r, v, sizeof(v)) == 0 && r->full_until[4] == 0 && fast == f0,
		 "roomy: more than half full, no hint and no skipped snapshot");
	/* full: an even hint refuses as before */
	while (gx_ring_output(r, v, sizeof(v)) == 0)
		;
	uint64_t fh = r->full_until[4];
	GX_CHECK(fh && !(fh & 1) && gx_ring_output(r, v, sizeof(v)) == -ENOSPC,
		 "roomy: a full ring still sets an even hint that refuses");
	long n = gx_ring__drain(r, roomy_cb, v);
	GX_CHECK(n > 0 && roomy_bad == 0, "roomy: every record drained intact (%ld, %ld bad)", n, roomy_bad);
	roomy_on = 0;
	cur_sm = 0;
}

/* Device ring: the "device" memory is host memory the producers write; the
 * ops copy with memcpy (the copy engine), queued ops run at once. */
static int o_alloc(void *c, size_t n, uint64_t *d)
{
	(void)c;
	void *p = aligned_alloc(64, (n + 63) & ~(size_t)63);
	*d = (uintptr_t)p;
	return p ? 0 : -ENOMEM;
}
static void o_free(void *c, uint64_t d)
{
	(void)c;
	free((void *)(uintptr_t)d);
}
static int o_htod(void *c, uint64_t d, const void *s, size_t n)
{
	(void)c;
	memcpy((void *)(uintptr_t)d, s, n);
	return 0;
}
/* word-wise like a DMA engine: each aligned 8-byte word read once */
static int o_dtoh(void *c, void *dst, uint64_t d, size_t n)
{
	(void)c;
	uint64_t *o = dst;
	const uint64_t *s = (const uint64_t *)(uintptr_t)d;
	for (size_t i = 0; i < n / 8; i++)
		o[i] = __atomic_load_n(&s[i], __ATOMIC_ACQUIRE);
	return 0;
}
static int o_dzero(void *c, uint64_t d, size_t n)
{
	(void)c;
	uint64_t *p = (uint64_t *)(uintptr_t)d;
	for (size_t i = 0; i < n / 8; i++)
		__atomic_store_n(&p[i], 0, __ATOMIC_RELAXED);
	return 0;
}
static int o_htod_async(void *c, uint64_t d, const void *s, size_t n)
{
	(void)c;
	/* the tail: published after the zeroing, as the stream orders it */
	if (n == 8) {
		__atomic_store_n((uint64_t *)(uintptr_t)d, *(const uint64_t *)s, __ATOMIC_RELEASE);
		return 0;
	}
	memcpy((void *)(uintptr_t)d, s, n);
	return 0;
}
static int o_sync(void *c)
{
	(void)c;
	return 0;
}

static void test_race_device(void)
{
	struct gx_map_spec s = { .name = "rb", .type = GX_MAP_RINGBUF, .max_entries = 8192 };
	struct gx_map *m = NULL;
	if (gx_map__create(&s, 0, &m)) {
		GX_CHECK(0, "device ring: create");
		return;
	}
	struct gx_dev_ops ops = { .alloc = o_alloc, .free = o_free, .htod = o_htod, .dtoh = o_dtoh,
				  .dzero_async = o_dzero, .htod_async = o_htod_async, .sync = o_sync };
	struct gx_devmaps *d = NULL;
	if (gx_devmaps__create(&m, 1, NULL, 0, 0, &ops, &d)) {
		GX_CHECK(0, "device ring: devmaps");
		gx_map__free(m);
		return;
	}
	const struct gx_devrt *rt = gx_devmaps__devrt(d);
	struct gx_ring *dr = (struct gx_ring *)(uintptr_t)rt->maps[0].data;
	GX_CHECK(!(dr->flags & GX_RING_F_SYS), "device ring: commits at GPU scope (no SYS flag)");
	race("threads, device ring", dr, d, gx_map__ring(m), 4, 30000);
	gx_devmaps__free(d);
	gx_map__free(m);
}

int main(void)
{
	test_wrap();
	test_full();
	test_settle();
	test_settle_lifo();
	test_roomy();
	test_race_inplace();
	test_race_device();
	return gx_test_done();
}
