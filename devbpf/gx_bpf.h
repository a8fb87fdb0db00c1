/* gx_bpf.h — device-policy objects: load, verify, inspect, interpret.
 *
 * The public API of devbpf's front half (libgxbpf.a), in libbpf's naming
 * style: opaque objects, `object__verb` methods, int functions return 0 or a
 * negative errno (errno set too), pointer functions return NULL and set errno.
 * Messages go through gx_log (common/gx_log.h) only.
 *
 * Life cycle:  gx_bpf_object__open_file/_mem  → programs and maps are parsed,
 * relocated and flattened (each program is one self-contained insn array:
 * bpf-to-bpf callees appended, call offsets fixed) → gx_bpf_object__verify →
 * hand programs to the JIT (devbpf/jit, another file) or to the interpreter.
 *
 * Instruction conventions after loading (what the JIT and interpreter see):
 *  - map reference:  ld_imm64 with src_reg = BPF_PSEUDO_MAP_IDX (5),
 *    imm = map index in this object (gx_bpf_object__map_by_idx);
 *  - global data:    ld_imm64 with src_reg = BPF_PSEUDO_MAP_IDX_VALUE (6),
 *    insn[0].imm = map index (.data/.rodata/.bss map), insn[1].imm = offset;
 *  - subprogram call: BPF_JMP|BPF_CALL, src_reg = BPF_PSEUDO_CALL (1),
 *    imm = relative target (target = pc + imm + 1) inside the same array;
 *  - subprogram address (bpf_loop callback): ld_imm64 with
 *    src_reg = BPF_PSEUDO_FUNC (4), imm = relative target as for calls;
 *  - helper call: BPF_JMP|BPF_CALL, src_reg = 0, imm = helper id
 *    (GDEV_HELPER_* in gdev_helpers.h).
 */
#ifndef GX_BPF_H
#define GX_BPF_H

#include "common/gx_bpf_isa.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

struct gx_bpf_object;
struct gx_bpf_prog;
struct gx_bpf_map;

/* ------------------------------------------------------------------ hooks */

/* What a program attaches to; from its section name. */
enum gx_bpf_hook {
	GX_BPF_HOOK_UNSPEC = 0,
	GX_BPF_HOOK_MEM_ACCESS,   /* gdev/mem/access */
	GX_BPF_HOOK_MEM_FENCE,    /* gdev/mem/fence */
	GX_BPF_HOOK_SCHED_ENTER,  /* gdev/sched/enter */
	GX_BPF_HOOK_SCHED_EXIT,   /* gdev/sched/exit */
	GX_BPF_HOOK_SCHED_STEAL,  /* gdev/sched/should_try_steal */
	GX_BPF_HOOK_PROBE,        /* gdev/probe/<kernel-glob>    (kernel entry) */
	GX_BPF_HOOK_RETPROBE,     /* gdev/retprobe/<kernel-glob> (kernel exit) */
	GX_BPF_HOOK_HOST_FIRST = 64, /* host-side hooks registered by other parts */
	GX_BPF_HOOK_MAX = 128,
};

/* Per-hook verification budgets (0 in an override: keep the default). */
struct gx_bpf_budget {
	uint32_t max_path_insns;   /* instructions executed on any one path */
	uint32_t max_helper_calls; /* helper calls on any one path */
	uint32_t max_processed;    /* verifier work: insns processed over all paths */
};

/* A section → hook rule. The built-in table covers the gdev/ sections; other
 * parts (hostbpf struct_ops policies) add theirs with gx_bpf_register_section.
 * A rule with `prefix` ending in '/' and GX_BPF_SEC_SUFFIX matches
 * "prefix<suffix>" and keeps the suffix as the attach target (the kernel glob). */
enum {
	GX_BPF_SEC_SUFFIX = 1u << 0,  /* section name continues after prefix (required) */
	GX_BPF_SEC_DEVICE = 1u << 1,  /* runs on the GPU: SIMT rules apply */
	GX_BPF_SEC_VAR_STACK = 1u << 2, /* bounded variable-offset stack access (as the
					 * kernel allows privileged programs) */
	GX_BPF_SEC_JOIN = 1u << 3,    /* at a prune point, a state that differs from an explored
				       * one only in scalar values continues as their join
				       * (ranges widened): sibling paths that compute data
				       * (sums, chosen bounds) no longer multiply; the kernel
				       * gets there with precision tracking */
};
/* Host struct_ops handlers (hostbpf policies run by the shim): r1 points to
 * nr_args 8-byte arguments, as the kernel passes struct_ops arguments, and
 * argument i is a pointer to args[i].size read-only bytes (the struct of
 * the member's signature), or a scalar when size is 0. A pointer argument
 * is read whole (8 bytes) or not at all; accesses through it stay inside
 * its size at any offset the verifier can bound. */
struct gx_bpf_ctx_arg {
	uint32_t size;     /* bytes behind the pointer; 0: scalar argument */
	uint32_t type;     /* caller's tag 1..15, matched by GX_BPF_ARG_PTR(tag) */
	const char *name;  /* "struct gpu_region", for messages */
};
/* Helper prototypes of a section that brings its own table (replaces the
 * built-in gdev helpers): argument and return kinds. */
enum {
	GX_BPF_ARG_NONE = 0,
	GX_BPF_ARG_SCALAR,
	GX_BPF_ARG_MAP,        /* map handle */
	GX_BPF_ARG_MAP_KEY,    /* pointer to key_size initialised bytes */
	GX_BPF_ARG_MAP_VALUE,  /* pointer to value_size initialised bytes */
	GX_BPF_ARG_PTR0 = 16,  /* + tag: the handler's argument of that tag, unmodified */
};
#define GX_BPF_ARG_PTR(tag) (GX_BPF_ARG_PTR0 + (tag))
enum { GX_BPF_RET_SCALAR = 0, GX_BPF_RET_ERR, GX_BPF_RET_MAP_VALUE_OR_NULL };
enum {
	GX_BPF_HELPER_F_MAP_WRITE = 1u << 0, /* writes the map (not .rodata) */
	GX_BPF_HELPER_F_HASH_ONLY = 1u << 1, /* map must be a hash */
};
struct gx_bpf_helper_proto {
	int32_t id;
	const char *name;
	uint8_t args[5];   /* GX_BPF_ARG_* */
	uint8_t ret;       /* GX_BPF_RET_* */
	uint32_t flags;    /* GX_BPF_HELPER_F_* */
};

struct gx_bpf_sec_def {
	const char *prefix;
	enum gx_bpf_hook hook;
	uint32_t flags;          /* GX_BPF_SEC_* */
	uint32_t gdev_hook;      /* enum gdev_hook bit (0 for host hooks) */
	uint32_t ctx_size;       /* readable bytes behind r1 (struct gdev_ctx: 120) */
	int64_t ret_min, ret_max; /* allowed r0 at exit */
	struct gx_bpf_budget budget;
	/* Optional (host struct_ops): typed arguments behind r1 (ctx_size must
	 * be 8 * nr_args) and the section's own helper table. */
	const struct gx_bpf_ctx_arg *args;
	uint32_t nr_args;
	const struct gx_bpf_helper_proto *helpers;
	uint32_t nr_helpers;
};
/* Add a rule (the pointer must stay valid). Later rules win over earlier ones
 * for the same prefix. Returns 0, -EINVAL, -ENOSPC. Not thread-safe: call at
 * start-up. */
int gx_bpf_register_section(const struct gx_bpf_sec_def *def);
/* The rule for a section name, or NULL. */
const struct gx_bpf_sec_def *gx_bpf_find_section(const char *sec_name);
const char *gx_bpf_hook_str(enum gx_bpf_hook hook);

/* ----------------------------------------------------------------- object */

struct gx_bpf_open_opts {
	size_t sz;              /* sizeof(struct gx_bpf_open_opts) */
	const char *object_name; /* overrides the name (default: file base name) */
};

struct gx_bpf_object *gx_bpf_object__open_file(const char *path, const struct gx_bpf_open_opts *opts);
struct gx_bpf_object *gx_bpf_object__open_mem(const void *buf, size_t len,
					      const struct gx_bpf_open_opts *opts);
void gx_bpf_object__close(struct gx_bpf_object *obj);

const char *gx_bpf_object__name(const struct gx_bpf_object *obj);
size_t gx_bpf_object__prog_cnt(const struct gx_bpf_object *obj);
size_t gx_bpf_object__map_cnt(const struct gx_bpf_object *obj);
struct gx_bpf_prog *gx_bpf_object__prog_by_idx(const struct gx_bpf_object *obj, size_t idx);
struct gx_bpf_prog *gx_bpf_object__find_prog(const struct gx_bpf_object *obj, const char *name);
struct gx_bpf_map *gx_bpf_object__map_by_idx(const struct gx_bpf_object *obj, size_t idx);
struct gx_bpf_map *gx_bpf_object__find_map(const struct gx_bpf_object *obj, const char *name);
/* The BTF of the object (libbpf's struct btf), or NULL if it had none. */
const struct btf *gx_bpf_object__btf(const struct gx_bpf_object *obj);

/* Iterate: for (p = NULL; (p = gx_bpf_object__next_prog(obj, p));) */
struct gx_bpf_prog *gx_bpf_object__next_prog(const struct gx_bpf_object *obj, const struct gx_bpf_prog *prev);
struct gx_bpf_map *gx_bpf_object__next_map(const struct gx_bpf_object *obj, const struct gx_bpf_map *prev);

/* ---------------------------------------------------------------- program */

const char *gx_bpf_prog__name(const struct gx_bpf_prog *prog);
const char *gx_bpf_prog__section_name(const struct gx_bpf_prog *prog);
enum gx_bpf_hook gx_bpf_prog__hook(const struct gx_bpf_prog *prog);
/* enum gdev_hook bit of the hook (0 for host hooks). */
uint32_t gx_bpf_prog__gdev_hook(const struct gx_bpf_prog *prog);
/* The part after the section prefix ("vec*" for gdev/probe/vec*), or "". */
const char *gx_bpf_prog__attach_target(const struct gx_bpf_prog *prog);
const struct gx_bpf_sec_def *gx_bpf_prog__sec_def(const struct gx_bpf_prog *prog);
/* Flat, relocated instructions (see the conventions at the top). */
const struct bpf_insn *gx_bpf_prog__insns(const struct gx_bpf_prog *prog);
size_t gx_bpf_prog__insn_cnt(const struct gx_bpf_prog *prog);
struct gx_bpf_object *gx_bpf_prog__object(const struct gx_bpf_prog *prog);
/* After a successful verify: max stack depth in bytes (all frames), whether
 * verification passed. */
uint32_t gx_bpf_prog__stack_depth(const struct gx_bpf_prog *prog);
bool gx_bpf_prog__verified(const struct gx_bpf_prog *prog);
/* Lane-varying marks from the verifier: true if the insn at idx computes or
 * uses a lane-varying value on some path (a JIT may then keep it per lane). */
bool gx_bpf_prog__insn_varying(const struct gx_bpf_prog *prog, size_t idx);

/* -------------------------------------------------------------------- map */

/* Map types: the kernel's numbers where they exist (gdev_helpers.h). */
enum gx_bpf_map_type {
	GX_BPF_MAP_HASH = 1,
	GX_BPF_MAP_ARRAY = 2,
	GX_BPF_MAP_PERSM_ARRAY = 6,   /* BPF_MAP_TYPE_PERCPU_ARRAY: per-SM shards */
	GX_BPF_MAP_RINGBUF = 27,
	GX_BPF_MAP_PERWARP_ARRAY = 0x1001, /* per-warp-slot shards */
};
enum {
	GX_BPF_MAP_F_INTERNAL = 1u << 0, /* global data: .data / .rodata / .bss */
	GX_BPF_MAP_F_RDONLY = 1u << 1,   /* .rodata: programs may not write */
};

/* The one test of "is this map folded as constant": whether the global data
 * section `name` is `.rodata` or `.rodata.*`. Programs may not write it and
 * the verifiers (devbpf's and the host executor's) fold its bytes into
 * constants, so nothing may change them once verified: its map gets
 * GX_BPF_MAP_F_RDONLY, and its host copy is sealed (gx_map__seal). */
bool gx_bpf_section_is_rodata(const char *name);

const char *gx_bpf_map__name(const struct gx_bpf_map *map);
enum gx_bpf_map_type gx_bpf_map__type(const struct gx_bpf_map *map);
const char *gx_bpf_map__type_str(enum gx_bpf_map_type type);
uint32_t gx_bpf_map__key_size(const struct gx_bpf_map *map);
uint32_t gx_bpf_map__value_size(const struct gx_bpf_map *map);
uint32_t gx_bpf_map__max_entries(const struct gx_bpf_map *map);
uint32_t gx_bpf_map__map_flags(const struct gx_bpf_map *map); /* __uint(map_flags, ..) */
uint32_t gx_bpf_map__gx_flags(const struct gx_bpf_map *map);  /* GX_BPF_MAP_F_* */
size_t gx_bpf_map__idx(const struct gx_bpf_map *map);
/* BTF type ids of key and value (0 if not declared with __type). */
uint32_t gx_bpf_map__btf_key_type_id(const struct gx_bpf_map *map);
uint32_t gx_bpf_map__btf_value_type_id(const struct gx_bpf_map *map);
/* Global data: the initial bytes (value_size of them; zeros for .bss). */
const void *gx_bpf_map__initial_value(const struct gx_bpf_map *map, size_t *size);
/* Overwrite the initial value (e.g. `const volatile` knobs in .rodata),
 * before verification. size must equal value_size. */
int gx_bpf_map__set_initial_value(struct gx_bpf_map *map, const void *data, size_t size);

/* --------------------------------------------------------------- verifier */

enum {
	GX_BPF_VERIFY_NO_SIMT = 1u << 0, /* skip warp-uniformity rules (host use) */
};
struct gx_bpf_verify_opts {
	size_t sz;                   /* sizeof(struct gx_bpf_verify_opts) */
	uint32_t flags;              /* GX_BPF_VERIFY_* */
	struct gx_bpf_budget budget; /* non-zero fields override the hook's */
	/* Receives every verifier message (the first error line is also logged
	 * through gx_log at warn level unless quiet). */
	void (*log)(void *user, const char *line);
	void *log_user;
	bool quiet;
	/* Collect per-insn facts for gx_bpf_prog__dump. */
	bool collect_facts;
};

/* 0 or -EINVAL (program rejected; the reason is in verifier_msg) or another
 * negative errno. Messages read "prog NAME insn N: reason". */
int gx_bpf_prog__verify(struct gx_bpf_prog *prog, const struct gx_bpf_verify_opts *opts);
/* Verify a flat program another part's loader produced (the conventions at
 * the top; maps described below, in ld_imm64 index order) against `sec`.
 * 0, or -EINVAL with "prog NAME insn N: reason" in msg, or another errno.
 * Nothing is logged unless opts say so (quiet is forced). */
struct gx_bpf_map_desc {
	const char *name;
	enum gx_bpf_map_type type; /* LRU hashes: GX_BPF_MAP_HASH */
	uint32_t key_size, value_size, max_entries;
	uint32_t gx_flags;         /* GX_BPF_MAP_F_* */
	const void *init;          /* .rodata: its bytes (folded as constants) */
};
int gx_bpf_verify_insns(const char *name, const struct bpf_insn *insns, size_t cnt,
			const struct gx_bpf_sec_def *sec, const struct gx_bpf_map_desc *maps, size_t nr_maps,
			const struct gx_bpf_verify_opts *opts, char *msg, size_t msg_len);
/* Verify every program; stops at the first rejection. */
int gx_bpf_object__verify(struct gx_bpf_object *obj, const struct gx_bpf_verify_opts *opts);
/* The last rejection message of this program ("" if none). */
const char *gx_bpf_prog__verifier_msg(const struct gx_bpf_prog *prog);
/* Verifier statistics of the last run. */
struct gx_bpf_verify_stats {
	uint32_t processed;      /* insns processed over all paths */
	uint32_t max_path_insns; /* longest path seen */
	uint32_t max_helper_calls;
	uint32_t states;         /* states stored for pruning */
};
int gx_bpf_prog__verify_stats(const struct gx_bpf_prog *prog, struct gx_bpf_verify_stats *st);

/* Disassembly of one insn ("r1 = *(u32 *)(r2 + 8)"); returns the number of
 * insn slots used (2 for ld_imm64). */
int gx_bpf_insn_str(const struct bpf_insn *insns, size_t cnt, size_t idx, char *buf, size_t len);
/* Write the program's disassembly to f; with facts (after a verify with
 * collect_facts) each insn is followed by the register types, ranges and
 * uniformity before it runs (joined over all paths). */
int gx_bpf_prog__dump(const struct gx_bpf_prog *prog, FILE *f);

/* ------------------------------------------------------------ interpreter */

/* A helper for the interpreter: r1..r5 in, r0 out. `user` is
 * gx_bpf_interp_opts.user. */
typedef uint64_t (*gx_bpf_helper_fn)(void *user, uint64_t r1, uint64_t r2, uint64_t r3,
				     uint64_t r4, uint64_t r5);
struct gx_bpf_helper_entry {
	int32_t id;
	gx_bpf_helper_fn fn;
};

struct gx_bpf_interp_opts {
	size_t sz;                               /* sizeof(struct gx_bpf_interp_opts) */
	const struct gx_bpf_helper_entry *helpers; /* looked up by id */
	size_t nr_helpers;
	void *user;
	/* Resolves ld_imm64 map references: value=false → the map handle passed
	 * to helpers (BPF_PSEUDO_MAP_IDX), value=true → address of the global
	 * data at off (BPF_PSEUDO_MAP_IDX_VALUE). NULL: both resolve to 0. */
	uint64_t (*map_addr)(void *user, uint32_t map_idx, uint32_t off, bool value);
	/* Memory check for every load/store/atomic not on the interpreter's own
	 * stack: return false to stop with -EFAULT. NULL: memory is trusted (the
	 * program was verified). */
	bool (*mem_ok)(void *user, uint64_t addr, uint32_t size, bool write);
	uint64_t max_steps;  /* 0: 1<<24; exceeded: -E2BIG */
};

/* Run insns with r1 = ctx. 0 and *ret = r0, or -EINVAL (bad insn: unknown
 * opcode, jump out of range, unknown helper), -EFAULT (mem_ok refused),
 * -E2BIG (step limit), -EOVERFLOW (call depth / stack). The stack is 512
 * bytes per frame, 8 frames. Division by zero: dst = 0; modulo by zero: dst
 * unchanged (BPF semantics). */
int gx_bpf_interp_run(const struct bpf_insn *insns, size_t cnt, uint64_t ctx,
		      const struct gx_bpf_interp_opts *opts, uint64_t *ret);
/* Same, for a loaded program. */
int gx_bpf_prog__interp(const struct gx_bpf_prog *prog, uint64_t ctx,
			const struct gx_bpf_interp_opts *opts, uint64_t *ret);

#ifdef __cplusplus
}
#endif

#endif
