/* jit_native.c — native back end: ORC LLJIT on the host. The translated
 * module calls the host build of the helpers (gx_h_*), given to the JIT as
 * absolute symbols; anything else it needs (memcpy/memset the optimizer may
 * introduce) comes from the process. Every program is looked up right away,
 * so the measured JIT time includes machine code generation. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>

#include "devbpf/hosthelpers_internal.h"
#include "devbpf/jit_internal.h"
#include "common/gx_util.h"

struct gx_jit_native {
	LLVMOrcLLJITRef lljit;
};

static pthread_once_t native_once = PTHREAD_ONCE_INIT;
static void native_init(void)
{
	LLVMInitializeNativeTarget();
	LLVMInitializeNativeAsmPrinter();
}

static int orc_err(LLVMErrorRef e, char *err, size_t err_sz, const char *what)
{
	char *m = LLVMGetErrorMessage(e);
	gx_jit_errf(err, err_sz, 0, "%s: %s", what, m);
	LLVMDisposeErrorMessage(m);
	return -EINVAL;
}

void gx_jit_native_free(void *p)
{
	struct gx_jit_native *n = p;
	if (n->lljit)
		LLVMOrcDisposeLLJIT(n->lljit);
	free(n);
}

static LLVMTargetMachineRef host_tm(int opt_level)
{
	char *triple = LLVMGetDefaultTargetTriple(), *cpu = LLVMGetHostCPUName();
	char *feat = LLVMGetHostCPUFeatures();
	LLVMTargetRef target;
	LLVMTargetMachineRef tm = NULL;
	if (!LLVMGetTargetFromTriple(triple, &target, NULL))
		tm = LLVMCreateTargetMachine(target, triple, cpu, feat,
					     opt_level >= 2 ? LLVMCodeGenLevelDefault
							    : LLVMCodeGenLevelLess,
					     LLVMRelocPIC, LLVMCodeModelJITDefault);
	LLVMDisposeMessage(triple);
	LLVMDisposeMessage(cpu);
	LLVMDisposeMessage(feat);
	return tm;
}

static int define_helpers(LLVMOrcLLJITRef jit, const struct gx_jit_opts *o, char *err,
			  size_t err_sz)
{
	unsigned nr, nx;
	const struct gx_helper_desc *h = gx_helper_table(&nr);
	const struct gx_helper_sym *x = gx_helper_extra_syms(&nx);
	LLVMOrcCSymbolMapPair *pairs = calloc(nr + nx + o->nr_externs, sizeof(*pairs));
	size_t k = 0;
	if (!pairs)
		return -ENOMEM;
	for (unsigned i = 0; i < nr; i++) {
		if (!h[i].host)
			continue;
		pairs[k].Name = LLVMOrcLLJITMangleAndIntern(jit, h[i].symbol);
		pairs[k].Sym.Address = (LLVMOrcExecutorAddress)(uintptr_t)h[i].host;
		pairs[k].Sym.Flags.GenericFlags =
			LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable;
		k++;
	}
	for (unsigned i = 0; i < nx; i++, k++) {
		pairs[k].Name = LLVMOrcLLJITMangleAndIntern(jit, x[i].symbol);
		pairs[k].Sym.Address = (LLVMOrcExecutorAddress)(uintptr_t)x[i].host;
		pairs[k].Sym.Flags.GenericFlags =
			LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable;
	}
	for (size_t i = 0; i < o->nr_externs; i++, k++) {
		pairs[k].Name = LLVMOrcLLJITMangleAndIntern(jit, o->externs[i].symbol);
		pairs[k].Sym.Address = (LLVMOrcExecutorAddress)(uintptr_t)o->externs[i].fn;
		pairs[k].Sym.Flags.GenericFlags =
			LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable;
	}
	LLVMOrcMaterializationUnitRef mu = LLVMOrcAbsoluteSymbols(pairs, k);
	free(pairs);
	LLVMErrorRef e = LLVMOrcJITDylibDefine(LLVMOrcLLJITGetMainJITDylib(jit), mu);
	if (e)
		return orc_err(e, err, err_sz, "defining helpers");
	LLVMOrcDefinitionGeneratorRef gen;
	e = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
		&gen, LLVMOrcLLJITGetGlobalPrefix(jit), NULL, NULL);
	if (e)
		return orc_err(e, err, err_sz, "process symbols");
	LLVMOrcJITDylibAddGenerator(LLVMOrcLLJITGetMainJITDylib(jit), gen);
	return 0;
}

int gx_jit_emit_native(struct gx_jit *j, const struct gx_jit_prog *progs, size_t nr_progs,
		       const struct gx_jit_opts *o, char *err, size_t err_sz)
{
	int ret = 0;
	char *msg = NULL;
	pthread_once(&native_once, native_init);
	struct gx_jit_native *n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	j->native = n;
	LLVMErrorRef e = LLVMOrcCreateLLJIT(&n->lljit, NULL);
	if (e)
		return orc_err(e, err, err_sz, "creating the native JIT");
	ret = define_helpers(n->lljit, o, err, err_sz);
	if (ret)
		return ret;
	LLVMTargetMachineRef tm = host_tm(o->opt_level);
	if (!tm)
		return gx_jit_errf(err, err_sz, -ENOSYS, "no native target machine");

	LLVMOrcThreadSafeContextRef tsc = LLVMOrcCreateNewThreadSafeContext();
	LLVMContextRef ctx = LLVMOrcThreadSafeContextGetContext(tsc);
	LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("gx_policy_native", ctx);
	LLVMSetTarget(mod, LLVMOrcLLJITGetTripleString(n->lljit));
	LLVMSetDataLayout(mod, LLVMOrcLLJITGetDataLayoutStr(n->lljit));

	ret = gx_jit_translate(ctx, mod, progs, nr_progs, o, err, err_sz);
	if (!ret && LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg))
		ret = gx_jit_errf(err, err_sz, -EINVAL, "internal error: invalid IR: %.200s", msg);
	if (msg)
		LLVMDisposeMessage(msg);
	if (!ret)
		ret = gx_jit_optimize(mod, tm, o->opt_level, 0, err, err_sz);
	if (!ret && o->keep_text) {
		double t0 = gx_jit_now_ms();
		char *ir = LLVMPrintModuleToString(mod);
		j->ir = strdup(ir);
		LLVMDisposeMessage(ir);
		LLVMModuleRef clone = LLVMCloneModule(mod);
		LLVMMemoryBufferRef out;
		if (!LLVMTargetMachineEmitToMemoryBuffer(tm, clone, LLVMAssemblyFile, &msg, &out)) {
			size_t len = LLVMGetBufferSize(out);
			j->asm_text = strndup(LLVMGetBufferStart(out), len);
			LLVMDisposeMemoryBuffer(out);
		} else {
			LLVMDisposeMessage(msg);
		}
		LLVMDisposeModule(clone);
		j->text_ms = gx_jit_now_ms() - t0;
	}
	LLVMDisposeTargetMachine(tm);
	if (ret) {
		LLVMDisposeModule(mod);
		LLVMOrcDisposeThreadSafeContext(tsc);
		return ret;
	}
	LLVMOrcThreadSafeModuleRef tsm = LLVMOrcCreateNewThreadSafeModule(mod, tsc);
	LLVMOrcDisposeThreadSafeContext(tsc);
	e = LLVMOrcLLJITAddLLVMIRModule(n->lljit, LLVMOrcLLJITGetMainJITDylib(n->lljit), tsm);
	if (e) {
		LLVMOrcDisposeThreadSafeModule(tsm);
		return orc_err(e, err, err_sz, "adding the module");
	}
	j->func_names = calloc(nr_progs, sizeof(*j->func_names));
	j->func_addrs = calloc(nr_progs, sizeof(*j->func_addrs));
	if (!j->func_names || !j->func_addrs)
		return -ENOMEM;
	for (size_t i = 0; i < nr_progs; i++) {
		LLVMOrcExecutorAddress addr;
		const char *name = gx_jit_func_name(&progs[i]);
		e = LLVMOrcLLJITLookup(n->lljit, &addr, name);
		if (e)
			return orc_err(e, err, err_sz, "native code generation");
		j->func_names[i] = strdup(name);
		j->func_addrs[i] = (void *)(uintptr_t)addr;
		j->nr_funcs++;
		if (!j->func_names[i])
			return -ENOMEM;
	}
	return 0;
}
