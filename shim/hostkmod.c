/* hostkmod.c — host policies through gpuext.ko instead of the shim's
 * executor. When /dev/gpuext (or $GPUEXT_DEV) opens and speaks our ABI, the
 * module sees the GPU's real faults and runs the struct_ops policies there;
 * the shim only tells it what a launch is about to touch: the managed
 * ranges the launch's arguments point into (found by hostpolicy.c's
 * parameter scan) go as one GX_IOC_PREFETCH hint per launch, each
 * allocation once between host synchronisations (the executor's residency
 * model). Migration is the module's: no cuMemPrefetchAsync here. Called
 * with hostpolicy.c's lock held. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hostkmod/gx_kmod_client.h"
#include "shim/hostkmod_internal.h"
#include "shim/shim_internal.h"

#define HK_MAX_WALK (4ull << 30) /* as the executor: bytes one argument may stand for */

static struct gx_kmod *km;
static struct hk_alloc { uint64_t va, len; bool hinted; } *allocs;
static size_t nallocs, cap_allocs;
static struct gx_kmod_range pend[256];
static size_t npend;
static unsigned long nr_hints, nr_ranges, nr_errors;
static uint64_t nr_pages;

int gx_hostkmod_open(void)
{
	int err = gx_kmod_open(&km);
	if (err)
		return err;
	err = gx_kmod__register(km);
	if (err) {
		gx_kmod__close(km);
		km = NULL;
		return err;
	}
	return 0;
}

const char *gx_hostkmod_backend(void)
{
	return km ? gx_kmod__backend(km) : "";
}

static struct hk_alloc *find(uint64_t va)
{
	for (size_t i = 0; i < nallocs; i++)
		if (va >= allocs[i].va && va < allocs[i].va + allocs[i].len)
			return &allocs[i];
	return NULL;
}

void gx_hostkmod_alloc(uint64_t va, uint64_t len)
{
	if (!len || find(va))
		return;
	if (nallocs == cap_allocs) {
		size_t nc = cap_allocs ? cap_allocs * 2 : 64;
		struct hk_alloc *na = realloc(allocs, nc * sizeof(*na));
		if (!na)
			return; /* not hinted: the module's faults still see it */
		allocs = na;
		cap_allocs = nc;
	}
	allocs[nallocs++] = (struct hk_alloc){va, len, false};
}

void gx_hostkmod_free(uint64_t va)
{
	struct hk_alloc *a = find(va);
	if (a && a->va == va)
		*a = allocs[--nallocs];
}

void gx_hostkmod_sync(void)
{
	for (size_t i = 0; i < nallocs; i++)
		allocs[i].hinted = false;
}

void gx_hostkmod_note(uint64_t v)
{
	struct hk_alloc *a = find(v);
	if (!a || a->hinted || npend == sizeof(pend) / sizeof(pend[0]))
		return;
	uint64_t end = a->va + a->len;
	if (end - v > HK_MAX_WALK)
		end = v + HK_MAX_WALK;
	pend[npend++] = (struct gx_kmod_range){v, end - v};
	a->hinted = true;
}

void gx_hostkmod_note_range(uint64_t va, uint64_t len)
{
	if (npend < sizeof(pend) / sizeof(pend[0]) && len)
		pend[npend++] = (struct gx_kmod_range){va, len};
}

void gx_hostkmod_flush(void)
{
	if (!npend || !km)
		return;
	uint64_t pages = 0;
	int err = gx_kmod__prefetch(km, pend, npend, 0, &pages);
	if (err) {
		if (!nr_errors++)
			pr_warn("hostpolicy: /dev/gpuext prefetch hint failed: %s; later failures are counted",
				strerror(-err));
	} else {
		nr_hints++;
		nr_ranges += npend;
		nr_pages += pages;
	}
	npend = 0;
}

void gx_hostkmod_close(void)
{
	if (!km)
		return;
	pr_info("hostpolicy: %lu prefetch hints (%lu ranges, %llu pages queued) sent to /dev/gpuext (backend '%s'), %lu failed",
		nr_hints, nr_ranges, (unsigned long long)nr_pages, gx_kmod__backend(km), nr_errors);
	gx_kmod__close(km);
	km = NULL;
	free(allocs);
	allocs = NULL;
	nallocs = cap_allocs = 0;
}
