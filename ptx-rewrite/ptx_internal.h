/* ptx_internal.h — internals shared by the parser, emitter and IR helpers.
 * Passes use ptx_ir_internal.h; only handler.c and inline.c, which clone a handler's
 * body at every hook site, also take ptx_alloc_raw (it overwrites what it
 * gets). The arena itself is ptx_arena_internal.h. */
#ifndef PTX_PRIV_H
#define PTX_PRIV_H

#include <stddef.h>

#include "ptx-rewrite/ptx_arena_internal.h"
#include "ptx-rewrite/ptx_ir_internal.h"

/* Not zeroed. */
static inline void *ptx_alloc_raw(struct ptx_module *m, size_t size)
{
	return ptx_arena_alloc(m->arena, size, 8);
}

/* v in decimal without printf (hot: one per hook site, context word and
 * emitted offset): the digits end at buf + 24; returns where they start. */
static inline const char *ptx_fmt_i64(char buf[24], long long v)
{
	char *p = buf + 24;
	unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*--p = '-';
	return p;
}

#endif
