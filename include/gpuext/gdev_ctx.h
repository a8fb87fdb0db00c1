/* gdev_ctx.h — the ABI between instrumented kernels and device policies.
 *
 * Shared by three parties, so it changes only with all three:
 *  - ptx-rewrite hook sites give the hook function a `struct gdev_ctx`: an
 *    inlined handler gets its fields in registers (its loads through ctx are
 *    rewritten); a called one gets the generic address of the leader
 *    thread's own .local copy (only the fields it may read are written):
 *    .func (.param .b32 ret) FUNC(.param .b64 ctx)
 *    Read the struct through ctx with generic loads at constant offsets only
 *    (the verifier's rule): no space conversion, no pointer arithmetic kept.
 *  - devbpf JIT emits each policy program as such a .func (eBPF r1 = ctx).
 *  - policy authors read the fields from C compiled with clang -target bpf.
 *
 * Warp-uniformity (for the SIMT verifier): every field is warp-uniform. The
 * site runs the handler on one leader lane of the lanes that reached it
 * (elect.sync on sm_90+, the lowest lane before; leader_lane says which);
 * lane values are aggregated (active_mask, nr_active) or are the leader's
 * (addr, thread index). Entry/exit/mem/fence decisions are not used; sched
 * hooks broadcast theirs by shfl.sync.
 *
 * Plain C types so the header works in BPF, CUDA, kernel-free user space. */
#ifndef GDEV_CTX_H
#define GDEV_CTX_H

#ifdef __KERNEL__
#include <linux/types.h>
typedef __u64 gdev_u64;
typedef __u32 gdev_u32;
#else
typedef unsigned long long gdev_u64;
typedef unsigned int gdev_u32;
#endif

/* Hook kinds (also the bits of gx_ptx_rewrite_opts.hooks). */
enum gdev_hook {
	GDEV_HOOK_ENTRY = 1u << 0,  /* kernel entry, once per warp   (gdev/probe/<glob>) */
	GDEV_HOOK_EXIT = 1u << 1,   /* before ret/exit, once per warp (gdev/retprobe/<glob>) */
	GDEV_HOOK_MEM = 1u << 2,    /* global/generic ld/st/atom/red  (gdev/mem/access) */
	GDEV_HOOK_FENCE = 1u << 3,  /* membar/fence                   (gdev/mem/fence) */
	GDEV_HOOK_SCHED_ENTER = 1u << 4,   /* persistent worker claims a unit (gdev/sched/enter) */
	GDEV_HOOK_SCHED_EXIT = 1u << 5,    /* unit finished                   (gdev/sched/exit) */
	GDEV_HOOK_SCHED_STEAL = 1u << 6,   /* may this worker steal?     (gdev/sched/should_try_steal) */
	/* Once per block, where it delays the block least (gdev/blockprobe/<glob>):
	 * the rewriter puts it at the kernel's entry site, or, in kernels whose
	 * warps wait for each other (bar/barrier/mbarrier), at its exit sites —
	 * after the last barrier, where warp 0 holds no other warp up. The
	 * program runs as a probe's or a retprobe's (ctx->hook says which) and
	 * picks one call itself: warp 0 (ctx->warpid), and at an exit lane 0
	 * among the lanes leaving (ctx->active_mask & 1) — thread 0 enters once
	 * and exits once (tools/threadhist.bpf.c). */
	GDEV_HOOK_BLOCK = 1u << 7,
};

/* The hooks the rewriter places at sites of a kernel's own code, and those of
 * the persistent-worker loop: together, every hook a device program binds.
 * A new hook kind joins one of these, so that callers testing "is this a
 * device hook" need not list the kinds themselves. */
#define GDEV_HOOKS_SITE                                                                            \
	(GDEV_HOOK_ENTRY | GDEV_HOOK_EXIT | GDEV_HOOK_MEM | GDEV_HOOK_FENCE | GDEV_HOOK_BLOCK)
#define GDEV_HOOKS_SCHED (GDEV_HOOK_SCHED_ENTER | GDEV_HOOK_SCHED_EXIT | GDEV_HOOK_SCHED_STEAL)
#define GDEV_HOOKS_DEVICE (GDEV_HOOKS_SITE | GDEV_HOOKS_SCHED)

/* Memory operation kinds for GDEV_HOOK_MEM. */
enum gdev_mem_op {
	GDEV_MEM_LOAD = 1,
	GDEV_MEM_STORE = 2,
	GDEV_MEM_ATOMIC = 3,
	GDEV_MEM_REDUCE = 4,
	/* Not an access: samples a lane took but could not keep (a loop's
	 * sites under GX_PTX_MEM_DEFER keep 8 a lane between two flushes);
	 * size: how many (at most 65535 a report), addr 0, one lane. */
	GDEV_MEM_LOST = 5,
};

/* Address spaces seen by the memory hook. */
enum gdev_space {
	GDEV_SPACE_GLOBAL = 1,
	GDEV_SPACE_GENERIC = 2,
};

/* Hook return values. */
enum gdev_decision {
	GDEV_DEFAULT = 0,       /* go on as the program would */
	GDEV_SCHED_NO_STEAL = 1, /* should_try_steal: do not steal */
};
/* gdev/sched/exit returns a class for the chunk that just ran: 0 no hint,
 * 1 .. GDEV_SCHED_CLASS_MAX the heavier the earlier the next launch of the
 * kernel (same grid) runs it (blocksched, include/gpuext/gx_work.h). */
#define GDEV_SCHED_CLASS_MAX 31

/* The sched hooks (blocksched: persistent workers claiming chunks of
 * consecutive units) read four fields under other names:
 *   sched_start   enter: now; exit: when the chunk started; steal: when the
 *                 worker started (%globaltimer ns, so now - start is ns)
 *   sched_units   enter/exit: units in the chunk; steal: units the worker ran
 *   sched_worker  the worker (its block in the persistent grid)
 *   sched_steals  chunks this worker stole so far
 * and unit / ctaid = the chunk's first unit (steal: 0), nctaid the grid. */
struct gdev_ctx {
	gdev_u64 kernel_id;    /* FNV-1a 64 of the kernel's mangled name */
	gdev_u64 launch_id;    /* per-launch sequence number set by the shim (0 if none) */
	union {
		gdev_u64 addr;         /* MEM: leader lane's effective address (generic/global) */
		gdev_u64 sched_start;
	};
	union {
		gdev_u32 size;         /* MEM: bytes accessed per lane (vector width x elem size) */
		gdev_u32 sched_units;
	};
	union {
		gdev_u32 op;           /* MEM: enum gdev_mem_op; FENCE: 0 */
		gdev_u32 sched_worker;
	};
	union {
		gdev_u32 space;        /* MEM: enum gdev_space */
		gdev_u32 sched_steals;
	};
	gdev_u32 active_mask;  /* lanes of the warp that reached the hook */
	gdev_u32 nr_active;    /* popcount(active_mask) */
	gdev_u32 hook;         /* enum gdev_hook of this call */
	gdev_u32 ctaid_x, ctaid_y, ctaid_z;    /* block index (virtualized under blocksched) */
	gdev_u32 nctaid_x, nctaid_y, nctaid_z; /* grid size */
	gdev_u32 tid_x, tid_y, tid_z;          /* leader lane's thread index */
	gdev_u32 ntid_x, ntid_y, ntid_z;       /* block size */
	gdev_u32 smid;         /* %smid */
	gdev_u32 warpid;       /* warp index within the block: (linear tid) / 32 */
	gdev_u32 leader_lane;  /* %laneid of the leader */
	gdev_u32 unit;         /* SCHED: logical block id being claimed/finished */
	gdev_u32 pad0;
};

/* Byte offsets, used by the PTX trampoline emitter and checked by a test. */
#define GDEV_CTX_OFF_KERNEL_ID 0
#define GDEV_CTX_OFF_LAUNCH_ID 8
#define GDEV_CTX_OFF_ADDR 16
#define GDEV_CTX_OFF_SIZE 24
#define GDEV_CTX_OFF_OP 28
#define GDEV_CTX_OFF_SPACE 32
#define GDEV_CTX_OFF_ACTIVE_MASK 36
#define GDEV_CTX_OFF_NR_ACTIVE 40
#define GDEV_CTX_OFF_HOOK 44
#define GDEV_CTX_OFF_CTAID 48   /* x,y,z */
#define GDEV_CTX_OFF_NCTAID 60  /* x,y,z */
#define GDEV_CTX_OFF_TID 72     /* x,y,z */
#define GDEV_CTX_OFF_NTID 84    /* x,y,z */
#define GDEV_CTX_OFF_SMID 96
#define GDEV_CTX_OFF_WARPID 100
#define GDEV_CTX_OFF_LEADER_LANE 104
#define GDEV_CTX_OFF_UNIT 108
#define GDEV_CTX_SIZE 120 /* sizeof(struct gdev_ctx); allocate with .align 8 */

/* The module-level constant every rewritten module gets: a copy of the
 * per-context runtime block (struct gx_devrt, gx_devrt.h), written whole by
 * the shim before the module's first launch in a context (cuModuleGetGlobal
 * + a copy). With several device policies the k-th (k >= 1) has its own,
 * GDEV_DEVRT_SYMBOL GDEV_DEVRT_SUFFIX "<k>" (attach/pmerge.c renames). */
#define GDEV_DEVRT_SYMBOL "__gx_devrt"
#define GDEV_DEVRT_SUFFIX "__p"

#endif
