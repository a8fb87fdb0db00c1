/* ptx_ir_internal.h — the in-memory form of a PTX module, shared by the parser, the
 * emitter and every pass (pass_*.c).
 *
 * Why this shape: passes mostly insert code (before ret/exit, around memory
 * instructions, at kernel entry) and rename a few operands, so the IR is a
 * doubly linked list of top-level items and, inside a function, a flat doubly
 * linked list of statements where nested `{ }` scopes are OPEN/CLOSE markers.
 * Everything lives in one arena owned by the module: a pass never frees, it
 * unlinks. Strings are NUL-terminated arena copies; modifiers keep their
 * leading dot (".global"), so the emitter prints them back as they are.
 * Anything the parser does not model (debug sections, .file, .loc,
 * .callprototype, unknown directives, odd operand expressions) is kept
 * verbatim, never dropped. Comments are dropped.
 *
 * Internal to ptx-rewrite (prefix ptx_, hidden visibility): the public entry
 * point is gx_ptx_rewrite() in gx_ptx.h. Design notes: docs/ptx-rewrite.md. */
#ifndef PTX_IR_H
#define PTX_IR_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "common/gx_util.h"

struct ptx_arena;

/* ---------------------------------------------------------------- operands */

enum ptx_opnd_kind {
	PTX_OPND_ID,    /* register, special register, symbol or label: text ("%r1",
			 * "%tid.x", "$L__BB0_1", "param0", "_Z3fooi") */
	PTX_OPND_INT,   /* integer immediate: text as written ("-1", "0x10", "7U"), ival */
	PTX_OPND_FLOAT, /* float immediate: text ("0f3F800000", "0d3FF0000000000000", "1.5") */
	PTX_OPND_VEC,   /* { e0, e1, ... }  (elements may be ID, SINK, INT, FLOAT) */
	PTX_OPND_ADDR,  /* [ e0 (+off) (, e1, e2 ...) ]: e0 is the base (ID or INT) with
			 * constant offset `off`; further elements for tex/tma/etc.
			 * ("[tex, {%f1, %f2}]", "[%rd1, {%r1, %r2}]") */
	PTX_OPND_LIST,  /* ( e0, e1, ... ): call return value and argument lists */
	PTX_OPND_PIPE,  /* e0 | e1: setp's two predicate destinations */
	PTX_OPND_SINK,  /* _ */
	PTX_OPND_EXPR,  /* anything else, kept verbatim in text */
};

struct ptx_opnd {
	enum ptx_opnd_kind kind;
	unsigned char neg;      /* '!' prefix (negated predicate operand) */
	const char *text;       /* ID name, INT/FLOAT/EXPR source text; NULL otherwise */
	long long ival;         /* INT value */
	long long off;          /* ADDR: constant byte offset added to elems[0] */
	unsigned n;             /* VEC/ADDR/LIST/PIPE: number of elements */
	struct ptx_opnd **elems;
};

/* ------------------------------------------------------------ declarations */

enum ptx_space {
	PTX_SPACE_NONE = 0,
	PTX_SPACE_REG,
	PTX_SPACE_SREG,
	PTX_SPACE_CONST,
	PTX_SPACE_GLOBAL,
	PTX_SPACE_LOCAL,
	PTX_SPACE_PARAM,
	PTX_SPACE_SHARED,
	PTX_SPACE_TEX,
	PTX_SPACE_GENERIC, /* instructions without a state-space modifier */
	PTX_SPACE_OTHER,   /* a space we do not model, e.g. a future one */
};

/* Linkage bits (module-level declarations and functions). */
enum {
	PTX_LINK_VISIBLE = 1u << 0,
	PTX_LINK_EXTERN = 1u << 1,
	PTX_LINK_WEAK = 1u << 2,
	PTX_LINK_COMMON = 1u << 3,
};

#define PTX_MAX_DIMS 4
#define PTX_MAX_REGS 0xffffffu          /* %r<N>: N at most 2^24 - 1 */
#define PTX_MAX_ELEMS (1ull << 48)      /* array elements, address offsets */

/* One declared name: `.reg .b32 %r<5>;`, `.shared .align 4 .b8 buf[1024];`,
 * `.visible .global .align 8 .u64 tab[2] = {1, 2};`, a parameter
 * `.param .u64 .ptr .global .align 16 p`. A source declaration of several names
 * (`.reg .pred p, q;`) becomes several decls. Emitted in this order:
 * linkage attr space align vec type [.ptr ptr_space .align ptr_align]
 * name<range>[dims] = init */
struct ptx_decl {
	unsigned linkage;       /* PTX_LINK_* (module level), 0 inside functions */
	enum ptx_space space;
	const char *space_str;  /* as written: ".reg", ".shared", ".param", ".shared::cta" */
	const char *attr;       /* ".attribute(.managed)" verbatim, or NULL */
	unsigned align;         /* .align N before the type; 0 = none */
	unsigned vec;           /* .v2/.v4/.v8 → 2/4/8; 0 = scalar */
	const char *type;       /* ".b32", ".pred", ".u64", ".texref", ".samplerref" */
	unsigned char is_ptr;   /* param attribute .ptr */
	const char *ptr_space;  /* ".global" ... after .ptr, or NULL */
	unsigned ptr_align;     /* .align N after .ptr; 0 = none */
	const char *name;
	unsigned range;         /* %r<N> → N; 0 = a single name */
	unsigned ndims;
	long long dims[PTX_MAX_DIMS]; /* -1 for an unsized dimension `[]` */
	const char *init;       /* text after '=' up to ';' (verbatim, trimmed), or NULL */
};

/* ------------------------------------------------------------ instructions */

struct ptx_insn {
	const char *guard;       /* guard predicate register ("%p1"), NULL if none */
	unsigned char guard_neg; /* @!%p */
	const char *opcode;      /* "ld", "mma", "call" */
	unsigned nmods;
	const char **mods;       /* {".global", ".v4", ".f32"}: the rest of the opcode */
	unsigned nops;
	struct ptx_opnd **ops;
};

/* Calls: `call.uni (retval0), _Z3fooi, (param0, param1);` has ops
 * LIST(retval0), ID(_Z3fooi), LIST(param0, param1); an indirect call adds a
 * trailing ID (the prototype label or a .calltargets label). Without return
 * values the first LIST is absent. ptx_call_parts() splits them. */
struct ptx_call_parts {
	struct ptx_opnd *rets;   /* LIST or NULL */
	struct ptx_opnd *callee; /* ID (function or register) */
	struct ptx_opnd *args;   /* LIST or NULL */
	struct ptx_opnd *proto;  /* ID or NULL */
};
int ptx_call_parts(const struct ptx_insn *in, struct ptx_call_parts *cp);

/* -------------------------------------------------------------- statements */

enum ptx_stmt_kind {
	PTX_STMT_OPEN,     /* { : opens a nested scope */
	PTX_STMT_CLOSE,    /* } */
	PTX_STMT_DECL,     /* decl */
	PTX_STMT_LABEL,    /* label: text */
	PTX_STMT_INSN,     /* insn */
	PTX_STMT_VERBATIM, /* text: .loc, .pragma "..."; , .callprototype ...; ,
			    * .branchtargets ...; , unknown directives (kept as written) */
};

struct ptx_stmt {
	struct ptx_stmt *prev, *next;
	enum ptx_stmt_kind kind;
	unsigned line, col;      /* source position; 0:0 for inserted statements */
	union {
		struct ptx_decl decl;
		struct ptx_insn insn;
		const char *text;    /* LABEL name (without ':'), VERBATIM text */
	};
};

/* --------------------------------------------------------------- functions */

/* A performance directive or attribute after the parameter list:
 * .maxntid 256, 1, 1 / .reqntid / .minnctapersm / .maxnreg / .explicitcluster /
 * .reqnctapercluster / .maxclusterrank / .noreturn / .pragma "..."; ... */
struct ptx_perf {
	const char *name;  /* ".maxntid" */
	const char *args;  /* "256, 1, 1", "\"nounroll\"" or NULL */
	unsigned nvals;    /* up to 3 integer arguments parsed from args */
	unsigned vals[3];
	unsigned char semi; /* written with a trailing ';' (.pragma) */
};

struct ptx_func {
	unsigned linkage;        /* PTX_LINK_* */
	unsigned char is_entry;  /* .entry (kernel) vs .func */
	unsigned char has_rets;  /* a return parameter list was written */
	unsigned char has_params;/* a parameter list was written (even empty) */
	unsigned char has_body;  /* 0: a declaration ending in ';' */
	const char *attr;        /* ".attribute(...)" verbatim or NULL */
	const char *name;
	unsigned nrets, nparams, nperf;
	struct ptx_decl *rets;   /* arrays in the arena */
	struct ptx_decl *params;
	struct ptx_perf *perf;
	/* Body statements without the outermost braces. */
	struct ptx_stmt *head, *tail;
};

/* -------------------------------------------------------------- the module */

enum ptx_item_kind {
	PTX_ITEM_VERSION,      /* .version major.minor */
	PTX_ITEM_TARGET,       /* .target sm_90a, debug */
	PTX_ITEM_ADDRESS_SIZE, /* .address_size 64 */
	PTX_ITEM_DECL,         /* module-level variable (global, const, shared, tex ...) */
	PTX_ITEM_FUNC,         /* .entry / .func, definition or declaration */
	PTX_ITEM_VERBATIM,     /* .file, .section, .alias, unknown directives */
};

struct ptx_item {
	struct ptx_item *prev, *next;
	enum ptx_item_kind kind;
	unsigned line, col;
	union {
		struct {
			unsigned major, minor;
		} version;
		struct {
			unsigned n;
			const char **names; /* "sm_90a", "debug", "texmode_independent" */
		} target;
		unsigned address_size;
		struct ptx_decl decl;
		struct ptx_func func;
		const char *text;
	};
};

struct ptx_module {
	struct ptx_arena *arena;
	struct ptx_item *head, *tail;
	/* Shortcuts to the first .version/.target/.address_size item (or NULL). */
	struct ptx_item *version, *target, *address_size;
	/* Prefix for fresh names, chosen so no name of the input starts with it:
	 * "__gx" normally. Registers are "%<prefix>_r<N>", labels "$<prefix>_L<N>". */
	const char *fresh_prefix;
	unsigned fresh_seq;
	size_t src_len;          /* bytes parsed (sizes the emitter's buffer) */
	size_t emit_hint;        /* bytes passes expect to add (the same) */
	char err[256];           /* last error: "line:col: message" */
};

/* ------------------------------------------------------------------ arena */

void *ptx_alloc(struct ptx_module *m, size_t size);    /* zeroed; NULL on ENOMEM */
char *ptx_strdup(struct ptx_module *m, const char *s);
char *ptx_strndup(struct ptx_module *m, const char *s, size_t n);
char *ptx_sprintf(struct ptx_module *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
char *ptx_vsprintf(struct ptx_module *m, const char *fmt, va_list ap);
/* a (alen bytes) followed by b (blen bytes), NUL-terminated: names built per
 * hook site without printf. */
char *ptx_concat(struct ptx_module *m, const char *a, size_t alen, const char *b, size_t blen);

/* ---------------------------------------------------------- parse and emit */

/* Parse a whole module. Returns NULL and sets errno (EINVAL: syntax error,
 * a NUL byte in the text, empty input; ENOMEM) with "line:col: message" in
 * err (errlen bytes, may be 0). */
struct ptx_module *ptx_module_parse(const char *text, size_t len, char *err, size_t errlen);
/* 1 if text[0..len) holds a NUL (then "line:col: message" in err), else 0. */
int ptx_text_has_nul(const char *text, size_t len, char *err, size_t errlen);
/* An empty module (no items), for building one from snippets. */
struct ptx_module *ptx_module_new(void);
void ptx_module_free(struct ptx_module *m);

/* Append the module's PTX text to out. Returns 0 or -ENOMEM. */
int ptx_module_emit(const struct ptx_module *m, struct gx_buf *out);
/* N of the first sm_N in .target (0 if none). */
unsigned ptx_module_target_sm(const struct ptx_module *m);
/* Emit one statement / operand (no trailing newline), for logs and tests. */
void ptx_stmt_emit(const struct ptx_stmt *s, struct gx_buf *out);
void ptx_opnd_emit(const struct ptx_opnd *o, struct gx_buf *out);

/* Parse PTX statements (function-body syntax: instructions, declarations,
 * labels, scopes, directives) into a detached chain *first..*last (both NULL
 * for empty text). Errors: -EINVAL with "snippet:line:col: message" in m->err. */
int ptx_parse_stmts(struct ptx_module *m, const char *text, size_t len,
		    struct ptx_stmt **first, struct ptx_stmt **last);
/* Parse top-level PTX (functions, globals, directives; e.g. trampolines or a
 * policy module to link) into a detached chain of items. */
int ptx_parse_items(struct ptx_module *m, const char *text, size_t len,
		    struct ptx_item **first, struct ptx_item **last);

/* ---------------------------------------------------- editing statements */

/* Link a detached chain first..last before/after pos (pos NULL: at the end for
 * _before, at the head for _after). */
void ptx_insert_before(struct ptx_func *fn, struct ptx_stmt *pos, struct ptx_stmt *first,
		       struct ptx_stmt *last);
void ptx_insert_after(struct ptx_func *fn, struct ptx_stmt *pos, struct ptx_stmt *first,
		      struct ptx_stmt *last);
/* Format PTX text with printf and insert the parsed statements (ptx_text.c). Returns the
 * first inserted statement through *out if out != NULL. 0 or -errno. */
int ptx_insert_text_before(struct ptx_module *m, struct ptx_func *fn, struct ptx_stmt *pos,
			   struct ptx_stmt **out, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
int ptx_insert_text_after(struct ptx_module *m, struct ptx_func *fn, struct ptx_stmt *pos,
			  struct ptx_stmt **out, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* Building statements as IR (ptx_build.c), for snippets inserted many times:
 * the same IR the parser makes of the equivalent text, without printing and
 * re-parsing it. Strings are not copied (literals or arena strings). A failed
 * allocation sets chain->failed (and operand builders return NULL, which
 * ptx_chain_insn also records), so a whole snippet is checked once. */
struct ptx_chain {
	struct ptx_stmt *head, *tail;
	int failed;
	unsigned n;	/* statements linked by ptx_chain_link (a size estimate) */
};
/* Append s (whose prev/next are not yet set) to c. */
static inline void ptx_chain_link(struct ptx_chain *c, struct ptx_stmt *s)
{
	s->prev = c->tail;
	s->next = NULL;
	c->n++;
	if (c->tail)
		c->tail->next = s;
	else
		c->head = s;
	c->tail = s;
}
struct ptx_opnd *ptx_opnd_id(struct ptx_module *m, const char *name);
struct ptx_opnd *ptx_opnd_int(struct ptx_module *m, long long v);         /* "%lld" */
struct ptx_opnd *ptx_opnd_hex64(struct ptx_module *m, unsigned long long v); /* "0x%016llx" */
struct ptx_opnd *ptx_opnd_addr(struct ptx_module *m, struct ptx_opnd *base, long long off);
struct ptx_opnd *ptx_opnd_list(struct ptx_module *m, unsigned n, struct ptx_opnd *const *elems);
/* { e0, e1, ... } and e0|e1 (elements as for ptx_opnd_list). */
struct ptx_opnd *ptx_opnd_vec(struct ptx_module *m, unsigned n, struct ptx_opnd *const *elems);
struct ptx_opnd *ptx_opnd_pipe(struct ptx_module *m, struct ptx_opnd *a, struct ptx_opnd *b);
/* `{` (open != 0) or `}`. */
void ptx_chain_scope(struct ptx_module *m, struct ptx_chain *c, int open);
/* `NAME:` (a label, name with its sigil: "$__gx_L3"). */
void ptx_chain_label(struct ptx_module *m, struct ptx_chain *c, const char *name);
/* `.reg TYPE NAME;` or `.param TYPE NAME;` (space PTX_SPACE_REG/PARAM);
 * returns the statement (NULL on ENOMEM, also recorded in c). */
struct ptx_stmt *ptx_chain_decl(struct ptx_module *m, struct ptx_chain *c, enum ptx_space space,
				const char *type, const char *name);
/* `[@[!]guard] opcode mods... op, op...;` with nops struct ptx_opnd * after
 * nops; mods: nmods strings (".param", ".b64"), the array is copied
 * (PTX_MODS(".param", ".b64") gives both arguments). */
struct ptx_stmt *ptx_chain_insn(struct ptx_module *m, struct ptx_chain *c, const char *guard,
				int guard_neg, const char *opcode, unsigned nmods,
				const char *const *mods, unsigned nops, ...);
/* Move more's statements to the end of c. */
void ptx_chain_append(struct ptx_chain *c, struct ptx_chain *more);
/* Append a deep copy of src's statements (operands too) to dst. 0 or -ENOMEM. */
int ptx_chain_copy(struct ptx_module *m, struct ptx_chain *dst, const struct ptx_chain *src);
/* The statements as PTX text, one per line (no indentation). */
void ptx_chain_emit(const struct ptx_chain *c, struct gx_buf *out);
#define PTX_MODS(...) \
	(unsigned)(sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *)), \
		(const char *const[]){__VA_ARGS__}

/* Unlink s from fn's body (it stays in the arena). */
void ptx_stmt_remove(struct ptx_func *fn, struct ptx_stmt *s);

/* Where entry code goes: the first statement of the outermost scope that is
 * not a declaration or a verbatim directive (NULL: the end of the body). */
struct ptx_stmt *ptx_func_entry_point(struct ptx_func *fn);
/* Insert head..tail at fn's very start: code the sites put there to set a
 * register once (memtrace's seed, the hoisted warp index). Its statements
 * carry this column (their line is 0), so ptx_func_entry_point passes over
 * them and code placed at the entry later (an entry site that reads them)
 * comes after them. */
#define PTX_COL_START_REG 0xffffu
void ptx_insert_start_regs(struct ptx_func *fn, struct ptx_stmt *head, struct ptx_stmt *tail);

/* A fresh register of `type` (".b32", ".pred", ".b64" ...), declared at the
 * top of fn's body; the name cannot clash with any name of the input.
 * Returns the arena name ("%__gx_r12") or NULL on ENOMEM. */
const char *ptx_new_reg(struct ptx_module *m, struct ptx_func *fn, const char *type);
/* A fresh name for a label or symbol: "<sigil><prefix>_<what><N>", e.g.
 * ptx_fresh_name(m, "$", "L") → "$__gx_L3". */
const char *ptx_fresh_name(struct ptx_module *m, const char *sigil, const char *what);

/* --------------------------------------------------------- editing items */

void ptx_item_insert_before(struct ptx_module *m, struct ptx_item *pos, struct ptx_item *first,
			    struct ptx_item *last);
void ptx_item_insert_after(struct ptx_module *m, struct ptx_item *pos, struct ptx_item *first,
			   struct ptx_item *last);
void ptx_item_remove(struct ptx_module *m, struct ptx_item *it);
/* The first function (definition preferred over declaration) named `name`. */
struct ptx_item *ptx_find_func(struct ptx_module *m, const char *name);
/* Add a parameter to a function (copied). 0 or -ENOMEM. */
int ptx_func_add_param(struct ptx_module *m, struct ptx_func *fn, const struct ptx_decl *d);

/* Iterate. */
#define ptx_for_each_item(m, it) for (struct ptx_item *it = (m)->head; it; it = it->next)
/* Safe against unlinking/inserting around `s` (next is read first). */
#define ptx_for_each_stmt(fn, s, nxt) \
	for (struct ptx_stmt *s = (fn)->head, *nxt = s ? s->next : NULL; s; \
	     s = nxt, nxt = s ? s->next : NULL)

/* ---------------------------------------------------------- classification */

enum ptx_op_class {
	PTX_OP_OTHER = 0,
	PTX_OP_LD,        /* ld, ldu (incl. .nc, vector forms) */
	PTX_OP_ST,        /* st */
	PTX_OP_ATOM,      /* atom */
	PTX_OP_RED,       /* red */
	PTX_OP_FENCE,     /* membar, fence */
	PTX_OP_RET,       /* ret */
	PTX_OP_EXIT,      /* exit */
	PTX_OP_TRAP,      /* trap, brkpt */
	PTX_OP_CALL,      /* call */
	PTX_OP_BRA,       /* bra, brx.idx */
	PTX_OP_BAR,       /* bar, barrier (CTA barriers) */
	PTX_OP_PREFETCH,  /* prefetch, prefetchu, applypriority, discard */
	PTX_OP_ASYNC_COPY,/* cp.async*, cp.reduce.async*: bulk/TMA copies */
	PTX_OP_TEX,       /* tex, tld4, suld, sust, sured, txq, suq */
};

struct ptx_opinfo {
	enum ptx_op_class cls;
	enum ptx_space space;   /* LD/ST/ATOM/RED/PREFETCH: from the modifiers,
				 * PTX_SPACE_GENERIC if none is written */
	unsigned vec;           /* 1, 2, 4 or 8 */
	unsigned elem_size;     /* bytes of one element (.b32 → 4, .f16x2 → 4); 0 unknown */
	unsigned size;          /* vec * elem_size: bytes accessed per lane */
	int addr_op;            /* index of the address operand in ops[], -1 if none */
	unsigned char nc;       /* ld.global.nc */
};

/* Fills *info and returns info->cls. */
enum ptx_op_class ptx_classify(const struct ptx_insn *in, struct ptx_opinfo *info);
/* Does the instruction have modifier `mod` (".global")? */
int ptx_insn_has_mod(const struct ptx_insn *in, const char *mod);
/* Bytes of a PTX type (".b32" → 4, ".v4"-less), 0 for unknown/.pred. */
unsigned ptx_type_size(const char *type);
/* enum ptx_space for a space word (".global", ".shared::cta" ...), NONE if not one. */
enum ptx_space ptx_space_of(const char *word);

#endif
