/* verifier_internal.h — internal types of the SIMT verifier, shared by its files:
 *   verifier_cfg.c     instruction checks, subprograms, CFG and reachability
 *   verifier_scalar.c  value ranges of scalars (ALU transfer functions)
 *   verifier_mem.c     memory accesses: context, stack, map values
 *   verifier_helpers.c helper prototypes and call checks
 *   verifier.c         path exploration, state pruning, branches, calls, exit
 *   disasm.c           disassembly and the per-insn facts of `bpf dump`
 *
 * The abstract state of one path: a stack of frames; each frame has typed
 * registers (with value ranges and a lane-varying bit) and a 512-byte stack
 * with per-byte initialisation, spilled registers per 8-byte slot and a
 * lane-varying bit per slot. */
#ifndef GX_BPF_VERIFIER_H
#define GX_BPF_VERIFIER_H

#include "devbpf/bpf_internal.h"

#define V_MAX_FRAMES 8
#define V_STACK 512
#define V_SLOTS (V_STACK / 8)
#define V_MAX_STATES_PER_INSN 128

enum vtype {
	V_NOT_INIT = 0,
	V_SCALAR,
	V_PTR_CTX,
	V_CONST_MAP,          /* a map handle (ld_imm64 map reference) */
	V_PTR_MAP_VALUE,
	V_PTR_MAP_VALUE_OR_NULL,
	V_PTR_STACK,
	V_PTR_FUNC,           /* subprogram address (bpf_loop callback) */
	V_PTR_ARG,            /* host struct_ops argument: map_idx = argument index,
			       * read-only, sec->args[map_idx].size bytes */
};

struct vreg {
	uint8_t type;
	uint8_t varying;   /* lane-varying */
	uint8_t tz;        /* scalar: known trailing zero bits; pointer: of the offset */
	uint8_t frame;     /* V_PTR_STACK: frame number */
	uint8_t addr;      /* scalar: an address, unusable as a value (it would
			    * leak): V_ADDR_* */
	int32_t map_idx;   /* map pointers; V_PTR_FUNC: target insn */
	uint32_t id;       /* V_PTR_MAP_VALUE_OR_NULL: copies share it */
	/* scalar value range */
	uint64_t umin, umax;
	int64_t smin, smax;
	/* scalar known bits: kmask has a 1 for every bit whose value is known,
	 * kval those values (all zero: nothing known) */
	uint64_t kmask, kval;
	/* pointers: offset range from the base (constant when omin == omax) */
	int64_t omin, omax;
};

/* Why a scalar is an unusable address (bits: joins keep both). */
enum {
	V_ADDR_FRAME = 1, /* a pointer into a frame that returned */
	V_ADDR_RET = 2,   /* a pointer a subprogram left in r0 */
};

enum { SLOT_INVALID = 0, SLOT_MISC, SLOT_SPILL };

struct vslot {
	uint8_t kind;
	uint8_t init;     /* bit per byte: initialised */
	uint8_t varying;  /* some byte holds a lane-varying value */
	uint8_t poison;   /* bit per byte: never readable (not initialised): what
			   * a partial store left of a spilled pointer, or, when
			   * mixed, a pointer some bpf_loop iterations leave here
			   * and others not */
	uint8_t mixed;
	uint8_t written;  /* stored to since the innermost bpf_loop began */
	struct vreg spill;
};

struct vframe {
	struct vreg regs[11];
	struct vslot stack[V_SLOTS]; /* slot i covers bytes [-(i+1)*8, -i*8) */
	int32_t callsite;            /* insn of the call, -1 for the main frame */
	int32_t subprog;
	/* bpf_loop callback frame and the loop's bound */
	uint8_t is_callback;
	uint64_t cb_iters;
};

struct vstate {
	struct vframe *frames[V_MAX_FRAMES];
	int nframes;
	uint32_t path_insns;   /* insns executed on this path so far */
	uint32_t path_calls;   /* helper calls on this path so far */
	uint32_t back_edges;   /* back edges taken on this path */
	struct vstored *parent; /* nearest stored state on this path (pruning) */
};

/* A state kept at a prune point. */
struct vstored {
	struct vstate st;
	struct vstored *parent;
	uint32_t refs;        /* live paths or children below it */
	uint32_t rem_insns;   /* max insns seen after it on any finished path */
	uint32_t rem_calls;
	struct vstored *next; /* same insn */
};

struct vsubprog {
	uint32_t start, end;  /* [start, end) */
	uint32_t stack_depth; /* max bytes used */
	bool is_callback;
	uint8_t *calls;       /* subprogram indices it calls (bitmap by index) */
};

/* Per-insn facts for `bpf dump`: the join of every state seen there. */
struct gx_vfacts {
	uint32_t seen;
	struct vreg regs[11];
	uint8_t frame;
	uint8_t varying_use; /* the insn reads a lane-varying value */
};

struct venv {
	struct gx_bpf_prog *prog;
	const struct bpf_insn *insns;
	uint32_t cnt;
	const struct gx_bpf_sec_def *sec;
	struct gx_bpf_budget budget;
	bool simt;
	bool collect;
	struct gx_bpf_verify_opts opts;
	/* cfg */
	uint8_t *prune_point;
	uint16_t *live;          /* per insn: registers r0-r9 live on entry */
	uint8_t *is_jmp_target;
	int32_t *subprog_of;     /* per insn */
	struct vsubprog *subprogs;
	uint32_t nsubprogs;
	/* exploration */
	struct vstored **stored; /* per insn list */
	uint32_t *nstored;
	struct vpending *pending;
	uint32_t npending, cap_pending;
	uint32_t processed;
	uint32_t nstates;
	uint32_t max_path, max_calls;
	uint32_t next_id;
	uint8_t *varying;        /* per insn, for the JIT */
	struct vframe *free_frames; /* recycled frames */
	struct gx_vfacts *facts; /* per insn when collecting */
	/* error */
	int err_insn;
	char msg[256];
};

struct vpending {
	struct vstate st;
	uint32_t insn;
};

/* Report a rejection: sets env->msg ("prog NAME insn N: reason") and returns
 * -EINVAL. */
int verr(struct venv *env, uint32_t insn, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A register read as a value: initialised, and not a dangling address. */
int vcheck_value(struct venv *env, uint32_t idx, const struct vreg *r, int regno);

/* verifier_cfg.c */
int vcfg_check(struct venv *env);
int vcfg_liveness(struct venv *env);

/* verifier_scalar.c */
void vreg_mark_unknown(struct vreg *r);
void vreg_set_const(struct vreg *r, uint64_t v);
void vreg_set_urange(struct vreg *r, uint64_t lo, uint64_t hi);
bool vreg_is_const(const struct vreg *r);
bool vreg_sync(struct vreg *r); /* false: empty range (infeasible) */
/* Known bits of scalar o include those of c (same values)? */
bool vreg_bits_cover(const struct vreg *o, const struct vreg *c);
/* c's known bits become those known in both with the same value. */
void vreg_bits_join(struct vreg *c, const struct vreg *o);
int vscalar_alu(struct venv *env, uint32_t idx, const struct bpf_insn *in, struct vreg *dst,
		const struct vreg *src);
/* Refine dst/src for a branch outcome; returns 0 infeasible, 1 feasible. */
int vscalar_branch(uint8_t op, bool is32, struct vreg *a, struct vreg *b, bool taken);
/* Decide a comparison: 1 always taken, 0 never, -1 unknown. */
int vscalar_cmp_known(uint8_t op, bool is32, const struct vreg *a, const struct vreg *b);
uint64_t gx_bpf_alu_eval(uint8_t code, int16_t off, int32_t imm, uint64_t dst, uint64_t src);

/* verifier_mem.c */
/* Does the slot hold an address (a spilled pointer, or a dangling one)? Its
 * bytes may be moved only as the whole 8-byte spill. */
static inline bool vslot_has_addr(const struct vslot *s)
{
	return s->kind == SLOT_SPILL && (s->spill.type != V_SCALAR || s->spill.addr);
}
int vmem_access(struct venv *env, struct vstate *st, uint32_t idx, uint8_t ptr_reg, int16_t off,
		int size, bool write, int value_reg, bool sx, bool atomic);
/* Check that [ptr+0, ptr+size) is readable (write: writable) initialised
 * memory for a helper argument; *varying set if any byte is lane-varying.
 * What a helper reads goes into `sink` (a map, a ring): it must hold no
 * address ("HELPER: rN leaks addr into SINK"). */
int vmem_helper_mem(struct venv *env, struct vstate *st, uint32_t idx, uint8_t regno,
		    uint64_t size, bool write, bool *varying, const char *helper, const char *sink);
/* Is the stack memory at p+off (size bytes) lane-varying? (The old value an
 * atomic on the stack returns.) mark: make it so (written by an atomic
 * whose outcome is lane-varying). False when p is no stack pointer. */
bool vmem_stack_varying(struct vstate *st, const struct vreg *p, int16_t off, int size, bool mark);
struct vframe *vcur(struct vstate *st);

/* The argument behind a V_PTR_ARG register. */
static inline const struct gx_bpf_ctx_arg *varg_of(const struct venv *env, const struct vreg *r)
{
	return &env->sec->args[r->map_idx];
}

/* verifier_helpers.c */
int vhelper_call(struct venv *env, struct vstate *st, uint32_t idx, int32_t id,
		 uint32_t *cb_target, uint64_t *cb_iters);
const char *vhelper_name(int32_t id);

/* disasm.c */
void vfacts_record(struct venv *env, uint32_t idx, const struct vstate *st);

#endif
