/* memlimit_pool.c — stream-ordered allocations and memory pools under a
 * tenant's memory limit (docs/limits.md, "Pools").
 *
 * A pool keeps what is freed into it until a trim (cuMemPoolTrimTo, or the
 * driver's own at a synchronisation, down to the pool's release threshold)
 * or its destruction, so the budget follows what the pool really holds: its
 * CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, read after each allocation from it
 * and after each trim. A free into a pool keeps the budget; a trim gives it
 * back. Before the driver is called the allocation's size, rounded to the
 * pools' 2 MiB granule, is reserved against the limit (the pool may have to
 * grow by that much), and afterwards turned into the pool's growth, the rest
 * given back: threads racing the limit never take the tenant past it. When
 * the reservation is refused, the process's pools are read again first (the
 * driver may have trimmed them at a synchronisation) and, if the pool has
 * that much cached and unused, the allocation goes on without one (it will
 * not grow the pool).
 *
 * Allocations into a stream being captured become graph memory nodes, which
 * come from the graph memory pool, not from this one: they count per
 * pointer, from capture until freed (memlimit.c's path).
 *
 * Cost, as a tenant: cuStreamIsCapturing, cuDeviceGetMemPool (for the
 * device's current pool) and cuMemPoolGetAttribute per allocation, a mutex
 * and two atomic operations on the tenant table; frees pay one hash lookup. */
#include <stdlib.h>
#include <uthash.h>

#include "shim/memlimit_internal.h"
#include "tenant/gx_tenant.h"

#define GRANULE ((uint64_t)2 << 20)

struct pool {
	CUmemoryPool key;
	struct gx_tn *tn;
	uint64_t held; /* budget taken for it: what it reserved when last read */
	UT_hash_handle hh;
};
static struct pool *pools;
static pthread_mutex_t pools_mu = PTHREAD_MUTEX_INITIALIZER;
/* At the limit, one allocation at a time looks at a pool's cache and takes
 * from it: two must not both count on the same cached bytes. */
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned long nr_unread;

static bool pool_attr(CUmemoryPool p, CUmemPool_attribute a, uint64_t *v)
{
	cuuint64_t x = 0;
	CUresult rc = REAL(cuMemPoolGetAttribute)(p, a, &x);
	if (rc != CUDA_SUCCESS) {
		if (!__atomic_fetch_add(&nr_unread, 1, __ATOMIC_RELAXED))
			pr_info("memlimit: cannot read a memory pool's size (CUresult %d); its growth is not counted",
				(int)rc);
		return false;
	}
	*v = x;
	return true;
}

/* pools_mu held: p's budget to what it reserves now. pre: bytes the caller
 * reserved for this allocation, turned into the growth first, the rest given
 * back. Returns the bytes given back beyond pre. */
static uint64_t settle_locked(struct pool *p, uint64_t pre)
{
	uint64_t r, back = 0;
	if (!pool_attr(p->key, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &r)) {
		gx_ml_undo(p->tn, pre);
		return 0;
	}
	if (r > p->held) {
		uint64_t grow = r - p->held, use = grow < pre ? grow : pre;
		if (grow > use) /* grew by more than one granule: what it holds counts */
			gx_tn_mem_charge(p->tn, grow - use);
		pre -= use;
	} else if (r < p->held) {
		back = p->held - r;
		gx_ml_undo(p->tn, back);
	}
	p->held = r;
	gx_ml_undo(p->tn, pre);
	return back;
}

static struct pool *pool_get_locked(CUmemoryPool key, struct gx_tn *tn)
{
	struct pool *p;
	HASH_FIND_PTR(pools, &key, p);
	if (p || !tn)
		return p;
	if (!(p = calloc(1, sizeof(*p))))
		return NULL;
	p->key = key, p->tn = tn;
	HASH_ADD_PTR(pools, key, p);
	return p;
}

uint64_t gx_ml_pools_settle(struct gx_tn *tn)
{
	uint64_t back = 0;
	struct pool *p, *tmp;
	pthread_mutex_lock(&pools_mu);
	HASH_ITER(hh, pools, p, tmp)
	{
		if (p->tn == tn && p->held)
			back += settle_locked(p, 0);
	}
	pthread_mutex_unlock(&pools_mu);
	return back;
}

struct pool_op {
	struct gx_tn *tn;
	CUmemoryPool pool;
	uint64_t pre;
	bool cached; /* holds cache_mu: taking from the pool's cache */
};

/* Before the driver: 1 to take the per-pointer path (capture, no pool),
 * 0 to go on (op->tn NULL: nothing counted), -1 refused at the limit. */
static int pool_begin(struct pool_op *op, CUmemoryPool pool, CUstream s, size_t n)
{
	CUdevice dev;
	CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
	*op = (struct pool_op){ 0 };
	struct gx_tn *tn = gx_ml_current(&dev);
	if (!tn)
		return 0;
	if (REAL(cuStreamIsCapturing)(s, &cs) == CUDA_SUCCESS && cs != CU_STREAM_CAPTURE_STATUS_NONE)
		return 1;
	if (!pool && REAL(cuDeviceGetMemPool)(&pool, dev) != CUDA_SUCCESS)
		return 1;
	uint64_t pre = n + GRANULE - 1 < n ? n : (n + GRANULE - 1) & ~(GRANULE - 1), res, used;
	if (gx_tn_mem_reserve(tn, pre) && (!gx_ml_pools_settle(tn) || gx_tn_mem_reserve(tn, pre))) {
		/* at the limit: fine if the pool has it cached (it will not grow;
		 * threads not at the limit that take the cache first have a
		 * reservation that covers the growth this one then causes) */
		pthread_mutex_lock(&cache_mu);
		if (!pool_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &res) ||
		    !pool_attr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used) || res < used || res - used < pre) {
			pthread_mutex_unlock(&cache_mu);
			gx_ml_denied(n);
			return -1;
		}
		*op = (struct pool_op){ .tn = tn, .pool = pool, .cached = true };
		return 0;
	}
	*op = (struct pool_op){ .tn = tn, .pool = pool, .pre = pre };
	return 0;
}

static void pool_end(const struct pool_op *op)
{
	if (!op->tn)
		return;
	pthread_mutex_lock(&pools_mu);
	struct pool *p = pool_get_locked(op->pool, op->tn);
	if (p)
		settle_locked(p, op->pre);
	else
		gx_ml_undo(op->tn, op->pre);
	pthread_mutex_unlock(&pools_mu);
	if (op->cached)
		pthread_mutex_unlock(&cache_mu);
}

#define POOL_ALLOC(name, pool, s, ...)                                                        \
	do {                                                                                  \
		struct pool_op op_;                                                           \
		int how_;                                                                     \
		if (!GX_ML_ON() || !dptr || (how_ = pool_begin(&op_, pool, s, bytesize)) > 0) \
			break;                                                                \
		if (how_ < 0)                                                                 \
			return CUDA_ERROR_OUT_OF_MEMORY;                                      \
		CUresult rc_ = REAL(name)(dptr, __VA_ARGS__);                                 \
		pool_end(&op_);                                                               \
		return rc_;                                                                   \
	} while (0);                                                                          \
	if (!GX_ML_ON() || !dptr)                                                             \
		return REAL(name)(dptr, __VA_ARGS__);                                         \
	ML_ALLOC(GX_ML_PTR, bytesize, *dptr, REAL(name)(dptr, __VA_ARGS__))

GX_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	POOL_ALLOC(cuMemAllocAsync, NULL, hStream, bytesize, hStream);
}

GX_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	POOL_ALLOC(cuMemAllocAsync_ptsz, NULL, hStream ? hStream : CU_STREAM_PER_THREAD, bytesize, hStream);
}

GX_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream)
{
	POOL_ALLOC(cuMemAllocFromPoolAsync, pool, hStream, bytesize, pool, hStream);
}

GX_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream)
{
	POOL_ALLOC(cuMemAllocFromPoolAsync_ptsz, pool, hStream ? hStream : CU_STREAM_PER_THREAD, bytesize, pool,
		   hStream);
}

/* A free into a pool keeps the budget (no record: nothing given back); one
 * of memory allocated in capture gives its bytes back. */
GX_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
	if (!GX_ML_ON())
		return REAL(cuMemFreeAsync)(dptr, hStream);
	ML_FREE(GX_ML_PTR, dptr, REAL(cuMemFreeAsync)(dptr, hStream));
}

GX_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
	if (!GX_ML_ON())
		return REAL(cuMemFreeAsync_ptsz)(dptr, hStream);
	ML_FREE(GX_ML_PTR, dptr, REAL(cuMemFreeAsync_ptsz)(dptr, hStream));
}

/* A trim gives back what the pool no longer holds. */
GX_EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
	CUresult rc = REAL(cuMemPoolTrimTo)(pool, minBytesToKeep);
	if (GX_ML_ON() && rc == CUDA_SUCCESS) {
		pthread_mutex_lock(&pools_mu);
		struct pool *p = pool_get_locked(pool, NULL);
		if (p)
			settle_locked(p, 0);
		pthread_mutex_unlock(&pools_mu);
	}
	return rc;
}

/* Destroyed: all it held goes back (memory still allocated from it is
 * released by the driver at its free). */
GX_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
	CUresult rc = REAL(cuMemPoolDestroy)(pool);
	if (GX_ML_ON() && rc == CUDA_SUCCESS) {
		pthread_mutex_lock(&pools_mu);
		struct pool *p = pool_get_locked(pool, NULL);
		if (p) {
			HASH_DEL(pools, p);
			gx_ml_undo(p->tn, p->held);
		}
		pthread_mutex_unlock(&pools_mu);
		free(p);
	}
	return rc;
}
