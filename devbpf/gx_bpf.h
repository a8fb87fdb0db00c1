/* gx_bpf.h — devbpf's one public header: device-policy objects (load,
 * verify, inspect, interpret), the maps runtime, and the JIT.
 *
 * Two archives implement it: libgxbpf.a (loader, verifier, interpreter,
 * maps; no LLVM, so the shim and the CLI link it) and libgxjit.a (the JIT,
 * which links libLLVM-19 and is reached by the shim only through
 * libgxjit.so, dlopened by attach/). In libbpf's naming
 * style: opaque objects, `object__verb` methods, int functions return 0 or a
 * negative errno (errno set too), pointer functions return NULL and set errno.
 * Messages go through gx_log (common/gx_log.h) only.
 *
 * Life cycle:  gx_bpf_object__open_file/_mem  → programs and maps are parsed,
 * relocated and flattened (each program is one self-contained insn array:
 * bpf-to-bpf callees appended, call offsets fixed) → gx_bpf_object__verify →
 * hand programs to the JIT (below) or to the interpreter.
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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/gx_bpf_isa.h"
#include "gpuext/gx_devrt.h"

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
	GX_BPF_HOOK_BLOCKPROBE,   /* gdev/blockprobe/<kernel-glob> (entry or exit: GDEV_HOOK_BLOCK) */
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
	/* What the consumer runs; the defaults are the device's (the host
	 * executor sets all of them: hostexec/hx_load.c). */
	/* Section rules of this object instead of the registered ones. */
	const struct gx_bpf_sec_def *sec_defs;
	size_t nr_sec_defs;
	/* Map types accepted in .maps, instead of the device's (hash, array,
	 * per-SM and per-warp arrays, ringbuf). With GX_BPF_MAP_STRUCT_OPS, each
	 * variable of .struct_ops / .struct_ops.link becomes a map of that type
	 * (gx_bpf_map__struct_ops_prog); without it those sections are ignored. */
	const uint32_t *map_types;
	size_t nr_map_types;
	/* Calls of extern functions (kfuncs): name -> helper id (>= 0), or a
	 * negative errno to refuse the object. NULL: externs are refused. */
	int (*resolve_extern)(void *user, const char *name);
	void *user;
	/* Receives every loader message ("section 'S' insn N: reason"); also
	 * logged through gx_log at warn level unless quiet. */
	void (*log)(void *user, const char *line);
	bool quiet;
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
/* The BTF of the object, or NULL if it had none (reader below). */
const struct gx_btf *gx_bpf_object__btf(const struct gx_bpf_object *obj);
/* Global variables (.data/.rodata/.bss: knobs, counters): idx < var_cnt →
 * its name, the index of its section's map, offset and size there. 0 or
 * -ENOENT. */
size_t gx_bpf_object__var_cnt(const struct gx_bpf_object *obj);
int gx_bpf_object__var(const struct gx_bpf_object *obj, size_t idx, const char **name, size_t *map,
		       uint32_t *off, uint32_t *size);

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
	GX_BPF_MAP_LRU_HASH = 9,      /* host policies only (open opts' map_types) */
	GX_BPF_MAP_STRUCT_OPS = 26,   /* host policies only: a struct_ops variable */
	GX_BPF_MAP_RINGBUF = 27,
	GX_BPF_MAP_PERWARP_ARRAY = 0x1001, /* per-warp-slot shards */
};
enum {
	GX_BPF_MAP_F_INTERNAL = 1u << 0, /* global data: .data / .rodata / .bss */
	GX_BPF_MAP_F_RDONLY = 1u << 1,   /* .rodata: programs may not write */
	GX_BPF_MAP_F_RECORDS = 1u << 2,  /* an array declared with GDEV_F_RECORDS: a record table */
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
/* The program a struct_ops map's function pointer at byte offset off
 * points to, or NULL (errno ENOENT). */
struct gx_bpf_prog *gx_bpf_map__struct_ops_prog(const struct gx_bpf_map *map, uint32_t off);
/* Global data and struct_ops variables: the initial bytes (value_size of
 * them; zeros for .bss). */
const void *gx_bpf_map__initial_value(const struct gx_bpf_map *map, size_t *size);
/* Overwrite the initial value (e.g. `const volatile` knobs in .rodata),
 * before verification. size must equal value_size. */
int gx_bpf_map__set_initial_value(struct gx_bpf_map *map, const void *data, size_t size);

/* -------------------------------------------------------------------- BTF */

/* The object's BTF, read without libbpf (devbpf/btf.c), with libbpf's
 * meanings: types are <linux/btf.h>'s, ids 1 .. type_cnt - 1 (0 is void),
 * every id and offset checked (NULL, "" or a negative errno when bad). */
struct gx_btf;
struct btf_type;
uint32_t gx_btf__type_cnt(const struct gx_btf *btf);
const struct btf_type *gx_btf__type_by_id(const struct gx_btf *btf, uint32_t id);
const char *gx_btf__name_by_offset(const struct gx_btf *btf, uint32_t off);
/* The first type of that name and BTF_KIND_*, or -ENOENT. */
int gx_btf__find_by_name_kind(const struct gx_btf *btf, const char *name, uint32_t kind);
/* The type behind typedefs, const, volatile, restrict and type tags; 0 if bad. */
uint32_t gx_btf__skip_mods(const struct gx_btf *btf, uint32_t id);
/* Size in bytes (at most UINT32_MAX), or -EINVAL / -E2BIG. */
int64_t gx_btf__resolve_size(const struct gx_btf *btf, uint32_t id);

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

/* ---------------------------------------------------------- maps runtime
 *
 * One logical map for GPU, shim, tools and host policies.
 *
 * The canonical copy of a map lives on the host, by default in shared memory
 * (`/dev/shm/gpuext-$UID/<pid>-<name>`, folder 0700, file 0600; GPUEXT_SHM_DIR
 * overrides the folder) so `gpuext map list|dump` can read it from outside the
 * process. The file is a page-sized header (struct gx_shm_hdr) followed by the
 * storage in the layout of gx_devrt.h. Device storage is a copy of that
 * storage made per CUDA context (gx_devmaps, below); flushing copies device
 * bytes back, so host and device never translate between formats.
 *
 * Semantics per type after a flush (relaxed, snapshot consistency: a flush
 * while kernels run sees each 8-byte word old or new):
 *  - ARRAY, HASH: the host copy equals the device copy at flush time. Host
 *    writes reach the device with gx_devmaps__push (before launches).
 *  - PERSM_ARRAY / PERWARP_ARRAY: every shard stays visible
 *    (gx_map__shard_elem); gx_map__merged_u64 gives the merged view: the sum
 *    over shards of each 64-bit word (counters). Values whose size is not a
 *    multiple of 8 have no merged view (-EINVAL).
 *  - RINGBUF: not copied; the ring itself is host memory the device writes
 *    (mapped with ops->host_map), drained by the host (gx_ring__drain).
 *
 * A struct gx_map starts with its struct gx_devrt_map whose `data` is the host
 * storage: that is the handle the host helpers (and native JIT code) take. */



#define GX_SHM_MAGIC 0x504d5847u /* "GXMP" */
#define GX_SHM_VERSION 1
#define GX_SHM_DATA_OFF 4096 /* storage starts page-aligned (host_map needs it) */
#define GX_MAP_NAME_MAX 64

struct gx_shm_hdr {
	uint32_t magic;   /* GX_SHM_MAGIC */
	uint32_t version; /* GX_SHM_VERSION */
	uint32_t hdr_size; /* sizeof(struct gx_shm_hdr) */
	uint32_t pid;     /* creating process */
	char name[GX_MAP_NAME_MAX];
	struct gx_devrt_map layout; /* .data = GX_SHM_DATA_OFF (offset in the file) */
	uint64_t gen;      /* bumped by every flush from the device */
	uint64_t flush_ns; /* CLOCK_REALTIME of the last flush */
	uint32_t dev;      /* device copy of this context: CUDA ordinal + 1 (0: none/unknown) */
	uint32_t ctx;      /* that context's index in the process (the "@N" of the name) */
	uint32_t flags;    /* GX_SHM_F_* */
	uint32_t reserved32;
	uint64_t reserved[4];
};

/* The verifier folded the map's bytes into its programs' code (.rodata*,
 * gx_bpf_section_is_rodata): nothing may write them after load. Set by
 * gx_map__seal, which also makes the file read-only (0400). */
#define GX_SHM_F_CONST 1u

struct gx_map {
	struct gx_devrt_map l; /* first: the helper handle; l.data = host storage */
	char name[GX_MAP_NAME_MAX];
	struct gx_shm_hdr *hdr; /* mapping base (shm or anonymous) */
	size_t map_size;
	int owner;   /* created here: unlink on free unless kept */
	int keep;
	int writable;
	char path[384]; /* "" for anonymous maps */
	void *sealed;   /* gx_map__seal: the private read-only copy l.data points at */
	int records;    /* GX_MAP_F_RECORDS: l.data holds the drainer's last look */
	size_t sealed_len;
};

struct gx_map_spec {
	const char *name;
	unsigned type; /* GX_MAP_* */
	unsigned key_size, value_size, max_entries;
	unsigned nr_shards; /* sharded arrays: shard count (0 = 1) */
};

enum {
	GX_MAP_F_SHM = 1u << 0,  /* back with a file in the shm folder */
	GX_MAP_F_KEEP = 1u << 1, /* leave the file when the map is freed */
	/* a record table (GDEV_F_RECORDS; arrays only): gx_devmaps drains it
	 * (gx_devmaps__drain_records) instead of flushing it */
	GX_MAP_F_RECORDS = 1u << 2,
};

/* Create a map (zero-filled). Returns 0 or -errno; messages go to gx_log. */
int gx_map__create(const struct gx_map_spec *spec, unsigned flags, struct gx_map **out);
/* Open a map file created by another process (read-only unless writable).
 * A constant map (GX_SHM_F_CONST) is never opened for writing: -EROFS. */
int gx_map__open(const char *path, int writable, struct gx_map **out);
void gx_map__free(struct gx_map *m);
/* Make a map constant (global data the verifier folds:
 * GX_BPF_MAP_F_RDONLY), its storage starting with the `len` bytes the
 * programs were verified with (`bytes`; NULL: the storage as it is). From
 * then on this process reads a private, read-only copy (l.data changes: take
 * it after this call; a write faults, an update fails with -EPERM), so no
 * write to the shared file, by gpuext or anyone else, reaches the programs;
 * the file gets the same bytes for `gpuext map dump`, says GX_SHM_F_CONST
 * and becomes 0400. Arrays only. 0 or -errno. */
int gx_map__seal(struct gx_map *m, const void *bytes, size_t len);
/* Whether m is constant: sealed here, or marked so by the process that
 * created its file. */
int gx_map__is_const(const struct gx_map *m);

/* Folder of the shm files: $GPUEXT_SHM_DIR or /dev/shm/gpuext-$UID. */
int gx_map_shm_dir(char *buf, size_t n);
/* Override the folder for this process (NULL or "": back to the default). */
void gx_map_shm_dir_set(const char *dir);
/* The folder without the override: what files shared by every process of
 * the user (the tenant table) use, whatever a live attach set. */
int gx_map_shm_dir_default(char *buf, size_t n);
/* Compute the layout (sizes, shard and bucket counts) of a spec; -EINVAL if
 * the spec is invalid. layout->data is left 0. */
int gx_map_layout(const struct gx_map_spec *spec, struct gx_devrt_map *layout);

/* Host-side operations with the helpers' semantics (sharded arrays use the
 * shard of gx_host_env). Return 0 / pointer, or -errno / NULL. */
void *gx_map__lookup(struct gx_map *m, const void *key);
int gx_map__update(struct gx_map *m, const void *key, const void *value, uint64_t flags);
int gx_map__delete(struct gx_map *m, const void *key);
/* Iterate keys: prev NULL gives the first. Returns 0, or -ENOENT at the end.
 * Hash maps iterate in bucket order. */
int gx_map__next_key(struct gx_map *m, const void *prev, void *next);
/* Element idx of shard s (arrays: s = 0). */
void *gx_map__shard_elem(struct gx_map *m, unsigned shard, unsigned idx);
/* Merged view of a sharded array element: out[w] = sum over shards of word w
 * (value_size / 8 words). */
int gx_map__merged_u64(struct gx_map *m, unsigned idx, uint64_t *out);
/* RINGBUF maps: the ring. */
struct gx_ring *gx_map__ring(struct gx_map *m);
const char *gx_map_type_name(unsigned type);

/* ---- ring consumer (ring.c) ---- */
/* Initialize a ring of `size` data bytes (power of two, >= 64) at r. */
int gx_ring__init(struct gx_ring *r, uint64_t size);
/* Bytes a ring of `size` data bytes occupies. */
static inline size_t gx_ring_bytes(uint64_t size)
{
	return sizeof(struct gx_ring) + (size_t)size;
}
/* Records refused so far (the sum of the producers' drop shards); drains
 * store it in r->drops. */
uint64_t gx_ring__drops(const struct gx_ring *r);
/* Forget the producers' "full" hints (drains do it once they made room). */
void gx_ring__clear_hints(struct gx_ring *r);
typedef int (*gx_ring_cb)(void *ctx, unsigned type, const void *rec, size_t len);
/* Consume committed records in order (PAD records skipped), calling cb with
 * the whole record (header included) and its exact length; a non-zero cb
 * return stops after that record. Returns the number consumed. */
long gx_ring__drain(struct gx_ring *r, gx_ring_cb cb, void *ctx);
/* Format a printk record ("%d %u %x %ld %lu %lx %lld %llu %llx %p %%"). */
int gx_printk_format(const struct gx_rec_printk *rec, char *out, size_t n);

/* ---- device copies (maps_dev.c), testable without a GPU ---- */
struct gx_dev_ops {
	void *ctx;
	int (*alloc)(void *ctx, size_t size, uint64_t *daddr);
	void (*free)(void *ctx, uint64_t daddr);
	int (*htod)(void *ctx, uint64_t daddr, const void *src, size_t n);
	int (*dtoh)(void *ctx, void *dst, uint64_t daddr, size_t n);
	/* Make page-aligned host memory addressable by the device (rings). */
	int (*host_map)(void *ctx, void *host, size_t n, uint64_t *daddr);
	void (*host_unmap)(void *ctx, void *host);
	/* Device rings (all three or none). With them, rings live in device
	 * memory (reservations are L2 atomics, not PCIe ones) and
	 * gx_devmaps__drain copies them to their host mirror; without them
	 * rings are host memory mapped for the device (host_map). Both queue
	 * on the consumer's private stream, in order; sync waits for it.
	 * dtoh must also run on that stream (it is waited for before return). */
	int (*dzero_async)(void *ctx, uint64_t daddr, size_t n);
	int (*htod_async)(void *ctx, uint64_t daddr, const void *src, size_t n);
	int (*sync)(void *ctx);
};

struct gx_devmaps;
/* Allocate device storage for maps[0..n) (index = the JIT's map index),
 * upload the host copies, build and upload struct gx_devrt. rt_ring: the
 * runtime ring for printk/prefetch records (page-aligned host memory) or NULL. */
int gx_devmaps__create(struct gx_map *const *maps, size_t n, struct gx_ring *rt_ring,
		       size_t rt_ring_bytes, unsigned devrt_flags, const struct gx_dev_ops *ops,
		       struct gx_devmaps **out);
/* Consume the records of ring map `map` (its index), or of the runtime
 * ring with GX_DEVMAPS_RT, through cb (as gx_ring__drain). Device rings:
 * copies the committed span to the host mirror (the map's ring / the
 * rt_ring given to create), parses it there, clears the consumed records on
 * the device and publishes the new tail; the mirror's drops mirror the
 * device's. Host-mapped rings drain in place. Returns records consumed. */
#define GX_DEVMAPS_RT (-1L)
long gx_devmaps__drain(struct gx_devmaps *d, long map, gx_ring_cb cb, void *ctx);
/* Take the records of record table `map` (GX_MAP_F_RECORDS) through cb, as
 * ring records (GX_REC_DATA, the value's bytes after the header): a slot
 * that is not all zero, holds what the previous call saw and was not
 * handed on already is handed on; one seen for the first time (or changed)
 * waits for the next call. The device's slots are only read (a program may
 * fill a taken slot again at any time). final (the producers are done: the context was
 * synchronized): a second look at once takes those too. *pending (may be
 * NULL): slots left waiting. Returns records taken or -errno. */
long gx_devmaps__drain_records(struct gx_devmaps *d, long map, gx_ring_cb cb, void *ctx, int final,
			       long *pending);
/* The struct gx_devrt (device addresses of the maps and the runtime ring):
 * what the shim copies into each instrumented module's __gx_devrt. */
const struct gx_devrt *gx_devmaps__devrt(const struct gx_devmaps *d);
/* Device -> host copy of every array/hash/sharded map; bumps gen. */
int gx_devmaps__flush(struct gx_devmaps *d);
/* Host -> device copy (after host-side updates). */
int gx_devmaps__push(struct gx_devmaps *d);
void gx_devmaps__free(struct gx_devmaps *d);

/* -------------------------------------------------------------------- JIT
 *
 * eBPF -> LLVM IR -> PTX `.func`s or native code (LLVM 19).
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
 *    bitcode are linked in and inlined; maps are reached through the module's
 *    constant-bank block `__gx_devrt` (struct gx_devrt, gx_devrt.h; read with
 *    ld.const), declared `.extern .const` unless define_devrt.
 *  - GX_JIT_NATIVE: ORC LLJIT; functions `uint32_t f(void *ctx)` calling the
 *    host helper implementations (hosthelpers_internal.h) on host maps (gx_map). */


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
	/* PTX: array lookups of a known map (`r1 = map; call`) take the map's
	 * max_entries and value stride as immediates instead of reading them
	 * from __gx_devrt (docs/devbpf-perf.md, "Map geometry folded"). */
	int fold_geometry;
};

struct gx_jit;

/* Translate and compile. Returns NULL with errno set and a message in err
 * ("prog NAME insn N: reason" for translation errors). */
struct gx_jit *gx_jit__new(const struct gx_jit_prog *progs, size_t nr_progs,
			   const struct gx_jit_opts *opts, char *err, size_t err_sz);
void gx_jit__free(struct gx_jit *j);
/* fold_geometry as the environment asks: GX_JIT_FOLD=0 turns it off (an
 * A/B switch; on by default). Part of the policy cache's key
 * (gx_pcache_key). Inline: the cache code reads it without the JIT. */
static inline int gx_jit__fold_env(void)
{
	const char *e = getenv("GX_JIT_FOLD");
	return !(e && e[0] == '0' && !e[1]);
}

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

#ifdef __cplusplus
}
#endif

#endif
