/* hx_btf.h — minimal BTF reader of the executor (hx_btf.c says why). */
#ifndef HX_BTF_H
#define HX_BTF_H
#include <linux/btf.h>
#include <stddef.h>
#include <stdint.h>

struct hx_btf {
	const uint8_t *types;
	size_t types_len;
	const char *strs;
	size_t str_len;
	uint32_t *off; /* type id → offset in types */
	uint32_t ntypes;
};
struct hx_btf_map {
	uint32_t type, key_size, value_size, max_entries, map_flags;
};

/* The buffer must outlive the hx_btf. 0, -EINVAL, -ENOMEM. */
int hx_btf_parse(struct hx_btf *b, const void *data, size_t len);
void hx_btf_free(struct hx_btf *b);
const struct btf_type *hx_btf_type(const struct hx_btf *b, uint32_t id);
const char *hx_btf_name(const struct hx_btf *b, uint32_t off);
uint32_t hx_btf_skip_mods(const struct hx_btf *b, uint32_t id);
int64_t hx_btf_size(const struct hx_btf *b, uint32_t id);
uint32_t hx_btf_find_datasec(const struct hx_btf *b, const char *name);
int hx_btf_datasec_var(const struct hx_btf *b, uint32_t sec, int i, const char **name, uint32_t *type,
		       uint32_t *offset, uint32_t *size);
int hx_btf_map_def(const struct hx_btf *b, uint32_t type, struct hx_btf_map *m);
#endif
