/* gx_ptx.h — public API of ptx-rewrite, used by the shim and the CLI.
 *
 * Contract: gx_ptx_rewrite() either returns 0 with PTX that ptxas accepts and
 * that means the same as the input plus the requested hooks, or a negative
 * errno with a message (`line:col: reason` for parse errors) — in which case
 * the caller loads the original image. It never aborts the process. */
#ifndef GX_PTX_H
#define GX_PTX_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "gpuext/gx_hooks.h"

struct gx_ptx_rewrite_opts {
	size_t sz;	/* sizeof(struct gx_ptx_rewrite_opts): ABI can grow */
	unsigned hooks; /* enum gdev_hook mask; 0 with !persistent = identity */
	int persistent; /* apply the persistent-worker transform where safe:
				  * 1 in place; GX_PTX_PERSISTENT_COPY: keep each
				  * accepted kernel and add a transformed copy (see
				  * below) */
	/* Policy code: PTX holding the bound .funcs (from the devbpf JIT). NULL:
	 * hooks run the built-in handlers chosen by `stubs`. */
	const char *policy_ptx;
	size_t policy_len;
	const struct gx_hook_binding *bindings;
	size_t nr_bindings;
	/* Highest PTX ISA the driver accepts, as major*10+minor (e.g. 90 for 9.0);
	 * 0 = no limit. Merged modules never exceed it. */
	unsigned max_ptx_version;
	/* Without a policy: what the hooks run (enum gx_ptx_stubs). */
	unsigned stubs;
	/* Code-generation switches (GX_PTX_F_*), for A/B measurements. Options,
	 * not environment variables read by the library, so that the shim's
	 * module cache (keyed by these options) never serves a module built
	 * under other switches. */
	unsigned flags;
	/* The persistent transform's device runtime: PTX .funcs named
	 * gxbsrt_* (GX_WORK_RT_PREFIX, include/gpuext/gx_work.h), linked into
	 * the module under the fresh prefix when a kernel is transformed
	 * (blocksched's gx_bs_rt_ptx()). NULL: the transform refuses every
	 * kernel (its claims need the runtime). */
	const char *persist_rt;
	size_t persist_rt_len;
	/* The registers the driver's JIT gave the original kernels (blocksched
	 * measures them): a kernel's copy gets .maxnreg max(32, regs rounded
	 * up to 8), so the loop never costs it resident blocks (on sm_70+ an
	 * SM's 64K registers hold 2048 threads of 32; above that, the per-warp
	 * allocation granule is 8 registers per thread). Unlisted: no cap.
	 * Kernels with gated memory sites (bind_samples below) get the same cap
	 * unless GX_PTX_F_NO_MEM_CAP: their record path is cold. */
	const struct gx_ptx_kregs *persist_regs;
	size_t nr_persist_regs;
	/* Memory sites whose binding samples (bind_samples[i] > 0: the
	 * program's gx_mem_sample global, gx_hooks.h) call their handler for 1
	 * warp access in N, decided by a uniform per-warp test before the
	 * election (site_sample.c, docs/devbpf-tools.md "memtrace").
	 * bind_samples: one per binding, or NULL (no binding samples).
	 * mem_sample > 0 replaces the sampling bindings' N (1: every access,
	 * the full trace); 0 keeps theirs. Handlers that do not sample are never
	 * gated. gx_ptx_mem_sample_from_env() is the callers' mem_sample. */
	const unsigned *bind_samples;
	unsigned mem_sample;
	/* With `persistent`: only kernels whose name matches this fnmatch(3)
	 * glob get the transform (a schedule policy's kernels=GLOB); the rest
	 * are left as they are, and a module with none selected is unchanged,
	 * so the shim loads its own SASS. NULL or "*": every kernel. */
	const char *persist_kernels;
};

struct gx_ptx_kregs {
	const char *name; /* the kernel's (mangled) name */
	unsigned regs;
};

/* opts.flags */
#define GX_PTX_F_NO_RECONVERGE	     1u /* no bar.warp.sync after entry/mem/fence sites */
#define GX_PTX_F_ENTRY_TOP	     2u /* every entry site before the kernel's first statement */
/* Persistent copies that only ever run GX_WORK_STATIC (the launcher's
 * policy never claims): the loop without the claim path, the runtime or the
 * sched hooks, which cost a GEMM 8 registers even when never run. Logged
 * as ", static only" in the copy's line. */
#define GX_PTX_F_PERSIST_STATIC	     4u
/* Copy mode with a claiming policy: each accepted kernel K also gains a
 * static-only copy <prefix>_ps_K (logged like the other, ", static only"),
 * so a launcher can run K, its claiming copy or its static loop — the
 * cheapest of the three when the policy's stealing does not pay
 * (blocksched's guard, bs_guard.c). */
#define GX_PTX_F_PERSIST_STATIC_COPY 16u
/* A/B only: the unit barrier for every persistent kernel, as the first
 * transform had (pass_persistent.c elides it where nothing needs it). */
#define GX_PTX_F_UNIT_BARRIER	     8u

/* A/B only: block handlers at every kernel's entry, or at every kernel's
 * exits, instead of the placement rule's choice (barriers: exits). */
#define GX_PTX_F_BLOCK_ENTRY   32u
#define GX_PTX_F_BLOCK_EXIT    64u
/* A/B (issue 40): block handlers before the kernel's first barrier that
 * every thread passes once (block_barrier.c), where it has one; else the
 * rule's choice. */
#define GX_PTX_F_BLOCK_BARRIER 256u

/* A/B only: kernels with memory sites keep the registers ptxas gives
 * them, no cap at the measured originals' count (persist_regs). */
#define GX_PTX_F_NO_MEM_CAP 128u

/* Every kernel with a hook site, not only those with memory sites, is
 * capped at the measured original's registers (rounded up to 8, at least
 * 32): a probe's path then spills rather than costing the kernel resident
 * blocks, and so does the cubin route's relocatable compile (ptxas -c gave
 * tool_bench's rowsoftmax 36 registers where the whole-module JIT gives 27:
 * three quarters of its resident blocks; the route row of GPU runs 93/95,
 * +7 % with no probe at all). On unless GX_PTX_REG_CAP=0 (issue 40). */
#define GX_PTX_F_HOOK_CAP 512u

/* A/B (issue 40): the warp's index in its block (%tid and %ntid
 * arithmetic, the words every warp's uniform test reads), and the %smid and
 * %warpid a site or its inlined handler reads, computed once at the
 * function's start into registers, not at every site: an exit site then
 * reads no special register on the block's last cycles, and its counter's
 * address is a few ALU instructions from the test. */
#define GX_PTX_F_HOIST_WARP 1024u

/* A/B (issue 40): a block handler's inlined site gated on thread 0 of the
 * block ((%tid.x | %tid.y | %tid.z) != 0 leaves) instead of the uniform
 * warp test, the election and the handler's own lane-0 test: for block
 * probes (SEC "gdev/blockprobe/..") whose handlers count a block by its warp 0's
 * lane 0 (threadhist; kernelretsnoop is an exit handler and keeps its
 * election), the same counts with ~10 fewer instructions on warp 0's last
 * cycles (docs/devbpf-perf.md, session 30; probe_ab's th_t0 is the
 * same edit by hand). GX_PTX_BLOCK_T0=1. */
#define GX_PTX_F_BLOCK_T0 65536u

/* A/B (issue 40): kernels with memory sites capped 8 registers above the
 * measured original's count (rounded up to 8, at least 32), not at it: the
 * cooperative sample's grid-stride loop spills 24 bytes at .maxnreg 32
 * (offline ptxas -v; GPU run 125: 2.30x a launch under memtrace), none at
 * 40, for up to a quarter of its resident blocks. GX_PTX_MEM_CAP=+8. */
#define GX_PTX_F_MEM_CAP_SLACK 131072u

/* A/B (issue 40): a sampled memory site inside a loop keeps its sample in
 * a per-lane buffer (address, stamp, info; 8 a loop pass), with
 * predicated instructions only, and the handler is called for each where
 * the loop is left and before each ret (site_defer.c): no call, vote or
 * branch in the loop's body. The cooperative sample ran 2.2-2.4x under
 * memtrace with the voted gate, and with the countdown behind a divergent
 * branch (GPU runs 125, 126, 129): block 0's sum, unrolled 4 ways by nvcc,
 * then issues one load at a time. Not yet measured in this form.
 * GX_PTX_MEM_DEFER=1. */
#define GX_PTX_F_MEM_DEFER 262144u

/* A/B (issue 40): a sampling binding's gate (site_sample.c) before the
 * election as a voted hash of %clock (~13 ALU instructions per access)
 * instead of the countdown (below). GPU run 90: 1.46-3.7x, tool_bench's
 * reduce and the cooperative sample hung (the leader's call then split
 * warps); run 101, the handler inlined: vadd 4.1x. GX_PTX_SAMPLE_EARLY=1. */
#define GX_PTX_F_SAMPLE_EARLY 2048u

/* The old placement of called mem/fence handlers, for A/Bs (issue 40). GPU
 * run 97: with the reservation's loop off the fast path and bar.warp.sync
 * after each site, every store of memtrace's golden kernel was recorded as
 * 1 + 31 lanes (939 records for 626 accesses): a call made by the elected
 * leader alone left the warp split for good. Run 98: inlined, or called by
 * every arriving lane, 626 records exactly. So mem/fence handlers are now
 * inlined up to the entry/exit limit (within a per-module budget) and the
 * others called by every lane. GX_PTX_F_MEM_SMALL_INLINE (GX_PTX_MEM_INLINE=0)
 * inlines only up to the old 160 instructions; GX_PTX_F_MEM_LEADER_CALL
 * (GX_PTX_MEM_CALL_ALL=0) has the leader alone make the call. */
#define GX_PTX_F_MEM_SMALL_INLINE 4096u
#define GX_PTX_F_MEM_LEADER_CALL  8192u

/* A sampling binding's gate (site_sample.c) is by default a countdown,
 * before the election: each function draws a geometric gap of mean N into
 * a register at its start; every memory site decrements it and votes on
 * zero (five instructions and one uniform branch: no hash, no election, no
 * divergence when not sampled); a sampled access draws the next gap, and
 * its handler is called by every lane (not inlined: the sampled path stays
 * out of the kernel's registers). GPU run 101 (H100, 1 in 1024): vadd
 * 1.05x, reduce 1.13x, gemm and stencil 1.39x, against 4.9x, 4.0x, 2.0x and
 * 5.4x with the leader's hash and the handler inlined. A/Bs:
 * GX_PTX_F_SAMPLE_LEADER (GX_PTX_SAMPLE_LEADER=1): the leader's hash after
 * the election (sessions 25-26); GX_PTX_F_SAMPLE_INLINE
 * (GX_PTX_SAMPLE_INLINE=1): a large sampled handler inlined. */
#define GX_PTX_F_SAMPLE_LEADER 16384u
#define GX_PTX_F_SAMPLE_INLINE 32768u

/* The switches the callers (shim, CLI) take from the environment:
 * GX_PTX_RECONVERGE=0, GX_PTX_ENTRY_TOP=1 (any value but "" and "0"),
 * GX_PTX_BLOCK_SITE=entry|exit|barrier, GX_PTX_MEM_CAP=0|+8, GX_PTX_REG_CAP=0 and
 * GX_PTX_HOIST_WARP=1, GX_PTX_BLOCK_T0=1, GX_PTX_SAMPLE_EARLY=1, GX_PTX_MEM_INLINE=0,
 * GX_PTX_MEM_CALL_ALL=0, GX_PTX_SAMPLE_LEADER=1, GX_PTX_SAMPLE_INLINE=1, GX_PTX_MEM_DEFER=1. */
static inline unsigned gx_ptx_flags_from_env(void)
{
	const char *rc = getenv("GX_PTX_RECONVERGE"), *top = getenv("GX_PTX_ENTRY_TOP");
	const char *bs = getenv("GX_PTX_BLOCK_SITE"), *mc = getenv("GX_PTX_MEM_CAP"), *hc = getenv("GX_PTX_REG_CAP");
	const char *hw = getenv("GX_PTX_HOIST_WARP"), *se = getenv("GX_PTX_SAMPLE_EARLY");
	const char *mi = getenv("GX_PTX_MEM_INLINE"), *ma = getenv("GX_PTX_MEM_CALL_ALL");
	const char *sl = getenv("GX_PTX_SAMPLE_LEADER"), *si = getenv("GX_PTX_SAMPLE_INLINE");
	const char *t0 = getenv("GX_PTX_BLOCK_T0"), *md = getenv("GX_PTX_MEM_DEFER");
	return (rc && rc[0] == '0' ? GX_PTX_F_NO_RECONVERGE : 0) | (mc && mc[0] == '0' ? GX_PTX_F_NO_MEM_CAP : 0) |
	       (mc && !strcmp(mc, "+8") ? GX_PTX_F_MEM_CAP_SLACK : 0) | (hc && hc[0] == '0' ? 0 : GX_PTX_F_HOOK_CAP) |
	       (hw && hw[0] == '1' ? GX_PTX_F_HOIST_WARP : 0) | (t0 && t0[0] == '1' ? GX_PTX_F_BLOCK_T0 : 0) |
	       (se && se[0] == '1' ? GX_PTX_F_SAMPLE_EARLY : 0) | (mi && mi[0] == '0' ? GX_PTX_F_MEM_SMALL_INLINE : 0) |
	       (ma && ma[0] == '0' ? GX_PTX_F_MEM_LEADER_CALL : 0) | (sl && sl[0] == '1' ? GX_PTX_F_SAMPLE_LEADER : 0) |
	       (si && si[0] == '1' ? GX_PTX_F_SAMPLE_INLINE : 0) | (md && md[0] == '1' ? GX_PTX_F_MEM_DEFER : 0) |
	       (top && *top && strcmp(top, "0") ? GX_PTX_F_ENTRY_TOP : 0) |
	       (bs && !strcmp(bs, "entry") ? GX_PTX_F_BLOCK_ENTRY : 0) |
	       (bs && !strcmp(bs, "exit") ? GX_PTX_F_BLOCK_EXIT : 0) |
	       (bs && !strcmp(bs, "barrier") ? GX_PTX_F_BLOCK_BARRIER : 0);
}

/* opts.mem_sample as the callers (shim, CLI) take it from the environment:
 * GPUEXT_MEM_SAMPLE=N (`gpuext-run --sample N`); 0 when unset or invalid. */
static inline unsigned gx_ptx_mem_sample_from_env(void)
{
	const char *e = getenv("GPUEXT_MEM_SAMPLE");
	char *end;
	unsigned long v = e && *e ? strtoul(e, &end, 0) : 0;
	return v && !*end && v <= 0x7fffffffu ? (unsigned)v : 0;
}

/* Does a rewrite with these options put memory sites in kernels, which are
 * then capped at the originals' registers (persist_regs, which the shim
 * measures; GX_PTX_F_NO_MEM_CAP: no cap)? */
static inline int gx_ptx_opts_mem_cap(const struct gx_ptx_rewrite_opts *o)
{
	return (o->hooks & GDEV_HOOK_MEM) && !(o->flags & GX_PTX_F_NO_MEM_CAP);
}

/* Is a kernel with a site of `hook` capped: memory sites by the rule
 * above (GX_PTX_MEM_CAP=0: not), the others with GX_PTX_F_HOOK_CAP
 * (GX_PTX_REG_CAP=0: not)? With hook 0: may any kernel be, so that the
 * caller measures the originals. */
static inline int gx_ptx_opts_reg_cap(const struct gx_ptx_rewrite_opts *o, unsigned hook)
{
	int other = o->hooks && (o->flags & GX_PTX_F_HOOK_CAP);
	if (!hook)
		return gx_ptx_opts_mem_cap(o) || other;
	return hook & GDEV_HOOK_MEM ? gx_ptx_opts_mem_cap(o) : other;
}

/* Built-in handlers for hooks without a policy (measurements and tests). */
enum gx_ptx_stubs {
	GX_PTX_STUBS_ELIDE = 0,	 /* empty: compiled away, no code at the sites */
	GX_PTX_STUBS_CALL,	 /* leader election and a call of an empty .func (no context) */
	GX_PTX_STUBS_PROBE,	 /* a handler reading every context field, inlined (context
				 * in registers); it stores only when the fields hash to a
				 * constant, so it cannot be compiled away */
	GX_PTX_STUBS_PROBE_CALL, /* the same handler called, context in per-thread .local */
};

/* opts.persistent = GX_PTX_PERSISTENT_COPY: each accepted kernel K stays as it
 * is and a transformed copy `<prefix>_pw_K` (prefix "__gx" unless the input
 * uses such names) is added, so a launcher can run either. res->log then has
 * one line per copy (stable wording, parsed by blocksched):
 *   persistent: K: copy COPY transformed (work descriptor: parameter N __gx_work, loop barrier B, unit barrier yes|no)
 * N: the copy's parameter count (the descriptor, by value, is the last);
 * unit barrier: whether the loop waits for the whole block between units
 * (kernels with shared memory or barriers) or only between claims. */
#define GX_PTX_PERSISTENT_COPY 2

struct gx_ptx_rewrite_result {
	char *ptx; /* malloc'd, NUL-terminated; free with gx_ptx_rewrite_result_free */
	size_t len;
	unsigned nr_kernels;	/* .entry count */
	unsigned nr_hooks;	/* hook call sites inserted */
	unsigned nr_persistent; /* kernels given the persistent-worker transform */
	char *log;		/* malloc'd notes (refused transforms and why), may be NULL */
	char err[256];		/* on failure: "line:col: reason" or another stable message */
};

/* Rewrite `ptx` (need not be NUL-terminated). Returns 0 or -errno. */
int gx_ptx_rewrite(const char *ptx, size_t len, const struct gx_ptx_rewrite_opts *opts,
		   struct gx_ptx_rewrite_result *res);
void gx_ptx_rewrite_result_free(struct gx_ptx_rewrite_result *res);

/* ---- parse, emit and inspect without rewriting (module.c) ----
 * For `gpuext ptx check` and benchmarks; the IR stays internal. */
struct gx_ptx_module;
/* Parse; NULL with "line:col: reason" in err (errno EINVAL or ENOMEM). */
struct gx_ptx_module *gx_ptx_module__parse(const char *ptx, size_t len, char *err, size_t errlen);
/* The module as text (malloc'd, NUL-terminated). 0 or -ENOMEM. */
int gx_ptx_module__emit(const struct gx_ptx_module *m, char **out, size_t *len);
struct gx_ptx_stats {
	unsigned kernels; /* .entry with a body */
	unsigned funcs;	  /* .func with a body */
	unsigned insns;
	unsigned memops; /* ld, st, atom, red */
	unsigned vars;	 /* module-scope state a host or another launch sees:
			    * .global/.const variables, texture, surface and
			    * sampler references (not .shared/.local) */
};
void gx_ptx_module__stats(const struct gx_ptx_module *m, struct gx_ptx_stats *st);
/* Module variables a second copy of the module (gpuext attach) could not
 * keep equal to the original's as far as its kernels go: `.global` ones
 * used other than as a load's address, managed, extern, texture, surface
 * and sampler references (copy_state.c says why). 0: only read-only
 * state, which the copy shares as long as the host never writes it. The
 * first such variable's name into name (n bytes; name may be NULL). */
unsigned gx_ptx_module__copy_unsafe(const struct gx_ptx_module *m, char *name, size_t n);
void gx_ptx_module__free(struct gx_ptx_module *m);

/* "entry", "exit", "mem", ... for one enum gdev_hook bit; NULL if unknown. */
const char *gx_ptx_hook_name(unsigned hook);

#endif
