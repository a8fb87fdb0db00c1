/* test_tool_progs.c — the shipped tools' device programs on simulated
 * launches with known answers, through the native JIT and the reference
 * interpreter (the GPU runs the same translation as PTX).
 *   test_tool_progs TOOLS_DIR
 * Every warp of every block calls the program once, as the trampoline's
 * leader would (gx_host_env says where the warp is, gdev_ctx what the
 * trampoline fills). threadhist: per-SM blocks/warps/threads exact for block
 * shapes with a partial last warp and 3-D blocks; kernelretsnoop: one record
 * per block, a regular sample beyond 16384 blocks; launchlate: one record per
 * launch; memtrace: behind a C model of the rewriter's sample gate
 * (ptx-rewrite/site_sample_internal.h, a simulated %clock), the full trace
 * (1 in 1) equals every access's expected record exactly, in order, and the
 * sampled traces (1 in 3, 64, 1024) are subsequences of it with 1 in N of
 * the records within 6 standard deviations. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "devbpf/gx_bpf.h"
#include "common/gx_util.h"
#include "ptx-rewrite/site_sample_internal.h"
#include "tools/gx_tools.h"
#include "tools/tools_common.h"
#include "tests/devbpf/interp_shim.h"
#include "tests/gx_test.h"

#define SMS 4
#define MEM_REPS 40 /* memory accesses per warp (memtrace) */

struct launch {
	unsigned grid[3], block[3];
};
static const struct launch launches[] = {
	{ { 37, 1, 1 }, { 200, 1, 1 } }, /* 7 warps, the last one of 8 lanes */
	{ { 5, 3, 2 }, { 16, 4, 2 } },   /* 3-D: 128 threads, 4 warps */
	{ { 9, 1, 1 }, { 33, 1, 1 } },   /* 2 warps, the second of 1 lane */
};
/* kernelretsnoop's sampled launches (more than GX_KRS_FULL_BLOCKS blocks):
 * 70001 blocks record every 8th (8751), 300x250 every 8th (9375),
 * 131073 x 1 x 2 (3-D: z counts) every 32nd by linear index (8193) */
static const struct launch big[] = {
	{ { 70001, 1, 1 }, { 64, 1, 1 } },
	{ { 300, 250, 1 }, { 32, 1, 1 } },
	{ { 131073, 1, 2 }, { 32, 1, 1 } },
};
/* kernelretsnoop_all: every block of a launch over 16384 blocks */
static const struct launch big_all[] = { { { 20000, 1, 1 }, { 32, 1, 1 } } };
/* the launches simulate() runs */
static const struct launch *runs = launches;
static size_t nr_runs = GX_ARRAY_SIZE(launches);

typedef uint32_t (*hook_fn)(void *);
static unsigned mt_every;  /* the sample gate's N for the next run (0, 1: every access) */
static unsigned sim_clock; /* the simulated %clock the gate model reads */
/* A block probe at its exit sites (GDEV_HOOK_BLOCK in a kernel with
 * barriers): warp 0's lanes leave in two groups, lane 0 alone after the
 * others in even blocks, before them in odd ones; every other warp leaves
 * whole. Each group's leader calls the program with the group's mask. */
static int exit_split;
/* the per-launch cap's shift of the kernelretsnoop object under test */
static unsigned krs_shift = GX_KRS_FULL_SHIFT;

static int rec_count(void *ctx, unsigned type, const void *rec, size_t len)
{
	(void)rec, (void)len;
	if (type == GX_REC_DATA)
		++*(unsigned *)ctx;
	return 0;
}

/* What the site passes memtrace for access a of warp w of block b of
 * launch l: op, size and address vary by access and launch. */
static void mt_access(struct gdev_ctx *c, size_t l, unsigned b, unsigned w, unsigned a)
{
	c->addr = 0x1000 + 0x100000ull * l + 0x1000ull * (b % 64) + 128ull * w + 64ull * a;
	c->op = 1 + a % 4;
	c->size = 4u << (a % 3);
	c->space = a % 5 ? GDEV_SPACE_GLOBAL : GDEV_SPACE_GENERIC;
}

/* The rewriter's sample gate (site_sample.c) in C: the access reaches
 * the program? 3 sites; the simulated %clock moves on unevenly. */
static int mt_sampled(const struct gdev_ctx *c, unsigned b, unsigned w, unsigned a)
{
	sim_clock += 5 + (a * 7 + w) % 11;
	return mt_every <= 1 || ptx_sample_hash(sim_clock, w, b % SMS, ptx_sample_salt(c->kernel_id, a % 3)) <
					ptx_sample_limit(mt_every);
}

/* Run every launch; fn != NULL: the native function, else the interpreter. */
static int simulate(const struct gx_bpf_prog *p, hook_fn fn, struct gx_map **maps, size_t nm,
		    unsigned hook)
{
	struct gx_jit_map *jm = calloc(nm ? nm : 1, sizeof(*jm));
	int bad = 0;
	for (size_t i = 0; i < nm; i++)
		jm[i].host = maps[i];
	for (size_t l = 0; l < nr_runs; l++) {
		const struct launch *L = &runs[l];
		unsigned nt = L->block[0] * L->block[1] * L->block[2], nw = (nt + 31) / 32, b = 0;
		for (unsigned z = 0; z < L->grid[2]; z++)
			for (unsigned y = 0; y < L->grid[1]; y++)
				for (unsigned x = 0; x < L->grid[0]; x++, b++)
					for (unsigned w = 0; w < nw; w++) {
						unsigned lanes = w + 1 < nw ? 32 : nt - 32 * w, lin = 32 * w;
						unsigned tx = lin % L->block[0], ty = lin / L->block[0] % L->block[1],
							 tz = lin / (L->block[0] * L->block[1]);
						struct gdev_ctx c = {
							.kernel_id = 1000 + l, .launch_id = 5 + l, .hook = hook,
							.nr_active = lanes,
							.active_mask = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1,
							.ctaid_x = x, .ctaid_y = y, .ctaid_z = z,
							.nctaid_x = L->grid[0], .nctaid_y = L->grid[1], .nctaid_z = L->grid[2],
							.tid_x = tx, .tid_y = ty, .tid_z = tz,
							.ntid_x = L->block[0], .ntid_y = L->block[1], .ntid_z = L->block[2],
							.smid = b % SMS, .warpid = w,
						};
						gx_host_env = (struct gx_host_env){
							.smid = b % SMS, .warpid = w, .block_idx = { x, y, z },
							.thread_idx = { tx, ty, tz },
							.block_dim = { L->block[0], L->block[1], L->block[2] },
							.grid_dim = { L->grid[0], L->grid[1], L->grid[2] } };
						uint64_t r;
						unsigned full = c.active_mask, groups = exit_split && w == 0 && lanes > 1 ? 2 : 1;
						for (unsigned g = 0; g < groups; g++) {
							if (groups == 2) { /* lane 0 second in even blocks */
								int lane0 = (g == 1) == (b % 2 == 0);
								c.active_mask = lane0 ? 1u : full & ~1u;
								c.nr_active = lane0 ? 1 : lanes - 1;
								c.tid_x = lane0 ? tx : tx + 1;
							}
							for (unsigned a = 0; a < (hook == GDEV_HOOK_MEM ? MEM_REPS : 1); a++) {
								mt_access(&c, l, b, w, a);
								if (hook == GDEV_HOOK_MEM && !mt_sampled(&c, b, w, a))
									continue;
								if (fn)
									fn(&c);
								else
									bad += gx_test_interp_maps(gx_bpf_prog__insns(p),
												   gx_bpf_prog__insn_cnt(p), &c,
												   jm, &r) != 0;
							}
						}
					}
	}
	free(jm);
	return bad;
}

/* The tool's programs run both ways, each on its own maps; check() judges
 * each run. */
static void run_tool(const char *dir, const char *tool, unsigned hook,
		     void (*check)(const char *how, struct gx_map **maps, size_t n))
{
	char path[512], fname[128];
	snprintf(path, sizeof(path), "%s/%s.bpf.o", dir, tool);
	struct gx_bpf_object *obj = gx_bpf_object__open_file(path, NULL);
	struct gx_bpf_verify_opts vo = { .sz = sizeof(vo), .quiet = true };
	int ok = obj && !gx_bpf_object__verify(obj, &vo);
	GX_CHECK(ok, "%s loads and verifies", tool);
	if (!ok)
		return;
	/* a variant object (NAME_all, NAME_c1024, NAME_lw, NAME_prog, NAME_ring) holds the program
	 * NAME */
	char prog[64];
	snprintf(prog, sizeof(prog), "%s", tool);
	static const char *const sfx[] = { "_all", "_c1024", "_c256", "_lw", "_w1", "_gate", "_prog", "_counts", "_ring" };
	for (size_t i = 0; i < GX_ARRAY_SIZE(sfx); i++) {
		size_t pl = strlen(prog), sl = strlen(sfx[i]);
		if (pl > sl && !strcmp(prog + pl - sl, sfx[i]))
			prog[pl - sl] = 0;
	}
	const struct gx_bpf_prog *p = gx_bpf_object__find_prog(obj, prog);
	struct gx_map **mi, **mn;
	size_t ni, nn;
	ok = p && !gx_jit_object_maps(obj, 0, SMS, &mi, &ni) && !gx_jit_object_maps(obj, 0, SMS, &mn, &nn);
	GX_CHECK(ok, "%s: program and maps", tool);
	if (!ok)
		return;
	GX_CHECK(simulate(p, NULL, mi, ni, hook) == 0, "%s: interpreter ran every warp", tool);
	check("interpreter", mi, ni);
	struct gx_jit_object_opts o = { .sz = sizeof(o), .target = GX_JIT_NATIVE, .maps = mn, .nr_maps = nn };
	char err[256] = "";
	struct gx_jit *j = gx_jit_object(obj, &o, NULL, NULL, err, sizeof(err));
	snprintf(fname, sizeof(fname), "gxp_%s", prog);
	hook_fn fn = j ? (hook_fn)gx_jit__func(j, fname) : NULL;
	GX_CHECK(fn != NULL, "%s: native JIT (%s)", tool, j ? "ok" : err);
	if (fn) {
		simulate(p, fn, mn, nn, hook);
		check("native JIT", mn, nn);
	}
	gx_jit__free(j);
	gx_jit_object_maps_free(mi, ni);
	gx_jit_object_maps_free(mn, nn);
	gx_bpf_object__close(obj);
}

static void check_threadhist(const char *how, struct gx_map **maps, size_t n)
{
	uint64_t want[SMS][3] = { { 0 } }, got[SMS][3] = { { 0 } };
	for (size_t l = 0; l < GX_ARRAY_SIZE(launches); l++) {
		const struct launch *L = &launches[l];
		unsigned nb = L->grid[0] * L->grid[1] * L->grid[2];
		unsigned nt = L->block[0] * L->block[1] * L->block[2];
		for (unsigned b = 0; b < nb; b++) {
			want[b % SMS][0] += 1;
			want[b % SMS][1] += (nt + 31) / 32;
			want[b % SMS][2] += nt;
		}
	}
	struct gx_map *m = n ? maps[0] : NULL;
	int ok = m && m->l.type == GX_MAP_PERWARP_ARRAY && m->l.nr_shards == SMS * GX_WARP_SLOTS_PER_SM;
	const char *at = exit_split ? ", at exits, warp 0 in two lane groups" : "";
	GX_CHECK(ok, "threadhist (%s%s): per-warp-slot map", how, at);
	if (!ok)
		return;
	for (unsigned s = 0; s < m->l.nr_shards; s++) {
		const struct gx_th_val *v = gx_map__shard_elem(m, s, 0);
		got[s / GX_WARP_SLOTS_PER_SM][0] += v->blocks;
		got[s / GX_WARP_SLOTS_PER_SM][1] += v->warps;
		got[s / GX_WARP_SLOTS_PER_SM][2] += v->threads;
	}
	for (unsigned s = 0; s < SMS; s++)
		GX_CHECK(!memcmp(want[s], got[s], sizeof(want[s])),
			 "threadhist (%s%s): SM %u counts %llu blocks %llu warps %llu threads (want %llu %llu %llu)",
			 how, at, s, (unsigned long long)got[s][0], (unsigned long long)got[s][1],
			 (unsigned long long)got[s][2], (unsigned long long)want[s][0],
			 (unsigned long long)want[s][1], (unsigned long long)want[s][2]);
}

static unsigned ring_records(struct gx_map **maps, size_t n)
{
	unsigned c = 0;
	for (size_t i = 0; i < n; i++)
		if (maps[i]->l.type == GX_MAP_RINGBUF)
			gx_ring__drain(gx_map__ring(maps[i]), rec_count, &c);
	return c;
}

/* Each non-empty slot of the run's record tables: fn(ctx, slot, value,
 * value size). Returns the record tables seen. */
typedef void (*slot_fn)(void *ctx, uint32_t slot, const unsigned char *v, size_t vs);
static unsigned table_slots(struct gx_map **maps, size_t n, slot_fn fn, void *ctx)
{
	unsigned tables = 0;
	for (size_t i = 0; i < n; i++) {
		if (!maps[i]->records)
			continue;
		tables++;
		size_t vs = maps[i]->l.value_size;
		const unsigned char *d = (const unsigned char *)(uintptr_t)maps[i]->l.data;
		for (uint32_t s = 0; s < maps[i]->l.max_entries; s++) {
			const unsigned char *v = d + (size_t)s * maps[i]->l.value_stride;
			size_t z = 0;
			while (z < vs && !v[z])
				z++;
			if (z < vs)
				fn(ctx, s, v, vs);
		}
	}
	return tables;
}

/* a table slot handed on as the drainer does: a ring header, the value */
struct as_rec {
	gx_ring_cb cb;
	void *ctx;
};
static void slot_as_rec(void *ctx, uint32_t slot, const unsigned char *v, size_t vs)
{
	struct as_rec *a = ctx;
	unsigned char rec[sizeof(struct gx_rec_hdr) + 256];
	(void)slot;
	if (vs > 256)
		return;
	memcpy(rec + sizeof(struct gx_rec_hdr), v, vs);
	a->cb(a->ctx, GX_REC_DATA, rec, sizeof(struct gx_rec_hdr) + vs);
}

/* Every record of a run, from its rings and its record tables */
static void all_records(struct gx_map **maps, size_t n, gx_ring_cb cb, void *ctx)
{
	for (size_t i = 0; i < n; i++)
		if (maps[i]->l.type == GX_MAP_RINGBUF)
			gx_ring__drain(gx_map__ring(maps[i]), cb, ctx);
	struct as_rec a = { cb, ctx };
	table_slots(maps, n, slot_as_rec, &a);
}

static unsigned all_count(struct gx_map **maps, size_t n)
{
	unsigned c = 0;
	all_records(maps, n, rec_count, &c);
	return c;
}

/* kernelretsnoop's default build: its records in its record table, each in
 * the slot of its launch's region its place in the launch's sample names
 * (tools_common.h), nothing in a ring; the ring builds: no table */
static int krs_table; /* the object under test writes the table */
static void krs_slot(void *ctx, uint32_t s, const unsigned char *v, size_t vs)
{
	unsigned *misplaced = ctx;
	struct gx_krs_rec k;
	memcpy(&k, v, sizeof(k) < vs ? sizeof(k) : vs);
	uint64_t nb = (uint64_t)k.nctaid[0] * k.nctaid[1] * (k.nctaid[2] & GX_KRS_NZ_MASK);
	uint64_t lin = k.ctaid[0] + (uint64_t)k.nctaid[0] * (k.ctaid[1] + (uint64_t)k.nctaid[1] * k.ctaid[2]);
	*misplaced += vs != sizeof(k) || s != gx_krs_table_slot(k.launch_id, gx_krs_sample_index(lin, nb, GX_KRS_TABLE_SHIFT));
}
static void check_krs_place(const char *how, struct gx_map **maps, size_t n)
{
	/* (rings counted for the table build only: counting drains them) */
	unsigned misplaced = 0, in_rings = krs_table ? ring_records(maps, n) : 0;
	unsigned tables = table_slots(maps, n, krs_slot, &misplaced);
	for (size_t i = 0; i < n; i++)
		misplaced += maps[i]->records && maps[i]->l.max_entries != GX_KRS_TABLE_SLOTS;
	if (krs_table)
		GX_CHECK(tables == 1 && !misplaced && !in_rings,
			 "kernelretsnoop (%s): records in the slots of their launches' regions (%u misplaced, %u in "
			 "rings)",
			 how, misplaced, in_rings);
	else
		GX_CHECK(tables == 0, "kernelretsnoop (%s): a ring build has no record table", how);
}

static int krs_want_counts; /* the object under test has krs_counts */
static void check_krs(const char *how, struct gx_map **maps, size_t n)
{
	check_krs_place(how, maps, n);
	unsigned want = 0, got = all_count(maps, n);
	for (size_t l = 0; l < GX_ARRAY_SIZE(launches); l++)
		want += launches[l].grid[0] * launches[l].grid[1] * launches[l].grid[2];
	GX_CHECK(got == want, "kernelretsnoop (%s): one record per block (%u of %u)", how, got, want);
	/* krs_counts (kernelretsnoop_counts only): once per launch, by block 0
	 * (every block counting made a launch's blocks contend on one counter
	 * on the GPU) */
	if (!krs_want_counts)
		return;
	struct gx_map *cm = NULL;
	for (size_t i = 0; i < n; i++)
		if (maps[i]->l.type == GX_MAP_HASH)
			cm = maps[i];
	int ok = cm != NULL;
	for (size_t l = 0; ok && l < GX_ARRAY_SIZE(launches); l++) {
		uint64_t kid = 1000 + l;
		const struct gx_krs_count *c = gx_map__lookup(cm, &kid);
		ok = c && c->launches == 1 &&
		     c->blocks == (uint64_t)launches[l].grid[0] * launches[l].grid[1] * launches[l].grid[2];
	}
	GX_CHECK(ok, "kernelretsnoop (%s): krs_counts has each kernel's launch once, with its grid's blocks", how);
}

/* The sampled launches: exactly the blocks whose linear index is a multiple
 * of the launch's sample step, each once. */
static int krs_sampled(void *ctx, unsigned type, const void *rec, size_t len)
{
	unsigned *c = ctx; /* [0] records, [1] off the sample or malformed */
	if (type != GX_REC_DATA)
		return 0;
	/* the whole record: header, then the payload */
	const struct gx_krs_rec *k = (const void *)((const struct gx_rec_hdr *)rec + 1);
	len -= len < sizeof(struct gx_rec_hdr) ? len : sizeof(struct gx_rec_hdr);
	/* the cap's tag (a lower cap's object) in nctaid[2]'s top byte */
	unsigned sh = gx_krs_rec_shift(k->nctaid[2]);
	uint64_t n = (uint64_t)k->nctaid[0] * k->nctaid[1] * (k->nctaid[2] & GX_KRS_NZ_MASK);
	uint64_t lin = k->ctaid[0] + (uint64_t)k->nctaid[0] * (k->ctaid[1] + (uint64_t)k->nctaid[1] * k->ctaid[2]);
	c[0]++;
	c[1] += len < sizeof(*k) || sh != krs_shift || (lin & gx_krs_sample_mask_at(n, sh)) || lin >= n;
	return 0;
}

static void check_krs_sampled(const char *how, struct gx_map **maps, size_t n)
{
	unsigned c[2] = { 0, 0 }, want = 0;
	for (size_t l = 0; l < GX_ARRAY_SIZE(big); l++) {
		uint64_t nb = (uint64_t)big[l].grid[0] * big[l].grid[1] * big[l].grid[2];
		want += (unsigned)((nb - 1) / (gx_krs_sample_mask_at(nb, krs_shift) + 1) + 1);
	}
	check_krs_place(how, maps, n);
	all_records(maps, n, krs_sampled, c);
	/* 16,384: 70001 blocks every 8th, 300x250 every 8th, 131073x1x2 every
	 * 32nd; 1,024: every 128th, 128th, 512th; 256: 512th, 512th, 2048th */
	unsigned exp = krs_shift == 14 ? 8751 + 9375 + 8193 : krs_shift == 10 ? 547 + 586 + 513 : 137 + 147 + 129;
	GX_CHECK(want == exp && c[0] == want && c[1] == 0,
		 "kernelretsnoop (%s): launches over %u blocks record a regular sample, tagged with the cap (%u of "
		 "%u, %u off the sample or untagged)",
		 how, 1u << krs_shift, c[0], want, c[1]);
}

/* The device's test (gx_krs_skip: lowest set bit against (blocks - 1) >> 14)
 * and the formatter's mask (gx_krs_sample_mask) agree on every block of
 * grids of 1..70000 blocks and of large ones up to 2^62. */
static void check_krs_rule(void)
{
	uint64_t bad = 0, tried = 0, x = 88172645463325252ull;
	for (uint64_t n = 1; n <= 70000; n += n < 20000 ? 1 : 7)
		for (uint64_t lin = 0; lin < n; lin += 1 + lin / 64, tried++)
			bad += gx_krs_skip(lin, n) != ((lin & gx_krs_sample_mask(n)) != 0);
	for (int i = 0; i < 200000; i++, tried++) { /* xorshift64: big grids, any block */
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		uint64_t n = (x >> (x & 63 ? x & 63 : 1)) | 1, lin = (x * 0x9e3779b97f4a7c15ull) % n;
		n = n > (1ull << 62) ? 1ull << 62 : n;
		lin &= i & 1 ? ~0ull << (i % 40) : ~0ull; /* many trailing zeros too */
		lin %= n;
		bad += gx_krs_skip(lin, n) != ((lin & gx_krs_sample_mask(n)) != 0);
	}
	for (unsigned sh = 8; sh <= 10; sh += 2) /* the lower caps (GX_KRS_CAP 256, 1024) */
		for (uint64_t n = 1; n <= 70000; n += n < 5000 ? 1 : 13)
			for (uint64_t lin = 0; lin < n; lin += 1 + lin / 64, tried++)
				bad += gx_krs_skip_at(lin, n, sh) != ((lin & gx_krs_sample_mask_at(n, sh)) != 0);
	/* the table's slot within a launch's region: block k of the sample
	 * (its linear index over the sample step), below 2^shift */
	for (unsigned sh = 8; sh <= 14; sh += 6)
		for (uint64_t n = 1; n <= 70000; n += n < 3000 ? 1 : 13)
			for (uint64_t lin = 0; lin < n; lin += 1 + lin / 64, tried++) {
				uint64_t m = gx_krs_sample_mask_at(n, sh);
				if (lin & m)
					continue;
				bad += gx_krs_sample_index(lin, n, sh) != lin / (m + 1) ||
				       gx_krs_sample_index(lin, n, sh) >= (1u << sh);
			}
	bad += gx_krs_sample_index(5ull << 40, 1ull << 62, 8) != 5ull << 40 >> 54;
	GX_CHECK(bad == 0 && gx_krs_sample_mask_at(256, 8) == 0 && gx_krs_sample_mask_at(257, 8) == 1 &&
			 gx_krs_rec_shift(0) == GX_KRS_FULL_SHIFT && gx_krs_rec_shift(8u << 24 | 65535) == 8 &&
			 gx_krs_sample_mask(16384) == 0 && gx_krs_sample_mask(16385) == 1 &&
			 gx_krs_sample_mask(262144) == 15 && gx_krs_sample_mask(262145) == 31,
		 "kernelretsnoop: the device's skip test, the formatter's sample mask and the table's sample index "
		 "agree (%llu of %llu differ)",
		 (unsigned long long)bad, (unsigned long long)tried);
}

static void check_krs_all(const char *how, struct gx_map **maps, size_t n)
{
	unsigned got = all_count(maps, n);
	GX_CHECK(got == 20000, "kernelretsnoop_all (%s): every block of a 20000-block launch (%u)", how, got);
}

/* launchlate: launch l's record {kernel, time, SM | blocks, launch id} in
 * slot (launch id mod the table's size) of its record table, nothing else
 * written there */
struct ll_got {
	unsigned got, bad;
};
static void ll_slot(void *ctx, uint32_t s, const unsigned char *v, size_t vs)
{
	struct ll_got *g = ctx;
	struct gx_ll_rec r;
	memcpy(&r, v, sizeof(r) < vs ? sizeof(r) : vs);
	size_t l = r.kernel_id - 1000;
	if (vs != sizeof(r) || l >= GX_ARRAY_SIZE(launches) || s != (uint32_t)(5 + l) || r.launch_id != 5 + l || !r.ts ||
	    r.smid != 0 || r.nblocks != launches[l].grid[0] * launches[l].grid[1] * launches[l].grid[2])
		g->bad++;
	else
		g->got++;
}
static void check_ll(const char *how, struct gx_map **maps, size_t n)
{
	struct ll_got g = { 0, 0 };
	unsigned tables = table_slots(maps, n, ll_slot, &g), other = ring_records(maps, n);
	GX_CHECK(tables == 1 && g.got == GX_ARRAY_SIZE(launches) && !g.bad && !other,
		 "launchlate (%s): one record per launch in its slot of the record table (%u of %zu, %u wrong, %u in "
		 "rings)",
		 how, g.got, GX_ARRAY_SIZE(launches), g.bad, other);
}

static void check_ll_ring(const char *how, struct gx_map **maps, size_t n)
{
	unsigned got = ring_records(maps, n);
	GX_CHECK(got == GX_ARRAY_SIZE(launches), "launchlate_ring (%s): one ring record per launch (%u of %zu)", how,
		 got, GX_ARRAY_SIZE(launches));
}

/* memtrace's record of one access, as the checks compare it (no time) */
struct mt_key {
	uint64_t kernel_id, addr;
	uint32_t size, op, space, smid, nr_active, ctaid_x;
};

struct mt_got {
	struct mt_key *k;
	size_t n, cap;
	unsigned bad; /* malformed records */
};

static int mt_rec(void *ctx, unsigned type, const void *rec, size_t len)
{
	struct mt_got *g = ctx;
	if (type != GX_REC_DATA)
		return 0;
	if (len < sizeof(struct gx_rec_hdr) + sizeof(struct gx_mt_rec)) {
		g->bad++;
		return 0;
	}
	const struct gx_mt_rec *m = (const void *)((const struct gx_rec_hdr *)rec + 1);
	if (g->n == g->cap) {
		size_t cap = g->cap ? 2 * g->cap : 1024;
		struct mt_key *k = realloc(g->k, cap * sizeof(*k));
		if (!k) {
			g->bad++;
			return 1;
		}
		g->k = k, g->cap = cap;
	}
	g->k[g->n++] =
		(struct mt_key){ m->kernel_id, m->addr, m->size, m->op, m->space, m->smid, m->nr_active, m->ctaid_x };
	return 0;
}

/* Every access of the launches, in the order simulate() makes them: the
 * full trace's golden. */
static size_t mt_expected(struct mt_key *out)
{
	size_t n = 0;
	for (size_t l = 0; l < GX_ARRAY_SIZE(launches); l++) {
		const struct launch *L = &launches[l];
		unsigned nt = L->block[0] * L->block[1] * L->block[2], nw = (nt + 31) / 32, b = 0;
		for (unsigned z = 0; z < L->grid[2]; z++)
			for (unsigned y = 0; y < L->grid[1]; y++)
				for (unsigned x = 0; x < L->grid[0]; x++, b++)
					for (unsigned w = 0; w < nw; w++)
						for (unsigned a = 0; a < MEM_REPS; a++) {
							struct gdev_ctx c = { 0 };
							mt_access(&c, l, b, w, a);
							if (out)
								out[n] = (struct mt_key){ 1000 + l,
											  c.addr,
											  c.size,
											  c.op,
											  c.space,
											  b % SMS,
											  w + 1 < nw ? 32 : nt - 32 * w,
											  x };
							n++;
						}
	}
	return n;
}

/* memtrace_prog (GX_MT_GATE=0) samples in its program (1 in 1024): the
 * gate model then passes every access to it */
static unsigned mt_prog_every;

/* memtrace behind the gate model: N <= 1 records every access exactly as
 * expected, in order; otherwise the records are a subsequence of that
 * trace (each one an access that happened, with its own fields) and their
 * count lies within 6 standard deviations of accesses / N. */
static void check_mt(const char *how, struct gx_map **maps, size_t n)
{
	size_t calls = mt_expected(NULL);
	struct mt_key *want = calloc(calls, sizeof(*want));
	struct mt_got got = { 0 };
	for (size_t i = 0; i < n; i++)
		if (maps[i]->l.type == GX_MAP_RINGBUF)
			gx_ring__drain(gx_map__ring(maps[i]), mt_rec, &got);
	if (!want) {
		GX_CHECK(0, "memtrace (%s): out of memory", how);
		free(got.k);
		return;
	}
	mt_expected(want);
	size_t j = 0, in_order = 0;
	for (size_t i = 0; i < got.n; i++) {
		while (j < calls && memcmp(&want[j], &got.k[i], sizeof(want[j])))
			j++;
		if (j < calls)
			in_order++, j++;
	}
	unsigned every = mt_prog_every ? mt_prog_every : mt_every > 1 ? mt_every : 1;
	if (every == 1) {
		GX_CHECK(!got.bad && got.n == calls && in_order == calls,
			 "memtrace (%s, full trace): %zu records of %zu accesses, %zu equal to the golden in order",
			 how, got.n, calls, in_order);
	} else {
		double mean = (double)calls / every, sd = 0;
		for (int i = 0; i < 60; i++) /* sqrt by Newton: no libm for one check */
			sd = i ? (sd + mean * (1 - 1.0 / every) / sd) / 2 : mean + 1;
		int ok = !got.bad && in_order == got.n && got.n >= mean - 6 * sd - 1 && got.n <= mean + 6 * sd + 1;
		GX_CHECK(ok,
			 "memtrace (%s, %s 1 in %u): %zu records, %zu of them in the full trace in order; %zu "
			 "accesses (expected %.1f +- %.1f)",
			 how, mt_prog_every ? "the program's own sampling" : "gate", every, got.n, in_order, calls, mean, sd);
	}
	free(want);
	free(got.k);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: test_tool_progs TOOLS_DIR\n");
		return 2;
	}
	static _Alignas(64) unsigned char ring[sizeof(struct gx_ring) + (1 << 16)];
	gx_ring__init((struct gx_ring *)ring, 1 << 16);
	gx_host_ring = (struct gx_ring *)ring;
	/* every load-time variant the shim knows (gx_tools.h) is built and holds
	 * its tool's program */
	size_t nv, bad = 0;
	const struct gx_tool_variant *tv = gx_tool_variants(&nv);
	for (size_t i = 0; i < nv; i++) {
		char path[512];
		snprintf(path, sizeof(path), "%s/%s.bpf.o", argv[1], tv[i].object);
		struct gx_bpf_object *o = gx_bpf_object__open_file(path, NULL);
		bad += !o || !gx_bpf_object__find_prog(o, tv[i].tool);
		if (o)
			gx_bpf_object__close(o);
	}
	GX_CHECK(nv == 9 && bad == 0,
		 "the tools' load-time variants are built and hold their tool's program (%zu of %zu bad)", bad, nv);
	/* threadhist is a block probe: at entry, and at exits where warp 0
	 * leaves in two lane groups (one block counted once either way) */
	run_tool(argv[1], "threadhist", GDEV_HOOK_ENTRY, check_threadhist);
	exit_split = 1;
	run_tool(argv[1], "threadhist", GDEV_HOOK_EXIT, check_threadhist);
	/* threadhist_lw (GX_TH_WARP=last): the block's last warp counts,
	 * the same figures */
	run_tool(argv[1], "threadhist_lw", GDEV_HOOK_EXIT, check_threadhist);
	exit_split = 0;
	run_tool(argv[1], "threadhist_lw", GDEV_HOOK_ENTRY, check_threadhist);
	/* threadhist_w1 (GX_TH_WARP=1): warp 1 counts, at the entry (where
	 * GX_PTX_BLOCK_SITE=barrier puts it: every lane there) and at exits */
	run_tool(argv[1], "threadhist_w1", GDEV_HOOK_ENTRY, check_threadhist);
	exit_split = 1;
	run_tool(argv[1], "threadhist_w1", GDEV_HOOK_EXIT, check_threadhist);
	exit_split = 0;
	krs_table = 1;
	run_tool(argv[1], "kernelretsnoop", GDEV_HOOK_EXIT, check_krs);
	krs_table = 0;
	run_tool(argv[1], "kernelretsnoop_ring", GDEV_HOOK_EXIT, check_krs);
	krs_want_counts = 1;
	run_tool(argv[1], "kernelretsnoop_counts", GDEV_HOOK_EXIT, check_krs);
	krs_want_counts = 0;
	check_krs_rule();
	runs = big, nr_runs = GX_ARRAY_SIZE(big);
	/* the default (the table) samples at 256 a launch, the ring build at
	 * 16,384 */
	krs_table = 1, krs_shift = GX_KRS_TABLE_SHIFT;
	run_tool(argv[1], "kernelretsnoop", GDEV_HOOK_EXIT, check_krs_sampled);
	krs_table = 0, krs_shift = GX_KRS_FULL_SHIFT;
	run_tool(argv[1], "kernelretsnoop_ring", GDEV_HOOK_EXIT, check_krs_sampled);
	/* issue 40's lower caps (GX_KRS_CAP=1024|256 load these objects) */
	krs_shift = 10;
	run_tool(argv[1], "kernelretsnoop_c1024", GDEV_HOOK_EXIT, check_krs_sampled);
	krs_shift = 8;
	run_tool(argv[1], "kernelretsnoop_c256", GDEV_HOOK_EXIT, check_krs_sampled);
	krs_shift = GX_KRS_FULL_SHIFT;
	runs = big_all, nr_runs = GX_ARRAY_SIZE(big_all);
	run_tool(argv[1], "kernelretsnoop_all", GDEV_HOOK_EXIT, check_krs_all);
	runs = launches, nr_runs = GX_ARRAY_SIZE(launches);
	run_tool(argv[1], "kernelretsnoop_all", GDEV_HOOK_EXIT, check_krs);
	run_tool(argv[1], "launchlate", GDEV_HOOK_ENTRY, check_ll);
	run_tool(argv[1], "launchlate_ring", GDEV_HOOK_ENTRY, check_ll_ring);
	/* memtrace (and memtrace_gate, its build under GX_MT_GATE=1's name)
	 * behind the gate model: the full trace, 1 in 3, 1 in 64, the default
	 * 1 in 1024 */
	for (unsigned i = 0; i < 8; i++) {
		static const unsigned every[] = { 1, 3, 64, 1024 };
		mt_every = every[i % 4];
		run_tool(argv[1], i < 4 ? "memtrace" : "memtrace_gate", GDEV_HOOK_MEM, check_mt);
	}
	mt_every = 1, mt_prog_every = 1024;
	run_tool(argv[1], "memtrace_prog", GDEV_HOOK_MEM, check_mt);
	return gx_test_done();
}
