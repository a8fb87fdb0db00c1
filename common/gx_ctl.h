/* gx_ctl.h — the control channel of `gpuext attach|detach|ps`: messages
 * between the CLI and a process running under the shim (shim/live.c).
 *
 * The channel is a folder of the user, GPUEXT_CTL_DIR, else
 * /dev/shm/gpuext-$UID/ctl (0700, files 0600). A process under the shim
 * keeps `<pid>.ps` there (what `gpuext ps` lists); the CLI writes a request
 * `<pid>.req` (written under a temporary name and renamed: never seen half
 * written), the process answers `<pid>.<seq>.resp` the same way. Both sides
 * read a file only under the trust rule (common/gx_trust.h): a regular file
 * of this user or root, not writable by others, in a folder of this user.
 *
 * Messages are text, one "key value" per line, the first line
 * "gpuext-ctl 1". Keys: seq N, op attach|detach|status, tool NAME,
 * policy PATH[,knob=v...], sched PATH[,knobs], dir PATH, what NAME|--all;
 * responses: status -ERRNO|0, msg TEXT, attached LIST, modules N, ms N.
 * Unknown keys are refused (the format grows with the version line). */
#ifndef GX_CTL_H
#define GX_CTL_H

#include <stddef.h>
#include <stdint.h>

#define GX_CTL_MAGIC	 "gpuext-ctl 1"
#define GX_CTL_MAX_BYTES 16384
#define GX_CTL_MAX_ITEMS 5 /* tools + policies: GX_PMERGE_MAX */
#define GX_CTL_ITEM_MAX	 4200

enum gx_ctl_op { GX_CTL_NONE = 0, GX_CTL_ATTACH, GX_CTL_DETACH, GX_CTL_STATUS, GX_CTL_REPLY };

struct gx_ctl_msg {
	enum gx_ctl_op op;
	uint64_t seq;
	unsigned nr_tools, nr_policies;
	char tool[GX_CTL_MAX_ITEMS][64];
	char policy[GX_CTL_MAX_ITEMS][GX_CTL_ITEM_MAX];
	char sched[GX_CTL_ITEM_MAX];
	char dir[4096];
	char what[64];	 /* detach: a tool/policy name, or "--all" */
	char sample[32]; /* attach: "N[,first=K]", the tools on a sample of launches (gx_ctl_sample_parse) */
	/* replies */
	int status; /* 0 or -errno */
	char msg[512];
	char attached[512]; /* comma-separated names */
	unsigned modules;   /* instrumented copies */
	unsigned ms;	    /* time the request took in the process */
};

/* Parse a message: 0, or -EINVAL with "line N: reason" in err. */
int gx_ctl_parse(const char *text, size_t len, struct gx_ctl_msg *m, char *err, size_t en);
/* A launch sample "N[,first=K]" (gpuext-run --launch-sample, gpuext attach
 * --launch-sample, GPUEXT_LAUNCH_SAMPLE; shim/launch_sample.c): each
 * kernel's first K launches (16 without first=), then 1 in N. 0, or -EINVAL
 * (N outside 1..1000000, K outside 0..1000000000, anything else). */
#define GX_CTL_SAMPLE_FIRST   16
/* A tool's launches when nothing says otherwise (issue 40): every kernel's
 * first 16, then 1 in 16. "1" instruments every launch. */
#define GX_CTL_SAMPLE_DEFAULT "16"
int gx_ctl_sample_parse(const char *s, unsigned long *every, unsigned long *first);
/* Format a message into buf: its length, or -ENOSPC / -EINVAL (a field
 * holding a newline). */
int gx_ctl_format(const struct gx_ctl_msg *m, char *buf, size_t n);
/* The channel folder (see above): 0 or -ENAMETOOLONG. */
int gx_ctl_dir(char *buf, size_t n);
/* Write `len` bytes to DIR/NAME atomically (temporary file, 0600, rename):
 * 0 or -errno. */
int gx_ctl_write(const char *dir, const char *name, const char *data, size_t len);

#endif
