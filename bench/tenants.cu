// tenants.cu — one tenant of the multi-tenant benchmark (tests/gpu/tenants.sh,
// docs/tenants.md): the gpu_ext paper's setup of latency-critical (LC)
// processes issuing small kernels at a fixed rate next to best-effort (BE)
// processes issuing long compute kernels back to back on 4 streams.
//
//   tenants --role lc --period-us P --lat-file F     one small kernel every P µs,
//                                                    each waited for; latency =
//                                                    host time from the launch call
//                                                    to its completion (event, spin)
//   tenants --role be --streams 4 --iters N          compute kernels filling the GPU,
//                                                    at most --depth in flight per
//                                                    stream (the program's own bound)
//   tenants --role be ... --graph G                  the same kernels as CUDA graphs of G
//                                                    kernels each, one graph launch per
//                                                    step (kernels counts G per graph)
//   tenants --role calib --be-us U                   iterations for a BE kernel of U µs
//                                                    alone: "CALIB iters=N us=X"
// Common: --secs S (measured), --warm W (first W seconds not counted),
// --barrier DIR: after initialisation the process creates DIR/ready.ROLE.PID
// and starts when DIR/go exists (it holds the start time, CLOCK_REALTIME ns),
// so all tenants measure the same interval. Prints one line:
//   RESULT role=lc pid=P n=N p50_us=.. p99_us=.. p999_us=.. max_us=..
//   RESULT role=be pid=P kernels=K secs=S kps=K/S
// The program is the same with and without gpuext: under gpuext-run the
// tenant's launches go through the shim's gating, nothing else changes.
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <algorithm>
#include <vector>

#include "common/gx_cu_check.h"

__global__ void work(float *out, int iters)
{
	float a = threadIdx.x * 1e-3f, b = a + 1, c = a + 2, d = a + 3;
	for (int i = 0; i < iters; i++) { // four dependent chains: the FMA pipes stay busy
		a = fmaf(a, 0.9999f, 1e-4f);
		b = fmaf(b, 0.9999f, 1e-4f);
		c = fmaf(c, 0.9999f, 1e-4f);
		d = fmaf(d, 0.9999f, 1e-4f);
	}
	if (a + b + c + d == 42.0f) // never: keeps the loop
		out[blockIdx.x * blockDim.x + threadIdx.x] = a;
}

static double now_s(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct opts {
	const char *role = "lc", *barrier = NULL, *lat_file = NULL;
	double secs = 10, warm = 1;
	int period_us = 10000, streams = 4, depth = 8, iters = 20000, lc_iters = 200, lc_blocks = 8;
	int be_blocks_per_sm = 8, be_us = 100, graph = 0;
};

/* Ready, then wait for the go file; returns the start (CLOCK_REALTIME). */
static double barrier(const opts &o)
{
	if (!o.barrier)
		return now_s(CLOCK_REALTIME);
	char p[512];
	snprintf(p, sizeof(p), "%s/ready.%s.%d", o.barrier, o.role, (int)getpid());
	FILE *f = fopen(p, "w");
	if (f)
		fclose(f);
	snprintf(p, sizeof(p), "%s/go", o.barrier);
	for (int i = 0; i < 120 * 200; i++) {
		FILE *g = fopen(p, "r");
		long long ns = 0;
		if (g && fscanf(g, "%lld", &ns) == 1 && ns > 0) {
			fclose(g);
			double start = ns * 1e-9;
			while (now_s(CLOCK_REALTIME) < start)
				usleep(200);
			return start;
		}
		if (g)
			fclose(g);
		usleep(5000);
	}
	fprintf(stderr, "tenants: no go file after 120 s\n");
	exit(3);
}

static void lc(const opts &o, float *out)
{
	cudaStream_t s;
	cudaEvent_t e;
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
	for (int i = 0; i < 50; i++) { // warm: module, first launches
		work<<<o.lc_blocks, 128, 0, s>>>(out, o.lc_iters);
		CK(cudaEventRecord(e, s));
		CK(cudaEventSynchronize(e));
	}
	double start = barrier(o), t0m = now_s(CLOCK_MONOTONIC) - (now_s(CLOCK_REALTIME) - start);
	std::vector<float> lat;
	lat.reserve((size_t)(o.secs * 1e6 / o.period_us) + 16);
	for (long k = 0;; k++) {
		double at = t0m + k * o.period_us * 1e-6, now = now_s(CLOCK_MONOTONIC);
		if (at - t0m > o.secs)
			break;
		if (now < at - 200e-6) {
			double d = at - now - 150e-6;
			struct timespec ts = {(time_t)d, (long)((d - (time_t)d) * 1e9)};
			nanosleep(&ts, NULL);
		}
		while ((now = now_s(CLOCK_MONOTONIC)) < at)
			;
		if (now - at > o.period_us * 1e-6)
			continue; // behind: skip a slot rather than burst
		double t0 = now_s(CLOCK_MONOTONIC);
		work<<<o.lc_blocks, 128, 0, s>>>(out, o.lc_iters);
		CK(cudaGetLastError());
		CK(cudaEventRecord(e, s));
		CK(cudaEventSynchronize(e));
		double t1 = now_s(CLOCK_MONOTONIC);
		if (t0 - t0m >= o.warm)
			lat.push_back((float)((t1 - t0) * 1e6));
	}
	if (o.lat_file) {
		FILE *f = fopen(o.lat_file, "w");
		for (size_t i = 0; f && i < lat.size(); i++)
			fprintf(f, "%.1f\n", lat[i]);
		if (f)
			fclose(f);
	}
	std::sort(lat.begin(), lat.end());
	size_t n = lat.size();
	auto q = [&](double p) { return n ? lat[std::min(n - 1, (size_t)(p * n))] : 0.0f; };
	printf("RESULT role=lc pid=%d n=%zu p50_us=%.1f p99_us=%.1f p999_us=%.1f max_us=%.1f\n", (int)getpid(), n,
	       q(0.5), q(0.99), q(0.999), n ? lat[n - 1] : 0.0f);
}

static void be(const opts &o, float *out, int blocks)
{
	int ns = std::max(1, std::min(o.streams, 16)), depth = std::max(1, std::min(o.depth, 64));
	cudaStream_t s[16];
	std::vector<cudaEvent_t> ev(ns * depth);
	std::vector<int> used(ns * depth, 0);
	for (int i = 0; i < ns; i++)
		CK(cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking));
	for (auto &e : ev)
		CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
	work<<<blocks, 256, 0, s[0]>>>(out, 100);
	CK(cudaStreamSynchronize(s[0]));
	int per = o.graph > 0 ? std::min(o.graph, 64) : 1;
	cudaGraphExec_t ge[16];
	for (int i = 0; o.graph > 0 && i < ns; i++) { // one graph of `per` kernels per stream
		cudaGraph_t g;
		CK(cudaStreamBeginCapture(s[i], cudaStreamCaptureModeThreadLocal));
		for (int j = 0; j < per; j++)
			work<<<blocks, 256, 0, s[i]>>>(out, o.iters);
		CK(cudaStreamEndCapture(s[i], &g));
		CK(cudaGraphInstantiate(&ge[i], g, 0));
		CK(cudaGraphLaunch(ge[i], s[i])); // warm: the first launch uploads it
		CK(cudaStreamSynchronize(s[i]));
	}
	double start = barrier(o), end = start + o.secs, from = start + o.warm;
	long kernels = 0;
	for (long k = 0;; k++) {
		int st = (int)(k % ns), slot = st * depth + (int)((k / ns) % depth);
		if (used[slot]) {
			CK(cudaEventSynchronize(ev[slot])); // the program's own bound on its queue
			double t = now_s(CLOCK_REALTIME);
			if (t >= from && t < end)
				kernels += per;
			if (t >= end)
				break;
		}
		if (o.graph > 0)
			CK(cudaGraphLaunch(ge[st], s[st]));
		else
			work<<<blocks, 256, 0, s[st]>>>(out, o.iters);
		CK(cudaGetLastError());
		CK(cudaEventRecord(ev[slot], s[st]));
		used[slot] = 1;
	}
	CK(cudaDeviceSynchronize());
	double secs = end - from;
	printf("RESULT role=be pid=%d kernels=%ld secs=%.2f kps=%.1f\n", (int)getpid(), kernels, secs, kernels / secs);
}

static void calib(const opts &o, float *out, int blocks)
{
	cudaEvent_t a, b;
	CK(cudaEventCreate(&a));
	CK(cudaEventCreate(&b));
	int iters = o.iters;
	float ms = 0;
	for (int round = 0; round < 4; round++) {
		work<<<blocks, 256>>>(out, iters);
		CK(cudaEventRecord(a));
		for (int i = 0; i < 10; i++)
			work<<<blocks, 256>>>(out, iters);
		CK(cudaEventRecord(b));
		CK(cudaEventSynchronize(b));
		CK(cudaEventElapsedTime(&ms, a, b));
		double us = ms * 100.0; // per kernel
		if (round < 3)
			iters = std::max(100, (int)(iters * o.be_us / std::max(us, 1.0)));
		else
			printf("CALIB iters=%d us=%.1f blocks=%d\n", iters, us, blocks);
	}
}

int main(int argc, char **argv)
{
	opts o;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define OPT(name, field, conv) \
	if (!strcmp(a, name) && v) { \
		o.field = conv(v);   \
		i++;                 \
		continue;            \
	}
		OPT("--role", role, (const char *))
		OPT("--barrier", barrier, (const char *))
		OPT("--lat-file", lat_file, (const char *))
		OPT("--secs", secs, atof)
		OPT("--warm", warm, atof)
		OPT("--period-us", period_us, atoi)
		OPT("--streams", streams, atoi)
		OPT("--depth", depth, atoi)
		OPT("--iters", iters, atoi)
		OPT("--lc-iters", lc_iters, atoi)
		OPT("--lc-blocks", lc_blocks, atoi)
		OPT("--be-us", be_us, atoi)
		OPT("--blocks-per-sm", be_blocks_per_sm, atoi)
		OPT("--graph", graph, atoi)
#undef OPT
		fprintf(stderr, "tenants: unknown argument %s\n", a);
		return 2;
	}
	bool is_lc = !strcmp(o.role, "lc");
	// LC waits by spinning (lowest latency), BE by blocking (leaves the CPU)
	CK(cudaSetDeviceFlags(is_lc ? cudaDeviceScheduleSpin : cudaDeviceScheduleBlockingSync));
	int sms = 0;
	CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	int blocks = sms * o.be_blocks_per_sm;
	float *out;
	CK(cudaMalloc(&out, (size_t)blocks * 256 * sizeof(float)));
	if (is_lc)
		lc(o, out);
	else if (!strcmp(o.role, "be"))
		be(o, out, blocks);
	else if (!strcmp(o.role, "calib"))
		calib(o, out, blocks);
	else {
		fprintf(stderr, "tenants: unknown role %s\n", o.role);
		return 2;
	}
	fflush(stdout);
	return 0;
}
