/* gdev_helpers.h — the one header device-policy authors include.
 *
 * Policies are C compiled with `clang -target bpf -O2 -g -I devbpf`. This file
 * is self-contained (no <linux/bpf.h>: with -target bpf the multiarch
 * <asm/types.h> is not on clang's path), and it also works when libbpf's
 * <bpf/bpf_helpers.h> was included first (then its SEC/__uint/... are used).
 *
 * What is here, and why it is shaped so:
 *  - SEC("gdev/...") names the hook a program attaches to (docs/devbpf.md).
 *  - Maps are declared the libbpf way (BTF-defined, in SEC(".maps")) with
 *    __uint/__type/__array, so the same declaration is read by our loader and
 *    by bpftool/libbpf tooling.
 *  - Helpers are declared as constant function pointers holding the helper id,
 *    the libbpf convention, so clang emits `call ID`. Standard ids keep their
 *    kernel numbers; gdev-specific helpers live from 0x1000 up (GDEV_HELPER_*),
 *    a range the kernel will not reach.
 *  - Warp-uniformity: a program runs once per warp, on the leader lane. All
 *    context fields are warp-uniform. gdev_laneid() and gdev_thread_idx() are
 *    lane-varying: the SIMT verifier rejects branches, loop bounds and map
 *    update keys that depend on them (docs/devbpf-verifier.md). */
#ifndef GDEV_HELPERS_H
#define GDEV_HELPERS_H

#include "gpuext/gdev_ctx.h"

/* Fixed-width types (same definitions as <linux/types.h>, so including both
 * is fine: identical typedefs may repeat in C11). */
typedef unsigned char __u8;
typedef signed char __s8;
typedef unsigned short __u16;
typedef signed short __s16;
typedef unsigned int __u32;
typedef signed int __s32;
typedef unsigned long long __u64;
typedef signed long long __s64;

/* ---- Map types (values equal the kernel's BPF_MAP_TYPE_* where they exist) ----
 * GDEV_MAP_PERSM_ARRAY is BPF_MAP_TYPE_PERCPU_ARRAY: one shard per SM; the
 * calling warp's lookup/update reaches its own SM's shard, the host sees the
 * shards (and may sum them). GDEV_MAP_PERWARP_ARRAY: one shard per resident
 * warp slot (SM x warp id); a leader writes only its own shard, so updates need
 * no atomics. Both behave like BPF_MAP_TYPE_PERCPU_ARRAY for lookup/update. */
#define GDEV_MAP_HASH 1           /* BPF_MAP_TYPE_HASH */
#define GDEV_MAP_ARRAY 2          /* BPF_MAP_TYPE_ARRAY */
#define GDEV_MAP_PERSM_ARRAY 6    /* BPF_MAP_TYPE_PERCPU_ARRAY */
#define GDEV_MAP_RINGBUF 27       /* BPF_MAP_TYPE_RINGBUF (device -> host) */
#define GDEV_MAP_PERWARP_ARRAY 0x1001 /* gdev-specific */

/* map_flags of a GDEV_MAP_ARRAY: a record table. Each value is a slot a
 * program fills with plain stores (no atomic, no ring reservation: nothing
 * the writing warp waits for); the shim's drainer copies the table, passes
 * every slot that is not all zero and has not changed since its previous
 * look to the tool log as one ring record (the value's bytes), and clears it
 * on the device. A program picks a slot nobody else writes while the record
 * is pending: launchlate uses ctx->launch_id modulo max_entries (one record
 * per launch). A slot written again before the drainer took it (the table
 * wrapped within two drain periods) keeps only the last record. */
#define GDEV_F_RECORDS (1u << 24)

/* Update flags (bpf_map_update_elem), as in the kernel. */
#define GDEV_ANY 0
#define GDEV_NOEXIST 1
#define GDEV_EXIST 2

/* ---- Helper ids ---- */
#define GDEV_HELPER_MAP_LOOKUP_ELEM 1
#define GDEV_HELPER_MAP_UPDATE_ELEM 2
#define GDEV_HELPER_MAP_DELETE_ELEM 3
#define GDEV_HELPER_KTIME_GET_NS 5     /* = %globaltimer on the device */
#define GDEV_HELPER_RINGBUF_OUTPUT 130
#define GDEV_HELPER_LOOP 181           /* bpf_loop */
#define GDEV_HELPER_BASE 0x1000
#define GDEV_HELPER_GLOBALTIMER 0x1000 /* u64 ns, uniform */
#define GDEV_HELPER_SMID 0x1001        /* u32, uniform */
#define GDEV_HELPER_WARPID 0x1002      /* u32, uniform */
#define GDEV_HELPER_LANEID 0x1003      /* u32, LANE-VARYING */
#define GDEV_HELPER_BLOCK_IDX 0x1004   /* (dim 0..2) u32, uniform */
#define GDEV_HELPER_THREAD_IDX 0x1005  /* (dim 0..2) u32, LANE-VARYING */
#define GDEV_HELPER_MEM_PREFETCH 0x1006 /* (addr, len) -> 0 or -errno */
#define GDEV_HELPER_L2_PREFETCH 0x1007  /* (addr) -> 0 */
#define GDEV_HELPER_PRINTK 0x1008       /* (fmt, fmt_size, a1, a2, a3) -> bytes or -errno */
#define GDEV_HELPER_BLOCK_DIM 0x1009    /* (dim 0..2) u32 block size, uniform */
#define GDEV_HELPER_GRID_DIM 0x100a     /* (dim 0..2) u32 grid size, uniform */
#define GDEV_HELPER_END 0x100b          /* one past the last gdev helper */

#ifdef __bpf__
/* ---- Section and map declaration macros (libbpf-compatible) ---- */
#ifndef SEC
#define SEC(name) __attribute__((section(name), used))
#endif
#ifndef __uint
#define __uint(name, val) int (*name)[val]
#endif
#ifndef __type
#define __type(name, val) typeof(val) *name
#endif
#ifndef __array
#define __array(name, val) typeof(val) *name[]
#endif
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif
#ifndef __noinline
#define __noinline __attribute__((noinline))
#endif
#ifndef __weak
#define __weak __attribute__((weak))
#endif

/* The license section is accepted and ignored (no GPL-only helpers here). */
#define GDEV_LICENSE(s) char _license[] SEC("license") = s

/* ---- Standard helpers (skipped when libbpf's bpf_helper_defs.h came first) ---- */
#ifndef __BPF_HELPERS__
static void *(*const bpf_map_lookup_elem)(void *map, const void *key) = (void *)1;
static long (*const bpf_map_update_elem)(void *map, const void *key, const void *value,
					 __u64 flags) = (void *)2;
static long (*const bpf_map_delete_elem)(void *map, const void *key) = (void *)3;
static __u64 (*const bpf_ktime_get_ns)(void) = (void *)5;
static long (*const bpf_ringbuf_output)(void *ringbuf, void *data, __u64 size,
					__u64 flags) = (void *)130;
static long (*const bpf_loop)(__u32 nr_loops, void *callback_fn, void *callback_ctx,
			      __u64 flags) = (void *)181;
#endif

/* ---- gdev helpers ---- */
static __u64 (*const gdev_globaltimer)(void) = (void *)GDEV_HELPER_GLOBALTIMER;
static __u32 (*const gdev_smid)(void) = (void *)GDEV_HELPER_SMID;
static __u32 (*const gdev_warpid)(void) = (void *)GDEV_HELPER_WARPID;
static __u32 (*const gdev_laneid)(void) = (void *)GDEV_HELPER_LANEID;
static __u32 (*const gdev_block_idx)(__u32 dim) = (void *)GDEV_HELPER_BLOCK_IDX;
static __u32 (*const gdev_thread_idx)(__u32 dim) = (void *)GDEV_HELPER_THREAD_IDX;
static long (*const gdev_mem_prefetch)(__u64 addr, __u64 len) = (void *)GDEV_HELPER_MEM_PREFETCH;
static long (*const gdev_l2_prefetch)(__u64 addr) = (void *)GDEV_HELPER_L2_PREFETCH;
static long (*const gdev_printk_)(const char *fmt, __u32 fmt_size, __u64 a1, __u64 a2,
				  __u64 a3) = (void *)GDEV_HELPER_PRINTK;
static __u32 (*const gdev_block_dim)(__u32 dim) = (void *)GDEV_HELPER_BLOCK_DIM;
static __u32 (*const gdev_grid_dim)(__u32 dim) = (void *)GDEV_HELPER_GRID_DIM;

/* gdev_printk("fmt %d\n", a, b, c): up to three integer arguments; %d %u %x
 * %ld %lu %lx %llu %llx %p %s(not supported: printed as pointer) %%. The
 * record goes to the runtime's built-in printk ring buffer and the host
 * prints it. The format string lives in .rodata. */
#define gdev_printk(fmt, ...)                                                   \
	({                                                                      \
		static const char ____fmt[] = fmt;                              \
		gdev__printk3(____fmt, sizeof(____fmt), ##__VA_ARGS__, 0, 0, 0); \
	})
#define gdev__printk3(f, n, a, b, c, ...) \
	gdev_printk_(f, n, (__u64)(a), (__u64)(b), (__u64)(c))

/* Compiler barrier (no code): keeps clang from merging checks. */
#define gdev_barrier_var(var) asm volatile("" : "+r"(var))
#endif /* __bpf__ */

#endif
