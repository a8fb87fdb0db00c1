/* ptx_arena.c — the arena every module allocates from (ptx_arena_internal.h): chunks
 * that grow, and per-thread spare chunks reused by the next module. Apart
 * from ptx_ir.c so that the allocator knows nothing of modules. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ptx-rewrite/ptx_arena_internal.h"

struct ptx_arena *ptx_arena_new(size_t hint)
{
	struct ptx_arena *a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->next_cap = hint < 64 * 1024 ? 64 * 1024 : hint;
	return a;
}

/* Spare chunks per thread: modules are parsed one after another (the shim
 * loads many; the CLI and tests parse twice), and reusing the last module's
 * chunks saves their page faults, which otherwise cost as much as parsing
 * (and more than that for a rewrite that inserts many hook sites: its IR is
 * several times the input's). Bounded: at most SPARE_MAX bytes in at most
 * SPARE_N chunks kept per thread. */
#define SPARE_MAX (64u << 20)
#define SPARE_N	  8
static __thread struct ptx_chunk *spare[SPARE_N];
static __thread size_t spare_bytes;
/* A thread that exits frees its spares (threads of an application that load
 * modules come and go). */
static pthread_key_t spare_key;
static pthread_once_t spare_once = PTHREAD_ONCE_INIT;

static void spare_exit(void *p)
{
	(void)p;
	for (int i = 0; i < SPARE_N; i++) {
		free(spare[i]);
		spare[i] = NULL;
	}
	spare_bytes = 0;
}

static void spare_key_init(void)
{
	if (pthread_key_create(&spare_key, spare_exit))
		spare_key = (pthread_key_t)-1;
}

static struct ptx_chunk *chunk_get(size_t cap)
{
	int best = -1;
	for (int i = 0; i < SPARE_N; i++)
		if (spare[i] && spare[i]->cap >= cap && (best < 0 || spare[i]->cap < spare[best]->cap))
			best = i;
	if (best >= 0) {
		struct ptx_chunk *c = spare[best];
		spare[best] = NULL;
		spare_bytes -= c->cap;
		return c; /* keeps its (larger) capacity */
	}
	struct ptx_chunk *c = malloc(sizeof(*c) + cap);
	if (c)
		c->cap = cap;
	return c;
}

static void chunk_put(struct ptx_chunk *c)
{
	int slot = -1;
	for (int i = 0; i < SPARE_N && slot < 0; i++)
		if (!spare[i])
			slot = i;
	if (slot < 0 || spare_bytes + c->cap > SPARE_MAX) {
		free(c);
		return;
	}
	pthread_once(&spare_once, spare_key_init);
	if (spare_key == (pthread_key_t)-1 || pthread_setspecific(spare_key, spare)) {
		free(c); /* no destructor: keep nothing */
		return;
	}
	spare[slot] = c;
	spare_bytes += c->cap;
}

void ptx_arena_free(struct ptx_arena *a)
{
	if (!a)
		return;
	for (struct ptx_chunk *c = a->cur, *n; c; c = n) {
		n = c->next;
		chunk_put(c);
	}
	free(a);
}

/* align: 8 for structures, 1 for strings (they need no alignment and are
 * the most numerous allocations). The fast path is ptx_arena_alloc() in
 * ptx_arena_internal.h; this is its slow path (a new chunk). */
void *ptx_arena_alloc_slow(struct ptx_arena *a, size_t size, size_t align)
{
	struct ptx_chunk *c = a->cur;
	size_t off = c ? (c->used + align - 1) & ~(align - 1) : 0;
	if (!c || off > c->cap || c->cap - off < size) {
		size_t cap = a->next_cap;
		if (cap < size)
			cap = size;
		c = chunk_get(cap);
		if (!c)
			return NULL;
		c->used = 0;
		c->next = a->cur;
		a->cur = c;
		if (a->next_cap < (64u << 20))
			a->next_cap *= 2;
		off = 0;
	}
	c->used = off + size;
	return c->data + off;
}
