/* bs_internal.h — what blocksched's launch side shares between its files:
 * bs_launch.c (events, kernels, the launch swap), bs_mem.c (device memory:
 * per-stream states, per-kernel hints, retired blocks, sample buffers) and
 * bs_log.c (the schedule log). One lock, bs_lock, guards all their tables;
 * driver calls that may block (allocation, memset) are made under it only
 * where a table entry is being created, so two threads never allocate the
 * same stream's state twice. */
#ifndef BLOCKSCHED_BS_INTERNAL_H
#define BLOCKSCHED_BS_INTERNAL_H

#include <stdint.h>
#include <sys/types.h>
#include <uthash.h>

#include "blocksched/gx_blocksched.h"
#include "common/gx_log.h"
#include "gpuext/gx_work.h"

extern const struct gx_bs_host *bs_host;
extern pthread_mutex_t bs_lock;
#define CU(name) (bs_host->cu->name)

/* ---- bs_mem.c ---- */
/* The stream's state with room for `chunks` claim words (under bs_lock);
 * allocated, grown (the old block retired until the stream passes an
 * event) or reset (before its epoch could overflow) with work queued on
 * the stream. 0 on failure. */
CUdeviceptr bs_state_get(CUcontext ctx, CUstream s, unsigned chunks);
/* A hint block with room for `chunks` per class list; *blk (the kernel's,
 * 0 at first) is updated; 0 on failure (no hints then). Under bs_lock. */
CUdeviceptr bs_hints_get(CUcontext ctx, CUstream s, CUdeviceptr *blk, unsigned *cap, unsigned chunks);
/* Free retired blocks whose event has passed (all with `all`, at teardown). */
void bs_retired_reap(CUcontext ctx, bool all);
/* A stream is going away / a context is: their blocks. */
void bs_mem_stream_gone(CUcontext ctx, CUstream s);
void bs_mem_ctx_gone(CUcontext ctx);
/* Retire a kernel's hint block (its module went away). */
void bs_mem_retire(CUcontext ctx, CUdeviceptr d, CUstream s);
void bs_mem_reset(void);
/* Free every state and retired block (a live detach: no launch that used
 * them still runs; each context pushed in turn). */
void bs_mem_free_all(void);

/* ---- bs_log.c ---- */
bool bs_log_on(void);
/* One line per decision about a kernel ("K: launched as ...", "K: runs
 * unchanged: why"), also logged at info level. */
void bs_log_decision(const char *kernel, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A launch of `kernel` (its n-th); returns the device address of a stats
 * area for `workers` slots when this launch is sampled (0 otherwise). */
uint64_t bs_log_sample(CUcontext ctx, const char *kernel, unsigned long long nth, unsigned workers,
		       unsigned units, unsigned chunk, const unsigned grid[3], unsigned per_sm, unsigned nsm);
/* Write the samples whose workers have all reported (all: and drop the rest). */
void bs_log_poll(bool all);
/* Sampled launches written, and the steals their workers counted. */
void bs_log_counts(uint64_t *sampled, uint64_t *steals);
void bs_log_ctx_gone(CUcontext ctx);

#endif
