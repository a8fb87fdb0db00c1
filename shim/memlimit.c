/* memlimit.c — per-tenant device-memory limits (docs/limits.md).
 *
 * Every device allocation entry point reserves its size from the tenant's
 * budget on the current GPU in the tenant table (gx_tn_mem_reserve: a CAS
 * against that GPU's limit, shared by all the tenant's processes) before
 * the driver allocates, and
 * fails with CUDA_ERROR_OUT_OF_MEMORY past the limit, as the driver does
 * when the GPU is full, so frameworks take their ordinary out-of-memory
 * path. The size is kept per pointer (VMM handle, array) in this process,
 * so a free gives back exactly what was taken. Reserving before allocating
 * means two threads racing the limit never both get past it.
 *
 * What counts: cuMemAlloc[_v2], cuMemAllocPitch[_v2] (pitch x height),
 * stream-ordered allocations and pools (memlimit_pool.c: what the pool
 * holds, until trimmed), graph memory nodes (from capture until freed),
 * cuMemCreate (until cuMemRelease), arrays (v1 and v2) and mipmapped arrays (width x height x depth x element size, the driver's
 * padding not counted), managed memory by reservation (its full size, at
 * allocation, wherever it resides). cuMemGetInfo[_v2] reports the limit as
 * total and what is left of it as free (never more than the GPU has free).
 *
 * Cost: with no tenant, one predictable branch per allocation and free;
 * as a tenant, a cuCtxGetDevice, a CAS on the table and a hash insert
 * under one mutex. Fail open: a tenant entry that cannot be joined counts
 * nothing. */
#include <limits.h>
#include <stdlib.h>
#include <uthash.h>

#include "shim/memlimit_internal.h"
#include "shim/tenancy_internal.h"

bool gx_memlimit_on;

struct rec {
	uint64_t key;
	size_t n;
	struct gx_tn *tn;
	UT_hash_handle hh;
};
static struct rec *recs[GX_ML_NR];
static pthread_mutex_t recs_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned long nr_denied;

static void after_fork_child(void)
{
	/* CUDA does not survive fork: the child is no tenant (tenant.c). */
	__atomic_store_n(&gx_memlimit_on, false, __ATOMIC_RELAXED);
	pthread_mutex_init(&recs_mu, NULL);
}

void gx_memlimit_enable(void)
{
	pthread_atfork(NULL, NULL, after_fork_child);
	__atomic_store_n(&gx_memlimit_on, true, __ATOMIC_RELEASE);
}

struct gx_tn *gx_ml_current(CUdevice *dev)
{
	CUdevice d = 0;
	if (REAL(cuCtxGetDevice)(&d) != CUDA_SUCCESS)
		d = 0;
	if (dev)
		*dev = d;
	return gx_tenancy_of(d);
}

void gx_ml_denied(size_t n)
{
	if (!__atomic_fetch_add(&nr_denied, 1, __ATOMIC_RELAXED))
		pr_info("memlimit: an allocation of %zu bytes refused at the tenant's limit (gpuext tenant list)", n);
}

CUresult gx_ml_take(size_t n, struct gx_tn **tn)
{
	*tn = gx_ml_current(NULL);
	if (!*tn)
		return CUDA_SUCCESS;
	/* refused: the driver may have trimmed our pools meanwhile; once more */
	if (gx_tn_mem_reserve(*tn, n) && (!gx_ml_pools_settle(*tn) || gx_tn_mem_reserve(*tn, n))) {
		gx_ml_denied(n);
		*tn = NULL;
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	return CUDA_SUCCESS;
}

void gx_ml_undo(struct gx_tn *tn, size_t n)
{
	if (tn)
		gx_tn_mem_release(tn, n);
}

void gx_ml_keep(enum gx_ml_kind k, uint64_t key, size_t n, struct gx_tn *tn)
{
	if (!tn)
		return;
	struct rec *r = malloc(sizeof(*r)), *old = NULL;
	if (!r) { /* cannot remember it: give it back now rather than leak budget */
		gx_tn_mem_release(tn, n);
		return;
	}
	r->key = key, r->n = n, r->tn = tn;
	pthread_mutex_lock(&recs_mu);
	HASH_REPLACE(hh, recs[k], key, sizeof(r->key), r, old);
	pthread_mutex_unlock(&recs_mu);
	if (old) { /* the driver reused a key we never saw freed */
		gx_tn_mem_release(old->tn, old->n);
		free(old);
	}
}

bool gx_ml_unkeep(enum gx_ml_kind k, uint64_t key, struct gx_ml_rec *out)
{
	struct rec *r;
	pthread_mutex_lock(&recs_mu);
	HASH_FIND(hh, recs[k], &key, sizeof(key), r);
	if (r)
		HASH_DEL(recs[k], r);
	pthread_mutex_unlock(&recs_mu);
	if (!r)
		return false;
	*out = (struct gx_ml_rec){ .tn = r->tn, .key = key, .n = r->n, .kind = k };
	free(r);
	return true;
}

void gx_ml_freed(const struct gx_ml_rec *r, bool ok)
{
	if (ok)
		gx_tn_mem_release(r->tn, r->n);
	else
		gx_ml_keep(r->kind, r->key, r->n, r->tn);
}

/* ---- plain device memory ---- */

GX_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	if (!GX_ML_ON() || !dptr)
		return REAL(cuMemAlloc_v2)(dptr, bytesize);
	ML_ALLOC(GX_ML_PTR, bytesize, *dptr, REAL(cuMemAlloc_v2)(dptr, bytesize));
}

GX_EXPORT CUresult cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize)
{
	if (!GX_ML_ON() || !dptr)
		return REAL(cuMemAlloc)(dptr, bytesize);
	ML_ALLOC(GX_ML_PTR, bytesize, *dptr, REAL(cuMemAlloc)(dptr, bytesize));
}

/* The pitch is the driver's choice: reserve the width rounded to 512 bytes
 * (the largest pitch alignment of current GPUs) first, then settle to
 * pitch x height. */
static CUresult settle_pitch(struct gx_tn *tn, size_t est, size_t real, CUdeviceptr p)
{
	if (real > est && tn && gx_tn_mem_reserve(tn, real - est)) {
		REAL(cuMemFree_v2)(p);
		gx_tn_mem_release(tn, est);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (real < est)
		gx_ml_undo(tn, est - real);
	gx_ml_keep(GX_ML_PTR, p, real, tn);
	return CUDA_SUCCESS;
}

GX_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
				      unsigned int ElementSizeBytes)
{
	if (!GX_ML_ON() || !dptr || !pPitch)
		return REAL(cuMemAllocPitch_v2)(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
	struct gx_tn *tn;
	size_t est = ((WidthInBytes + 511) & ~(size_t)511) * Height;
	if (gx_ml_take(est, &tn) != CUDA_SUCCESS)
		return CUDA_ERROR_OUT_OF_MEMORY;
	CUresult rc = REAL(cuMemAllocPitch_v2)(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
	if (rc != CUDA_SUCCESS) {
		gx_ml_undo(tn, est);
		return rc;
	}
	return settle_pitch(tn, est, *pPitch * Height, *dptr);
}

GX_EXPORT CUresult cuMemAllocPitch(CUdeviceptr_v1 *dptr, unsigned int *pPitch, unsigned int WidthInBytes,
				   unsigned int Height, unsigned int ElementSizeBytes)
{
	if (!GX_ML_ON() || !dptr || !pPitch)
		return REAL(cuMemAllocPitch)(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
	struct gx_tn *tn;
	size_t est = (((size_t)WidthInBytes + 511) & ~(size_t)511) * Height;
	if (gx_ml_take(est, &tn) != CUDA_SUCCESS)
		return CUDA_ERROR_OUT_OF_MEMORY;
	CUresult rc = REAL(cuMemAllocPitch)(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
	if (rc != CUDA_SUCCESS) {
		gx_ml_undo(tn, est);
		return rc;
	}
	return settle_pitch(tn, est, (size_t)*pPitch * Height, *dptr);
}

/* cuMemFree[_v2] and cuMemAllocManaged: mem.c (its events), through these. */
CUresult gx_ml_free(CUdeviceptr p, CUresult (*real)(CUdeviceptr));
CUresult gx_ml_free(CUdeviceptr p, CUresult (*real)(CUdeviceptr))
{
	ML_FREE(GX_ML_PTR, p, real(p));
}

CUresult gx_ml_alloc_managed(CUdeviceptr *dptr, size_t bytesize, unsigned int flags);
CUresult gx_ml_alloc_managed(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
	ML_ALLOC(GX_ML_PTR, bytesize, *dptr, REAL(cuMemAllocManaged)(dptr, bytesize, flags));
}

/* ---- graph memory nodes ---- */
GX_EXPORT CUresult cuGraphAddMemAllocNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
					  size_t numDependencies, CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams)
{
	if (!GX_ML_ON() || !nodeParams)
		return REAL(cuGraphAddMemAllocNode)(phGraphNode, hGraph, dependencies, numDependencies, nodeParams);
	ML_ALLOC(GX_ML_PTR, nodeParams->bytesize, nodeParams->dptr,
		 REAL(cuGraphAddMemAllocNode)(phGraphNode, hGraph, dependencies, numDependencies, nodeParams));
}

GX_EXPORT CUresult cuGraphAddMemFreeNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
					 size_t numDependencies, CUdeviceptr dptr)
{
	if (!GX_ML_ON())
		return REAL(cuGraphAddMemFreeNode)(phGraphNode, hGraph, dependencies, numDependencies, dptr);
	ML_FREE(GX_ML_PTR, dptr, REAL(cuGraphAddMemFreeNode)(phGraphNode, hGraph, dependencies, numDependencies, dptr));
}

/* cuGraphAddNode[_v2] with a memory node (graph.c asks, before its kernel
 * path): the same as the two above. */
CUresult gx_ml_graph_node(CUgraphNodeParams *p, CUresult (*add)(void *), void *arg);
CUresult gx_ml_graph_node(CUgraphNodeParams *p, CUresult (*add)(void *), void *arg)
{
	if (p->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC)
		ML_ALLOC(GX_ML_PTR, p->alloc.bytesize, p->alloc.dptr, add(arg));
	ML_FREE(GX_ML_PTR, p->free.dptr, add(arg));
}

/* ---- virtual memory management ---- */
GX_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
			       unsigned long long flags)
{
	if (!GX_ML_ON() || !handle)
		return REAL(cuMemCreate)(handle, size, prop, flags);
	ML_ALLOC(GX_ML_HANDLE, size, *handle, REAL(cuMemCreate)(handle, size, prop, flags));
}

GX_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
	if (!GX_ML_ON())
		return REAL(cuMemRelease)(handle);
	ML_FREE(GX_ML_HANDLE, handle, REAL(cuMemRelease)(handle));
}

/* ---- arrays ---- */
static size_t elem_bytes(CUarray_format f, unsigned channels)
{
	size_t b;
	switch ((int)f) {
	case CU_AD_FORMAT_UNSIGNED_INT8:
	case CU_AD_FORMAT_SIGNED_INT8:
		b = 1;
		break;
	case CU_AD_FORMAT_UNSIGNED_INT16:
	case CU_AD_FORMAT_SIGNED_INT16:
	case CU_AD_FORMAT_HALF:
		b = 2;
		break;
	default: /* 32-bit formats; others (packed, compressed) counted as 4 */
		b = 4;
		break;
	}
	return b * (channels ? channels : 1);
}

static size_t dims(size_t w, size_t h, size_t d, unsigned level)
{
	size_t x = w >> level, y = h >> level, z = d >> level;
	return (x ? x : 1) * (y ? y : 1) * (z ? z : 1);
}

GX_EXPORT CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *a)
{
	if (!GX_ML_ON() || !pHandle || !a)
		return REAL(cuArrayCreate_v2)(pHandle, a);
	ML_ALLOC(GX_ML_ARRAY, dims(a->Width, a->Height, 1, 0) * elem_bytes(a->Format, a->NumChannels),
		 (uintptr_t)*pHandle, REAL(cuArrayCreate_v2)(pHandle, a));
}

/* Layered arrays: Depth is the number of layers, counted like depth. */
GX_EXPORT CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *a)
{
	if (!GX_ML_ON() || !pHandle || !a)
		return REAL(cuArray3DCreate_v2)(pHandle, a);
	ML_ALLOC(GX_ML_ARRAY, dims(a->Width, a->Height, a->Depth, 0) * elem_bytes(a->Format, a->NumChannels),
		 (uintptr_t)*pHandle, REAL(cuArray3DCreate_v2)(pHandle, a));
}

/* The v1 entry points (binaries built before CUDA 3.2; 32-bit sizes). */
GX_EXPORT CUresult cuArrayCreate(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR_v1 *a)
{
	if (!GX_ML_ON() || !pHandle || !a)
		return REAL(cuArrayCreate)(pHandle, a);
	ML_ALLOC(GX_ML_ARRAY, dims(a->Width, a->Height, 1, 0) * elem_bytes(a->Format, a->NumChannels),
		 (uintptr_t)*pHandle, REAL(cuArrayCreate)(pHandle, a));
}

GX_EXPORT CUresult cuArray3DCreate(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR_v1 *a)
{
	if (!GX_ML_ON() || !pHandle || !a)
		return REAL(cuArray3DCreate)(pHandle, a);
	ML_ALLOC(GX_ML_ARRAY, dims(a->Width, a->Height, a->Depth, 0) * elem_bytes(a->Format, a->NumChannels),
		 (uintptr_t)*pHandle, REAL(cuArray3DCreate)(pHandle, a));
}

GX_EXPORT CUresult cuArrayDestroy(CUarray hArray)
{
	if (!GX_ML_ON())
		return REAL(cuArrayDestroy)(hArray);
	ML_FREE(GX_ML_ARRAY, (uintptr_t)hArray, REAL(cuArrayDestroy)(hArray));
}

GX_EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *a,
					  unsigned int numMipmapLevels)
{
	if (!GX_ML_ON() || !pHandle || !a)
		return REAL(cuMipmappedArrayCreate)(pHandle, a, numMipmapLevels);
	size_t n = 0;
	bool layered = a->Flags & CUDA_ARRAY3D_LAYERED;
	for (unsigned l = 0; l < (numMipmapLevels ? numMipmapLevels : 1) && l < 64; l++)
		n += dims(a->Width, a->Height, 1, l) * (layered ? (a->Depth ? a->Depth : 1) : dims(1, 1, a->Depth, l));
	n *= elem_bytes(a->Format, a->NumChannels);
	ML_ALLOC(GX_ML_ARRAY, n, (uintptr_t)*pHandle, REAL(cuMipmappedArrayCreate)(pHandle, a, numMipmapLevels));
}

GX_EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray)
{
	if (!GX_ML_ON())
		return REAL(cuMipmappedArrayDestroy)(hMipmappedArray);
	ML_FREE(GX_ML_ARRAY, (uintptr_t)hMipmappedArray, REAL(cuMipmappedArrayDestroy)(hMipmappedArray));
}

/* ---- what frameworks size themselves by ---- */
static void limit_info(size_t *free_b, size_t *total_b)
{
	struct gx_tn *tn = gx_ml_current(NULL);
	if (!tn)
		return;
	gx_ml_pools_settle(tn); /* what the driver trimmed at synchronisations */
	uint64_t lim, used;
	gx_tn_mem_get(tn, &lim, &used);
	if (!lim)
		return;
	uint64_t left = used < lim ? lim - used : 0;
	if (lim < *total_b)
		*total_b = lim;
	if (left < *free_b)
		*free_b = left;
}

GX_EXPORT CUresult cuMemGetInfo_v2(size_t *free_b, size_t *total_b)
{
	CUresult rc = REAL(cuMemGetInfo_v2)(free_b, total_b);
	if (GX_ML_ON() && rc == CUDA_SUCCESS && free_b && total_b)
		limit_info(free_b, total_b);
	return rc;
}

GX_EXPORT CUresult cuMemGetInfo(unsigned int *free_b, unsigned int *total_b)
{
	CUresult rc = REAL(cuMemGetInfo)(free_b, total_b);
	if (GX_ML_ON() && rc == CUDA_SUCCESS && free_b && total_b) {
		size_t f = *free_b, t = *total_b;
		limit_info(&f, &t);
		*free_b = f > UINT_MAX ? UINT_MAX : (unsigned)f;
		*total_b = t > UINT_MAX ? UINT_MAX : (unsigned)t;
	}
	return rc;
}

/* The device's total memory: its limit, as cuMemGetInfo's total, so what a
 * framework reads from the device's properties (torch's total_memory,
 * cudaGetDeviceProperties) agrees with what it may allocate. */
static void limit_total(CUdevice dev, size_t *total_b)
{
	struct gx_tn *tn = gx_tenancy_of(dev);
	uint64_t lim = 0, used;
	if (tn)
		gx_tn_mem_get(tn, &lim, &used);
	if (lim && lim < *total_b)
		*total_b = lim;
}

GX_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
	CUresult rc = REAL(cuDeviceTotalMem_v2)(bytes, dev);
	if (GX_ML_ON() && rc == CUDA_SUCCESS && bytes)
		limit_total(dev, bytes);
	return rc;
}

GX_EXPORT CUresult cuDeviceTotalMem(unsigned int *bytes, CUdevice dev)
{
	CUresult rc = REAL(cuDeviceTotalMem)(bytes, dev);
	if (GX_ML_ON() && rc == CUDA_SUCCESS && bytes) {
		size_t t = *bytes;
		limit_total(dev, &t);
		*bytes = t > UINT_MAX ? UINT_MAX : (unsigned)t;
	}
	return rc;
}
