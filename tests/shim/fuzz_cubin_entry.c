/* libFuzzer target for gx_cubin_entry_parse (shim/cubin_entry.c): any bytes
 * are refused with a reason or give a cubin inside the buffer whose header
 * names the key asked for; a header the formatter writes parses back.
 * Run: tests/shim/test_cubin_entry_fuzz.sh. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shim/cubin_entry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char key[33] = "0123456789abcdef0123456789abcdef";
	size_t off = 0, n = 0;
	uint64_t h = 0;
	const char *why = NULL;
	int r = gx_cubin_entry_parse((const char *)data, size, key, &off, &n, &h, &why);
	if (r ? !why : (why || off > size || n != size - off || memcmp(data + off - 2, "\n\n", 2)))
		abort();
	/* Round trip: our own header in front of these bytes. */
	char *buf = malloc(GX_CUBIN_HDR_MAX + size + 1);
	if (!buf)
		return 0;
	int hl = gx_cubin_entry_header(buf, key, size, 0x1234);
	memcpy(buf + hl, data, size);
	if (gx_cubin_entry_parse(buf, (size_t)hl + size, key, &off, &n, &h, &why) || off != (size_t)hl || n != size ||
	    h != 0x1234)
		abort();
	free(buf);
	return 0;
}
