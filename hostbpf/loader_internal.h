/* loader_internal.h — the part every host-policy loader shares (sched_ext style):
 * common flags (-v libbpf logs, -p PID / -c CGROUP scope, -i stats
 * interval, -h), the libbpf print callback, and the run loop that prints
 * "attached", waits for SIGINT/SIGTERM, prints stats and "detached".
 * Each loader (gx_NAME.c) adds its knobs through an option callback. */
#ifndef GX_LOADER_H
#define GX_LOADER_H

#include <stdbool.h>
#include <linux/types.h>

struct gx_loader {
	const char *name; /* policy name, for messages */
	int verbose;
	unsigned int interval; /* seconds between stats lines; 0: at exit only */
	__u32 scope;           /* enum gpu_scope */
	__u64 scope_id;
};

/* Policy-specific option: return 0 if handled, -1 to reject the value. */
typedef int (*gx_loader_opt_fn)(int opt, const char *arg);

/* Parse argv. `opts`/`help` describe the policy's own flags (getopt
 * letters with ':' for arguments, and help lines). Exits on -h (0) and on
 * bad flags (2). */
void gx_loader_parse(struct gx_loader *l, int argc, char **argv, const char *opts,
		     const char *help, gx_loader_opt_fn fn);
/* Parse an unsigned number flag value; -1 on garbage or out of [lo, hi]. */
int gx_loader_uint(const char *arg, unsigned long lo, unsigned long hi, unsigned long *out);
/* Copy the scope into the struct_ops shadow fields before load. */
void gx_loader_scope(const struct gx_loader *l, unsigned int *scope, unsigned long long *scope_id);
/* After attach: announce, then loop until a signal; stats(ud) prints one
 * line each interval and once at exit. Returns 0. */
int gx_loader_run(struct gx_loader *l, void (*stats)(void *ud), void *ud);
/* Report a libbpf failure the same way in every loader; returns 1. */
int gx_loader_fail(const struct gx_loader *l, const char *what, int err);

#endif
