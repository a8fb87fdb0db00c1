/* gx_lcslo — keep latency-critical p99 under a target and give best-effort
 * tenants the rest (launch gating in user space, adaptive).
 *
 * What: three rules for a BE launch while an LC tenant shares the GPU.
 *  1. LC busy (launches in flight, or one finished less than guard_us ago):
 *     hold, as gx_lcfirst does.
 *  2. LC about to come: the runtime predicts the start of the next LC burst
 *     from the period of the previous ones (lc_next_ns). BE work queued on
 *     the GPU (be_queued_ns: in flight x measured GPU time per launch) plus
 *     this launch plus a safety margin must drain before it, else hold —
 *     so the GPU is idle, not busy with BE kernels, when LC arrives.
 *  3. BE tenants take turns (turn_ms each, in the table's order): out of
 *     its turn a BE launch is held while another BE tenant has work in
 *     flight or launched in the last idle_us — so a turn's owner that has
 *     nothing to do leaves the GPU to the others (work conserving).
 *  4. At most `window` BE launches in flight per tenant.
 * Every `adjust_ms` the LC p99 the runtime measured is compared with
 * target_us: above it, the margin grows by half (at least 50 µs, at most to
 * max_margin_us) and the window halves (not below min_window); below 3/4 of
 * it, the margin shrinks by an eighth and the window grows by one (up to
 * max_window). A window under 2 leaves the GPU idle between a BE kernel's
 * end and the next launch (the completion poll, the wake, the launch: 20–
 * 40 µs on the H200, a third of a 100 µs kernel), so 2 is the floor. The margin
 * is BE idle time before every predicted LC burst: its cap bounds what the
 * controller may take from BE chasing a target it cannot reach. The window is published in the
 * tenant table (`gpuext tenant` shows it; a value set from outside is
 * overwritten at the next adjustment). A BE launch held max_hold_ms passes.
 * When it wins: LC work that recurs (a service at a steady request rate)
 * next to long BE kernels, where gating alone leaves LC waiting for a BE
 * kernel already running: the prediction keeps that from happening and the
 * controller trades BE idle time for the p99 target, no more. Turns are
 * what keeps BE throughput: without MPS the GPU time-slices between
 * processes, and BE tenants that each keep a short window in flight make it
 * switch contexts after almost every kernel (on the H200, bench/results/2026-12-03-gpu-run28.md: 4 BE
 * tenants with windows of 1–4 kept 43.5 % of their native throughput, their
 * 100 µs kernels taking 0.9 ms from launch to completion). One BE context
 * at a time with a short queue keeps the GPU busy and still drains before
 * LC comes.
 * Trade-offs: irregular LC arrivals get no prediction (rules 1, 3 and 4);
 * BE tenants share by turns, not by the kernel: over a period shorter than
 * be_tenants x turn_ms one of them may get all the BE time; a turn is at
 * most max_hold_ms / be_tenants, so no launch waits for its turn longer;
 * each BE process runs its own controller on the shared measurements; the
 * target must be reachable (an LC kernel's own time alone is a floor), or
 * BE gives up time for nothing, down to one launch per max_hold_ms. */
#include "gx_common.bpf.h"

const volatile __u32 target_us = 200;
const volatile __u32 guard_us = 50;
const volatile __u32 max_window = 4;
const volatile __u32 min_window = 2;   /* one kernel queued behind the running one: no gap */
const volatile __u32 margin_us = 100;  /* starting margin */
const volatile __u32 max_margin_us = 500;
const volatile __u32 adjust_ms = 250;
const volatile __u32 max_hold_ms = 100;
const volatile __u32 turn_ms = 20;     /* 0: no turns */
const volatile __u32 idle_us = 200;

struct slo_ctl {
	__u64 margin_ns;
	__u64 last_ns;
	__u32 window;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct slo_ctl);
} state SEC(".maps");

__u64 nr_pass, nr_held_busy, nr_held_predicted, nr_held_turn, nr_held_window, nr_starved, nr_tighten, nr_relax;

static __u32 lo_window(void)
{
	__u32 lo = min_window ? min_window : 1;
	return max_window && lo > max_window ? max_window : lo;
}

/* Rule 3: 0 when this BE tenant may launch now, else how long to wait (µs)
 * for its turn; a launch or completion anywhere wakes it earlier. */
static __u64 turn_wait_us(struct gpu_tenant *t, struct gpu_launch *l)
{
	__u64 now = l->now_ns, turn, slot, ahead, since, others;
	__u32 n = l->be_tenants;

	if (!turn_ms || n < 2 || l->be_rank >= n)
		return 0;
	turn = (__u64)turn_ms * 1000000;
	if (max_hold_ms && turn * n > (__u64)max_hold_ms * 1000000)
		turn = (__u64)max_hold_ms * 1000000 / n;
	if (!turn)
		return 0;
	slot = (now / turn) % n;
	if (slot == l->be_rank)
		return 0;
	others = l->be_inflight > t->inflight ? l->be_inflight - t->inflight : 0;
	since = l->be_other_last_launch_ns > l->lc_last_complete_ns ? l->be_other_last_launch_ns
								      : l->lc_last_complete_ns;
	if (!others && now - since >= (__u64)idle_us * 1000)
		return 0; /* the owner has nothing to do */
	ahead = (l->be_rank + n - slot) % n;
	return (ahead * turn - now % turn) / 1000 + 1;
}

/* Rule 3 applied: hold the launch until its turn (true), or let it on. */
static bool held_for_turn(struct gpu_sched_ctx *gctx, struct gpu_tenant *t, struct gpu_launch *l)
{
	__u64 wait = turn_wait_us(t, l);

	if (!wait)
		return false;
	GX_STAT(nr_held_turn);
	bpf_gpu_hold_launch(gctx, l, wait < 1000 ? wait : 1000);
	return true;
}

SEC("struct_ops/lcslo_launch")
int BPF_PROG(lcslo_launch, struct gpu_sched_ctx *gctx, struct gpu_tenant *t, struct gpu_launch *l)
{
	__u32 zero = 0;
	__u64 now = l->now_ns, done = l->lc_last_complete_ns, p99 = l->lc_p99_ns, target, horizon;
	struct slo_ctl *c;

	if (t->cls == GPU_CLASS_LC)
		return GPU_BYPASS;
	if (!l->lc_tenants)
		return l->held_ns < (__u64)max_hold_ms * 1000000 && held_for_turn(gctx, t, l) ? GPU_BYPASS
											: GPU_DEFAULT;
	c = bpf_map_lookup_elem(&state, &zero);
	if (!c)
		return GPU_DEFAULT;
	if (!c->window) {
		c->window = max_window ? max_window : 1;
		c->margin_ns = (__u64)margin_us * 1000;
		c->last_ns = now;
		bpf_gpu_set_window(gctx, t, c->window);
	}
	target = (__u64)target_us * 1000;
	if (now - c->last_ns >= (__u64)adjust_ms * 1000000 && p99) {
		c->last_ns = now;
		if (p99 > target) {
			c->margin_ns += c->margin_ns / 2 > 50000 ? c->margin_ns / 2 : 50000;
			if (c->margin_ns > (__u64)max_margin_us * 1000)
				c->margin_ns = (__u64)max_margin_us * 1000;
			c->window = c->window / 2 > lo_window() ? c->window / 2 : lo_window();
			GX_STAT(nr_tighten);
		} else if (p99 < target * 3 / 4) {
			c->margin_ns -= c->margin_ns / 8;
			if (c->window < max_window)
				c->window++;
			GX_STAT(nr_relax);
		}
		bpf_gpu_set_window(gctx, t, c->window);
	}
	if (l->held_ns >= (__u64)max_hold_ms * 1000000) {
		GX_STAT(nr_starved);
		return GPU_BYPASS;
	}
	if (l->lc_inflight || (done && now - done < (__u64)guard_us * 1000)) {
		GX_STAT(nr_held_busy);
		bpf_gpu_hold_launch(gctx, l, l->lc_inflight ? 1000 : guard_us + 1);
		return GPU_BYPASS;
	}
	horizon = l->be_queued_ns + t->kernel_ns + c->margin_ns;
	if (l->lc_next_ns && now + horizon >= l->lc_next_ns) {
		GX_STAT(nr_held_predicted);
		bpf_gpu_hold_launch(gctx, l, 1000); /* the LC launch wakes it */
		return GPU_BYPASS;
	}
	if (held_for_turn(gctx, t, l))
		return GPU_BYPASS;
	if (t->inflight >= c->window) {
		GX_STAT(nr_held_window);
		bpf_gpu_hold_launch(gctx, l, 1000);
		return GPU_BYPASS;
	}
	GX_STAT(nr_pass);
	return GPU_BYPASS; /* its window is c->window, checked above */
}

SEC(".struct_ops.link")
struct gpu_sched_ops lcslo_ops = {
	.task_launch = (void *)lcslo_launch,
	.name = "lcslo",
};
