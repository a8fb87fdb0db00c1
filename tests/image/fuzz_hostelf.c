/* fuzz_hostelf — libFuzzer target for gx_elf_host_fatbins, then every
 * container found parsed and decompressed as `gpuext fatbin` does. */
#include <stdint.h>
#include <stdlib.h>

#include "image/gx_image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gx_host_fatbin *fb;
	size_t n;
	char err[256];
	if (gx_elf_host_fatbins(data, size, GX_HOSTELF_SCAN_DATA, &fb, &n, err, sizeof(err)))
		return 0;
	size_t budget = gx_image_budget(size); /* one for the whole file, as gpuext fatbin */
	for (size_t i = 0; i < n; i++) {
		struct gx_image im;
		if (gx_image_parse(fb[i].data, fb[i].size, &im, err, sizeof(err)))
			continue;
		for (size_t k = 0; k < im.nr_entries; k++) {
			void *d;
			size_t len;
			if (!gx_image_entry_data(&im.entries[k], &budget, &d, &len))
				free(d);
		}
		gx_image_free(&im);
	}
	free(fb);
	return 0;
}
