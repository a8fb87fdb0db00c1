/* devbpf_harness.c — GPU side of the devbpf test (driver API only).
 *   devbpf_harness check DIR   run gx_check with the JIT'd policies, flush
 *                              the maps, write DIR/gpu.txt (same format as
 *                              the interpreter's DIR/expected.txt)
 *   devbpf_harness bench DIR   map-update cost: no hook / warp-leader
 *                              aggregated / naive per-thread, as a table
 * Device maps come from the maps runtime (gx_devmaps) with CUDA callbacks:
 * storage in device memory, rings in host memory mapped for the device. The
 * kernel PTX and the policy PTX are linked by the driver (cuLink*). */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/gx_cu_check.h"
#include "devbpf/gx_bpf.h"
#include "common/gx_util.h"
#include "ptx-rewrite/gx_ptx.h"
#include "tests/devbpf/gpu/gpu_common.h"

#define CK(x) GX_CU_TAP("", x)

static int c_alloc(void *c, size_t n, uint64_t *d)
{
	(void)c;
	CUdeviceptr p;
	if (cuMemAlloc(&p, n) != CUDA_SUCCESS)
		return -ENOMEM;
	cuMemsetD8(p, 0, n);
	*d = p;
	return 0;
}
static void c_free(void *c, uint64_t d)
{
	(void)c;
	cuMemFree((CUdeviceptr)d);
}
static int c_htod(void *c, uint64_t d, const void *s, size_t n)
{
	(void)c;
	return cuMemcpyHtoD((CUdeviceptr)d, s, n) == CUDA_SUCCESS ? 0 : -EIO;
}
static int c_dtoh(void *c, void *h, uint64_t d, size_t n)
{
	(void)c;
	return cuMemcpyDtoH(h, (CUdeviceptr)d, n) == CUDA_SUCCESS ? 0 : -EIO;
}
static int c_hmap(void *c, void *h, size_t n, uint64_t *d)
{
	(void)c;
	n = (n + 4095) & ~(size_t)4095;
	if (cuMemHostRegister(h, n, CU_MEMHOSTREGISTER_DEVICEMAP) != CUDA_SUCCESS)
		return -EIO;
	CUdeviceptr p;
	if (cuMemHostGetDevicePointer(&p, h, 0) != CUDA_SUCCESS)
		return -EIO;
	*d = p;
	return 0;
}
static void c_hunmap(void *c, void *h)
{
	(void)c;
	cuMemHostUnregister(h);
}

static char *slurp(const char *dir, const char *name, size_t *len)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	char *buf = NULL;
	if (gx_read_file(path, &buf, len, 0)) {
		printf("not ok - read %s\n", path);
		exit(1);
	}
	return buf;
}

static CUmodule link_module(const char *dir, const char *kernels, const char *policy)
{
	size_t kl, pl;
	char *k = slurp(dir, kernels, &kl), *p = slurp(dir, policy, &pl);
	char log[8192] = "";
	CUjit_option opt[] = { CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES };
	void *val[] = { log, (void *)(uintptr_t)sizeof(log) };
	CUlinkState ls;
	CK(cuLinkCreate(2, opt, val, &ls));
	CUresult r = cuLinkAddData(ls, CU_JIT_INPUT_PTX, k, kl + 1, kernels, 0, NULL, NULL);
	if (r == CUDA_SUCCESS)
		r = cuLinkAddData(ls, CU_JIT_INPUT_PTX, p, pl + 1, policy, 0, NULL, NULL);
	void *cubin;
	size_t cl;
	if (r == CUDA_SUCCESS)
		r = cuLinkComplete(ls, &cubin, &cl);
	if (r != CUDA_SUCCESS) {
		printf("not ok - driver links %s + %s: %d\n%s\n", kernels, policy, r, log);
		exit(1);
	}
	printf("ok - driver links %s with the JIT's %s\n", kernels, policy);
	CUmodule mod;
	CK(cuModuleLoadData(&mod, cubin));
	CK(cuLinkDestroy(ls));
	free(k);
	free(p);
	return mod;
}

struct rt {
	struct gx_map **maps;
	size_t nr;
	struct gx_devmaps *dm;
	struct gx_ring *ring;
};

static void setup_maps(const char *dir, const char *specs, int sms, struct rt *rt, CUmodule mod)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", dir, specs);
	FILE *f = fopen(path, "r");
	if (!f || gx_t_read_specs(f, (unsigned)sms, &rt->maps, &rt->nr)) {
		printf("not ok - map specs %s\n", path);
		exit(1);
	}
	fclose(f);
	size_t rbytes = gx_ring_bytes(1 << 16);
	if (posix_memalign((void **)&rt->ring, 4096, (rbytes + 4095) & ~(size_t)4095))
		exit(1);
	gx_ring__init(rt->ring, 1 << 16);
	struct gx_dev_ops ops = { NULL, c_alloc, c_free, c_htod, c_dtoh, c_hmap, c_hunmap, NULL, NULL, NULL };
	int ret = gx_devmaps__create(rt->maps, rt->nr, rt->ring, rbytes,
				     GX_DEVRT_F_PRINTK | GX_DEVRT_F_PREFETCH, &ops, &rt->dm);
	if (ret) {
		printf("not ok - device maps: %d\n", ret);
		exit(1);
	}
	CUdeviceptr g;
	size_t gs;
	CK(cuModuleGetGlobal(&g, &gs, mod, GDEV_DEVRT_SYMBOL));
	if (gs != sizeof(struct gx_devrt)) {
		printf("not ok - %s has %zu bytes, not %zu\n", GDEV_DEVRT_SYMBOL, gs, sizeof(struct gx_devrt));
		exit(1);
	}
	CK(cuMemcpyHtoD(g, gx_devmaps__devrt(rt->dm), gs));
	printf("ok - %s holds the device runtime block (%zu maps)\n", GDEV_DEVRT_SYMBOL, rt->nr);
}

static int printk_cb(void *ctx, unsigned type, const void *rec, size_t len)
{
	int *n = ctx;
	if (type == GX_REC_PRINTK && len == sizeof(struct gx_rec_printk)) {
		char line[256];
		gx_printk_format(rec, line, sizeof(line));
		printf("# printk: %s\n", line);
		(*n)++;
	}
	return 0;
}

static int do_check(const char *dir, CUdevice dev, int sms)
{
	(void)dev;
	CUmodule mod = link_module(dir, "kernels_check.ptx", "policy.ptx");
	struct rt rt;
	setup_maps(dir, "maps.txt", sms, &rt, mod);
	CUfunction fn;
	CK(cuModuleGetFunction(&fn, mod, GX_T_KERNEL));
	unsigned long long kid = gx_kernel_id(GX_T_KERNEL);
	void *args[] = { &kid };
	CK(cuLaunchKernel(fn, GX_T_GRID, 1, 1, GX_T_BLOCK, 1, 1, 0, NULL, args, NULL));
	CUresult r = cuCtxSynchronize();
	printf("%s - gx_check ran with the JIT'd policies (%d)\n", r == CUDA_SUCCESS ? "ok" : "not ok", r);
	if (r != CUDA_SUCCESS)
		return 1;
	printf("%s - flush device maps into the host copies\n",
	       gx_devmaps__flush(rt.dm) == 0 ? "ok" : "not ok");
	int np = 0;
	gx_ring__drain(rt.ring, printk_cb, &np);
	printf("%s - printk record reached the host through the runtime ring (%d)\n",
	       np == 1 ? "ok" : "not ok", np);
	char path[1024];
	snprintf(path, sizeof(path), "%s/gpu.txt", dir);
	FILE *f = fopen(path, "w");
	gx_t_dump(f, rt.maps, rt.nr);
	fclose(f);
	gx_devmaps__free(rt.dm);
	for (size_t i = 0; i < rt.nr; i++)
		gx_map__free(rt.maps[i]);
	cuModuleUnload(mod);
	return 0;
}

static int do_bench(const char *dir, int sms)
{
	CUmodule mod = link_module(dir, "kernels_bench.ptx", "bench.ptx");
	struct rt rt;
	setup_maps(dir, "bench_maps.txt", sms, &rt, mod);
	CUfunction fn;
	CK(cuModuleGetFunction(&fn, mod, "gx_bench"));
	int blocks = sms * 8, threads = 256, iters = 256;
	size_t n = (size_t)blocks * threads;
	CUdeviceptr data;
	CK(cuMemAlloc(&data, n * sizeof(float)));
	CK(cuMemsetD32(data, 0, n));
	CUevent e0, e1;
	CK(cuEventCreate(&e0, 0));
	CK(cuEventCreate(&e1, 0));
	double best[3];
	for (int mode = 0; mode < 3; mode++) {
		best[mode] = 1e30;
		for (int rep = 0; rep < 6; rep++) {
			void *args[] = { &data, &iters, &mode };
			CK(cuEventRecord(e0, NULL));
			CK(cuLaunchKernel(fn, blocks, 1, 1, threads, 1, 1, 0, NULL, args, NULL));
			CK(cuEventRecord(e1, NULL));
			CK(cuEventSynchronize(e1));
			float ms;
			CK(cuEventElapsedTime(&ms, e0, e1));
			if (rep && ms < best[mode]) /* rep 0 warms up */
				best[mode] = ms;
		}
	}
	gx_devmaps__flush(rt.dm);
	uint64_t total = 0;
	for (uint32_t k = 0; k < rt.maps[0]->l.max_entries; k++)
		total += *(uint64_t *)gx_map__shard_elem(rt.maps[0], 0, k);
	/* modes 1 and 2 each count every lane of every iteration, 5 timed + 1 warm-up runs */
	uint64_t expect = 2ull * 6 * n * (uint64_t)iters;
	double events = (double)n * iters;
	double c1 = best[1] - best[0], c2 = best[2] - best[0];
	double red = c2 > 0 ? 100.0 * (1.0 - c1 / c2) : 0;
	printf("| mode | kernel ms | hook cost ms | ns per lane-event |\n");
	printf("|---|---|---|---|\n");
	printf("| no hook | %.3f | - | - |\n", best[0]);
	printf("| warp-leader aggregated | %.3f | %.3f | %.4f |\n", best[1], c1, c1 * 1e6 / events);
	printf("| naive per-thread | %.3f | %.3f | %.4f |\n", best[2], c2, c2 * 1e6 / events);
	printf("bench: devbpf map update: aggregated vs naive per-thread: %.1f %% lower cost "
	       "(%d blocks x %d threads x %d iters)\n", red, blocks, threads, iters);
	printf("%s - both modes counted every lane (%llu of %llu)\n", total == expect ? "ok" : "not ok",
	       (unsigned long long)total, (unsigned long long)expect);
	printf("%s - aggregated map update costs >= 80%% less than naive (%.1f %%)\n",
	       red >= 80.0 ? "ok" : "not ok", red);
	cuMemFree(data);
	gx_devmaps__free(rt.dm);
	for (size_t i = 0; i < rt.nr; i++)
		gx_map__free(rt.maps[i]);
	cuModuleUnload(mod);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 3 || (strcmp(argv[1], "check") && strcmp(argv[1], "bench"))) {
		fprintf(stderr, "usage: devbpf_harness check|bench DIR\n");
		return 2;
	}
	CK(cuInit(0));
	CUdevice dev;
	CK(cuDeviceGet(&dev, 0));
	CUcontext ctx;
	CK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CK(cuCtxSetCurrent(ctx));
	int sms;
	CK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
	int ret = !strcmp(argv[1], "check") ? do_check(argv[2], dev, sms) : do_bench(argv[2], sms);
	cuDevicePrimaryCtxRelease(dev);
	return ret;
}
