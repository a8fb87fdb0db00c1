/* launch.c — kernel launches, slow path. The exported wrappers are in
 * launch_fast.S: with no launch subscriber they are a test of one bit and
 * the same indirect jump as a forwarded symbol (no lock, no allocation, no
 * TLS, no frame); with one they jump here, arguments untouched.
 * Function handles need no translation: the application already holds the
 * handles of the rewritten code (tables_internal.h). */
#include <string.h>

#include "shim/shim_ev_internal.h"
#include "shim/tables_internal.h"
#include "shim/tenancy_internal.h"

/* The launch's context and kernel name; then GX_EV_LAUNCH to its
 * subscribers, if any (their veto is returned). */
static __attribute__((noinline)) CUresult launch_event(struct gx_event *ev)
{
	struct gx_launch_event *l = &ev->launch;
	bool is_kernel = false;
	CUcontext c = NULL;
	if (REAL(cuCtxGetCurrent)(&c) == CUDA_SUCCESS)
		ev->ctx = c;
	/* the kernel's name from this thread's cache (valid through the event) */
	const char *name = gx_tab_func_name(ev->ctx, l->func, &is_kernel);
	if (name) {
		l->name = name;
		l->is_kernel = is_kernel;
	}
	return gx_ev_on(GX_EV_LAUNCH) ? gx_ev_raise(ev) : CUDA_SUCCESS;
}

/* The driver refused a launch for its resources. Under gpuext that can be
 * ours: code a tool adds to a kernel can raise its registers past what the
 * application's block size allows (GPU run 89: tool_bench's gemm and
 * stencil under kernelretsnoop with a map, wrong results and no word). The
 * error goes back as it came; we say so once, with the kernel and block. */
static __attribute__((noinline, cold)) void launch_refused(const struct gx_launch_event *l)
{
	pr_warn_once("launch of %s (blocks of %u threads) refused by the driver: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES; "
		     "if it runs without gpuext, the instrumented kernel needs more registers than such blocks allow: "
		     "run it without the tool or policy (GPUEXT_DISABLE=1 to compare)",
		     l->name ? l->name : "a kernel", l->block[0] * l->block[1] * l->block[2]);
}

/* After the driver's call: GX_EV_LAUNCH_DONE with the same event, if the
 * launch was accepted, an event was made for it (not nested) and somebody
 * wants every launch's or asked for this one (done_for: a subscriber with
 * GX_EV_F_DONE_ASKED, the device runtime for its timed launches). Not inlined:
 * bench/launch_cost.sh counts the instructions of this and launch_event. */
static __attribute__((noinline)) CUresult launch_done(struct gx_event *ev, CUresult rc)
{
	if (__builtin_expect(rc == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, 0))
		launch_refused(&ev->launch);
	if (rc == CUDA_SUCCESS && ev->kind == GX_EV_LAUNCH && (gx_ev_on(GX_EV_LAUNCH_DONE) || ev->launch.done_for)) {
		ev->kind = GX_EV_LAUNCH_DONE;
		gx_ev_raise(ev);
	}
	return rc;
}

#define LAUNCH_ARGS                                                                                   \
	CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,            \
		unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,               \
		unsigned int sharedMemBytes, CUstream hStream

static CUresult launch_slow(unsigned sym, enum gx_launch_api api, LAUNCH_ARGS,
							    void **kernelParams, void **extra)
{
	struct gx_event ev = { .kind = GX_EV_LAUNCH };
	struct gx_launch_event *l = &ev.launch;
	/* The _ptsz forms' NULL stream is the per-thread default stream: say so
	 * explicitly, so subscribers enqueue work on the right one. */
	if (!hStream && (sym == GX_SYM_cuLaunchKernel_ptsz || sym == GX_SYM_cuLaunchCooperativeKernel_ptsz))
		hStream = CU_STREAM_PER_THREAD;
	l->api = api;
	l->func = f;
	l->grid[0] = gridDimX, l->grid[1] = gridDimY, l->grid[2] = gridDimZ;
	l->block[0] = blockDimX, l->block[1] = blockDimY, l->block[2] = blockDimZ;
	l->shared_mem = sharedMemBytes;
	l->stream = hStream;
	l->kernel_params = kernelParams;
	l->extra = extra;
	if (gx_ev_nested()) {
		ev.kind = GX_EV__COUNT; /* no event was made: none after either */
	} else {
		CUresult veto = launch_event(&ev);
		if (veto != CUDA_SUCCESS) {
			if (gx_tenancy_track)
				gx_tenancy_launched(veto); /* counted in flight: undone */
			return veto;
		}
	}
	void *fn = __atomic_load_n(&gx_slots[sym], __ATOMIC_RELAXED);
	CUresult rc;
	if (api == GX_LAUNCH_COOPERATIVE)
		rc = ((__typeof__(&cuLaunchCooperativeKernel))fn)(l->func, l->grid[0], l->grid[1], l->grid[2],
								  l->block[0], l->block[1], l->block[2],
								  l->shared_mem, l->stream, l->kernel_params);
	else
		rc = ((__typeof__(&cuLaunchKernel))fn)(l->func, l->grid[0], l->grid[1], l->grid[2], l->block[0],
						       l->block[1], l->block[2], l->shared_mem, l->stream,
						       l->kernel_params, l->extra);
	if (gx_tenancy_track)
		gx_tenancy_launched(rc);
	return launch_done(&ev, rc);
}

/* Entered from launch_fast.S only when somebody subscribed to launches. */
#define SLOW __attribute__((visibility("hidden")))
_Static_assert(((1u << GX_EV_LAUNCH) | (1u << GX_EV_LAUNCH_DONE)) == 0x4010,
	       "launch_fast.S tests bits 0x4010 of gx_ev_mask");

SLOW CUresult gx_slow_cuLaunchKernel(LAUNCH_ARGS, void **kernelParams, void **extra)
{
	return launch_slow(GX_SYM_cuLaunchKernel, GX_LAUNCH_KERNEL, f, gridDimX, gridDimY, gridDimZ, blockDimX,
			   blockDimY, blockDimZ, sharedMemBytes, hStream, kernelParams, extra);
}

SLOW CUresult gx_slow_cuLaunchKernel_ptsz(LAUNCH_ARGS, void **kernelParams, void **extra)
{
	return launch_slow(GX_SYM_cuLaunchKernel_ptsz, GX_LAUNCH_KERNEL, f, gridDimX, gridDimY, gridDimZ,
			   blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, kernelParams, extra);
}

SLOW CUresult gx_slow_cuLaunchCooperativeKernel(LAUNCH_ARGS, void **kernelParams)
{
	return launch_slow(GX_SYM_cuLaunchCooperativeKernel, GX_LAUNCH_COOPERATIVE, f, gridDimX, gridDimY, gridDimZ,
			   blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, kernelParams, NULL);
}

SLOW CUresult gx_slow_cuLaunchCooperativeKernel_ptsz(LAUNCH_ARGS, void **kernelParams)
{
	return launch_slow(GX_SYM_cuLaunchCooperativeKernel_ptsz, GX_LAUNCH_COOPERATIVE, f, gridDimX, gridDimY,
			   gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, kernelParams, NULL);
}

static CUresult launch_ex_slow(unsigned sym, const CUlaunchConfig *config,
							       CUfunction f, void **kernelParams, void **extra)
{
	if (!config || gx_ev_nested())
		return ((__typeof__(&cuLaunchKernelEx))__atomic_load_n(&gx_slots[sym], __ATOMIC_RELAXED))(
			config, f, kernelParams, extra);
	struct gx_event ev = { .kind = GX_EV_LAUNCH };
	struct gx_launch_event *l = &ev.launch;
	l->api = GX_LAUNCH_KERNEL_EX;
	l->func = f;
	l->grid[0] = config->gridDimX, l->grid[1] = config->gridDimY, l->grid[2] = config->gridDimZ;
	l->block[0] = config->blockDimX, l->block[1] = config->blockDimY, l->block[2] = config->blockDimZ;
	l->shared_mem = config->sharedMemBytes;
	l->stream = config->hStream;
	if (!l->stream && sym == GX_SYM_cuLaunchKernelEx_ptsz)
		l->stream = CU_STREAM_PER_THREAD; /* as in launch_slow */
	l->kernel_params = kernelParams;
	l->extra = extra;
	l->config = config;
	CUresult veto = launch_event(&ev);
	if (veto != CUDA_SUCCESS) {
		if (gx_tenancy_track)
			gx_tenancy_launched(veto); /* counted in flight: undone */
		return veto;
	}
	CUlaunchConfig c = *config;
	c.gridDimX = l->grid[0], c.gridDimY = l->grid[1], c.gridDimZ = l->grid[2];
	c.blockDimX = l->block[0], c.blockDimY = l->block[1], c.blockDimZ = l->block[2];
	c.sharedMemBytes = l->shared_mem;
	c.hStream = l->stream;
	CUresult rc = ((__typeof__(&cuLaunchKernelEx))__atomic_load_n(&gx_slots[sym], __ATOMIC_RELAXED))(
		&c, l->func, l->kernel_params, l->extra);
	if (gx_tenancy_track)
		gx_tenancy_launched(rc);
	return launch_done(&ev, rc);
}

SLOW CUresult gx_slow_cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)
{
	return launch_ex_slow(GX_SYM_cuLaunchKernelEx, config, f, kernelParams, extra);
}

SLOW CUresult gx_slow_cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
					    void **extra)
{
	return launch_ex_slow(GX_SYM_cuLaunchKernelEx_ptsz, config, f, kernelParams, extra);
}
