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
 *  3. At most `window` BE launches in flight per tenant.
 * Every `adjust_ms` the LC p99 the runtime measured is compared with
 * target_us: above it, the margin grows by half (at least 50 µs, at most to
 * max_margin_us) and the window halves; below 3/4 of it, the margin shrinks
 * by an eighth and the window grows by one (up to max_window). The margin
 * is BE idle time before every predicted LC burst: its cap bounds what the
 * controller may take from BE chasing a target it cannot reach. The window is published in the
 * tenant table (`gpuext tenant` shows it; a value set from outside is
 * overwritten at the next adjustment). A BE launch held max_hold_ms passes.
 * When it wins: LC work that recurs (a service at a steady request rate)
 * next to long BE kernels, where gating alone leaves LC waiting for a BE
 * kernel already running: the prediction keeps that from happening and the
 * controller trades BE idle time for the p99 target, no more.
 * Trade-offs: irregular LC arrivals get no prediction (rules 1 and 3 only);
 * each BE process runs its own controller on the shared measurements; the
 * target must be reachable (an LC kernel's own time alone is a floor), or
 * BE gives up time for nothing, down to one launch per max_hold_ms. */
#include "gx_common.bpf.h"

const volatile __u32 target_us = 200;
const volatile __u32 guard_us = 50;
const volatile __u32 max_window = 4;
const volatile __u32 margin_us = 100;  /* starting margin */
const volatile __u32 max_margin_us = 1000;
const volatile __u32 adjust_ms = 250;
const volatile __u32 max_hold_ms = 100;

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

__u64 nr_pass, nr_held_busy, nr_held_predicted, nr_held_window, nr_starved, nr_tighten, nr_relax;

SEC("struct_ops/lcslo_launch")
int BPF_PROG(lcslo_launch, struct gpu_sched_ctx *gctx, struct gpu_tenant *t, struct gpu_launch *l)
{
	__u32 zero = 0;
	__u64 now = l->now_ns, done = l->lc_last_complete_ns, p99 = l->lc_p99_ns, target, horizon;
	struct slo_ctl *c;

	if (t->cls == GPU_CLASS_LC)
		return GPU_BYPASS;
	if (!l->lc_tenants)
		return GPU_DEFAULT;
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
			c->window = c->window > 1 ? c->window / 2 : 1;
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
