/* sched_bench — on a GPU: block scheduling of unmodified kernels, the
 * hardware's (native launch) against each shipped policy, in one process,
 * on the same inputs, interleaved, medians (docs/blocksched.md).
 *
 *   sched_bench KERNELS.ptx POLICY_DIR [REPEATS]
 *     KERNELS.ptx  bench/sched_kernels.cu built by nvcc (build/bench/)
 *     POLICY_DIR   the policies' objects (build/share/gpuext/sched); their
 *                  PTX comes from the JIT cache (GPUEXT_CACHE_DIR, filled by
 *                  `make gpu-prep`: the GPU machine has no LLVM)
 *   SCHED_BENCH_ONLY=regex: only the workloads whose name matches.
 *
 * Each policy's variant is the kernels' PTX rewritten by the persistent
 * transform in place with the policy linked and inlined (gx_ptx_rewrite, as
 * the shim does, copies capped at the native kernels' registers), launched
 * as blocksched's launch side would (SMs x occupancy workers, the
 * descriptor by value, a zeroed per-variant state the launches keep clean,
 * a per-kernel hint block, gx_sched_chunks claims per worker), with the
 * policy's maps in device memory. Workloads (per-block work from a fixed
 * seed, the same every launch): gemm_imb (moderate imbalance: tile K-range
 * uniform in [n/4, n]), tail (clustered heavy tail: the last tenth of the
 * blocks 100..200x), spmv (CSR vector SpMV over a power-law matrix, rows
 * shuffled), and the balanced gemm_bal and vadd; with SCHED_BENCH_SET=untuned
 * instead issue 40's kernels nobody tuned the policies for (triangular and
 * scattered-heavy segmented sums, a power-law SpMV with rows sorted short to
 * long and long to short, a streaming saxpy; each with a block permutation
 * for its ideal order). Each variant runs 3 times before timing (the
 * adaptive policy learns here), then rounds of every variant in turn. The
 * imbalanced workloads also run natively over the same per-block work
 * sorted heaviest first (the most that any order of their blocks can win on
 * this GPU) and over the same total work spread evenly (the balance bound:
 * roughly the best any schedule of whole blocks can reach). Each policy is
 * also reported as the launcher runs it, guarded: its guard (bs_guard.c)
 * picks, round by round, the policy's copy, a static-only copy (fixed_work's)
 * or the original, is fed that arm's timing of the round, and the rounds
 * go on until every guard has REPEATS rounds after its first exploration
 * (64 at most); the guarded figures and goal lines are over those rounds,
 * later explorations and probes included. Prints `| ` table rows, `bench:`
 * lines, and ok/not ok lines for identical outputs and the goals. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/gx_cu_check.h"
#include "attach/gx_attach.h"
#include "blocksched/gx_blocksched.h"
#include "common/gx_util.h"
#include "devbpf/gx_bpf.h"
#include "gpuext/gx_devrt.h"
#include "gpuext/gx_work.h"
#include "ptx-rewrite/gx_ptx.h"

#define CK(x) GX_CU_TAP("sched_bench", x)

#define NV 7 /* native, 5 policies, and an A/B row */
/* gemm_tile's pipeline: 4 stages of A (128 x 36) and B (32 x 132) floats */
#define GT_SMEM (4 * (128 * 36 + 32 * 132) * 4)
static struct {
	const char *name, *obj, *knobs;
	int nocap; /* the copies not capped at the native kernels' registers */
} policies[NV] = {
	{ "native", NULL, NULL, 0 },
	{ "fixed_work", "fixed_work", NULL, 0 },
	{ "greedy", "greedy", NULL, 0 },
	{ "max_steals", "max_steals", "max_steals=4", 0 },
	{ "latency_budget", "latency_budget", "budget_us=200", 0 },
	{ "adaptive (copy always)", "adaptive", NULL, 0 },
	/* A/B: what the register cap (gx_ptx_rewrite_opts.persist_regs) does */
	{ "adaptive (no reg cap)", "adaptive", NULL, 1 },
};
#define ADAPTIVE 5
#define NFIXED 5 /* variants 1..4 are the fixed policies */
/* the guard's arms as variants: the original, adaptive's copy, and
 * fixed_work's (a static-only copy, as the launcher's __gx_ps_K) */
static int arm_variant(int v, int arm)
{
	return arm == GX_BS_ORIG ? 0 : arm == GX_BS_COPY ? v : 1;
}

struct variant {
	CUmodule mod;
	CUdeviceptr map0; /* adaptive's per-kernel stats (adaptive_stats), for the trace */
	size_t map0_bytes;
	unsigned mode, chunks; /* the policy's gx_sched_mode, gx_sched_chunks */
	CUdeviceptr state;     /* zeroed once; every launch leaves it clean */
	int ok;
};

/* A workload (hints, ms: filled by the run). */
struct work {
	const char *name, *kernel, *what;
	unsigned grid[3], block[3];
	void *args[8];
	int nargs;
	CUdeviceptr out;
	size_t out_bytes;
	CUdeviceptr hints[NV];
	unsigned hints_cap[NV];
	float ms[NV][64];
	/* The same launch over the same per-block work sorted heaviest first
	 * (NULL: none): the order an ideal LPT scheduler would give, at no cost
	 * (the hardware dispatches blocks in index order) — how much any
	 * reordering of this workload's blocks can win on this GPU. */
	void *oargs[8];
	float oms[64];
	/* The same total work spread evenly over the blocks (NULL: none): a
	 * bound no schedule of the uneven blocks can beat by much, since perfect
	 * balance is the best a scheduler can reach without splitting blocks. */
	void *bargs[8];
	float bms[64];
	/* each policy as the launcher runs it, guarded (bs_guard.c): the guard
	 * picks the policy's copy, the static-only copy (fixed_work's variant:
	 * the same loop the launcher's __gx_ps_K has) or the original for each
	 * round and is fed that arm's timing of the round; after its first
	 * exploration, its rounds' times and the native launch's of the same
	 * rounds add up (every launch after the exploration counts, later
	 * explorations and probes included) */
	struct gx_bs_guard pg[NV];
	double gsum[NV], nsum[NV];
	unsigned gn[NV], gexp[NV], garm[NV][GX_BS_ARMS];
	int untuned; /* issue 40's kernels nobody tuned for (SCHED_BENCH_SET=untuned) */
	int imbalanced;
	unsigned smem; /* dynamic shared memory per block (bytes) */
	int *unit_work; /* host copy of the per-unit work table (NULL: none) */
	/* the oracle: greedy's copy reading exact heaviest-first hint lists
	 * (one unit per chunk) — the transform's cost at the ideal order, so
	 * that a gap to the native heaviest-first row is the learning's */
	CUdeviceptr ohints;
	float oracle_ms[64];
	/* the same hints read by adaptive's copy (its exit hook runs,
	 * its lists are rewritten before each launch): the copy's own cost at
	 * the ideal order, beside greedy's */
	float oracle_ad_ms[64];
};
/* name, kernel, what by name, then grid, block, args, nargs, out, out_bytes in
 * order; the rest zero (designated, so no field list to keep in step) */
#define WORK(n, k, wh, ...) ((struct work){ .name = (n), .kernel = (k), .what = (wh), __VA_ARGS__ })

static int nsm;
static CUdeviceptr stats_buf; /* when set: the next copy launch fills per-worker stats */
/* When set: the next copy launch reads these hints, with this many claims
 * per worker (the oracle row: exact heaviest-first lists made here). */
static CUdeviceptr hints_override;
static unsigned chunks_override;
static struct variant var[NV];

static CUdeviceptr dalloc(size_t n)
{
	CUdeviceptr p;
	CK(cuMemAlloc_v2(&p, n));
	CK(cuMemsetD8_v2(p, 0, n));
	return p;
}

static CUdeviceptr dcopy(const void *h, size_t n)
{
	CUdeviceptr p = dalloc(n);
	CK(cuMemcpyHtoD_v2(p, h, n));
	return p;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static unsigned rnd(unsigned n)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return (unsigned)(rng % n);
}

static int cmp_int_desc(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return x > y ? -1 : x < y;
}

static int cmp_f(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return x < y ? -1 : x > y;
}

static float median(float *v, int n)
{
	float t[64];
	memcpy(t, v, n * sizeof(float));
	qsort(t, n, sizeof(float), cmp_f);
	return t[n / 2];
}

/* The policy's device maps and struct gx_devrt, as the shim makes them;
 * the adaptive policy's per-kernel stats map into *stats (for the trace). */
static int make_devrt(const struct gx_policy_desc *d, CUmodule mod, CUdeviceptr *stats, size_t *stats_bytes)
{
	struct gx_devrt rt = { .magic = GX_DEVRT_MAGIC, .version = GX_DEVRT_VERSION, .nr_maps = (gdev_u32)d->nr_maps };
	if (d->nr_maps > GX_DEVRT_MAX_MAPS)
		return -1;
	for (size_t i = 0; i < d->nr_maps; i++) {
		const struct gx_pol_map *m = &d->maps[i];
		struct gx_map_spec s = { .name = m->name, .type = m->type, .key_size = m->key_size,
					 .value_size = m->value_size, .max_entries = m->max_entries };
		if (m->type == GX_MAP_PERSM_ARRAY)
			s.nr_shards = (unsigned)nsm;
		else if (m->type == GX_MAP_PERWARP_ARRAY)
			s.nr_shards = (unsigned)nsm * GX_WARP_SLOTS_PER_SM;
		if (m->type == GX_MAP_RINGBUF || gx_map_layout(&s, &rt.maps[i]))
			return -1;
		CUdeviceptr p = dalloc(rt.maps[i].data_size);
		if (m->init && m->init_len)
			CK(cuMemcpyHtoD_v2(p, m->init, m->init_len));
		rt.maps[i].data = p;
		if (strstr(m->name, ".adaptive_stats"))
			*stats = p, *stats_bytes = rt.maps[i].data_size;
	}
	CUdeviceptr g;
	size_t gs;
	if (cuModuleGetGlobal_v2(&g, &gs, mod, GDEV_DEVRT_SYMBOL) == CUDA_SUCCESS && gs == sizeof(rt))
		CK(cuMemcpyHtoD_v2(g, &rt, sizeof(rt)));
	return 0;
}

/* Rewrite and load variant v; 0 or -1 (a not ok line says why). */
static int make_variant(int v, const char *ptx, size_t len, const char *pdir, const struct gx_ptx_kregs *regs,
			size_t nregs)
{
	char path[1024], dir[1024], err[512] = "";
	char *obj;
	size_t ol;
	struct gx_policy_desc d;
	snprintf(path, sizeof(path), "%s/%s.bpf.o", pdir, policies[v].obj);
	if (gx_read_file(path, &obj, &ol, 0) || gx_cache_dir(dir, sizeof(dir))) {
		printf("not ok - sched_bench %s: cannot read %s\n", policies[v].name, path);
		return -1;
	}
	int r = gx_pcache_load(dir, gx_pcache_hash(obj, ol), 90, &d, err, sizeof(err));
	free(obj);
	if (r) {
		printf("not ok - sched_bench %s: not in the JIT cache %s (run make gpu-prep): %s\n", policies[v].name,
		       dir, err);
		return -1;
	}
	if (policies[v].knobs && gx_pdesc_set_knobs(&d, policies[v].knobs, err, sizeof(err))) {
		printf("not ok - sched_bench %s: knobs: %s\n", policies[v].name, err);
		gx_pdesc_free(&d);
		return -1;
	}
	var[v].mode = GX_WORK_CLAIM;
	var[v].chunks = GX_BS_DEFAULT_CHUNKS;
	gx_pdesc_get_var(&d, GX_BS_VAR_MODE, &var[v].mode, 4);
	gx_pdesc_get_var(&d, GX_BS_VAR_CHUNKS, &var[v].chunks, 4);
	struct gx_hook_binding b[16];
	unsigned hooks = 0;
	size_t nb = 0;
	for (size_t i = 0; i < d.nr_progs && nb < 16; i++) {
		b[nb++] = (struct gx_hook_binding){ d.progs[i].hook, d.progs[i].glob[0] ? d.progs[i].glob : NULL,
						    d.progs[i].func };
		hooks |= d.progs[i].hook;
	}
	struct gx_ptx_rewrite_opts o = { .sz = sizeof(o), .hooks = hooks, .persistent = 1, .policy_ptx = d.ptx,
					 .policy_len = d.ptx_len, .bindings = b, .nr_bindings = nb,
					 .persist_regs = policies[v].nocap ? NULL : regs,
					 .nr_persist_regs = policies[v].nocap ? 0 : nregs,
					 .flags = var[v].mode == GX_WORK_STATIC ? GX_PTX_F_PERSIST_STATIC : 0 };
	o.persist_rt = gx_bs_rt_ptx(&o.persist_rt_len);
	struct gx_ptx_rewrite_result res;
	if (gx_ptx_rewrite(ptx, len, &o, &res)) {
		printf("not ok - sched_bench %s: rewrite: %s\n", policies[v].name, res.err);
		gx_pdesc_free(&d);
		return -1;
	}
	if (res.log)
		for (char *l = strtok(res.log, "\n"); l; l = strtok(NULL, "\n"))
			printf("# %s: %s\n", policies[v].name, l);
	CUresult cr = cuModuleLoadData(&var[v].mod, res.ptx);
	gx_ptx_rewrite_result_free(&res);
	if (cr != CUDA_SUCCESS) {
		const char *s = "?";
		cuGetErrorString(cr, &s);
		printf("not ok - sched_bench %s: JIT: %s\n", policies[v].name, s);
		gx_pdesc_free(&d);
		return -1;
	}
	r = make_devrt(&d, var[v].mod, &var[v].map0, &var[v].map0_bytes);
	gx_pdesc_free(&d);
	if (r) {
		printf("not ok - sched_bench %s: its maps\n", policies[v].name);
		return -1;
	}
	var[v].state = dalloc(gx_work_state_bytes(1u << 20));
	var[v].ok = 1;
	return 0;
}

/* f over grid with w's blocks and dynamic shared memory, timed with events (ms). */
static float timed(const struct work *w, CUfunction f, const unsigned grid[3], void **args, CUevent e0, CUevent e1)
{
	CK(cuEventRecord(e0, 0));
	CK(cuLaunchKernel(f, grid[0], grid[1], grid[2], w->block[0], w->block[1], w->block[2], w->smem, 0, args, NULL));
	CK(cuEventRecord(e1, 0));
	CK(cuEventSynchronize(e1));
	float ms = 0;
	CK(cuEventElapsedTime(&ms, e0, e1));
	return ms;
}

/* One launch of workload w by variant v, timed with events (ms); 0 on error. */
static float launch(struct work *w, int v, CUevent e0, CUevent e1, int *regs_out, int *occ_out, unsigned *wk_out,
		    unsigned *chunk_out)
{
	CUfunction f;
	CK(cuModuleGetFunction(&f, var[v].mod, w->kernel));
	void *args[9];
	for (int i = 0; i < w->nargs; i++)
		args[i] = w->args[i];
	unsigned grid[3] = { w->grid[0], w->grid[1], w->grid[2] };
	unsigned block = w->block[0] * w->block[1] * w->block[2];
	struct gx_work_desc d = { 0 };
	if (w->smem > 48 * 1024)
		CK(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)w->smem));
	if (v) {
		int occ = 0;
		CK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&occ, f, (int)block, w->smem));
		unsigned long long units = (unsigned long long)grid[0] * grid[1] * grid[2];
		unsigned long long wk = (unsigned long long)(occ > 0 ? occ : 1) * (unsigned)nsm;
		if (wk > units)
			wk = units;
		unsigned long long per = wk * (chunks_override ? chunks_override : var[v].chunks ? var[v].chunks : 1);
		d = (struct gx_work_desc){ .total = (unsigned)units, .grid_x = grid[0], .grid_y = grid[1],
					   .grid_z = grid[2], .mode = var[v].mode,
					   .chunk = (unsigned)((units + per - 1) / per) };
		if (d.mode == GX_WORK_CLAIM) {
			unsigned nch = (unsigned)((units + d.chunk - 1) / d.chunk);
			d.state = var[v].state;
			if (!hints_override && w->hints_cap[v] < nch) {
				w->hints[v] = dalloc(gx_work_hints_bytes(nch));
				CK(cuMemsetD32_v2(w->hints[v] + offsetof(struct gx_work_hints, cap), nch, 1));
				w->hints_cap[v] = nch;
			}
			d.hints = hints_override ? hints_override : w->hints[v];
			d.stats = stats_buf;
		}
		args[w->nargs] = &d;
		grid[0] = (unsigned)wk, grid[1] = grid[2] = 1;
		if (occ_out)
			*occ_out = occ;
		if (wk_out)
			*wk_out = (unsigned)wk;
		if (chunk_out)
			*chunk_out = d.chunk;
	} else if (occ_out) {
		CK(cuOccupancyMaxActiveBlocksPerMultiprocessor(occ_out, f, (int)block, w->smem));
	}
	if (regs_out)
		CK(cuFuncGetAttribute(regs_out, CU_FUNC_ATTRIBUTE_NUM_REGS, f));
	return timed(w, f, grid, args, e0, e1);
}

/* The bounds' inputs from a per-block work table w[n] (sorted in place): the
 * table heaviest first, and every block at the mean (a multiple of `step`,
 * the kernel's granule of work), in device memory. */
static void bound_tables(int *w, int n, int step, CUdeviceptr *sorted, CUdeviceptr *even)
{
	qsort(w, n, sizeof(int), cmp_int_desc);
	*sorted = dcopy(w, n * sizeof(int));
	long long sum = 0;
	for (int i = 0; i < n; i++)
		sum += w[i];
	int mean = step * (int)((sum / n + step / 2) / step);
	int *e = malloc(n * sizeof(int));
	for (int i = 0; i < n; i++)
		e[i] = mean;
	*even = dcopy(e, n * sizeof(int));
	free(e);
}

/* A per-block work table k[n] in device memory, a host copy (for the
 * learned-order check) and the bounds' tables; frees k. */
static void work_table(int *k, int n, CUdeviceptr *dev, int **host, CUdeviceptr *sorted, CUdeviceptr *even)
{
	*dev = dcopy(k, n * sizeof(int));
	*host = malloc(n * sizeof(int));
	memcpy(*host, k, n * sizeof(int));
	bound_tables(k, n, 1, sorted, even);
	free(k);
}

/* nel floats of the benchmark's fixed pattern, in device memory. */
static CUdeviceptr pattern(size_t nel)
{
	float *h = malloc(nel * 4);
	for (size_t i = 0; i < nel; i++)
		h[i] = (float)((i * 2654435761u) % 1000) / 1000.f;
	CUdeviceptr d = dcopy(h, nel * 4);
	free(h);
	return d;
}

/* The native kernel over other inputs (w->oargs, w->bargs), timed (ms). */
static float launch_args(struct work *w, void **args, CUevent e0, CUevent e1)
{
	CUfunction f;
	CK(cuModuleGetFunction(&f, var[0].mod, w->kernel));
	if (w->smem > 48 * 1024)
		CK(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)w->smem));
	return timed(w, f, w->grid, args, e0, e1);
}

/* How close the order adaptive learned is to heaviest first: its hint
 * lists as the next launch reads them (chunks of one unit), against the
 * workload's table: the share of pairs in the wrong order. */
static void learned_order(struct work *w)
{
	if (!w->unit_work || !w->hints_cap[ADAPTIVE])
		return;
	unsigned cap = w->hints_cap[ADAPTIVE], total = w->grid[0] * w->grid[1] * w->grid[2];
	size_t bytes = gx_work_hints_bytes(cap);
	struct gx_work_hints *h = malloc(bytes);
	unsigned *ord = malloc(cap * sizeof(unsigned)), n = 0;
	CK(cuMemcpyDtoH_v2(h, w->hints[ADAPTIVE], bytes));
	unsigned rb = h->gen & 1;
	for (unsigned c = GX_WORK_CLASSES; c >= 1; c--) {
		const unsigned *l = (const unsigned *)((char *)h + GX_WORK_HINTS_HDR) +
				    ((size_t)rb * GX_WORK_CLASSES + (c - 1)) * cap;
		unsigned nc = h->count[rb][c] < cap ? h->count[rb][c] : cap;
		for (unsigned i = nc; i-- > 0 && n < cap;) /* as the runtime reads it: from the end */
			if (l[i] < total)
				ord[n++] = l[i];
	}
	unsigned long long pairs = 0, wrong = 0;
	for (unsigned i = 0; i < n; i++)
		for (unsigned j = i + 1; j < n; j++)
			if (w->unit_work[ord[i]] != w->unit_work[ord[j]]) {
				pairs++;
				wrong += w->unit_work[ord[i]] < w->unit_work[ord[j]];
			}
	printf("bench: sched %s adaptive learned order: %u of %u units listed (chunk %u), %.1f %% of pairs lighter before heavier (0: heaviest first)\n",
	       w->name, n, total, h->key_chunk[rb], pairs ? 100.0 * wrong / pairs : 0.0);
	free(h), free(ord);
}

/* A row that is not a policy's (a bound, the oracle): the table row (cols:
 * its regs | blocks/SM | workers columns) and, with `bench`, a bench line. */
static void bound_row(const struct work *w, const char *what, const char *cols, const char *bench, float ms,
		      float base)
{
	printf("| %s | %s | %.3f | %+.1f %% | %s |\n", w->name, what, ms, 100.0 * (ms / base - 1), cols);
	if (bench)
		printf("bench: sched %s %s %.3f ms, %+.1f %% vs native\n", w->name, bench, ms, 100.0 * (ms / base - 1));
}

static const int *order_work;
static int cmp_unit_asc(const void *a, const void *b)
{
	int x = order_work[*(const unsigned *)a], y = order_work[*(const unsigned *)b];
	return x < y ? -1 : x > y;
}

/* The oracle's hints: every unit in class 15's list, lightest first (the
 * runtime reads a class's list from its end, so heaviest first), in
 * both buffers, keyed for chunks of one unit; the header is written again
 * before every launch (the launch's last worker clears the counts it read). */
static float launch_oracle(struct work *w, int v, CUevent e0, CUevent e1)
{
	unsigned total = w->grid[0] * w->grid[1] * w->grid[2];
	struct gx_work_hints h = { .cap = total };
	for (int b = 0; b < 2; b++) {
		h.key_total[b] = total, h.key_chunk[b] = 1;
		h.count[b][GX_WORK_CLASSES] = total;
	}
	if (!w->ohints) {
		unsigned *ord = malloc(total * sizeof(unsigned));
		for (unsigned u = 0; u < total; u++)
			ord[u] = u;
		order_work = w->unit_work;
		qsort(ord, total, sizeof(unsigned), cmp_unit_asc); /* read from its end */
		w->ohints = dalloc(gx_work_hints_bytes(total));
		for (int b = 0; b < 2; b++)
			CK(cuMemcpyHtoD_v2(w->ohints + GX_WORK_HINTS_HDR +
						   ((size_t)b * GX_WORK_CLASSES + GX_WORK_CLASSES - 1) * total * 4,
					   ord, total * sizeof(unsigned)));
		free(ord);
	}
	CK(cuMemcpyHtoD_v2(w->ohints, &h, sizeof(h)));
	/* claims per worker such that workers (>= one per SM) x claims >= units:
	 * chunks of one unit, as the lists are keyed */
	hints_override = w->ohints;
	chunks_override = total / (unsigned)nsm + 1;
	float ms = launch(w, v, e0, e1, NULL, NULL, NULL, NULL);
	hints_override = 0;
	chunks_override = 0;
	return ms;
}

/* SCHED_BENCH_TRACE=1: six launches of the adaptive copy, each followed by
 * its per-kernel stats (the map's non-empty slots) and the hint lists'
 * header: what it learned launch by launch. */
static void adaptive_trace(struct work *w, CUevent e0, CUevent e1)
{
	if (!getenv("SCHED_BENCH_TRACE") || !var[ADAPTIVE].ok || !var[ADAPTIVE].map0)
		return;
	struct kst { /* adaptive.bpf.c's struct kstat */
		unsigned long long launch, cur, ref;
	} ks[64];
	size_t kb = var[ADAPTIVE].map0_bytes < sizeof(ks) ? var[ADAPTIVE].map0_bytes : sizeof(ks);
	for (int l = 0; l < 6; l++) {
		float ms = launch(w, ADAPTIVE, e0, e1, NULL, NULL, NULL, NULL);
		struct gx_work_hints h;
		CK(cuMemcpyDtoH_v2(&h, w->hints[ADAPTIVE], sizeof(h)));
		memset(ks, 0, sizeof(ks));
		CK(cuMemcpyDtoH_v2(ks, var[ADAPTIVE].map0, kb));
		unsigned n0 = 0, n1 = 0;
		for (int c = 1; c <= GX_WORK_CLASSES; c++)
			n0 += h.count[0][c], n1 += h.count[1][c];
		printf("# %s trace %d: %.3f ms, gen %u, listed %u / %u", w->name, l, ms, h.gen, n0, n1);
		for (size_t i = 0; i < kb / sizeof(ks[0]); i++)
			if (ks[i].launch)
				printf("; slot %zu launch %llx range %u..%u ns, reference lo %u step %u", i, ks[i].launch,
				       (unsigned)ks[i].cur, (unsigned)(ks[i].cur >> 32), (unsigned)ks[i].ref,
				       (unsigned)(ks[i].ref >> 32));
		printf("\n");
	}
}

static int cmp_u64(const void *a, const void *b)
{
	unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
	return x < y ? -1 : x > y;
}

/* One launch of the adaptive copy with per-worker stats: when its workers
 * start and finish (from the first start) and how many units each ran —
 * where a schedule's time goes beside the order it follows. */
static void worker_spread(struct work *w, CUevent e0, CUevent e1)
{
	if (!w->unit_work || !var[ADAPTIVE].ok)
		return;
	unsigned wk = 0;
	stats_buf = dalloc((size_t)nsm * 32 * GX_WORK_WSTAT_SIZE); /* at most 32 resident blocks per SM */
	float ms = launch(w, ADAPTIVE, e0, e1, NULL, NULL, &wk, NULL);
	struct gx_work_wstat *st = malloc((size_t)wk * sizeof(*st));
	CK(cuMemcpyDtoH_v2(st, stats_buf, (size_t)wk * sizeof(*st)));
	CK(cuMemFree_v2(stats_buf));
	stats_buf = 0;
	unsigned long long t0 = ~0ull, *fin = malloc(wk * sizeof(*fin)), *beg = malloc(wk * sizeof(*beg));
	unsigned umin = ~0u, umax = 0;
	for (unsigned i = 0; i < wk; i++)
		if (st[i].t0 < t0)
			t0 = st[i].t0;
	for (unsigned i = 0; i < wk; i++) {
		beg[i] = st[i].t0 - t0, fin[i] = st[i].t1 - t0;
		umin = st[i].units < umin ? st[i].units : umin;
		umax = st[i].units > umax ? st[i].units : umax;
	}
	qsort(beg, wk, sizeof(*beg), cmp_u64);
	qsort(fin, wk, sizeof(*fin), cmp_u64);
	printf("bench: sched %s adaptive workers: %u, launch %.3f ms; starts 0 / %.1f / %.1f us (median / last), "
	       "finishes %.1f / %.1f / %.1f us (first / median / last), units per worker %u..%u\n",
	       w->name, wk, ms, beg[wk / 2] / 1e3, beg[wk - 1] / 1e3, fin[0] / 1e3, fin[wk / 2] / 1e3,
	       fin[wk - 1] / 1e3, umin, umax);
	free(st), free(fin), free(beg);
}


/* ---- issue 40's kernels nobody tuned for ---- */

static const long long *perm_work;
static int cmp_item_desc(const void *a, const void *b)
{
	long long x = perm_work[*(const int *)a], y = perm_work[*(const int *)b];
	return x > y ? -1 : x < y ? 1 : *(const int *)a - *(const int *)b;
}

/* The permutation that launches items heaviest first (work[n]: each
 * item's work), in device memory: the ideal order's input. */
static CUdeviceptr heaviest_first(const long long *work, int n)
{
	int *p = malloc(n * sizeof(int));
	for (int i = 0; i < n; i++)
		p[i] = i;
	perm_work = work;
	qsort(p, n, sizeof(int), cmp_item_desc);
	CUdeviceptr d = dcopy(p, n * sizeof(int));
	free(p);
	return d;
}

/* A segsum workload over n items of len[i] elements each: offsets and the
 * heaviest-first permutation into *off and *perm. */
static void seg_tables(const long long *len, int n, CUdeviceptr *off, CUdeviceptr *perm)
{
	long long *o = malloc((n + 1) * sizeof(long long));
	o[0] = 0;
	for (int i = 0; i < n; i++)
		o[i + 1] = o[i] + len[i];
	*off = dcopy(o, (n + 1) * sizeof(long long));
	*perm = heaviest_first(len, n);
	free(o);
}

/* The power-law matrix with its rows sorted by degree (ascending or not),
 * in device memory, and the heaviest-first permutation of its blocks of
 * `rpb` rows (a block's work: its rows' nonzeros plus one per row). */
static void sorted_csr(int nrows, const int *rowptr, const int *deg, const int *col, const float *val, int asc,
		       int rpb, CUdeviceptr *drp, CUdeviceptr *dcol, CUdeviceptr *dval, CUdeviceptr *perm)
{
	int *ord = malloc(nrows * sizeof(int) * 2), *rp = malloc((nrows + 1) * sizeof(int));
	size_t nnz = (size_t)rowptr[nrows];
	int *c2 = malloc(nnz * sizeof(int));
	float *v2 = malloc(nnz * sizeof(float));
	for (int r = 0; r < nrows; r++)
		ord[2 * r] = deg[r], ord[2 * r + 1] = r;
	qsort(ord, nrows, 2 * sizeof(int), cmp_int_desc); /* by degree, heaviest first */
	size_t k = 0;
	for (int i = 0; i < nrows; i++) {
		int r = ord[2 * (asc ? nrows - 1 - i : i) + 1];
		rp[i] = (int)k;
		memcpy(c2 + k, col + rowptr[r], (size_t)deg[r] * sizeof(int));
		memcpy(v2 + k, val + rowptr[r], (size_t)deg[r] * sizeof(float));
		k += (size_t)deg[r];
	}
	rp[nrows] = (int)k;
	int nb = (nrows + rpb - 1) / rpb;
	long long *bw = calloc(nb, sizeof(long long));
	for (int i = 0; i < nrows; i++)
		bw[i / rpb] += rp[i + 1] - rp[i] + 1;
	*drp = dcopy(rp, (nrows + 1) * sizeof(int));
	*dcol = dcopy(c2, nnz * sizeof(int));
	*dval = dcopy(v2, nnz * sizeof(float));
	*perm = heaviest_first(bw, nb);
	free(ord), free(rp), free(c2), free(v2), free(bw);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s KERNELS.ptx POLICY_DIR [REPEATS]\n", argv[0]);
		return 2;
	}
	int reps = argc > 3 ? atoi(argv[3]) : 11;
	if (reps < 1 || reps > 64)
		reps = 11;
	char *ptx;
	size_t plen;
	if (gx_read_file(argv[1], &ptx, &plen, 0)) {
		printf("not ok - sched_bench: cannot read %s\n", argv[1]);
		return 1;
	}
	CUdevice dev = gx_cu_primary_ctx("sched_bench");
	CK(cuDeviceGetAttribute(&nsm, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
	CK(cuModuleLoadData(&var[0].mod, ptx));
	var[0].ok = 1;
	/* the native kernels' registers: the copies' caps */
	static const char *const kn[] = { "gemm_imb", "gemm_tile", "spin", "spmv_csr_vector", "vadd",
					  "segsum",   "spmv_perm", "saxpy" };
#define NKN (sizeof(kn) / sizeof(kn[0]))
	struct gx_ptx_kregs regs[NKN];
	for (unsigned i = 0; i < NKN; i++) {
		CUfunction f;
		int r = 0;
		CK(cuModuleGetFunction(&f, var[0].mod, kn[i]));
		CK(cuFuncGetAttribute(&r, CU_FUNC_ATTRIBUTE_NUM_REGS, f));
		regs[i] = (struct gx_ptx_kregs){ kn[i], (unsigned)r };
	}
	/* the untuned set's A/B row instead: adaptive with 4 claims per worker
	 * (a quarter of the claims, exit hooks and atomics on its shared range,
	 * at a coarser order) — where many small blocks make those the cost */
	const char *bset = getenv("SCHED_BENCH_SET");
	if (bset && !strcmp(bset, "untuned"))
		policies[NV - 1].name = "adaptive (4 claims per worker)", policies[NV - 1].knobs = "gx_sched_chunks=4",
		policies[NV - 1].nocap = 0;
	for (int v = 1; v < NV; v++)
		make_variant(v, ptx, plen, argv[2], regs, NKN);

	/* ---- inputs ---- */
	static struct work wl[16];
	int nw = 0;
	/* gemm_imb / gemm_bal: n = 1536, 48 x 48 tiles of 32 x 32 */
	static int gn = 1536;
	size_t gsz = (size_t)gn * gn * 4;
	static CUdeviceptr ga, gb, gc1, gc2, kimb, kbal;
	ga = pattern((size_t)gn * gn);
	gb = pattern((size_t)gn * gn);
	gc1 = dalloc(gsz);
	gc2 = dalloc(gsz);
	int tiles = (gn / 32) * (gn / 32), *hk = malloc(tiles * sizeof(int));
	for (int t = 0; t < tiles; t++)
		hk[t] = 32 * (gn / 32 / 4 + (int)rnd(gn / 32 - gn / 32 / 4 + 1));
	kimb = dcopy(hk, tiles * sizeof(int));
	static CUdeviceptr kimb_sorted, kimb_even;
	bound_tables(hk, tiles, 32, &kimb_sorted, &kimb_even); /* the kernel steps K by tiles of 32 */
	for (int t = 0; t < tiles; t++)
		hk[t] = gn;
	kbal = dcopy(hk, tiles * sizeof(int));
	free(hk);
	wl[nw++] = WORK("gemm_imb", "gemm_imb", "moderate: tile K in [n/4, n]", { gn / 32, gn / 32, 1 },
				  { 32, 8, 1 }, { &ga, &gb, &gc1, &kimb, &gn }, 5, gc1, gsz);
	memcpy(wl[nw - 1].oargs, (void *[]){ &ga, &gb, &gc1, &kimb_sorted, &gn }, 5 * sizeof(void *));
	memcpy(wl[nw - 1].bargs, (void *[]){ &ga, &gb, &gc1, &kimb_even, &gn }, 5 * sizeof(void *));
	/* tail: 16 rounds of the SMs' resident blocks; the last tenth heavy */
	static CUdeviceptr sw, so;
	int spin_occ = 0;
	{
		CUfunction f;
		CK(cuModuleGetFunction(&f, var[0].mod, "spin"));
		CK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&spin_occ, f, 256, 0));
	}
	int sblocks = 16 * nsm * (spin_occ > 0 ? spin_occ : 8), *hw = malloc(sblocks * sizeof(int));
	for (int b = 0; b < sblocks; b++)
		hw[b] = b >= sblocks - sblocks / 10 ? 400 * (100 + (int)rnd(101)) : 400;
	sw = dcopy(hw, sblocks * sizeof(int));
	so = dalloc((size_t)sblocks * 256 * 4);
	static CUdeviceptr sw_sorted, sw_even;
	bound_tables(hw, sblocks, 1, &sw_sorted, &sw_even);
	free(hw);
	wl[nw++] = WORK("tail", "spin", "clustered heavy tail: last 10 % of blocks 100..200x",
				  { (unsigned)sblocks, 1, 1 }, { 256, 1, 1 }, { &so, &sw }, 2, so,
				  (size_t)sblocks * 256 * 4);
	memcpy(wl[nw - 1].oargs, (void *[]){ &so, &sw_sorted }, 2 * sizeof(void *));
	memcpy(wl[nw - 1].bargs, (void *[]){ &so, &sw_even }, 2 * sizeof(void *));
	/* gemm_tile_imb / tail_tile: production-sized tiles (gemm_tile: 128 x 128,
	 * 4 x 35 KB of pipeline stages, one block per SM): the hardware's order is
	 * a list schedule of whole SMs, which is where an order can win */
	CUfunction gtf;
	int gt_occ = 0;
	CK(cuModuleGetFunction(&gtf, var[0].mod, "gemm_tile"));
	CK(cuFuncSetAttribute(gtf, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, GT_SMEM));
	CK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&gt_occ, gtf, 256, GT_SMEM));
	if (gt_occ < 1)
		gt_occ = 1;
	printf("# gemm_tile: %d block(s) per SM with %d bytes of dynamic shared memory\n", gt_occ, GT_SMEM);
	/* gemm_tile_imb: n = 2048, 16 x 16 tiles (1.9 waves on the H200), tile
	 * K uniform in [n/4, n] in steps of 32 */
	static int tn = 2048;
	static CUdeviceptr ta, tb, tc, tk, tk_sorted, tk_even;
	int *tk_host = NULL, *xk_host = NULL;
	{
		size_t nel = (size_t)tn * tn;
		ta = pattern(nel);
		tb = pattern(nel);
		tc = dalloc(nel * 4);
		int nt = (tn / 128) * (tn / 128), *k = malloc(nt * sizeof(int));
		for (int t = 0; t < nt; t++)
			k[t] = tn / 32 / 4 + (int)rnd(tn / 32 - tn / 32 / 4 + 1);
		work_table(k, nt, &tk, &tk_host, &tk_sorted, &tk_even);
	}
	wl[nw++] = WORK("gemm_tile_imb", "gemm_tile", "moderate, one block per SM: tile K in [n/4, n]",
			{ tn / 128, tn / 128, 1 }, { 256, 1, 1 }, { &ta, &tb, &tc, &tk, &tn }, 5, tc,
			(size_t)tn * tn * 4);
	wl[nw - 1].smem = GT_SMEM;
	wl[nw - 1].unit_work = tk_host;
	memcpy(wl[nw - 1].oargs, (void *[]){ &ta, &tb, &tc, &tk_sorted, &tn }, 5 * sizeof(void *));
	memcpy(wl[nw - 1].bargs, (void *[]){ &ta, &tb, &tc, &tk_even, &tn }, 5 * sizeof(void *));
	/* tail_tile: SMs x occupancy tiles per row, SCHED_BENCH_TAIL_ROUNDS rows
	 * (11: the heavy tiles are 1.1 rounds of the GPU, so a tenth of the SMs
	 * must run two of them; this is the goal's shape because whole-block
	 * scheduling can win 25 % here — the ideal order gains 26 %, at 12-16
	 * rows 24.8-25.0 %, run 54; tests/gpu/blocksched.sh reports those too);
	 * 2 K-steps per tile, the last tenth of the tiles 200..400 (100..200x) */
	static CUdeviceptr xb, xc, xk, xk_sorted, xk_even;
	static int xn = 2048;
	const char *rs = getenv("SCHED_BENCH_TAIL_ROUNDS");
	int rounds = rs && atoi(rs) > 0 && atoi(rs) <= 16 ? atoi(rs) : 11; /* A has 16 x 128 rows */
	unsigned xgx = (unsigned)(nsm * gt_occ), xgy = (unsigned)rounds;
	{
		size_t nc = (size_t)xgy * 128 * xgx * 128;
		xb = pattern((size_t)xn * xgx * 128);
		xc = dalloc(nc * 4);
		int nt = (int)(xgx * xgy), *k = malloc(nt * sizeof(int));
		for (int t = 0; t < nt; t++)
			k[t] = t >= nt - nt / 10 ? 2 * (100 + (int)rnd(101)) : 2;
		work_table(k, nt, &xk, &xk_host, &xk_sorted, &xk_even);
	}
	/* A: the first xgy * 128 rows of gemm_tile_imb's A (xn = tn columns) */
	wl[nw++] = WORK("tail_tile", "gemm_tile", "clustered heavy tail, one block per SM: last 10 % of tiles 100..200x",
			{ xgx, xgy, 1 }, { 256, 1, 1 }, { &ta, &xb, &xc, &xk, &xn }, 5, xc,
			(size_t)xgy * 128 * xgx * 128 * 4);
	wl[nw - 1].smem = GT_SMEM;
	wl[nw - 1].unit_work = xk_host;
	memcpy(wl[nw - 1].oargs, (void *[]){ &ta, &xb, &xc, &xk_sorted, &xn }, 5 * sizeof(void *));
	memcpy(wl[nw - 1].bargs, (void *[]){ &ta, &xb, &xc, &xk_even, &xn }, 5 * sizeof(void *));
	/* spmv: 2^17 rows, degree min(8 / u, 8192) (a power law, exponent 2),
	 * rows shuffled, columns uniform */
	static int nrows = 1 << 17;
	int *rowptr = malloc((nrows + 1) * sizeof(int)), *deg = malloc(nrows * sizeof(int));
	size_t nnz = 0;
	for (int r = 0; r < nrows; r++) {
		double u = (rnd(1u << 30) + 1.0) / (1u << 30);
		double dd = 8.0 / u;
		deg[r] = dd > 8192 ? 8192 : (int)dd;
	}
	for (int r = nrows - 1; r > 0; r--) {
		int j = (int)rnd((unsigned)r + 1), t = deg[r];
		deg[r] = deg[j], deg[j] = t;
	}
	for (int r = 0; r < nrows; r++) {
		rowptr[r] = (int)nnz;
		nnz += (size_t)deg[r];
	}
	rowptr[nrows] = (int)nnz;
	int *col = malloc(nnz * sizeof(int));
	float *val = malloc(nnz * sizeof(float)), *x = malloc(nrows * sizeof(float));
	for (size_t j = 0; j < nnz; j++) {
		col[j] = (int)rnd((unsigned)nrows);
		val[j] = (float)(j % 17) * 0.25f - 2.f;
	}
	for (int r = 0; r < nrows; r++)
		x[r] = (float)(r % 13) * 0.5f;
	static CUdeviceptr drp, dcol, dval, dx, dy;
	drp = dcopy(rowptr, (nrows + 1) * sizeof(int));
	dcol = dcopy(col, nnz * sizeof(int));
	dval = dcopy(val, nnz * sizeof(float));
	dx = dcopy(x, nrows * sizeof(float));
	dy = dalloc(nrows * sizeof(float));
	/* the oracle's matrix: the same rows, heaviest first */
	static CUdeviceptr drp_s, dcol_s, dval_s, drp_e;
	{
		int *ord = malloc(nrows * sizeof(int) * 2), *rp2 = malloc((nrows + 1) * sizeof(int));
		int *col2 = malloc(nnz * sizeof(int));
		float *val2 = malloc(nnz * sizeof(float));
		for (int r = 0; r < nrows; r++)
			ord[2 * r] = deg[r], ord[2 * r + 1] = r;
		qsort(ord, nrows, 2 * sizeof(int), cmp_int_desc); /* by degree (the pair's first int) */
		size_t k = 0;
		for (int i = 0; i < nrows; i++) {
			int r = ord[2 * i + 1];
			rp2[i] = (int)k;
			memcpy(col2 + k, col + rowptr[r], (size_t)deg[r] * sizeof(int));
			memcpy(val2 + k, val + rowptr[r], (size_t)deg[r] * sizeof(float));
			k += (size_t)deg[r];
		}
		rp2[nrows] = (int)k;
		drp_s = dcopy(rp2, (nrows + 1) * sizeof(int));
		dcol_s = dcopy(col2, nnz * sizeof(int));
		dval_s = dcopy(val2, nnz * sizeof(float));
		/* the balance bound's matrix: every row nnz / nrows nonzeros, the
		 * same columns and values in order */
		size_t per = nnz / (size_t)nrows;
		for (int r = 0; r <= nrows; r++)
			rp2[r] = (int)(per * (size_t)r);
		drp_e = dcopy(rp2, (nrows + 1) * sizeof(int));
		free(ord), free(rp2), free(col2), free(val2);
	}
	/* untuned: the same matrix with its rows sorted short to long and long
	 * to short (8 rows per block), SHOC's kernel with a block permutation */
	static CUdeviceptr arp, acol, aval, aperm, drp2, dcol2, dval2, dperm, ay, dy2;
	static int nrows2 = 1 << 17;
	sorted_csr(nrows, rowptr, deg, col, val, 1, 8, &arp, &acol, &aval, &aperm);
	sorted_csr(nrows, rowptr, deg, col, val, 0, 8, &drp2, &dcol2, &dval2, &dperm);
	ay = dalloc(nrows * sizeof(float));
	dy2 = dalloc(nrows * sizeof(float));
	static void *const null_perm = NULL;
	wl[nw++] = WORK("spmv_asc", "spmv_perm", "CSR SpMV, power-law rows sorted short to long, 8 per block",
			{ (unsigned)(nrows / 8), 1, 1 }, { 256, 1, 1 },
			{ &arp, &acol, &aval, &dx, &ay, &nrows2, (void *)&null_perm }, 7, ay, nrows * sizeof(float),
			.untuned = 1, .imbalanced = 1);
	memcpy(wl[nw - 1].oargs, (void *[]){ &arp, &acol, &aval, &dx, &ay, &nrows2, &aperm }, 7 * sizeof(void *));
	wl[nw++] = WORK("spmv_desc", "spmv_perm", "CSR SpMV, power-law rows sorted long to short, 8 per block",
			{ (unsigned)(nrows / 8), 1, 1 }, { 256, 1, 1 },
			{ &drp2, &dcol2, &dval2, &dx, &dy2, &nrows2, (void *)&null_perm }, 7, dy2,
			nrows * sizeof(float), .untuned = 1, .imbalanced = 1);
	memcpy(wl[nw - 1].oargs, (void *[]){ &drp2, &dcol2, &dval2, &dx, &dy2, &nrows2, &dperm }, 7 * sizeof(void *));
	free(rowptr), free(deg), free(col), free(val), free(x);
	printf("# spmv: %d rows, %zu nonzeros\n", nrows, nnz);
	wl[nw++] = WORK("spmv", "spmv_csr_vector", "CSR vector SpMV, power-law rows (SHOC's kernel)",
				  { (unsigned)(nrows / 8), 1, 1 }, { 256, 1, 1 }, { &drp, &dcol, &dval, &dx, &dy, &nrows }, 6,
				  dy, nrows * sizeof(float));
	memcpy(wl[nw - 1].oargs, (void *[]){ &drp_s, &dcol_s, &dval_s, &dx, &dy, &nrows }, 6 * sizeof(void *));
	memcpy(wl[nw - 1].bargs, (void *[]){ &drp_e, &dcol, &dval, &dx, &dy, &nrows }, 6 * sizeof(void *));
	wl[nw++] = WORK("gemm_bal", "gemm_imb", "balanced: every tile K = n", { gn / 32, gn / 32, 1 },
				  { 32, 8, 1 }, { &ga, &gb, &gc2, &kbal, &gn }, 5, gc2, gsz);
	static unsigned long long vn = 1ull << 26;
	static CUdeviceptr va, vb, vc;
	va = dalloc(vn * 4), vb = dalloc(vn * 4), vc = dalloc(vn * 4);
	CK(cuMemsetD32_v2(va, 0x3f800000, vn));
	CK(cuMemsetD32_v2(vb, 0x40000000, vn));
	wl[nw++] = WORK("vadd", "vadd", "balanced: 2^26 elements", { (unsigned)(vn / 256), 1, 1 },
				  { 256, 1, 1 }, { &va, &vb, &vc, &vn }, 4, vc, vn * 4);
	/* untuned: segmented sums over a 64 MiB vector (indices wrap) */
	static unsigned long long smask = (1ull << 24) - 1;
	static CUdeviceptr sx, tri_off, tri_perm, tri_out, sc_off, sc_perm, sc_out;
	sx = pattern(smask + 1);
	{
		/* triangular: 4,224 items, item i sums 8 (i + 1) elements */
		int n = 4224;
		long long *len = malloc(n * sizeof(long long));
		for (int i = 0; i < n; i++)
			len[i] = 8ll * (i + 1);
		seg_tables(len, n, &tri_off, &tri_perm);
		tri_out = dalloc(n * sizeof(float));
		free(len);
		wl[nw++] = WORK("triangular", "segsum", "4,224 items, work growing with the index (8 (i + 1) elements)",
				{ (unsigned)n, 1, 1 }, { 256, 1, 1 }, { &sx, &tri_off, (void *)&null_perm, &tri_out, &smask },
				5, tri_out, n * sizeof(float), .untuned = 1, .imbalanced = 1);
		memcpy(wl[nw - 1].oargs, (void *[]){ &sx, &tri_off, &tri_perm, &tri_out, &smask }, 5 * sizeof(void *));
	}
	{
		/* scattered: 8,448 items of 2,048 elements, ~4 % of them 30x */
		int n = 8448;
		long long *len = malloc(n * sizeof(long long));
		for (int i = 0; i < n; i++)
			len[i] = rnd(100) < 4 ? 30 * 2048 : 2048;
		seg_tables(len, n, &sc_off, &sc_perm);
		sc_out = dalloc(n * sizeof(float));
		free(len);
		wl[nw++] = WORK("scattered", "segsum", "8,448 items of 2,048 elements, ~4 % scattered 30x heavy",
				{ (unsigned)n, 1, 1 }, { 256, 1, 1 }, { &sx, &sc_off, (void *)&null_perm, &sc_out, &smask },
				5, sc_out, n * sizeof(float), .untuned = 1, .imbalanced = 1);
		memcpy(wl[nw - 1].oargs, (void *[]){ &sx, &sc_off, &sc_perm, &sc_out, &smask }, 5 * sizeof(void *));
	}
	/* streaming: saxpy over 2^25 elements (y is zeroed before the output
	 * comparison, so every schedule's one launch gives a x) */
	static unsigned long long yn = 1ull << 25;
	static float sa = 2.0f;
	static CUdeviceptr yx, yy;
	yx = pattern(yn);
	yy = dalloc(yn * 4);
	wl[nw++] = WORK("saxpy", "saxpy", "streaming: y = a x + y, 2^25 elements", { (unsigned)(yn / 256), 1, 1 },
			{ 256, 1, 1 }, { &sa, &yx, &yy, &yn }, 4, yy, yn * 4, .untuned = 1);

	const char *only = getenv("SCHED_BENCH_ONLY"), *set = getenv("SCHED_BENCH_SET");
	int want_untuned = set && !strcmp(set, "untuned");
	regex_t re;
	int use_re = only && *only && !regcomp(&re, only, REG_EXTENDED | REG_NOSUB);
	CUevent e0, e1;
	CK(cuEventCreate(&e0, 0));
	CK(cuEventCreate(&e1, 0));
	printf("| workload | schedule | median ms | vs native | regs | blocks/SM | workers x chunk |\n"
	       "|---|---|---|---|---|---|---|\n");
	/* the summary of issue 40's set, printed at the end */
	static char summary[16][640];
	int nsum = 0, goal_kernels = 0, goal_met = 0;
	for (int i = 0; i < nw; i++) {
		struct work *w = &wl[i];
		if (w->untuned != want_untuned || (use_re && regexec(&re, w->name, 0, NULL, 0)))
			continue;
		printf("# %s: %s, %u x %u x %u blocks of %u threads\n", w->name, w->what, w->grid[0], w->grid[1],
		       w->grid[2], w->block[0] * w->block[1]);
		int regs[NV] = { 0 }, occ[NV] = { 0 };
		unsigned wk[NV] = { 0 }, ch[NV] = { 0 };
		void *ref = malloc(w->out_bytes), *got = malloc(w->out_bytes);
		int same[NV] = { 0 };
		/* warm-up: 3 launches each (the adaptive policy learns here) */
		for (int v = 0; v < NV; v++)
			for (int k = 0; var[v].ok && k < 3; k++)
				launch(w, v, e0, e1, &regs[v], &occ[v], &wk[v], &ch[v]);
		if (w->oargs[0])
			launch_args(w, w->oargs, e0, e1);
		if (w->bargs[0])
			launch_args(w, w->bargs, e0, e1);
		/* rounds of every variant in turn; each guard is fed its arm's
		 * timing of the round, until every guard has `reps` rounds after
		 * its first exploration (64 rounds at most) */
		for (int v = 1; v <= ADAPTIVE; v++)
			gx_bs_guard_init(&w->pg[v], v == 1 || !var[1].ok ? 2 : GX_BS_ARMS);
		int nr = 0;
		for (int r = 0; r < 64; r++) {
			for (int v = 0; v < NV; v++)
				if (var[v].ok)
					w->ms[v][r] = launch(w, v, e0, e1, NULL, NULL, NULL, NULL);
			if (w->oargs[0])
				w->oms[r] = launch_args(w, w->oargs, e0, e1);
			if (w->bargs[0])
				w->bms[r] = launch_args(w, w->bargs, e0, e1);
			if (w->unit_work && var[2].ok)
				w->oracle_ms[r] = launch_oracle(w, 2, e0, e1);
			if (w->unit_work && var[ADAPTIVE].ok)
				w->oracle_ad_ms[r] = launch_oracle(w, ADAPTIVE, e0, e1);
			nr = r + 1;
			int more = 0;
			for (int v = 1; v <= ADAPTIVE; v++) {
				struct gx_bs_guard *g = &w->pg[v];
				if (!var[v].ok)
					continue;
				int t = 0, c = gx_bs_guard_next(g, &t);
				int first = g->choice < 0 && !g->explorations; /* its first exploration */
				float ms = w->ms[var[arm_variant(v, c)].ok ? arm_variant(v, c) : 0][r];
				if (t)
					gx_bs_guard_sample(g, c, ms);
				if (first) {
					w->gexp[v]++;
				} else {
					w->gsum[v] += ms, w->nsum[v] += w->ms[0][r];
					w->gn[v]++;
					w->garm[v][c]++;
				}
				more |= w->gn[v] < (unsigned)reps;
			}
			if (!more && nr >= reps)
				break;
		}
		/* outputs: each variant's last launch against the native one */
		for (int v = 0; v < NV; v++) {
			if (!var[v].ok)
				continue;
			CK(cuMemsetD8_v2(w->out, 0, w->out_bytes));
			launch(w, v, e0, e1, NULL, NULL, NULL, NULL);
			CK(cuMemcpyDtoH_v2(v ? got : ref, w->out, w->out_bytes));
			same[v] = !v || !memcmp(ref, got, w->out_bytes);
			if (v)
				printf("%s - sched_bench %s %s: output identical to the native launch\n",
				       same[v] ? "ok" : "not ok", w->name, policies[v].name);
		}
		if (w->oargs[0]) {
			CK(cuMemsetD8_v2(w->out, 0, w->out_bytes));
			launch_args(w, w->oargs, e0, e1);
			CK(cuMemcpyDtoH_v2(got, w->out, w->out_bytes));
			if (w->untuned)
				printf("%s - sched_bench %s ideal order: output identical to the native launch\n",
				       !memcmp(ref, got, w->out_bytes) ? "ok" : "not ok", w->name);
		}
		free(ref), free(got);
		adaptive_trace(w, e0, e1);
		learned_order(w);
		if (w->unit_work) {
			printf("# %s adaptive (copy always) launches (ms):", w->name);
			for (int r = 0; r < nr; r++)
				printf(" %.3f", w->ms[ADAPTIVE][r]);
			printf("\n");
		}
		worker_spread(w, e0, e1);
		float med[NV] = { 0 }, base = median(w->ms[0], nr);
		float best = 0;
		int bestv = 0;
		for (int v = 0; v < NV; v++) {
			if (!var[v].ok)
				continue;
			med[v] = median(w->ms[v], nr);
			if (v)
				printf("| %s | %s | %.3f | %+.1f %% | %d | %d | %u x %u |\n", w->name, policies[v].name,
				       med[v], 100.0 * (med[v] / base - 1), regs[v], occ[v], wk[v], ch[v]);
			else
				printf("| %s | native | %.3f | | %d | %d | %u blocks |\n", w->name, base, regs[0], occ[0],
				       w->grid[0] * w->grid[1] * w->grid[2]);
			if (v && v < NFIXED && same[v] && (!bestv || med[v] < best))
				best = med[v], bestv = v;
		}
		char nat[64];
		snprintf(nat, sizeof(nat), "%d | %d | %u blocks", regs[0], occ[0], w->grid[0] * w->grid[1] * w->grid[2]);
		float ideal = w->oargs[0] ? median(w->oms, nr) : base;
		if (w->oargs[0])
			bound_row(w, "native, heaviest blocks first (ideal order, no cost)", nat,
				  "ordering headroom: heaviest-first native launch", ideal, base);
		if (w->unit_work && var[2].ok)
			bound_row(w, "greedy's copy, exact heaviest-first hints (oracle order)", " | | ",
				  "oracle order in the copy", median(w->oracle_ms, nr), base);
		if (w->unit_work && var[ADAPTIVE].ok)
			bound_row(w, "adaptive's copy, the same oracle hints", " | | ", NULL, median(w->oracle_ad_ms, nr),
				  base);
		if (w->bargs[0])
			bound_row(w, "native, the same total work spread evenly (balance bound)", nat,
				  "balance bound: even work, native launch", median(w->bms, nr), base);
		for (int v = 1; v < NV; v++)
			if (var[v].ok)
				printf("bench: sched %s %s %.3f ms, %+.1f %% vs native\n", w->name, policies[v].name, med[v],
				       100.0 * (med[v] / base - 1));
		/* each policy guarded: over the rounds after its first exploration */
		static const char *const arm_name[GX_BS_ARMS] = { "the original", "the copy", "the static copy" };
		double gpct[NV] = { 0 };
		for (int v = 1; v <= ADAPTIVE; v++) {
			const struct gx_bs_guard *g = &w->pg[v];
			if (!var[v].ok || !w->gn[v] || w->nsum[v] <= 0)
				continue;
			gpct[v] = 100.0 * (w->gsum[v] / w->nsum[v] - 1);
			int ran = -1;
			for (int a = 0; a < GX_BS_ARMS; a++)
				if (w->garm[v][a])
					ran = ran < 0 ? a : GX_BS_ARMS;
			printf("bench: sched %s %s guarded %+.2f %% vs native over the %u launches after its exploration "
			       "(%u launches exploring, the timed copies %+.3f ms against the original; ran %s; "
			       "%u explorations, %u given up)\n",
			       w->name, policies[v].obj, gpct[v], w->gn[v], w->gexp[v], (double)g->explore_extra_ms_all,
			       ran >= 0 && ran < GX_BS_ARMS ? arm_name[ran] : "several", g->explorations, g->gave_up);
			if (w->untuned)
				printf("%s - sched_bench %s: %s guarded not worse than native by more than 1 %% over the "
				       "%u launches after its exploration (%+.2f %%)\n",
				       gpct[v] <= 1.0 ? "ok" : "not ok", w->name, policies[v].obj, w->gn[v], gpct[v]);
		}
		if (w->untuned) {
			double ipct = 100.0 * (ideal / base - 1), bestp = 0;
			const char *bn = "none";
			for (int v = 1; v <= ADAPTIVE; v++)
				if (var[v].ok && w->gn[v] && gpct[v] < bestp && same[v])
					bestp = gpct[v], bn = policies[v].obj;
			int n = snprintf(summary[nsum], sizeof(summary[0]), "| %s | %.1f | ", w->name, 1e3 * base);
			for (int v = 1; v <= ADAPTIVE; v++)
				n += var[v].ok ? snprintf(summary[nsum] + n, sizeof(summary[0]) - n, "%+.1f %% / %+.1f %% | ",
							  100.0 * (med[v] / base - 1), gpct[v])
					       : snprintf(summary[nsum] + n, sizeof(summary[0]) - n, "not run | ");
			char id[32] = "";
			if (w->oargs[0])
				snprintf(id, sizeof(id), "%+.1f %%", ipct);
			snprintf(summary[nsum] + n, sizeof(summary[0]) - n, "%s | %u (%+.3f ms) |", id, w->gexp[ADAPTIVE],
				 (double)w->pg[ADAPTIVE].explore_extra_ms);
			nsum++;
			if (w->imbalanced && ipct <= -20) {
				goal_kernels++;
				goal_met += bestp <= -10;
				printf("bench: sched %s: the ideal order wins %.1f %%, the best guarded policy (%s) %.1f %%\n",
				       w->name, -ipct, bn, -bestp);
			}
		}
		if (!var[ADAPTIVE].ok || !bestv || w->untuned)
			continue;
		/* the adaptive policy's goals are the launcher's: copy or original
		 * as the guard chose, over the launches after its exploration */
		float ad = base * (float)(1 + gpct[ADAPTIVE] / 100);
		int ran = -1;
		for (int a = 0; a < GX_BS_ARMS; a++)
			if (w->garm[ADAPTIVE][a])
				ran = ran < 0 ? a : GX_BS_ARMS;
		printf("| %s | adaptive, guarded (as the launcher runs it: %s) | %.3f | %+.1f %% | | | |\n", w->name,
		       ran >= 0 && ran < GX_BS_ARMS ? arm_name[ran] : "several", ad, 100.0 * (ad / base - 1));
		printf("bench: sched %s adaptive guarded %.3f ms, %+.1f %% vs native (copy %.3f / static copy %.3f / original %.3f ms when it chose)\n",
		       w->name, ad, 100.0 * (ad / base - 1), (double)w->pg[ADAPTIVE].med[GX_BS_COPY],
		       (double)w->pg[ADAPTIVE].med[GX_BS_STATIC], (double)w->pg[ADAPTIVE].med[GX_BS_ORIG]);
		/* The speed goals (>= 15 % moderate, >= 25 % heavy tail): checked on
		 * the one-block-per-SM workloads. On gemm_imb and tail (8 small
		 * blocks per SM) even perfectly balanced work is only ~9 / ~13 %
		 * faster than native (run 40), so there the figure is reported
		 * beside its bound, not held to a goal no whole-block schedule
		 * can reach. */
		int tiled = !strcmp(w->name, "gemm_tile_imb") || !strcmp(w->name, "tail_tile");
		if (tiled || !strcmp(w->name, "gemm_imb") || !strcmp(w->name, "tail")) {
			float goal = strstr(w->name, "tail") ? 25 : 15, gain = 100 * (1 - (ad < best ? ad : best) / base);
			float bound = w->bargs[0] ? 100 * (1 - median(w->bms, nr) / base) : 0;
			if (tiled)
				printf("%s - sched_bench %s: the best schedule (%s) is %.1f %% faster than native (goal >= %.0f %%)\n",
				       gain >= goal ? "ok" : "not ok", w->name, ad < best ? "adaptive" : policies[bestv].name,
				       gain, goal);
			else
				printf("bench: sched %s: the best schedule (%s) is %.1f %% faster than native; even work is %.1f %% faster (the bound; goal %.0f %% is checked on %s)\n",
				       w->name, ad < best ? "adaptive" : policies[bestv].name, gain, bound, goal,
				       goal > 20 ? "tail_tile" : "gemm_tile_imb");
		}
		if (!strcmp(w->name, "gemm_bal") || !strcmp(w->name, "vadd"))
			printf("%s - sched_bench %s: adaptive overhead %+.2f %% on a balanced kernel (goal <= 2 %%)\n",
			       ad <= base * 1.02f ? "ok" : "not ok", w->name, 100.0 * (ad / base - 1));
		printf("%s - sched_bench %s: adaptive %.3f ms within 2 %% of the best fixed policy (%s %.3f ms)\n",
		       ad <= best * 1.02f ? "ok" : "not ok", w->name, ad, policies[bestv].name, best);
		printf("%s - sched_bench %s: adaptive not worse than native by more than 1 %% (%+.2f %%)\n",
		       ad <= base * 1.01f ? "ok" : "not ok", w->name, 100.0 * (ad / base - 1));
	}
	if (nsum) {
		printf("\nKernels nobody tuned for: each policy's copy always / guarded (as the launcher runs it, over "
		       "the launches after its exploration), vs native; the ideal order; adaptive's exploration\n\n"
		       "| kernel | native us | fixed_work | greedy | max_steals | latency_budget | adaptive | ideal order "
		       "| adaptive exploring: launches (timed copies' extra) |\n|---|---|---|---|---|---|---|---|---|\n");
		for (int i = 0; i < nsum; i++)
			printf("%s\n", summary[i]);
		printf("%s - sched_bench untuned: a guarded shipped policy wins >= 10 %% on %d of the %d imbalanced "
		       "kernels where the ideal order wins >= 20 %% (goal: at least one)\n",
		       goal_met > 0 ? "ok" : "not ok", goal_met, goal_kernels);
	}
	if (use_re)
		regfree(&re);
	free(ptx);
	return 0;
}
