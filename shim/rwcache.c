/* rwcache.c — the in-process cache of rewritten PTX (see gx_rwcache.h).
 * Why: a process on several GPUs (or contexts) loads the same image in each;
 * the rewrite (parse, passes, emit) is the expensive part of a load and its
 * result depends only on the text, the arch and the options. Entries are a
 * FIFO list under one mutex; hits copy out (the table owns each module's
 * copy until unload). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "shim/gx_rwcache.h"
#include "shim/gx_shim.h"

struct ent {
	struct ent *next;
	struct gx_rwc_key k;
	unsigned nr_hooks;
	size_t len;
	char ptx[]; /* len + 1 bytes */
};

static struct ent *head, **tailp = &head;
static size_t nr, bytes, limit = (size_t)-1;
static unsigned long hits, misses;
static pthread_mutex_t rwc_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t fnv(uint64_t h, uint64_t mul, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * mul;
	return h;
}

void gx_rwc_key(struct gx_rwc_key *k, const void *ptx, size_t len, unsigned sm, const void *opts, size_t opts_len)
{
	memset(k, 0, sizeof(*k));
	/* Two different FNV-style hashes: a 128-bit fingerprint of the inputs. */
	k->h1 = fnv(fnv(0xcbf29ce484222325ull, 0x100000001b3ull, ptx, len), 0x100000001b3ull, opts, opts_len);
	k->h2 = fnv(fnv(0x84222325cbf29ce4ull, 0x9e3779b97f4a7c15ull | 1, ptx, len), 0x9e3779b97f4a7c15ull | 1,
		    opts, opts_len);
	k->len = len;
	k->sm = sm;
}

static bool same(const struct gx_rwc_key *a, const struct gx_rwc_key *b)
{
	return a->h1 == b->h1 && a->h2 == b->h2 && a->len == b->len && a->sm == b->sm;
}

/* Called with rwc_lock held. */
static void set_limit(void)
{
	if (limit != (size_t)-1)
		return;
	const char *e = getenv("GPUEXT_RWCACHE_MB");
	char *end;
	unsigned long mb = e && *e ? strtoul(e, &end, 10) : 256;
	if (e && *e && *end) {
		pr_warn("GPUEXT_RWCACHE_MB=%s: not a number of MiB; using 256", e);
		mb = 256;
	}
	limit = (size_t)mb << 20;
}

int gx_rwc_get(const struct gx_rwc_key *k, char **ptx, size_t *len, unsigned *nr_hooks)
{
	int ret = -ENOENT;
	pthread_mutex_lock(&rwc_lock);
	for (struct ent *e = head; e; e = e->next)
		if (same(&e->k, k)) {
			char *c = malloc(e->len + 1);
			if (c) {
				memcpy(c, e->ptx, e->len + 1);
				*ptx = c;
				*len = e->len;
				*nr_hooks = e->nr_hooks;
				ret = 0;
			}
			break;
		}
	if (ret)
		misses++;
	else
		hits++;
	pthread_mutex_unlock(&rwc_lock);
	return ret;
}

static void drop_head(void)
{
	struct ent *e = head;
	head = e->next;
	if (!head)
		tailp = &head;
	bytes -= e->len;
	nr--;
	free(e);
}

void gx_rwc_put(const struct gx_rwc_key *k, const char *ptx, size_t len, unsigned nr_hooks)
{
	pthread_mutex_lock(&rwc_lock);
	set_limit();
	bool have = false;
	for (struct ent *e = head; e && !have; e = e->next)
		have = same(&e->k, k);
	if (!have && len <= limit) {
		while (head && bytes + len > limit)
			drop_head();
		struct ent *e = malloc(sizeof(*e) + len + 1);
		if (e) {
			e->next = NULL;
			e->k = *k;
			e->nr_hooks = nr_hooks;
			e->len = len;
			memcpy(e->ptx, ptx, len);
			e->ptx[len] = 0;
			*tailp = e;
			tailp = &e->next;
			bytes += len;
			nr++;
		}
	}
	pthread_mutex_unlock(&rwc_lock);
}

void gx_rwc_stats(unsigned long *h, unsigned long *m, size_t *entries, size_t *b)
{
	pthread_mutex_lock(&rwc_lock);
	if (h)
		*h = hits;
	if (m)
		*m = misses;
	if (entries)
		*entries = nr;
	if (b)
		*b = bytes;
	pthread_mutex_unlock(&rwc_lock);
}

void gx_rwc_clear(void)
{
	pthread_mutex_lock(&rwc_lock);
	while (head)
		drop_head();
	pthread_mutex_unlock(&rwc_lock);
}

__attribute__((constructor)) static void rwc_init(void)
{
	gx_lock_register(&rwc_lock, GX_LOCK_TABLES + 1);
}
