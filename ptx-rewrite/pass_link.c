/* pass_link.c — merge the policy PTX (devbpf JIT / LLVM NVPTX output: .funcs
 * and maybe .globals, with its own .version/.target/.address_size) into the
 * application module.
 *
 * Policy: every symbol the policy defines is renamed "<prefix>_p_<name>"
 * (prefix = the module's fresh prefix, so no application name can clash)
 * and becomes internal (.visible/.weak dropped): a policy never exports
 * anything. `.extern` declarations of names the application module already
 * declares or defines are dropped (one declaration is enough; the policy's
 * extern __gx_devrt binds to ours); other externs (vprintf ...) are kept
 * unless the module already declares them. The policy's module directives and
 * verbatim items (.file, debug sections) are dropped: its debug info would
 * refer to files the application's does not know. The module keeps its own
 * .target and gets the higher of the two .versions, never above
 * opts->max_ptx_version; an application already above it is refused. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx-rewrite/pass_internal.h"
#include "ptx-rewrite/passlib_internal.h"
#include "ptx-rewrite/policy_internal.h"

/* The pass's state: the module and what it fills in. */
struct link {
	struct ptx_module *m;
	struct ptx_pass_ctx *ctx;
	struct ptx_policy *pol;
};

static const char *item_name(const struct ptx_item *it)
{
	if (it->kind == PTX_ITEM_FUNC)
		return it->func.name;
	if (it->kind == PTX_ITEM_DECL)
		return it->decl.name;
	return NULL;
}

static unsigned item_linkage(const struct ptx_item *it)
{
	return it->kind == PTX_ITEM_FUNC ? it->func.linkage : it->decl.linkage;
}

static int is_ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$' ||
	       c == '%' || c == '.';
}

/* Replace whole identifiers in verbatim text (initialisers, expressions). */
static const char *rename_text(struct link *ps, const char *text)
{
	if (!text || !ps->pol->nr_renames)
		return text;
	struct gx_buf b;
	gx_buf_init(&b);
	const char *p = text;
	int changed = 0;
	while (*p) {
		if (is_ident_char(*p) && (p == text || !is_ident_char(p[-1]))) {
			size_t n = 0;
			while (is_ident_char(p[n]))
				n++;
			char *id = ptx_strndup(ps->m, p, n);
			const char *to = id ? ptx_policy_name(ps->pol, id) : NULL;
			if (to && to != id && strcmp(to, id)) {
				gx_buf_puts(&b, to);
				changed = 1;
			} else {
				gx_buf_append(&b, p, n);
			}
			p += n;
			continue;
		}
		gx_buf_append(&b, p, 1);
		p++;
	}
	const char *out = text;
	if (changed && !b.failed)
		out = ptx_strdup(ps->m, b.data);
	gx_buf_free(&b);
	return out;
}

static void rename_opnd(struct link *ps, struct ptx_opnd *o)
{
	if (!o)
		return;
	if (o->kind == PTX_OPND_ID)
		o->text = ptx_policy_name(ps->pol, o->text);
	else if (o->kind == PTX_OPND_EXPR)
		o->text = rename_text(ps, o->text);
	for (unsigned i = 0; i < o->n; i++)
		rename_opnd(ps, o->elems[i]);
}

static void rename_func(struct link *ps, struct ptx_func *fn)
{
	fn->name = ptx_policy_name(ps->pol, fn->name);
	for (struct ptx_stmt *s = fn->head; s; s = s->next) {
		switch (s->kind) {
		case PTX_STMT_INSN:
			for (unsigned i = 0; i < s->insn.nops; i++)
				rename_opnd(ps, s->insn.ops[i]);
			break;
		case PTX_STMT_DECL:
			s->decl.init = rename_text(ps, s->decl.init);
			break;
		case PTX_STMT_VERBATIM:
			s->text = rename_text(ps, s->text);
			break;
		default:
			break;
		}
	}
}

/* __gx_devrt (0) or __gx_devrt__p<k> (k, 1..31): policy k's runtime block;
 * -1 for any other name */
static int devrt_block(const char *n)
{
	size_t l = strlen(GDEV_DEVRT_SYMBOL), sl = strlen(GDEV_DEVRT_SUFFIX);
	if (strncmp(n, GDEV_DEVRT_SYMBOL, l))
		return -1;
	if (!n[l])
		return 0;
	if (strncmp(n + l, GDEV_DEVRT_SUFFIX, sl) || n[l + sl] < '1' || n[l + sl] > '9')
		return -1;
	char *e;
	unsigned long k = strtoul(n + l + sl, &e, 10);
	return *e || k > 31 ? -1 : (int)k;
}

static int app_has_name(struct ptx_module *m, const char *name)
{
	ptx_for_each_item(m, it)
	{
		const char *n = item_name(it);
		if (n && !strcmp(n, name))
			return 1;
	}
	return 0;
}

static int fail(struct ptx_module *m, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(struct ptx_module *m, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m->err, sizeof(m->err), fmt, ap);
	va_end(ap);
	return gx_err(err);
}

/* ------------------------------------------------- placement of the policy */

/* Names used by the policy items (sorted, unique, for bsearch). */
struct names {
	const char **v;
	size_t n, cap;
};

static int names_add(struct names *ns, const char *name)
{
	if (ns->n == ns->cap) {
		size_t cap = ns->cap ? 2 * ns->cap : 64;
		const char **v = realloc(ns->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		ns->v = v;
		ns->cap = cap;
	}
	ns->v[ns->n++] = name;
	return 0;
}

/* Every identifier of verbatim text (initialisers, expressions, directives). */
static int names_of_text(struct ptx_module *m, struct names *ns, const char *text)
{
	for (const char *p = text; p && *p;) {
		if (!is_ident_char(*p) || (p > text && is_ident_char(p[-1]))) {
			p++;
			continue;
		}
		size_t n = 0;
		while (is_ident_char(p[n]))
			n++;
		const char *id = ptx_strndup(m, p, n);
		if (!id || names_add(ns, id))
			return -ENOMEM;
		p += n;
	}
	return 0;
}

static int names_of_opnd(struct ptx_module *m, struct names *ns, const struct ptx_opnd *o)
{
	if (!o)
		return 0;
	if (o->kind == PTX_OPND_ID && o->text && o->text[0] != '%')
		return names_add(ns, o->text);
	if (o->kind == PTX_OPND_EXPR)
		return names_of_text(m, ns, o->text);
	for (unsigned i = 0; i < o->n; i++)
		if (names_of_opnd(m, ns, o->elems[i]))
			return -ENOMEM;
	return 0;
}

static int names_of_item(struct ptx_module *m, struct names *ns, const struct ptx_item *it)
{
	if (it->kind == PTX_ITEM_DECL)
		return names_of_text(m, ns, it->decl.init);
	if (it->kind != PTX_ITEM_FUNC)
		return 0;
	for (const struct ptx_stmt *s = it->func.head; s; s = s->next) {
		int err = 0;
		if (s->kind == PTX_STMT_INSN)
			for (unsigned i = 0; !err && i < s->insn.nops; i++)
				err = names_of_opnd(m, ns, s->insn.ops[i]);
		else if (s->kind == PTX_STMT_DECL)
			err = names_of_text(m, ns, s->decl.init);
		else if (s->kind == PTX_STMT_VERBATIM)
			err = names_of_text(m, ns, s->text);
		if (err)
			return err;
	}
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int names_has(const struct names *ns, const char *name)
{
	return name && ns->n && bsearch(&name, ns->v, ns->n, sizeof(*ns->v), cmp_str);
}

/* Functions declared before the first definition (names), and the
 * prototypes placement adds there. */
struct early {
	struct names fns;
	struct ptx_item *def;  /* the first function definition */
	struct ptx_item *last; /* the last item placement put before def */
};

static int early_has(const struct early *e, const char *name)
{
	for (size_t i = 0; i < e->fns.n; i++)
		if (!strcmp(e->fns.v[i], name))
			return 1;
	return 0;
}

/* A prototype of function fn (defined at or after def) just before def. */
static int proto_before_def(struct ptx_module *m, struct early *e, const struct ptx_item *fn)
{
	if (early_has(e, fn->func.name))
		return 0;
	struct ptx_item *p = ptx_alloc(m, sizeof(*p));
	if (!p || names_add(&e->fns, fn->func.name))
		return -ENOMEM;
	p->kind = PTX_ITEM_FUNC;
	p->func = fn->func;
	p->func.has_body = 0;
	p->func.head = p->func.tail = NULL;
	ptx_item_insert_before(m, e->def, p, p);
	e->last = p;
	return 0;
}

/* Where the policy items go (see the top of the file); may move application
 * declarations and add prototypes. Returns the item to insert after (NULL:
 * the module start) through *at. 0 or -errno with m->err set. */
static int place_policy(struct link *ps, struct ptx_item *pol, struct ptx_item **at)
{
	struct ptx_module *m = ps->m;
	struct names ns = { 0 }, in = { 0 };
	struct early e = { 0 };
	int err = 0;
	struct ptx_item *anchor = ptx_module_header_end(m);
	for (struct ptx_item *it = pol; it && !err; it = it->next)
		err = names_of_item(m, &ns, it);
	if (ns.n)
		qsort(ns.v, ns.n, sizeof(*ns.v), cmp_str);
	ptx_for_each_item(m, it)
	{
		if (it->kind == PTX_ITEM_FUNC && it->func.has_body) {
			e.def = it;
			break;
		}
		if (!err && it->kind == PTX_ITEM_FUNC)
			err = names_add(&e.fns, it->func.name);
	}
	int past_def = 0;
	for (struct ptx_item *it = m->head, *nx; it && !err; it = nx) {
		nx = it->next;
		past_def |= it == e.def;
		if ((it->kind != PTX_ITEM_DECL && it->kind != PTX_ITEM_FUNC) || !names_has(&ns, item_name(it)))
			continue;
		if (!past_def) {
			anchor = it;
			continue;
		}
		if (it->kind == PTX_ITEM_FUNC) {
			/* defined or only declared after code: declared before */
			err = proto_before_def(m, &e, it);
			continue;
		}
		/* A global declared after code: moved to just before the first
		 * definition, with prototypes of the functions its initialiser
		 * names; a global it names that is declared after code too is
		 * beyond what this does. */
		in.n = 0;
		if ((err = names_of_text(m, &in, it->decl.init)))
			break;
		if (in.n)
			qsort(in.v, in.n, sizeof(*in.v), cmp_str);
		for (struct ptx_item *b = e.def; b && b != it && !err; b = b->next) {
			if (!names_has(&in, item_name(b)))
				continue;
			if (b->kind == PTX_ITEM_FUNC)
				err = proto_before_def(m, &e, b);
			else
				err = fail(m, -EOPNOTSUPP,
					   "policy PTX uses %.80s, whose initialiser names %.80s "
					   "declared after code: cannot place the policy",
					   it->decl.name, item_name(b));
		}
		if (err)
			break;
		ptx_item_remove(m, it);
		ptx_item_insert_before(m, e.def, it, it);
		e.last = it;
	}
	free(ns.v);
	free(in.v);
	free(e.fns.v);
	if (err)
		return err == -ENOMEM ? fail(m, err, "out of memory") : err;
	*at = e.last ? e.last : anchor;
	return 0;
}

int ptx_pass_link(struct ptx_module *m, struct ptx_pass_ctx *ctx, struct ptx_policy *pol)
{
	struct link st = { .m = m, .ctx = ctx, .pol = pol }, *ps = &st;
	const struct gx_ptx_rewrite_opts *o = ps->ctx->opts;
	unsigned maxv = o->max_ptx_version;
	unsigned appv = m->version ? m->version->version.major * 10 + m->version->version.minor : 0;
	if (maxv && appv > maxv)
		return fail(m, -EOPNOTSUPP, "application PTX version %u.%u is above the driver's maximum %u.%u",
			    appv / 10, appv % 10, maxv / 10, maxv % 10);
	struct ptx_item *first = NULL, *last = NULL;
	int err = ptx_parse_items(m, o->policy_ptx, o->policy_len, &first, &last);
	if (err) {
		char why[sizeof(m->err)];
		memcpy(why, m->err, sizeof(why));
		return fail(m, err, "policy PTX: %.220s", why);
	}
	/* Pass 1: directives, and the names the policy defines. */
	unsigned polv = 0;
	for (struct ptx_item *it = first; it; it = it->next) {
		if (it->kind == PTX_ITEM_VERSION)
			polv = it->version.major * 10 + it->version.minor;
		if (it->kind == PTX_ITEM_ADDRESS_SIZE && it->address_size != 64)
			return fail(m, -EINVAL, "policy PTX: .address_size %u (64 needed)", it->address_size);
		const char *n = item_name(it);
		if (!n || (item_linkage(it) & PTX_LINK_EXTERN))
			continue;
		if (it->kind == PTX_ITEM_FUNC && !it->func.has_body)
			continue; /* a prototype of a function defined below or elsewhere */
		if (devrt_block(n) >= 0)
			return fail(m, -EINVAL, "policy PTX: defines %s", n);
		if (!strcmp(ptx_policy_name(ps->pol, n), n) && (err = ptx_policy_rename(ps->pol, ps->m, n)))
			return fail(m, err, "out of memory");
	}
	/* Pass 2: keep what belongs in the merged module. */
	struct ptx_item *keep_first = NULL, *keep_last = NULL;
	for (struct ptx_item *it = first, *nx; it; it = nx) {
		nx = it->next;
		it->prev = it->next = NULL;
		const char *n = item_name(it);
		int keep = 0;
		if (it->kind == PTX_ITEM_FUNC || it->kind == PTX_ITEM_DECL) {
			unsigned *lk = it->kind == PTX_ITEM_FUNC ? &it->func.linkage : &it->decl.linkage;
			int ext = (*lk & PTX_LINK_EXTERN) || (it->kind == PTX_ITEM_FUNC && !it->func.has_body);
			if (ext && strcmp(ptx_policy_name(ps->pol, n), n)) {
				/* prototype of a policy function: keep, renamed, internal */
				keep = 1;
				*lk &= ~(PTX_LINK_VISIBLE | PTX_LINK_WEAK | PTX_LINK_EXTERN);
			} else if (ext && devrt_block(n) >= 0) {
				/* the runtime blocks are defined after linking (pass_tramp.c) */
				ps->pol->devrt_blocks |= 1u << devrt_block(n);
			} else if (ext) {
				keep = !app_has_name(m, n);
			} else {
				keep = 1;
				*lk &= ~(PTX_LINK_VISIBLE | PTX_LINK_WEAK | PTX_LINK_COMMON);
			}
			if (keep && it->kind == PTX_ITEM_FUNC)
				rename_func(ps, &it->func);
			else if (keep) {
				it->decl.name = ptx_policy_name(ps->pol, it->decl.name);
				it->decl.init = rename_text(ps, it->decl.init);
			}
		}
		if (!keep)
			continue;
		if (!keep_first)
			keep_first = it;
		else {
			keep_last->next = it;
			it->prev = keep_last;
		}
		keep_last = it;
	}
	(void)last;
	/* .version: the higher one, capped by the driver's maximum. */
	if (m->version && polv > appv) {
		unsigned v = maxv && polv > maxv ? maxv : polv;
		m->version->version.major = v / 10;
		m->version->version.minor = v % 10;
	}
	if (keep_first) {
		struct ptx_item *at = NULL;
		if ((err = place_policy(ps, keep_first, &at)))
			return err;
		ptx_item_insert_after(m, at, keep_first, keep_last);
		ps->pol->last = keep_last;
	}
	for (size_t i = 0; i < o->nr_bindings; i++) {
		const char *f = o->bindings[i].func;
		if (f && (o->hooks & o->bindings[i].hook) && !strcmp(ptx_policy_name(ps->pol, f), f))
			return fail(m, -ENOENT, "policy PTX does not define bound function %s", f);
	}
	return 0;
}
