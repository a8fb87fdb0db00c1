/* ptx_arena_internal.h — the bump allocator behind every module (ptx_arena.c): a
 * pass never frees, the module's arena goes at once. Internal: ptx_ir.c,
 * the parser and the per-site cloning (through ptx_internal.h). */
#ifndef PTX_ARENA_H
#define PTX_ARENA_H

#include <stddef.h>

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

#endif
