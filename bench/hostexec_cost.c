/* hostexec_cost — what the host-policy executor costs per event on the CPU,
 * interpreter vs native code (devbpf JIT through libgxjit.so). An event is
 * one handler call: a fault of a 2 MiB region when a launch's 1 GiB
 * footprint is walked after a host sync (gpu_prefetch), or a launch over
 * resident data (gpu_access), or an eviction choice (gx_lfu, with room for
 * half the footprint: gpu_evict_prepare). Also the whole walk per 1 GiB launch
 * after a host sync, and per launch over resident data — the CPU time the
 * shim adds before a launch.
 *   hostexec_cost [HOSTBPF_DIR] [ROUNDS]   (default build/hostbpf, 40)
 * One line per policy and mode; "native" is absent where libgxjit.so is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hostexec/gx_hostexec.h"

#define VA 0x7f0000000000ull

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* CPU time: the build machine is shared and loaded */
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void nop_prefetch(void *u, uint64_t va, uint64_t len, int h)
{
	(void)u, (void)va, (void)len, (void)h;
}

/* ns per handler call and ms per 1 GiB walk; -1 if the policy did not load
 * in that mode. */
static int measure(const char *dir, const char *pol, int native, int rounds, double *ns_call, double *ms_walk,
		   int *is_native)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s.bpf.o", dir, pol);
	/* LFU acts on eviction only: half the footprint fits. */
	struct gx_hx_opts o = {.sz = sizeof(o), .native = native, .min_prefetch = 2u << 20,
			       .capacity = strcmp(pol, "gx_lfu") ? 0 : 256, .act = {.prefetch = nop_prefetch}};
	struct gx_hx *hx = gx_hx__new(&o);
	if (!hx || gx_hx__load(hx, path, NULL)) {
		gx_hx__free(hx);
		return -1;
	}
	gx_hx__alloc(hx, VA, 1ull << 30);
	gx_hx__touch(hx, VA, 0); /* warm up */
	gx_hx__sync(hx);
	struct gx_hx_stats s0, s1;
	gx_hx__stats(hx, &s0);
	double tf = 0, tr = 0;
	for (int r = 0; r < rounds; r++) {
		double t0 = now_ns();
		gx_hx__touch(hx, VA, 0); /* faults (gpu_prefetch) */
		double t1 = now_ns();
		gx_hx__touch(hx, VA, 0); /* resident (gpu_access, if the policy has one) */
		double t2 = now_ns();
		gx_hx__sync(hx);
		tf += t1 - t0;
		tr += t2 - t1;
	}
	gx_hx__stats(hx, &s1);
	uint64_t calls = s1.calls - s0.calls;
	*ns_call = calls ? (tf + tr) / (double)calls : 0;
	ms_walk[0] = tf / rounds / 1e6;
	ms_walk[1] = tr / rounds / 1e6;
	*is_native = s1.native_calls > s0.native_calls;
	gx_hx__free(hx);
	return (int)(calls / (uint64_t)rounds);
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "build/hostbpf";
	int rounds = argc > 2 ? atoi(argv[2]) : 40;
	const char *pols[] = {"gx_seq", "gx_stride", "gx_tree", "gx_lfu"};
	printf("| policy | events per round | interp ns/event | native ns/event | interp ms per 1 GiB launch after a sync "
	       "| native ms | resident launch, interp µs |\n");
	printf("|---|---|---|---|---|---|---|\n");
	for (size_t i = 0; i < sizeof(pols) / sizeof(pols[0]); i++) {
		double in = 0, iw[2] = {0, 0}, nn = 0, nw[2] = {0, 0};
		int isn = 0, dummy;
		int ev = measure(dir, pols[i], 0, rounds, &in, iw, &dummy);
		if (ev < 0) {
			printf("| %s | (does not load) | | | | | |\n", pols[i]);
			continue;
		}
		int evn = measure(dir, pols[i], 1, rounds, &nn, nw, &isn);
		if (evn >= 0 && isn)
			printf("| %s | %d | %.0f | %.0f | %.3f | %.3f | %.1f |\n", pols[i], ev, in, nn, iw[0], nw[0],
			       iw[1] * 1e3);
		else
			printf("| %s | %d | %.0f | - | %.3f | - | %.1f |\n", pols[i], ev, in, iw[0], iw[1] * 1e3);
	}
	return 0;
}
