/* gx_pmerge.c — several device policies in one process (gx_pmerge.h).
 *
 * Why text: each policy's PTX comes from the JIT cache, compiled on another
 * machine, one object at a time; the machine that runs the application may
 * have no LLVM to JIT them together. The JIT's PTX (LLVM NVPTX) is regular:
 * a header, `.extern .const .align 8 .b8 __gx_devrt[N];` (the runtime block,
 * gx_devrt.h), and `.func`s. So the k-th object (k >= 1) is made to fit
 * beside the first by two edits: its header goes (the first object's
 * stays), and every module-scope symbol it defines or declares gets a suffix
 * "__p<k>" — __gx_devrt too, which makes it `__gx_devrt__p<k>`, the block the
 * rewriter defines and the shim fills with this policy's maps and ring. A
 * __gx_devrt declared any other way is refused: that PTX did not come from
 * our JIT (or from an older one, whose block was a pointer). */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuext/gx_devrt.h"
#include "attach/gx_attach.h"
#include "common/gx_util.h"

#define MAX_SYMS 256

struct syms {
	char *name[MAX_SYMS];
	size_t n;
};

static int id_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$';
}
static int id_char(char c)
{
	return id_start(c) || (c >= '0' && c <= '9');
}

static int syms_add(struct syms *s, const char *p, size_t n)
{
	for (size_t i = 0; i < s->n; i++)
		if (strlen(s->name[i]) == n && !memcmp(s->name[i], p, n))
			return 0;
	if (s->n == MAX_SYMS || !(s->name[s->n] = strndup(p, n)))
		return -ENOMEM;
	s->n++;
	return 0;
}
static int syms_has(const struct syms *s, const char *p, size_t n)
{
	for (size_t i = 0; i < s->n; i++)
		if (strlen(s->name[i]) == n && !memcmp(s->name[i], p, n))
			return 1;
	return 0;
}
static void syms_free(struct syms *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->name[i]);
	s->n = 0;
}

static const char *skip_ws(const char *p, const char *e)
{
	while (p < e && (*p == ' ' || *p == '\t'))
		p++;
	return p;
}

/* A module-scope line (brace depth 0): the symbol it defines or declares, if
 * any. `.func [(ret)] NAME(`, `.entry NAME(`, `.global|.const ... NAME[;[=]`. */
static int line_symbol(const char *p, const char *e, struct syms *s)
{
	const char *f = NULL;
	for (const char *q = p; q + 5 <= e && !f; q++)
		if ((!strncmp(q, ".func", 5) || !strncmp(q, ".entry", 6)) && (q == p || q[-1] == ' ' || q[-1] == '\t'))
			f = q;
	if (f) {
		f += f[1] == 'f' ? 5 : 6;
		f = skip_ws(f, e);
		if (f < e && *f == '(') { /* return parameter list */
			while (f < e && *f != ')')
				f++;
			f = skip_ws(f + 1, e);
		}
		const char *n = f;
		while (f < e && id_char(*f))
			f++;
		return f > n && id_start(*n) ? syms_add(s, n, (size_t)(f - n)) : 0;
	}
	const char *t = skip_ws(p, e);
	int var = 0;
	/* directives first (.visible .extern .weak .global .const .align N .u64 ...) */
	while (t < e && *t == '.') {
		const char *d = t;
		while (t < e && *t != ' ' && *t != '\t')
			t++;
		if (!strncmp(d, ".global", 7) || !strncmp(d, ".const", 6))
			var = 1;
		t = skip_ws(t, e);
		if (!strncmp(d, ".align", 6)) { /* its number */
			while (t < e && *t != ' ' && *t != '\t')
				t++;
			t = skip_ws(t, e);
		}
	}
	const char *n = t;
	while (t < e && id_char(*t))
		t++;
	if (!var || t == n || !id_start(*n))
		return 0;
	return syms_add(s, n, (size_t)(t - n));
}

static int is_header(const char *p, const char *e)
{
	p = skip_ws(p, e);
	return (e - p >= 8 && !strncmp(p, ".version", 8)) || (e - p >= 7 && !strncmp(p, ".target", 7)) ||
	       (e - p >= 13 && !strncmp(p, ".address_size", 13));
}

/* `.extern .const .align 8 .b8 __gx_devrt[N];` (any spacing), N the size of
 * struct gx_devrt */
static int is_devrt_extern(const char *p, const char *e)
{
	char buf[160], want[96];
	size_t n = 0;
	for (p = skip_ws(p, e); p < e && n + 1 < sizeof(buf); p++)
		if (*p != ' ' && *p != '\t' && *p != '\r')
			buf[n++] = *p;
	buf[n] = 0;
	snprintf(want, sizeof(want), ".extern.const.align8.b8%s[%zu];", GDEV_DEVRT_SYMBOL, sizeof(struct gx_devrt));
	return !strcmp(buf, want);
}

static void fail(char *err, size_t en, const char *name, int line, const char *why)
{
	if (err && en)
		snprintf(err, en, "policy %s: cannot run beside the others: PTX line %d: %s", name, line, why);
}

int gx_pdesc_relocate(struct gx_policy_desc *d, unsigned k, char *err, size_t en)
{
	if (!d || !d->ptx || k < 1 || k >= GX_PMERGE_MAX) {
		fail(err, en, d ? d->name : "?", 0, "too many policies (at most 5 device policies per process)");
		return gx_err(-EINVAL);
	}
	struct syms s = { .n = 0 };
	const char *t = d->ptx, *end = d->ptx + d->ptx_len;
	int depth = 0, ret = 0, line = 0;
	/* pass 1: module-scope symbols; the runtime block declared as the JIT does */
	for (const char *p = t; p < end && !ret;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *e = nl ? nl : end;
		const char *c = p;
		line++;
		while (c + 1 < e && !(c[0] == '/' && c[1] == '/'))
			c++;
		const char *code_end = c + 1 < e ? c : e;
		if (!depth) {
			size_t had = s.n;
			ret = line_symbol(p, code_end, &s);
			if (!ret && s.n > had && !strcmp(s.name[had], GDEV_DEVRT_SYMBOL) && !is_devrt_extern(p, code_end)) {
				fail(err, en, d->name, line, GDEV_DEVRT_SYMBOL " not declared as the JIT declares it");
				ret = gx_err(-EINVAL);
			}
		}
		for (const char *q = p; q < code_end; q++)
			depth += *q == '{' ? 1 : *q == '}' ? -1 : 0;
		p = nl ? nl + 1 : end;
	}
	char suffix[16];
	snprintf(suffix, sizeof(suffix), GDEV_DEVRT_SUFFIX "%u", k);
	struct gx_buf b;
	gx_buf_init(&b);
	depth = 0;
	for (const char *p = t; p < end && !ret;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *e = nl ? nl : end;
		int top = depth == 0;
		for (const char *q = p; q < e; q++)
			depth += *q == '{' ? 1 : *q == '}' ? -1 : 0;
		if (top && is_header(p, e)) {
			p = nl ? nl + 1 : end;
			continue;
		}
		/* copy with renames */
		for (const char *q = p; q < e;) {
			if (q[0] == '/' && q + 1 < e && q[1] == '/') {
				gx_buf_append(&b, q, (size_t)(e - q));
				break;
			}
			if (!id_start(*q) || (q > p && (id_char(q[-1]) || q[-1] == '%' || q[-1] == '.'))) {
				gx_buf_append(&b, q, 1);
				q++;
				continue;
			}
			const char *n = q;
			while (q < e && id_char(*q))
				q++;
			size_t len = (size_t)(q - n);
			gx_buf_append(&b, n, len);
			if (syms_has(&s, n, len))
				gx_buf_puts(&b, suffix);
		}
		gx_buf_puts(&b, "\n");
		p = nl ? nl + 1 : end;
	}
	for (size_t i = 0; !ret && i < d->nr_progs; i++) {
		if (!syms_has(&s, d->progs[i].func, strlen(d->progs[i].func))) {
			fail(err, en, d->name, 0, "a program's function is not in its PTX");
			ret = gx_err(-EINVAL);
		} else if (strlen(d->progs[i].func) + strlen(suffix) >= sizeof(d->progs[i].func)) {
			fail(err, en, d->name, 0, "function name too long");
			ret = gx_err(-EINVAL);
		}
	}
	if (!ret && b.failed)
		ret = gx_err(-ENOMEM);
	if (ret) {
		gx_buf_free(&b);
		syms_free(&s);
		return ret;
	}
	for (size_t i = 0; i < d->nr_progs; i++)
		strcat(d->progs[i].func, suffix);
	free(d->ptx);
	d->ptx = gx_buf_steal(&b, &d->ptx_len);
	syms_free(&s);
	return 0;
}

int gx_pset_build(struct gx_policy_desc *d, size_t n, struct gx_policy_set *out, char *err, size_t en)
{
	memset(out, 0, sizeof(*out));
	if (!n || n > GX_PMERGE_MAX) {
		snprintf(err, en, "%zu device policies: at most %d per process", n, GX_PMERGE_MAX);
		return gx_err(-EINVAL);
	}
	int ret = 0;
	for (size_t k = 1; k < n && !ret; k++)
		ret = gx_pdesc_relocate(&d[k], (unsigned)k, err, en);
	return ret ? ret : gx_pset_join(d, n, out);
}

int gx_pset_join(const struct gx_policy_desc *d, size_t n, struct gx_policy_set *out)
{
	memset(out, 0, sizeof(*out));
	if (!n || n > GX_PMERGE_MAX)
		return gx_err(-EINVAL);
	size_t nb = 0;
	for (size_t k = 0; k < n; k++)
		nb += d[k].nr_progs;
	struct gx_buf b;
	gx_buf_init(&b);
	for (size_t k = 0; k < n; k++) {
		gx_buf_append(&b, d[k].ptx, d[k].ptx_len);
		gx_buf_puts(&b, "\n");
	}
	out->binds = calloc(nb ? nb : 1, sizeof(*out->binds));
	out->samples = calloc(nb ? nb : 1, sizeof(*out->samples));
	if (b.failed || !out->binds || !out->samples) {
		gx_buf_free(&b);
		free(out->binds);
		free(out->samples);
		out->binds = NULL;
		out->samples = NULL;
		return gx_err(-ENOMEM);
	}
	for (size_t k = 0; k < n; k++)
		for (size_t i = 0; i < d[k].nr_progs; i++) {
			const struct gx_pol_prog *p = &d[k].progs[i];
			out->binds[out->nr_binds++] = (struct gx_hook_binding){ p->hook, p->glob[0] ? p->glob : NULL,
										  p->func };
			out->samples[out->nr_binds - 1] = gx_pdesc_mem_sample(&d[k], p->hook);
			out->hooks |= p->hook;
		}
	out->ptx = gx_buf_steal(&b, &out->ptx_len);
	return 0;
}

void gx_pset_free(struct gx_policy_set *s)
{
	if (!s)
		return;
	free(s->ptx);
	free(s->binds);
	free(s->samples);
	memset(s, 0, sizeof(*s));
}
