/* gx_work.h — the work descriptor of a kernel under the persistent-worker
 * transform (ptx-rewrite/pass_persistent.c), shared with the shim and
 * blocksched, which allocate and fill it before each launch.
 *
 * A transformed kernel has one more, trailing parameter, `.param .u64
 * __gx_work` (GX_WORK_PARAM): the device address of this struct (16-byte
 * aligned, in global memory). The kernel is launched with any number of
 * blocks ("workers", typically SMs x occupancy) of the original block size;
 * each worker loops over logical blocks ("units") 0 .. total-1 and runs the
 * original body for each with %ctaid/%nctaid replaced by the unit's
 * coordinates (x fastest) and grid_{x,y,z}. */
#ifndef GX_WORK_H
#define GX_WORK_H

#define GX_WORK_PARAM "__gx_work"

enum gx_work_mode {
	GX_WORK_STATIC = 0,  /* worker w takes units w, w + W, w + 2W ... (W = workers) */
	GX_WORK_DYNAMIC = 1, /* each worker claims the next unit with atomicAdd(&next, 1) */
};

struct gx_work_desc {
	unsigned int next;   /* DYNAMIC: next unclaimed unit; set to 0 before the launch */
	unsigned int total;  /* number of units: grid_x * grid_y * grid_z */
	unsigned int grid_x, grid_y, grid_z; /* the original launch grid */
	unsigned int mode;   /* enum gx_work_mode */
	unsigned int reserved[2]; /* 0 */
};

#define GX_WORK_OFF_NEXT 0
#define GX_WORK_OFF_TOTAL 4
#define GX_WORK_OFF_GRID 8
#define GX_WORK_OFF_MODE 20
#define GX_WORK_SIZE 32

#endif
