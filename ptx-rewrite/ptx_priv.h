/* ptx_priv.h — internals shared by the parser, emitter and IR helpers.
 * Passes use ptx_ir.h; only pass_inline.c, which clones a handler's body at
 * every hook site, also takes ptx_alloc_raw (it overwrites what it gets). */
#ifndef PTX_PRIV_H
#define PTX_PRIV_H

#include <stddef.h>

struct ptx_arena;
struct ptx_module;

struct ptx_arena *ptx_arena_new(size_t hint);
void ptx_arena_free(struct ptx_arena *a);
/* Not zeroed. */
void *ptx_alloc_raw(struct ptx_module *m, size_t size);

#endif
