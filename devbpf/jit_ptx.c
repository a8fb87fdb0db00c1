/* jit_ptx.c — PTX back end: link the device helper bitcode into the
 * translated module, make the helpers internal + always-inline so default<O2>
 * folds them into each policy, then let LLVM's NVPTX target print PTX.
 *
 * Why strip the helpers' target attributes: clang stamps target-cpu/features
 * on every function; mismatching feature sets between caller and callee block
 * inlining, and the TargetMachine supplies the right ones anyway. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/BitReader.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Target.h>

#include "devbpf/jit_internal.h"
#include "gpuext/gdev_ctx.h"
#include "common/gx_util.h"

#define GX_PTX_TRIPLE "nvptx64-nvidia-cuda"

static pthread_once_t nvptx_once = PTHREAD_ONCE_INIT;
static void nvptx_init(void)
{
	LLVMInitializeNVPTXTargetInfo();
	LLVMInitializeNVPTXTarget();
	LLVMInitializeNVPTXTargetMC();
	LLVMInitializeNVPTXAsmPrinter();
}

static int link_helpers(LLVMContextRef ctx, LLVMModuleRef mod, const struct gx_jit_opts *o,
			char *err, size_t err_sz)
{
	size_t len = (size_t)(gx_helpers_bc_end - gx_helpers_bc_start);
	LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRange(
		(const char *)gx_helpers_bc_start, len, "gx_helpers.bc", 0);
	LLVMModuleRef hm;
	/* Lazy: only the helpers the policies call are materialized by the linker;
	 * the module owns buf from here on. */
	if (LLVMGetBitcodeModuleInContext2(ctx, buf, &hm)) {
		LLVMDisposeMemoryBuffer(buf);
		return gx_jit_errf(err, err_sz, -EINVAL, "device helper bitcode is corrupt");
	}
	LLVMSetDataLayout(hm, LLVMGetDataLayoutStr(mod));
	LLVMSetTarget(hm, LLVMGetTarget(mod));
	if (LLVMLinkModules2(mod, hm))
		return gx_jit_errf(err, err_sz, -EINVAL, "linking device helpers failed");
	unsigned inl = LLVMGetEnumAttributeKindForName("alwaysinline", 12);
	unsigned noinl = LLVMGetEnumAttributeKindForName("noinline", 8);
	for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
		size_t n;
		const char *name = LLVMGetValueName2(f, &n);
		if (LLVMIsDeclaration(f) || strncmp(name, "gx_h_", 5))
			continue;
		LLVMSetLinkage(f, LLVMInternalLinkage);
		LLVMRemoveStringAttributeAtIndex(f, LLVMAttributeFunctionIndex, "target-cpu", 10);
		LLVMRemoveStringAttributeAtIndex(f, LLVMAttributeFunctionIndex, "target-features", 15);
		LLVMRemoveEnumAttributeAtIndex(f, LLVMAttributeFunctionIndex, noinl);
		LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
					LLVMCreateEnumAttribute(ctx, inl, 0));
	}
	for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
		size_t n;
		const char *name = LLVMGetValueName2(f, &n);
		if (LLVMIsDeclaration(f) && !strncmp(name, "gx_h_", 5))
			return gx_jit_errf(err, err_sz, -ENOENT,
					   "helper %s has no device implementation", name);
	}
	LLVMValueRef g = LLVMGetNamedGlobal(mod, GDEV_DEVRT_SYMBOL);
	if (!g)
		return gx_jit_errf(err, err_sz, -EINVAL, "device helpers lack %s",
				   GDEV_DEVRT_SYMBOL);
	if (!o->define_devrt)
		LLVMSetInitializer(g, NULL);
	return 0;
}

/* ctx->launch_id on the device is %gridid: the hardware's number for this
 * grid launch, unique among the launches of a context. The trampolines do
 * not fill that word (0 in the context slot: a per-launch number from the
 * shim would need a kernel parameter or a copy per launch, the first changes
 * every kernel's signature, the second costs microseconds per launch), so
 * every 8-byte load at offset 8 of a program's context argument — after
 * optimization: inttoptr(ptrtoint(ctx) + 8), or a GEP of 8 bytes — becomes a
 * read of the special register. Loads through copies the optimizer could not
 * fold (a subprogram's argument) still read the slot, i.e. 0. */
static void launch_id_sreg(LLVMContextRef ctx, LLVMModuleRef mod, const struct gx_jit_prog *progs,
			   size_t nr_progs)
{
	LLVMTypeRef i64 = LLVMInt64TypeInContext(ctx);
	LLVMTypeRef fty = LLVMFunctionType(i64, NULL, 0, 0);
	static const char as[] = "mov.u64 $0, %gridid;", cons[] = "=l";
	LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
	for (size_t p = 0; p < nr_progs; p++) {
		LLVMValueRef fn = LLVMGetNamedFunction(mod, progs[p].func ? progs[p].func : progs[p].name);
		if (!fn || LLVMCountParams(fn) < 1)
			continue;
		LLVMValueRef arg = LLVMGetParam(fn, 0);
		for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb)) {
			LLVMValueRef next;
			for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in; in = next) {
				next = LLVMGetNextInstruction(in);
				if (LLVMGetInstructionOpcode(in) != LLVMLoad || LLVMTypeOf(in) != i64)
					continue;
				LLVMValueRef a = LLVMGetOperand(in, 0), base = NULL, off = NULL;
				if (LLVMIsAIntToPtrInst(a)) {
					LLVMValueRef sum = LLVMGetOperand(a, 0);
					if (!LLVMIsABinaryOperator(sum) || LLVMGetInstructionOpcode(sum) != LLVMAdd)
						continue;
					for (int k = 0; k < 2 && !base; k++) {
						LLVMValueRef x = LLVMGetOperand(sum, (unsigned)k);
						if (LLVMIsAPtrToIntInst(x) && LLVMGetOperand(x, 0) == arg)
							base = x, off = LLVMGetOperand(sum, (unsigned)!k);
					}
				} else if (LLVMIsAGetElementPtrInst(a) && LLVMGetNumOperands(a) == 2 &&
					   LLVMGetOperand(a, 0) == arg &&
					   LLVMGetGEPSourceElementType(a) == LLVMInt8TypeInContext(ctx)) {
					base = arg, off = LLVMGetOperand(a, 1);
				}
				if (!base || !off || !LLVMIsAConstantInt(off) ||
				    LLVMConstIntGetZExtValue(off) != GDEV_CTX_OFF_LAUNCH_ID)
					continue;
				LLVMPositionBuilderBefore(b, in);
				LLVMValueRef asmv = LLVMGetInlineAsm(fty, (char *)as, sizeof(as) - 1, (char *)cons,
								     sizeof(cons) - 1, 1, 0, LLVMInlineAsmDialectATT, 0);
				LLVMValueRef v = LLVMBuildCall2(b, fty, asmv, NULL, 0, "gridid");
				LLVMReplaceAllUsesWith(in, v);
				LLVMInstructionEraseFromParent(in);
			}
		}
	}
	LLVMDisposeBuilder(b);
}

int gx_jit_emit_ptx(struct gx_jit *j, const struct gx_jit_prog *progs, size_t nr_progs,
		    const struct gx_jit_opts *o, char *err, size_t err_sz)
{
	char *msg = NULL;
	int ret;
	pthread_once(&nvptx_once, nvptx_init);
	LLVMTargetRef target;
	if (LLVMGetTargetFromTriple(GX_PTX_TRIPLE, &target, &msg)) {
		ret = gx_jit_errf(err, err_sz, -ENOSYS, "NVPTX target unavailable: %s", msg);
		LLVMDisposeMessage(msg);
		return ret;
	}
	LLVMTargetMachineRef tm = LLVMCreateTargetMachine(
		target, GX_PTX_TRIPLE, o->cpu ? o->cpu : "sm_90", o->features ? o->features : "+ptx80",
		/* ptxas optimizes the PTX again (the driver JIT does too): LLVM's own
		 * machine-level optimizations cost most of the JIT time for little. */
		o->opt_level >= 3 ? LLVMCodeGenLevelDefault : LLVMCodeGenLevelNone, LLVMRelocDefault,
		LLVMCodeModelDefault);
	if (!tm)
		return gx_jit_errf(err, err_sz, -EINVAL, "cannot create the NVPTX target machine");
	LLVMContextRef ctx = LLVMContextCreate();
	LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("gx_policy", ctx);
	LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
	char *dl = LLVMCopyStringRepOfTargetData(td);
	LLVMSetDataLayout(mod, dl);
	LLVMDisposeMessage(dl);
	LLVMDisposeTargetData(td);
	LLVMSetTarget(mod, GX_PTX_TRIPLE);

	double T0 = gx_jit_now_ms();
	ret = gx_jit_translate(ctx, mod, progs, nr_progs, o, err, err_sz);
	double T1 = gx_jit_now_ms();
	if (!ret)
		ret = link_helpers(ctx, mod, o, err, err_sz);
	double T2 = gx_jit_now_ms();
	if (!ret && LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
		ret = gx_jit_errf(err, err_sz, -EINVAL, "internal error: invalid IR: %.200s", msg);
	}
	if (msg) {
		LLVMDisposeMessage(msg);
		msg = NULL;
	}
	double T3 = gx_jit_now_ms();
	if (!ret)
		ret = gx_jit_optimize(mod, tm, o->opt_level, 1, err, err_sz);
	if (!ret)
		launch_id_sreg(ctx, mod, progs, nr_progs);
	double T4 = gx_jit_now_ms();
	if (!ret && o->keep_text) {
		double t0 = gx_jit_now_ms();
		char *ir = LLVMPrintModuleToString(mod);
		j->ir = strdup(ir);
		LLVMDisposeMessage(ir);
		j->text_ms = gx_jit_now_ms() - t0;
	}
	if (!ret) {
		LLVMMemoryBufferRef out;
		if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMAssemblyFile, &msg, &out)) {
			ret = gx_jit_errf(err, err_sz, -EINVAL, "NVPTX code generation: %s", msg);
			LLVMDisposeMessage(msg);
		} else {
			size_t n = LLVMGetBufferSize(out);
			j->ptx = malloc(n + 1);
			if (!j->ptx) {
				ret = -ENOMEM;
			} else {
				memcpy(j->ptx, LLVMGetBufferStart(out), n);
				/* the buffer may or may not be NUL-terminated */
				while (n && j->ptx[n - 1] == 0)
					n--;
				j->ptx[n] = 0;
				j->ptx_len = n;
			}
			LLVMDisposeMemoryBuffer(out);
		}
	}
	double T5 = gx_jit_now_ms();
	if (getenv("GX_JIT_PROFILE"))
		fprintf(stderr, "jit ptx: translate %.1f link %.1f verify %.1f opt %.1f codegen %.1f ms\n",
			T1 - T0, T2 - T1, T3 - T2, T4 - T3, T5 - T4);
	LLVMDisposeModule(mod);
	LLVMContextDispose(ctx);
	LLVMDisposeTargetMachine(tm);
	return ret;
}
