/* ptx_priv.h — internals shared by the parser, emitter and IR helpers (not
 * for passes: they use ptx_ir.h). */
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
