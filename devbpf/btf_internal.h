/* btf_internal.h — the BTF reader's state (btf.c), shared by the loader and
 * the object's life cycle; the getters are public (gx_btf__* in gx_bpf.h). */
#ifndef GX_BTF_INTERNAL_H
#define GX_BTF_INTERNAL_H

#include <linux/btf.h>
#include <stddef.h>
#include <stdint.h>

#include "devbpf/gx_bpf.h"

struct gx_btf {
	uint8_t *raw;	      /* our copy of the .BTF section */
	const uint8_t *types; /* into raw */
	size_t types_len;
	const char *strs; /* into raw */
	size_t str_len;
	uint32_t *off;	 /* type id -> offset in types */
	uint32_t ntypes; /* ids 0 (void) .. ntypes - 1 */
};

/* Parse a copy of len bytes of .BTF: 0, -EINVAL (malformed), -ENOMEM. */
int gx_btf_parse(const void *data, size_t len, struct gx_btf **out);
void gx_btf_free(struct gx_btf *btf);
/* Variable i of DATASEC sec: its name and type. 0, -ENOENT past the end,
 * -EINVAL if the entry is not a VAR. */
int gx_btf_datasec_var(const struct gx_btf *btf, uint32_t sec, uint32_t i, const char **name, uint32_t *type);

#endif
