/* procaddr.c — cuGetProcAddress[_v2]: how CUDA 12+ runtimes reach nearly
 * every driver function. The real driver answers (so versions, flags and
 * symbolStatus keep its exact semantics); then, if the pointer it chose is
 * one of the functions we intercept, we hand back our wrapper of that very
 * variant (same _vN, same _ptsz), found by comparing the pointer with the
 * real driver's address of each intercepted symbol. Should a driver return a
 * pointer we cannot match, a table of ABI versions picks the variant; for
 * the launch functions (the hot path) we then hand out a twin wrapper that
 * jumps to the driver's very pointer (launch_fast.S), so no launch pays for
 * a different entry than the driver chose. A query for cuGetProcAddress
 * itself returns ours. */
#include <stdio.h>
#include <string.h>

#include "shim/shim_internal.h"

struct addr_ent {
	void *real;
	unsigned sym;
};

static struct addr_ent *addrs;
static unsigned nr_addrs;
static pthread_once_t addrs_once = PTHREAD_ONCE_INIT;

static void addrs_build(void)
{
	static struct addr_ent tab[GX_NR_SYMS];
	unsigned n = 0;
	for (unsigned i = 0; i < GX_NR_SYMS; i++) {
		if (!gx_sym_intercepted(i))
			continue;
		void *r = gx_real_sym(i);
		if (r)
			tab[n++] = (struct addr_ent){ r, i };
	}
	addrs = tab;
	__atomic_store_n(&nr_addrs, n, __ATOMIC_RELEASE);
}

/* ABI variants of intercepted functions: the first entry whose version is
 * <= the requested one names the symbol (from cudaTypedefs.h's PFN_*_vNNNN). */
static const struct {
	const char *base;
	int since;
	const char *sym;
} variants[] = {
	{ "cuCtxCreate", 12050, "cuCtxCreate_v4" },
	{ "cuCtxCreate", 11040, "cuCtxCreate_v3" },
	{ "cuCtxCreate", 3020, "cuCtxCreate_v2" },
	{ "cuCtxDestroy", 4000, "cuCtxDestroy_v2" },
	{ "cuCtxSynchronize", 13000, "cuCtxSynchronize_v2" },
	{ "cuDevicePrimaryCtxRelease", 11000, "cuDevicePrimaryCtxRelease_v2" },
	{ "cuDevicePrimaryCtxReset", 11000, "cuDevicePrimaryCtxReset_v2" },
	{ "cuStreamDestroy", 4000, "cuStreamDestroy_v2" },
	{ "cuMemFree", 3020, "cuMemFree_v2" },
	{ "cuMemAlloc", 3020, "cuMemAlloc_v2" },
	{ "cuMemAllocPitch", 3020, "cuMemAllocPitch_v2" },
	{ "cuMemGetInfo", 3020, "cuMemGetInfo_v2" },
	{ "cuDeviceTotalMem", 3020, "cuDeviceTotalMem_v2" },
	{ "cuArrayCreate", 3020, "cuArrayCreate_v2" },
	{ "cuArray3DCreate", 3020, "cuArray3DCreate_v2" },
	{ "cuMemAdvise", 12020, "cuMemAdvise_v2" },
	{ "cuMemPrefetchAsync", 12020, "cuMemPrefetchAsync_v2" },
	{ "cuLinkAddData", 6050, "cuLinkAddData_v2" },
	{ "cuLinkAddFile", 6050, "cuLinkAddFile_v2" },
	{ "cuGraphAddKernelNode", 12000, "cuGraphAddKernelNode_v2" },
	{ "cuGraphKernelNodeSetParams", 12000, "cuGraphKernelNodeSetParams_v2" },
	{ "cuGraphExecKernelNodeSetParams", 12000, "cuGraphExecKernelNodeSetParams_v2" },
	{ "cuGraphInstantiate", 12000, "cuGraphInstantiateWithFlags" },
	{ "cuGraphInstantiate", 11000, "cuGraphInstantiate_v2" },
	{ "cuGraphExecUpdate", 12000, "cuGraphExecUpdate_v2" },
	{ "cuGetProcAddress", 12000, "cuGetProcAddress_v2" },
};

/* Our symbol for (name, version, flags) by the table; -1 if we do not
 * intercept it. */
static int variant_sym(const char *name, int ver, cuuint64_t flags)
{
	const char *sym = name;
	for (size_t i = 0; i < GX_ARRAY_SIZE(variants); i++) {
		if (!strcmp(variants[i].base, name) && ver >= variants[i].since) {
			sym = variants[i].sym;
			break;
		}
	}
	int i = -1;
	if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) {
		char b[128];
		snprintf(b, sizeof(b), "%s_ptsz", sym);
		i = gx_sym_find(b);
		if (i < 0) {
			snprintf(b, sizeof(b), "%s_ptds", sym);
			i = gx_sym_find(b);
		}
	}
	if (i < 0)
		i = gx_sym_find(sym);
	return i >= 0 && gx_sym_intercepted(i) ? i : -1;
}

/* Is `name` (a base name) the stem of some intercepted symbol? */
static bool stem_intercepted(const char *name)
{
	size_t n = strlen(name);
	int i = gx_sym_find(name);
	if (i >= 0 && gx_sym_intercepted(i))
		return true;
	/* Variants sort right after their stem: cuFoo, cuFoo_ptsz, cuFoo_v2... */
	for (unsigned j = i >= 0 ? (unsigned)i + 1 : 0; j < GX_NR_SYMS; j++) {
		int c = strncmp(gx_sym_names[j], name, n);
		if (c > 0 && i >= 0)
			break;
		if (c == 0 && gx_sym_names[j][n] == '_' && gx_sym_intercepted(j))
			return true;
	}
	return false;
}

/* launch_fast.S: twins of the launch wrappers jumping through gx_gpa_slots. */
extern void *gx_gpa_slots[6];
#define GPA_TWIN(name) { GX_SYM_##name, gx_gpa_##name }
extern char gx_gpa_cuLaunchKernel[], gx_gpa_cuLaunchKernel_ptsz[], gx_gpa_cuLaunchKernelEx[],
	gx_gpa_cuLaunchKernelEx_ptsz[], gx_gpa_cuLaunchCooperativeKernel[], gx_gpa_cuLaunchCooperativeKernel_ptsz[];
static const struct {
	unsigned sym;
	void *twin;
} gpa_launch[6] = {
	GPA_TWIN(cuLaunchKernel), GPA_TWIN(cuLaunchKernel_ptsz),
	GPA_TWIN(cuLaunchKernelEx), GPA_TWIN(cuLaunchKernelEx_ptsz),
	GPA_TWIN(cuLaunchCooperativeKernel), GPA_TWIN(cuLaunchCooperativeKernel_ptsz),
};

/* Our wrapper of symbol s for a driver pointer p that is not its export. */
static void *wrapper_for(unsigned s, void *p)
{
	for (unsigned k = 0; k < GX_ARRAY_SIZE(gpa_launch); k++) {
		if (gpa_launch[k].sym != s)
			continue;
		/* Any pointer the driver gave for this variant will do; the
		 * store is atomic and published before the twin is returned. */
		__atomic_store_n(&gx_gpa_slots[k], p, __ATOMIC_RELEASE);
		return gpa_launch[k].twin;
	}
	return gx_ours[s];
}

static void *substitute(const char *symbol, void *p, int ver, cuuint64_t flags)
{
	pthread_once(&addrs_once, addrs_build);
	unsigned n = __atomic_load_n(&nr_addrs, __ATOMIC_ACQUIRE);
	for (unsigned i = 0; i < n; i++)
		if (addrs[i].real == p)
			return gx_ours[addrs[i].sym];
	if (gx_is_ours(p) || !stem_intercepted(symbol))
		return NULL;
	int s = variant_sym(symbol, ver, flags);
	if (s < 0)
		return NULL;
	pr_debug("cuGetProcAddress(%s, %d, %#llx): pointer not an export of the driver; using %s by version",
		 symbol, ver, (unsigned long long)flags, gx_sym_names[s]);
	return wrapper_for((unsigned)s, p);
}

static bool is_self_query(const char *symbol)
{
	return symbol && !strcmp(symbol, "cuGetProcAddress");
}

GX_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
				       CUdriverProcAddressQueryResult *symbolStatus)
{
	if (is_self_query(symbol) && pfn) {
		*pfn = cudaVersion >= 12000 ? (void *)cuGetProcAddress_v2 : (void *)cuGetProcAddress;
		if (symbolStatus)
			*symbolStatus = CU_GET_PROC_ADDRESS_SUCCESS;
		return CUDA_SUCCESS;
	}
	CUresult rc = REAL(cuGetProcAddress_v2)(symbol, pfn, cudaVersion, flags, symbolStatus);
	if (rc == CUDA_SUCCESS && symbol && pfn && *pfn) {
		void *ours = substitute(symbol, *pfn, cudaVersion, flags);
		if (ours)
			*pfn = ours;
	}
	return rc;
}

GX_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
	if (is_self_query(symbol) && pfn) {
		*pfn = cudaVersion >= 12000 ? (void *)cuGetProcAddress_v2 : (void *)cuGetProcAddress;
		return CUDA_SUCCESS;
	}
	CUresult rc = REAL(cuGetProcAddress)(symbol, pfn, cudaVersion, flags);
	if (rc == CUDA_SUCCESS && symbol && pfn && *pfn) {
		void *ours = substitute(symbol, *pfn, cudaVersion, flags);
		if (ours)
			*pfn = ours;
	}
	return rc;
}
