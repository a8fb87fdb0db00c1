/* rdc.c — programs built with -rdc (relocatable device code).
 *
 * nvcc -rdc keeps each translation unit's code relocatable (ELF + PTX, in
 * __nv_relfatbin) and device-links the SASS into one image (.nv_fatbin) that
 * has no PTX. cudart registers the linked image with a version-2 fatbin
 * wrapper whose "prelinked" list points at the relocatable units. To rewrite
 * such a program we redo the device link from PTX: pick each unit's PTX for
 * the device, rewrite it, and JIT-link all of them through the real driver
 * (cuLinkCreate / cuLinkAddData / cuLinkComplete, as an application's own
 * -rdc JIT would). The caller loads the resulting cubin in place of the
 * application's image; on any failure it loads the original (one log line).
 * Units without PTX, or device code that needs libraries the link cannot see
 * (libcudadevrt for dynamic parallelism), end in that fallback. The linked
 * cubin goes into the rewritten-module cache (mcache_internal.h), keyed by its
 * units, so a second start neither rewrites nor links. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image/gx_image.h"
#include "shim/load_internal.h"
#include "shim/mcache_internal.h"
#include "ptx-rewrite/gx_ptx.h"

#define RDC_MAX_UNITS 1024

/* Distinct containers holding prelinked (relocatable) entries, in order. */
static size_t rdc_units(const struct gx_image *im, unsigned *out, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < im->nr_entries; i++) {
		const struct gx_image_entry *e = &im->entries[i];
		if (!e->prelinked)
			continue;
		bool seen = false;
		for (size_t j = 0; j < n && !seen; j++)
			seen = out[j] == e->container;
		if (!seen && n < max)
			out[n++] = e->container;
	}
	return n;
}

static int link_units(char **ptx, size_t *len, size_t n, unsigned sm, struct gx_prep *p)
{
	char elog[512] = "";
	CUjit_option o[3] = { CU_JIT_TARGET, CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES };
	void *v[3] = { (void *)(uintptr_t)sm, elog, (void *)(uintptr_t)sizeof(elog) };
	CUlinkState ls = NULL;
	char b[96];
	CUresult rc = REAL(cuLinkCreate_v2)(3, o, v, &ls);
	if (rc != CUDA_SUCCESS) {
		snprintf(p->why, sizeof(p->why), "-rdc: cuLinkCreate: %s", gx_cu_errname(rc, b, sizeof(b)));
		return -1;
	}
	for (size_t i = 0; i < n && rc == CUDA_SUCCESS; i++) {
		char name[32];
		snprintf(name, sizeof(name), "rdc_unit%zu.ptx", i);
		rc = REAL(cuLinkAddData_v2)(ls, CU_JIT_INPUT_PTX, ptx[i], len[i] + 1, name, 0, NULL, NULL);
		if (rc != CUDA_SUCCESS)
			snprintf(p->why, sizeof(p->why), "-rdc: cuLinkAddData of unit %zu: %s%s%.120s", i,
				 gx_cu_errname(rc, b, sizeof(b)), elog[0] ? ": " : "", elog);
	}
	void *cubin = NULL;
	size_t size = 0;
	if (rc == CUDA_SUCCESS) {
		rc = REAL(cuLinkComplete)(ls, &cubin, &size);
		if (rc != CUDA_SUCCESS || !cubin || !size) {
			snprintf(p->why, sizeof(p->why), "-rdc: cuLinkComplete: %s%s%.120s", gx_cu_errname(rc, b, sizeof(b)),
				 elog[0] ? ": " : "", elog);
			rc = rc != CUDA_SUCCESS ? rc : CUDA_ERROR_UNKNOWN;
		}
	}
	if (rc == CUDA_SUCCESS) {
		/* The cubin belongs to the link state: keep a copy (it must live
		 * as long as the module, like rewritten PTX). */
		p->ptx = malloc(size + 1);
		if (p->ptx) {
			memcpy(p->ptx, cubin, size);
			p->ptx[size] = 0;
			p->len = size;
		} else {
			snprintf(p->why, sizeof(p->why), "-rdc: out of memory");
			rc = CUDA_ERROR_OUT_OF_MEMORY;
		}
	}
	REAL(cuLinkDestroy)(ls);
	if (rc != CUDA_SUCCESS) {
		p->level = GX_LOG_WARN;
		return -1;
	}
	return 1;
}

/* The cache key of a linked cubin: the keys of its units' PTX, in link
 * order, under the process's rewrite options and the device arch. The
 * marker keeps it apart from any single module's key. False: no key (out of
 * memory), the cubin is neither looked up nor stored. */
static bool rdc_key(char **raw, const size_t *rl, size_t n, unsigned sm, struct gx_mcache_key *k)
{
	static const char mark[16] = "gx-rdc-link-v1";
	struct gx_ptx_rewrite_opts opts;
	gx_prep_opts(&opts);
	size_t sz = sizeof(mark) + n * sizeof(*k);
	char *buf = malloc(sz);
	if (!buf)
		return false;
	memcpy(buf, mark, sizeof(mark));
	for (size_t i = 0; i < n; i++) {
		struct gx_mcache_key u;
		gx_mcache_key(raw[i], rl[i], &opts, sm, &u);
		memcpy(buf + sizeof(mark) + i * sizeof(u), &u, sizeof(u));
	}
	gx_mcache_key(buf, sz, &opts, sm, k);
	free(buf);
	return true;
}

int gx_prepare_rdc(const struct gx_image *im, unsigned sm, bool mixed_archs, struct gx_prep *p)
{
	unsigned cont[RDC_MAX_UNITS];
	size_t n = rdc_units(im, cont, RDC_MAX_UNITS);
	if (!n)
		return 0;
	const struct gx_image_entry *pick[RDC_MAX_UNITS];
	unsigned ptx_sm = 0;
	for (size_t i = 0; i < n; i++) {
		pick[i] = gx_image_pick_ptx_in(im, cont[i], sm);
		if (!pick[i])
			return 0; /* a unit without PTX for this device: SASS only */
		if (pick[i]->sm > ptx_sm)
			ptx_sm = pick[i]->sm;
	}
	if (mixed_archs) {
		snprintf(p->why, sizeof(p->why),
			 "-rdc: devices of several archs share this library, and a JIT-linked cubin serves one");
		return -1;
	}
	char **raw = calloc(n, sizeof(*raw));
	char **ptx = calloc(n, sizeof(*ptx));
	size_t *rl = calloc(n, sizeof(*rl));
	size_t *len = calloc(n, sizeof(*len));
	unsigned hooks = 0;
	int ret = raw && ptx && rl && len ? 1 : -1;
	if (ret < 0)
		snprintf(p->why, sizeof(p->why), "-rdc: out of memory");
	size_t budget = gx_image_budget(im->extent); /* all units share the image's */
	for (size_t i = 0; i < n && ret > 0; i++) {
		void *r = NULL;
		if (gx_image_entry_data(pick[i], &budget, &r, &rl[i]) < 0) {
			snprintf(p->why, sizeof(p->why), "-rdc: cannot extract the PTX of unit %zu", i);
			p->level = GX_LOG_WARN;
			ret = -1;
		}
		raw[i] = r;
	}
	/* A second start links nothing: the cubin comes from the module cache. */
	struct gx_mcache_key key;
	struct gx_mcache_entry ce = { 0 };
	bool keyed = ret > 0 && rdc_key(raw, rl, n, sm, &key);
	if (keyed && gx_mcache_get(&key, &ce) == 0) {
		free(ce.notes);
		p->ptx = ce.ptx, p->len = ce.len;
		p->cached = true;
		hooks = ce.nr_hooks;
		ret = 2;
	}
	for (size_t i = 0; i < n && ret == 1; i++) {
		struct gx_prep u = { .id = p->id };
		if (!gx_prep_rewrite(raw[i], rl[i], sm, &u)) {
			snprintf(p->why, sizeof(p->why), "-rdc unit %zu: %.200s", i, u.why);
			p->level = u.level;
			ret = -1;
		} else {
			free(u.log); /* persistent copies: not for JIT-linked -rdc code */
			ptx[i] = u.ptx, len[i] = u.len;
			hooks += u.nr_hooks;
		}
	}
	if (ret == 1) {
		ret = link_units(ptx, len, n, sm, p);
		if (ret > 0 && keyed) {
			ce = (struct gx_mcache_entry){ .ptx = p->ptx, .len = p->len, .nr_hooks = hooks };
			gx_mcache_put(&key, &ce);
		}
	}
	if (ret > 0) {
		ret = 1;
		p->rdc_units = (unsigned)n;
		p->nr_hooks = hooks;
		p->sm = ptx_sm;
	}
	for (size_t i = 0; i < n; i++) {
		if (ptx)
			free(ptx[i]);
		if (raw)
			free(raw[i]);
	}
	free(raw);
	free(ptx);
	free(rl);
	free(len);
	return ret;
}
