/* kregs.c — the registers the driver gives a module's kernels as the
 * application wrote them, for the register caps of the rewritten copies
 * (gx_ptx_rewrite_opts.persist_regs): blocksched's persistent copies and
 * kernels with sampled memory sites (docs/blocksched.md,
 * docs/devbpf-tools.md).
 *
 * Why measure: code the copies add is cold (a persistent loop with its
 * claims and policy, memtrace's record path called for 1 access in 1024)
 * but ptxas still lets it raise the kernel's register count (a 32-register
 * GEMM's persistent copy got 40: one block per SM instead of two; vadd 16 ->
 * 56 on sm_90 under memtrace). Capped at the original's count only the cold
 * path spills. Only the driver knows that count: the module is JIT'd once
 * as it came, in the current context, and unloaded — once per module and
 * driver, since the shim's module cache keeps the result. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/gx_capture.h"
#include "image/gx_image.h"
#include "ptx-rewrite/gx_ptx.h"
#include "shim/load_internal.h"
#include "shim/shim_internal.h"

static int is_id(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$';
}

/* Append {nm, regs} to *out, taking nm (malloc'd). 0 or -ENOMEM. */
static int append(char *nm, unsigned regs, struct gx_ptx_kregs **out, size_t *n, size_t *cap)
{
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
	(*out)[(*n)++] = (struct gx_ptx_kregs){ nm, regs };
	return 0;
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
	return append(nm, (unsigned)regs, out, n, cap);
}

struct from_cubin {
	struct gx_ptx_kregs **out;
	size_t *n, cap;
};

static int cubin_kernel(void *arg, const char *kernel, unsigned regs)
{
	struct from_cubin *fc = arg;
	char *nm = strdup(kernel);
	return nm ? append(nm, regs, fc->out, fc->n, &fc->cap) : -ENOMEM;
}

int gx_kregs_from_cubin(const void *cubin, size_t len, struct gx_ptx_kregs **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	struct from_cubin fc = { out, n, 0 };
	int err = gx_image_cubin_regs(cubin, len, cubin_kernel, &fc);
	if (err) {
		gx_kregs_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return err;
}

int gx_kregs_probe(const char *ptx, size_t len, struct gx_ptx_kregs **out, size_t *n)
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
		gx_kregs_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return err;
}

void gx_kregs_free(struct gx_ptx_kregs *k, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free((char *)k[i].name);
	free(k);
}
