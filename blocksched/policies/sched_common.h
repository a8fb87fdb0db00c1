/* sched_common.h — what every schedule policy (blocksched/policies/)
 * shares: the hooks' context (gdev_helpers.h: the sched_* fields of struct
 * gdev_ctx) and the two settings the launcher reads from the object
 * (gx_blocksched.h): the mode and the claims per worker. They are plain
 * globals in .data, so `gpuext-run --sched P.bpf.o,name=value` can set them
 * (and the policy's own knobs) without JIT'ing the object again. */
#ifndef GX_SCHED_COMMON_H
#define GX_SCHED_COMMON_H

#include "gpuext/gdev_helpers.h"

#define GX_SCHED_STATIC 0 /* GX_WORK_STATIC: w, w + W, ...; no claims, no hooks */
#define GX_SCHED_CLAIM 1  /* GX_WORK_CLAIM: chunks claimed; the hooks run */

/* The launcher's settings: mode, and claims per worker (the chunk is
 * units / (workers x chunks), at least 1). */
#define GX_SCHED_SETTINGS(mode, chunks)                         \
	__u32 gx_sched_mode SEC(".data") = (mode);              \
	__u32 gx_sched_chunks SEC(".data") = (chunks)

/* The launcher's guard (gx_blocksched.h, blocksched/bs_guard.c): each
 * kernel and grid is timed as the policy's copy, as a static-only copy and
 * as it is, runs as the fastest, and keeps being judged against the
 * original; `gx_sched_guard=0` turns it off (the copy then runs even where
 * it is slower, and `gpuext sched` says the kernel is unguarded). Every
 * shipped policy is guarded by default: each loses to the hardware's
 * scheduler on some kernels (issue 40: greedy 2.6x on a sorted SpMV). */
#define GX_SCHED_GUARD(on) __u32 gx_sched_guard SEC(".data") = (on)

/* A knob: a plain global the launcher may set ("name=value"). */
#define GX_SCHED_KNOB(type, name, value) type name SEC(".data") = (value)

#endif
