/* ptx_text.c — statements inserted as PTX text (ptx_insert_text_before/after):
 * printf-formatted PTX parsed on the spot and linked in. Apart from ptx_ir.c
 * because it needs the parser, which itself builds on ptx_ir.c. */
#include <stdarg.h>
#include <string.h>

#include "ptx-rewrite/ptx_ir_internal.h"

static int insert_text(struct ptx_module *m, struct ptx_func *fn, struct ptx_stmt *pos, int after,
		       struct ptx_stmt **out, const char *fmt, va_list ap)
{
	/* The parser copies what it keeps, so "%s" (a snippet built elsewhere,
	 * often kilobytes) is parsed in place rather than copied by printf. */
	const char *text = !strcmp(fmt, "%s") ? va_arg(ap, const char *) : ptx_vsprintf(m, fmt, ap);
	if (!text)
		return gx_err(-ENOMEM);
	struct ptx_stmt *first, *last;
	int err = ptx_parse_stmts(m, text, strlen(text), &first, &last);
	if (err)
		return err;
	if (after)
		ptx_insert_after(fn, pos, first, last);
	else
		ptx_insert_before(fn, pos, first, last);
	if (out)
		*out = first;
	return 0;
}

int ptx_insert_text_before(struct ptx_module *m, struct ptx_func *fn, struct ptx_stmt *pos, struct ptx_stmt **out,
			   const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int err = insert_text(m, fn, pos, 0, out, fmt, ap);
	va_end(ap);
	return err;
}

int ptx_insert_text_after(struct ptx_module *m, struct ptx_func *fn, struct ptx_stmt *pos, struct ptx_stmt **out,
			  const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int err = insert_text(m, fn, pos, 1, out, fmt, ap);
	va_end(ap);
	return err;
}
