/* interp_shim.h — the JIT tests' bridge to the reference interpreter
 * (devbpf/interp.c): the same host helpers the native JIT calls (helper ids
 * of hosthelpers_internal.h) and the same map handles, so differential runs see the
 * same maps. */
#ifndef GX_TEST_INTERP_SHIM_H
#define GX_TEST_INTERP_SHIM_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "devbpf/gx_bpf.h"
#include "devbpf/hosthelpers_internal.h"

#define GX_IW(NAME)                                                                          \
	static uint64_t gx_iw_##NAME(void *u, uint64_t a, uint64_t b, uint64_t c, uint64_t d,   \
				     uint64_t e)                                               \
	{                                                                                    \
		(void)u;                                                                     \
		return gx_h_##NAME(a, b, c, d, e);                                           \
	}
GX_IW(map_lookup_elem)
GX_IW(map_update_elem)
GX_IW(map_delete_elem)
GX_IW(ktime_get_ns)
GX_IW(ringbuf_output)
GX_IW(globaltimer)
GX_IW(smid)
GX_IW(warpid)
GX_IW(laneid)
GX_IW(block_idx)
GX_IW(thread_idx)
GX_IW(mem_prefetch)
GX_IW(l2_prefetch)
GX_IW(printk)
GX_IW(block_dim)
GX_IW(grid_dim)

static const struct gx_bpf_helper_entry gx_test_helpers[] = {
	{ GX_HID_MAP_LOOKUP_ELEM, gx_iw_map_lookup_elem },
	{ GX_HID_MAP_UPDATE_ELEM, gx_iw_map_update_elem },
	{ GX_HID_MAP_DELETE_ELEM, gx_iw_map_delete_elem },
	{ GX_HID_KTIME_GET_NS, gx_iw_ktime_get_ns },
	{ GX_HID_RINGBUF_OUTPUT, gx_iw_ringbuf_output },
	{ GX_HID_GLOBALTIMER, gx_iw_globaltimer },
	{ GX_HID_SMID, gx_iw_smid },
	{ GX_HID_WARPID, gx_iw_warpid },
	{ GX_HID_LANEID, gx_iw_laneid },
	{ GX_HID_BLOCK_IDX, gx_iw_block_idx },
	{ GX_HID_THREAD_IDX, gx_iw_thread_idx },
	{ GX_HID_MEM_PREFETCH, gx_iw_mem_prefetch },
	{ GX_HID_L2_PREFETCH, gx_iw_l2_prefetch },
	{ GX_HID_PRINTK, gx_iw_printk },
	{ GX_HID_BLOCK_DIM, gx_iw_block_dim },
	{ GX_HID_GRID_DIM, gx_iw_grid_dim },
};

/* ld_imm64 map references: the host map (handle) or its storage + off. */
static uint64_t gx_test_map_addr(void *user, uint32_t idx, uint32_t off, bool value)
{
	const struct gx_jit_map *maps = user;
	const struct gx_devrt_map *m = (const struct gx_devrt_map *)maps[idx].host;
	if (!m)
		return 0;
	return value ? m->data + off : (uint64_t)(uintptr_t)m;
}

static inline int gx_test_interp_maps(const struct bpf_insn *insns, size_t n, void *ctx,
				      const struct gx_jit_map *maps, uint64_t *r0)
{
	struct gx_bpf_interp_opts o = { .sz = sizeof(o),
					.helpers = gx_test_helpers,
					.nr_helpers = sizeof(gx_test_helpers) / sizeof(gx_test_helpers[0]),
					.user = (void *)maps,
					.map_addr = maps ? gx_test_map_addr : NULL };
	return gx_bpf_interp_run(insns, n, (uint64_t)(uintptr_t)ctx, &o, r0);
}

static inline int gx_test_interp(const struct bpf_insn *insns, size_t n, void *ctx, uint64_t *r0)
{
	return gx_test_interp_maps(insns, n, ctx, NULL, r0);
}

#endif
