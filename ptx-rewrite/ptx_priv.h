/* ptx_priv.h — internals shared by the parser, emitter and IR helpers.
 * Passes use ptx_ir.h; only pass_inline.c, which clones a handler's body at
 * every hook site, also takes ptx_alloc_raw (it overwrites what it gets). */
#ifndef PTX_PRIV_H
#define PTX_PRIV_H

#include <stddef.h>

#include "ptx-rewrite/ptx_ir.h"

struct ptx_chunk {
	struct ptx_chunk *next;
	size_t used, cap;
	_Alignas(16) char data[];
};

struct ptx_arena {
	struct ptx_chunk *cur;
	size_t next_cap;
};

struct ptx_arena *ptx_arena_new(size_t hint);
void ptx_arena_free(struct ptx_arena *a);
void *ptx_arena_alloc_slow(struct ptx_arena *a, size_t size, size_t align);

/* Inline: the parser and the per-site cloning allocate millions of small
 * objects, and a call per allocation showed in profiles. */
static inline void *ptx_arena_alloc(struct ptx_arena *a, size_t size, size_t align)
{
	struct ptx_chunk *c = a->cur;
	if (__builtin_expect(c != NULL, 1)) {
		size_t off = (c->used + align - 1) & ~(align - 1);
		if (__builtin_expect(off <= c->cap && c->cap - off >= size, 1)) {
			c->used = off + size;
			return c->data + off;
		}
	}
	return ptx_arena_alloc_slow(a, size, align);
}

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
