/* link.c — JIT linking (cuLink*). PTX inputs are rewritten before they reach
 * the linker; the cubin cuLinkComplete produces is remembered, so its later
 * cuModuleLoadData is reported as built from rewritten PTX instead of as a
 * SASS-only image. Buffers we hand the linker live until cuLinkDestroy. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "shim/link_internal.h"
#include "shim/load_internal.h"

struct keep {
	struct keep *next;
	char data[];
};

struct link {
	CUlinkState state;
	struct keep *kept;
	unsigned nr_rewritten, nr_passed;
	const void *cubin;
	UT_hash_handle hh;
};

static struct link *links;
static pthread_mutex_t link_lock = PTHREAD_MUTEX_INITIALIZER;

static struct link *link_get(CUlinkState s)
{
	struct link *l;
	HASH_FIND_PTR(links, &s, l);
	if (!l && (l = calloc(1, sizeof(*l)))) {
		l->state = s;
		HASH_ADD_PTR(links, state, l);
	}
	return l;
}

static void link_note(CUlinkState s, char *keep, bool rewritten)
{
	pthread_mutex_lock(&link_lock);
	struct link *l = link_get(s);
	if (l) {
		if (rewritten)
			l->nr_rewritten++;
		else
			l->nr_passed++;
		if (keep) {
			struct keep *k = (struct keep *)(keep - offsetof(struct keep, data));
			k->next = l->kept;
			l->kept = k;
			keep = NULL;
		}
	}
	pthread_mutex_unlock(&link_lock);
	if (keep)
		free(keep - offsetof(struct keep, data));
}

/* A copy of the rewritten PTX inside a `struct keep`. */
static char *keep_copy(const struct gx_prep *p)
{
	struct keep *k = malloc(sizeof(*k) + p->len + 1);
	if (!k)
		return NULL;
	memcpy(k->data, p->ptx, p->len + 1);
	return k->data;
}

static CUresult add_ptx(const char *api, CUlinkState state, const char *ptx, size_t size, const char *name,
			unsigned n, CUjit_option *o, void **v, bool *done)
{
	struct gx_prep p = { 0 };
	*done = false;
	size_t len = ptx ? strnlen(ptx, size ? size : SIZE_MAX) : 0;
	if (!gx_prepare_ptx(api, ptx, len, &p)) {
		gx_log_passed(api, &p);
		return CUDA_SUCCESS;
	}
	char *k = keep_copy(&p);
	if (!k) {
		gx_prep_free(&p);
		return CUDA_SUCCESS;
	}
	CUresult rc = REAL(cuLinkAddData_v2)(state, CU_JIT_INPUT_PTX, k, p.len + 1, name, n, o, v);
	if (rc == CUDA_SUCCESS) {
		gx_log_reloaded(api, &p);
		link_note(state, k, true);
		*done = true;
	} else {
		gx_log_fallback(api, &p, rc);
		free(k - offsetof(struct keep, data));
	}
	gx_prep_free(&p);
	return rc;
}

static CUresult link_add_data(const char *api, CUlinkState state, CUjitInputType type, void *data, size_t size,
			      const char *name, unsigned n, CUjit_option *o, void **v, bool legacy)
{
	if (type == CU_JIT_INPUT_PTX && data) {
		bool done;
		add_ptx(api, state, data, size, name, n, o, v, &done);
		if (done)
			return CUDA_SUCCESS;
	}
	CUresult rc = legacy ? REAL(cuLinkAddData)(state, type, data, size, name, n, o, v)
			     : REAL(cuLinkAddData_v2)(state, type, data, size, name, n, o, v);
	if (rc == CUDA_SUCCESS)
		link_note(state, NULL, false);
	return rc;
}

GX_EXPORT CUresult cuLinkAddData_v2(CUlinkState state, CUjitInputType type, void *data, size_t size,
				    const char *name, unsigned int numOptions, CUjit_option *options,
				    void **optionValues)
{
	return link_add_data("cuLinkAddData", state, type, data, size, name, numOptions, options, optionValues, false);
}

GX_EXPORT CUresult cuLinkAddData(CUlinkState state, CUjitInputType type, void *data, size_t size, const char *name,
				 unsigned int numOptions, CUjit_option *options, void **optionValues)
{
	return link_add_data("cuLinkAddData", state, type, data, size, name, numOptions, options, optionValues, true);
}

static CUresult link_add_file(CUlinkState state, CUjitInputType type, const char *path, unsigned n,
			      CUjit_option *o, void **v, bool legacy)
{
	if (type == CU_JIT_INPUT_PTX && path) {
		char *buf = NULL;
		size_t len = 0;
		if (gx_read_file(path, &buf, &len, 0) == 0) {
			bool done;
			add_ptx("cuLinkAddFile", state, buf, len, path, n, o, v, &done);
			free(buf);
			if (done)
				return CUDA_SUCCESS;
		}
	}
	CUresult rc = legacy ? REAL(cuLinkAddFile)(state, type, path, n, o, v)
			     : REAL(cuLinkAddFile_v2)(state, type, path, n, o, v);
	if (rc == CUDA_SUCCESS)
		link_note(state, NULL, false);
	return rc;
}

GX_EXPORT CUresult cuLinkAddFile_v2(CUlinkState state, CUjitInputType type, const char *path,
				    unsigned int numOptions, CUjit_option *options, void **optionValues)
{
	return link_add_file(state, type, path, numOptions, options, optionValues, false);
}

GX_EXPORT CUresult cuLinkAddFile(CUlinkState state, CUjitInputType type, const char *path, unsigned int numOptions,
				 CUjit_option *options, void **optionValues)
{
	return link_add_file(state, type, path, numOptions, options, optionValues, true);
}

GX_EXPORT CUresult cuLinkComplete(CUlinkState state, void **cubinOut, size_t *sizeOut)
{
	CUresult rc = REAL(cuLinkComplete)(state, cubinOut, sizeOut);
	if (rc == CUDA_SUCCESS && cubinOut) {
		pthread_mutex_lock(&link_lock);
		struct link *l = link_get(state);
		if (l)
			l->cubin = *cubinOut;
		pthread_mutex_unlock(&link_lock);
	}
	return rc;
}

static void link_free(struct link *l)
{
	while (l->kept) {
		struct keep *k = l->kept;
		l->kept = k->next;
		free(k);
	}
	HASH_DEL(links, l);
	free(l);
}

GX_EXPORT CUresult cuLinkDestroy(CUlinkState state)
{
	CUresult rc = REAL(cuLinkDestroy)(state);
	pthread_mutex_lock(&link_lock);
	struct link *l;
	HASH_FIND_PTR(links, &state, l);
	if (l)
		link_free(l);
	pthread_mutex_unlock(&link_lock);
	return rc;
}

int gx_link_cubin_info(const void *image, unsigned *nr_rewritten, unsigned *nr_passed)
{
	int ret = -ENOENT;
	if (!image)
		return ret;
	pthread_mutex_lock(&link_lock);
	struct link *l, *t;
	HASH_ITER(hh, links, l, t) {
		if (l->cubin == image) {
			*nr_rewritten = l->nr_rewritten;
			*nr_passed = l->nr_passed;
			ret = 0;
			break;
		}
	}
	pthread_mutex_unlock(&link_lock);
	return ret;
}

__attribute__((constructor)) static void link_init(void)
{
	gx_lock_register(&link_lock, GX_LOCK_TABLES + 1);
}
