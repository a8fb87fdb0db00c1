/* gx_loader.c — shared flags, logging and run loop of the host-policy
 * loaders (see loader_internal.h). */
#include "loader_internal.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpuext/gpu_ext.h"
#include "gpuext/gpuext_uapi.h"

static volatile sig_atomic_t gx_stop;
static int gx_verbose;

static void on_signal(int sig)
{
	(void)sig;
	gx_stop = 1;
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG && !gx_verbose)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

int gx_loader_uint(const char *arg, unsigned long lo, unsigned long hi, unsigned long *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(arg, &end, 0);
	if (errno || !*arg || *end || arg[0] == '-' || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static void usage(const struct gx_loader *l, const char *help, FILE *f)
{
	fprintf(f,
		"Usage: gx_%s [-v] [-p PID | -c CGROUP_DIR] [-i SECS] [policy flags]\n"
		"Attach the '%s' GPU policy to gpuext.ko until SIGINT/SIGTERM.\n"
		"  -v            libbpf debug logs\n"
		"  -p PID        apply to this process only\n"
		"  -c DIR        apply to this cgroup (v2) only\n"
		"  -i SECS       print stats every SECS seconds (default: at exit)\n"
		"  -h            this help\n%s",
		l->name, l->name, help ? help : "");
}

void gx_loader_parse(struct gx_loader *l, int argc, char **argv, const char *opts,
		     const char *help, gx_loader_opt_fn fn)
{
	char optstr[64];
	unsigned long v;
	struct stat st;
	int opt;

	snprintf(optstr, sizeof(optstr), "vp:c:i:h%s", opts ? opts : "");
	while ((opt = getopt(argc, argv, optstr)) != -1) {
		switch (opt) {
		case 'v':
			l->verbose = 1;
			break;
		case 'p':
			if (gx_loader_uint(optarg, 1, 4194304, &v))
				goto bad;
			l->scope = GPU_SCOPE_TGID;
			l->scope_id = v;
			break;
		case 'c':
			/* A cgroup v2 id is the inode number of its folder. */
			if (stat(optarg, &st) || !S_ISDIR(st.st_mode)) {
				fprintf(stderr, "gx_%s: cannot use cgroup '%s': %s\n", l->name,
					optarg, strerror(errno ? errno : ENOTDIR));
				exit(2);
			}
			l->scope = GPU_SCOPE_CGROUP;
			l->scope_id = st.st_ino;
			break;
		case 'i':
			if (gx_loader_uint(optarg, 0, 86400, &v))
				goto bad;
			l->interval = v;
			break;
		case 'h':
			usage(l, help, stdout);
			exit(0);
		default:
			if (opt != '?' && fn && fn(opt, optarg) == 0)
				break;
			goto bad;
		}
	}
	if (optind != argc)
		goto bad;
	gx_verbose = l->verbose;
	libbpf_set_print(libbpf_print);
	return;
bad:
	if (opt != '?' && opt != -1)
		fprintf(stderr, "gx_%s: bad value for -%c: '%s'\n", l->name, opt, optarg);
	usage(l, help, stderr);
	exit(2);
}

void gx_loader_scope(const struct gx_loader *l, unsigned int *scope, unsigned long long *scope_id)
{
	*scope = l->scope;
	*scope_id = l->scope_id;
}

int gx_loader_fail(const struct gx_loader *l, const char *what, int err)
{
	if (err > 0)
		err = -err;
	fprintf(stderr, "gx_%s: %s failed: %s%s\n", l->name, what, strerror(-err),
		err == -ENOENT || err == -ESRCH ? " (is gpuext.ko loaded?)" : "");
	return 1;
}

/* What the kernel says about this policy: calls, errors, and whether it
 * disabled it (the struct_ops counterpart of sched_ext's exit info). */
static void kernel_report(const struct gx_loader *l)
{
	struct gx_policy_info info[64];
	struct gx_policies pl;
	unsigned int i;
	int fd = open("/dev/" GX_DEV_NAME, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	memset(&pl, 0, sizeof(pl));
	pl.size = sizeof(pl);
	pl.version = GX_ABI_VERSION;
	pl.nr = 64;
	pl.entries = (unsigned long long)(uintptr_t)info;
	if (ioctl(fd, GX_IOC_POLICIES, &pl) == 0) {
		for (i = 0; i < pl.nr; i++) {
			if (strncmp(info[i].name, l->name, sizeof(info[i].name)) ||
			    info[i].scope != l->scope || info[i].scope_id != l->scope_id)
				continue;
			printf("gx_%s: kernel: calls %llu errors %llu\n", l->name,
			       (unsigned long long)info[i].calls, (unsigned long long)info[i].errors);
			if (info[i].disabled)
				printf("gx_%s: disabled by the kernel after %llu errors; FIFO applies to its scope\n",
				       l->name, (unsigned long long)info[i].errors);
		}
	}
	close(fd);
}

int gx_loader_run(struct gx_loader *l, void (*stats)(void *ud), void *ud)
{
	unsigned int waited = 0;

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	printf("gx_%s: attached (scope %s %llu)\n", l->name,
	       l->scope == GPU_SCOPE_TGID ? "pid" : l->scope == GPU_SCOPE_CGROUP ? "cgroup" : "global",
	       (unsigned long long)l->scope_id);
	fflush(stdout);
	while (!gx_stop) {
		usleep(100000);
		if (l->interval && ++waited >= l->interval * 10) {
			waited = 0;
			stats(ud);
			kernel_report(l);
			fflush(stdout);
		}
	}
	stats(ud);
	kernel_report(l);
	printf("gx_%s: detached\n", l->name);
	fflush(stdout);
	return 0;
}
