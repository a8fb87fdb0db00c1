/* gpu_common.h — what the CPU reference (gpu_ref.c) and the GPU harness
 * (tests/gpu/devbpf_harness.c) share: the event stream of the check kernel,
 * the map spec file, and one dump format for comparing final map states. */
#ifndef GX_TEST_GPU_COMMON_H
#define GX_TEST_GPU_COMMON_H

#include <stdio.h>

#include "devbpf/gx_bpf.h"

#define GX_T_GRID 264  /* blocks of the check kernel */
#define GX_T_BLOCK 128 /* threads per block (4 warps) */
#define GX_T_ITERS 8   /* memory-hook calls per warp */
#define GX_T_KERNEL "gx_check"
/* the address a warp's i-th access reports */
#define GX_T_ADDR(b, w, i) (0x10000000ull + ((((unsigned long long)(b) * 4 + (w)) * GX_T_ITERS + (i)) * 132ull))

#ifdef __cplusplus
extern "C" {
#endif

/* "type key_size value_size max_entries name" per map, in index order. */
int gx_t_write_specs(FILE *f, struct gx_map **maps, size_t n);
/* Create anonymous maps from a spec file; sharded arrays get nr_sms shards
 * (x 64 for per-warp). */
int gx_t_read_specs(FILE *f, unsigned nr_sms, struct gx_map ***maps, size_t *n);
/* Final state, schedule-independent: non-zero array entries, hash entries
 * sorted by key, merged sharded values, ring record count and checksum
 * (the ring is drained). */
void gx_t_dump(FILE *f, struct gx_map **maps, size_t n);

#ifdef __cplusplus
}
#endif

#endif
