/* cubin_entry.c — header of a cached cubin (cubin_entry.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "shim/cubin_entry.h"

#define MAGIC "gpuext-cubin 1\n"

int gx_cubin_entry_header(char *hdr, const char key[33], size_t size, uint64_t hash)
{
	return snprintf(hdr, GX_CUBIN_HDR_MAX, MAGIC "key %.32s\ncubin %zu %016llx\n\n", key, size,
			(unsigned long long)hash);
}

int gx_cubin_entry_parse(const char *buf, size_t len, const char key[33], size_t *off, size_t *size, uint64_t *hash,
			 const char **why)
{
	/* A copy of the header, NUL-terminated, for sscanf: the cubin is binary. */
	char hdr[GX_CUBIN_HDR_MAX + 1], got[33];
	size_t hl = len < GX_CUBIN_HDR_MAX ? len : GX_CUBIN_HDR_MAX;
	memcpy(hdr, buf, hl);
	hdr[hl] = 0;
	char *sep = strstr(hdr, "\n\n");
	unsigned long long n = 0, h = 0;
	int used = 0;
	*why = "bad header";
	if (!sep || strncmp(hdr, MAGIC, sizeof(MAGIC) - 1))
		return -EBADMSG;
	sep[1] = 0;
	if (sscanf(hdr + sizeof(MAGIC) - 1, "key %32[0-9a-f]\ncubin %llu %16llx\n%n", got, &n, &h, &used) != 3 ||
	    hdr + sizeof(MAGIC) - 1 + used != sep + 1)
		return -EBADMSG;
	if (strlen(got) != 32 || strncmp(got, key, 32)) {
		*why = "key does not match the file name";
		return -EBADMSG;
	}
	size_t start = (size_t)(sep - hdr) + 2;
	if (n != len - start) {
		*why = "sizes do not match the header";
		return -EBADMSG;
	}
	*off = start, *size = (size_t)n, *hash = h;
	*why = NULL;
	return 0;
}
