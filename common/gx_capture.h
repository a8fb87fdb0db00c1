/* gx_capture.h — gpuext's own driver calls in the relaxed stream-capture
 * mode (header only; each part passes the driver's
 * cuThreadExchangeStreamCaptureMode it calls through).
 *
 * Why: an application may capture a graph in global mode (PyTorch's
 * default) at any time, even around its first launch. In that mode a call
 * the driver deems unsafe — an allocation, an event query, a module load —
 * made by any thread not in relaxed mode invalidates the capture, and the
 * application's cudaStreamEndCapture fails (runs 55 and 57). Our calls are
 * never part of the application's graph, so they are made relaxed: a
 * thread of our own switches once for its life, an application thread
 * around our calls and back (docs/shim.md, "Graph capture is never
 * disturbed"). */
#ifndef GX_CAPTURE_H
#define GX_CAPTURE_H

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <stdbool.h>

typedef CUresult (*gx_capture_xchg_fn)(CUstreamCaptureMode *mode);

/* The thread's mode before gx_capture_relax, to give back. */
struct gx_capture_mode {
	CUstreamCaptureMode old;
	bool swapped;
};

static inline struct gx_capture_mode gx_capture_relax(gx_capture_xchg_fn xchg)
{
	struct gx_capture_mode m = { CU_STREAM_CAPTURE_MODE_RELAXED, false };
	m.swapped = xchg && xchg(&m.old) == CUDA_SUCCESS;
	return m;
}

static inline void gx_capture_restore(gx_capture_xchg_fn xchg, struct gx_capture_mode m)
{
	if (m.swapped)
		xchg(&m.old);
}

#endif
