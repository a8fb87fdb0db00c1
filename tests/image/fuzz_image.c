/* fuzz_image — libFuzzer target for gx_image_parse_opts + gx_image_entry_data
 * + gx_image_pick_ptx/_sass + gx_image_cubin_ptx and gx_image_cubin_regs (on the input itself; the PTX also on
 * every decompressed cubin). Pointers inside the input (wrapper data, prelinked
 * lists) resolve to offsets in the input itself: address 0x10000 + k is byte
 * k, so wrapper code is fuzzed without ever following a stray pointer. */
#include <stdint.h>
#include <stdlib.h>

#include "image/gx_image.h"

#define FUZZ_BASE 0x10000u

struct span {
	const uint8_t *p;
	size_t n;
};

static const void *resolve(void *ctx, uint64_t addr, size_t *avail)
{
	const struct span *s = ctx;
	if (addr < FUZZ_BASE || addr - FUZZ_BASE >= s->n)
		return NULL;
	*avail = s->n - (addr - FUZZ_BASE);
	return s->p + (addr - FUZZ_BASE);
}

static int count_regs(void *arg, const char *kernel, unsigned regs)
{
	(void)regs;
	*(int *)arg += kernel[0] != 0;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct span s = { data, size };
	struct gx_image_opts o = { .sz = sizeof(o), .resolve = resolve, .ctx = &s };
	struct gx_image im;
	char err[256], *ptx;
	size_t plen;
	if (!gx_image_cubin_ptx(data, size, &ptx, &plen))
		free(ptx);
	int nregs = 0;
	gx_image_cubin_regs(data, size, count_regs, &nregs);
	if (gx_image_parse_opts(data, size, &o, &im, err, sizeof(err)))
		return 0;
	size_t budget = gx_image_budget(size);
	for (size_t i = 0; i < im.nr_entries; i++) {
		void *d;
		size_t n;
		if (!gx_image_entry_data(&im.entries[i], &budget, &d, &n)) {
			if (im.entries[i].kind == GX_ENTRY_ELF && !gx_image_cubin_ptx(d, n, &ptx, &plen))
				free(ptx);
			free(d);
		}
	}
	int sass;
	gx_image_pick_ptx(&im, 90, &sass);
	gx_image_pick_sass(&im, 90);
	gx_image_free(&im);
	return 0;
}
