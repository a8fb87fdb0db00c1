/* libFuzzer target for gx_bs_parse_log (blocksched/bs_parse.c): any bytes
 * give records or nothing; every record has a name, a copy and a parameter,
 * a static copy only beside a claiming one and never the same name; nothing
 * leaks. Build: make; run: tests/blocksched/test_bs_parse_fuzz.sh. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "blocksched/gx_blocksched.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	struct gx_bs_kernel *k;
	size_t n;
	if (gx_bs_parse_log(text, &k, &n) == 0)
		for (size_t i = 0; i < n; i++)
			if (!k[i].name || !k[i].copy || !k[i].nparams ||
			    (k[i].scopy && (k[i].static_only || !strcmp(k[i].scopy, k[i].copy))))
				abort();
	gx_bs_kernels_free(k, n);
	free(text);
	return 0;
}
