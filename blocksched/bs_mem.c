/* bs_mem.c — blocksched's device memory (bs_internal.h).
 *
 * A per-stream state (include/gpuext/gx_work.h) serves every CLAIM launch on
 * its stream: stream order makes the reuse safe, and the launch's last
 * worker leaves it clean, so a launch costs no copy or memset. Only its
 * birth (zeroed by a memset queued on the stream), growth (a new block; the
 * old one is retired behind an event recorded on the stream and freed once
 * the event passed) and a reset before its epoch could overflow queue work.
 * The per-thread default stream has a state per thread.
 *
 * Hint blocks belong to a kernel, and several streams may use one at once:
 * one that grew is kept until its module or context goes (an event on one
 * stream cannot vouch for the others). They double in size, so a kernel
 * leaves at most log2 of its largest chunk count behind. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "blocksched/bs_internal.h"

struct skey {
	CUcontext ctx;
	CUstream stream;
	pid_t tid; /* the per-thread default stream only */
};
struct sstate {
	struct skey key;
	CUdeviceptr d;
	unsigned ccap;
	unsigned long long launches; /* CLAIM launches since the last reset */
	UT_hash_handle hh;
};

struct retired {
	struct retired *next;
	CUcontext ctx;
	CUdeviceptr d;
	CUevent ev; /* NULL: free at teardown only */
};

static struct sstate *states;
static struct retired *graveyard;

static void retire(CUcontext ctx, CUdeviceptr d, CUstream s, bool with_event)
{
	struct retired *r = calloc(1, sizeof(*r));
	if (!r)
		return; /* leaked: never freed while maybe in use */
	r->ctx = ctx;
	r->d = d;
	if (with_event && (CU(cuEventCreate)(&r->ev, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS ||
			   CU(cuEventRecord)(r->ev, s) != CUDA_SUCCESS)) {
		if (r->ev)
			CU(cuEventDestroy_v2)(r->ev);
		r->ev = NULL;
	}
	r->next = graveyard;
	graveyard = r;
}

void bs_retired_reap(CUcontext ctx, bool all)
{
	for (struct retired **p = &graveyard, *r; (r = *p);) {
		bool go = r->ctx == ctx &&
			  (all || (r->ev && CU(cuEventQuery)(r->ev) == CUDA_SUCCESS));
		if (!go) {
			p = &r->next;
			continue;
		}
		*p = r->next;
		/* At context teardown the context's memory goes with it. */
		if (!all)
			CU(cuMemFree_v2)(r->d);
		if (r->ev)
			CU(cuEventDestroy_v2)(r->ev);
		free(r);
	}
}

void bs_mem_retire(CUcontext ctx, CUdeviceptr d, CUstream s)
{
	(void)s;
	if (d)
		retire(ctx, d, NULL, false);
}

/* A zeroed block of `bytes` with its memset queued on s. */
static CUdeviceptr zeroed(size_t bytes, CUstream s)
{
	CUdeviceptr d = 0;
	if (CU(cuMemAlloc_v2)(&d, bytes) != CUDA_SUCCESS)
		return 0;
	if (CU(cuMemsetD8Async)(d, 0, bytes, s) != CUDA_SUCCESS) {
		CU(cuMemFree_v2)(d);
		return 0;
	}
	return d;
}

CUdeviceptr bs_state_get(CUcontext ctx, CUstream s, unsigned chunks)
{
	struct skey key;
	memset(&key, 0, sizeof(key)); /* hashed as bytes: padding included */
	key.ctx = ctx;
	key.stream = s;
	if (s == CU_STREAM_PER_THREAD)
		key.tid = (pid_t)syscall(SYS_gettid);
	struct sstate *st;
	HASH_FIND(hh, states, &key, sizeof(key), st);
	if (st && st->ccap >= chunks) {
		if (++st->launches < GX_WORK_EPOCH_MAX)
			return st->d;
		/* Before the epoch could wrap: everything back to zero. */
		if (CU(cuMemsetD8Async)(st->d, 0, gx_work_state_bytes(st->ccap), s) != CUDA_SUCCESS)
			return 0;
		st->launches = 1;
		return st->d;
	}
	unsigned cap = chunks < 1024 ? 1024 : chunks;
	if (st && cap < 2 * st->ccap && 2ull * st->ccap <= UINT32_MAX / 4)
		cap = 2 * st->ccap;
	CUdeviceptr d = zeroed(gx_work_state_bytes(cap), s);
	if (!d)
		return 0;
	if (!st) {
		st = calloc(1, sizeof(*st));
		if (!st) {
			CU(cuMemFree_v2)(d);
			return 0;
		}
		st->key = key;
		HASH_ADD(hh, states, key, sizeof(st->key), st);
	} else {
		retire(ctx, st->d, s, true);
	}
	st->d = d;
	st->ccap = cap;
	st->launches = 1;
	return d;
}

CUdeviceptr bs_hints_get(CUcontext ctx, CUstream s, CUdeviceptr *blk, unsigned *cap, unsigned chunks)
{
	if (*blk && *cap >= chunks)
		return *blk;
	unsigned nc = chunks < 256 ? 256 : chunks;
	if (*cap && nc < 2 * *cap)
		nc = 2 * *cap;
	if (gx_work_hints_bytes(nc) > (256ull << 20))
		return 0; /* no hints for grids this large */
	CUdeviceptr d = zeroed(gx_work_hints_bytes(nc), s);
	if (!d)
		return 0;
	if (CU(cuMemsetD32Async)(d + offsetof(struct gx_work_hints, cap), nc, 1, s) != CUDA_SUCCESS) {
		retire(ctx, d, s, true);
		return 0;
	}
	if (*blk)
		retire(ctx, *blk, s, false);
	*blk = d;
	*cap = nc;
	return d;
}

void bs_mem_stream_gone(CUcontext ctx, CUstream s)
{
	struct sstate *st, *t;
	HASH_ITER(hh, states, st, t) {
		if (st->key.stream != s || (ctx && st->key.ctx != ctx))
			continue;
		HASH_DEL(states, st);
		retire(st->key.ctx, st->d, s, true);
		free(st);
	}
}

void bs_mem_ctx_gone(CUcontext ctx)
{
	struct sstate *st, *t;
	HASH_ITER(hh, states, st, t) {
		if (st->key.ctx == ctx) {
			HASH_DEL(states, st);
			free(st);
		}
	}
	bs_retired_reap(ctx, true);
}

void bs_mem_reset(void)
{
	struct sstate *st, *t;
	HASH_ITER(hh, states, st, t) {
		HASH_DEL(states, st);
		free(st);
	}
	while (graveyard) {
		struct retired *r = graveyard;
		graveyard = r->next;
		free(r);
	}
}

/* Free one block of a context, the context pushed (the control thread has
 * none current). */
static void free_in(CUcontext ctx, CUdeviceptr d)
{
	CUcontext popped;
	if (!ctx || CU(cuCtxPushCurrent_v2)(ctx) != CUDA_SUCCESS)
		return; /* its context is gone, and the memory with it */
	CU(cuMemFree_v2)(d);
	CU(cuCtxPopCurrent_v2)(&popped);
}

void bs_mem_free_all(void)
{
	struct sstate *st, *t;
	HASH_ITER(hh, states, st, t) {
		HASH_DEL(states, st);
		free_in(st->key.ctx, st->d);
		free(st);
	}
	while (graveyard) {
		struct retired *r = graveyard;
		graveyard = r->next;
		free_in(r->ctx, r->d);
		if (r->ev)
			CU(cuEventDestroy_v2)(r->ev);
		free(r);
	}
}
