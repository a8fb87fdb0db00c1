/* jit_ptx.c — PTX back end: link the device helper bitcode into the
 * translated module, make the helpers internal + always-inline so default<O2>
 * folds them into each policy, then let LLVM's NVPTX target print PTX.
 *
 * Why strip the helpers' target attributes: clang stamps target-cpu/features
 * on every function; mismatching feature sets between caller and callee block
 * inlining, and the TargetMachine supplies the right ones anyway. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/BitReader.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Target.h>

#include "devbpf/jit_internal.h"
#include "gdev_ctx.h"
#include "gx_util.h"

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
	if (LLVMParseBitcodeInContext2(ctx, buf, &hm)) {
		LLVMDisposeMemoryBuffer(buf);
		return gx_jit_errf(err, err_sz, -EINVAL, "device helper bitcode is corrupt");
	}
	LLVMDisposeMemoryBuffer(buf);
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
	if (o->devrt_extern)
		LLVMSetInitializer(g, NULL);
	return 0;
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
		o->opt_level >= 2 ? LLVMCodeGenLevelDefault : LLVMCodeGenLevelLess, LLVMRelocDefault,
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

	ret = gx_jit_translate(ctx, mod, progs, nr_progs, o, err, err_sz);
	if (!ret)
		ret = link_helpers(ctx, mod, o, err, err_sz);
	if (!ret && LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
		ret = gx_jit_errf(err, err_sz, -EINVAL, "internal error: invalid IR: %.200s", msg);
	}
	if (msg) {
		LLVMDisposeMessage(msg);
		msg = NULL;
	}
	if (!ret)
		ret = gx_jit_optimize(mod, tm, o->opt_level, err, err_sz);
	if (!ret && o->keep_text) {
		char *ir = LLVMPrintModuleToString(mod);
		j->ir = strdup(ir);
		LLVMDisposeMessage(ir);
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
	LLVMDisposeModule(mod);
	LLVMContextDispose(ctx);
	LLVMDisposeTargetMachine(tm);
	return ret;
}
