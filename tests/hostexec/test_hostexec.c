/* test_hostexec — the user-space executor runs the hostbpf policies on
 * simulated event streams (no GPU) and must reach the decisions gpuext.ko
 * reaches in tests/kmod: LFU keeps hot regions, seq prefetches the rest of
 * the region and the next one, stride predicts, quota orders the tenant
 * over its quota first, prio rejects binds over its limit; broken objects
 * are refused with one line, misbehaving ones disabled after 16 errors. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <linux/btf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gpuext/gpu_ext.h"
#include "hostexec/gx_hostexec.h"
#include "hostexec/hx_internal.h"
#include "devbpf/gx_bpf.h"
#include "tests/gx_test.h"

#define MB (1ull << 20)
#define VA 0x7f0000000000ull

struct rec {
	int n, nhost;
	int ncold, nhot, hot_before_prefetch;
	uint64_t cold_va;
	uint64_t va[256], len[256];
	int nattr;
	uint32_t attr[16];
	uint64_t val[16];
};

static void on_prefetch(void *u, uint64_t va, uint64_t len, int to_host)
{
	struct rec *r = u;
	if (to_host) {
		r->nhost++;
		return;
	}
	if (r->n < 256) {
		r->va[r->n] = va;
		r->len[r->n] = len;
	}
	r->n++;
}

static void on_attr(void *u, uint64_t q, uint32_t attr, uint64_t v)
{
	struct rec *r = u;
	(void)q;
	if (r->nattr < 16) {
		r->attr[r->nattr] = attr;
		r->val[r->nattr] = v;
	}
	r->nattr++;
}

static void on_advise(void *u, uint64_t va, uint64_t len, int adv)
{
	struct rec *r = u;
	(void)len;
	if (adv == GX_HX_ADV_COLD) {
		r->ncold++;
		r->cold_va = va;
	} else if (adv == GX_HX_ADV_HOT) {
		r->nhot++;
		r->hot_before_prefetch = r->n; /* device prefetches seen so far */
	}
}

static const char *dir;
static int use_shm; /* second pass: maps in shared memory */

static struct gx_hx *mk(struct rec *r, uint32_t capacity, const char *policy, const char *knobs)
{
	char path[512];
	memset(r, 0, sizeof(*r));
	struct gx_hx_opts o = {.sz = sizeof(o), .capacity = capacity, .tgid = 4242, .shm_maps = use_shm,
			       .act = {.user = r, .prefetch = on_prefetch, .queue_attr = on_attr, .advise = on_advise}};
	struct gx_hx *hx = gx_hx__new(&o);
	if (policy) {
		snprintf(path, sizeof(path), "%s/%s.bpf.o", dir, policy);
		int err = gx_hx__load(hx, path, knobs);
		GX_CHECK(err == 0, "load %s (%d)", policy, err);
	}
	return hx;
}

static void test_load_all(void)
{
	const char *all[] = {"gx_fifo", "gx_lfu", "gx_mru", "gx_quota", "gx_seq", "gx_stride", "gx_tree", "gx_prio"};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		struct rec r;
		struct gx_hx *hx = mk(&r, 0, all[i], NULL);
		GX_CHECK(*gx_hx__mem_policy(hx) || *gx_hx__sched_policy(hx), "%s attached with a name", all[i]);
		gx_hx__free(hx);
	}
}

static void test_seq(void)
{
	struct rec r;
	struct gx_hx *hx = mk(&r, 0, "gx_seq", NULL);
	GX_CHECK(gx_hx__alloc(hx, VA, 8 * MB) == 0, "seq: alloc");
	int n = gx_hx__touch(hx, VA, 0);
	GX_CHECK(n == 1 && r.n == 1 && r.va[0] == VA && r.len[0] == 8 * MB,
		 "seq: a launch over 8 MiB prefetches it in one range (n=%d len=%llu)", n,
		 (unsigned long long)r.len[0]);
	GX_CHECK(gx_hx__global(hx, "nr_prefetch") == 4, "seq: one decision per region (%lld)",
		 (long long)gx_hx__global(hx, "nr_prefetch"));
	GX_CHECK(gx_hx__touch(hx, VA, 0) == 0, "seq: resident data is not prefetched again");
	gx_hx__sync(hx);
	GX_CHECK(gx_hx__touch(hx, VA, 0) == 1 && r.n == 2, "seq: after a host sync it is prefetched again");
	gx_hx__free(hx);

	hx = mk(&r, 0, "gx_seq", NULL);
	gx_hx__alloc(hx, VA, 8 * MB);
	n = gx_hx__touch(hx, VA + 300 * 4096, 4096);
	GX_CHECK(n == 1 && r.va[0] == VA + 300 * 4096 && r.len[0] == 212 * 4096 + 2 * MB,
		 "seq: fault in the upper half brings the rest of the region and the next one (len=%llu)",
		 (unsigned long long)r.len[0]);
	GX_CHECK(gx_hx__global(hx, "nr_next") == 1, "seq: nr_next counted");
	GX_CHECK(gx_hx__touch(hx, VA + 12 * MB, 4096) == -ENOENT, "seq: touch outside managed memory: -ENOENT");
	gx_hx__free(hx);

	hx = mk(&r, 0, "gx_seq", "ahead_pages=16,next_regions=0");
	gx_hx__alloc(hx, VA, 2 * MB);
	gx_hx__touch(hx, VA, 4096);
	GX_CHECK(r.n == 1 && r.len[0] == 16 * 4096, "seq: knob ahead_pages=16 limits the prefetch (%llu)",
		 (unsigned long long)r.len[0]);
	gx_hx__free(hx);
}

static void test_stride(void)
{
	struct rec r;
	struct gx_hx *hx = mk(&r, 0, "gx_stride", NULL);
	gx_hx__alloc(hx, VA, 64 * MB);
	for (int i = 0; i < 3; i++)
		gx_hx__touch(hx, VA + (uint64_t)i * 4 * MB, 4096);
	int hit = 0;
	for (int i = 0; i < r.n && i < 256; i++)
		hit |= (r.va[i] == VA + 12 * MB && r.len[i] >= 64 * 1024 ? 1 : 0) |
		       (r.va[i] <= VA + 16 * MB && r.va[i] + r.len[i] >= VA + 16 * MB + 64 * 1024 ? 2 : 0);
	GX_CHECK(hit == 3, "stride: 4 MiB stride predicts +12 MiB and +16 MiB (n=%d)", r.n);
	GX_CHECK(gx_hx__global(hx, "nr_predicted") == 1, "stride: one prediction after two equal strides");
	gx_hx__free(hx);

	/* random order: no two equal strides, nothing predicted */
	hx = mk(&r, 0, "gx_stride", NULL);
	gx_hx__alloc(hx, VA, 64 * MB);
	uint64_t order[] = {5, 1, 9, 2, 30, 7};
	for (int i = 0; i < 6; i++)
		gx_hx__touch(hx, VA + order[i] * 2 * MB, 4096);
	GX_CHECK(r.n == 0 && gx_hx__global(hx, "nr_predicted") == 0, "stride: random faults predict nothing");
	gx_hx__free(hx);
}

/* The shim's launch model: one fault per region and launch, no range asked
 * twice, small ranges left to demand paging (min_prefetch). */
static void test_launch_model(void)
{
	const char *pols[] = {"gx_seq", "gx_stride", "gx_tree"};
	for (int i = 0; i < 3; i++) {
		struct rec r;
		memset(&r, 0, sizeof(r));
		char path[512];
		struct gx_hx_opts o = {.sz = sizeof(o), .tgid = 4242, .min_prefetch = 2 * MB,
				       .act = {.user = &r, .prefetch = on_prefetch}};
		struct gx_hx *hx = gx_hx__new(&o);
		snprintf(path, sizeof(path), "%s/%s.bpf.o", dir, pols[i]);
		GX_CHECK(gx_hx__load(hx, path, NULL) == 0, "launch model: %s loads", pols[i]);
		gx_hx__alloc(hx, VA, 64 * MB);
		gx_hx__touch(hx, VA, 0);
		struct gx_hx_stats st;
		gx_hx__stats(hx, &st);
		uint64_t sum = 0;
		for (int k = 0; k < r.n && k < 256; k++)
			sum += r.len[k];
		GX_CHECK(st.faults <= 32 && st.calls <= 32 + 32, "launch model: %s: at most one fault per region (%llu faults, %llu calls)",
			 pols[i], (unsigned long long)st.faults, (unsigned long long)st.calls);
		GX_CHECK(sum <= 64 * MB && st.prefetch_bytes == sum, "launch model: %s: nothing asked twice (%llu bytes)",
			 pols[i], (unsigned long long)sum);
		for (int k = 0; k < r.n && k < 256; k++)
			if (r.len[k] < 2 * MB)
				GX_CHECK(0, "launch model: %s: range of %llu bytes under min_prefetch issued", pols[i],
					 (unsigned long long)r.len[k]);
		struct gx_hx_stats st2;
		gx_hx__touch(hx, VA, 0);
		gx_hx__stats(hx, &st2);
		GX_CHECK(st2.calls == st.calls, "launch model: %s: a second launch over resident data calls nothing",
			 pols[i]);
		gx_hx__sync(hx);
		gx_hx__touch(hx, VA, 0);
		gx_hx__stats(hx, &st2);
		GX_CHECK(st2.faults == st.faults + 32, "launch model: %s: after a sync the footprint faults again",
			 pols[i]);
		if (i == 0)
			GX_CHECK(r.n == 2 && r.len[0] == 64 * MB, "launch model: gx_seq prefetches the footprint in one call");
		else
			GX_CHECK(st.small > 0 && r.n == 0 && st2.prefetches == 0,
				 "launch model: %s: its small ranges are left to demand paging (%llu ranges)", pols[i],
				 (unsigned long long)st.small);
		gx_hx__free(hx);
	}
	/* max_coalesce: ranges leave in chunks during the walk */
	{
		struct rec r2;
		memset(&r2, 0, sizeof(r2));
		char p2[512];
		struct gx_hx_opts o2 = {.sz = sizeof(o2), .tgid = 4242, .min_prefetch = 2 * MB, .max_coalesce = 16 * MB,
					.act = {.user = &r2, .prefetch = on_prefetch}};
		struct gx_hx *h2 = gx_hx__new(&o2);
		snprintf(p2, sizeof(p2), "%s/gx_seq.bpf.o", dir);
		gx_hx__load(h2, p2, NULL);
		gx_hx__alloc(h2, VA, 64 * MB);
		gx_hx__touch(h2, VA, 0);
		GX_CHECK(r2.n == 4 && r2.len[0] == 16 * MB && r2.va[3] == VA + 48 * MB,
			 "launch model: max_coalesce=16 MiB sends a 64 MiB footprint in 4 chunks, in order (n=%d)", r2.n);
		gx_hx__free(h2);
	}
	/* a small allocation is prefetched whole even under min_prefetch */
	struct rec r;
	memset(&r, 0, sizeof(r));
	char path[512];
	struct gx_hx_opts o = {.sz = sizeof(o), .tgid = 4242, .min_prefetch = 2 * MB,
			       .act = {.user = &r, .prefetch = on_prefetch}};
	struct gx_hx *hx = gx_hx__new(&o);
	snprintf(path, sizeof(path), "%s/gx_seq.bpf.o", dir);
	gx_hx__load(hx, path, NULL);
	gx_hx__alloc(hx, VA + 4096, 32768);
	gx_hx__touch(hx, VA + 4096, 0);
	GX_CHECK(r.n == 1 && r.va[0] <= VA + 4096 && r.va[0] + r.len[0] >= VA + 4096 + 32768,
		 "launch model: a 32 KiB allocation is prefetched whole despite min_prefetch (n=%d)", r.n);
	gx_hx__free(hx);
}

static int resident_has(struct gx_hx *hx, uint64_t va)
{
	uint64_t v[64];
	size_t n = gx_hx__resident(hx, v, 64);
	for (size_t i = 0; i < n; i++)
		if (v[i] == va)
			return 1;
	return 0;
}

/* Region 0 touched often, then a scan of 7 cold regions with room for 4. */
static int hot_survives(const char *policy)
{
	struct rec r;
	struct gx_hx *hx = mk(&r, 4, policy, NULL);
	gx_hx__alloc(hx, VA, 16 * MB);
	gx_hx__touch(hx, VA, 2 * MB);
	for (int i = 0; i < 6; i++)
		gx_hx__touch(hx, VA, 2 * MB);
	for (int i = 1; i < 8; i++)
		gx_hx__touch(hx, VA + (uint64_t)i * 2 * MB, 2 * MB);
	int ok = resident_has(hx, VA);
	GX_CHECK(r.nhost >= 4, "%s: evictions move cold regions back to the host (%d)", policy ? policy : "none",
		 r.nhost);
	gx_hx__free(hx);
	return ok;
}

static void test_lfu(void)
{
	GX_CHECK(hot_survives("gx_lfu"), "lfu: the hot region stays resident through a cold scan");
	GX_CHECK(!hot_survives(NULL), "fifo (no policy): the hot region is evicted by the same scan");
	GX_CHECK(!hot_survives("gx_fifo"), "gx_fifo: the hot region is evicted by the same scan");
}

/* Eviction made durable: the victim gets cold advice (host preferred,
 * accessed-by device) with its move to the host; bringing it back removes
 * the advice before the prefetch. */
static void test_advise(void)
{
	struct rec r;
	struct gx_hx *hx = mk(&r, 2, "gx_seq", "next_regions=0");
	gx_hx__alloc(hx, VA, 8 * MB);
	for (int i = 0; i < 3; i++)
		gx_hx__touch(hx, VA + (uint64_t)i * 2 * MB, 2 * MB);
	GX_CHECK(r.ncold == 1 && r.cold_va == VA && r.nhost == 1,
		 "advise: the evicted region gets cold advice and moves to the host (cold=%d host=%d)", r.ncold, r.nhost);
	int before = r.n;
	gx_hx__touch(hx, VA, 2 * MB);
	GX_CHECK(r.nhot == 1 && r.hot_before_prefetch == before && r.n == before + 1,
		 "advise: bringing it back removes the advice, then prefetches (hot=%d)", r.nhot);
	gx_hx__touch(hx, VA, 2 * MB);
	GX_CHECK(r.nhot == 1, "advise: no advice for a region already hot");
	struct gx_hx_stats st;
	gx_hx__stats(hx, &st);
	GX_CHECK(st.evictions >= 2 && st.advice == (uint64_t)(r.ncold + r.nhot), "advise: counted in stats (%llu)",
		 (unsigned long long)st.advice);
	gx_hx__free(hx);
}

static void test_quota(void)
{
	struct rec r;
	struct gx_hx *hx = mk(&r, 0, "gx_quota", "quota=2");
	uint64_t v[8];
	gx_hx__alloc(hx, VA, 8 * MB);
	for (int i = 0; i < 4; i++)
		gx_hx__touch(hx, VA + (uint64_t)i * 2 * MB, 4096);
	size_t n = gx_hx__resident(hx, v, 8);
	GX_CHECK(n == 4 && v[0] == VA + 6 * MB && v[1] == VA + 4 * MB && v[2] == VA && v[3] == VA + 2 * MB,
		 "quota: regions over the quota are evicted first");
	gx_hx__free(hx);
}

static void test_prio(void)
{
	struct rec r;
	struct gx_hx *hx = mk(&r, 0, "gx_prio", "max_queues=2");
	GX_CHECK(gx_hx__queue_create(hx, 1, 6) == 0, "prio: first queue bound");
	GX_CHECK(r.nattr == 3 && r.attr[0] == GPU_ATTR_PRIORITY && r.val[0] == 6 &&
			 r.attr[1] == GPU_ATTR_TIMESLICE_US && r.val[1] == 1024 * 7 &&
			 r.attr[2] == GPU_ATTR_INTERLEAVE && r.val[2] == GPU_IL_HIGH,
		 "prio: priority, timeslice and interleave set from the requested priority");
	GX_CHECK(gx_hx__queue_create(hx, 2, 0) == 0, "prio: second queue bound");
	GX_CHECK(gx_hx__queue_create(hx, 3, 0) == -EPERM, "prio: third queue rejected (EPERM)");
	GX_CHECK(gx_hx__global(hx, "nr_rejected") == 1, "prio: nr_rejected counted");
	gx_hx__queue_destroy(hx, 1);
	GX_CHECK(gx_hx__global(hx, "nr_destroyed") == 1, "prio: task_destroy ran");
	gx_hx__free(hx);
}

static void test_refused(void)
{
	struct rec r;
	char path[512];
	struct gx_hx *hx = mk(&r, 0, NULL, NULL);
	GX_CHECK(gx_hx__load(hx, "/nonexistent/x.bpf.o", NULL) < 0, "refused: missing file");
	snprintf(path, sizeof(path), "/tmp/hx_garbage.%d", getpid());
	FILE *f = fopen(path, "w");
	fputs("not an object\n", f);
	fclose(f);
	GX_CHECK(gx_hx__load(hx, path, NULL) < 0, "refused: garbage file");
	/* a truncated policy */
	char src[512];
	snprintf(src, sizeof(src), "%s/gx_seq.bpf.o", dir);
	FILE *in = fopen(src, "rb");
	char buf[1500];
	size_t got = in ? fread(buf, 1, sizeof(buf), in) : 0;
	if (in)
		fclose(in);
	f = fopen(path, "wb");
	fwrite(buf, 1, got, f);
	fclose(f);
	GX_CHECK(gx_hx__load(hx, path, NULL) < 0, "refused: truncated object");
	unlink(path);
	snprintf(src, sizeof(src), "%s/gx_seq.bpf.o", dir);
	GX_CHECK(gx_hx__load(hx, src, "no_such_knob=1") == -EINVAL, "refused: unknown knob");
	GX_CHECK(gx_hx__load(hx, src, NULL) == 0, "seq loads after refusals");
	snprintf(src, sizeof(src), "%s/gx_tree.bpf.o", dir);
	GX_CHECK(gx_hx__load(hx, src, NULL) == -EEXIST, "refused: a second memory policy");
	/* the app runs on: events still work without a policy */
	struct gx_hx *none = mk(&r, 0, NULL, NULL);
	gx_hx__alloc(none, VA, 4 * MB);
	GX_CHECK(gx_hx__touch(none, VA, 0) == 0 && r.n == 0, "no policy: events run, nothing prefetched");
	gx_hx__free(none);
	gx_hx__free(hx);
}

/* A policy whose every call fails: disabled after 16 errors, FIFO goes on. */
static void disabled_after_errors(const char *policy, const char *what, int one_per_touch)
{
	struct rec r;
	struct gx_hx *hx = mk(&r, 4, policy, NULL);
	gx_hx__alloc(hx, VA, 64 * MB);
	for (int i = 0; i < 15; i++)
		gx_hx__touch(hx, VA + (uint64_t)i * 2 * MB, 4096);
	if (one_per_touch)
		GX_CHECK(gx_hx__mem_enabled(hx), "%s: still enabled after 15 errors", what);
	for (int i = 15; i < 32; i++)
		gx_hx__touch(hx, VA + (uint64_t)i * 2 * MB, 4096);
	GX_CHECK(!gx_hx__mem_enabled(hx), "%s: disabled after 16 errors", what);
	uint64_t v[8];
	size_t n = gx_hx__resident(hx, v, 8);
	GX_CHECK(n == 4 && v[0] == VA + 56 * MB && v[3] == VA + 62 * MB, "%s: FIFO applies afterwards", what);
	gx_hx__free(hx);
}

/* Maps and globals in the shm folder, readable by another process. */
static void test_shm(void)
{
	struct rec r;
	char path[600], d[512];
	struct gx_hx *hx = mk(&r, 0, "gx_seq", NULL);
	gx_hx__alloc(hx, VA, 8 * MB);
	gx_hx__touch(hx, VA, 0);
	gx_map_shm_dir(d, sizeof(d));
	snprintf(path, sizeof(path), "%s/%d-seq.bss", d, getpid());
	struct gx_map *m = NULL;
	int err = gx_map__open(path, 0, &m);
	GX_CHECK(err == 0, "shm: %s readable from outside (%d)", path, err);
	if (m) {
		uint32_t k = 0;
		uint64_t *v = gx_map__lookup(m, &k);
		GX_CHECK(v && *v == 4 && gx_hx__global(hx, "nr_prefetch") == 4,
			 "shm: the policy's nr_prefetch counter is visible (%llu)", v ? (unsigned long long)*v : 0ull);
		gx_map__free(m);
	}
	snprintf(path, sizeof(path), "%s/%d-seq.rodata", d, getpid());
	GX_CHECK(access(path, R_OK) == 0, "shm: knobs (.rodata) visible too");
	gx_hx__free(hx);
	GX_CHECK(access(path, F_OK) != 0, "shm: files removed when the executor is freed");
}

/* A control plane steers a running policy: its global data lives in the
 * shared mapping that `gpuext map update` writes, so a value written from
 * outside is what the policy's next event reads and updates. */
static void test_steer(void)
{
	struct rec r;
	char path[600], d[512];
	struct gx_hx *hx = mk(&r, 0, "gx_quota", "quota=16");
	gx_hx__alloc(hx, VA, 16 * MB);
	gx_hx__touch(hx, VA, 4096);
	long long before = gx_hx__global(hx, "nr_within");
	GX_CHECK(before >= 1, "steer: the policy counted its first event (%lld)", before);
	gx_map_shm_dir(d, sizeof(d));
	snprintf(path, sizeof(path), "%s/%d-quota.bss", d, getpid());
	struct gx_map *m = NULL;
	int err = gx_map__open(path, 1, &m);
	GX_CHECK(err == 0, "steer: %s writable from outside (%d)", path, err);
	if (m) {
		uint32_t k = 0;
		uint64_t *v = gx_map__lookup(m, &k); /* .bss: nr_within, nr_over */
		GX_CHECK(v && (long long)v[0] == before, "steer: the counter reads %lld from outside",
			 v ? (long long)v[0] : -1ll);
		if (v)
			__atomic_store_n(&v[0], 1000ull, __ATOMIC_RELEASE);
		gx_map__free(m);
	}
	gx_hx__touch(hx, VA + 2 * MB, 4096);
	long long after = gx_hx__global(hx, "nr_within");
	GX_CHECK(after > 1000, "steer: the next event counts on from the value written outside (%lld)", after);
	gx_hx__free(hx);
}

/* Hash maps under churn (LFU's spared map): the entry count is kept, not
 * rescanned, and deleted slots are rebuilt away between calls, so probes
 * stay short after any number of inserts and deletes. */
static void test_map_churn(void)
{
	struct hx_map m = {.type = 9 /* LRU hash */, .key_size = 8, .value_size = 4, .max_entries = 64};
	GX_CHECK(hx_map_init(&m) == 0, "map churn: LRU hash created");
	int bad = 0;
	for (uint64_t k = 0; k < 20000; k++) {
		uint32_t v = (uint32_t)k;
		bad += hx_map_update(&m, &k, &v, 0) != 0;
		if (k % 3 == 0)
			bad += hx_map_delete(&m, &k) != 0;
		hx_map_maintain(&m);
	}
	uint64_t last = 19999;
	uint32_t *v = (uint32_t *)hx_map_lookup(&m, &last);
	GX_CHECK(!bad && v && *v == 19999 && m.nr <= 64, "map churn: 20000 inserts/deletes, newest kept, %u live", m.nr);
	GX_CHECK(m.tombs < 32, "map churn: deleted slots rebuilt away (%u left)", m.tombs);
	hx_map_release(&m);
}

/* ---- native code vs the interpreter: the same decisions ---- */
struct trace {
	char buf[1 << 16]; /* the first 64 KiB, to locate a difference */
	size_t len;        /* all of it */
	uint64_t hash;     /* FNV-1a over all of it */
};

static void tr_add(struct trace *t, const char *fmt, unsigned long long a, unsigned long long b, unsigned long long c)
{
	char line[128];
	int n = snprintf(line, sizeof(line), fmt, a, b, c);
	if (!t->len && !t->hash)
		t->hash = 1469598103934665603ull;
	for (int i = 0; i < n; i++)
		t->hash = (t->hash ^ (uint8_t)line[i]) * 1099511628211ull;
	if (t->len + (size_t)n < sizeof(t->buf))
		memcpy(t->buf + t->len, line, (size_t)n);
	t->len += (size_t)n;
}

/* Index of the first difference (the trace length if none). */
static size_t tr_diff(const struct trace *a, const struct trace *b)
{
	size_t k = 0, lim = a->len < b->len ? a->len : b->len;
	if (lim > sizeof(a->buf))
		lim = sizeof(a->buf);
	while (k < lim && a->buf[k] == b->buf[k])
		k++;
	if (k == lim && a->len == b->len && a->hash == b->hash)
		return a->len;
	return k;
}
static void tr_prefetch(void *u, uint64_t va, uint64_t len, int h) { tr_add(u, "P %llx %llu %llu\n", va, len, (unsigned)h); }
static void tr_attr(void *u, uint64_t q, uint32_t a, uint64_t v) { tr_add(u, "A %llx %llu %llu\n", q, a, v); }
static void tr_advise(void *u, uint64_t va, uint64_t len, int a) { tr_add(u, "V %llx %llu %llu\n", va, len, (unsigned)a); }

/* One scripted event stream; returns the executor's stats. */
static void script(const char *policy, int native, struct trace *t, struct gx_hx_stats *st)
{
	char path[512];
	memset(t, 0, sizeof(*t));
	struct gx_hx_opts o = {.sz = sizeof(o), .tgid = 4242, .capacity = 6, .native = native,
			       .act = {.user = t, .prefetch = tr_prefetch, .queue_attr = tr_attr, .advise = tr_advise}};
	struct gx_hx *hx = gx_hx__new(&o);
	snprintf(path, sizeof(path), "%s/%s.bpf.o", dir, policy);
	GX_CHECK(gx_hx__load(hx, path, NULL) == 0, "native: %s loads (%s)", policy, native ? "native" : "interpreted");
	gx_hx__alloc(hx, VA, 64 * MB);
	gx_hx__alloc(hx, VA + 128 * MB, 3 * MB + 4096);
	uint64_t rnd = 12345;
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 8; i++) /* strided single pages */
			gx_hx__touch(hx, VA + (uint64_t)i * 4 * MB + (uint64_t)round * 8192, 4096);
		for (int i = 0; i < 12; i++) { /* pseudo-random pages */
			rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
			gx_hx__touch(hx, VA + (rnd >> 20) % (64 * MB) / 4096 * 4096, 4096);
		}
		gx_hx__touch(hx, VA + 128 * MB, 0); /* a whole small allocation */
		gx_hx__touch(hx, VA + 16 * MB + 300 * 4096, 0); /* to the end */
		for (int i = 0; i < 3; i++) /* hot region */
			gx_hx__touch(hx, VA, 2 * MB);
		gx_hx__sync(hx);
	}
	for (uint64_t q = 1; q <= 5; q++)
		tr_add(t, "Q %llu %llu %llu\n", q, (unsigned long long)(gx_hx__queue_create(hx, q, (int)q) + 100), 0);
	gx_hx__queue_destroy(hx, 2);
	uint64_t v[64];
	size_t n = gx_hx__resident(hx, v, 64);
	for (size_t i = 0; i < n; i++)
		tr_add(t, "R %llx %llu %llu\n", v[i], 0, 0);
	const char *globals[] = {"nr_prefetch", "nr_next", "nr_predicted", "nr_requests", "nr_faults", "nr_grown",
				 "nr_rejected", "nr_destroyed", "nr_evict", "nr_moved"};
	for (size_t i = 0; i < sizeof(globals) / sizeof(globals[0]); i++)
		tr_add(t, "G %llu %llu %llu\n", i, (unsigned long long)gx_hx__global(hx, globals[i]), 0);
	gx_hx__stats(hx, st);
	tr_add(t, "S %llu %llu %llu\n", st->calls, st->prefetches, st->evictions);
	gx_hx__free(hx);
}

/* A recorded event stream (GPUEXT_HOSTPOLICY_RECORD from a shim run),
 * replayed under `policy`; the same trace format as script(). */
static long replay(const char *policy, const char *file, int native, struct trace *t, struct gx_hx_stats *st)
{
	char path[512];
	memset(t, 0, sizeof(*t));
	struct gx_hx_opts o = {.sz = sizeof(o), .tgid = 4242, .capacity = 48, .native = native, .min_prefetch = 2 * MB,
			       .act = {.user = t, .prefetch = tr_prefetch, .queue_attr = tr_attr, .advise = tr_advise}};
	struct gx_hx *hx = gx_hx__new(&o);
	snprintf(path, sizeof(path), "%s/%s.bpf.o", dir, policy);
	if (gx_hx__load(hx, path, NULL)) {
		gx_hx__free(hx);
		return -1;
	}
	long n = gx_hx__replay(hx, file);
	uint64_t v[64];
	size_t k = gx_hx__resident(hx, v, 64);
	for (size_t i = 0; i < k; i++)
		tr_add(t, "R %llx %llu %llu\n", v[i], 0, 0);
	gx_hx__stats(hx, st);
	tr_add(t, "S %llu %llu %llu\n", st->calls, st->prefetches, st->evictions);
	gx_hx__free(hx);
	return n;
}

static void replay_diff(const char *file)
{
	const char *all[] = {"gx_fifo", "gx_lfu", "gx_mru", "gx_quota", "gx_seq", "gx_stride", "gx_tree", "gx_prio",
			     "hx_prioset"};
	static struct trace a, b;
	const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		struct gx_hx_stats sa, sb;
		long na = replay(all[i], file, 0, &a, &sa), nb = replay(all[i], file, 1, &b, &sb);
		size_t k = tr_diff(&a, &b);
		GX_CHECK(na > 0 && na == nb && sb.native_calls == sb.calls && sa.native_calls == 0 && sa.calls > 0,
			 "replay %s: %s: %ld recorded events, %llu handler calls, all native in the native run", base,
			 all[i], na, (unsigned long long)sa.calls);
		GX_CHECK(a.len == b.len && k == a.len && a.len > 0,
			 "replay %s: %s: native and interpreter make identical decisions (%zu bytes of trace, %llu prefetches, "
			 "%llu evictions; first difference at %zu)",
			 base, all[i], a.len, (unsigned long long)sa.prefetches, (unsigned long long)sa.evictions, k);
	}
}

static void test_native(void)
{
	const char *all[] = {"gx_fifo", "gx_lfu", "gx_mru", "gx_quota", "gx_seq", "gx_stride", "gx_tree", "gx_prio"};
	static struct trace a, b;
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		struct gx_hx_stats sa, sb;
		script(all[i], 0, &a, &sa);
		script(all[i], 1, &b, &sb);
		GX_CHECK(sa.native_calls == 0 && sb.native_calls == sb.calls && sb.calls > 0,
			 "native: %s runs as native code (%llu of %llu calls)", all[i],
			 (unsigned long long)sb.native_calls, (unsigned long long)sb.calls);
		size_t k = tr_diff(&a, &b);
		GX_CHECK(a.len == b.len && k == a.len && a.len > 0,
			 "native: %s makes the interpreter's decisions (%zu bytes of trace; first difference at %zu)",
			 all[i], a.len, k);
	}
}

/* ---- ordinary C: a static __noinline void helper, a bitmap indexed by a
 * bounded bit number and a bpf_loop callback (tests/hostexec/hx_ordinary) are
 * accepted and decide the same interpreted and native ---- */
static void test_ordinary(void)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/hx_ordinary.bpf.o", dir);
	for (int native = 0; native < 2; native++) {
		struct rec r;
		const char *how = native ? "native" : "interpreted";
		memset(&r, 0, sizeof(r));
		struct gx_hx_opts o = {.sz = sizeof(o), .tgid = 4242, .native = native,
				       .act = {.user = &r, .prefetch = on_prefetch, .advise = on_advise}};
		struct gx_hx *hx = gx_hx__new(&o);
		GX_CHECK(gx_hx__load(hx, path, NULL) == 0, "ordinary: hx_ordinary passes the verifier (%s)", how);
		gx_hx__alloc(hx, VA, 8 * MB);
		gx_hx__alloc(hx, VA + 1024 * MB, 2 * MB); /* region 512 of the bitmap: untracked */
		gx_hx__touch(hx, VA, 0);
		GX_CHECK(gx_hx__global(hx, "nr_first") == 4 && gx_hx__global(hx, "nr_bits") == 4 &&
				 gx_hx__global(hx, "nr_prefetch") == 4 && r.n == 1 && r.len[0] == 8 * MB,
			 "ordinary: 4 new regions set 4 bits and prefetch 8 MiB (%s: first %lld, bits %lld, %d ranges)",
			 how, (long long)gx_hx__global(hx, "nr_first"), (long long)gx_hx__global(hx, "nr_bits"), r.n);
		gx_hx__sync(hx);
		gx_hx__touch(hx, VA, 0);
		gx_hx__touch(hx, VA + 1024 * MB, 0);
		struct gx_hx_stats st;
		gx_hx__stats(hx, &st);
		GX_CHECK(gx_hx__global(hx, "nr_again") == 4 && gx_hx__global(hx, "nr_first") == 4 &&
				 gx_hx__global(hx, "nr_untracked") == 1 && st.calls == 9 &&
				 st.native_calls == (native ? st.calls : 0),
			 "ordinary: seen regions are not prefetched again, bit 512 is not tracked (%s: again %lld, "
			 "untracked %lld, %llu calls, %llu native)",
			 how, (long long)gx_hx__global(hx, "nr_again"), (long long)gx_hx__global(hx, "nr_untracked"),
			 (unsigned long long)st.calls, (unsigned long long)st.native_calls);
		gx_hx__free(hx);
	}
}

/* ---- unsafe policies: refused by the user-space verifier at load ---- */

/* The expected refusal (GX_EXPECT in tests/hostexec/unsafe/hx_expect.h). */
static int read_expect(const char *path, char *out, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), ok = -1;
	if (fd < 0)
		return -1;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	size_t strndx;
	Elf_Scn *scn = NULL;
	while (e && !elf_getshdrstrndx(e, &strndx) && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *n;
		Elf_Data *d;
		if (gelf_getshdr(scn, &sh) && (n = elf_strptr(e, strndx, sh.sh_name)) && !strcmp(n, ".gx_expect") &&
		    (d = elf_getdata(scn, NULL)) && d->d_buf && d->d_size) {
			snprintf(out, len, "%.*s", (int)d->d_size, (const char *)d->d_buf);
			ok = 0;
			break;
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return ok;
}

/* Load path with stderr (the refusal line) captured into line. */
static int load_captured(struct gx_hx *hx, const char *path, char *line, size_t len)
{
	FILE *tf = tmpfile();
	int saved = dup(2);
	fflush(stderr);
	dup2(fileno(tf), 2);
	int err = gx_hx__load(hx, path, NULL);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	line[0] = 0;
	rewind(tf);
	int nlines = 0;
	char buf[1024];
	while (fgets(buf, sizeof(buf), tf)) {
		if (!nlines++)
			snprintf(line, len, "%s", buf);
	}
	fclose(tf);
	size_t l = strlen(line);
	if (l && line[l - 1] == '\n')
		line[l - 1] = 0;
	return nlines == 1 ? err : (err ? err : -1) * 1000; /* exactly one line */
}

/* "refused: program NAME insn N: ..." (the verifier's form) */
static bool names_insn(const char *at)
{
	const char *p = at + strlen("refused: ");
	if (strncmp(p, "program ", 8))
		return false;
	p = strstr(p + 8, " insn ");
	if (!p || p[6] < '0' || p[6] > '9')
		return false;
	for (p += 6; *p >= '0' && *p <= '9'; p++)
		;
	return !strncmp(p, ": ", 2);
}

/* named: the refusal must name the program and instruction too */
static void refused_with(const char *path, const char *name, const char *expect, bool named)
{
	struct rec r;
	char line[1024], want[600];
	struct gx_hx *hx = mk(&r, 4, NULL, NULL);
	int err = load_captured(hx, path, line, sizeof(line));
	snprintf(want, sizeof(want), "refused: ");
	const char *at = strstr(line, want);
	GX_CHECK(err == -EINVAL && at && strstr(at, expect) && !*gx_hx__mem_policy(hx) && (!named || names_insn(at)),
		 "unsafe: %s refused with one line naming '%s'%s (got %d: %s)", name, expect,
		 named ? ", the program and the insn" : "", err, line);
	/* the application runs on without it: FIFO, no policy calls */
	gx_hx__alloc(hx, VA, 16 * MB);
	int n = gx_hx__touch(hx, VA, 0);
	struct gx_hx_stats st;
	gx_hx__stats(hx, &st);
	GX_CHECK(n == 0 && st.calls == 0 && r.n == 0, "unsafe: %s: events go on without a policy", name);
	gx_hx__free(hx);
}

/* A copy of policy's object whose BTF says struct `sname` is 8 bytes
 * larger (as if built against another gpu_ext.h). 0 or -1. */
static int patch_btf_struct(const char *src, const char *dst, const char *sname)
{
	size_t len;
	char *buf = NULL;
	FILE *f = fopen(src, "rb");
	if (!f)
		return -1;
	fseek(f, 0, SEEK_END);
	len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc(len);
	if (!buf || fread(buf, 1, len, f) != len) {
		fclose(f);
		free(buf);
		return -1;
	}
	fclose(f);
	int ok = -1;
	elf_version(EV_CURRENT);
	Elf *e = elf_memory(buf, len);
	size_t strndx;
	Elf_Scn *scn = NULL;
	while (e && !elf_getshdrstrndx(e, &strndx) && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *n;
		if (!gelf_getshdr(scn, &sh) || !(n = elf_strptr(e, strndx, sh.sh_name)) || strcmp(n, ".BTF"))
			continue;
		struct btf_header *h = (struct btf_header *)(buf + sh.sh_offset);
		uint8_t *types = (uint8_t *)h + h->hdr_len + h->type_off;
		const char *strs = (const char *)h + h->hdr_len + h->str_off;
		for (uint32_t p = 0; p + sizeof(struct btf_type) <= h->type_len;) {
			struct btf_type *t = (struct btf_type *)(types + p);
			uint32_t kind = BTF_INFO_KIND(t->info), vlen = BTF_INFO_VLEN(t->info);
			if (kind == BTF_KIND_STRUCT && !strcmp(strs + t->name_off, sname)) {
				t->size += 8;
				ok = 0;
				break;
			}
			size_t x = kind == BTF_KIND_INT ? 4 : kind == BTF_KIND_ARRAY ? sizeof(struct btf_array)
				 : kind == BTF_KIND_STRUCT || kind == BTF_KIND_UNION ? vlen * sizeof(struct btf_member)
				 : kind == BTF_KIND_ENUM ? vlen * sizeof(struct btf_enum)
				 : kind == BTF_KIND_FUNC_PROTO ? vlen * sizeof(struct btf_param)
				 : kind == BTF_KIND_VAR ? sizeof(struct btf_var)
				 : kind == BTF_KIND_DATASEC ? vlen * sizeof(struct btf_var_secinfo)
				 : kind == BTF_KIND_DECL_TAG ? 4 : kind == 19 ? vlen * 12 : 0;
			p += sizeof(*t) + x;
		}
	}
	if (e)
		elf_end(e);
	f = ok ? NULL : fopen(dst, "wb");
	if (f) {
		ok = fwrite(buf, 1, len, f) == len ? 0 : -1;
		fclose(f);
	}
	free(buf);
	return ok;
}

/* Every policy of tests/hostexec/safe (ordinary C, bpf_loop callbacks safe
 * for any count, pointers kept whole) passes the verifier (script: "loads")
 * and decides the same interpreted and native. */
static void test_safe_corpus(void)
{
	char d[600], name[300];
	static struct trace a, b;
	snprintf(d, sizeof(d), "%s/safe", dir);
	DIR *dp = opendir(d);
	int n = 0;
	for (struct dirent *de; dp && (de = readdir(dp));) {
		size_t l = strlen(de->d_name);
		if (l < 7 || strcmp(de->d_name + l - 6, ".bpf.o"))
			continue;
		snprintf(name, sizeof(name), "safe/%.*s", (int)(l - 6), de->d_name);
		struct gx_hx_stats sa, sb;
		script(name, 0, &a, &sa);
		script(name, 1, &b, &sb);
		size_t k = tr_diff(&a, &b);
		GX_CHECK(sa.calls > 0 && sb.native_calls == sb.calls && a.len == b.len && k == a.len,
			 "safe: %s decides the same interpreted and native (%llu calls, %zu bytes of trace)", name,
			 (unsigned long long)sa.calls, a.len);
		n++;
	}
	if (dp)
		closedir(dp);
	GX_CHECK(n >= 9, "safe: corpus of %d policies in %s", n, d);
}

static void test_unsafe_corpus(void)
{
	char d[600], path[900], expect[512];
	snprintf(d, sizeof(d), "%s/unsafe", dir);
	DIR *dp = opendir(d);
	int n = 0;
	for (struct dirent *de; dp && (de = readdir(dp));) {
		size_t l = strlen(de->d_name);
		if (l < 7 || strcmp(de->d_name + l - 6, ".bpf.o"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", d, de->d_name);
		if (read_expect(path, expect, sizeof(expect))) {
			GX_CHECK(0, "unsafe: %s has a GX_EXPECT", de->d_name);
			continue;
		}
		refused_with(path, de->d_name, expect, true);
		n++;
	}
	if (dp)
		closedir(dp);
	GX_CHECK(n >= 38, "unsafe: corpus of %d annotated programs in %s", n, d);
	/* the two older run-time cases are load-time refusals now */
	snprintf(path, sizeof(path), "%s/hx_unsafe.bpf.o", dir);
	refused_with(path, "hx_unsafe", "write into struct gpu_region (handler arguments are read-only)", true);
	snprintf(path, sizeof(path), "%s/hx_loop.bpf.o", dir);
	refused_with(path, "hx_loop", "infinite loop detected", true);
	/* the member's signature in the object's BTF must match what the
	 * executor passes (an object built against another gpu_ext.h) */
	char src[700], tmpf[] = "/tmp/hx_btf.XXXXXX";
	int fd = mkstemp(tmpf);
	snprintf(src, sizeof(src), "%s/gx_seq.bpf.o", dir);
	GX_CHECK(fd >= 0 && patch_btf_struct(src, tmpf, "gpu_fault") == 0, "unsafe: gx_seq copy with a larger gpu_fault");
	if (fd >= 0)
		close(fd);
	refused_with(tmpf, "gx_seq with another gpu_fault",
		     "struct gpu_mem_ops: member gpu_prefetch argument 2 is not struct gpu_fault * of 32 bytes", false);
	unlink(tmpf);
}

int main(int argc, char **argv)
{
	gx_test_find_jitlib();
	dir = argc > 1 ? argv[1] : getenv("GX_HB_DIR");
	if (!dir)
		dir = "build/hostbpf";
	if (argc > 3 && !strcmp(argv[2], "--replay")) { /* DIR --replay FILE...: differential replays only */
		for (int i = 3; i < argc; i++)
			replay_diff(argv[i]);
		return gx_test_done();
	}
	char tmpl[] = "/tmp/hx_shm.XXXXXX";
	const char *shmdir = mkdtemp(tmpl);
	if (shmdir)
		setenv("GPUEXT_SHM_DIR", shmdir, 1);
	for (use_shm = 0; use_shm < 2; use_shm++) {
		if (use_shm)
			printf("# again with maps in shared memory (%s)\n", shmdir ? shmdir : "?");
		test_load_all();
		test_seq();
		test_stride();
		test_lfu();
		test_advise();
		test_quota();
		test_prio();
	}
	use_shm = 1;
	test_shm();
	test_steer();
	use_shm = 0;
	if (shmdir)
		rmdir(shmdir);
	test_refused();
	test_launch_model();
	test_native();
	test_ordinary();
	test_safe_corpus();
	test_map_churn();
	disabled_after_errors("gx_bad", "gx_bad (bad returns, kfunc misuse)", 0);
	test_unsafe_corpus();
	{ /* a malformed recorded stream is refused with its line number */
		char tf[] = "/tmp/hx_ev.XXXXXX";
		int fd = mkstemp(tf);
		const char txt[] = "# v1\nalloc 0x7f0000000000 4194304\ntouch 0x7f0000000000 0\ntouch 12 x\n";
		struct rec r;
		struct gx_hx *hx = mk(&r, 0, "gx_seq", NULL);
		GX_CHECK(fd >= 0 && write(fd, txt, sizeof(txt) - 1) == (ssize_t)sizeof(txt) - 1, "replay: temp stream");
		close(fd);
		GX_CHECK(gx_hx__replay(hx, tf) == -EINVAL && r.n == 1, "replay: a malformed line stops the replay (-EINVAL)");
		GX_CHECK(gx_hx__replay(hx, "/nonexistent.ev") == -ENOENT, "replay: a missing stream is -ENOENT");
		gx_hx__free(hx);
		unlink(tf);
	}
	return gx_test_done();
}
