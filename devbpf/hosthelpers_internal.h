/* hosthelpers_internal.h — the helper table and the host side of the helpers.
 *
 * One table maps helper ids (GDEV_HELPER_* of gdev_helpers.h) to the symbol
 * both builds of helpers/gx_helpers.c define (gx_h_NAME): the PTX JIT calls
 * the device bitcode's definition and inlines it, the native JIT and the
 * interpreter call the host one through `host`. On the host the warp's
 * identity (smid, warp, lane, block/thread indices) is what the caller put in
 * the thread-local gx_host_env, and printk/prefetch records go to
 * gx_host_ring (NULL: those helpers return -ENOENT). */
#ifndef DEVBPF_HOSTHELPERS_INTERNAL_H
#define DEVBPF_HOSTHELPERS_INTERNAL_H

#include <stdint.h>
#include <time.h>

#include "gpuext/gx_devrt.h"

/* Helper ids: the numbers of gdev_helpers.h (kernel numbers for the standard
 * helpers; gdev ones from 0x1000). */
#define GX_HID_MAP_LOOKUP_ELEM 1
#define GX_HID_MAP_UPDATE_ELEM 2
#define GX_HID_MAP_DELETE_ELEM 3
#define GX_HID_KTIME_GET_NS 5
#define GX_HID_RINGBUF_OUTPUT 130
#define GX_HID_LOOP 181 /* bpf_loop: expanded inline by the JIT, no symbol */
#define GX_HID_GLOBALTIMER 0x1000
#define GX_HID_SMID 0x1001
#define GX_HID_WARPID 0x1002
#define GX_HID_LANEID 0x1003
#define GX_HID_BLOCK_IDX 0x1004
#define GX_HID_THREAD_IDX 0x1005
#define GX_HID_MEM_PREFETCH 0x1006
#define GX_HID_L2_PREFETCH 0x1007
#define GX_HID_PRINTK 0x1008
#define GX_HID_BLOCK_DIM 0x1009
#define GX_HID_GRID_DIM 0x100a

struct gx_host_env {
	uint32_t smid, warpid, laneid;
	uint32_t block_idx[3], thread_idx[3], block_dim[3], grid_dim[3];
};
extern _Thread_local struct gx_host_env gx_host_env;
extern struct gx_ring *gx_host_ring; /* runtime ring of the host side */
extern unsigned gx_host_flags;       /* GX_DEVRT_F_* */

typedef unsigned long long (*gx_helper_fn)(unsigned long long, unsigned long long,
					   unsigned long long, unsigned long long,
					   unsigned long long);

struct gx_helper_desc {
	unsigned id;
	const char *name;   /* "map_lookup_elem" */
	const char *symbol; /* "gx_h_map_lookup_elem" (both builds) */
	gx_helper_fn host;  /* NULL for helpers the JIT expands itself */
	unsigned nr_args;
};

/* Symbols the JIT may call besides the table's (type-specialized map
 * helpers "gx_h_map_lookup_elem__array" ...): name -> host function. */
struct gx_helper_sym {
	const char *symbol;
	gx_helper_fn host;
};
const struct gx_helper_sym *gx_helper_extra_syms(unsigned *nr);

/* NULL if the id is unknown. */
const struct gx_helper_desc *gx_helper_find(unsigned id);
/* The whole table, for listings; *nr gets its length. */
const struct gx_helper_desc *gx_helper_table(unsigned *nr);

#define GX_HELPER_DECL(name)                                                           \
	unsigned long long gx_h_##name(unsigned long long, unsigned long long, unsigned long long, \
				       unsigned long long, unsigned long long)
GX_HELPER_DECL(map_lookup_elem);
GX_HELPER_DECL(map_update_elem);
GX_HELPER_DECL(map_delete_elem);
GX_HELPER_DECL(ktime_get_ns);
GX_HELPER_DECL(ringbuf_output);
GX_HELPER_DECL(globaltimer);
GX_HELPER_DECL(smid);
GX_HELPER_DECL(warpid);
GX_HELPER_DECL(laneid);
GX_HELPER_DECL(block_idx);
GX_HELPER_DECL(thread_idx);
GX_HELPER_DECL(mem_prefetch);
GX_HELPER_DECL(l2_prefetch);
GX_HELPER_DECL(printk);
GX_HELPER_DECL(block_dim);
GX_HELPER_DECL(grid_dim);
#define GX_HELPER_DECL_TYPED(T)               \
	GX_HELPER_DECL(map_lookup_elem__##T); \
	GX_HELPER_DECL(map_update_elem__##T)
GX_HELPER_DECL_TYPED(array);
GX_HELPER_DECL_TYPED(hash);
GX_HELPER_DECL_TYPED(persm);
GX_HELPER_DECL_TYPED(perwarp);
/* array lookups with the geometry as immediates (GX_JIT_FOLD) */
GX_HELPER_DECL(map_lookup_elem__array_k);
GX_HELPER_DECL(map_lookup_elem__persm_k);
GX_HELPER_DECL(map_lookup_elem__perwarp_k);

#endif
