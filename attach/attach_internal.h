/* attach_internal.h — what policy.c and devrt.c share inside attach/. */
#ifndef ATTACH_INTERNAL_H
#define ATTACH_INTERNAL_H

#include "attach/gx_attach.h"
#include "common/gx_log.h"
#include "common/gx_util.h"

/* The process's host table, latched by the first gx_attach_rewrite_opts(). */
extern const struct gx_attach_host *gx_attach_env;
/* A real driver function: CU(cuMemAlloc_v2)(&p, n). */
#define CU(name) (gx_attach_env->cu->name)

/* devrt.c, used by policy.c: the runtime of n joined policies (n <=
 * GX_PMERGE_MAX, descriptions relocated by gx_pset_build). */
int gx_devrt_start(const struct gx_policy_desc *d, const char *const *tags, size_t n);
/* Make sure the current context has its device maps (before a rewrite). */
int gx_devrt_ctx_ready(void);
/* Stop the runtime started by gx_devrt_start (a live detach): unsubscribe,
 * last drain and flush without synchronizing, tool logs closed, device
 * maps freed unless keep_device; gx_devrt_start may run again. */
void gx_devrt_stop(bool keep_device);

/* launches.c: GPU time of each launch through a pair of timing events on
 * its stream, harvested by the drain thread (no waiting). Per context. */
#define GX_LT_MAX 16384 /* event pairs in flight per context */
struct gx_lt_slot {
	CUevent start, end;
	uint32_t seq; /* the launch's number in the process (GX_TEV_LAUNCH) */
	bool instr;   /* its module carries the hooks */
	uint64_t graph; /* a graph launch: its exec's list (gen; GX_TEV_GLTIME); 0: a kernel */
	int next;     /* free list or in-flight list */
};
struct gx_lt {
	bool on;
	CUevent ref;      /* recorded and waited for at set-up ... */
	uint64_t ref_ns;  /* ... at this CLOCK_REALTIME */
	struct gx_lt_slot *slot;
	unsigned nr_slots, cap;
	int free_head, busy_head, busy_tail;
	unsigned nr_busy;
	uint64_t untimed; /* launches with no free pair */
	uint64_t gpu_ns, gpu_ns_instr; /* harvested so far: all, instrumented */
	uint64_t graph_timed, graph_gpu_ns; /* graph launches harvested, their GPU time */
};
#define GX_LT_FIRST 8  /* launches of each kernel always timed */
#define GX_LT_EVERY 64 /* then one in this many (GPUEXT_LAUNCH_TIMES) ... */
#define GX_LT_GAP_NS 20000000ull /* ... at most one per kernel in this time */
unsigned gx_lt_every(void); /* GPUEXT_LAUNCH_TIMES: 0 none, 1 all, N one in N */
/* Is the kernel's nth launch (from 1), at host time now_ns, timed? *last_ns:
 * when the kernel's last sampled launch was (updated when this one is). */
bool gx_lt_sampled(uint64_t nth, uint64_t now_ns, uint64_t *last_ns);
int gx_lt_init(struct gx_lt *lt, CUstream own);
/* Before the launch: a pair with its start recorded on `stream`, or -1
 * (timing off, stream being captured, no free pair, driver error). */
int gx_lt_start(struct gx_lt *lt, CUstream stream);
/* After the launch: record its end; false (and the pair freed) on error. */
bool gx_lt_end(struct gx_lt *lt, int slot, CUstream stream, uint32_t seq, bool instr);
/* After a graph launch of the exec list `gen`: the same, for GX_TEV_GLTIME. */
bool gx_lt_end_graph(struct gx_lt *lt, int slot, CUstream stream, uint64_t gen);
/* The launch never happened (vetoed, failed): give the pair back. */
void gx_lt_abandon(struct gx_lt *lt, int slot);
/* Up to max completed pairs as GX_TEV_LTIME records into out; how many. */
unsigned gx_lt_harvest(struct gx_lt *lt, unsigned ctx, struct gx_buf *out, unsigned max);
void gx_lt_free(struct gx_lt *lt);

#endif
