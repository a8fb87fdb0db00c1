/* test_bs_launch.c — blocksched's launch side through the shim, against the
 * fake driver (tests/shim/fakecuda): run by tests/blocksched/test_bs_launch.sh
 * with GPUEXT_PERSISTENT=<claim|static> or GPUEXT_SCHED=<policy> and
 *   test_bs_launch MODE [LOG]     MODE: claim, static, sched, sched-static
 * Checks that a kernel the transform accepts is launched as its copy with
 * the descriptor appended by value (units, grid, mode, chunk; in claim mode
 * a per-stream state, zeroed on the launch's stream, reused by the next
 * launch on that stream, apart on other streams and per thread for the
 * per-thread stream), that the grid is occupancy x SMs capped at the
 * original block count, that launches the launcher cannot vouch for run the
 * original (claim mode in a captured stream or a graph node; static mode is
 * captured as the copy), that a copy losing occupancy is not used, and, with
 * a policy: kernels=GLOB selects kernels, a sampled launch's stats area
 * reaches the schedule log once its workers report (the fake runs nothing:
 * the test plays the workers). */
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuext/gx_stats.h"
#include "gpuext/gx_work.h"
#include "tests/gx_test.h"
#include "tests/shim/stderr_log.h"

/* k_ok reads %ctaid (accepted); k_other too, but the policy's glob may
 * leave it out; k_cluster uses cluster ids (refused). */
static const char PTX[] = ".version 8.0\n.target sm_80\n.address_size 64\n"
			  ".visible .entry k_ok(.param .u64 p, .param .u32 n)\n{\n"
			  "\t.reg .b32 %r<3>;\n\t.reg .b64 %rd<3>;\n"
			  "\tld.param.u64 %rd1, [p];\n\tmov.u32 %r1, %ctaid.x;\n"
			  "\tmul.wide.u32 %rd2, %r1, 4;\n\tadd.s64 %rd1, %rd1, %rd2;\n"
			  "\tst.global.u32 [%rd1], %r1;\n\tret;\n}\n"
			  ".visible .entry k_other(.param .u64 p)\n{\n"
			  "\t.reg .b32 %r<3>;\n\t.reg .b64 %rd<3>;\n"
			  "\tld.param.u64 %rd1, [p];\n\tmov.u32 %r1, %ctaid.x;\n"
			  "\tst.global.u32 [%rd1], %r1;\n\tret;\n}\n"
			  ".visible .entry k_cluster()\n{\n\t.reg .b32 %r<2>;\n"
			  "\tmov.u32 %r1, %clusterid.x;\n\tret;\n}\n";

/* The per-thread-stream form, declared by cuda.h only for the driver itself. */
CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
			     unsigned sh, CUstream s, void **p, void **e);

#include "tests/shim/fakecuda/fake_launch.h"
static struct fake_launch (*last)(void);
static long (*count)(const char *);
static void (*set_occ)(int), (*set_occ_copy)(int);
static void *(*memset_stream)(void);

/* The log's lines that mention s, as comments. */
static void log_print(const char *s)
{
	fflush(stderr);
	fseek(logf_, 0, SEEK_SET);
	char line[2048];
	while (fgets(line, sizeof(line), logf_))
		if (strstr(line, s))
			printf("# log: %s", line);
}

static int log_has(const char *s)
{
	return log_count(0, s) > 0;
}

/* The descriptor a launch of the copy got (NULL if the original ran). */
static const struct gx_work_desc *desc_of(const struct fake_launch *l, void *orig, unsigned nparams)
{
	if (l->func == orig || !l->params || !l->params[nparams - 1])
		return NULL;
	return (const struct gx_work_desc *)l->params[nparams - 1];
}

static int state_zero(uint64_t st)
{
	const unsigned char *p = (const unsigned char *)(uintptr_t)st;
	for (size_t i = 0; i < GX_WORK_STATE_HDR + 64; i++)
		if (p[i])
			return 0;
	return 1;
}

/* The adaptive policy's guard (GPUEXT_SCHED=adaptive; FAKECUDA_KERNEL_US,
 * FAKECUDA_PW_US and FAKECUDA_PS_US give the original, the claiming copy and
 * the static copy their times): after its exploration every launch runs the
 * arm that was fastest — `want` "copy", "static" or "orig" — and the log
 * says which, with the three medians. A static copy's launch carries a
 * STATIC descriptor and no state. */
static int guard_test(CUfunction ok, void **args, const char *want)
{
	CUstream s;
	GX_CHECK(cuStreamCreate(&s, 0) == CUDA_SUCCESS, "guard: a stream");
	int ran[3] = { 0 }, tail_right = 1, launched = 1, static_clean = 1;
	void *fcopy = NULL, *fstatic = NULL;
	int w = !strcmp(want, "copy") ? 1 : !strcmp(want, "static") ? 2 : 0;
	for (int i = 0; i < 50; i++) {
		launched &= cuLaunchKernel(ok, 10, 2, 1, 128, 1, 1, 0, s, args, NULL) == CUDA_SUCCESS;
		struct fake_launch l = last();
		const struct gx_work_desc *d = desc_of(&l, ok, 3);
		int arm = !d ? 0 : d->mode == GX_WORK_STATIC ? 2 : 1;
		ran[arm]++;
		if (arm == 2) {
			static_clean &= !d->state && !d->hints && d->total == 20 && l.grid[0] == 3;
			fstatic = l.func;
		} else if (arm == 1) {
			fcopy = l.func;
		}
		if (i >= 40)
			tail_right &= arm == w;
		cuStreamSynchronize(s); /* its timing pair completes */
	}
	GX_CHECK(launched, "guard: 50 launches succeed");
	/* each arm at least warmed and timed twice (a far slower copy is
	 * dropped then) */
	int least = 3; /* a warm-up and GX_BS_GUARD_DROP_N (2) timings */
	GX_CHECK(ran[0] >= least && ran[1] >= least && ran[2] >= least,
		 "guard: the three arms were tried (%d originals, %d copies, %d static copies)", ran[0], ran[1],
		 ran[2]);
	GX_CHECK(fcopy && fstatic && fcopy != fstatic, "guard: the static copy is a function of its own");
	GX_CHECK(static_clean, "guard: the static copy launches with a STATIC descriptor, no state, 3 workers");
	const char *wn = w == 1 ? "claiming copy" : w == 2 ? "static copy" : "original";
	GX_CHECK(tail_right, "guard: after exploring, every launch runs the %s", wn);
	/* settled: a launch into a stream being captured takes the static copy
	 * when that is the choice, else the original (a claim has no place in
	 * a graph) */
	cuLaunchKernel(ok, 10, 2, 1, 128, 1, 1, 0, (CUstream)(uintptr_t)0xC0DE, args, NULL);
	struct fake_launch lc = last();
	const struct gx_work_desc *dc = desc_of(&lc, ok, 3);
	GX_CHECK(w == 2 ? dc && dc->mode == GX_WORK_STATIC && !dc->state : lc.func == (void *)ok,
		 "guard: a captured launch runs the %s", w == 2 ? "static copy" : "original");
	GX_CHECK(log_has(w == 1	  ? "runs the copy"
			 : w == 2 ? "runs the static copy"
				  : "runs unchanged") &&
			 log_has("guard: its copy") && log_has(", its static copy "),
		 "guard: one log line gives the three medians and the choice");
	GX_CHECK(log_has("launches, the timed copies ") && log_has(", guarded (timed against the original)"),
		 "guard: the log says how many launches exploring took and what they cost, and that the kernel is "
		 "guarded");
	GX_CHECK(log_has("k_ok: launched as __gx_ps_k_ok, 3 workers") || w != 2,
		 "guard: the static copy's first launch is logged");
	cuStreamDestroy(s);
	return gx_test_done();
}

/* An application that runs ahead of the GPU (GPU run 100: schedguard's
 * CuPy app queues 300 launches, then syncs): 120 launches queued at once,
 * every kernel taking FAKECUDA_KERNEL_US, then 40 more with a sync each.
 * A launch that finds every timing pair in flight waits for a later one
 * rather than count as a failed timing, and the guard decides (here for
 * the copy, twice as fast) instead of giving up after 64 launches. */
static int async_test(CUfunction ok, void **args)
{
	CUstream s;
	GX_CHECK(cuStreamCreate(&s, 0) == CUDA_SUCCESS, "async: a stream");
	int launched = 1, tail_copy = 1;
	for (int i = 0; i < 120; i++)
		launched &= cuLaunchKernel(ok, 10, 2, 1, 128, 1, 1, 0, s, args, NULL) == CUDA_SUCCESS;
	cuStreamSynchronize(s);
	for (int i = 0; i < 40; i++) {
		launched &= cuLaunchKernel(ok, 10, 2, 1, 128, 1, 1, 0, s, args, NULL) == CUDA_SUCCESS;
		if (i >= 30)
			tail_copy &= last().func != (void *)ok;
		cuStreamSynchronize(s);
	}
	GX_CHECK(launched, "async: 160 launches succeed");
	GX_CHECK(!log_has("guard: no timing of its launches came back"),
		 "async: launches that found every timing pair in flight did not count as failed timings");
	GX_CHECK(log_has("guard: its copy") && log_has("runs the copy"), "async: the guard decided, for the copy");
	GX_CHECK(tail_copy, "async: the last launches run the copy");
	if (gx_test_failed)
		log_print("guard");
	cuStreamDestroy(s);
	return gx_test_done();
}

/* No timing ever comes (the fake's cuEventElapsedTime fails): after its
 * exploring launches the kernel runs as it is, and the log says why, with
 * the failing call, rather than nothing (GPU run 92's CuPy app). */
static int untimed_test(CUfunction ok, void **args)
{
	int launched = 1, tail_orig = 1;
	for (int i = 0; i < 80; i++) {
		launched &= cuLaunchKernel(ok, 10, 2, 1, 128, 1, 1, 0, NULL, args, NULL) == CUDA_SUCCESS;
		if (i >= 70)
			tail_orig &= last().func == (void *)ok;
		cuStreamSynchronize(NULL);
	}
	GX_CHECK(launched, "untimed: 80 launches succeed");
	GX_CHECK(tail_orig, "untimed: with no timing, the original runs after the exploration");
	GX_CHECK(log_has("guard: no timing of its launches came back in 64 launches") &&
			 log_has("the last at cuEventElapsedTime: "),
		 "untimed: the log says that no timing came, and the failing call");
	if (gx_test_failed)
		log_print("guard");
	return gx_test_done();
}

/* A capture in global mode (PyTorch's default) on one stream while
 * gpuext's own queries run — the guard's harvest of its timing pairs in
 * this thread, the device runtime's drainer querying launch timings in its
 * own (GPUEXT_SCHED attaches a device policy): in the default thread mode
 * either query would invalidate the capture (run 55: sched_app's graph). The
 * fake driver keeps that rule; its kernels take FAKECUDA_KERNEL_US, so the
 * pairs are still in flight when the capture starts. */
static int capture_test(CUfunction ok, void **args)
{
	CUstream s, c;
	GX_CHECK(cuStreamCreate(&s, 0) == CUDA_SUCCESS && cuStreamCreate(&c, 0) == CUDA_SUCCESS, "capture: streams");
	for (int i = 0; i < 4; i++)
		cuLaunchKernel(ok, 10, 2, 1, 128, 1, 1, 0, s, args, NULL);
	GX_CHECK(cuStreamBeginCapture_v2(c, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS,
		 "capture: begins in global mode");
	/* a launch on another stream: the guard harvests its pairs */
	cuLaunchKernel(ok, 10, 2, 1, 128, 1, 1, 0, s, args, NULL);
	/* the captured launch: never a claiming copy */
	cuLaunchKernel(ok, 10, 2, 1, 128, 1, 1, 0, c, args, NULL);
	struct fake_launch l = last();
	const struct gx_work_desc *d = desc_of(&l, ok, 3);
	GX_CHECK(!d || (d->mode == GX_WORK_STATIC && !d->state), "capture: the captured launch claims nothing");
	usleep(60 * 1000); /* the drainer's passes */
	CUgraph g = NULL;
	CUresult rc = cuStreamEndCapture(c, &g);
	GX_CHECK(rc == CUDA_SUCCESS && g, "capture: survives gpuext's own queries during it (cuStreamEndCapture: %d)",
		 (int)rc);
	cuStreamSynchronize(s);
	cuStreamDestroy(s);
	cuStreamDestroy(c);
	return gx_test_done();
}

/* A program whose first module load and launch are inside a global-mode
 * capture (CUDA's lazy loading loads a module at its first launch; graph.cu
 * of tests/gpu/shim does this): the device runtime sets the context up
 * there (allocations, copies), blocksched probes the module's registers —
 * none of it may invalidate the capture (run 57: it did, under any tool). */
static int capture_first_test(void)
{
	CUstream c;
	GX_CHECK(cuStreamCreate(&c, 0) == CUDA_SUCCESS, "capture-first: a (blocking) stream");
	GX_CHECK(cuStreamBeginCapture_v2(c, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS,
		 "capture-first: begins in global mode before anything else");
	CUmodule m;
	CUfunction f;
	GX_CHECK(cuModuleLoadData(&m, PTX) == CUDA_SUCCESS && cuModuleGetFunction(&f, m, "k_ok") == CUDA_SUCCESS,
		 "capture-first: the module loads inside the capture");
	CUdeviceptr buf = 0x1000;
	unsigned n = 7;
	void *args[] = { &buf, &n };
	GX_CHECK(cuLaunchKernel(f, 10, 2, 1, 128, 1, 1, 0, c, args, NULL) == CUDA_SUCCESS,
		 "capture-first: the first launch is captured");
	CUgraph g = NULL;
	CUresult rc = cuStreamEndCapture(c, &g);
	GX_CHECK(rc == CUDA_SUCCESS && g, "capture-first: the capture survives the context's and module's setup (%d)",
		 (int)rc);
	GX_CHECK(log_has("policy adaptive") && !log_has("not attached"),
		 "capture-first: the policy is attached all the same");
	cuStreamDestroy(c);
	return gx_test_done();
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "claim";
	int sched = !strncmp(mode, "sched", 5);
	unsigned want = strstr(mode, "static") ? GX_WORK_STATIC : GX_WORK_CLAIM;
	log_capture();

	CUcontext ctx;
	CUmodule mod;
	CUfunction ok, other, cl;
	GX_CHECK(cuInit(0) == CUDA_SUCCESS && cuCtxCreate(&ctx, NULL, 0, 0) == CUDA_SUCCESS, "launch: context");
	void *fake = dlopen(getenv("GPUEXT_REAL_LIBCUDA"), RTLD_NOW | RTLD_NOLOAD);
	if (!fake) {
		printf("not ok - launch: fake driver loaded by the shim\n");
		return 1;
	}
	*(void **)&last = dlsym(fake, "fake_last_launch");
	*(void **)&count = dlsym(fake, "fake_count");
	*(void **)&set_occ = dlsym(fake, "fake_set_occupancy");
	*(void **)&set_occ_copy = dlsym(fake, "fake_set_occupancy_copy");
	*(void **)&memset_stream = dlsym(fake, "fake_last_memset_stream");
	if (!strcmp(mode, "capture-first"))
		return capture_first_test();
	GX_CHECK(cuModuleLoadData(&mod, PTX) == CUDA_SUCCESS, "launch: module loads");
	/* a policy's kernels=k_ok: k_other gets no copy at the rewrite */
	const char *spec = getenv("GPUEXT_SCHED");
	int one = spec && strstr(spec, "kernels=k_ok");
	const char *nk = one ? "1 kernels with persistent copies" : "2 kernels with persistent copies";
	char after_paren[64], after_hooks[64], beside[64];
	snprintf(after_paren, sizeof(after_paren), "(%s", nk);
	snprintf(after_hooks, sizeof(after_hooks), "hooks, %s", nk);
	/* no variables: the module as it came, its copies beside it (load.c) */
	snprintf(beside, sizeof(beside), "; %s in a module of their own", nk);
	GX_CHECK(log_has(after_paren) || log_has(after_hooks) || log_has(beside),
		 "launch: the load line counts the kernels with persistent copies (the selected ones under a policy)");
	GX_CHECK(cuModuleGetFunction(&ok, mod, "k_ok") == CUDA_SUCCESS &&
			 cuModuleGetFunction(&other, mod, "k_other") == CUDA_SUCCESS &&
			 cuModuleGetFunction(&cl, mod, "k_cluster") == CUDA_SUCCESS,
		 "launch: the application's kernels keep their names");

	/* An accepted kernel: 10x2 blocks, 3 per SM x 1 SM (the fake's) = 3 workers. */
	CUdeviceptr buf = 0x1000;
	unsigned n = 7;
	void *args[] = { &buf, &n };
	if (!strcmp(mode, "guard"))
		return guard_test(ok, args, argc > 2 ? argv[2] : "copy");
	if (!strcmp(mode, "untimed"))
		return untimed_test(ok, args);
	if (!strcmp(mode, "async"))
		return async_test(ok, args);
	if (!strcmp(mode, "capture"))
		return capture_test(ok, args);
	long h2d0 = count("cuMemcpyHtoDAsync_v2");
	GX_CHECK(cuLaunchKernel(ok, 10, 2, 1, 128, 1, 1, 0, NULL, args, NULL) == CUDA_SUCCESS,
		 "launch: launch succeeds");
	struct fake_launch l = last();
	const struct gx_work_desc *d = desc_of(&l, ok, 3);
	GX_CHECK(l.func != (void *)ok, "launch: the copy is launched, not the original");
	GX_CHECK(l.grid[0] == 3 && l.grid[1] == 1 && l.grid[2] == 1 && l.block[0] == 128,
		 "launch: grid = occupancy x SMs as 1-D (%u,%u,%u), block kept", l.grid[0], l.grid[1], l.grid[2]);
	GX_CHECK(l.params && l.params[0] == &buf && l.params[1] == &n,
		 "launch: the application's arguments come first, unchanged");
	GX_CHECK(d && d->total == 20 && d->grid_x == 10 && d->grid_y == 2 && d->grid_z == 1 && d->mode == want,
		 "launch: descriptor by value: total 20, grid 10x2x1, mode %u", want);
	if (want == GX_WORK_CLAIM) {
		/* 20 units, 3 workers x 8 claims each: chunk 1 */
		GX_CHECK(d && d->chunk == 1 && d->state && state_zero(d->state) && memset_stream() == NULL,
			 "launch: claim: chunk %u, a state zeroed on the launch's stream", d ? d->chunk : 0);
		GX_CHECK(d && (sched ? d->hints != 0 : d->hints == 0),
			 "launch: claim: a hint block with a policy, none without");
	} else {
		GX_CHECK(d && !d->state && !d->hints && !d->stats, "launch: static: no state, no hints, no stats");
	}
	/* (the device runtime's setup copies — the context's maps, the module's
	 * __gx_devrt — came before, through its own stream) */
	GX_CHECK(count("cuMemcpyHtoDAsync_v2") - h2d0 == 0, "launch: no copy to the device for a launch (%ld)",
		 count("cuMemcpyHtoDAsync_v2") - h2d0);
	/* The first launches are sampled (GPUEXT_SCHED_LOG): the test plays the
	 * three workers of this one; the log gets them at the next sync. */
	if (sched && want == GX_WORK_CLAIM && argc > 2) {
		struct gx_work_wstat *ws = d ? (struct gx_work_wstat *)(uintptr_t)d->stats : NULL;
		GX_CHECK(ws != NULL, "launch: a sampled launch has a stats area");
		for (unsigned w = 0; ws && w < 3; w++)
			ws[w] = (struct gx_work_wstat){ .units = 6 + (w > 0),
							.chunks = 2,
							.steals = w,
							.smid = w % 2,
							.t0 = 1000 + w,
							.t1 = 9000 + 100 * w,
							.done = 1 };
	}
	GX_CHECK(log_has("k_ok: launched as __gx_pw_k_ok, 3 workers"), "launch: first launch logged");

	/* Chunks: 50000 units over 8 workers x 8 claims: 782 per claim. */
	set_occ(8);
	cuLaunchKernel(ok, 50000, 1, 1, 64, 1, 1, 0, NULL, args, NULL);
	l = last();
	d = desc_of(&l, ok, 3);
	if (want == GX_WORK_CLAIM)
		GX_CHECK(d && d->chunk == 782, "launch: chunk = units / (workers x 8 claims) = %u", d ? d->chunk : 0);
	cuLaunchKernel(ok, 5, 1, 1, 64, 1, 1, 0, NULL, args, NULL);
	GX_CHECK(last().grid[0] == 5, "launch: workers capped at the original 5 blocks (%u)", last().grid[0]);
	set_occ(3);

	/* One state per stream, the same stream reuses its own. */
	CUstream s1, s2;
	cuStreamCreate(&s1, 0);
	cuStreamCreate(&s2, 0);
	uint64_t st[4] = { 0 };
	CUstream ss[3] = { s1, s2, s1 };
	for (int i = 0; i < 3; i++) {
		cuLaunchKernel(ok, 4, 1, 1, 32, 1, 1, 0, ss[i], args, NULL);
		l = last();
		d = desc_of(&l, ok, 3);
		st[i] = d ? d->state : 0;
		if (i == 0 && want == GX_WORK_CLAIM)
			GX_CHECK(memset_stream() == s1, "launch: a new stream's state is zeroed on that stream");
	}
	cuLaunchKernel_ptsz(ok, 4, 1, 1, 32, 1, 1, 0, NULL, args, NULL);
	l = last();
	d = desc_of(&l, ok, 3);
	st[3] = d ? d->state : 0;
	if (want == GX_WORK_CLAIM)
		GX_CHECK(st[0] && st[1] && st[0] != st[1] && st[0] == st[2] && st[3] && st[3] != st[0] &&
				 st[3] != st[1] && memset_stream() == CU_STREAM_PER_THREAD,
			 "launch: one state per stream (and per thread for the per-thread stream), reused");
	else
		GX_CHECK(l.func != (void *)ok && !st[0] && !st[3], "launch: static: no state on any stream");

	/* cuLaunchKernelEx: plain config is launched persistent, a cluster one is not. */
	CUlaunchConfig cfg = {
		.gridDimX = 6, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 32, .blockDimY = 1, .blockDimZ = 1
	};
	GX_CHECK(cuLaunchKernelEx(&cfg, ok, args, NULL) == CUDA_SUCCESS && last().func != (void *)ok &&
			 last().grid[0] == 3,
		 "launch: cuLaunchKernelEx launches the copy");
	CUlaunchAttribute at = { .id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION };
	at.value.clusterDim.x = 2, at.value.clusterDim.y = 1, at.value.clusterDim.z = 1;
	cfg.attrs = &at;
	cfg.numAttrs = 1;
	cuLaunchKernelEx(&cfg, ok, args, NULL);
	l = last();
	GX_CHECK(l.func == (void *)ok && l.grid[0] == 6 && log_has("cluster, cooperative or other attributes"),
		 "launch: cuLaunchKernelEx with a cluster attribute runs the original (logged)");

	/* Fallbacks. */
	cuLaunchCooperativeKernel(ok, 3, 1, 1, 32, 1, 1, 0, NULL, args);
	GX_CHECK(last().func == (void *)ok && last().grid[0] == 3 && log_has("cooperative launches run the original"),
		 "launch: cooperative launch runs the original (logged)");
	cuLaunchKernel(cl, 9, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
	GX_CHECK(last().func == (void *)cl && last().grid[0] == 9, "launch: a refused kernel runs unchanged");
	cuLaunchKernel(ok, 8, 1, 1, 32, 1, 1, 0, (CUstream)(uintptr_t)0xC0DE, args, NULL);
	l = last();
	if (want == GX_WORK_CLAIM)
		GX_CHECK(l.func == (void *)ok && l.grid[0] == 8 && log_has("stream being captured"),
			 "launch: claim: a launch into a capturing stream runs the original (logged)");
	else
		GX_CHECK(l.func != (void *)ok && l.grid[0] == 3 && (d = desc_of(&l, ok, 3)) && d->total == 8,
			 "launch: static: a launch into a capturing stream is captured as the copy");
	void *extra[] = { CU_LAUNCH_PARAM_END };
	cuLaunchKernel(ok, 8, 1, 1, 32, 1, 1, 0, NULL, NULL, extra);
	GX_CHECK(last().func == (void *)ok && log_has("through `extra`"),
		 "launch: parameters through extra: the original (logged)");
	set_occ(0);
	cuLaunchKernel(ok, 8, 1, 1, 1024, 1, 1, 0, NULL, args, NULL);
	GX_CHECK(last().func == (void *)ok && log_has("no block per SM"),
		 "launch: zero occupancy: the original (logged)");
	set_occ(4);
	set_occ_copy(2);
	cuLaunchKernel(ok, 8, 1, 1, 96, 1, 1, 0, NULL, args, NULL);
	GX_CHECK(last().func == (void *)ok && log_has("its copy keeps 2 of the original's 4 blocks per SM"),
		 "launch: a copy with fewer resident blocks than the original is not used (logged)");
	set_occ_copy(-1);
	set_occ(3);
	CUDA_KERNEL_NODE_PARAMS np = { .func = ok,
				       .gridDimX = 2,
				       .gridDimY = 1,
				       .gridDimZ = 1,
				       .blockDimX = 32,
				       .blockDimY = 1,
				       .blockDimZ = 1,
				       .kernelParams = args };
	CUgraphNode node;
	cuGraphAddKernelNode(&node, (CUgraph)(uintptr_t)0x10, NULL, 0, &np);
	GX_CHECK(log_has("graph kernel nodes (claiming policies) run the original") || want == GX_WORK_STATIC,
		 "launch: graph kernel nodes: the original (logged)");

	/* The policy's kernels=GLOB: k_other is not selected. */
	void *oargs[] = { &buf };
	cuLaunchKernel(other, 6, 1, 1, 32, 1, 1, 0, NULL, oargs, NULL);
	if (sched)
		GX_CHECK(last().func == (void *)other && log_has("k_other: runs unchanged: not selected by policy"),
			 "launch: a kernel outside the policy's kernels= glob runs unchanged (logged)");
	else
		GX_CHECK(last().func != (void *)other, "launch: without a policy every accepted kernel is launched");

	if (sched && want == GX_WORK_CLAIM && argc > 2) {
		cuStreamSynchronize(s2); /* the launcher looks at its samples */
		char *logt = NULL;
		FILE *f = fopen(argv[2], "r");
		size_t cap = 0;
		if (f) {
			ssize_t r = getdelim(&logt, &cap, 0, f);
			(void)r;
			fclose(f);
		}
		GX_CHECK(logt && strstr(logt, "gxsched 1 ") && strstr(logt, "D k_ok launched as") &&
				 strstr(logt, "L k_ok 0 20 10 2 1 3 1 3 1") && strstr(logt, "W 2 0 7 2 2 1002 9200"),
			 "launch: the schedule log has the decision and the sampled launch's workers");
		free(logt);
		/* the stats file (GPUEXT_STATS_MS): persistent launches and steals */
		char sp[600];
		struct gx_stats_file st = { 0 };
		snprintf(sp, sizeof(sp), "%s/%d-gpuext.stats", getenv("GPUEXT_SHM_DIR"), (int)getpid());
		for (int i = 0; i < 100 && !(st.bs_sampled_launches && st.bs_persistent_claim); i++) {
			usleep(20000);
			FILE *sf = fopen(sp, "r");
			if (sf && fread(&st, 1, sizeof(st), sf) != sizeof(st))
				memset(&st, 0, sizeof(st));
			if (sf)
				fclose(sf);
		}
		GX_CHECK(
			(st.flags & GX_STATS_F_SCHED) && st.bs_persistent_claim >= 1 && st.bs_sampled_launches >= 1 &&
				st.bs_steals >= 2,
			"launch: the stats file counts persistent launches, the sample and its steals (%llu, %llu, %llu)",
			(unsigned long long)st.bs_persistent_claim, (unsigned long long)st.bs_sampled_launches,
			(unsigned long long)st.bs_steals);
	}

	/* Libraries: launched with the CUkernel handle. */
	CUlibrary lib;
	CUkernel kk;
	GX_CHECK(cuLibraryLoadData(&lib, PTX, NULL, NULL, 0, NULL, NULL, 0) == CUDA_SUCCESS &&
			 cuLibraryGetKernel(&kk, lib, "k_ok") == CUDA_SUCCESS,
		 "launch: library loads");
	cuLaunchKernel((CUfunction)kk, 10, 1, 1, 32, 1, 1, 0, NULL, args, NULL);
	l = last();
	d = desc_of(&l, kk, 3);
	GX_CHECK(l.func != (void *)kk && l.grid[0] == 3 && d && d->total == 10,
		 "launch: a library kernel (CUkernel handle) launches its copy");

	/* Unload: the records go; streams and the context go. */
	GX_CHECK(cuLibraryUnload(lib) == CUDA_SUCCESS && cuModuleUnload(mod) == CUDA_SUCCESS, "launch: unloads");
	cuStreamDestroy(s1);
	cuStreamDestroy(s2);
	GX_CHECK(cuCtxDestroy(ctx) == CUDA_SUCCESS, "launch: context destroyed");
	/* what the shim said about policies, for the script */
	log_print("policy");
	log_print("knob");
	return gx_test_done();
}
