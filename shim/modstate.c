/* modstate.c — the application asks for the address of a module variable
 * (cuModuleGetGlobal, cuLibraryGetGlobal, cuLibraryGetManaged, a texture or
 * surface reference): from then on the host may write it. A `gpuext attach`
 * copy of that module has variables of its own, which those writes would
 * not reach, so the copy could not stand in for the module any more
 * (ptx-rewrite/copy_state.c has the device side of the rule). Each call is
 * recorded with its module (tables.c) and told to live.c, which refuses
 * such copies and retires one made earlier. Applications make these calls
 * once per variable (cudart: at its first use), never per launch. */
#include "shim/load_internal.h"
#include "shim/tables_internal.h"

static void taken(void *handle)
{
	/* not a module of ours: a library's module in some context
	 * (cuLibraryGetModule); which library is not known */
	if (gx_tab_mark_host_state(handle) < 0)
		handle = NULL;
	gx_live_state_taken(handle);
}

GX_EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod, const char *name)
{
	CUresult rc = REAL(cuModuleGetGlobal_v2)(dptr, bytes, hmod, name);
	if (rc == CUDA_SUCCESS)
		taken(hmod);
	return rc;
}

GX_EXPORT CUresult cuModuleGetGlobal(CUdeviceptr_v1 *dptr, unsigned int *bytes, CUmodule hmod, const char *name)
{
	CUresult rc = REAL(cuModuleGetGlobal)(dptr, bytes, hmod, name);
	if (rc == CUDA_SUCCESS)
		taken(hmod);
	return rc;
}

GX_EXPORT CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name)
{
	CUresult rc = REAL(cuLibraryGetGlobal)(dptr, bytes, library, name);
	if (rc == CUDA_SUCCESS)
		taken(library);
	return rc;
}

GX_EXPORT CUresult cuLibraryGetManaged(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name)
{
	CUresult rc = REAL(cuLibraryGetManaged)(dptr, bytes, library, name);
	if (rc == CUDA_SUCCESS)
		taken(library);
	return rc;
}

GX_EXPORT CUresult cuModuleGetTexRef(CUtexref *tex, CUmodule hmod, const char *name)
{
	CUresult rc = REAL(cuModuleGetTexRef)(tex, hmod, name);
	if (rc == CUDA_SUCCESS)
		taken(hmod);
	return rc;
}

GX_EXPORT CUresult cuModuleGetSurfRef(CUsurfref *surf, CUmodule hmod, const char *name)
{
	CUresult rc = REAL(cuModuleGetSurfRef)(surf, hmod, name);
	if (rc == CUDA_SUCCESS)
		taken(hmod);
	return rc;
}
