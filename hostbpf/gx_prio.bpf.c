/* gx_prio — timeslice by priority, with a per-process queue limit.
 *
 * What: when a hardware queue (channel group) is bound, give it a timeslice
 * proportional to the priority the application asked for
 * (base_us * (1 + priority)) and a runlist interleave level (HIGH from
 * priority 6, MEDIUM from 3, else LOW). With `max_queues` > 0 a process may
 * bind at most that many queues; further binds are rejected.
 * When it wins: latency-critical work (inference) next to throughput work
 * (training) on one GPU: the critical queues run longer and more often
 * without starving the rest; the queue limit stops one tenant from
 * flooding the runlist.
 * Trade-offs: priorities are the application's own claim — scope the policy
 * (per process or cgroup) to tenants you trust, or ignore their priority
 * with a fixed base; longer timeslices raise preemption latency for others. */
#include "gx_common.bpf.h"

const volatile __u32 base_us = 1024;
const volatile __u32 max_queues = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);   /* tgid */
	__type(value, __u32); /* queues bound */
} bound SEC(".maps");

__u64 nr_bound, nr_rejected, nr_destroyed;

SEC("struct_ops/prio_task_init")
int BPF_PROG(prio_task_init, struct gpu_sched_ctx *gctx, struct gpu_queue *q)
{
	__u32 tgid = q->tgid, one = 1, *n;
	__s32 prio = q->priority;
	__u64 ts;

	n = bpf_map_lookup_elem(&bound, &tgid);
	if (max_queues && n && *n >= max_queues) {
		bpf_gpu_reject_bind(gctx, q);
		GX_STAT(nr_rejected);
		return GPU_BYPASS;
	}
	if (n)
		*n += 1;
	else
		bpf_map_update_elem(&bound, &tgid, &one, BPF_NOEXIST);
	if (prio < 0)
		prio = 0;
	if (prio > GPU_PRIO_MAX)
		prio = GPU_PRIO_MAX;
	ts = (__u64)base_us * (1 + prio);
	if (ts > GPU_TIMESLICE_MAX_US)
		ts = GPU_TIMESLICE_MAX_US;
	if (ts < GPU_TIMESLICE_MIN_US)
		ts = GPU_TIMESLICE_MIN_US;
	bpf_gpu_set_attr(gctx, q, GPU_ATTR_PRIORITY, prio);
	bpf_gpu_set_attr(gctx, q, GPU_ATTR_TIMESLICE_US, ts);
	bpf_gpu_set_attr(gctx, q, GPU_ATTR_INTERLEAVE,
			 prio >= 6 ? GPU_IL_HIGH : prio >= 3 ? GPU_IL_MEDIUM : GPU_IL_LOW);
	GX_STAT(nr_bound);
	return GPU_BYPASS;
}

SEC("struct_ops/prio_task_destroy")
int BPF_PROG(prio_task_destroy, struct gpu_sched_ctx *gctx, struct gpu_queue *q)
{
	__u32 tgid = q->tgid, *n;

	n = bpf_map_lookup_elem(&bound, &tgid);
	if (n && *n > 0)
		*n -= 1; /* handlers of one device run serialized */
	GX_STAT(nr_destroyed);
	return GPU_DEFAULT;
}

SEC(".struct_ops.link")
struct gpu_sched_ops prio_ops = {
	.task_init = (void *)prio_task_init,
	.task_destroy = (void *)prio_task_destroy,
	.name = "prio",
};
