/* bs_probe.c — how many registers the driver gives the kernels of a module
 * as the application wrote them, so their persistent copies can be capped
 * at no loss of resident blocks (gx_ptx_rewrite_opts.persist_regs says the
 * rule).
 *
 * Why measure: the loop and the inlined claim and policy code are cold but
 * ptxas still lets them raise the kernel's register count (a 32-register
 * GEMM's copy with the adaptive policy's hooks got 40: one block per SM
 * instead of two); capped at the original's count the same copy needs no
 * spill. Only the driver knows the original's count, so the module is JIT'd
 * once as it came (in the current context) and unloaded. This runs only
 * when the rewritten module is not in the shim's module cache, i.e. once
 * per module and driver. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "blocksched/bs_internal.h"
#include "common/gx_capture.h"
#include "ptx-rewrite/gx_ptx.h"

static int is_id(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
	       c == '$';
}

void gx_bs_regs_free(struct gx_ptx_kregs *k, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free((char *)k[i].name);
	free(k);
}

static int probe_regs(const char *ptx, size_t len, struct gx_ptx_kregs **out, size_t *n)
{
	char *text = strndup(ptx, len); /* the driver reads a C string */
	if (!text)
		return -ENOMEM;
	CUmodule mod;
	CUresult rc = CU(cuModuleLoadData)(&mod, text);
	if (rc != CUDA_SUCCESS) {
		free(text);
		return -EINVAL;
	}
	size_t cap = 0;
	int err = 0;
	for (const char *p = strstr(text, ".entry"); p && !err; p = strstr(p + 6, ".entry")) {
		const char *q = p + 6;
		if (p > text && is_id(p[-1]))
			continue;
		while (*q == ' ' || *q == '\t' || *q == '\n')
			q++;
		size_t l = 0;
		while (is_id(q[l]))
			l++;
		if (!l || l > 1000)
			continue;
		char *name = strndup(q, l);
		CUfunction f;
		int regs = 0;
		if (!name) {
			err = -ENOMEM;
		} else if (CU(cuModuleGetFunction)(&f, mod, name) != CUDA_SUCCESS ||
			   CU(cuFuncGetAttribute)(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f) != CUDA_SUCCESS || regs <= 0) {
			free(name);
		} else {
			if (*n == cap) {
				cap = cap ? 2 * cap : 16;
				struct gx_ptx_kregs *nk = realloc(*out, cap * sizeof(*nk));
				if (!nk) {
					free(name);
					err = -ENOMEM;
					break;
				}
				*out = nk;
			}
			(*out)[(*n)++] = (struct gx_ptx_kregs){ name, (unsigned)regs };
		}
	}
	CU(cuModuleUnload)(mod);
	free(text);
	if (err) {
		gx_bs_regs_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return err;
}

/* In the relaxed capture mode: a module can be loaded while the application
 * captures a graph (CUDA's lazy loading loads it at its first launch), and
 * our load and unload of the probe are not the application's. */
int gx_bs_probe_regs(const char *ptx, size_t len, struct gx_ptx_kregs **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	CUcontext ctx = NULL;
	if (!bs_host || CU(cuCtxGetCurrent)(&ctx) != CUDA_SUCCESS || !ctx)
		return -ENODEV;
	struct gx_capture_mode cm = gx_capture_relax(CU(cuThreadExchangeStreamCaptureMode));
	int err = probe_regs(ptx, len, out, n);
	gx_capture_restore(CU(cuThreadExchangeStreamCaptureMode), cm);
	return err;
}
