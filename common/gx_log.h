/* gx_log — the one logging path of gpuext (libbpf-style print callback).
 *
 * Every message goes through gx_log(); a library never writes to stderr on its
 * own. The default callback prints "gpuext: ..." on stderr when the message's
 * level is at or below the threshold from GPUEXT_LOG (error|warn|info|debug,
 * default warn). Tools and tests may install their own callback. */
#ifndef GX_LOG_H
#define GX_LOG_H

#include <stdarg.h>

enum gx_log_level {
	GX_LOG_ERROR = 0,
	GX_LOG_WARN = 1,
	GX_LOG_INFO = 2,
	GX_LOG_DEBUG = 3,
};

typedef void (*gx_print_fn)(enum gx_log_level level, const char *fmt, va_list ap);

/* Install a print callback; NULL restores the default. Returns the old one. */
gx_print_fn gx_set_print(gx_print_fn fn);
/* Threshold: messages above it are dropped before formatting. */
void gx_log_set_level(enum gx_log_level level);
enum gx_log_level gx_log_get_level(void);
/* Parse "error|warn|info|debug" or "0".."3"; returns -1 if unknown. */
int gx_log_parse_level(const char *s);

void gx_log(enum gx_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define pr_err(...)   gx_log(GX_LOG_ERROR, __VA_ARGS__)
#define pr_warn(...)  gx_log(GX_LOG_WARN, __VA_ARGS__)
#define pr_info(...)  gx_log(GX_LOG_INFO, __VA_ARGS__)
#define pr_debug(...) gx_log(GX_LOG_DEBUG, __VA_ARGS__)

/* Log a warning only the first time this call site is reached
 * (the "log once, fall back" rule of the shim). */
#define pr_warn_once(...)                                                   \
	do {                                                                \
		static int gx__once;                                        \
		if (!__atomic_exchange_n(&gx__once, 1, __ATOMIC_RELAXED)) \
			pr_warn(__VA_ARGS__);                               \
	} while (0)

#endif
