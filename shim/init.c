/* init.c — cuInit and context lifetime. cuInit is where the shim wakes up
 * (configuration read, one info line); contexts are tracked so per-context
 * tables are dropped when the driver destroys what they describe. */
#include <string.h>

#include "shim/hostpolicy_internal.h"
#include "shim/load_internal.h"
#include "shim/shim_ev_internal.h"
#include "shim/tables_internal.h"
#include "shim/tenancy_internal.h"

#define MAX_DEVS 64
static CUcontext primary[MAX_DEVS]; /* device ordinal -> primary context seen */

GX_EXPORT CUresult cuInit(unsigned int Flags)
{
	gx_config_load();
	CUresult rc = REAL(cuInit)(Flags);
	if (!gx_real_handle())
		return CUDA_ERROR_NO_DEVICE;
	if (rc == CUDA_SUCCESS && !__atomic_exchange_n(&gx_initialized, 1, __ATOMIC_ACQ_REL)) {
		int v = 0;
		REAL(cuDriverGetVersion)(&v);
		pr_info("shim active: real driver %s (CUDA %d.%d)%s", gx_real_path(), v / 1000, v % 1000 / 10,
			gx_config.disabled ? ", GPUEXT_DISABLE set: forwarding only" : "");
		gx_hostpolicy_init();
		gx_jit_async_init(); /* its launch switch before the device runtime's subscriber */
		gx_launch_sample_init(); /* the same switch */
		gx_attach_init();
		gx_tenancy_init();
		gx_live_init();
	}
	return rc;
}

static void ctx_created(CUresult rc, CUcontext *pctx)
{
	if (rc == CUDA_SUCCESS)
		gx_ev_ctx_changed();
	if (rc != CUDA_SUCCESS || !pctx || !gx_ev_on(GX_EV_CTX_CREATE) || gx_ev_nested())
		return;
	struct gx_event ev = { .kind = GX_EV_CTX_CREATE, .ctx = *pctx };
	gx_ev_raise(&ev);
}

static CUresult ctx_destroying(CUcontext c)
{
	if (!gx_ev_on(GX_EV_CTX_DESTROY) || gx_ev_nested())
		return CUDA_SUCCESS;
	struct gx_event ev = { .kind = GX_EV_CTX_DESTROY, .ctx = c };
	return gx_ev_raise(&ev);
}

GX_EXPORT CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags,
				  CUdevice dev)
{
	CUresult rc = REAL(cuCtxCreate_v4)(pctx, ctxCreateParams, flags, dev);
	ctx_created(rc, pctx);
	return rc;
}

GX_EXPORT CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
				  unsigned int flags, CUdevice dev)
{
	CUresult rc = REAL(cuCtxCreate_v3)(pctx, paramsArray, numParams, flags, dev);
	ctx_created(rc, pctx);
	return rc;
}

GX_EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	CUresult rc = REAL(cuCtxCreate_v2)(pctx, flags, dev);
	ctx_created(rc, pctx);
	return rc;
}

GX_EXPORT CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	CUresult rc = REAL(cuCtxCreate)(pctx, flags, dev);
	ctx_created(rc, pctx);
	return rc;
}

/* A context the driver destroyed: what the tables and a live attach's
 * copies held in it. */
static void ctx_gone(CUcontext ctx)
{
	gx_tab_ctx_gone(ctx);
	gx_live_ctx_gone(ctx);
}

GX_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx)
{
	CUresult veto = ctx_destroying(ctx);
	if (veto != CUDA_SUCCESS)
		return veto;
	CUresult rc = REAL(cuCtxDestroy_v2)(ctx);
	if (rc == CUDA_SUCCESS)
		ctx_gone(ctx), gx_ev_ctx_changed();
	return rc;
}

GX_EXPORT CUresult cuCtxDestroy(CUcontext ctx)
{
	CUresult veto = ctx_destroying(ctx);
	if (veto != CUDA_SUCCESS)
		return veto;
	CUresult rc = REAL(cuCtxDestroy)(ctx);
	if (rc == CUDA_SUCCESS)
		ctx_gone(ctx), gx_ev_ctx_changed();
	return rc;
}

GX_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	CUresult rc = REAL(cuDevicePrimaryCtxRetain)(pctx, dev);
	if (rc == CUDA_SUCCESS)
		gx_ev_ctx_changed(); /* maybe a new context: a bump is cheap, a stale device is not */
	if (rc == CUDA_SUCCESS && pctx && *pctx) {
		if (dev >= 0 && dev < MAX_DEVS)
			__atomic_store_n(&primary[dev], *pctx, __ATOMIC_RELAXED);
		if (gx_tab_primary_ref(*pctx, 1) == 1)
			ctx_created(rc, pctx);
	}
	return rc;
}

/* Release (or reset) of a device's primary context: when the last reference
 * we saw goes, the driver destroys it, and so do we. */
static CUresult primary_drop(CUdevice dev, bool reset, CUresult (*real)(CUdevice))
{
	CUcontext c = dev >= 0 && dev < MAX_DEVS ? __atomic_load_n(&primary[dev], __ATOMIC_RELAXED) : NULL;
	bool last = c && (reset || gx_tab_primary_ref(c, 0) <= 1);
	if (last) {
		CUresult veto = ctx_destroying(c);
		if (veto != CUDA_SUCCESS)
			return veto;
	}
	CUresult rc = real(dev);
	if (rc == CUDA_SUCCESS)
		gx_ev_ctx_changed(); /* possibly destroyed, whatever our count says */
	if (rc == CUDA_SUCCESS && c) {
		if (reset || gx_tab_primary_ref(c, -1) == 0)
			ctx_gone(c);
	}
	return rc;
}

GX_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	return primary_drop(dev, false, REAL(cuDevicePrimaryCtxRelease_v2));
}

GX_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
	return primary_drop(dev, false, REAL(cuDevicePrimaryCtxRelease));
}

GX_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
	return primary_drop(dev, true, REAL(cuDevicePrimaryCtxReset_v2));
}

GX_EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
	return primary_drop(dev, true, REAL(cuDevicePrimaryCtxReset));
}

/* Green contexts are otherwise forwarded untouched; their CUcontext handles
 * come and go here, and the events' context -> device cache must know. */
GX_EXPORT CUresult cuCtxFromGreenCtx(CUcontext *pContext, CUgreenCtx hCtx)
{
	CUresult rc = REAL(cuCtxFromGreenCtx)(pContext, hCtx);
	if (rc == CUDA_SUCCESS)
		gx_ev_ctx_changed();
	return rc;
}

GX_EXPORT CUresult cuGreenCtxDestroy(CUgreenCtx hCtx)
{
	CUresult rc = REAL(cuGreenCtxDestroy)(hCtx);
	gx_ev_ctx_changed();
	return rc;
}
