/* gx_lcfirst — strict priority for latency-critical tenants, by launch
 * gating (user space: the shim's task_launch; no kernel module needed).
 *
 * What: while any LC tenant of the GPU has launches in flight, or finished
 * one less than `guard_us` ago (the host gap between the kernels of one
 * request), best-effort launches are held. Otherwise BE tenants launch,
 * at most `be_window` in flight each while an LC tenant exists. LC launches
 * always pass. A BE launch held `max_hold_ms` passes anyway: BE progresses
 * at least that fast, whatever LC does.
 * When it wins: LC work that comes in short bursts with gaps, next to BE
 * work made of many launches (the LC burst waits only for what BE had in
 * flight when it arrived: at most be_window launches per BE tenant).
 * Trade-offs: gating cannot preempt; a BE kernel already on the GPU still
 * delays LC, so long BE kernels need a small window (1) or the prediction
 * of gx_lcslo. A continuously busy LC tenant starves BE down to one launch
 * per max_hold_ms. With guard_us 0 and be_window 8 this is the mechanism
 * of XSched's Level 1 (in-flight threshold, low priority suspended while
 * high priority has work). Under gpuext.ko task_launch is never called:
 * there, gx_prio's timeslices schedule queues instead. */
#include "gx_common.bpf.h"

const volatile __u32 guard_us = 100;
const volatile __u32 be_window = 1;
const volatile __u32 max_hold_ms = 100;

__u64 nr_lc, nr_be_pass, nr_held_lc, nr_held_window, nr_starved;

SEC("struct_ops/lcfirst_launch")
int BPF_PROG(lcfirst_launch, struct gpu_sched_ctx *gctx, struct gpu_tenant *t, struct gpu_launch *l)
{
	__u64 now = l->now_ns, done = l->lc_last_complete_ns;

	if (t->cls == GPU_CLASS_LC) {
		GX_STAT(nr_lc);
		return GPU_BYPASS; /* pass, whatever its window */
	}
	if (!l->lc_tenants)
		return GPU_DEFAULT;
	if (l->held_ns >= (__u64)max_hold_ms * 1000000) {
		GX_STAT(nr_starved);
		return GPU_BYPASS;
	}
	if (l->lc_inflight) {
		GX_STAT(nr_held_lc);
		bpf_gpu_hold_launch(gctx, l, 1000); /* an LC completion wakes it */
		return GPU_BYPASS;
	}
	if (done && now - done < (__u64)guard_us * 1000) {
		GX_STAT(nr_held_lc);
		bpf_gpu_hold_launch(gctx, l, guard_us - (now - done) / 1000 + 1);
		return GPU_BYPASS;
	}
	if (be_window && t->inflight >= be_window) {
		GX_STAT(nr_held_window);
		bpf_gpu_hold_launch(gctx, l, 1000); /* its own completion wakes it */
		return GPU_BYPASS;
	}
	GX_STAT(nr_be_pass);
	return GPU_DEFAULT;
}

SEC(".struct_ops.link")
struct gpu_sched_ops lcfirst_ops = {
	.task_launch = (void *)lcfirst_launch,
	.name = "lcfirst",
};
