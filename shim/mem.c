/* mem.c — managed memory, prefetch/advice and streams: the events host
 * memory and scheduling policies act on. Each wrapper costs one relaxed load
 * when nobody subscribed. */
#include <string.h>

#include "shim/memlimit_internal.h"
#include "shim/shim_ev_internal.h"

/* memlimit.c: the tenant's memory budget (docs/limits.md). */
CUresult gx_ml_free(CUdeviceptr p, CUresult (*real)(CUdeviceptr));
CUresult gx_ml_alloc_managed(CUdeviceptr *dptr, size_t bytesize, unsigned int flags);

static bool want(enum gx_event_kind k)
{
	return gx_ev_on(k) && !gx_ev_nested();
}

GX_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
	CUresult rc = GX_ML_ON() && dptr ? gx_ml_alloc_managed(dptr, bytesize, flags)
					 : REAL(cuMemAllocManaged)(dptr, bytesize, flags);
	if (rc == CUDA_SUCCESS && dptr && want(GX_EV_MEM_ALLOC_MANAGED)) {
		struct gx_event ev = { .kind = GX_EV_MEM_ALLOC_MANAGED };
		ev.mem.ptr = *dptr;
		ev.mem.size = bytesize;
		ev.mem.flags = flags;
		gx_ev_raise(&ev);
	}
	return rc;
}

static CUresult free_event(CUdeviceptr p)
{
	if (!want(GX_EV_MEM_FREE))
		return CUDA_SUCCESS;
	struct gx_event ev = { .kind = GX_EV_MEM_FREE };
	ev.mem.ptr = p;
	return gx_ev_raise(&ev);
}

GX_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	CUresult veto = free_event(dptr);
	if (veto != CUDA_SUCCESS)
		return veto;
	return GX_ML_ON() ? gx_ml_free(dptr, REAL(cuMemFree_v2)) : REAL(cuMemFree_v2)(dptr);
}

GX_EXPORT CUresult cuMemFree(CUdeviceptr_v1 dptr)
{
	CUresult veto = free_event(dptr);
	if (veto != CUDA_SUCCESS || !GX_ML_ON())
		return veto != CUDA_SUCCESS ? veto : REAL(cuMemFree)(dptr);
	struct gx_ml_rec r;
	bool had = gx_ml_unkeep(GX_ML_PTR, dptr, &r);
	CUresult rc = REAL(cuMemFree)(dptr);
	if (had)
		gx_ml_freed(&r, rc == CUDA_SUCCESS);
	return rc;
}

static CUresult prefetch_event(CUdeviceptr p, size_t n, CUmemLocation loc, CUstream s)
{
	if (!want(GX_EV_MEM_PREFETCH))
		return CUDA_SUCCESS;
	struct gx_event ev = { .kind = GX_EV_MEM_PREFETCH };
	ev.mem.ptr = p;
	ev.mem.size = n;
	ev.mem.location = loc;
	ev.mem.stream = s;
	return gx_ev_raise(&ev);
}

static CUmemLocation dev_loc(CUdevice d)
{
	CUmemLocation l;
	memset(&l, 0, sizeof(l));
	l.type = d == CU_DEVICE_CPU ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE;
	l.id = d;
	return l;
}

GX_EXPORT CUresult cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned int flags,
					 CUstream hStream)
{
	CUresult veto = prefetch_event(devPtr, count, location, hStream);
	return veto != CUDA_SUCCESS ? veto : REAL(cuMemPrefetchAsync_v2)(devPtr, count, location, flags, hStream);
}

GX_EXPORT CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr devPtr, size_t count, CUmemLocation location,
					      unsigned int flags, CUstream hStream)
{
	CUresult veto = prefetch_event(devPtr, count, location, hStream);
	return veto != CUDA_SUCCESS ? veto : REAL(cuMemPrefetchAsync_v2_ptsz)(devPtr, count, location, flags, hStream);
}

GX_EXPORT CUresult cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream)
{
	CUresult veto = prefetch_event(devPtr, count, dev_loc(dstDevice), hStream);
	return veto != CUDA_SUCCESS ? veto : REAL(cuMemPrefetchAsync)(devPtr, count, dstDevice, hStream);
}

GX_EXPORT CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream)
{
	CUresult veto = prefetch_event(devPtr, count, dev_loc(dstDevice), hStream);
	return veto != CUDA_SUCCESS ? veto : REAL(cuMemPrefetchAsync_ptsz)(devPtr, count, dstDevice, hStream);
}

static CUresult advise_event(CUdeviceptr p, size_t n, CUmem_advise a, CUmemLocation loc)
{
	if (!want(GX_EV_MEM_ADVISE))
		return CUDA_SUCCESS;
	struct gx_event ev = { .kind = GX_EV_MEM_ADVISE };
	ev.mem.ptr = p;
	ev.mem.size = n;
	ev.mem.advice = a;
	ev.mem.location = loc;
	return gx_ev_raise(&ev);
}

GX_EXPORT CUresult cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUmemLocation location)
{
	CUresult veto = advise_event(devPtr, count, advice, location);
	return veto != CUDA_SUCCESS ? veto : REAL(cuMemAdvise_v2)(devPtr, count, advice, location);
}

GX_EXPORT CUresult cuMemAdvise(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUdevice device)
{
	CUresult veto = advise_event(devPtr, count, advice, dev_loc(device));
	return veto != CUDA_SUCCESS ? veto : REAL(cuMemAdvise)(devPtr, count, advice, device);
}

static void stream_created(CUresult rc, CUstream *s, unsigned flags, int prio)
{
	if (rc != CUDA_SUCCESS || !s || !want(GX_EV_STREAM_CREATE))
		return;
	struct gx_event ev = { .kind = GX_EV_STREAM_CREATE };
	ev.stream.stream = *s;
	ev.stream.flags = flags;
	ev.stream.priority = prio;
	gx_ev_raise(&ev);
}

/* Pre-event: a scheduling policy may choose the priority (or refuse the
 * stream). The application's flags are kept; without a change the call
 * the application made is the one made. */
static CUresult stream_create(CUstream *s, unsigned flags, int prio, bool with_prio)
{
	if (want(GX_EV_STREAM_CREATING)) {
		struct gx_event ev = { .kind = GX_EV_STREAM_CREATING };
		ev.stream.flags = flags;
		ev.stream.priority = prio;
		CUresult veto = gx_ev_raise(&ev);
		if (veto != CUDA_SUCCESS)
			return veto;
		if (ev.stream.priority != prio) {
			prio = ev.stream.priority;
			with_prio = true;
		}
	}
	CUresult rc = with_prio ? REAL(cuStreamCreateWithPriority)(s, flags, prio) : REAL(cuStreamCreate)(s, flags);
	stream_created(rc, s, flags, prio);
	return rc;
}

GX_EXPORT CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
	return stream_create(phStream, Flags, 0, false);
}

GX_EXPORT CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
	return stream_create(phStream, flags, priority, true);
}

static CUresult stream_destroy_event(CUstream s)
{
	if (!want(GX_EV_STREAM_DESTROY))
		return CUDA_SUCCESS;
	struct gx_event ev = { .kind = GX_EV_STREAM_DESTROY };
	ev.stream.stream = s;
	return gx_ev_raise(&ev);
}

GX_EXPORT CUresult cuStreamDestroy_v2(CUstream hStream)
{
	CUresult veto = stream_destroy_event(hStream);
	return veto != CUDA_SUCCESS ? veto : REAL(cuStreamDestroy_v2)(hStream);
}

GX_EXPORT CUresult cuStreamDestroy(CUstream hStream)
{
	CUresult veto = stream_destroy_event(hStream);
	return veto != CUDA_SUCCESS ? veto : REAL(cuStreamDestroy)(hStream);
}

static CUresult sync_event(CUstream s)
{
	if (!want(GX_EV_SYNC))
		return CUDA_SUCCESS;
	struct gx_event ev = { .kind = GX_EV_SYNC };
	ev.stream.stream = s;
	return gx_ev_raise(&ev);
}

GX_EXPORT CUresult cuCtxSynchronize(void)
{
	CUresult veto = sync_event(NULL);
	return veto != CUDA_SUCCESS ? veto : REAL(cuCtxSynchronize)();
}

/* cudart 13 reaches cudaDeviceSynchronize through this variant. */
GX_EXPORT CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
	CUresult veto = sync_event(NULL);
	return veto != CUDA_SUCCESS ? veto : REAL(cuCtxSynchronize_v2)(ctx);
}

GX_EXPORT CUresult cuEventSynchronize(CUevent hEvent)
{
	CUresult veto = sync_event(NULL);
	return veto != CUDA_SUCCESS ? veto : REAL(cuEventSynchronize)(hEvent);
}

GX_EXPORT CUresult cuStreamSynchronize(CUstream hStream)
{
	CUresult veto = sync_event(hStream);
	return veto != CUDA_SUCCESS ? veto : REAL(cuStreamSynchronize)(hStream);
}

GX_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream hStream)
{
	CUresult veto = sync_event(hStream);
	return veto != CUDA_SUCCESS ? veto : REAL(cuStreamSynchronize_ptsz)(hStream);
}
