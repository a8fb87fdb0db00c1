/* tables.c — per-context records of modules, libraries and functions (see
 * tables_internal.h for the handle policy). uthash tables under one mutex. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "common/gx_tls.h"
#include "shim/tables_internal.h"

struct gx_func {
	void *handle;
	void *mod;
	bool is_kernel;
	UT_hash_handle hh;
	char name[];
};

struct gx_mod {
	void *handle;
	bool is_library, rewritten;
	unsigned id;
	void *keep;
	char *src; /* PTX a passed-through cubin carries, for a live attach */
	void *side; /* the module or library of its persistent copies, or NULL */
	bool host_state; /* the application asked for a variable's address (modstate.c) */
	struct gx_ctx *owner;
	UT_hash_handle hh;
};

struct gx_ctx {
	CUcontext ctx;          /* NULL: context-independent (libraries, kernels) */
	int primary_refs;
	struct gx_mod *mods;
	struct gx_func *funcs;
	UT_hash_handle hh;
};

static struct gx_ctx *ctxs;
static pthread_mutex_t tab_lock = PTHREAD_MUTEX_INITIALIZER;
/* Bumped (under tab_lock) whenever a function entry goes or changes: what
 * a thread's cache of names (gx_tab_func_name) checks instead of locking. */
static unsigned long tab_gen = 1;

static void gen_bump(void)
{
	__atomic_store_n(&tab_gen, tab_gen + 1, __ATOMIC_RELEASE);
}

static struct gx_ctx *ctx_get(CUcontext c, bool create)
{
	struct gx_ctx *x;
	HASH_FIND_PTR(ctxs, &c, x);
	if (!x && create) {
		x = calloc(1, sizeof(*x));
		if (!x)
			return NULL;
		x->ctx = c;
		HASH_ADD_PTR(ctxs, ctx, x);
	}
	return x;
}

static void func_free_of_mod(struct gx_ctx *x, void *mod)
{
	struct gx_func *f, *t;
	HASH_ITER(hh, x->funcs, f, t) {
		if (f->mod == mod) {
			HASH_DEL(x->funcs, f);
			free(f);
			gen_bump();
		}
	}
}

static void mod_free(struct gx_ctx *x, struct gx_mod *m)
{
	struct gx_ctx *y, *t;
	/* A library's kernels live in the NULL table, the functions derived from
	 * them (cuKernelGetFunction, cuLibraryGetModule) in per-context ones. */
	HASH_ITER(hh, ctxs, y, t)
		func_free_of_mod(y, m->handle);
	HASH_DEL(x->mods, m);
	free(m->keep);
	free(m->src);
	free(m);
}

static void ctx_free(struct gx_ctx *x)
{
	struct gx_mod *m, *mt;
	HASH_ITER(hh, x->mods, m, mt) {
		HASH_DEL(x->mods, m);
		free(m->keep);
		free(m->src);
		free(m);
	}
	struct gx_func *f, *ft;
	HASH_ITER(hh, x->funcs, f, ft) {
		HASH_DEL(x->funcs, f);
		free(f);
	}
	gen_bump();
	HASH_DEL(ctxs, x);
	free(x);
}

int gx_tab_add_mod(CUcontext ctx, void *handle, bool is_library, bool rewritten, void *keep, unsigned id)
{
	if (!handle)
		return -EINVAL;
	pthread_mutex_lock(&tab_lock);
	int ret = -ENOMEM;
	struct gx_ctx *x = ctx_get(is_library ? NULL : ctx, true);
	if (x) {
		struct gx_mod *m;
		HASH_FIND_PTR(x->mods, &handle, m);
		if (m) { /* the driver reused a handle we missed the unload of */
			func_free_of_mod(x, handle);
			free(m->keep);
			free(m->src);
			m->src = NULL;
			m->side = NULL;
			m->host_state = false;
		} else if ((m = calloc(1, sizeof(*m)))) {
			m->handle = handle;
			m->owner = x;
			HASH_ADD_PTR(x->mods, handle, m);
		}
		if (m) {
			m->is_library = is_library;
			m->rewritten = rewritten;
			m->keep = keep;
			m->id = id;
			keep = NULL;
			ret = 0;
		}
	}
	pthread_mutex_unlock(&tab_lock);
	free(keep); /* only on failure: the caller's buffer is ours to free */
	return ret;
}

static struct gx_mod *mod_find(void *handle)
{
	struct gx_ctx *x, *t;
	HASH_ITER(hh, ctxs, x, t) {
		struct gx_mod *m;
		HASH_FIND_PTR(x->mods, &handle, m);
		if (m)
			return m;
	}
	return NULL;
}

int gx_tab_del_mod(void *handle, void **side)
{
	pthread_mutex_lock(&tab_lock);
	struct gx_mod *m = mod_find(handle);
	if (side)
		*side = m ? m->side : NULL;
	if (m)
		mod_free(m->owner, m);
	pthread_mutex_unlock(&tab_lock);
	return m ? 0 : -ENOENT;
}

void *gx_tab_side(void *handle, bool *is_library)
{
	pthread_mutex_lock(&tab_lock);
	struct gx_mod *m = mod_find(handle);
	void *side = m ? m->side : NULL;
	*is_library = m && m->is_library;
	pthread_mutex_unlock(&tab_lock);
	return side;
}

int gx_tab_set_side(void *handle, void *side)
{
	pthread_mutex_lock(&tab_lock);
	struct gx_mod *m = mod_find(handle);
	if (m)
		m->side = side;
	pthread_mutex_unlock(&tab_lock);
	return m ? 0 : -ENOENT;
}

int gx_tab_set_src(void *handle, char *src)
{
	pthread_mutex_lock(&tab_lock);
	struct gx_mod *m = mod_find(handle);
	if (m) {
		free(m->src);
		m->src = src;
		src = NULL;
	}
	pthread_mutex_unlock(&tab_lock);
	free(src);
	return m ? 0 : -ENOENT;
}

int gx_tab_mark_host_state(void *handle)
{
	pthread_mutex_lock(&tab_lock);
	struct gx_mod *m = mod_find(handle);
	if (m)
		m->host_state = true;
	pthread_mutex_unlock(&tab_lock);
	return m ? 0 : -ENOENT;
}

bool gx_tab_host_state(void *handle)
{
	pthread_mutex_lock(&tab_lock);
	struct gx_mod *m = mod_find(handle);
	bool taken = m && m->host_state;
	pthread_mutex_unlock(&tab_lock);
	return taken;
}

int gx_tab_mod_source(void *handle, struct gx_tab_mod *out)
{
	pthread_mutex_lock(&tab_lock);
	struct gx_mod *m = mod_find(handle);
	int ret = -ENOENT;
	if (m) {
		out->handle = handle;
		out->ctx = m->owner->ctx;
		out->is_library = m->is_library;
		out->id = m->id;
		const char *t = m->rewritten ? m->keep : m->src;
		/* a rewritten -rdc module keeps a cubin, not PTX */
		out->ptx = NULL;
		if (!t || !memcmp(t, "\177ELF", 4))
			ret = -ENODATA;
		else
			ret = (out->ptx = strdup(t)) ? 0 : -ENOMEM;
	}
	pthread_mutex_unlock(&tab_lock);
	return ret;
}

size_t gx_tab_mod_handles(void **out, size_t max)
{
	size_t n = 0;
	pthread_mutex_lock(&tab_lock);
	struct gx_ctx *x, *t;
	HASH_ITER(hh, ctxs, x, t) {
		struct gx_mod *m, *mt;
		HASH_ITER(hh, x->mods, m, mt) {
			if (n < max)
				out[n] = m->handle;
			n++;
		}
	}
	pthread_mutex_unlock(&tab_lock);
	return n;
}

int gx_tab_mod_info(void *handle, unsigned *id, bool *rewritten)
{
	pthread_mutex_lock(&tab_lock);
	struct gx_mod *m = mod_find(handle);
	if (m) {
		if (id)
			*id = m->id;
		if (rewritten)
			*rewritten = m->rewritten;
	}
	pthread_mutex_unlock(&tab_lock);
	return m ? 0 : -ENOENT;
}

int gx_tab_add_func(CUcontext ctx, void *handle, void *mod, bool is_kernel, const char *name)
{
	if (!handle || !name)
		return -EINVAL;
	pthread_mutex_lock(&tab_lock);
	int ret = -ENOMEM;
	struct gx_ctx *x = ctx_get(is_kernel ? NULL : ctx, true);
	if (x) {
		struct gx_func *f;
		HASH_FIND_PTR(x->funcs, &handle, f);
		if (f && strcmp(f->name, name)) {
			HASH_DEL(x->funcs, f);
			free(f);
			f = NULL;
			gen_bump();
		}
		if (!f && (f = malloc(sizeof(*f) + strlen(name) + 1))) {
			memset(f, 0, sizeof(*f));
			f->handle = handle;
			strcpy(f->name, name);
			HASH_ADD_PTR(x->funcs, handle, f);
		}
		if (f) {
			if (f->mod != mod || f->is_kernel != is_kernel)
				gen_bump();
			f->mod = mod;
			f->is_kernel = is_kernel;
			ret = 0;
		}
	}
	pthread_mutex_unlock(&tab_lock);
	return ret;
}

void gx_tab_forget_funcs(void *mod)
{
	pthread_mutex_lock(&tab_lock);
	struct gx_ctx *x, *xt;
	HASH_ITER(hh, ctxs, x, xt)
	{
		struct gx_func *f, *ft;
		HASH_ITER(hh, x->funcs, f, ft)
		{
			if (f->mod == mod) {
				HASH_DEL(x->funcs, f);
				free(f);
				gen_bump();
			}
		}
	}
	pthread_mutex_unlock(&tab_lock);
}

int gx_tab_func_info(CUcontext ctx, void *handle, char *buf, size_t len, bool *is_kernel, void **mod)
{
	int ret = -ENOENT;
	pthread_mutex_lock(&tab_lock);
	CUcontext keys[2] = { ctx, NULL };
	for (int i = ctx ? 0 : 1; i < 2; i++) {
		struct gx_ctx *x = ctx_get(keys[i], false);
		struct gx_func *f = NULL;
		if (x)
			HASH_FIND_PTR(x->funcs, &handle, f);
		if (f) {
			if (buf && len) {
				/* every launch under a tool copies its name: no snprintf */
				size_t n = strnlen(f->name, len - 1);
				memcpy(buf, f->name, n);
				buf[n] = 0;
			}
			if (is_kernel)
				*is_kernel = f->is_kernel;
			if (mod)
				*mod = f->mod;
			ret = 0;
			break;
		}
	}
	pthread_mutex_unlock(&tab_lock);
	return ret;
}

/* Each thread's last few launched functions: a launch under a tool names
 * its kernel every time, and the lookup (tab_lock, two hash finds, the
 * copy) was a third of what the shim adds to a launch (callgrind, the
 * attach test driver). Entries are valid while tab_gen is what it was when
 * they were filled: any function leaving the tables (an unload, a context
 * gone, a handle reused) empties every cache at once. */
#define NAME_CACHE 4
struct name_ent {
	CUcontext ctx;
	void *handle;
	unsigned long gen; /* 0: empty (tab_gen starts at 1) */
	bool is_kernel;
	char name[GX_TAB_NAME_MAX];
};
struct name_cache {
	unsigned next; /* round robin */
	struct name_ent e[NAME_CACHE];
};
/* The block's address in an initial-exec word (gx_tls.h), which spares
 * every launch the key lookup; cleared when the block goes at the thread's
 * exit, so a launch from a later destructor takes a fresh block. */
static __thread struct name_cache *name_c GX_TLS_IE;
static void name_cache_gone(void *blk)
{
	(void)blk;
	name_c = NULL;
}
static struct gx_tls_heap name_tls = GX_TLS_HEAP(sizeof(struct name_cache), name_cache_gone);

const char *gx_tab_func_name(CUcontext ctx, void *handle, bool *is_kernel)
{
	struct name_cache *c = name_c;
	if (!c && !(c = name_c = gx_tls_heap_get(&name_tls)))
		return NULL;
	unsigned long gen = __atomic_load_n(&tab_gen, __ATOMIC_ACQUIRE);
	for (unsigned i = 0; i < NAME_CACHE; i++) {
		struct name_ent *e = &c->e[i];
		if (e->gen == gen && e->handle == handle && e->ctx == ctx) {
			if (is_kernel)
				*is_kernel = e->is_kernel;
			return e->name;
		}
	}
	/* gen read before the lookup: a change meanwhile leaves this entry
	 * stale at once, never wrong */
	struct name_ent *e = &c->e[c->next++ % NAME_CACHE];
	e->gen = 0;
	bool k = false;
	if (gx_tab_func_info(ctx, handle, e->name, sizeof(e->name), &k, NULL))
		return NULL;
	e->ctx = ctx;
	e->handle = handle;
	e->is_kernel = k;
	e->gen = gen;
	if (is_kernel)
		*is_kernel = k;
	return e->name;
}

void gx_tab_ctx_gone(CUcontext ctx)
{
	if (!ctx)
		return;
	pthread_mutex_lock(&tab_lock);
	struct gx_ctx *x = ctx_get(ctx, false);
	if (x)
		ctx_free(x);
	pthread_mutex_unlock(&tab_lock);
}

int gx_tab_primary_ref(CUcontext ctx, int delta)
{
	pthread_mutex_lock(&tab_lock);
	int n = 0;
	struct gx_ctx *x = ctx_get(ctx, delta > 0);
	if (x) {
		x->primary_refs += delta;
		if (x->primary_refs < 0)
			x->primary_refs = 0;
		n = x->primary_refs;
	}
	pthread_mutex_unlock(&tab_lock);
	return n;
}

void gx_tab_counts(size_t *nr_ctx, size_t *nr_mods, size_t *nr_funcs)
{
	size_t c = 0, m = 0, f = 0;
	pthread_mutex_lock(&tab_lock);
	struct gx_ctx *x, *t;
	HASH_ITER(hh, ctxs, x, t) {
		c++;
		m += HASH_COUNT(x->mods);
		f += HASH_COUNT(x->funcs);
	}
	pthread_mutex_unlock(&tab_lock);
	if (nr_ctx)
		*nr_ctx = c;
	if (nr_mods)
		*nr_mods = m;
	if (nr_funcs)
		*nr_funcs = f;
}

void gx_tab_clear(void)
{
	pthread_mutex_lock(&tab_lock);
	struct gx_ctx *x, *t;
	HASH_ITER(hh, ctxs, x, t)
		ctx_free(x);
	pthread_mutex_unlock(&tab_lock);
}

__attribute__((constructor)) static void tables_init(void)
{
	gx_lock_register(&tab_lock, GX_LOCK_TABLES);
}

/* Debug/test entry point, exported: how many contexts, modules and
 * functions the shim currently tracks. */
GX_EXPORT int gx_shim_table_counts(size_t *nr_ctx, size_t *nr_mods, size_t *nr_funcs)
{
	gx_tab_counts(nr_ctx, nr_mods, nr_funcs);
	return 0;
}
