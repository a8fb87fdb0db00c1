/* gx_tls.c — per-thread heap blocks (gx_tls.h). Each block starts with a
 * pointer to its gx_tls_heap, so the key's destructor knows what to run. */
#include "common/gx_tls.h"

#include <stdlib.h>

static pthread_mutex_t key_lock = PTHREAD_MUTEX_INITIALIZER;

struct blk_hdr {
	struct gx_tls_heap *h;
	max_align_t data[]; /* the caller's bytes, aligned for anything */
};

static void blk_free(void *p)
{
	struct blk_hdr *b = p;
	if (b->h->fini)
		b->h->fini(b->data);
	free(b);
}

void *gx_tls_heap_get(struct gx_tls_heap *h)
{
	if (!__atomic_load_n(&h->ready, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&key_lock);
		if (!h->ready && pthread_key_create(&h->key, blk_free) == 0)
			__atomic_store_n(&h->ready, 1, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&key_lock);
		if (!h->ready)
			return NULL;
	}
	struct blk_hdr *b = pthread_getspecific(h->key);
	if (!b) {
		b = calloc(1, sizeof(*b) + h->size);
		if (!b)
			return NULL;
		b->h = h;
		if (pthread_setspecific(h->key, b)) {
			free(b);
			return NULL;
		}
	}
	return b->data;
}
