/* gx_toollog.h — the tool log: what the shim's device runtime (attach/)
 * writes while an application runs and the tools' reports (tools/) read
 * after it exited, in another process. Host only; plain fixed-width types.
 *
 * "<pid>-<tag>.events" in the shm folder ($GPUEXT_SHM_DIR or
 * /dev/shm/gpuext-$UID): framed records, each 8-byte aligned, appended by
 * the shim's background thread; read by the formatters after the run. */
#ifndef GX_TOOLLOG_H
#define GX_TOOLLOG_H

#include "gpuext/gdev_ctx.h"

struct gx_tev {
	gdev_u32 type; /* GX_TEV_* */
	gdev_u32 len;  /* bytes including this header (a multiple of 8) */
};
#define GX_TEV_PROC 1   /* struct gx_tev_proc: first record */
#define GX_TEV_CTX 2    /* struct gx_tev_ctx: a context got device maps */
#define GX_TEV_KNAME 3  /* struct gx_tev_kname: kernel id -> mangled name */
#define GX_TEV_LAUNCH 4 /* struct gx_tev_launch: host side of a launch */
#define GX_TEV_REC 5    /* struct gx_tev_rec + payload: a ringbuf record */
#define GX_TEV_DROPS 6  /* struct gx_tev_drops: records a ring refused */
#define GX_TEV_LTIME 7  /* struct gx_tev_ltime: when a launch ran on the GPU */
#define GX_TEV_GLAUNCH 8 /* struct gx_tev_glaunch: a graph launch and its kernel nodes */
#define GX_TEV_GLTIME 9  /* struct gx_tev_gltime: when a (sampled) graph launch ran on the GPU */

struct gx_tev_proc {
	struct gx_tev h;
	gdev_u32 pid, pad;
	gdev_u64 start_ns; /* CLOCK_REALTIME */
	char tag[64];      /* policy or tool name */
};
struct gx_tev_ctx {
	struct gx_tev h;
	gdev_u32 ctx;           /* context index in this process */
	gdev_u32 dev, sm, nr_sms;
	gdev_u32 calibrated, pad;
	long long gt_minus_host; /* %globaltimer - CLOCK_REALTIME, ns */
	gdev_u64 calib_err_ns;   /* half the best ping-pong round trip */
};
struct gx_tev_kname {
	struct gx_tev h;
	gdev_u64 kernel_id;
	char name[]; /* NUL-terminated, padded to 8 */
};
struct gx_tev_launch {
	struct gx_tev h;
	gdev_u64 host_ns;  /* CLOCK_REALTIME just before the driver's launch call */
	gdev_u64 kernel_id;
	gdev_u32 ctx, seq; /* seq: launch number in the process */
	gdev_u32 grid[3], block[3];
	/* Since the tool log's second revision (older logs end above: readers
	 * take a shorter record as flags 0). */
	gdev_u32 flags;    /* GX_TEV_L_* */
	gdev_u32 pad;
	gdev_u64 stream;   /* the stream handle, to tell streams apart */
};
#define GX_TEV_L_INSTRUMENTED 1u /* its module carries the tool's hooks */
#define GX_TEV_L_TIMED 2u        /* a GX_TEV_LTIME record follows, later */
#define GX_TEV_LAUNCH_V1_SIZE 56u /* the first revision's size */
struct gx_tev_rec {
	struct gx_tev h;
	gdev_u32 ctx;
	gdev_u32 map; /* map index in the policy object */
	/* payload (what bpf_ringbuf_output wrote) follows */
};
struct gx_tev_ltime {
	struct gx_tev h;
	gdev_u32 ctx, seq;  /* the launch: its context and number (GX_TEV_LAUNCH) */
	gdev_u64 start_ns;  /* CLOCK_REALTIME when it started on the GPU (timing events) */
	gdev_u64 gpu_ns;    /* from start to end on its stream */
};
/* A cuGraphLaunch: per distinct kernel of the exec (child graphs included),
 * how many of its kernel nodes ran. Graph launches are timed as a whole, on
 * the same sample as kernels (per exec): GX_TEV_GLTIME. */
struct gx_tev_gkernel {
	gdev_u64 kernel_id;
	gdev_u32 nodes;
	gdev_u32 flags; /* GX_TEV_L_INSTRUMENTED */
};
struct gx_tev_glaunch {
	struct gx_tev h;
	gdev_u64 host_ns;  /* CLOCK_REALTIME when the launch was accepted */
	gdev_u64 exec;     /* the exec's kernel list (gx_graph_launch_event.gen) */
	gdev_u32 ctx, nr;  /* nr entries follow */
	struct gx_tev_gkernel k[];
};
/* A timed graph launch of the exec `exec` (gx_tev_glaunch.exec): from a
 * timing event recorded on its stream just before cuGraphLaunch to one just
 * after, so the whole graph's span (its kernel nodes, and any copies, sets
 * and gaps between them). */
struct gx_tev_gltime {
	struct gx_tev h;
	gdev_u32 ctx, pad;
	gdev_u64 exec;
	gdev_u64 start_ns; /* CLOCK_REALTIME when it started on the GPU */
	gdev_u64 gpu_ns;
};
struct gx_tev_drops {
	struct gx_tev h;
	gdev_u32 ctx, map;
	gdev_u64 drops;
};

#endif
