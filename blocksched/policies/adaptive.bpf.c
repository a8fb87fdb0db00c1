/* adaptive — learns each kernel's cost map from its own exit timings and
 * runs the next launch heaviest chunks first.
 *
 * What: CLAIM mode with greedy stealing, plus the exit hook. For every
 * chunk that finishes it takes the time per unit, (now - sched_start) /
 * sched_units in ns, and keeps per kernel (64 slots by kernel id) and per
 * SM (a per-SM sharded array: each SM updates its own copy, no atomics)
 * the range [lo, hi] of this launch's times and that of the previous
 * launch (a launch is told from the next by ctx->launch_id). When the
 * previous launch's range is wide (hi > lo x (100 + imbalance_pct) / 100,
 * default 20 %), it returns a class 1..15 placing the chunk's time in that
 * range (15 = slowest): the runtime lists the chunks by class and the next
 * launch of the kernel with the same grid claims them heaviest first —
 * longest-processing-time-first scheduling, with the order learned rather
 * than known. A narrow range returns 0: no list, no reordering.
 *
 * When it wins: kernels launched again and again with the same uneven
 * blocks (sparse matrices, graph frontiers that change slowly, grouped GEMMs
 * with fixed group sizes): the hardware starts blocks in index order, so
 * heavy blocks late in the grid start late and set the tail; heaviest-first
 * puts the long ones at the front and fills the end with short ones. With
 * even blocks it learns that, hints nothing, and is greedy.
 *
 * With the guard on (the default), the launcher also times each kernel's
 * first launches as its copy and as it is and keeps the faster: a kernel this
 * policy cannot speed up runs as the hardware schedules it.
 *
 * Trade-offs: the first launch of a kernel (and of each new grid size) runs
 * unordered; the order follows the costs of one launch earlier, so blocks
 * whose cost changes every launch are ordered by last time's cost. Shards
 * race between the workers of one SM (a lost min/max update only blurs the
 * range). Costs one call per chunk at its end. */
#include "blocksched/policies/sched_common.h"

GX_SCHED_SETTINGS(GX_SCHED_CLAIM, 8);
/* The launcher's guard (gx_blocksched.h): each kernel and grid is timed a few
 * times as its copy and as it is, and runs as the faster. On the H200 the
 * hardware's scheduler wins on most kernels; learning the order is worth
 * nothing where learning not to schedule is worth more. 0 turns it off. */
GX_SCHED_KNOB(__u32, gx_sched_guard, 1);
GX_SCHED_KNOB(__u32, imbalance_pct, 20);

#define KSLOTS 64

struct kstat {
	__u64 launch; /* launch_id of the launch `cur_*` belongs to */
	__u32 cur_lo, cur_hi, cur_n;
	__u32 lo, step; /* the previous launch: fastest time, range / 14 (0: even) */
	__u32 pad;
};

struct {
	__uint(type, GDEV_MAP_PERSM_ARRAY);
	__uint(max_entries, KSLOTS);
	__type(key, __u32);
	__type(value, struct kstat);
} adaptive_stats SEC(".maps");

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
	if (s->launch != ctx->launch_id) {
		/* a new launch: the last one's range becomes the reference */
		if (s->cur_n && s->cur_hi >= s->cur_lo) {
			__u32 lo = s->cur_lo, hi = s->cur_hi;
			int wide = (__u64)hi * 100 > (__u64)lo * (100 + imbalance_pct);
			__u32 step = (hi - lo) / (GDEV_SCHED_CLASS_MAX - 1);
			s->lo = lo;
			s->step = !wide ? 0 : step ? step : 1;
		}
		s->launch = ctx->launch_id;
		s->cur_lo = d;
		s->cur_hi = d;
		s->cur_n = 0;
	}
	if (d < s->cur_lo)
		s->cur_lo = d;
	if (d > s->cur_hi)
		s->cur_hi = d;
	s->cur_n++;
	__u32 step = s->step, lo = s->lo;
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
