/* gx_tbucket — a token bucket of GPU time per best-effort tenant, while a
 * latency-critical tenant shares the GPU (launch gating in user space).
 *
 * What: each BE process earns `share_pct` % of wall time as tokens (ns of
 * GPU time), up to `burst_us`; a launch costs the tenant's measured GPU
 * time per launch (kernel_ns; `cost_us` until known). Without tokens it is
 * held until enough have accrued. At most `be_window` launches in flight
 * per BE tenant. With no LC tenant on the GPU, nothing is limited; LC
 * launches always pass.
 * When it wins: a guaranteed share for LC (100 - share_pct % of the GPU is
 * left idle for it) and a predictable BE rate, e.g. when several BE tenants
 * must not take the whole GPU between LC requests; BE throughput is capped
 * at share_pct even when LC idles.
 * Trade-offs: the cap is the price — idle gaps the GPU could have used;
 * LC work arriving during a BE kernel still waits for it (no preemption).
 * The bucket is per process: a tenant of several processes gets one each. */
#include "gx_common.bpf.h"

const volatile __u32 share_pct = 70;
const volatile __u32 burst_us = 2000;
const volatile __u32 cost_us = 100;
const volatile __u32 be_window = 2;

struct tb_bucket {
	__u64 tokens_ns;
	__u64 last_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);   /* tenant id */
	__type(value, struct tb_bucket);
} buckets SEC(".maps");

__u64 nr_pass, nr_held_tokens, nr_held_window;

SEC("struct_ops/tbucket_launch")
int BPF_PROG(tbucket_launch, struct gpu_sched_ctx *gctx, struct gpu_tenant *t, struct gpu_launch *l)
{
	__u32 id = t->id;
	__u64 now = l->now_ns, cost, pct = share_pct, need;
	struct tb_bucket *b, nb;

	if (t->cls == GPU_CLASS_LC || !l->lc_tenants || !pct)
		return GPU_DEFAULT;
	if (pct > 100)
		pct = 100;
	b = bpf_map_lookup_elem(&buckets, &id);
	if (!b) {
		nb.tokens_ns = (__u64)burst_us * 1000;
		nb.last_ns = now;
		bpf_map_update_elem(&buckets, &id, &nb, BPF_ANY);
		b = bpf_map_lookup_elem(&buckets, &id);
		if (!b)
			return GPU_DEFAULT;
	}
	if (now > b->last_ns) {
		b->tokens_ns += (now - b->last_ns) * pct / 100;
		if (b->tokens_ns > (__u64)burst_us * 1000)
			b->tokens_ns = (__u64)burst_us * 1000;
	}
	b->last_ns = now;
	if (be_window && t->inflight >= be_window) {
		GX_STAT(nr_held_window);
		bpf_gpu_hold_launch(gctx, l, 1000);
		return GPU_BYPASS;
	}
	cost = t->kernel_ns ? t->kernel_ns : (__u64)cost_us * 1000;
	if (b->tokens_ns >= cost) {
		b->tokens_ns -= cost;
		GX_STAT(nr_pass);
		return GPU_DEFAULT;
	}
	need = (cost - b->tokens_ns) * 100 / pct / 1000 + 1; /* µs until it has them */
	if (need > 100000)
		need = 100000;
	GX_STAT(nr_held_tokens);
	bpf_gpu_hold_launch(gctx, l, need);
	return GPU_BYPASS;
}

SEC(".struct_ops.link")
struct gpu_sched_ops tbucket_ops = {
	.task_launch = (void *)tbucket_launch,
	.name = "tbucket",
};
