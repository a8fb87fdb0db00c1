#include "common/gx_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static void default_print(enum gx_log_level level, const char *fmt, va_list ap)
{
	(void)level;
	/* One write per message so lines from several threads do not interleave. */
	char buf[1024];
	int n = snprintf(buf, sizeof(buf), "gpuext: ");
	int m = vsnprintf(buf + n, sizeof(buf) - n, fmt, ap);
	if (m < 0)
		return;
	size_t len = strlen(buf);
	if (len && buf[len - 1] != '\n' && len + 1 < sizeof(buf)) {
		buf[len++] = '\n';
		buf[len] = 0;
	}
	fputs(buf, stderr);
}

static gx_print_fn print_fn = default_print;
static int log_level = -1; /* -1: not yet read from GPUEXT_LOG */

int gx_log_parse_level(const char *s)
{
	static const char *names[] = { "error", "warn", "info", "debug" };
	if (!s || !*s)
		return -1;
	for (int i = 0; i < 4; i++)
		if (!strcasecmp(s, names[i]))
			return i;
	if (s[0] >= '0' && s[0] <= '3' && s[1] == 0)
		return s[0] - '0';
	return -1;
}

enum gx_log_level gx_log_get_level(void)
{
	int l = __atomic_load_n(&log_level, __ATOMIC_RELAXED);
	if (l < 0) {
		l = gx_log_parse_level(getenv("GPUEXT_LOG"));
		if (l < 0)
			l = GX_LOG_WARN;
		__atomic_store_n(&log_level, l, __ATOMIC_RELAXED);
	}
	return (enum gx_log_level)l;
}

void gx_log_set_level(enum gx_log_level level)
{
	__atomic_store_n(&log_level, (int)level, __ATOMIC_RELAXED);
}

gx_print_fn gx_set_print(gx_print_fn fn)
{
	gx_print_fn old = print_fn;
	print_fn = fn ? fn : default_print;
	return old;
}

void gx_log(enum gx_log_level level, const char *fmt, ...)
{
	if ((int)level > (int)gx_log_get_level())
		return;
	va_list ap;
	va_start(ap, fmt);
	print_fn(level, fmt, ap);
	va_end(ap);
}
