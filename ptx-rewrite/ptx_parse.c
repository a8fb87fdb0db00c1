/* ptx_parse.c — placeholder until the hand-written parser lands. */
#include <stdio.h>
#include <string.h>

#include "ptx-rewrite/ptx_ir.h"

struct ptx_module *ptx_module_parse(const char *text, size_t len, char *err, size_t errlen)
{
	(void)text, (void)len;
	if (errlen)
		snprintf(err, errlen, "parser not built yet");
	errno = ENOSYS;
	return NULL;
}

int ptx_parse_stmts(struct ptx_module *m, const char *text, size_t len,
		    struct ptx_stmt **first, struct ptx_stmt **last)
{
	(void)text, (void)len;
	*first = *last = NULL;
	snprintf(m->err, sizeof(m->err), "parser not built yet");
	return gx_err(-ENOSYS);
}

int ptx_parse_items(struct ptx_module *m, const char *text, size_t len,
		    struct ptx_item **first, struct ptx_item **last)
{
	(void)text, (void)len;
	*first = *last = NULL;
	snprintf(m->err, sizeof(m->err), "parser not built yet");
	return gx_err(-ENOSYS);
}

int ptx_module_emit(const struct ptx_module *m, struct gx_buf *out)
{
	(void)m, (void)out;
	return gx_err(-ENOSYS);
}

void ptx_stmt_emit(const struct ptx_stmt *s, struct gx_buf *out)
{
	(void)s, (void)out;
}

void ptx_opnd_emit(const struct ptx_opnd *o, struct gx_buf *out)
{
	(void)o, (void)out;
}
