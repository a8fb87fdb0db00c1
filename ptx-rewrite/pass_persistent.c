/* pass_persistent.c — which kernels the persistent-worker transform
 * (blocksched, docs/blocksched.md) may take, and what their loop needs; the
 * loop itself is pass_persist_loop.c.
 *
 * A kernel becomes a worker loop that runs the original body once per
 * logical block ("unit"), with every %ctaid/%nctaid read replaced by the
 * unit's coordinates and the original grid, and `ret`/`exit` turned into
 * "next unit". That is only the same program if nothing in the body can see
 * the difference. What is refused (logged with the reason, the kernel is
 * left untouched): clusters (special registers, cluster attributes,
 * barrier.cluster, mapa, ::cluster spaces), cooperative-groups grid sync
 * (%envreg reads, the cudaCG* entry points), dynamic parallelism
 * (cudaLaunchDevice, cudaGetParameterBuffer, device-side memcpy/memset, as
 * __cudaCDP2* since CUDA 12; itself or in a callee), a kernel named outside
 * its definition (another declaration, its address taken: launched from the
 * device with the old parameters), indirect calls and calls to
 * device functions that read %ctaid/%nctaid or execute `exit` (those reads
 * could not be virtualized), a barrier id that is not a constant or all 16
 * in use, a module below sm_70 (before it a CTA barrier counts a diverged
 * warp as arrived, and the loop's thread 0 claims while its warp waits) or
 * with 32-bit addresses (the runtime's), and
 * — the subtle one — early exit before a barrier: when a branch that may
 * diverge inside a CTA leads one side to ret/exit without passing a barrier
 * and the other side to a barrier, the original relies on exited threads not
 * being waited for, and the transformed kernel would deadlock (the "exited"
 * thread is alive, waiting at the loop head). Divergence is found by a
 * flow-insensitive uniformity analysis (values derived from %tid, %laneid,
 * atomics, votes, shuffles, loads through varying addresses, and definitions
 * under varying guards or inside varying branches are varying). Storing
 * %ctaid to memory is fine: only the special-register reads change.
 *
 * The unit barrier: a kernel that touches shared memory or uses CTA
 * barriers (itself or through a callee, or calls code we cannot see) needs
 * its whole block to finish a unit before any thread starts the next: a
 * fast warp would otherwise overwrite shared memory a slow one still reads,
 * or mix two units' barriers. Any other kernel (vector add, stencils,
 * elementwise ops) lets each warp run on through its units with no
 * barrier at all — run 6 measured the two barriers per unit of the first
 * transform at +12 % on a 1M-block vector add. */
#include <fnmatch.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuext/gx_work.h"
#include "ptx-rewrite/cfg_pdom_internal.h"
#include "ptx-rewrite/pass_internal.h"
#include "ptx-rewrite/passlib_internal.h"
#include "ptx-rewrite/persist_internal.h"

/* The pass's state: the module and the list it fills. */
struct check {
	struct ptx_module *m;
	struct ptx_pass_ctx *ctx;
	struct ptx_persist_set *out;
};

/* ------------------------------------------------------------ small sets */

struct nset {
	const char **v;
	size_t cap, n;
};

static size_t nhash_n(const char *s, size_t n)
{
	size_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h;
}

static size_t nhash(const char *s)
{
	return nhash_n(s, strlen(s));
}

static int nset_has(const struct nset *st, const char *s)
{
	if (!st->cap)
		return 0;
	for (size_t i = nhash(s) & (st->cap - 1);; i = (i + 1) & (st->cap - 1)) {
		if (!st->v[i])
			return 0;
		if (!strcmp(st->v[i], s))
			return 1;
	}
}

/* 1 if added, 0 if present, -ENOMEM */
static int nset_add(struct nset *st, const char *s)
{
	if (nset_has(st, s))
		return 0;
	if (2 * (st->n + 1) > st->cap) {
		size_t cap = st->cap ? 2 * st->cap : 64;
		const char **v = calloc(cap, sizeof(*v));
		if (!v)
			return -ENOMEM;
		for (size_t i = 0; i < st->cap; i++) {
			if (!st->v[i])
				continue;
			size_t j = nhash(st->v[i]) & (cap - 1);
			while (v[j])
				j = (j + 1) & (cap - 1);
			v[j] = st->v[i];
		}
		free(st->v);
		st->v = v;
		st->cap = cap;
	}
	size_t i = nhash(s) & (st->cap - 1);
	while (st->v[i])
		i = (i + 1) & (st->cap - 1);
	st->v[i] = s;
	st->n++;
	return 1;
}

/* ------------------------------------------------------------- operands */

typedef int (*opnd_fn)(struct ptx_opnd *o, void *arg);

/* Visit every ID/EXPR leaf of an operand tree; stops at a non-zero return. */
static int opnd_walk(struct ptx_opnd *o, opnd_fn f, void *arg)
{
	if (!o)
		return 0;
	if (o->kind == PTX_OPND_ID || o->kind == PTX_OPND_EXPR)
		return f(o, arg);
	for (unsigned i = 0; i < o->n; i++) {
		int r = opnd_walk(o->elems[i], f, arg);
		if (r)
			return r;
	}
	return 0;
}

static int insn_walk(struct ptx_insn *in, opnd_fn f, void *arg)
{
	for (unsigned i = 0; i < in->nops; i++) {
		int r = opnd_walk(in->ops[i], f, arg);
		if (r)
			return r;
	}
	return 0;
}

static int is_ctaid_name(const char *t)
{
	return !strncmp(t, "%ctaid", 6) || !strncmp(t, "%nctaid", 7);
}

static int find_ctaid(struct ptx_opnd *o, void *arg)
{
	(void)arg;
	if (o->kind == PTX_OPND_ID && is_ctaid_name(o->text))
		return 1;
	return o->kind == PTX_OPND_EXPR && (strstr(o->text, "%ctaid") || strstr(o->text, "%nctaid"));
}

/* ------------------------------------------------- per-function summary */

struct fsum {
	const struct ptx_func *fn;
	unsigned char reads_ctaid, has_exit, indirect, bad; /* bad: transitively unsafe */
	unsigned char smem_bar; /* shared memory or CTA barriers, transitively */
	const char *launch; /* devrt_launch() of a callee */
	const char *why;
};

static struct fsum *fsum_find(struct fsum *v, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].fn->name, name))
			return &v[i];
	return NULL;
}

static const char *callee_of(const struct ptx_insn *in)
{
	struct ptx_call_parts cp;
	if (ptx_call_parts(in, &cp) || !cp.callee->text)
		return NULL;
	return cp.callee->text;
}

/* A device-runtime entry point that starts a child grid, or NULL: launches
 * and device-side memcpy/memset (libcudadevrt runs those as kernels). CUDA 12+
 * headers map cudaLaunchDeviceV2 & co. to __cudaCDP2LaunchDeviceV2 (_ptsz:
 * per-thread default stream); CDP1 called the cuda* names. */
static const char *devrt_launch(const char *c)
{
	const char *r = !strncmp(c, "__cudaCDP2", 10) ? c + 10 : !strncmp(c, "cuda", 4) ? c + 4 : NULL;
	if (!r)
		return NULL;
	if (!strncmp(r, "LaunchDevice", 12) || !strncmp(r, "GetParameterBuffer", 18) ||
	    !strncmp(r, "GraphLaunch", 11))
		return "uses dynamic parallelism (device-side launch)";
	if (!strncmp(r, "Memcpy", 6) || !strncmp(r, "Memset", 6))
		return "uses dynamic parallelism (device-side memcpy/memset: a child grid)";
	return NULL;
}

/* Does the instruction touch shared memory or synchronise the CTA? (a
 * callee we cannot see counts: its caller decides). */
static int insn_smem_bar(const struct ptx_insn *in, const struct nset *shared_syms);

/* Summaries of all device functions, with "unsafe" propagated over calls. */
static struct fsum *summarize(struct ptx_module *m, const struct nset *shared_syms, size_t *nout)
{
	size_t n = 0;
	ptx_for_each_item(m, it) if (it->kind == PTX_ITEM_FUNC && !it->func.is_entry &&
				     it->func.has_body) n++;
	struct fsum *v = calloc(n ? n : 1, sizeof(*v));
	if (!v)
		return NULL;
	n = 0;
	ptx_for_each_item(m, it) {
		if (it->kind != PTX_ITEM_FUNC || it->func.is_entry || !it->func.has_body)
			continue;
		struct fsum *f = &v[n++];
		f->fn = &it->func;
		ptx_for_each_stmt(&it->func, s, nxt) {
			if (s->kind != PTX_STMT_INSN)
				continue;
			if (!strcmp(s->insn.opcode, "exit"))
				f->has_exit = 1;
			if (!strcmp(s->insn.opcode, "call")) {
				const char *c = callee_of(&s->insn);
				if (!c || c[0] == '%')
					f->indirect = 1;
				else if (!f->launch)
					f->launch = devrt_launch(c);
			}
			if (insn_walk(&s->insn, find_ctaid, NULL))
				f->reads_ctaid = 1;
			if (insn_smem_bar(&s->insn, shared_syms))
				f->smem_bar = 1;
		}
		if (f->reads_ctaid)
			f->why = "reads %ctaid/%nctaid";
		else if (f->has_exit)
			f->why = "executes exit";
		else if (f->indirect)
			f->why = "makes an indirect call";
		else if (f->launch)
			f->why = f->launch;
		f->bad = f->why != NULL;
	}
	for (int changed = 1; changed;) {
		changed = 0;
		for (size_t i = 0; i < n; i++) {
			if (v[i].bad)
				continue;
			for (const struct ptx_stmt *s = v[i].fn->head; s && !v[i].bad; s = s->next) {
				if (s->kind != PTX_STMT_INSN || strcmp(s->insn.opcode, "call"))
					continue;
				const char *c = callee_of(&s->insn);
				struct fsum *g = c ? fsum_find(v, n, c) : NULL;
				if ((!g || g->smem_bar) && !v[i].smem_bar) {
					v[i].smem_bar = 1;
					changed = 1;
				}
				if (g && g->bad) {
					v[i].bad = 1;
					v[i].why = "calls a device function that reads %ctaid, "
						   "exits, calls indirectly or launches a grid";
					changed = 1;
				}
			}
		}
	}
	*nout = n;
	return v;
}

/* --------------------------------------------------- uniformity and CFG */

static const char *const varying_sregs[] = {
	"%tid", "%laneid", "%warpid", "%lanemask", "%clock", "%globaltimer", "%smid",
	"%pm", "%reserved_smem", "%dynamic_smem_size",
};

struct unif {
	struct nset varying; /* register names */
	const struct ptx_func *fn;
};

static int is_varying_sreg(const char *t)
{
	for (size_t i = 0; i < GX_ARRAY_SIZE(varying_sregs); i++)
		if (!strncmp(t, varying_sregs[i], strlen(varying_sregs[i])))
			return !(i == GX_ARRAY_SIZE(varying_sregs) - 1); /* dyn smem: uniform */
	return 0;
}

static int src_varying(struct ptx_opnd *o, void *arg)
{
	struct unif *u = arg;
	if (o->kind == PTX_OPND_EXPR)
		return strchr(o->text, '%') != NULL; /* unknown: assume varying if it names a reg */
	if (o->text[0] != '%')
		return 0;
	return is_varying_sreg(o->text) || nset_has(&u->varying, o->text);
}

static int insn_has_dest(const struct ptx_insn *in)
{
	static const char *const nodest[] = {
		"st",    "red",   "bar",   "barrier", "bra",     "brx",      "ret",   "exit",
		"call",  "membar", "fence", "prefetch", "prefetchu", "trap",  "brkpt",
		"cp",    "sust",  "sured", "pmevent", "nanosleep", "griddepcontrol",
		"mbarrier", "wgmma", "tcgen05", "setmaxnreg", "elect", "stmatrix", "st.async",
		"applypriority", "discard", "multimem", "cvt.pack",
	};
	for (size_t i = 0; i < GX_ARRAY_SIZE(nodest); i++)
		if (nodest[i][0] == in->opcode[0] && !strcmp(in->opcode, nodest[i]))
			return !strcmp(in->opcode, "mbarrier") || !strcmp(in->opcode, "wgmma") ||
			       !strcmp(in->opcode, "elect");
	return 1;
}

/* Instructions whose result differs between threads whatever the inputs. */
static int insn_varying_result(const struct ptx_insn *in, const struct ptx_func *fn)
{
	static const char *const ops[] = {"atom", "activemask", "vote", "shfl", "match",
					  "redux", "elect", "mbarrier", "suld", "tex", "tld4"};
	for (size_t i = 0; i < GX_ARRAY_SIZE(ops); i++)
		if (ops[i][0] == in->opcode[0] && !strcmp(in->opcode, ops[i]))
			return 1;
	if (!strcmp(in->opcode, "ld") && ptx_insn_has_mod(in, ".param") && in->nops > 1 &&
	    in->ops[1]->kind == PTX_OPND_ADDR && in->ops[1]->n &&
	    in->ops[1]->elems[0]->kind == PTX_OPND_ID) {
		/* A kernel parameter is uniform; a call's return parameter is not. */
		const char *nm = in->ops[1]->elems[0]->text;
		for (unsigned i = 0; i < fn->nparams; i++)
			if (!strcmp(fn->params[i].name, nm))
				return 0;
		return 1;
	}
	return 0;
}

static int add_dest(struct unif *u, struct ptx_opnd *o, int *changed)
{
	if (!o)
		return 0;
	if (o->kind == PTX_OPND_ID && o->text[0] == '%') {
		int r = nset_add(&u->varying, o->text);
		if (r < 0)
			return r;
		*changed |= r;
		return 0;
	}
	if (o->kind == PTX_OPND_VEC || o->kind == PTX_OPND_PIPE)
		for (unsigned i = 0; i < o->n; i++) {
			int r = add_dest(u, o->elems[i], changed);
			if (r)
				return r;
		}
	return 0;
}

struct cfg {
	size_t n;
	struct ptx_stmt **st;   /* instructions and labels in order */
	unsigned char *bar, *ret, *divergent, *in_varying_region;
	unsigned char *reach_bar, *reach_ret_nobar;
	long *target;           /* bra: index of the target label; -1 */
};

static long label_index(const struct cfg *g, const char *name)
{
	for (size_t i = 0; i < g->n; i++)
		if (g->st[i]->kind == PTX_STMT_LABEL && !strcmp(g->st[i]->text, name))
			return (long)i;
	return -1;
}

static int is_cta_barrier(const struct ptx_insn *in)
{
	return (!strcmp(in->opcode, "bar") || !strcmp(in->opcode, "barrier")) &&
	       !ptx_insn_has_mod(in, ".warp") && !ptx_insn_has_mod(in, ".cluster");
}

static void cfg_free(struct cfg *g)
{
	free(g->st);
	free(g->bar);
	free(g->target);
}

static int cfg_build(struct ptx_func *fn, struct cfg *g)
{
	memset(g, 0, sizeof(*g));
	for (struct ptx_stmt *s = fn->head; s; s = s->next)
		if (s->kind == PTX_STMT_INSN || s->kind == PTX_STMT_LABEL)
			g->n++;
	size_t n = g->n ? g->n : 1;
	g->st = calloc(n, sizeof(*g->st));
	g->bar = calloc(6 * n, 1);
	g->target = calloc(n, sizeof(*g->target));
	if (!g->st || !g->bar || !g->target) {
		cfg_free(g);
		return -ENOMEM;
	}
	g->ret = g->bar + n;
	g->divergent = g->ret + n;
	g->in_varying_region = g->divergent + n;
	g->reach_bar = g->in_varying_region + n;
	g->reach_ret_nobar = g->reach_bar + n;
	size_t i = 0;
	for (struct ptx_stmt *s = fn->head; s; s = s->next)
		if (s->kind == PTX_STMT_INSN || s->kind == PTX_STMT_LABEL)
			g->st[i++] = s;
	for (i = 0; i < g->n; i++) {
		g->target[i] = -1;
		struct ptx_stmt *s = g->st[i];
		if (s->kind != PTX_STMT_INSN)
			continue;
		const struct ptx_insn *in = &s->insn;
		g->bar[i] = is_cta_barrier(in);
		g->ret[i] = !strcmp(in->opcode, "ret") || !strcmp(in->opcode, "exit");
		if (!strcmp(in->opcode, "bra") && in->nops == 1 && in->ops[0]->kind == PTX_OPND_ID)
			g->target[i] = label_index(g, in->ops[0]->text);
	}
	return 0;
}

/* Successors of node i (at most 2 here; brx is refused before). */
static int succs(const struct cfg *g, size_t i, long out[2])
{
	int k = 0;
	const struct ptx_stmt *s = g->st[i];
	if (s->kind == PTX_STMT_INSN) {
		const struct ptx_insn *in = &s->insn;
		if (g->ret[i]) {
			if (in->guard && i + 1 < g->n)
				out[k++] = (long)i + 1;
			return k;
		}
		if (!strcmp(in->opcode, "bra")) {
			if (g->target[i] >= 0)
				out[k++] = g->target[i];
			if (in->guard && i + 1 < g->n)
				out[k++] = (long)i + 1;
			return k;
		}
	}
	if (i + 1 < g->n)
		out[k++] = (long)i + 1;
	return k;
}

static void cfg_reach(struct cfg *g)
{
	for (int changed = 1; changed;) {
		changed = 0;
		for (size_t j = g->n; j-- > 0;) {
			long sv[2];
			int k = succs(g, j, sv);
			unsigned char rb = g->bar[j], rr = g->ret[j];
			for (int t = 0; t < k; t++) {
				rb |= g->reach_bar[sv[t]];
				if (!g->bar[j])
					rr |= g->reach_ret_nobar[sv[t]];
			}
			if (rb != g->reach_bar[j] || rr != g->reach_ret_nobar[j]) {
				g->reach_bar[j] = rb;
				g->reach_ret_nobar[j] = rr;
				changed = 1;
			}
		}
	}
}

static int cfg_succs(const void *g, size_t i, long out[2])
{
	return succs(g, i, out);
}

/* A thread-dependent branch at i is harmless to barriers when its paths meet
 * again (at i's immediate post-dominator) before any barrier or exit: the
 * threads arrive at the join together, as nvcc's `for (c = tid; c < N;
 * c += blockDim)` copy loops do. Walks the region between i and the join. */
static int reconverges_clean(const struct cfg *g, size_t i, const long *ipdom, unsigned char *seen, long *todo)
{
	long join = ipdom[i];
	if (join < 0 || (size_t)join >= g->n || g->ret[i] || g->bar[i])
		return 0;
	memset(seen, 0, g->n);
	size_t nt = 0;
	long sv[2];
	int k = succs(g, i, sv);
	for (int t = 0; t < k; t++)
		if (sv[t] != join && !seen[sv[t]])
			seen[sv[t]] = 1, todo[nt++] = sv[t];
	while (nt) {
		long v = todo[--nt];
		if (g->bar[v] || g->ret[v])
			return 0;
		k = succs(g, (size_t)v, sv);
		for (int t = 0; t < k; t++)
			if (sv[t] != join && !seen[sv[t]])
				seen[sv[t]] = 1, todo[nt++] = sv[t];
	}
	return 1;
}

/* Uniformity fixpoint; fills g->divergent (varying conditional branches and
 * guarded ret/exit). */
static int uniformity(struct ptx_func *fn, struct cfg *g, struct unif *u)
{
	u->fn = fn;
	for (int changed = 1; changed;) {
		changed = 0;
		for (size_t i = 0; i < g->n; i++) {
			struct ptx_stmt *s = g->st[i];
			if (s->kind != PTX_STMT_INSN)
				continue;
			struct ptx_insn *in = &s->insn;
			int gv = in->guard && (nset_has(&u->varying, in->guard));
			if ((!strcmp(in->opcode, "bra") || g->ret[i]) && in->guard && gv &&
			    !g->divergent[i]) {
				g->divergent[i] = 1;
				changed = 1;
				/* Mark the region the branch controls (structured code:
				 * forward skip or a loop body). */
				long t = g->target[i];
				size_t lo = i + 1, hi = t >= 0 ? (size_t)t : g->n;
				if (t >= 0 && (size_t)t <= i) {
					lo = (size_t)t;
					hi = i;
				}
				for (size_t j = lo; j < hi && j < g->n; j++)
					g->in_varying_region[j] = 1;
			}
			if (!insn_has_dest(in) || !in->nops)
				continue;
			int v = gv || g->in_varying_region[i] || insn_varying_result(in, fn);
			for (unsigned k = 1; !v && k < in->nops; k++)
				v = opnd_walk(in->ops[k], src_varying, u);
			if (v) {
				int r = add_dest(u, in->ops[0], &changed);
				if (r)
					return r;
			}
		}
	}
	return 0;
}

/* ------------------------------------------------------------ the check */

static const char *const cluster_sregs[] = {
	"%clusterid", "%nclusterid", "%cluster_ctaid", "%cluster_nctaid",
	"%cluster_ctarank", "%cluster_nctarank", "%is_explicit_cluster",
};

struct scan {
	const char *why;
	char buf[160];
};

static int scan_opnd(struct ptx_opnd *o, void *arg)
{
	struct scan *sc = arg;
	const char *t = o->text;
	if (o->kind == PTX_OPND_EXPR) {
		if (strstr(t, "%cluster") || strstr(t, "%envreg") || strstr(t, "%ctaid") ||
		    strstr(t, "%nctaid")) {
			snprintf(sc->buf, sizeof(sc->buf), "operand '%s' not understood", t);
			sc->why = sc->buf;
			return 1;
		}
		return 0;
	}
	/* every name below is a special register: %c..., %n..., %e..., %i... */
	if (!t || t[0] != '%' || (t[1] != 'c' && t[1] != 'n' && t[1] != 'e' && t[1] != 'i'))
		return 0;
	for (size_t i = 0; i < GX_ARRAY_SIZE(cluster_sregs); i++)
		if (!strncmp(t, cluster_sregs[i], strlen(cluster_sregs[i]))) {
			snprintf(sc->buf, sizeof(sc->buf), "uses clusters (%s)", t);
			sc->why = sc->buf;
			return 1;
		}
	if (!strncmp(t, "%envreg", 7)) {
		snprintf(sc->buf, sizeof(sc->buf),
			 "reads %s (cooperative groups grid workspace: grid sync)", t);
		sc->why = sc->buf;
		return 1;
	}
	if (!strcmp(t, "%ctaid") || !strcmp(t, "%nctaid")) {
		snprintf(sc->buf, sizeof(sc->buf), "reads %s as a vector", t);
		sc->why = sc->buf;
		return 1;
	}
	return 0;
}

/* A ::cluster state space on a data access (ld/st/atom/red...) reaches other
 * CTAs' shared memory. TMA/bulk copies (cp.*) and mbarrier operations name
 * .shared::cluster for their own CTA's buffers even without a cluster launch
 * (a real cluster kernel is refused by its %cluster* reads or attributes). */
static int mod_has_cluster(const struct ptx_insn *in)
{
	if (!strcmp(in->opcode, "cp") || !strcmp(in->opcode, "mbarrier") ||
	    !strcmp(in->opcode, "fence"))
		return 0;
	for (unsigned i = 0; i < in->nmods; i++)
		if (strstr(in->mods[i], "::cluster"))
			return 1;
	return 0;
}

/* Returns NULL when safe, else the reason (static or in sc). *bar_id: the
 * barrier id the loop will use; *unit_bar: whether it needs the unit
 * barrier. */
static const char *check_kernel(struct check *ps, struct ptx_func *fn, struct fsum *fs,
				size_t nfs, const struct nset *shared_syms, struct scan *sc,
				unsigned *bar_id, int *unit_bar, int *nomem)
{
	static const char *const cluster_perf[] = {".explicitcluster", ".reqnctapercluster",
						   ".maxclusterrank"};
	*nomem = 0;
	for (unsigned i = 0; i < fn->nperf; i++)
		for (size_t k = 0; k < GX_ARRAY_SIZE(cluster_perf); k++)
			if (!strcmp(fn->perf[i].name, cluster_perf[k])) {
				snprintf(sc->buf, sizeof(sc->buf), "uses clusters (%s)",
					 cluster_perf[k]);
				return sc->buf;
			}
	unsigned used = 0; /* barrier ids */
	int barriers = 0;
	for (struct ptx_stmt *s = fn->head; s; s = s->next) {
		if (s->kind != PTX_STMT_INSN)
			continue;
		struct ptx_insn *in = &s->insn;
		const char *op = in->opcode;
		if (insn_walk(in, scan_opnd, sc))
			return sc->why;
		if (insn_smem_bar(in, shared_syms))
			*unit_bar = 1;
		if (!strcmp(op, "mapa") || !strcmp(op, "getctarank") || mod_has_cluster(in) ||
		    ((!strcmp(op, "barrier") || !strcmp(op, "bar")) &&
		     ptx_insn_has_mod(in, ".cluster")))
			return "uses clusters (distributed shared memory or cluster barrier)";
		if (!strcmp(op, "brx"))
			return "uses an indirect branch (brx.idx)";
		if (!strcmp(op, "call")) {
			const char *c = callee_of(in);
			if (!c || c[0] == '%')
				return "makes an indirect call (the callee could read %ctaid)";
			const char *dp = devrt_launch(c);
			if (dp)
				return dp;
			if (!strncmp(c, "cudaCG", 6))
				return "uses cooperative groups grid intrinsics (grid sync)";
			struct fsum *f = fsum_find(fs, nfs, c);
			if (!f || f->smem_bar)
				*unit_bar = 1;
			if (f && f->bad) {
				snprintf(sc->buf, sizeof(sc->buf), "calls device function %s, which %s",
					 c, f->why);
				return sc->buf;
			}
		}
		if (is_cta_barrier(in)) {
			barriers = 1;
			if (!in->nops) {
				used |= 1;
				continue;
			}
			if (in->ops[0]->kind != PTX_OPND_INT || in->ops[0]->ival < 0 ||
			    in->ops[0]->ival > 15)
				return "uses a barrier id that is not a constant 0..15";
			used |= 1u << in->ops[0]->ival;
		}
	}
	unsigned id = 0;
	while (id < 16 && (used & (1u << id)))
		id++;
	if (id == 16)
		return "uses all 16 CTA barriers (none left for the work loop)";
	*bar_id = id;
	if (!barriers)
		return NULL;
	/* Early exit vs barriers. */
	struct cfg g;
	struct unif u = {0};
	if (cfg_build(fn, &g)) {
		*nomem = 1;
		return "out of memory";
	}
	const char *why = NULL;
	long *ipdom = NULL, *todo = NULL;
	unsigned char *seen = NULL;
	if (uniformity(fn, &g, &u)) {
		*nomem = 1;
		why = "out of memory";
	} else {
		cfg_reach(&g);
		for (size_t i = 0; i < g.n && !why; i++) {
			if (!g.divergent[i])
				continue;
			long sv[2];
			int k = succs(&g, i, sv);
			int a_ret = g.ret[i] || (k > 0 && g.reach_ret_nobar[sv[0]]);
			int a_bar = !g.ret[i] && k > 0 && g.reach_bar[sv[0]];
			int b_ret = k > 1 && g.reach_ret_nobar[sv[1]];
			int b_bar = k > 1 && g.reach_bar[sv[1]];
			if (g.ret[i])
				b_bar = k > 0 && g.reach_bar[sv[0]];
			if (!(a_ret && b_bar) && !(b_ret && a_bar))
				continue;
			/* suspect: the post-dominators (once per kernel, only for
			 * kernels that get this far) say whether its paths join first */
			if (!ipdom) {
				ipdom = malloc((g.n ? g.n : 1) * sizeof(long));
				seen = malloc(g.n ? g.n : 1);
				todo = malloc((g.n ? g.n : 1) * sizeof(long));
				if (!ipdom || !seen || !todo || ptx_cfg_ipdom(&g, g.n, cfg_succs, ipdom)) {
					*nomem = 1;
					why = "out of memory";
					break;
				}
			}
			if (!reconverges_clean(&g, i, ipdom, seen, todo)) {
				snprintf(sc->buf, sizeof(sc->buf),
					 "threads may exit before a CTA barrier that others still "
					 "reach (line %u)", g.st[i]->line);
				why = sc->buf;
			}
		}
	}
	free(u.varying.v);
	free(ipdom), free(seen), free(todo);
	cfg_free(&g);
	(void)ps;
	return why;
}

/* ------------------------------------------- shared memory and barriers */

static int opnd_shared_sym(struct ptx_opnd *o, void *arg)
{
	const struct nset *syms = arg;
	if (o->kind == PTX_OPND_EXPR) {
		/* sym+8, generic(sym): any shared name inside */
		for (size_t i = 0; syms->cap && i < syms->cap; i++)
			if (syms->v[i] && strstr(o->text, syms->v[i]))
				return 1;
		return 0;
	}
	return o->text && (nset_has(syms, o->text) || !strncmp(o->text, "%dynamic_smem_size", 18) ||
			   !strncmp(o->text, "%total_smem_size", 16));
}

static int insn_smem_bar(const struct ptx_insn *in, const struct nset *shared_syms)
{
	const char *op = in->opcode;
	if (!strcmp(op, "bar") || !strcmp(op, "barrier"))
		return !ptx_insn_has_mod(in, ".warp");
	if (!strcmp(op, "mbarrier"))
		return 1;
	for (unsigned i = 0; i < in->nmods; i++)
		if (!strncmp(in->mods[i], ".shared", 7))
			return 1;
	return insn_walk((struct ptx_insn *)in, opnd_shared_sym, (void *)shared_syms) != 0;
}

/* Every .shared name of the module (module level and inside functions). */
static int shared_names(struct ptx_module *m, struct nset *out)
{
	ptx_for_each_item(m, it) {
		if (it->kind == PTX_ITEM_DECL && it->decl.space == PTX_SPACE_SHARED &&
		    nset_add(out, it->decl.name) < 0)
			return -ENOMEM;
		if (it->kind != PTX_ITEM_FUNC)
			continue;
		for (struct ptx_stmt *s = it->func.head; s; s = s->next)
			if (s->kind == PTX_STMT_DECL && s->decl.space == PTX_SPACE_SHARED &&
			    nset_add(out, s->decl.name) < 0)
				return -ENOMEM;
	}
	return 0;
}

/* What the module as a whole rules out (the runtime's needs). */
static const char *check_module(struct check *ps)
{
	struct ptx_module *m = ps->m;
	if (!ps->ctx->opts->persist_rt)
		return "no device runtime given to the rewriter";
	if (m->address_size && m->address_size->address_size != 64)
		return "32-bit addresses (the runtime needs 64)";
	unsigned sm = ptx_module_target_sm(m);
	if (sm && sm < 70)
		return "target below sm_70 (the loop's barrier must count threads, not warps: thread 0 "
		       "claims while its warp waits)";
	return NULL;
}

/* --------------------------------------- kernels named outside their body */

/* A kernel named anywhere but its own definition: another declaration of it
 * (a prototype, .extern or .weak), its address in an instruction operand
 * (mov of the address for cudaGetParameterBuffer/cudaLaunchDevice) or in a
 * variable's initialiser (libcudadevrt's memset/memcpy kernel tables). A
 * launch through that name passes the parameters of the original, and in
 * place the other declaration would no longer match the definition (ptxas:
 * "Inconsistent prototypes"): the kernel is left as it is. */
struct kref {
	struct nset names; /* kernels defined in the module */
	struct ptx_item **def; /* parallel to names.v: the defining item */
	const char **why; /* parallel to names.v: the first reason, or NULL */
	char (*buf)[128];
};

static long kref_slot(const struct kref *kr, const char *s, size_t n)
{
	if (!kr->names.cap)
		return -1;
	for (size_t i = nhash_n(s, n) & (kr->names.cap - 1);; i = (i + 1) & (kr->names.cap - 1)) {
		const char *v = kr->names.v[i];
		if (!v)
			return -1;
		if (!strncmp(v, s, n) && !v[n])
			return (long)i;
	}
}

static const char addr_fmt[] = "has its address taken (line %u): a device-side launch "
			       "through it would pass the old parameters";

static void kref_note(struct kref *kr, long i, const char *fmt, unsigned line)
{
	if (i < 0 || kr->why[i])
		return;
	snprintf(kr->buf[i], sizeof(kr->buf[i]), fmt, line);
	kr->why[i] = kr->buf[i];
}

static int is_ident(int c, int first)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' ||
	       c == '%' || (!first && c >= '0' && c <= '9');
}

/* Every identifier of a verbatim text (an initialiser, an expression). */
static void kref_text(struct kref *kr, const char *t, unsigned line)
{
	for (const char *p = t; p && *p;) {
		if (!is_ident((unsigned char)*p, 1)) {
			/* skip numbers whole: 0f3F800000 is no name */
			if (*p >= '0' && *p <= '9')
				while (is_ident((unsigned char)*p, 0))
					p++;
			else
				p++;
			continue;
		}
		const char *b = p;
		while (is_ident((unsigned char)*p, 0))
			p++;
		kref_note(kr, kref_slot(kr, b, (size_t)(p - b)), addr_fmt, line);
	}
}

struct kref_walk {
	struct kref *kr;
	unsigned line;
};

static int kref_opnd(struct ptx_opnd *o, void *arg)
{
	struct kref_walk *w = arg;
	if (o->kind == PTX_OPND_EXPR)
		kref_text(w->kr, o->text, w->line);
	else if (o->text)
		kref_note(w->kr, kref_slot(w->kr, o->text, strlen(o->text)), addr_fmt, w->line);
	return 0;
}

static int verbatim_names(const char *t)
{
	return strncmp(t, ".section", 8) && strncmp(t, ".loc", 4) && strncmp(t, ".file", 5);
}

static int kernel_refs(struct ptx_module *m, struct kref *kr)
{
	ptx_for_each_item(m, it) if (it->kind == PTX_ITEM_FUNC && it->func.is_entry &&
				     it->func.has_body && nset_add(&kr->names, it->func.name) < 0)
		return -ENOMEM;
	size_t cap = kr->names.cap ? kr->names.cap : 1;
	kr->def = calloc(cap, sizeof(*kr->def));
	kr->why = calloc(cap, sizeof(*kr->why));
	kr->buf = calloc(cap, sizeof(*kr->buf));
	if (!kr->def || !kr->why || !kr->buf)
		return -ENOMEM;
	if (!kr->names.n)
		return 0;
	ptx_for_each_item(m, it) {
		if (it->kind == PTX_ITEM_FUNC && it->func.is_entry && it->func.has_body) {
			long i = kref_slot(kr, it->func.name, strlen(it->func.name));
			if (!kr->def[i]) {
				kr->def[i] = it;
				continue;
			}
		}
		if (it->kind == PTX_ITEM_FUNC) {
			long i = kref_slot(kr, it->func.name, strlen(it->func.name));
			if (i >= 0 && kr->def[i] != it)
				kref_note(kr, i,
					  "has another declaration (line %u): a device-side launch "
					  "through it would pass the old parameters",
					  it->line);
		}
	}
	ptx_for_each_item(m, it) {
		if (it->kind == PTX_ITEM_DECL && it->decl.init)
			kref_text(kr, it->decl.init, it->line);
		if (it->kind == PTX_ITEM_VERBATIM && verbatim_names(it->text))
			kref_text(kr, it->text, it->line);
		if (it->kind != PTX_ITEM_FUNC)
			continue;
		for (struct ptx_stmt *s = it->func.head; s; s = s->next) {
			struct kref_walk w = {kr, s->line};
			if (s->kind == PTX_STMT_INSN)
				insn_walk(&s->insn, kref_opnd, &w);
			else if (s->kind == PTX_STMT_DECL && s->decl.init)
				kref_text(kr, s->decl.init, s->line);
			else if (s->kind == PTX_STMT_VERBATIM && verbatim_names(s->text))
				kref_text(kr, s->text, s->line);
		}
	}
	return 0;
}

static void kref_free(struct kref *kr)
{
	free(kr->names.v), free(kr->def), free(kr->why), free(kr->buf);
}

int ptx_pass_persist_check(struct ptx_module *m, struct ptx_pass_ctx *ctx, struct ptx_persist_set *out)
{
	struct check st = {.m = m, .ctx = ctx, .out = out}, *ps = &st;
	size_t nfs = 0, nk = 0;
	struct nset shared = {0};
	if (shared_names(m, &shared)) {
		free(shared.v);
		return gx_err(-ENOMEM);
	}
	struct fsum *fs = summarize(m, &shared, &nfs);
	if (!fs) {
		free(shared.v);
		return gx_err(-ENOMEM);
	}
	ptx_for_each_item(m, it) if (it->kind == PTX_ITEM_FUNC && it->func.is_entry) nk++;
	ps->out->v = calloc(nk ? nk : 1, sizeof(*ps->out->v));
	if (!ps->out->v) {
		free(fs);
		free(shared.v);
		return gx_err(-ENOMEM);
	}
	const char *mwhy = check_module(ps);
	struct kref kr = {0};
	if (!mwhy && kernel_refs(m, &kr)) {
		kref_free(&kr);
		free(fs);
		free(shared.v);
		return gx_err(-ENOMEM);
	}
	ptx_for_each_item(m, it) {
		if (it->kind != PTX_ITEM_FUNC || !it->func.is_entry || !it->func.has_body)
			continue;
		const char *sel = ps->ctx->opts->persist_kernels;
		if (sel && fnmatch(sel, it->func.name, 0)) {
			ptx_pass_log(ps->ctx, "persistent: %s: not selected (kernels=%s)", it->func.name, sel);
			continue;
		}
		struct scan sc = {0};
		unsigned bar_id = 0;
		int nomem = 0, unit_bar = 0;
		const char *why = mwhy ? mwhy
				       : check_kernel(ps, &it->func, fs, nfs, &shared, &sc, &bar_id,
						      &unit_bar, &nomem);
		long ki = mwhy ? -1 : kref_slot(&kr, it->func.name, strlen(it->func.name));
		if (!why && ki >= 0)
			why = kr.why[ki];
		if (nomem) {
			kref_free(&kr);
			free(fs);
			free(shared.v);
			return gx_err(-ENOMEM);
		}
		if (why) {
			ptx_pass_log(ps->ctx, "persistent: %s: refused: %s", it->func.name, why);
			continue;
		}
		if (ps->ctx->opts->flags & GX_PTX_F_UNIT_BARRIER)
			unit_bar = 1;
		ps->out->v[ps->out->n++] =
			(struct ptx_persist){.fn = &it->func, .bar_id = bar_id, .unit_bar = unit_bar};
	}
	kref_free(&kr);
	free(fs);
	free(shared.v);
	return 0;
}
