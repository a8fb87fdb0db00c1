/* jit.c — the JIT's entry points: validate options, pick the back end, time
 * the whole translation + optimization + code generation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <llvm-c/Error.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "devbpf/jit_internal.h"
#include "common/gx_util.h"

int gx_jit_errf(char *err, size_t err_sz, int ret, const char *fmt, ...)
{
	if (err && err_sz) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, err_sz, fmt, ap);
		va_end(ap);
	}
	return ret;
}

/* Inline the helpers, then the scalar passes that matter for translated
 * eBPF: SROA/mem2reg of the register allocas, constant folding of the map
 * descriptors, CFG clean-up. Loops are left to ptxas. InstCombine named in
 * a pipeline string verifies by default that one round reached its
 * fixpoint and aborts the process when not (LLVM 19: "Instruction
 * Combining did not reach a fixpoint", seen on a chain of void
 * subprograms); the default pipelines do not verify, nor do we. */
#define GX_INSTCOMBINE "instcombine<no-verify-fixpoint>"
#define GX_PIPELINE_LIGHT                                                                          \
	"always-inline,globaldce,function(sroa,early-cse," GX_INSTCOMBINE ",simplifycfg,sccp,gvn," \
	GX_INSTCOMBINE ",dse,adce,simplifycfg)"

/* eBPF passes stack addresses as integers (`r2 = r10; r2 += -4; call`), so
 * after inlining a helper reads its key through inttoptr(ptrtoint(stack) +
 * C): LLVM cannot see that as the stack (pointer provenance), keeps the
 * 512-byte frame in memory and loads the key back from it — on the GPU a
 * local-memory store and load on every map lookup. Rewrite every such
 * inttoptr whose integer is (a pointer into the stack alloca) + constant
 * into a GEP of that pointer; another round of SROA/GVN then turns the key
 * into a constant and the frame into registers. Returns how many. */
static unsigned stack_ptrs(LLVMModuleRef mod)
{
	unsigned n = 0;
	LLVMContextRef ctx = LLVMGetModuleContext(mod);
	LLVMTypeRef i8 = LLVMInt8TypeInContext(ctx);
	LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
	for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f))
		for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb)) {
			LLVMValueRef next;
			for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in; in = next) {
				next = LLVMGetNextInstruction(in);
				if (!LLVMIsAIntToPtrInst(in))
					continue;
				LLVMValueRef v = LLVMGetOperand(in, 0), off = NULL, p;
				if (LLVMIsABinaryOperator(v) && LLVMGetInstructionOpcode(v) == LLVMAdd) {
					LLVMValueRef a = LLVMGetOperand(v, 0), c = LLVMGetOperand(v, 1);
					if (LLVMIsAConstantInt(a)) {
						LLVMValueRef t = a;
						a = c, c = t;
					}
					if (!LLVMIsAConstantInt(c))
						continue;
					v = a, off = c;
				}
				if (!LLVMIsAPtrToIntInst(v))
					continue;
				p = LLVMGetOperand(v, 0);
				LLVMValueRef base = p;
				while (LLVMIsAGetElementPtrInst(base))
					base = LLVMGetOperand(base, 0);
				if (!LLVMIsAAllocaInst(base) || LLVMTypeOf(p) != LLVMTypeOf(in))
					continue;
				LLVMPositionBuilderBefore(b, in);
				LLVMValueRef g = off ? LLVMBuildGEP2(b, i8, p, &off, 1, "") : p;
				LLVMReplaceAllUsesWith(in, g);
				LLVMInstructionEraseFromParent(in);
				n++;
			}
		}
	LLVMDisposeBuilder(b);
	return n;
}

static int run_passes(LLVMModuleRef mod, LLVMTargetMachineRef tm, const char *pipeline, char *err,
		      size_t err_sz)
{
	LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
	LLVMErrorRef e = LLVMRunPasses(mod, pipeline, tm, po);
	LLVMDisposePassBuilderOptions(po);
	if (e) {
		char *m = LLVMGetErrorMessage(e);
		gx_jit_errf(err, err_sz, 0, "optimizer: %s", m);
		LLVMDisposeErrorMessage(m);
		return -EINVAL;
	}
	return 0;
}

int gx_jit_optimize(LLVMModuleRef mod, LLVMTargetMachineRef tm, int opt_level,
		    int linked_helpers, char *err, size_t err_sz)
{
	char pipeline[256];
	if (linked_helpers && opt_level == 2)
		snprintf(pipeline, sizeof(pipeline), "%s", GX_PIPELINE_LIGHT);
	else
		snprintf(pipeline, sizeof(pipeline), "default<O%d>", opt_level);
	int ret = run_passes(mod, tm, pipeline, err, err_sz);
	if (!ret && stack_ptrs(mod))
		ret = run_passes(mod, tm,
				 "function(sroa,early-cse," GX_INSTCOMBINE ",simplifycfg,sccp,gvn," GX_INSTCOMBINE
				 ",dse,adce,simplifycfg)",
				 err, err_sz);
	/* Generic pointers into a known state space become loads of that space:
	 * on the GPU the runtime block (__gx_devrt, .const) is then read with
	 * ld.const at immediate offsets — the constant cache — instead of
	 * through cvta.const and generic loads. The NVPTX back end would do it
	 * at its own optimization level, which the PTX target skips (ptxas
	 * optimizes again); a no-op for native code. */
	if (!ret)
		ret = run_passes(mod, tm, "function(infer-address-spaces,early-cse)", err, err_sz);
	return ret;
}

static int valid_name(const char *s)
{
	if (!s || !*s || (s[0] >= '0' && s[0] <= '9'))
		return 0;
	for (; *s; s++)
		if (!(*s == '_' || *s == '$' || (*s >= '0' && *s <= '9') ||
		      ((*s | 32) >= 'a' && (*s | 32) <= 'z')))
			return 0;
	return 1;
}

static double cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

double gx_jit_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

GX_EXPORT struct gx_jit *gx_jit__new(const struct gx_jit_prog *progs, size_t nr_progs,
				     const struct gx_jit_opts *opts, char *err, size_t err_sz)
{
	char dummy[8];
	int ret;
	if (!err || !err_sz) {
		err = dummy;
		err_sz = sizeof(dummy);
	}
	err[0] = 0;
	if (!opts || opts->sz < offsetof(struct gx_jit_opts, maps) || !progs || !nr_progs) {
		gx_jit_errf(err, err_sz, 0, "invalid arguments");
		errno = EINVAL;
		return NULL;
	}
	struct gx_jit_opts o = { 0 };
	if (gx_opts_copy(&o, sizeof(o), opts, opts->sz)) {
		gx_jit_errf(err, err_sz, 0, "unknown options (non-zero tail)");
		errno = EINVAL;
		return NULL;
	}
	o.sz = sizeof(o);
	if (!o.opt_level)
		o.opt_level = 2;
	if (o.opt_level < 0 || o.opt_level > 3 ||
	    (o.target != GX_JIT_PTX && o.target != GX_JIT_NATIVE) || (o.nr_maps && !o.maps)) {
		gx_jit_errf(err, err_sz, 0, "invalid options");
		errno = EINVAL;
		return NULL;
	}
	if (o.nr_externs && (o.target != GX_JIT_NATIVE || !o.externs)) {
		gx_jit_errf(err, err_sz, 0, "externs are available to the native target only");
		errno = EINVAL;
		return NULL;
	}
	for (size_t i = 0; i < o.nr_externs; i++) {
		if (!valid_name(o.externs[i].symbol) || !o.externs[i].fn ||
		    !strncmp(o.externs[i].symbol, "gx_h_", 5)) {
			gx_jit_errf(err, err_sz, 0, "invalid extern '%s'",
				    o.externs[i].symbol ? o.externs[i].symbol : "");
			errno = EINVAL;
			return NULL;
		}
	}
	for (size_t i = 0; i < nr_progs; i++) {
		if (!progs[i].name || !valid_name(gx_jit_func_name(&progs[i]))) {
			gx_jit_errf(err, err_sz, 0, "prog %s: invalid function name '%s'",
				    progs[i].name ? progs[i].name : "?",
				    progs[i].name ? gx_jit_func_name(&progs[i]) : "");
			errno = EINVAL;
			return NULL;
		}
	}
	struct gx_jit *j = calloc(1, sizeof(*j));
	if (!j) {
		errno = ENOMEM;
		return NULL;
	}
	j->target = o.target;
	double t0 = gx_jit_now_ms(), c0 = cpu_ms();
	if (o.target == GX_JIT_PTX)
		ret = gx_jit_emit_ptx(j, progs, nr_progs, &o, err, err_sz);
	else
		ret = gx_jit_emit_native(j, progs, nr_progs, &o, err, err_sz);
	j->ms = gx_jit_now_ms() - t0 - j->text_ms;
	j->cpu_ms = cpu_ms() - c0 - j->text_ms;
	if (ret) {
		if (!err[0])
			gx_jit_errf(err, err_sz, 0, "jit failed: %s", strerror(-ret));
		gx_jit__free(j);
		errno = -ret;
		return NULL;
	}
	return j;
}

GX_EXPORT void gx_jit__free(struct gx_jit *j)
{
	if (!j)
		return;
	if (j->native)
		gx_jit_native_free(j->native);
	for (size_t i = 0; i < j->nr_funcs; i++)
		free(j->func_names[i]);
	free(j->func_names);
	free(j->func_addrs);
	free(j->ptx);
	free(j->ir);
	free(j->asm_text);
	free(j);
}

GX_EXPORT const char *gx_jit__ptx(const struct gx_jit *j, size_t *len)
{
	if (!j || !j->ptx) {
		errno = ENOENT;
		return NULL;
	}
	if (len)
		*len = j->ptx_len;
	return j->ptx;
}

GX_EXPORT void *gx_jit__func(const struct gx_jit *j, const char *func)
{
	for (size_t i = 0; j && func && i < j->nr_funcs; i++)
		if (!strcmp(j->func_names[i], func))
			return j->func_addrs[i];
	errno = ENOENT;
	return NULL;
}

GX_EXPORT char *gx_jit__ir(const struct gx_jit *j)
{
	return j && j->ir ? strdup(j->ir) : NULL;
}

GX_EXPORT char *gx_jit__asm(const struct gx_jit *j)
{
	return j && j->asm_text ? strdup(j->asm_text) : NULL;
}

GX_EXPORT double gx_jit__time_ms(const struct gx_jit *j)
{
	return j ? j->ms : 0;
}

GX_EXPORT double gx_jit__cpu_ms(const struct gx_jit *j)
{
	return j ? j->cpu_ms : 0;
}
