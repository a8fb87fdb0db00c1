/* memregs.c — the registers the driver gives a module's kernels as the
 * application wrote them, for the register cap of kernels with sampled
 * memory sites (gx_ptx_rewrite_opts.bind_samples; docs/devbpf-tools.md).
 *
 * Why: memtrace's record path (the ring reservation, a loop with a CAS
 * rollback) is called at every sampled site, and the call raises the whole
 * kernel's register count (vadd 16 -> 56 on sm_90: half the resident
 * warps) although it runs for 1 access in 1024. Capped at the original's
 * count (max 32, rounded up to 8, as blocksched's copies) only the cold
 * path spills. Only the driver knows that count: the module is JIT'd once
 * as it came and unloaded — once per module and driver, since the shim's
 * module cache keeps the result. Blocksched measures the same for its
 * copies (blocksched/bs_probe.c) through its own driver table, which exists
 * only when it is on. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/gx_capture.h"
#include "ptx-rewrite/gx_ptx.h"
#include "shim/load_internal.h"
#include "shim/shim_internal.h"

static int is_id(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$';
}

/* One kernel's count appended to *out (names malloc'd). 0 or -ENOMEM. */
static int add(CUmodule mod, const char *name, size_t l, struct gx_ptx_kregs **out, size_t *n, size_t *cap)
{
	char *nm = strndup(name, l);
	CUfunction f;
	int regs = 0;
	if (!nm)
		return -ENOMEM;
	if (REAL(cuModuleGetFunction)(&f, mod, nm) != CUDA_SUCCESS ||
	    REAL(cuFuncGetAttribute)(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f) != CUDA_SUCCESS || regs <= 0) {
		free(nm);
		return 0;
	}
	if (*n == *cap) {
		size_t c = *cap ? 2 * *cap : 16;
		struct gx_ptx_kregs *nk = realloc(*out, c * sizeof(*nk));
		if (!nk) {
			free(nm);
			return -ENOMEM;
		}
		*out = nk;
		*cap = c;
	}
	(*out)[(*n)++] = (struct gx_ptx_kregs){ nm, (unsigned)regs };
	return 0;
}

int gx_mem_probe_regs(const char *ptx, size_t len, struct gx_ptx_kregs **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	CUcontext ctx = NULL;
	if (REAL(cuCtxGetCurrent)(&ctx) != CUDA_SUCCESS || !ctx)
		return -ENODEV;
	char *text = strndup(ptx, len); /* the driver reads a C string */
	if (!text)
		return -ENOMEM;
	/* a module may load while the application captures a graph */
	struct gx_capture_mode cm = gx_capture_relax(REAL(cuThreadExchangeStreamCaptureMode));
	CUmodule mod;
	bool loaded = REAL(cuModuleLoadData)(&mod, text) == CUDA_SUCCESS;
	int err = loaded ? 0 : -EINVAL;
	size_t cap = 0;
	for (const char *p = loaded ? strstr(text, ".entry") : NULL; p && !err; p = strstr(p + 6, ".entry")) {
		const char *q = p + 6;
		if (p > text && is_id(p[-1]))
			continue;
		while (*q == ' ' || *q == '\t' || *q == '\n')
			q++;
		size_t l = 0;
		while (is_id(q[l]))
			l++;
		if (l && l <= 1000)
			err = add(mod, q, l, out, n, &cap);
	}
	if (loaded)
		REAL(cuModuleUnload)(mod);
	gx_capture_restore(REAL(cuThreadExchangeStreamCaptureMode), cm);
	free(text);
	if (err) {
		gx_mem_regs_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return err;
}

void gx_mem_regs_free(struct gx_ptx_kregs *k, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free((char *)k[i].name);
	free(k);
}
