/* hook_overhead — on a GPU: the runtime cost of the ptx-rewrite passes and
 * their JIT time, and a correctness check of every pass.
 *
 * Loads the PTX of bench/hook_kernels.cu (built by nvcc), rewrites it with
 * gx_ptx_rewrite() for each pass (entry+exit / mem / all hooks with the
 * built-in handlers: empty and elided, empty and called, a probe reading the
 * whole context inlined or called; an empty eBPF program through the user's
 * path (TOOLDIR/policy_empty_probe.ptx); a small policy reading two fields;
 * persistent workers), JIT-loads each version with the real driver, runs
 * every kernel (>= 1 ms each), compares the outputs bit for bit with the
 * original's, and prints the median time of REPEATS runs, the ratio to the
 * original, registers and local bytes per thread of the JIT'd kernel, JIT
 * and rewrite times. Then the divergence checks (divergence_check()).
 * No shim involved: the rewrite library is called directly, so the figures
 * are the instrumentation's own cost. With TOOLDIR (tool_launchlate.ptx,
 * tool_threadhist.ptx: the tools' handlers JIT'd by the build), rows for
 * those tools at kernel entry, with a device runtime block made here: a
 * tool's cost without the shim (hook_kernels' reduce is a one-wave
 * grid-stride kernel like tool_bench's).
 *
 *   hook_overhead KERNELS.ptx [REPEATS [TOOLDIR]]   (CUDA_CACHE_DISABLE=1 advised)
 *   GX_HO_VARIANTS=DIR [GX_HO_VARIANTS_ONLY=1] hook_overhead ...: also a row per
 *     DIR/NAME.ptx (KERNELS.ptx rewritten and edited by hand: the A/B of a
 *     code-generation idea before the rewriter makes it; NAME starting with a
 *     tool's name gets its runtime block in __gx_devrt); _ONLY: the original and
 *     the variants only (bench/results/2026-12-02-gpu-run10.md) 
 *   GX_HO_ROWS=regex hook_overhead ...: only the rows whose name matches
 *     (and the original): e.g. 'persist' for the persistent transform's A/B
 *   hook_overhead --regs KERNELS.ptx POLICY.ptx HOOK:FUNC [BLOCK]   (regs_mode; HOOK: entry, exit, mem, block)
 * Prints `ok - `/`not ok - ` lines and `| ` table rows. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <dirent.h>
#include <regex.h>

#include "common/gx_cu_check.h"
#include "common/gx_util.h"
#include "ptx-rewrite/gx_ptx.h"
#include "blocksched/gx_blocksched.h"
#include "gpuext/gx_work.h"
#include "gpuext/gx_devrt.h"

#define CK(x) GX_CU_TAP("hook_overhead", x)

/* Device 0 with its primary context current. */
static CUdevice primary_ctx(void)
{
	return gx_cu_primary_ctx("hook_overhead");
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_f(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return x < y ? -1 : x > y;
}

struct pass {
	const char *name;
	unsigned hooks;
	int persistent; /* 0 no, 1 static, 2 claim (8 claims per worker, always steal) */
	int ctx_policy; /* bind ctx_policy_ptx (reads the context) instead of the stubs */
	unsigned stubs; /* enum gx_ptx_stubs without a policy */
	int top;        /* GX_PTX_F_ENTRY_TOP: entry site before the kernel's first
			 * statement (the A/B of the entry site's placement) */
	const char *tool; /* a tool's JIT'd handler (TOOLDIR/tool_NAME.ptx) at entry,
			   * with a device runtime block made here (tool_devrt) */
	const char *policy; /* a policy JIT'd by the build (TOOLDIR/policy_NAME.ptx),
			     * each hook of `hooks` bound to gxp_NAME_HOOK */
	enum { FIG_NONE, FIG_REPORT, FIG_GOAL } fig; /* FIG_REPORT: the overhead is
			 * printed as a figure; FIG_GOAL: an empty probe, held to
			 * the <= 2 % goal (DESIGN.md) */
	unsigned pflags;    /* persistent rows: GX_PTX_F_PERSIST_STATIC / _UNIT_BARRIER */
	unsigned chunk;     /* persistent claim rows: units per claim (0: 8 claims per worker) */
};

/* A policy that reads two context fields and has an effect (a per-SM count
 * of hook calls, one relaxed atomic per warp), as a small real probe would:
 * measures the context and the handler as policies see them. With the
 * inliner (ptx-rewrite/inline.c) the fields come from registers. Each (hook, SM)
 * counter has its own 128-byte line, as per-CPU counters do: packed 4 bytes
 * apart (run 6), the 16M reds of a 1M-block vadd queued on ~10 L2 lines and
 * the row measured that queue (4.2x), not the hook. */
static const char ctx_policy_ptx[] =
	".version 7.0\n.target sm_70\n.address_size 64\n"
	".visible .global .align 128 .u32 gx_bench_count[32768];\n"
	".visible .func (.param .b32 r) gx_bench_ctx(.param .b64 ctx)\n{\n"
	"\t.reg .b64 %rd<4>;\n\t.reg .b32 %r<4>;\n"
	"\tld.param.b64 %rd1, [ctx];\n\tld.u32 %r1, [%rd1+44];\n\tld.u32 %r2, [%rd1+96];\n"
	"\tand.b32 %r2, %r2, 255;\n\tshl.b32 %r3, %r2, 7;\n\tand.b32 %r1, %r1, 3;\n"
	"\tshl.b32 %r1, %r1, 15;\n\tadd.u32 %r3, %r3, %r1;\n"
	"\tcvt.u64.u32 %rd2, %r3;\n\tmov.u64 %rd3, gx_bench_count;\n\tadd.u64 %rd3, %rd3, %rd2;\n"
	"\tred.global.add.u32 [%rd3], 1;\n"
	"\tmov.b32 %r3, 0;\n\tst.param.b32 [r], %r3;\n\tret;\n}\n";
static const struct gx_hook_binding ctx_bindings[] = {
	{GDEV_HOOK_ENTRY, NULL, "gx_bench_ctx"},
	{GDEV_HOOK_EXIT, NULL, "gx_bench_ctx"},
};

static CUdeviceptr dalloc(size_t bytes)
{
	CUdeviceptr p;
	CK(cuMemAlloc(&p, bytes));
	return p;
}

/* Divergence check: a memory-hook handler that passes the context to a
 * helper (so it is called, with the context in memory, not inlined), one
 * that reads it directly (inlined, context in registers) and the same padded
 * past the inlining limit (called with the words as parameters). Each checks that
 * the context is its own lane group's: the leader lane reading it is the
 * leader_lane it names, before and after a sleep that lets the warp's other
 * group run (and, with a per-warp context slot, overwrite it), and that lane
 * is in active_mask. The counters are the policy's globals, renamed by the
 * link pass to __gx_p_NAME (the module has no __gx names). */
#define DIV_PAD1 "\tadd.u32 %r6, %r6, 1;\n"
#define DIV_PAD                                                                           \
	DIV_PAD1 DIV_PAD1 DIV_PAD1 DIV_PAD1 DIV_PAD1 DIV_PAD1 DIV_PAD1 DIV_PAD1 DIV_PAD1 \
		DIV_PAD1 DIV_PAD1 DIV_PAD1 DIV_PAD1 DIV_PAD1 DIV_PAD1 DIV_PAD1 DIV_PAD1 \
			DIV_PAD1 DIV_PAD1 DIV_PAD1
static const char div_policy_ptx[] =
	".version 7.0\n.target sm_70\n.address_size 64\n"
	".visible .global .align 4 .u32 gx_div_bad;\n"
	".visible .global .align 4 .u32 gx_div_calls;\n"
	".func gx_div_check(.param .b64 c)\n{\n"
	"\t.reg .b64 %rd<2>;\n\t.reg .b32 %r<6>;\n\t.reg .pred %p<2>;\n"
	"\tld.param.b64 %rd1, [c];\n\tmov.u32 %r1, %laneid;\n\tld.u32 %r2, [%rd1+104];\n"
	"\tnanosleep.u32 2000;\n\tld.u32 %r3, [%rd1+104];\n\tld.u32 %r4, [%rd1+36];\n"
	"\tsetp.ne.u32 %p1, %r2, %r1;\n\tsetp.ne.or.u32 %p1, %r3, %r1, %p1;\n"
	"\tshr.b32 %r5, %r4, %r1;\n\tand.b32 %r5, %r5, 1;\n\tsetp.eq.or.u32 %p1, %r5, 0, %p1;\n"
	"\tred.global.add.u32 [gx_div_calls], 1;\n\t@%p1 red.global.add.u32 [gx_div_bad], 1;\n"
	"\tret;\n}\n"
	".visible .func (.param .b32 r) gx_div(.param .b64 ctx)\n{\n"
	"\t.reg .b64 %rd<2>;\n\t.reg .b32 %r<2>;\n\tld.param.b64 %rd1, [ctx];\n"
	"\t{\n\t.param .b64 a0;\n\tst.param.b64 [a0], %rd1;\n\tcall gx_div_check, (a0);\n\t}\n"
	"\tmov.b32 %r1, 0;\n\tst.param.b32 [r], %r1;\n\tret;\n}\n"
	".visible .func (.param .b32 r) gx_div_inl(.param .b64 ctx)\n{\n"
	"\t.reg .b64 %rd<2>;\n\t.reg .b32 %r<6>;\n\t.reg .pred %p<2>;\n"
	"\tld.param.b64 %rd1, [ctx];\n\tmov.u32 %r1, %laneid;\n\tld.u32 %r2, [%rd1+104];\n"
	"\tnanosleep.u32 2000;\n\tld.u32 %r4, [%rd1+36];\n"
	"\tsetp.ne.u32 %p1, %r2, %r1;\n"
	"\tshr.b32 %r5, %r4, %r1;\n\tand.b32 %r5, %r5, 1;\n\tsetp.eq.or.u32 %p1, %r5, 0, %p1;\n"
	"\tred.global.add.u32 [gx_div_calls], 1;\n\t@%p1 red.global.add.u32 [gx_div_bad], 1;\n"
	"\tmov.b32 %r1, 0;\n\tst.param.b32 [r], %r1;\n\tret;\n}\n"
	/* gx_div_inl padded past the mem hooks' inlining limit (160): called
	 * through its clone taking the context words as parameters */
	".visible .func (.param .b32 r) gx_div_big(.param .b64 ctx)\n{\n"
	"\t.reg .b64 %rd<2>;\n\t.reg .b32 %r<7>;\n\t.reg .pred %p<2>;\n"
	"\tld.param.b64 %rd1, [ctx];\n\tmov.u32 %r1, %laneid;\n\tld.u32 %r2, [%rd1+104];\n"
	"\tnanosleep.u32 2000;\n\tld.u32 %r4, [%rd1+36];\n\tmov.u32 %r6, 0;\n"
	DIV_PAD DIV_PAD DIV_PAD DIV_PAD DIV_PAD DIV_PAD DIV_PAD DIV_PAD DIV_PAD
	"\tsetp.ne.u32 %p1, %r2, %r1;\n"
	"\tshr.b32 %r5, %r4, %r1;\n\tand.b32 %r5, %r5, 1;\n\tsetp.eq.or.u32 %p1, %r5, 0, %p1;\n"
	"\tred.global.add.u32 [gx_div_calls], 1;\n\t@%p1 red.global.add.u32 [gx_div_bad], 1;\n"
	"\tmov.b32 %r1, 0;\n\tst.param.b32 [r], %r1;\n\tret;\n}\n";

/* Run `diverge` with its memory hooks bound to `func`; prints ok/not ok. */
static void divergence_check(const char *ptx, size_t len, const char *func, const char *what)
{
	struct gx_hook_binding b = {GDEV_HOOK_MEM, "diverge", func};
	struct gx_ptx_rewrite_opts o = {.sz = sizeof(o), .hooks = GDEV_HOOK_MEM,
					.policy_ptx = div_policy_ptx,
					.policy_len = sizeof(div_policy_ptx) - 1, .bindings = &b,
					.nr_bindings = 1};
	struct gx_ptx_rewrite_result res;
	if (gx_ptx_rewrite(ptx, len, &o, &res)) {
		printf("not ok - hook_overhead divergence %s: rewrite: %s\n", what, res.err);
		return;
	}
	if (res.log)
		printf("# %s", res.log);
	CUmodule mod;
	CUresult cr = cuModuleLoadDataEx(&mod, res.ptx, 0, NULL, NULL);
	gx_ptx_rewrite_result_free(&res);
	if (cr != CUDA_SUCCESS) {
		printf("not ok - hook_overhead divergence %s: JIT failed (%d)\n", what, (int)cr);
		return;
	}
	CUfunction f;
	CUdeviceptr bad, calls, out;
	size_t sz;
	CK(cuModuleGetFunction(&f, mod, "diverge"));
	CK(cuModuleGetGlobal(&bad, &sz, mod, "__gx_p_gx_div_bad"));
	CK(cuModuleGetGlobal(&calls, &sz, mod, "__gx_p_gx_div_calls"));
	CK(cuMemsetD32(bad, 0, 1));
	CK(cuMemsetD32(calls, 0, 1));
	unsigned nthr = 64 * 256;
	out = dalloc(nthr * 4);
	int iters = 16;
	void *args[] = {&out, &iters};
	CK(cuLaunchKernel(f, 64, 1, 1, 256, 1, 1, 0, 0, args, NULL));
	CK(cuCtxSynchronize());
	unsigned nb = 0, nc = 0;
	CK(cuMemcpyDtoH(&nb, bad, 4));
	CK(cuMemcpyDtoH(&nc, calls, 4));
	/* every store is hooked: per warp at least 2 groups x 16 iterations */
	printf("%s - hook_overhead divergence %s: %u handler calls, %u saw another group's "
	       "context\n",
	       nb == 0 && nc >= 64 * 8 * 32 ? "ok" : "not ok", what, nc, nb);
	CK(cuMemFree(out));
	CK(cuModuleUnload(mod));
}

#define EE (GDEV_HOOK_ENTRY | GDEV_HOOK_EXIT)
#define ALL (GDEV_HOOK_ENTRY | GDEV_HOOK_EXIT | GDEV_HOOK_MEM | GDEV_HOOK_FENCE)
/* Rows: "stubs" are built-in handlers (GX_PTX_STUBS_*): elided (empty, the
 * default), call (election + call of an empty .func), probe (reads every
 * context field, inlined: context in registers), probe-call (the same called,
 * through its clone taking the words as parameters). "(top)": the entry site
 * before the kernel's first statement (GX_PTX_F_ENTRY_TOP). */
static const struct pass passes[] = {
	{"orig", 0, 0, 0, 0, 0, NULL, NULL, FIG_NONE, 0, 0},
	{"entry+exit", EE, 0, 0, GX_PTX_STUBS_ELIDE, 0, NULL, NULL, FIG_GOAL, 0, 0},
	{"entry+exit empty eBPF", EE, 0, 0, 0, 0, NULL, "empty_probe", FIG_GOAL, 0, 0},
	{"entry+exit call", EE, 0, 0, GX_PTX_STUBS_CALL, 0, NULL, NULL, FIG_REPORT, 0, 0},
	{"entry+exit probe", EE, 0, 0, GX_PTX_STUBS_PROBE, 0, NULL, NULL, FIG_NONE, 0, 0},
	{"entry+exit probe (top)", EE, 0, 0, GX_PTX_STUBS_PROBE, 1, NULL, NULL, FIG_NONE, 0, 0},
	{"entry+exit probe-call", EE, 0, 0, GX_PTX_STUBS_PROBE_CALL, 0, NULL, NULL, FIG_NONE, 0, 0},
	{"entry+exit+ctx", EE, 0, 1, 0, 0, NULL, NULL, FIG_REPORT, 0, 0},
	{"entry+exit+ctx (top)", EE, 0, 1, 0, 1, NULL, NULL, FIG_REPORT, 0, 0},
	{"mem call", GDEV_HOOK_MEM, 0, 0, GX_PTX_STUBS_CALL, 0, NULL, NULL, FIG_NONE, 0, 0},
	{"mem probe", GDEV_HOOK_MEM, 0, 0, GX_PTX_STUBS_PROBE, 0, NULL, NULL, FIG_NONE, 0, 0},
	{"all call", ALL, 0, 0, GX_PTX_STUBS_CALL, 0, NULL, NULL, FIG_NONE, 0, 0},
	{"all probe", ALL, 0, 0, GX_PTX_STUBS_PROBE, 0, NULL, NULL, FIG_NONE, 0, 0},
	/* The persistent transform's own cost, A/B (docs/blocksched.md): the
	 * static loop alone (static only), the same in the full copy (the claim
	 * path present but not run), with the unit barrier forced as the first
	 * transform had it; claims of 8 per worker vs one unit per claim. */
	{"persist-static only", 0, 1, 0, 0, 0, NULL, NULL, FIG_REPORT, GX_PTX_F_PERSIST_STATIC, 0},
	{"persist-static", 0, 1, 0, 0, 0, NULL, NULL, FIG_REPORT, 0, 0},
	{"persist-static unit barrier", 0, 1, 0, 0, 0, NULL, NULL, FIG_REPORT, GX_PTX_F_PERSIST_STATIC | GX_PTX_F_UNIT_BARRIER, 0},
	{"persist-claim", 0, 2, 0, 0, 0, NULL, NULL, FIG_REPORT, 0, 0},
	{"persist-claim 1 unit", 0, 2, 0, 0, 0, NULL, NULL, FIG_REPORT, 0, 1},
	{"persist+entry/exit probe", EE, 2, 0, GX_PTX_STUBS_PROBE, 0, NULL, NULL, FIG_NONE, 0, 0},
	{"tool launchlate", GDEV_HOOK_ENTRY, 0, 0, 0, 0, "launchlate", NULL, FIG_REPORT, 0, 0},
	{"tool threadhist", GDEV_HOOK_ENTRY, 0, 0, 0, 0, "threadhist", NULL, FIG_REPORT, 0, 0},
};
#define NPASS (sizeof(passes) / sizeof(passes[0]))

/* Problem sizes. */
#define VADD_N (256ull << 20)
#define GEMM_N 2048
#define ST_W 16384
#define ST_H 16384
#define RED_N (1024ull << 20)

struct kern {
	const char *name;
	unsigned grid[3], block[3];
	void *args[6];
	CUdeviceptr out;
	size_t out_bytes;
	int zero_out; /* output accumulates: clear before each run */
};

/* The device runtime block a tool's handler finds in __gx_devrt, as the
 * shim would make it (devbpf/gx_devrt.h), with the tool's one map at index
 * 0: launchlate's ring (1 MiB, never drained here: one record per launch)
 * or threadhist's per-warp-slot array. 0 if the tool is unknown. */
static int tool_devrt(const char *tool, int nsm, struct gx_devrt *out)
{
	struct gx_devrt rt = {.magic = GX_DEVRT_MAGIC, .version = GX_DEVRT_VERSION, .nr_maps = 1};
	struct gx_devrt_map *mp = &rt.maps[0];
	if (!strcmp(tool, "launchlate")) {
		size_t data = 1u << 20, bytes = sizeof(struct gx_ring) + data;
		CUdeviceptr ring = dalloc(bytes);
		CK(cuMemsetD8(ring, 0, bytes));
		struct gx_ring h = {.size = data};
		CK(cuMemcpyHtoD(ring, &h, sizeof(h)));
		*mp = (struct gx_devrt_map){.type = GX_MAP_RINGBUF, .max_entries = (gdev_u32)data,
					    .nr_shards = 1, .data = ring, .data_size = bytes};
	} else if (!strcmp(tool, "threadhist")) {
		size_t shards = (size_t)nsm * GX_WARP_SLOTS_PER_SM, bytes = shards * 24;
		CUdeviceptr d = dalloc(bytes);
		CK(cuMemsetD8(d, 0, bytes));
		*mp = (struct gx_devrt_map){.type = GX_MAP_PERWARP_ARRAY, .key_size = 4,
					    .value_size = 24, .max_entries = 1, .value_stride = 24,
					    .nr_shards = (gdev_u32)shards, .data = d, .data_size = bytes};
	} else {
		return 0;
	}
	*out = rt;
	return 1;
}

/* `--regs KERNELS.ptx POLICY.ptx HOOK:FUNC [BLOCK]`: no timing, the
 * registers, local bytes and resident blocks per SM (at BLOCK threads, 256
 * by default) of every kernel of KERNELS.ptx as the driver JIT makes them,
 * original and with POLICY's FUNC bound to HOOK (entry|exit|mem) — whether a
 * tool's handler costs a kernel occupancy. Without a device runtime block
 * the instrumented kernels are not run. */
static int regs_mode(int argc, char **argv)
{
	if (argc < 5)
		return 2;
	const char *hk = argv[4], *fn = strchr(hk, ':');
	int bs = argc > 5 ? atoi(argv[5]) : 256;
	unsigned hook = !fn                     ? 0
			: !strncmp(hk, "entry:", 6) ? GDEV_HOOK_ENTRY
			: !strncmp(hk, "exit:", 5)  ? GDEV_HOOK_EXIT
			: !strncmp(hk, "mem:", 4)   ? GDEV_HOOK_MEM
			: !strncmp(hk, "block:", 6) ? GDEV_HOOK_BLOCK
						    : 0;
	char *ptx, *pol;
	size_t ptx_len, pol_len;
	if (!hook || bs <= 0 || gx_read_file(argv[2], &ptx, &ptx_len, 0) ||
	    gx_read_file(argv[3], &pol, &pol_len, 0)) {
		printf("not ok - hook_overhead --regs: bad arguments or unreadable files\n");
		return 1;
	}
	struct gx_hook_binding b = {hook, NULL, fn + 1};
	primary_ctx();
	CUmodule mod[2];
	if (cuModuleLoadData(&mod[0], ptx) != CUDA_SUCCESS) {
		printf("not ok - hook_overhead --regs %s: original module not loaded\n", argv[3]);
		return 1;
	}
	/* as the shim rewrites: the originals' registers given (shim/kregs.c
	 * measures them the same way), the A/B switches from the environment
	 * (the register cap of hooked kernels by default, GX_PTX_REG_CAP=0
	 * without): run 105 measured the rewrite without either and reported
	 * launchlate's 38 registers, which no user's kernel gets */
	size_t nn = 0, nk = 0;
	for (const char *e = strstr(ptx, ".entry "); e; e = strstr(e + 7, ".entry "))
		nn++;
	char(*names)[256] = calloc(nn ? nn : 1, sizeof(*names));
	struct gx_ptx_kregs *kr = calloc(nn ? nn : 1, sizeof(*kr));
	if (!names || !kr) {
		printf("not ok - hook_overhead --regs %s: out of memory\n", argv[3]);
		return 1;
	}
	/* kernel names: the .entry lines of the original */
	nn = 0;
	for (const char *e = strstr(ptx, ".entry "); e; e = strstr(e + 7, ".entry ")) {
		size_t n = strcspn(e + 7, "( \t\n");
		CUfunction f;
		int r = 0;
		if (!n || n >= sizeof(names[0]))
			continue;
		memcpy(names[nn], e + 7, n);
		names[nn][n] = 0;
		if (cuModuleGetFunction(&f, mod[0], names[nn]) == CUDA_SUCCESS &&
		    cuFuncGetAttribute(&r, CU_FUNC_ATTRIBUTE_NUM_REGS, f) == CUDA_SUCCESS && r > 0)
			kr[nk++] = (struct gx_ptx_kregs){names[nn], (unsigned)r};
		nn++;
	}
	struct gx_ptx_rewrite_opts o = {.sz = sizeof(o), .hooks = hook, .policy_ptx = pol,
					.policy_len = pol_len, .bindings = &b, .nr_bindings = 1,
					.persist_regs = kr, .nr_persist_regs = nk, .flags = gx_ptx_flags_from_env()};
	struct gx_ptx_rewrite_result res;
	if (gx_ptx_rewrite(ptx, ptx_len, &o, &res)) {
		printf("not ok - hook_overhead --regs %s: rewrite: %s\n", argv[3], res.err);
		return 1;
	}
	if (cuModuleLoadData(&mod[1], res.ptx) != CUDA_SUCCESS) {
		printf("not ok - hook_overhead --regs %s: instrumented module not loaded\n", argv[3]);
		return 1;
	}
	for (size_t k = 0; k < nn; k++) {
		const char *name = names[k];
		int rg[2], lm[2], oc[2];
		for (int v = 0; v < 2; v++) {
			CUfunction f;
			CK(cuModuleGetFunction(&f, mod[v], name));
			CK(cuFuncGetAttribute(&rg[v], CU_FUNC_ATTRIBUTE_NUM_REGS, f));
			CK(cuFuncGetAttribute(&lm[v], CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, f));
			CK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&oc[v], f, bs, 0));
		}
		printf("| %s | %s | %d -> %d | %d -> %d | %d -> %d |\n", argv[3], name, rg[0], rg[1],
		       lm[0], lm[1], oc[0], oc[1]);
		printf("%s - hook_overhead --regs %s %s: resident blocks per SM at %d threads kept "
		       "(%d -> %d, %d -> %d registers)\n",
		       oc[1] >= oc[0] ? "ok" : "not ok", argv[3], name, bs, oc[0], oc[1], rg[0], rg[1]);
	}
	free(names);
	free(kr);
	gx_ptx_rewrite_result_free(&res);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--regs"))
		return regs_mode(argc, argv);
	if (argc < 2) {
		fprintf(stderr, "usage: %s KERNELS.ptx [REPEATS [TOOLDIR]]\n"
				"       %s --regs KERNELS.ptx POLICY.ptx HOOK:FUNC [BLOCK]\n",
			argv[0], argv[0]);
		return 2;
	}
	int repeats = argc > 2 ? atoi(argv[2]) : 21;
	const char *tooldir = argc > 3 ? argv[3] : NULL;
	char *ptx;
	size_t ptx_len;
	if (gx_read_file(argv[1], &ptx, &ptx_len, 0)) {
		printf("not ok - hook_overhead: cannot read %s\n", argv[1]);
		return 1;
	}
	CUdevice dev = primary_ctx();
	int nsm = 0;
	CK(cuDeviceGetAttribute(&nsm, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));

	/* Inputs (deterministic) and outputs. */
	CUdeviceptr va = dalloc(VADD_N * 4), vb = dalloc(VADD_N * 4), vc = dalloc(VADD_N * 4);
	CK(cuMemsetD32(va, 0x3f800000, VADD_N));
	CK(cuMemsetD32(vb, 0x40000000, VADD_N));
	CUdeviceptr ga = dalloc(GEMM_N * GEMM_N * 4), gb = dalloc(GEMM_N * GEMM_N * 4),
		    gc = dalloc(GEMM_N * GEMM_N * 4);
	{
		float *h = malloc(GEMM_N * GEMM_N * 4);
		for (size_t i = 0; i < (size_t)GEMM_N * GEMM_N; i++)
			h[i] = (float)((i * 2654435761u) % 1000) / 1000.f;
		CK(cuMemcpyHtoD(ga, h, GEMM_N * GEMM_N * 4));
		CK(cuMemcpyHtoD(gb, h, GEMM_N * GEMM_N * 4));
		free(h);
	}
	CUdeviceptr si = dalloc((size_t)ST_W * ST_H * 4), so = dalloc((size_t)ST_W * ST_H * 4);
	CK(cuMemsetD32(si, 0x3fc00000, (size_t)ST_W * ST_H));
	CK(cuMemsetD32(so, 0, (size_t)ST_W * ST_H));
	CUdeviceptr ri = dalloc(RED_N * 4), ro = dalloc(8);
	CK(cuMemsetD32(ri, 3, RED_N));
	unsigned long long vn = VADD_N, rn = RED_N;
	int gn = GEMM_N, sw = ST_W, sh = ST_H;

	struct kern ks[] = {
		{"vadd", {VADD_N / 256, 1, 1}, {256, 1, 1}, {&va, &vb, &vc, &vn}, vc, VADD_N * 4, 0},
		{"sgemm", {GEMM_N / 32, GEMM_N / 32, 1}, {32, 32, 1}, {&ga, &gb, &gc, &gn}, gc,
		 (size_t)GEMM_N * GEMM_N * 4, 0},
		{"stencil", {ST_W / 32, ST_H / 8, 1}, {32, 8, 1}, {&si, &so, &sw, &sh}, so,
		 (size_t)ST_W * ST_H * 4, 0},
		{"reduce", {(unsigned)(nsm * 8), 1, 1}, {256, 1, 1}, {&ri, &ro, &rn}, ro, 8, 1},
	};
	size_t nk = sizeof(ks) / sizeof(ks[0]);
	void *ref[8] = {0};
	float base_ms[8] = {0};
	/* The claim state: zeroed once, left clean by every launch. */
	size_t state_bytes = gx_work_state_bytes(1u << 20);
	CUdeviceptr state = dalloc(state_bytes);
	CK(cuMemsetD8(state, 0, state_bytes));
	CUevent e0, e1;
	CK(cuEventCreate(&e0, 0));
	CK(cuEventCreate(&e1, 0));
	printf("| pass | kernel | median ms | ratio | regs | local B | blocks/SM |\n"
	       "|---|---|---|---|---|---|---|\n");
	/* two rounds: the passes, then (after the divergence checks, so that a
	 * fault there cannot lose them) the tools' rows */
	/* GX_HO_VARIANTS=DIR: after the tools' rows, one row per DIR/NAME.ptx,
	 * a hand-made or pre-rewritten version of KERNELS.ptx loaded as is (the
	 * A/B of a code-generation idea before the rewriter makes it); a name
	 * starting with a tool's name gets that tool's device runtime block. */
	char **vars = NULL;
	size_t nvar = 0;
	const char *vdir = getenv("GX_HO_VARIANTS");
	if (vdir) {
		struct dirent **nl;
		int nd = scandir(vdir, &nl, NULL, alphasort);
		for (int i = 0; i < nd; i++) {
			size_t l = strlen(nl[i]->d_name);
			if (l > 4 && !strcmp(nl[i]->d_name + l - 4, ".ptx")) {
				vars = realloc(vars, (nvar + 1) * sizeof(*vars));
				vars[nvar++] = strdup(nl[i]->d_name);
			}
			free(nl[i]);
		}
		if (nd > 0)
			free(nl);
	}
	regex_t rows_rx, *rows_re = NULL;
	const char *rows = getenv("GX_HO_ROWS");
	if (rows && *rows && !regcomp(&rows_rx, rows, REG_EXTENDED | REG_NOSUB))
		rows_re = &rows_rx;
	for (size_t q = 0; q < 2 * NPASS + nvar; q++) {
		size_t p = q < 2 * NPASS ? q % NPASS : 0;
		const struct pass *ps = &passes[p];
		struct pass vp;
		const char *var = q >= 2 * NPASS ? vars[q - 2 * NPASS] : NULL;
		if (var) {
			vp = (struct pass){.name = var,
					   .tool = !strncmp(var, "threadhist", 10) ? "threadhist"
										   : "launchlate",
					   .fig = FIG_REPORT};
			ps = &vp;
			p = 1;
		}
		if (q == NPASS && !getenv("GX_HO_VARIANTS_ONLY") && !rows_re) {
			divergence_check(ptx, ptx_len, "gx_div", "called handler (context in .local)");
			divergence_check(ptx, ptx_len, "gx_div_inl",
					 "inlined handler (context in registers)");
			divergence_check(ptx, ptx_len, "gx_div_big",
					 "called handler (words as parameters)");
		}
		if (!var && (ps->tool != NULL) != (q >= NPASS))
			continue;
		if (!var && p != 0 && rows_re && regexec(rows_re, ps->name, 0, NULL, 0))
			continue;
		/* GX_HO_VARIANTS_ONLY=1: the original and the variants (a quick A/B) */
		if (!var && p != 0 && getenv("GX_HO_VARIANTS_ONLY"))
			continue;
		struct gx_ptx_rewrite_opts o = {.sz = sizeof(o), .hooks = ps->hooks,
						.persistent = ps->persistent != 0,
						.stubs = ps->stubs};
		o.persist_rt = gx_bs_rt_ptx(&o.persist_rt_len);
		if (ps->ctx_policy) {
			o.policy_ptx = ctx_policy_ptx;
			o.policy_len = sizeof(ctx_policy_ptx) - 1;
			o.bindings = ctx_bindings;
			o.nr_bindings = sizeof(ctx_bindings) / sizeof(ctx_bindings[0]);
		}
		/* a policy the build JIT'd: the empty probe (each hook of the row
		 * bound to gxp_NAME_HOOK, as the JIT names its programs) or a tool
		 * (its one entry program, gxp_NAME) */
		char *pol_ptx = NULL, pol_path[512], pol_func[4][64];
		struct gx_hook_binding pol_b[4];
		unsigned nb = 0;
		if (ps->policy) {
			snprintf(pol_path, sizeof(pol_path), "%s/policy_%s.ptx", tooldir ? tooldir : ".",
				 ps->policy);
			for (unsigned h = 1; h && nb < 4; h <<= 1)
				if ((ps->hooks & h) && gx_ptx_hook_name(h)) {
					snprintf(pol_func[nb], sizeof(pol_func[nb]), "gxp_%s_%s",
						 ps->policy, gx_ptx_hook_name(h));
					pol_b[nb] = (struct gx_hook_binding){h, NULL, pol_func[nb]};
					nb++;
				}
		} else if (ps->tool && !var) {
			snprintf(pol_path, sizeof(pol_path), "%s/tool_%s.ptx", tooldir ? tooldir : ".",
				 ps->tool);
			snprintf(pol_func[0], sizeof(pol_func[0]), "gxp_%s", ps->tool);
			pol_b[nb++] = (struct gx_hook_binding){GDEV_HOOK_ENTRY, NULL, pol_func[0]};
		}
		if (nb) {
			size_t pl;
			/* a missing tool skips its row; the empty probe is a goal row */
			if (!tooldir || gx_read_file(pol_path, &pol_ptx, &pl, 0)) {
				printf("%s hook_overhead %s: no %s (third argument: the folder)\n",
				       ps->policy ? "not ok -" : "#", ps->name, pol_path);
				continue;
			}
			o.policy_ptx = pol_ptx;
			o.policy_len = pl;
			o.bindings = pol_b;
			o.nr_bindings = nb;
		}
		struct gx_ptx_rewrite_result res;
		if (ps->top)
			o.flags |= GX_PTX_F_ENTRY_TOP;
		o.flags |= ps->pflags;
		double t0 = now_ms();
		int err = 0;
		if (var) {
			char vpath[1024];
			size_t vl;
			memset(&res, 0, sizeof(res));
			snprintf(vpath, sizeof(vpath), "%s/%s", vdir, var);
			err = gx_read_file(vpath, &res.ptx, &vl, 0);
			snprintf(res.err, sizeof(res.err), "cannot read %.200s", var);
		} else {
			err = gx_ptx_rewrite(ptx, ptx_len, &o, &res);
		}
		double t_rw = now_ms() - t0;
		free(pol_ptx);
		if (err) {
			printf("not ok - hook_overhead %s: rewrite: %s\n", ps->name, res.err);
			continue;
		}
		CUmodule mod;
		t0 = now_ms();
		CUresult cr = cuModuleLoadDataEx(&mod, res.ptx, 0, NULL, NULL);
		double t_jit = now_ms() - t0;
		if (cr != CUDA_SUCCESS) {
			const char *s = "?";
			cuGetErrorString(cr, &s);
			printf("not ok - hook_overhead %s: JIT: %s\n", ps->name, s);
			gx_ptx_rewrite_result_free(&res);
			continue;
		}
		printf("bench: %s: rewrite %.2f ms, JIT %.1f ms, %u hooks, %u persistent\n",
		       ps->name, t_rw, t_jit, res.nr_hooks, res.nr_persistent);
		if (ps->tool) {
			struct gx_devrt hrt;
			CUdeviceptr g;
			size_t gsz;
			/* a variant may have no hooks (the original, for the noise) */
			if (tool_devrt(ps->tool, nsm, &hrt) &&
			    cuModuleGetGlobal(&g, &gsz, mod, GDEV_DEVRT_SYMBOL) == CUDA_SUCCESS && gsz == sizeof(hrt))
				CK(cuMemcpyHtoD(g, &hrt, sizeof(hrt)));
		}
		for (size_t k = 0; k < nk; k++) {
			struct kern *kn = &ks[k];
			CUfunction f;
			CK(cuModuleGetFunction(&f, mod, kn->name));
			/* what the JIT made of it: registers (occupancy) and local memory */
			int nregs = 0, lmem = 0;
			CK(cuFuncGetAttribute(&nregs, CU_FUNC_ATTRIBUTE_NUM_REGS, f));
			CK(cuFuncGetAttribute(&lmem, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, f));
			int occb = 0; /* resident blocks per SM at this block size */
			CK(cuOccupancyMaxActiveBlocksPerMultiprocessor(
				&occb, f, kn->block[0] * kn->block[1] * kn->block[2], 0));
			void *args[8];
			int na = 0;
			while (na < 6 && kn->args[na]) {
				args[na] = kn->args[na];
				na++;
			}
			unsigned grid[3] = {kn->grid[0], kn->grid[1], kn->grid[2]};
			struct gx_work_desc wd = {0};
			if (ps->persistent) {
				int occ = 0;
				CK(cuOccupancyMaxActiveBlocksPerMultiprocessor(
					&occ, f, kn->block[0] * kn->block[1] * kn->block[2], 0));
				wd.total = grid[0] * grid[1] * grid[2];
				wd.grid_x = grid[0];
				wd.grid_y = grid[1];
				wd.grid_z = grid[2];
				wd.mode = ps->persistent == 1 ? GX_WORK_STATIC : GX_WORK_CLAIM;
				unsigned w = (unsigned)(nsm * (occ > 0 ? occ : 1));
				if (w > wd.total)
					w = wd.total;
				unsigned long long per = (unsigned long long)w * GX_BS_DEFAULT_CHUNKS;
				wd.chunk = ps->chunk ? ps->chunk : (unsigned)((wd.total + per - 1) / per);
				wd.state = ps->persistent == 2 ? state : 0;
				grid[0] = w;
				grid[1] = grid[2] = 1;
				args[na++] = &wd;
			}
			float *ms = calloc(repeats, sizeof(float));
			for (int r = -2; r < repeats; r++) {
				if (kn->zero_out)
					CK(cuMemsetD32(kn->out, 0, kn->out_bytes / 4));
				CK(cuEventRecord(e0, 0));
				CK(cuLaunchKernel(f, grid[0], grid[1], grid[2], kn->block[0], kn->block[1],
						  kn->block[2], 0, 0, args, NULL));
				CK(cuEventRecord(e1, 0));
				CK(cuEventSynchronize(e1));
				if (r >= 0)
					CK(cuEventElapsedTime(&ms[r], e0, e1));
			}
			qsort(ms, repeats, sizeof(float), cmp_f);
			float med = ms[repeats / 2];
			free(ms);
			void *h = malloc(kn->out_bytes);
			CK(cuMemcpyDtoH(h, kn->out, kn->out_bytes));
			/* clear the output so the next pass cannot inherit the answer */
			if (!kn->zero_out)
				CK(cuMemsetD32(kn->out, 0, kn->out_bytes / 4));
			if (p == 0) {
				ref[k] = h;
				base_ms[k] = med;
				printf("| %s | %s | %.3f | 1.000 | %d | %d | %d |\n", ps->name, kn->name, med,
				       nregs, lmem, occb);
				continue;
			}
			int same = !memcmp(h, ref[k], kn->out_bytes);
			free(h);
			printf("%s - hook_overhead %s %s: output identical to the original\n",
			       same ? "ok" : "not ok", ps->name, kn->name);
			printf("| %s | %s | %.3f | %.3f | %d | %d | %d |\n", ps->name, kn->name, med,
			       med / base_ms[k], nregs, lmem, occb);
			if (ps->fig == FIG_REPORT)
				printf("bench: hook_overhead %s %s %+.2f %%\n", ps->name, kn->name,
				       100.0 * (med / base_ms[k] - 1));
			if (ps->fig == FIG_GOAL)
				printf("%s - hook_overhead %s %s: overhead %.2f %% (goal <= 2 %%)\n",
				       med / base_ms[k] <= 1.02 ? "ok" : "not ok", ps->name, kn->name,
				       100.0 * (med / base_ms[k] - 1));
		}
		CK(cuModuleUnload(mod));
		gx_ptx_rewrite_result_free(&res);
	}
	for (size_t k = 0; k < nk; k++)
		free(ref[k]);
	free(ptx);
	return 0;
}
