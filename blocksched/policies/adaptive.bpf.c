/* adaptive — learns each kernel's cost map from its own exit timings and
 * runs the next launch heaviest chunks first.
 *
 * What: CLAIM mode with greedy stealing, plus the exit hook. For every
 * chunk that finishes it takes the time per unit, (now - sched_start) /
 * sched_units in ns, and keeps per kernel (64 slots by kernel id, one
 * copy for the whole GPU) the range [lo, hi] of this launch's times and
 * that of the previous launch (a launch is told from the next by
 * ctx->launch_id; the first chunk to see a new one swaps the launch id in
 * with one atomic exchange and rolls the range over, alone). When the
 * previous launch's range is wide (hi > lo x (100 + imbalance_pct) / 100,
 * default 20 %), it returns a class 1..31 placing the chunk's time in that
 * range (31 = slowest; 31 rather than 15 classes: on tail_tile the coarser
 * ones cost 2 points against the ideal order,
 * bench/results/2026-12-04-gpu-run54.md): the runtime lists
 * the chunks by class and the next launch of the kernel with the same
 * grid claims them heaviest first — longest-processing-time-first
 * scheduling, with the order learned rather than known. A narrow range returns 0: no list, no reordering.
 *
 * When it wins: kernels launched again and again with the same uneven
 * blocks (sparse matrices, graph frontiers that change slowly, grouped GEMMs
 * with fixed group sizes): the hardware starts blocks in index order, so
 * heavy blocks late in the grid start late and set the tail; heaviest-first
 * puts the long ones at the front and fills the end with short ones. It
 * pays where blocks are few per SM (one 128x128 GEMM tile per SM: -28 % and
 * -25 % on the H200, as much as the ideal order; bench/sched_bench); with
 * many small blocks per SM the hardware is already near balance and the
 * guard below keeps the kernel as it is. With even blocks it learns that,
 * hints nothing, and is greedy.
 *
 * With the guard on (the default), the launcher also times each kernel's
 * first launches as its copy, as a static-only copy (each worker a fixed
 * stride of blocks, no claim: the cheapest loop) and as it is, and keeps the
 * fastest: a kernel this policy cannot speed up runs as the hardware
 * schedules it, or as the static loop where that beats the hardware (vadd:
 * 3 % faster on the H200). The choice keeps being timed on the launches
 * after it, and a copy is given up as soon as it is slower.
 *
 * Trade-offs: the first launch of a kernel (and of each new grid size) runs
 * unordered; the order follows the costs of one launch earlier, so blocks
 * whose cost changes every launch are ordered by last time's cost. The
 * range is the whole GPU's, not each SM's: with one block per
 * SM an SM sees two or three blocks a launch, and classes relative to its
 * own few would order nothing (bench/sched_bench's gemm_tile_imb). The
 * price: every chunk's end makes two or three atomics on one shared line
 * (the range is widened with compare-and-swap, at most three tries: a lost
 * update only blurs the range). Costs one call per chunk at its end. */
#include "blocksched/policies/sched_common.h"

/* 16 claims per worker: a grid of up to 16 blocks per worker is claimed one
 * block at a time, so heaviest-first orders single blocks (a chunk of two
 * heavy tiles would run back to back on one SM: tail_tile in
 * bench/sched_bench). Larger grids still claim several blocks at once. */
GX_SCHED_SETTINGS(GX_SCHED_CLAIM, 16);
/* The launcher's guard (gx_blocksched.h): each kernel and grid is timed a few
 * times as its copy, as its static copy and as it is, and runs as the fastest. On the H200 the
 * hardware's scheduler wins on most kernels; learning the order is worth
 * nothing where learning not to schedule is worth more. 0 turns it off. */
GX_SCHED_GUARD(1);
GX_SCHED_KNOB(__u32, imbalance_pct, 20);

#define KSLOTS 64

/* Shared by every SM, so only atomics read or write `cur` and `ref`: an SM's
 * plain loads may be served by its own L1, which other SMs' stores do not
 * reach within a launch (a stale range there made the order drift launch
 * after launch). A plain read of `launch` only decides whether to try the
 * exchange; the exchange decides who rolls over. */
struct kstat {
	__u64 launch; /* launch_id of the launch `cur` belongs to */
	__u64 cur;    /* this launch's range: lo | hi << 32 (0: none yet) */
	__u64 ref;    /* the previous launch's: lo | step << 32 (step 0: even or unknown) */
};

struct {
	__uint(type, GDEV_MAP_ARRAY);
	__uint(max_entries, KSLOTS);
	__type(key, __u32);
	__type(value, struct kstat);
} adaptive_stats SEC(".maps");

static __always_inline __u64 range_with(__u64 c, __u32 d)
{
	__u32 lo = (__u32)c, hi = (__u32)(c >> 32);
	if (!c)
		return (__u64)d << 32 | d;
	return (__u64)(d > hi ? d : hi) << 32 | (d < lo ? d : lo);
}

/* One attempt to widen s->cur to hold d, *c its last value seen: 1 when
 * done (already wide enough, or swapped in), else *c is what another SM
 * wrote meanwhile. */
static __always_inline int widen(struct kstat *s, __u64 *c, __u32 d)
{
	__u64 n = range_with(*c, d);
	if (n == *c)
		return 1;
	__u64 seen = __sync_val_compare_and_swap(&s->cur, *c, n);
	if (seen == *c)
		return 1;
	*c = seen;
	return 0;
}

/* 32-bit arithmetic on the hot path (the JIT makes a 64-bit division a
 * long routine and registers are what persistent kernels can least spare):
 * times per unit in ns saturate at 2^32 - 1 (4.3 s). */
SEC("gdev/sched/exit")
int adaptive_exit(struct gdev_ctx *ctx)
{
	__u32 key = (__u32)ctx->kernel_id % KSLOTS;
	struct kstat *s = bpf_map_lookup_elem(&adaptive_stats, &key);
	if (!s)
		return 0;
	__u32 units = ctx->sched_units ? ctx->sched_units : 1;
	__u64 ns = gdev_globaltimer() - ctx->sched_start;
	__u32 d = (ns > 0xffffffffull ? 0xffffffffu : (__u32)ns) / units;
	if (s->launch != ctx->launch_id &&
	    __sync_lock_test_and_set(&s->launch, ctx->launch_id) != ctx->launch_id) {
		/* a new launch, and this chunk the first to see it: the last
		 * one's range becomes the reference, this one starts at d */
		__u64 old = __sync_lock_test_and_set(&s->cur, (__u64)d << 32 | d);
		__u32 lo = (__u32)old, hi = (__u32)(old >> 32);
		if (old && hi >= lo) {
			int wide = (__u64)hi * 100 > (__u64)lo * (100 + imbalance_pct);
			__u32 step = (hi - lo) / (GDEV_SCHED_CLASS_MAX - 1);
			step = !wide ? 0 : step ? step : 1;
			__sync_lock_test_and_set(&s->ref, (__u64)step << 32 | lo);
		}
	} else {
		/* a coherent read (fetch-or 0), then at most three tries */
		__u64 c = __sync_fetch_and_or(&s->cur, 0);
		if (!widen(s, &c, d) && !widen(s, &c, d))
			widen(s, &c, d);
	}
	__u64 ref = __sync_fetch_and_or(&s->ref, 0);
	__u32 lo = (__u32)ref, step = (__u32)(ref >> 32);
	if (!step)
		return 0; /* even (or not known yet): no order to learn */
	if (d <= lo)
		return 1;
	__u32 c = 1 + (d - lo) / step;
	gdev_barrier_var(c); /* the bound below is for the verifier */
	return c > GDEV_SCHED_CLASS_MAX ? GDEV_SCHED_CLASS_MAX : c;
}

SEC("gdev/sched/should_try_steal")
int adaptive_steal(struct gdev_ctx *ctx)
{
	(void)ctx;
	return GDEV_DEFAULT;
}

GDEV_LICENSE("Dual BSD/GPL");
