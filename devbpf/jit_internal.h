/* jit_internal.h — pieces of the JIT shared by its files (not installed):
 * the translator (jit_llvm.c), the PTX back end (jit_ptx.c), the native back
 * end (jit_native.c) and the driver (jit.c). */
#ifndef GX_JIT_INTERNAL_H
#define GX_JIT_INTERNAL_H

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>
#include <stdarg.h>

#include "devbpf/gx_bpf.h"

struct gx_jit {
	enum gx_jit_target target;
	char *ptx;
	size_t ptx_len;
	char *ir;  /* optimized IR text */
	char *asm_text; /* native: assembly text */
	double ms;
	double cpu_ms;  /* CPU time of this thread for the same work */
	double text_ms; /* part of ms spent printing IR/assembly (keep_text) */
	void *native; /* struct gx_jit_native * */
	size_t nr_funcs;
	char **func_names;
	void **func_addrs;
};

/* Message helpers: err is the caller's buffer. */
int gx_jit_errf(char *err, size_t err_sz, int ret, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Translate every program into `mod` (in `ctx`): one external function per
 * program named by its func, internal functions for subprograms. Calls to
 * helpers are calls to external `gx_h_NAME(i64 x5) -> i64`. For the PTX
 * target ld_imm64 map references call gx_h__map / gx_h__map_value; for the
 * native target they become constants from opts->maps[i].host. */
int gx_jit_translate(LLVMContextRef ctx, LLVMModuleRef mod, const struct gx_jit_prog *progs,
		     size_t nr_progs, const struct gx_jit_opts *opts, char *err, size_t err_sz);

/* Run the new pass manager. linked_helpers: the module holds pre-optimized
 * helper bitcode; at opt_level 2 a short pipeline (inline, scalar clean-up)
 * replaces default<O2>, which would re-optimize all of it. */
int gx_jit_optimize(LLVMModuleRef mod, LLVMTargetMachineRef tm, int opt_level,
		    int linked_helpers, char *err, size_t err_sz);

/* Back ends. */
int gx_jit_emit_ptx(struct gx_jit *j, const struct gx_jit_prog *progs, size_t nr_progs,
		    const struct gx_jit_opts *opts, char *err, size_t err_sz);
int gx_jit_emit_native(struct gx_jit *j, const struct gx_jit_prog *progs, size_t nr_progs,
		       const struct gx_jit_opts *opts, char *err, size_t err_sz);
void gx_jit_native_free(void *native);

/* CLOCK_MONOTONIC in ms. */
double gx_jit_now_ms(void);

/* Name of the function a program becomes. */
static inline const char *gx_jit_func_name(const struct gx_jit_prog *p)
{
	return p->func ? p->func : p->name;
}

/* Embedded device helper bitcode (helpers/gx_helpers.c built for NVPTX). */
extern const unsigned char gx_helpers_bc_start[], gx_helpers_bc_end[];

#endif
