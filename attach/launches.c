/* launches.c — what every launch cost on the GPU, for the tools' reports.
 *
 * Kernels that reach the driver as SASS only (PyTorch's wheels, cuBLAS,
 * cuDNN, NCCL) can carry no device hooks, so a tool's report would see
 * nothing of them. Each launch in a context with attached tools gets a pair
 * of timing events on its own stream instead: the start recorded just before
 * the driver's launch call, the end just after it (GX_EV_LAUNCH_DONE). The
 * drain thread harvests completed pairs (cuEventQuery, never a wait) and
 * logs a GX_TEV_LTIME record: when the kernel ran and for how long, placed
 * on the host clock through a reference event recorded when the context was
 * set up. No host synchronisation of the application's streams, ever.
 *
 * Costs: two cuEventRecord calls and one cuStreamIsCapturing per timed
 * launch (a stream being captured into a graph gets no events: they would
 * become graph nodes), and two more commands on the GPU between kernels.
 * Measured on the H200 with every launch timed, that was ~15 us per launch
 * of a launch-bound program (+50 % for PyTorch eager), so launches are
 * sampled: the first GX_LT_FIRST launches of each kernel, then one in
 * GPUEXT_LAUNCH_TIMES (default 64; 1: every launch; 0: none) but at most one
 * per kernel every GX_LT_GAP_NS (gx_lt_sampled); the reports
 * scale each kernel's timed mean to all its launches. Pairs are pooled per
 * context (at most GX_LT_MAX in flight; beyond that launches go untimed and
 * are counted). Graph launches get a pair around the whole cuGraphLaunch,
 * sampled per exec the same way (devrt.c): GX_TEV_GLTIME records. Everything
 * here runs under the device runtime's lock. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attach/attach_internal.h"
#include "gpuext/gx_toollog.h"

static uint64_t realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

unsigned gx_lt_every(void)
{
	static int every = -1;
	if (every < 0) {
		const char *e = getenv("GPUEXT_LAUNCH_TIMES");
		char *end;
		long v = e && *e ? strtol(e, &end, 10) : GX_LT_EVERY;
		every = e && *e && (*end || v < 0 || v > 1000000) ? GX_LT_EVERY : (int)v;
	}
	return (unsigned)every;
}

/* Past a kernel's first launches, one in `every` and at most one per
 * GX_LT_GAP_NS: a pair costs the GPU ~10 us between kernels back to back
 * (two timestamps where the next kernel would have started; bench/results/2026-12-06-gpu-run81.md: matmul's
 * 6.9 us kernel 2..3 points slower with one in 64 timed than untimed), so a
 * kernel launched every 50 us paid ~1.5 % at one in 64. The gap bounds it by time whatever the launch
 * rate (at most 50 pairs per second per kernel: ~0.05 % each), and the sample stays
 * periodic per kernel, so its mean is still the kernel's. Every launch
 * (GPUEXT_LAUNCH_TIMES=1) is what was asked: no gap. */
bool gx_lt_sampled(uint64_t nth, uint64_t now_ns, uint64_t *last_ns)
{
	unsigned every = gx_lt_every();
	if (!every)
		return false;
	if (every > 1 && nth > GX_LT_FIRST && (nth % every || now_ns - *last_ns < GX_LT_GAP_NS))
		return false;
	*last_ns = now_ns;
	return true;
}

int gx_lt_init(struct gx_lt *lt, CUstream own)
{
	memset(lt, 0, sizeof(*lt));
	lt->free_head = lt->busy_head = lt->busy_tail = -1;
	if (!gx_lt_every())
		return 0;
	/* The reference: recorded on the runtime's own stream and waited for,
	 * so its host time is known to a few microseconds. */
	if (CU(cuEventCreate)(&lt->ref, CU_EVENT_DEFAULT) != CUDA_SUCCESS)
		return -EIO;
	if (CU(cuEventRecord)(lt->ref, own) != CUDA_SUCCESS || CU(cuEventSynchronize)(lt->ref) != CUDA_SUCCESS) {
		CU(cuEventDestroy)(lt->ref);
		lt->ref = NULL;
		return -EIO;
	}
	lt->ref_ns = realtime_ns();
	lt->on = true;
	return 0;
}

/* A free pair: from the free list, else a new one, else -1. */
static int slot_get(struct gx_lt *lt)
{
	if (lt->free_head >= 0) {
		int s = lt->free_head;
		lt->free_head = lt->slot[s].next;
		return s;
	}
	if (lt->nr_slots == lt->cap) {
		unsigned cap = lt->cap ? lt->cap * 2 : 64;
		struct gx_lt_slot *n = cap <= GX_LT_MAX ? realloc(lt->slot, cap * sizeof(*n)) : NULL;
		if (!n)
			return -1;
		lt->slot = n;
		lt->cap = cap;
	}
	struct gx_lt_slot *s = &lt->slot[lt->nr_slots];
	if (CU(cuEventCreate)(&s->start, CU_EVENT_DEFAULT) != CUDA_SUCCESS)
		return -1;
	if (CU(cuEventCreate)(&s->end, CU_EVENT_DEFAULT) != CUDA_SUCCESS) {
		CU(cuEventDestroy)(s->start);
		return -1;
	}
	return (int)lt->nr_slots++;
}

static void slot_put(struct gx_lt *lt, int s)
{
	lt->slot[s].next = lt->free_head;
	lt->free_head = s;
}

int gx_lt_start(struct gx_lt *lt, CUstream stream)
{
	if (!lt->on)
		return -1;
	CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
	if (CU(cuStreamIsCapturing)(stream, &cs) != CUDA_SUCCESS || cs != CU_STREAM_CAPTURE_STATUS_NONE)
		return -1;
	int s = slot_get(lt);
	if (s < 0) {
		lt->untimed++;
		return -1;
	}
	if (CU(cuEventRecord)(lt->slot[s].start, stream) != CUDA_SUCCESS) {
		slot_put(lt, s);
		return -1;
	}
	return s;
}

/* A pair another thread opened may belong to a context torn down since
 * (its table freed, nr_slots 0): such a slot is ignored. */
void gx_lt_abandon(struct gx_lt *lt, int s)
{
	if (s >= 0 && (unsigned)s < lt->nr_slots)
		slot_put(lt, s);
}

static bool lt_end(struct gx_lt *lt, int s, CUstream stream, uint32_t seq, bool instr, uint64_t graph)
{
	if (s < 0 || (unsigned)s >= lt->nr_slots)
		return false;
	if (CU(cuEventRecord)(lt->slot[s].end, stream) != CUDA_SUCCESS) {
		slot_put(lt, s);
		return false;
	}
	lt->slot[s].seq = seq;
	lt->slot[s].instr = instr;
	lt->slot[s].graph = graph;
	lt->slot[s].next = -1;
	/* in flight, in launch order */
	if (lt->nr_busy)
		lt->slot[lt->busy_tail].next = s;
	else
		lt->busy_head = s;
	lt->busy_tail = s;
	lt->nr_busy++;
	return true;
}

bool gx_lt_end(struct gx_lt *lt, int s, CUstream stream, uint32_t seq, bool instr)
{
	return lt_end(lt, s, stream, seq, instr, 0);
}

bool gx_lt_end_graph(struct gx_lt *lt, int s, CUstream stream, uint64_t gen)
{
	return lt_end(lt, s, stream, 0, false, gen ? gen : 1);
}

unsigned gx_lt_harvest(struct gx_lt *lt, unsigned ctx, struct gx_buf *out, unsigned max)
{
	unsigned n = 0;
	int prev = -1;
	for (int s = lt->nr_busy ? lt->busy_head : -1; s >= 0 && n < max;) {
		struct gx_lt_slot *sl = &lt->slot[s];
		int next = sl->next;
		CUresult q = CU(cuEventQuery)(sl->end);
		if (q == CUDA_ERROR_NOT_READY) {
			prev = s;
			s = next;
			continue;
		}
		float ms0 = 0, ms = 0;
		if (q == CUDA_SUCCESS && sl->graph && CU(cuEventElapsedTime)(&ms0, lt->ref, sl->start) == CUDA_SUCCESS &&
		    CU(cuEventElapsedTime)(&ms, sl->start, sl->end) == CUDA_SUCCESS) {
			struct gx_tev_gltime r = { .h.type = GX_TEV_GLTIME, .h.len = sizeof(r), .ctx = ctx,
						   .exec = sl->graph,
						   .start_ns = lt->ref_ns + (uint64_t)((double)ms0 * 1e6),
						   .gpu_ns = (uint64_t)((double)ms * 1e6) };
			gx_buf_append(out, &r, sizeof(r));
			lt->graph_timed++;
			lt->graph_gpu_ns += r.gpu_ns;
			n++;
		} else if (q == CUDA_SUCCESS && CU(cuEventElapsedTime)(&ms0, lt->ref, sl->start) == CUDA_SUCCESS &&
			   CU(cuEventElapsedTime)(&ms, sl->start, sl->end) == CUDA_SUCCESS) {
			struct gx_tev_ltime r = { .h.type = GX_TEV_LTIME, .h.len = sizeof(r), .ctx = ctx,
						  .seq = sl->seq,
						  .start_ns = lt->ref_ns + (uint64_t)((double)ms0 * 1e6),
						  .gpu_ns = (uint64_t)((double)ms * 1e6) };
			gx_buf_append(out, &r, sizeof(r));
			lt->gpu_ns += r.gpu_ns;
			lt->gpu_ns_instr += sl->instr ? r.gpu_ns : 0;
			n++;
		}
		/* unlink s (done, or failed: either way its pair is free again) */
		if (prev >= 0)
			lt->slot[prev].next = next;
		else
			lt->busy_head = next;
		if (lt->busy_tail == s)
			lt->busy_tail = prev;
		lt->nr_busy--;
		slot_put(lt, s);
		s = next;
	}
	return n;
}

void gx_lt_free(struct gx_lt *lt)
{
	for (unsigned i = 0; i < lt->nr_slots; i++) {
		CU(cuEventDestroy)(lt->slot[i].start);
		CU(cuEventDestroy)(lt->slot[i].end);
	}
	if (lt->ref)
		CU(cuEventDestroy)(lt->ref);
	free(lt->slot);
	memset(lt, 0, sizeof(*lt));
	lt->free_head = lt->busy_head = lt->busy_tail = -1;
}
