/* attach_app.c — a CUDA driver-API program for the attach test: loads a PTX
 * module through the shim, launches its kernel, then plays the GPU against
 * the fake driver (whose device memory is host memory): checks __gx_devrt,
 * writes threadhist-like counters into the device shard and a printk record
 * into the runtime ring, and waits for the shim's thread to drain it.
 * argv: PTX file, kernel name, mode ("policy" expects a devrt, "none" not). */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuext/gx_devrt.h"
#include "ptx-rewrite/gx_ptx.h"
#include "common/gx_util.h"
#include "tools/tools_common.h"

static int fail(const char *what, CUresult rc)
{
	printf("not ok - attach_app: %s (%d)\n", what, (int)rc);
	return 1;
}

int main(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	char *ptx;
	size_t n;
	if (gx_read_file(argv[1], &ptx, &n, 1 << 20))
		return 2;
	CUresult rc;
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn;
	if ((rc = cuInit(0)) || (rc = cuDeviceGet(&dev, 0)) || (rc = cuDevicePrimaryCtxRetain(&ctx, dev)) ||
	    (rc = cuCtxSetCurrent(ctx)))
		return fail("init", rc);
	if ((rc = cuModuleLoadData(&mod, ptx)))
		return fail("cuModuleLoadData", rc);
	if ((rc = cuModuleGetFunction(&fn, mod, argv[2])))
		return fail("cuModuleGetFunction", rc);
	void *args[4] = { 0 };
	if ((rc = cuLaunchKernel(fn, 4, 1, 1, 64, 1, 1, 0, NULL, args, NULL)))
		return fail("cuLaunchKernel", rc);
	const char *fake = getenv("GPUEXT_REAL_LIBCUDA");
	void *h = fake ? dlopen(fake, RTLD_NOW | RTLD_NOLOAD) : NULL;
	struct gx_devrt *(*get)(void *, unsigned) =
		h ? (struct gx_devrt * (*)(void *, unsigned)) dlsym(h, "fakedev_devrt") : NULL;
	struct gx_devrt *rt = get ? get(fn, 0) : NULL;
	if (strcmp(argv[3], "policy")) {
		printf("%s - attach_app: no __gx_devrt written without a policy\n", rt ? "not ok" : "ok");
		return 0;
	}
	if (!rt || rt->magic != GX_DEVRT_MAGIC || rt->version != GX_DEVRT_VERSION) {
		printf("not ok - attach_app: __gx_devrt written with a valid block\n");
		return 1;
	}
	printf("ok - attach_app: __gx_devrt written with a valid block (%u maps)\n", rt->nr_maps);
	/* Every attached policy's block: the first in __gx_devrt, the k-th in
	 * __gx_devrt__p<k> (several policies in one process). */
	struct gx_devrt *blk[5] = { rt };
	unsigned nb = 1;
	while (nb < 5 && (blk[nb] = get(fn, nb)))
		nb++;
	for (unsigned k = 1; k < nb; k++)
		printf("%s - attach_app: policy %u has its own runtime block (%u maps)\n",
		       blk[k]->magic == GX_DEVRT_MAGIC && memcmp(blk[k], rt, sizeof(*rt)) ? "ok" : "not ok", k,
		       blk[k]->nr_maps);
	for (unsigned k = 0; k < nb; k++) {
		struct gx_devrt *b = blk[k];
		/* "Device" work: map 0 of threadhist is the per-warp array; the last
		 * warp slot of the last SM gets 2 blocks, 4 warps, 128 threads. */
		if (b->nr_maps >= 1 && b->maps[0].type == GX_MAP_PERWARP_ARRAY && b->maps[0].nr_shards) {
			uint64_t shard = b->maps[0].nr_shards - 1;
			uint64_t *v = (uint64_t *)(uintptr_t)(b->maps[0].data +
							      shard * b->maps[0].max_entries * b->maps[0].value_stride);
			v[0] = 2, v[1] = 4, v[2] = 128;
		}
		/* One data record in every ring of the policy, as bpf_ringbuf_output
		 * would write it: 64 bytes whose first u64 is the kernel id (every
		 * tool's record starts with it), block 1 (kernelretsnoop's ctaid.x). */
		for (uint32_t i = 0; i < b->nr_maps; i++) {
			if (b->maps[i].type != GX_MAP_RINGBUF)
				continue;
			struct gx_ring *rr = (struct gx_ring *)(uintptr_t)b->maps[i].data;
			unsigned char *rec = (unsigned char *)(rr + 1);
			uint64_t payload[8] = { gx_kernel_id(argv[2]), 1000, 1 };
			memcpy(rec + sizeof(struct gx_rec_hdr), payload, sizeof(payload));
			uint32_t len = (uint32_t)(sizeof(struct gx_rec_hdr) + sizeof(payload));
			__atomic_store_n(&rr->head, GX_ROUND8(len), __ATOMIC_RELEASE);
			struct gx_rec_hdr hd = { len, GX_REC_DATA | GX_REC_COMMITTED };
			uint64_t word;
			memcpy(&word, &hd, 8);
			__atomic_store_n((uint64_t *)(void *)rec, word, __ATOMIC_RELEASE);
			printf("ok - attach_app: one record written into ring map %u of policy %u\n", i, k);
		}
	}
	/* ATTACH_APP_RECORDS=1: a launchlate record (32 bytes: kernel id, time,
	 * SM 3 | 1 block, launch id 77) in slot 77 of every plain array of 32-byte
	 * values, and a kernelretsnoop record in its table, as the device writes
	 * a record table (GDEV_F_RECORDS): the drainer takes it on its second
	 * look. */
	for (unsigned k = 0; getenv("ATTACH_APP_RECORDS") && k < nb; k++)
		for (uint32_t i = 0; i < blk[k]->nr_maps; i++) {
			const struct gx_devrt_map *dm = &blk[k]->maps[i];
			/* kernelretsnoop's table: block 1 of this 4-block launch (launch
			 * id 77) in its slot of the launch's region, SM 3, 64 threads,
			 * tagged with the table's cap */
			if (dm->type == GX_MAP_ARRAY && dm->value_stride == sizeof(struct gx_krs_rec) &&
			    dm->max_entries == GX_KRS_TABLE_SLOTS) {
				uint32_t s = gx_krs_table_slot(77, 1);
				uint64_t w[7] = { gx_kernel_id(argv[2]),
						  1000,
						  1,
						  3ull << 32,
						  1ull << 32 | 4,
						  64ull << 32 | (uint64_t)GX_KRS_TABLE_SHIFT << GX_KRS_SHIFT_BIT | 1,
						  77 };
				memcpy((void *)(uintptr_t)(dm->data + (uint64_t)s * dm->value_stride), w, sizeof(w));
				printf("ok - attach_app: one record written into slot %u of array map %u of policy %u\n",
				       s, i, k);
				continue;
			}
			if (dm->type != GX_MAP_ARRAY || dm->value_stride != 32 || dm->max_entries <= 77)
				continue;
			uint64_t w[4] = { gx_kernel_id(argv[2]), 1000, 1ull << 32 | 3, 77 };
			memcpy((void *)(uintptr_t)(dm->data + 77 * 32), w, sizeof(w));
			printf("ok - attach_app: one record written into slot 77 of array map %u of policy %u\n", i, k);
		}
	/* A printk record in the runtime ring. */
	struct gx_ring *r = (struct gx_ring *)(uintptr_t)rt->ring;
	if (r) {
		struct gx_rec_printk *p = (struct gx_rec_printk *)(r + 1);
		memset(p, 0, sizeof(*p));
		snprintf(p->fmt, sizeof(p->fmt), "hello from block %%u\n");
		p->args[0] = 7;
		p->smid = 5;
		__atomic_store_n(&r->head, GX_ROUND8(sizeof(*p)), __ATOMIC_RELEASE);
		struct gx_rec_hdr hd = { (gdev_u32)sizeof(*p), GX_REC_PRINTK | GX_REC_COMMITTED };
		uint64_t word;
		memcpy(&word, &hd, 8);
		__atomic_store_n((uint64_t *)(void *)&p->hdr, word, __ATOMIC_RELEASE);
	}
	usleep(300000); /* the drainer ticks every GPUEXT_FLUSH_MS */
	return 0;
}
