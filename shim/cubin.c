/* cubin.c — a rewritten module loaded as SASS, not as PTX for the driver to
 * JIT at every start. The rewritten PTX is compiled once and stored beside
 * the PTX in the module cache (mcache_internal.h); a later start, or any
 * process reading the install's prepared cache, loads the stored cubin and
 * compiles nothing. Only for modules whose application JIT options leave
 * code generation alone (log buffers, wall time); anything else keeps the
 * PTX load, as does any failure here (one info line, never the
 * application's error).
 *
 * The compiler (GPUEXT_CUBIN): by default ptxas, compiling the module
 * whole as nvcc does (cubin_ptxas.c; where no ptxas is found, no cubin: the
 * PTX load, the driver's own whole-module JIT, cached by the driver);
 * GPUEXT_CUBIN=link the driver's linker (cuLinkCreate/AddData/Complete),
 * which compiles PTX as relocatable code: shared-memory kernels then run
 * slower (tool_bench's GEMM +29 %, GPU run 107); GPUEXT_CUBIN=0 always the
 * PTX load. Each compiler's cubins have their own cache keys. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/gx_capture.h"
#include "common/gx_trust.h"
#include "shim/cubin_entry.h"
#include "shim/load_internal.h"
#include "shim/mcache_internal.h"

/* GPUEXT_CACHE=0 too: without our cache the PTX load is better, since the
 * driver's own ComputeCache then keeps its JIT output. */
static bool cubin_off(void)
{
	const char *e = getenv("GPUEXT_CUBIN"), *c = getenv("GPUEXT_CACHE");
	return (e && !strcmp(e, "0")) || (c && !strcmp(c, "0"));
}

/* Does the rewritten PTX call a handler (a word clone __gx_hw*, a policy
 * function __gx_p_*) instead of having it inlined? The rewriter calls the
 * handlers too large to inline (memtrace's sampled record) on purpose:
 * inlined into a kernel capped at its original's registers they spill on
 * its hot path (vadd 4.7x in GPU run 101). ptxas compiling a module whole
 * inlines such calls all the same (run 109: memtrace's vadd +380 %); the
 * linker's relocatable compile keeps them. */
static bool calls_handlers(const char *ptx, size_t len)
{
	static const char *const pat[] = { "), __gx_hw", "), __gx_p_", "call.uni __gx_", "call __gx_" };
	for (size_t i = 0; i < sizeof(pat) / sizeof(pat[0]); i++)
		if (memmem(ptx, len, pat[i], strlen(pat[i])))
			return true;
	return false;
}

/* The linker compiles this module: GPUEXT_CUBIN=link, or its hooks call
 * handlers (calls_handlers). */
static bool cubin_link(const struct gx_prep *p)
{
	const char *e = getenv("GPUEXT_CUBIN");
	return (e && !strcmp(e, "link")) || calls_handlers(p->ptx, p->len);
}

/* GPUEXT_CUBIN_PIC=0 (A/B, issue 40): the link's compile without position
 * independent code. The cubin route's relocatable compile cost tool_bench's
 * rowsoftmax +7 % with no probe at all, where the PTX load cost nothing
 * (GPU runs 92-95); whether the compiler's PIC default is what differs is
 * what this measures. Part of the cubin's key. */
static bool cubin_nopic(void)
{
	const char *e = getenv("GPUEXT_CUBIN_PIC");
	return e && !strcmp(e, "0");
}

/* JIT options that only report: the cubin is the same with or without them. */
static bool opts_neutral(unsigned n, const CUjit_option *o)
{
	for (unsigned i = 0; i < n; i++) {
		switch (o[i]) {
		case CU_JIT_INFO_LOG_BUFFER:
		case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES:
		case CU_JIT_ERROR_LOG_BUFFER:
		case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES:
		case CU_JIT_LOG_VERBOSE:
		case CU_JIT_WALL_TIME:
			break;
		default:
			return false;
		}
	}
	return true;
}

static void key_hex(const struct gx_mcache_key *k, char out[33])
{
	snprintf(out, 33, "%016llx%016llx", (unsigned long long)k->h[0], (unsigned long long)k->h[1]);
}

/* One folder's entry: 0 with the cubin, -ENOENT, -EPERM or -EBADMSG (logged). */
static int get_in(const char *dir, bool mine, const char key[33], void **cubin, size_t *len)
{
	char path[4200], why[96];
	char *buf = NULL;
	size_t n = 0;
	snprintf(path, sizeof(path), "%s/%s" GX_CUBIN_EXT, dir, key);
	int r = gx_read_trusted(path, mine ? GX_TRUST_OWN : GX_TRUST_ANY_OWNER, &buf, &n, gx_mcache_cap(), why,
				sizeof(why));
	if (r == -EPERM) {
		pr_warn("module cache: refusing %s: %s; compiling again", path, why);
		if (mine)
			unlink(path);
	}
	if (r)
		return r == -EPERM ? r : -ENOENT;
	size_t off, size;
	uint64_t h;
	const char *bad = NULL;
	if (!gx_cubin_entry_parse(buf, n, key, &off, &size, &h, &bad) && gx_mcache_content_hash(buf + off, size) != h)
		bad = "content hash mismatch";
	if (bad) {
		pr_warn("module cache: ignoring corrupt entry %s: %s", path, bad);
		if (mine)
			unlink(path);
		free(buf);
		return -EBADMSG;
	}
	if (mine) /* recently used: evicted last */
		utimensat(AT_FDCWD, path, NULL, AT_SYMLINK_NOFOLLOW);
	memmove(buf, buf + off, size);
	*cubin = buf, *len = size;
	return 0;
}

static int cubin_get(const struct gx_mcache_key *k, void **cubin, size_t *len)
{
	char dir[4096], key[33];
	key_hex(k, key);
	int r = -ENOENT;
	if (!gx_mcache_dir(0, dir, sizeof(dir), false))
		r = get_in(dir, true, key, cubin, len);
	if (r && !gx_mcache_dir(1, dir, sizeof(dir), false))
		r = get_in(dir, false, key, cubin, len) ? r : 0;
	return r;
}

/* Store (temporary name + rename, as the PTX entries); failures only cost
 * the next start a JIT. */
static void cubin_put(const struct gx_mcache_key *k, const void *cubin, size_t len)
{
	char dir[4096], key[33], path[4200], hdr[GX_CUBIN_HDR_MAX];
	if (len + GX_CUBIN_HDR_MAX > gx_mcache_cap() || gx_mcache_dir(0, dir, sizeof(dir), true))
		return;
	key_hex(k, key);
	snprintf(path, sizeof(path), "%s/%s" GX_CUBIN_EXT, dir, key);
	int hl = gx_cubin_entry_header(hdr, key, len, gx_mcache_content_hash(cubin, len));
	const void *parts[2] = { hdr, cubin };
	size_t lens[2] = { (size_t)hl, len };
	if (!gx_write_parts(dir, path, parts, lens, 2))
		gx_mcache_enforce_cap(dir);
}

/* The link's target: the device's arch, in its arch-specific or family
 * variant when the PTX asks for one (Triton targets sm_90a on an H100; a
 * link for plain sm_90 refuses wgmma and the like). */
static unsigned link_target(const char *ptx, size_t len, unsigned sm)
{
	const char *t = memmem(ptx, len < 4096 ? len : 4096, ".target sm_", 11);
	if (!t)
		return sm;
	char *end;
	unsigned long v = strtoul(t + 11, &end, 10);
	if (v == sm && *end == 'a')
		return CU_COMPUTE_ACCELERATED_TARGET_BASE + sm;
	if (v == sm && *end == 'f')
		return CU_COMPUTE_FAMILY_TARGET_BASE + sm;
	return sm;
}

/* The driver's JIT for the current context's device (arch sm): 0 with a
 * malloc'd copy of the cubin, or the driver's error with its log in err. */
static CUresult jit(const char *ptx, size_t len, unsigned sm, void **cubin, size_t *clen, char *err, size_t errn)
{
	CUjit_option o[] = { CU_JIT_TARGET, CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
			     CU_JIT_POSITION_INDEPENDENT_CODE };
	void *v[] = { (void *)(uintptr_t)link_target(ptx, len, sm), err, (void *)(uintptr_t)errn,
		      (void *)(uintptr_t)0 };
	CUlinkState st = NULL;
	void *out = NULL;
	size_t n = 0;
	err[0] = 0;
	CUresult rc = REAL(cuLinkCreate_v2)(cubin_nopic() ? 4 : 3, o, v, &st);
	if (rc == CUDA_SUCCESS)
		rc = REAL(cuLinkAddData_v2)(st, CU_JIT_INPUT_PTX, (void *)ptx, len + 1, "gpuext", 0, NULL, NULL);
	if (rc == CUDA_SUCCESS)
		rc = REAL(cuLinkComplete)(st, &out, &n);
	if (rc == CUDA_SUCCESS) {
		*cubin = malloc(n);
		if (*cubin)
			memcpy(*cubin, out, n), *clen = n;
		else
			rc = CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (st)
		REAL(cuLinkDestroy)(st);
	return rc;
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* A library is loaded into every context: one cubin serves only when every
 * device has the current one's arch. */
static bool one_arch(unsigned sm)
{
	int n = 0;
	if (REAL(cuDeviceGetCount)(&n) != CUDA_SUCCESS || n <= 0)
		return false;
	for (int i = 0; i < n; i++) {
		CUdevice d;
		if (REAL(cuDeviceGet)(&d, i) != CUDA_SUCCESS || gx_dev_sm(d) != sm)
			return false;
	}
	return true;
}

/* The cubin's key for p->ptx on the current context's device (arch *sm)
 * and the compiler that makes it (*by, GX_CUBIN_BY_*): false when p gets no
 * cubin (see gx_prep_cubin). */
static bool cubin_key(const struct gx_prep *p, bool all_devices, unsigned n, const CUjit_option *o,
		      struct gx_mcache_key *k, unsigned *sm, unsigned *by)
{
	CUdevice d;
	int driver = 0;
	/* the JIT compiles for the current context's device: none, no cubin */
	if (cubin_off() || p->rdc_units || !p->ptx || !opts_neutral(n, o) || REAL(cuCtxGetDevice)(&d) != CUDA_SUCCESS ||
	    REAL(cuDriverGetVersion)(&driver) != CUDA_SUCCESS)
		return false;
	*sm = gx_dev_sm(d);
	if (!*sm || (all_devices && !one_arch(*sm)))
		return false;
	*by = !cubin_link(p) ? GX_CUBIN_BY_PTXAS : cubin_nopic() ? GX_CUBIN_BY_LINK_NOPIC : GX_CUBIN_BY_LINK;
	gx_mcache_cubin_key(p->ptx, p->len, *sm, driver, *by, k);
	return true;
}

int gx_prep_cubin_state(const struct gx_prep *p, unsigned n, const CUjit_option *o)
{
	struct gx_mcache_key k;
	unsigned sm, by;
	void *c = NULL;
	size_t len = 0;
	if (!cubin_key(p, false, n, o, &k, &sm, &by))
		return -1;
	int r = cubin_get(&k, &c, &len);
	free(c);
	return !r;
}

/* ptx compiled whole by ptxas for arch sm (its arch-specific or family
 * variant when the PTX asks for one): false (said) when it failed; no
 * ptxas at all was said once (gx_cubin_ptxas). */
static bool by_ptxas(struct gx_prep *p, unsigned sm, void **cubin, size_t *len)
{
	const char *ptxas = gx_cubin_ptxas();
	if (!ptxas)
		return false;
	char arch[32], err[1024];
	unsigned t = link_target(p->ptx, p->len, sm);
	snprintf(arch, sizeof(arch), "sm_%u%s", sm,
		 t == CU_COMPUTE_ACCELERATED_TARGET_BASE + sm ? "a"
		 : t == CU_COMPUTE_FAMILY_TARGET_BASE + sm    ? "f"
							      : "");
	if (!gx_cubin_ptxas_compile(ptxas, p->ptx, p->len, arch, cubin, len, err, sizeof(err)))
		return true;
	pr_info("module %u: no cubin, ptxas failed (%.400s); loading the rewritten PTX", p->id, err);
	return false;
}

/* ptx compiled by the driver's linker: false (said) when it failed. */
static bool by_link(struct gx_prep *p, unsigned sm, void **cubin, size_t *len)
{
	char err[1024];
	/* our own calls: never disturb a graph being captured (gx_capture.h) */
	struct gx_capture_mode cm = gx_capture_relax(REAL(cuThreadExchangeStreamCaptureMode));
	CUresult rc = jit(p->ptx, p->len, sm, cubin, len, err, sizeof(err));
	gx_capture_restore(REAL(cuThreadExchangeStreamCaptureMode), cm);
	if (rc == CUDA_SUCCESS)
		return true;
	/* The PTX load follows (and, if the driver rejects that too, the
	 * original image): say what the JIT said, since a PTX load that works
	 * means every start pays the JIT again. */
	char b[96];
	pr_info("module %u: no cubin, the driver's JIT failed (%s%s%.300s); loading the rewritten PTX", p->id,
		gx_cu_errname(rc, b, sizeof(b)), err[0] ? ": " : "", err);
	return false;
}

bool gx_prep_cubin(struct gx_prep *p, bool all_devices, unsigned n, const CUjit_option *o, void **cubin, size_t *len)
{
	struct gx_mcache_key k;
	unsigned sm, by;
	if (!cubin_key(p, all_devices, n, o, &k, &sm, &by))
		return false;
	if (!cubin_get(&k, cubin, len)) {
		p->cubin = GX_CUBIN_CACHED;
		return true;
	}
	double t0 = now_ms();
	bool ok = by == GX_CUBIN_BY_PTXAS ? by_ptxas(p, sm, cubin, len) : by_link(p, sm, cubin, len);
	p->jit_ms = now_ms() - t0;
	if (!ok)
		return false;
	p->cubin = GX_CUBIN_JIT;
	cubin_put(&k, *cubin, *len);
	return true;
}
