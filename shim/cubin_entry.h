/* cubin_entry.h — the file format of a cached cubin (cubin.c), apart from
 * any I/O so a fuzzer can drive the parser:
 *   gpuext-cubin 1\n
 *   key <32 hex>\n
 *   cubin <bytes> <16 hex: content hash>\n
 *   \n
 *   <the cubin>
 * The content hash is checked by the caller (gx_mcache_content_hash). */
#ifndef SHIM_CUBIN_ENTRY_H
#define SHIM_CUBIN_ENTRY_H

#include <stddef.h>
#include <stdint.h>

#define GX_CUBIN_EXT	 ".gxcubin"
#define GX_CUBIN_HDR_MAX 160

/* An entry's header into hdr (GX_CUBIN_HDR_MAX bytes); returns its length. */
int gx_cubin_entry_header(char *hdr, const char key[33], size_t size, uint64_t hash);
/* Parse buf[0..len): 0 with *off and *size the cubin's place and *hash the one
 * recorded; -EBADMSG with *why (a static string) when the header is
 * malformed, names another key, or the sizes do not add up. */
int gx_cubin_entry_parse(const char *buf, size_t len, const char key[33], size_t *off, size_t *size, uint64_t *hash,
			 const char **why);

#endif
