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

#include "ptx-rewrite/passes.h"

const char *ptx_link_name(const struct ptx_passes *ps, const char *name)
{
	for (size_t i = 0; i < ps->nr_renames; i++)
		if (!strcmp(ps->renames[i].from, name))
			return ps->renames[i].to;
	return name;
}

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
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '$' || c == '%' || c == '.';
}

/* Replace whole identifiers in verbatim text (initialisers, expressions). */
static const char *rename_text(struct ptx_passes *ps, const char *text)
{
	if (!text || !ps->nr_renames)
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
			const char *to = id ? ptx_link_name(ps, id) : NULL;
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

static void rename_opnd(struct ptx_passes *ps, struct ptx_opnd *o)
{
	if (!o)
		return;
	if (o->kind == PTX_OPND_ID)
		o->text = ptx_link_name(ps, o->text);
	else if (o->kind == PTX_OPND_EXPR)
		o->text = rename_text(ps, o->text);
	for (unsigned i = 0; i < o->n; i++)
		rename_opnd(ps, o->elems[i]);
}

static void rename_func(struct ptx_passes *ps, struct ptx_func *fn)
{
	fn->name = ptx_link_name(ps, fn->name);
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

static int add_rename(struct ptx_passes *ps, const char *from)
{
	struct ptx_rename *r = realloc(ps->renames, (ps->nr_renames + 1) * sizeof(*r));
	if (!r)
		return -ENOMEM;
	ps->renames = r;
	r[ps->nr_renames].from = from;
	r[ps->nr_renames].to = ptx_sprintf(ps->m, "%s_p_%s", ps->m->fresh_prefix, from);
	if (!r[ps->nr_renames].to)
		return -ENOMEM;
	ps->nr_renames++;
	return 0;
}

static int app_has_name(struct ptx_module *m, const char *name)
{
	ptx_for_each_item(m, it) {
		const char *n = item_name(it);
		if (n && !strcmp(n, name))
			return 1;
	}
	return 0;
}

static int fail(struct ptx_module *m, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(struct ptx_module *m, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m->err, sizeof(m->err), fmt, ap);
	va_end(ap);
	return gx_err(err);
}

int ptx_pass_link(struct ptx_passes *ps)
{
	struct ptx_module *m = ps->m;
	const struct gx_ptx_rewrite_opts *o = ps->ctx->opts;
	unsigned maxv = o->max_ptx_version;
	unsigned appv = m->version ? m->version->version.major * 10 + m->version->version.minor : 0;
	if (maxv && appv > maxv)
		return fail(m, -EOPNOTSUPP,
			    "application PTX version %u.%u is above the driver's maximum %u.%u",
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
			return fail(m, -EINVAL, "policy PTX: .address_size %u (64 needed)",
				    it->address_size);
		const char *n = item_name(it);
		if (!n || (item_linkage(it) & PTX_LINK_EXTERN))
			continue;
		if (it->kind == PTX_ITEM_FUNC && !it->func.has_body)
			continue; /* a prototype of a function defined below or elsewhere */
		if (!strcmp(n, GDEV_DEVRT_SYMBOL))
			return fail(m, -EINVAL, "policy PTX: defines %s", GDEV_DEVRT_SYMBOL);
		if (!strcmp(ptx_link_name(ps, n), n) && (err = add_rename(ps, n)))
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
			int ext = (*lk & PTX_LINK_EXTERN) ||
				  (it->kind == PTX_ITEM_FUNC && !it->func.has_body);
			if (ext && strcmp(ptx_link_name(ps, n), n)) {
				/* prototype of a policy function: keep, renamed, internal */
				keep = 1;
				*lk &= ~(PTX_LINK_VISIBLE | PTX_LINK_WEAK | PTX_LINK_EXTERN);
			} else if (ext) {
				/* __gx_devrt is added after linking (pass_tramp.c) */
				keep = strcmp(n, GDEV_DEVRT_SYMBOL) && !app_has_name(m, n);
			} else {
				keep = 1;
				*lk &= ~(PTX_LINK_VISIBLE | PTX_LINK_WEAK | PTX_LINK_COMMON);
			}
			if (keep && it->kind == PTX_ITEM_FUNC)
				rename_func(ps, &it->func);
			else if (keep) {
				it->decl.name = ptx_link_name(ps, it->decl.name);
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
		struct ptx_item *hdr = ptx_module_header_end(m);
		ptx_item_insert_after(m, hdr, keep_first, keep_last);
		ps->policy_last = keep_last;
	}
	for (size_t i = 0; i < o->nr_bindings; i++) {
		const char *f = o->bindings[i].func;
		if (f && (o->hooks & o->bindings[i].hook) && !strcmp(ptx_link_name(ps, f), f))
			return fail(m, -ENOENT, "policy PTX does not define bound function %s", f);
	}
	return 0;
}
