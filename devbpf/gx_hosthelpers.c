/* gx_hosthelpers.c — the id -> helper table shared by both JIT targets and
 * the interpreter (the definitions are in helpers/gx_helpers.c). */
#include <stddef.h>

#include "devbpf/hosthelpers_internal.h"
#include "common/gx_util.h"

#define H(ID, NAME, N) { ID, #NAME, "gx_h_" #NAME, gx_h_##NAME, N }
static const struct gx_helper_desc helpers[] = {
	H(GX_HID_MAP_LOOKUP_ELEM, map_lookup_elem, 2),
	H(GX_HID_MAP_UPDATE_ELEM, map_update_elem, 4),
	H(GX_HID_MAP_DELETE_ELEM, map_delete_elem, 2),
	H(GX_HID_KTIME_GET_NS, ktime_get_ns, 0),
	H(GX_HID_RINGBUF_OUTPUT, ringbuf_output, 4),
	{ GX_HID_LOOP, "loop", NULL, NULL, 4 },
	H(GX_HID_GLOBALTIMER, globaltimer, 0),
	H(GX_HID_SMID, smid, 0),
	H(GX_HID_WARPID, warpid, 0),
	H(GX_HID_LANEID, laneid, 0),
	H(GX_HID_BLOCK_IDX, block_idx, 1),
	H(GX_HID_THREAD_IDX, thread_idx, 1),
	H(GX_HID_MEM_PREFETCH, mem_prefetch, 2),
	H(GX_HID_L2_PREFETCH, l2_prefetch, 1),
	H(GX_HID_PRINTK, printk, 5),
	H(GX_HID_BLOCK_DIM, block_dim, 1),
	H(GX_HID_GRID_DIM, grid_dim, 1),
};

GX_EXPORT const struct gx_helper_desc *gx_helper_find(unsigned id)
{
	for (size_t i = 0; i < GX_ARRAY_SIZE(helpers); i++)
		if (helpers[i].id == id)
			return &helpers[i];
	return NULL;
}

GX_EXPORT const struct gx_helper_desc *gx_helper_table(unsigned *nr)
{
	*nr = GX_ARRAY_SIZE(helpers);
	return helpers;
}

#define S(NAME) { "gx_h_" #NAME, gx_h_##NAME }
static const struct gx_helper_sym extra[] = {
	S(map_lookup_elem__array), S(map_update_elem__array),
	S(map_lookup_elem__hash), S(map_update_elem__hash),
	S(map_lookup_elem__persm), S(map_update_elem__persm),
	S(map_lookup_elem__perwarp), S(map_update_elem__perwarp),
	S(map_lookup_elem__array_k), S(map_lookup_elem__persm_k),
	S(map_lookup_elem__perwarp_k),
};

GX_EXPORT const struct gx_helper_sym *gx_helper_extra_syms(unsigned *nr)
{
	*nr = GX_ARRAY_SIZE(extra);
	return extra;
}
