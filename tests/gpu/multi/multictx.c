/* multictx.c — several contexts (and, when present, several devices) in one
 * process, through the driver API only, for tests/gpu/multi.sh. It prints a
 * deterministic result that must be identical without the shim, with it, and
 * with a tool attached:
 *   - per device: its primary context and one created context (device 0: two
 *     created), each on its own thread (one uses cuCtxPushCurrent/Pop);
 *   - the same PTX loaded with cuModuleLoadData in every context, and once as
 *     a library (cuLibraryLoadData, context-independent): each context
 *     launches the module's CUfunction, the CUkernel itself and the
 *     CUfunction cuKernelGetFunction gives in that context;
 *   - unloading the module of one context leaves the others working;
 *   - cuMemcpyPeer between contexts (same device or not), and with two
 *     devices that can, a kernel reading the peer device's memory.
 * Usage: multictx KERNEL.ptx OUT.bin. Prints "launched blocks=B warps=W
 * threads=T" (every hooked launch) for the tools' totals, then per context a
 * line, and "per-device blocks" lines for per-GPU tool checks. */
#define _GNU_SOURCE
#include <cuda.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../common/gx_cu_check.h" /* CU(): driver API calls */

/* Cleanup calls: a failure is printed (so runs with and without the shim
 * still compare) but does not end the program. */
#define CUW(x)                                                                                    \
	do {                                                                                      \
		CUresult r_ = (x);                                                                \
		if (r_ != CUDA_SUCCESS) {                                                         \
			const char *s_ = "?";                                                     \
			cuGetErrorName(r_, &s_);                                                  \
			printf("cleanup: %s: %s\n", #x, s_);                                      \
		}                                                                                 \
	} while (0)

#define N_ELEMS (1u << 16)
#define BLOCK 128u
#define MAX_CTX 24
#define MAX_DEV 16

struct cx {
	int idx, dev, primary, push;
	CUcontext ctx;
	CUmodule mod;
	CUfunction fmod, fkern;
	CUdeviceptr buf[3];
	uint32_t *host[3];
	unsigned grid;
};

static struct cx cxs[MAX_CTX];
static int ncx;
static CUkernel kern;
static char *ptx;
static unsigned long long blocks_dev[MAX_DEV];
static pthread_mutex_t lk = PTHREAD_MUTEX_INITIALIZER;

static uint64_t fnv(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static void count(int dev, unsigned grid)
{
	pthread_mutex_lock(&lk);
	blocks_dev[dev] += grid;
	pthread_mutex_unlock(&lk);
}

static void launch(struct cx *c, CUfunction f, int k, unsigned salt)
{
	CUdeviceptr in = 0;
	unsigned n = N_ELEMS;
	void *args[] = { &c->buf[k], &in, &n, &salt };
	CU(cuLaunchKernel(f, c->grid, 1, 1, BLOCK, 1, 1, 0, NULL, args, NULL));
	count(c->dev, c->grid);
}

static void *worker(void *arg)
{
	struct cx *c = arg;
	if (c->push)
		CU(cuCtxPushCurrent(c->ctx));
	else
		CU(cuCtxSetCurrent(c->ctx));
	CU(cuModuleLoadData(&c->mod, ptx));
	CU(cuModuleGetFunction(&c->fmod, c->mod, "mix"));
	CU(cuKernelGetFunction(&c->fkern, kern));
	for (int k = 0; k < 3; k++) {
		CU(cuMemAlloc(&c->buf[k], N_ELEMS * 4));
		c->host[k] = malloc(N_ELEMS * 4);
	}
	for (int rep = 0; rep < 3; rep++) {
		launch(c, c->fmod, 0, 0x1000u * (unsigned)c->idx + (unsigned)rep);
		launch(c, (CUfunction)kern, 1, 0x2000u * (unsigned)c->idx + (unsigned)rep);
		launch(c, c->fkern, 2, 0x3000u * (unsigned)c->idx + (unsigned)rep);
	}
	CU(cuCtxSynchronize());
	for (int k = 0; k < 3; k++)
		CU(cuMemcpyDtoH(c->host[k], c->buf[k], N_ELEMS * 4));
	if (c->push) {
		CUcontext popped;
		CU(cuCtxPopCurrent(&popped));
		if (popped != c->ctx) {
			fprintf(stderr, "cuCtxPopCurrent gave another context\n");
			exit(1);
		}
	}
	return NULL;
}

static char *read_file(const char *p)
{
	FILE *f = fopen(p, "rb");
	if (!f) {
		perror(p);
		exit(1);
	}
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *b = malloc((size_t)n + 1);
	if (fread(b, 1, (size_t)n, f) != (size_t)n) {
		perror(p);
		exit(1);
	}
	b[n] = 0;
	fclose(f);
	return b;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: multictx KERNEL.ptx OUT.bin\n");
		return 2;
	}
	ptx = read_file(argv[1]);
	FILE *out = fopen(argv[2], "wb");
	if (!out) {
		perror(argv[2]);
		return 1;
	}
	CU(cuInit(0));
	int ndev = 0;
	CU(cuDeviceGetCount(&ndev));
	if (ndev > MAX_DEV)
		ndev = MAX_DEV;
	printf("devices %d\n", ndev);
	for (int d = 0; d < ndev; d++) {
		CUdevice dv;
		CU(cuDeviceGet(&dv, d));
		int extra = d == 0 ? 2 : 1;
		for (int j = 0; j <= extra && ncx < MAX_CTX; j++) {
			struct cx *c = &cxs[ncx];
			c->idx = ncx++;
			c->dev = d;
			c->primary = j == 0;
			c->push = j == 2;
			c->grid = 40u + 8u * (unsigned)c->idx;
			if (c->primary)
				CU(cuDevicePrimaryCtxRetain(&c->ctx, dv));
			else
				CU(cuCtxCreate(&c->ctx, NULL, 0, dv));
		}
	}
	/* The library is loaded with no particular context in mind. */
	CU(cuCtxSetCurrent(cxs[0].ctx));
	CUlibrary lib;
	CU(cuLibraryLoadData(&lib, ptx, NULL, NULL, 0, NULL, NULL, 0));
	CU(cuLibraryGetKernel(&kern, lib, "mix"));
	CU(cuCtxSetCurrent(NULL));

	pthread_t th[MAX_CTX];
	for (int i = 0; i < ncx; i++)
		pthread_create(&th[i], NULL, worker, &cxs[i]);
	for (int i = 0; i < ncx; i++)
		pthread_join(th[i], NULL);

	for (int i = 0; i < ncx; i++) {
		struct cx *c = &cxs[i];
		printf("ctx %d dev %d %s: module %016llx kernel %016llx kernelfn %016llx\n", c->idx, c->dev,
		       c->primary ? "primary" : c->push ? "pushed " : "created", (unsigned long long)fnv(c->host[0], N_ELEMS * 4),
		       (unsigned long long)fnv(c->host[1], N_ELEMS * 4), (unsigned long long)fnv(c->host[2], N_ELEMS * 4));
		for (int k = 0; k < 3; k++)
			fwrite(c->host[k], 4, N_ELEMS, out);
	}
	/* Functions handed out in one context are that context's: a CUfunction
	 * of context A must differ from context B's for the same kernel. */
	int distinct = 1;
	for (int i = 0; i < ncx; i++)
		for (int j = i + 1; j < ncx; j++)
			if (cxs[i].fmod == cxs[j].fmod || cxs[i].fkern == cxs[j].fkern)
				distinct = 0;
	printf("per-context function handles distinct: %s\n", distinct ? "yes" : "NO");

	/* Unload context 0's module: the others keep working. */
	CU(cuCtxSetCurrent(cxs[0].ctx));
	CU(cuModuleUnload(cxs[0].mod));
	for (int i = 1; i < ncx; i++) {
		struct cx *c = &cxs[i];
		CU(cuCtxSetCurrent(c->ctx));
		launch(c, c->fmod, 0, 0x7777u + (unsigned)i);
		CU(cuCtxSynchronize());
		CU(cuMemcpyDtoH(c->host[0], c->buf[0], N_ELEMS * 4));
		printf("after unload in ctx 0: ctx %d module %016llx\n", i, (unsigned long long)fnv(c->host[0], N_ELEMS * 4));
		fwrite(c->host[0], 4, N_ELEMS, out);
	}

	/* cuMemcpyPeer: context 0 -> context 1 (same device), and to the first
	 * context of every other device. */
	uint64_t src = fnv(cxs[0].host[1], N_ELEMS * 4);
	for (int i = 1; i < ncx; i++) {
		struct cx *c = &cxs[i];
		if (i != 1 && c->dev == cxs[0].dev)
			continue;
		if (c->dev != cxs[0].dev && !c->primary)
			continue;
		CU(cuCtxSetCurrent(c->ctx));
		CU(cuMemcpyPeer(c->buf[2], c->ctx, cxs[0].buf[1], cxs[0].ctx, N_ELEMS * 4));
		CU(cuCtxSynchronize());
		uint32_t *h = malloc(N_ELEMS * 4);
		CU(cuMemcpyDtoH(h, c->buf[2], N_ELEMS * 4));
		printf("cuMemcpyPeer ctx 0 (dev %d) -> ctx %d (dev %d): %s\n", cxs[0].dev, i, c->dev,
		       fnv(h, N_ELEMS * 4) == src ? "identical" : "DIFFERENT");
		free(h);
	}
	/* Peer access: a kernel on device 1 reads device 0's buffer. */
	if (ndev >= 2) {
		int can = 0;
		struct cx *a = &cxs[0], *b = NULL;
		for (int i = 0; i < ncx && !b; i++)
			if (cxs[i].dev == 1 && cxs[i].primary)
				b = &cxs[i];
		CU(cuDeviceCanAccessPeer(&can, 1, 0));
		if (b && can) {
			CU(cuCtxSetCurrent(b->ctx));
			CUresult r = cuCtxEnablePeerAccess(a->ctx, 0);
			if (r != CUDA_SUCCESS && r != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
				CU(r);
			unsigned n = N_ELEMS, salt = 0x55u;
			void *args[] = { &b->buf[1], &a->buf[0], &n, &salt };
			CU(cuLaunchKernel(b->fmod, b->grid, 1, 1, BLOCK, 1, 1, 0, NULL, args, NULL));
			count(b->dev, b->grid);
			CU(cuCtxSynchronize());
			CU(cuMemcpyDtoH(b->host[1], b->buf[1], N_ELEMS * 4));
			printf("peer read dev 0 -> dev 1 kernel: %016llx\n", (unsigned long long)fnv(b->host[1], N_ELEMS * 4));
			fwrite(b->host[1], 4, N_ELEMS, out);
		} else {
			printf("peer read dev 0 -> dev 1 kernel: no peer access\n");
		}
	}
	unsigned long long blocks = 0;
	for (int d = 0; d < ndev; d++) {
		printf("per-device blocks dev %d: %llu\n", d, blocks_dev[d]);
		blocks += blocks_dev[d];
	}
	printf("launched blocks=%llu warps=%llu threads=%llu\n", blocks, blocks * (BLOCK / 32), blocks * BLOCK);
	fclose(out);

	for (int i = 0; i < ncx; i++) {
		struct cx *c = &cxs[i];
		CUW(cuCtxSetCurrent(c->ctx));
		for (int k = 0; k < 3; k++) {
			CUW(cuMemFree(c->buf[k]));
			free(c->host[k]);
		}
		if (i)
			CUW(cuModuleUnload(c->mod));
	}
	CUW(cuCtxSetCurrent(NULL));
	CUW(cuLibraryUnload(lib));
	for (int i = 0; i < ncx; i++) {
		if (cxs[i].primary) {
			CUdevice dv;
			CUW(cuDeviceGet(&dv, cxs[i].dev));
			CUW(cuDevicePrimaryCtxRelease(dv));
		} else {
			CUW(cuCtxDestroy(cxs[i].ctx));
		}
	}
	free(ptx);
	return 0;
}
