/* gx_jit.h — eBPF -> LLVM IR -> PTX `.func`s or native code (LLVM 19).
 *
 * The JIT takes what the loader produced — flat, relocated instruction arrays
 * (`struct bpf_insn`), a map table and helper ids — and nothing else, so it
 * does not depend on how objects were parsed. It assumes the program passed
 * the verifier; it still refuses instructions it cannot translate with a
 * stable message: "prog NAME insn N: reason".
 *
 * Conventions the instructions follow (what the loader writes):
 *  - ld_imm64 with src_reg BPF_PSEUDO_MAP_FD / BPF_PSEUDO_MAP_IDX: imm = index
 *    into the map table -> the map handle.
 *  - ld_imm64 with src_reg BPF_PSEUDO_MAP_VALUE / BPF_PSEUDO_MAP_IDX_VALUE:
 *    imm = map index, next imm = byte offset -> address of the value
 *    (global data: .data/.rodata/.bss are 1-entry array maps).
 *  - call with src_reg BPF_PSEUDO_CALL: bpf-to-bpf call, target pc+imm+1.
 *  - ld_imm64 with src_reg BPF_PSEUDO_FUNC: address of the subprogram at
 *    pc+imm+1 (for bpf_loop callbacks).
 *  - call with src_reg 0: helper id (GDEV_HELPER_* of gdev_helpers.h).
 *
 * Targets:
 *  - GX_JIT_PTX: one `.visible .func (.param .b32 r) NAME(.param .b64 ctx)`
 *    per program (the hook ABI of gdev_ctx.h); helpers from the device helper
 *    bitcode are linked in and inlined; maps are reached through the module
 *    global `__gx_devrt` (struct gx_devrt, gx_devrt.h), declared `.extern`
 *    unless define_devrt.
 *  - GX_JIT_NATIVE: ORC LLJIT; functions `uint32_t f(void *ctx)` calling the
 *    host helper implementations (gx_hosthelpers.h) on host maps (gx_map). */
#ifndef GX_JIT_H
#define GX_JIT_H

#include "common/gx_bpf_isa.h"
#include <stddef.h>
#include <stdint.h>

struct gx_map;

enum gx_jit_target {
	GX_JIT_PTX = 1,
	GX_JIT_NATIVE = 2,
};

/* One entry of the map table; its index is what ld_imm64 refers to. */
struct gx_jit_map {
	const char *name;
	unsigned type; /* GX_MAP_* / GDEV_MAP_* */
	unsigned key_size, value_size, max_entries;
	/* Native only: the host map the helpers operate on (may be NULL when no
	 * program of the module references it; a reference is then an error). */
	struct gx_map *host;
};

struct gx_jit_prog {
	const char *name;             /* program name, used in messages */
	const char *func;             /* symbol / .func name; NULL = name */
	const struct bpf_insn *insns; /* main program first, then subprograms */
	size_t nr_insns;
};

/* A callable the native target offers besides the helper table: host
 * helpers of other hooks, or kfuncs (calls with src_reg BPF_PSEUDO_KFUNC_CALL,
 * imm = the kfunc's BTF id as the loader left it). Called with r1..r5 as
 * u64 arguments, r0 = the u64 result. */
struct gx_jit_extern {
	int kfunc;          /* 0: helper id, 1: kfunc */
	int id;             /* helper id or kfunc imm */
	const char *symbol; /* C identifier, unique */
	unsigned long long (*fn)(unsigned long long, unsigned long long, unsigned long long,
				 unsigned long long, unsigned long long);
};

struct gx_jit_opts {
	size_t sz;                 /* sizeof(struct gx_jit_opts) */
	enum gx_jit_target target;
	const struct gx_jit_map *maps;
	size_t nr_maps;
	int opt_level;     /* 0..3; 0 = default (2) */
	int ret64;         /* functions return the full 64-bit r0 (tests) */
	int define_devrt;  /* PTX: define __gx_devrt (standalone modules, tests);
			    * default: `.extern` — ptx-rewrite adds the one
			    * definition to the rewritten module and refuses
			    * policy PTX that defines it */
	const char *cpu;   /* PTX: default "sm_90" */
	const char *features; /* PTX: default "+ptx80" */
	int keep_text;     /* keep the optimized IR (and native assembly) for
			    * gx_jit__ir / gx_jit__asm (costs time: off for hot paths) */
	/* Native only: extra helpers / kfuncs, looked up before the table. */
	const struct gx_jit_extern *externs;
	size_t nr_externs;
};

struct gx_jit;

/* Translate and compile. Returns NULL with errno set and a message in err
 * ("prog NAME insn N: reason" for translation errors). */
struct gx_jit *gx_jit__new(const struct gx_jit_prog *progs, size_t nr_progs,
			   const struct gx_jit_opts *opts, char *err, size_t err_sz);
void gx_jit__free(struct gx_jit *j);

/* PTX target: the module text (NUL-terminated, owned by j). */
const char *gx_jit__ptx(const struct gx_jit *j, size_t *len);
/* Native target: entry point of a program by its func name, or NULL. */
void *gx_jit__func(const struct gx_jit *j, const char *func);
/* Optimized LLVM IR text (malloc'd; free()); NULL unless opts.keep_text. */
char *gx_jit__ir(const struct gx_jit *j);
/* Native target: x86-64 assembly (malloc'd); NULL unless opts.keep_text. */
char *gx_jit__asm(const struct gx_jit *j);
/* Wall time of translation + optimization + code generation, in ms. */
double gx_jit__time_ms(const struct gx_jit *j);
/* The same work in CPU time of the calling thread (what it costs without
 * contention on a shared machine), in ms. */
double gx_jit__cpu_ms(const struct gx_jit *j);

/* ---- whole objects (jit_object.c): what the shim and the CLI call ---- */
struct gx_bpf_object;
struct gx_hook_binding;

/* Host maps for every map of a loaded object, in map index order (the
 * index ld_imm64 uses). Global data maps get their initial bytes. Sharded
 * arrays get nr_sms shards (per-SM) or nr_sms * GX_WARP_SLOTS_PER_SM
 * (per-warp). map_flags: GX_MAP_F_* (GX_MAP_F_SHM for maps tools can see;
 * the file is "<pid>-<object>.<map>"). */
int gx_jit_object_maps(const struct gx_bpf_object *obj, unsigned map_flags, unsigned nr_sms,
		       struct gx_map ***maps, size_t *nr_maps);
void gx_jit_object_maps_free(struct gx_map **maps, size_t nr_maps);

struct gx_jit_object_opts {
	size_t sz;          /* sizeof(struct gx_jit_object_opts) */
	enum gx_jit_target target;
	const char *prefix; /* function name prefix; NULL = "gxp_" */
	struct gx_map *const *maps; /* native: from gx_jit_object_maps */
	size_t nr_maps;
	int define_devrt;
	int keep_text;
	int device_only;    /* only programs of device hooks (gdev/...) */
};

/* JIT every (device) program of a verified object into one module. With
 * bindings non-NULL, returns one gx_hook_binding per device program (hook
 * bit, kernel glob or NULL, func name) for gx_ptx_rewrite; free them with
 * gx_jit_bindings_free. */
struct gx_jit *gx_jit_object(const struct gx_bpf_object *obj, const struct gx_jit_object_opts *opts,
			     struct gx_hook_binding **bindings, size_t *nr_bindings, char *err,
			     size_t err_sz);
void gx_jit_bindings_free(struct gx_hook_binding *b, size_t n);

#endif
