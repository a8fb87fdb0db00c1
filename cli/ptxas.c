/* gpuext-ptxas — a ptxas that puts the process's device policies into the
 * PTX it compiles, for compilers that run ptxas themselves and hand the
 * driver only cubins: Triton (TRITON_PTXAS_PATH) and XLA (its CUDA data
 * folder). gpuext-run --ptxas puts it in place.
 *
 * It takes the policies the shim would attach (GPUEXT_POLICY, GPUEXT_TOOL:
 * the same objects in the same order, so the linked code reaches the same
 * maps through the module's __gx_devrt, which the shim writes at the
 * module's first launch), JIT'd for the target it is asked to compile for
 * (the JIT cache, else libgxjit.so), rewrites each input *.ptx into a
 * temporary file and runs the real ptxas on it with every other argument as
 * given. Anything that goes wrong (no policy, an unreadable input, a
 * rewrite that fails) is one "gpuext-ptxas: ..." line on stderr and the
 * real ptxas compiles the original: a compiler must never fail because of
 * us. `--version` and the like go straight to the real ptxas, so the
 * wrapper answers like it.
 *
 * The real ptxas: $GPUEXT_REAL_PTXAS, else the first `ptxas` on PATH that is
 * not this program, else $CUDA_HOME/bin/ptxas (/usr/local/cuda by default). */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attach/gx_attach.h"
#include "common/gx_log.h"
#include "common/gx_util.h"
#include "hostexec/gx_hostexec.h"
#include "ptx-rewrite/gx_ptx.h"

static const char *self_path(char *buf, size_t n)
{
	ssize_t k = readlink("/proc/self/exe", buf, n - 1);
	buf[k > 0 ? k : 0] = 0;
	return buf;
}

/* The install folder (bin/, lib/, share/): this program is bin/gpuext-ptxas
 * or, where links cannot be shipped (the wheel), a copy of it in
 * share/gpuext/cuda/bin/ptxas. */
static const char *gpuext_prefix(char *buf, size_t n)
{
	char self[PATH_MAX], probe[PATH_MAX + 64];
	self_path(self, sizeof(self));
	char *s = strrchr(self, '/');
	if (!s)
		return NULL;
	*s = 0;
	snprintf(probe, sizeof(probe), "%s/../../../../lib/libcuda.so.1", self);
	bool in_share = strstr(self, "/share/gpuext/cuda/bin") && !access(probe, F_OK);
	int w = snprintf(buf, n, "%s/%s", self, in_share ? "../../../.." : "..");
	return w < 0 || (size_t)w >= n ? NULL : buf;
}

/* Is the file at real path rp one of gpuext's own ptxas programs? */
static bool is_ours(const char *rp, const char *self)
{
	char pre[PATH_MAX], p[PATH_MAX + 64], r[PATH_MAX];
	if (!strcmp(rp, self))
		return true;
	if (!gpuext_prefix(pre, sizeof(pre)))
		return false;
	snprintf(p, sizeof(p), "%s/bin/gpuext-ptxas", pre);
	if (realpath(p, r) && !strcmp(rp, r))
		return true;
	snprintf(p, sizeof(p), "%s/share/gpuext/cuda/bin/ptxas", pre);
	return realpath(p, r) && !strcmp(rp, r);
}

static const char *real_ptxas(char *buf, size_t n)
{
	const char *e = getenv("GPUEXT_REAL_PTXAS");
	if (e && *e)
		return e;
	char self[PATH_MAX], rp[PATH_MAX];
	self_path(self, sizeof(self));
	const char *path = getenv("PATH");
	for (const char *p = path; p && *p;) {
		const char *c = strchr(p, ':');
		size_t len = c ? (size_t)(c - p) : strlen(p);
		snprintf(buf, n, "%.*s/ptxas", (int)len, p);
		if (!access(buf, X_OK) && realpath(buf, rp) && !is_ours(rp, self))
			return buf;
		p = c ? c + 1 : NULL;
	}
	const char *home = getenv("CUDA_HOME");
	snprintf(buf, n, "%s/bin/ptxas", home && *home ? home : "/usr/local/cuda");
	return buf;
}

/* The arch ptxas is asked for (-arch=sm_90a, -arch sm_90, --gpu-name sm_90):
 * the policies are JIT'd for it (90 when none is given). */
static unsigned target_sm(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = NULL;
		if (!strncmp(a, "-arch=", 6) || !strncmp(a, "--gpu-name=", 11))
			v = strchr(a, '=') + 1;
		else if ((!strcmp(a, "-arch") || !strcmp(a, "--gpu-name")) && i + 1 < argc)
			v = argv[i + 1];
		if (v && !strncmp(v, "sm_", 3))
			return (unsigned)strtoul(v + 3, NULL, 10);
	}
	return 90;
}

/* Options of ptxas whose value is the next argument (the rest are flags,
 * or carry their value after '='). */
static bool takes_value(const char *o)
{
	static const char *const with[] = {"-o", "--output-file", "-arch", "--gpu-name", "-maxrregcount",
					   "--maxrregcount", "-e", "--entry", "-optf", "--options-file", "-m",
					   "--machine", "-O", "--opt-level", "-dlcm", "--def-load-cache", "-dscm",
					   "--def-store-cache", "-fmad", "--fmad", "-ias", "--input-as-string"};
	for (size_t k = 0; k < sizeof(with) / sizeof(with[0]); k++)
		if (!strcmp(o, with[k]))
			return true;
	return false;
}

/* PTX text: a `.version` directive near the start (a cubin or an options
 * file has none). */
static bool looks_like_ptx(const char *path)
{
	char buf[4097];
	FILE *f = fopen(path, "rbe");
	if (!f)
		return false;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	return n == strlen(buf) && strstr(buf, ".version") && strstr(buf, ".target");
}

/* An input: a positional argument, named .ptx or holding PTX text — XLA
 * hands ptxas temporary files with no extension. */
static bool is_input(int argc, char **argv, int i)
{
	const char *a = argv[i];
	size_t l = strlen(a);
	if (i >= argc || !l || a[0] == '-' || (i > 1 && takes_value(argv[i - 1])))
		return false;
	return (l > 4 && !strcmp(a + l - 4, ".ptx")) || looks_like_ptx(a);
}

/* Rewrite `in` with the set's hooks into a temporary file; its path in out. */
static int rewrite_file(const char *in, const struct gx_policy_set *set, char *out, size_t n)
{
	char *ptx = NULL;
	size_t len = 0;
	int ret = gx_read_file(in, &ptx, &len, 1u << 30);
	if (ret) {
		pr_warn("ptxas: cannot read %s: %s; compiling it as it is", in, strerror(-ret));
		return ret;
	}
	struct gx_ptx_rewrite_opts o = { .sz = sizeof(o), .hooks = set->hooks, .policy_ptx = set->ptx,
					 .policy_len = set->ptx_len, .bindings = set->binds,
					 .nr_bindings = set->nr_binds, .bind_samples = set->samples,
					 .flags = gx_ptx_flags_from_env(),
					 .mem_sample = gx_ptx_mem_sample_from_env() };
	struct gx_ptx_rewrite_result res;
	ret = gx_ptx_rewrite(ptx, len, &o, &res);
	free(ptx);
	if (ret) {
		pr_warn("ptxas: %s: rewrite failed (%s); compiling it as it is", in, res.err[0] ? res.err : "error");
		gx_ptx_rewrite_result_free(&res);
		return ret;
	}
	snprintf(out, n, "%s/gpuext-ptxas-XXXXXX.ptx", getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	int fd = mkstemps(out, 4);
	ret = fd < 0 ? -errno : 0;
	if (fd >= 0) {
		close(fd);
		ret = gx_write_file(out, res.ptx, res.len);
		if (ret)
			unlink(out);
	}
	if (ret)
		pr_warn("ptxas: cannot write a temporary file (%s); compiling %s as it is", strerror(-ret), in);
	else
		pr_info("ptxas: %s: %u hook sites, %u kernels", in, res.nr_hooks, res.nr_kernels);
	gx_ptx_rewrite_result_free(&res);
	return ret;
}

/* The temporary files, for a signal that ends us before we remove them
 * (a caller's timeout, ^C). */
#define MAX_TMP 64
static char tmp[MAX_TMP][PATH_MAX];
static volatile sig_atomic_t ntmp;

static void on_term(int sig)
{
	for (int k = 0; k < ntmp; k++)
		unlink(tmp[k]);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* The real ptxas on argv: its exit status, or 128 + the signal that ended
 * it with *signaled set. */
static int run_real(const char *real, char **argv, bool *signaled)
{
	*signaled = false;
	pid_t pid = fork();
	if (pid < 0)
		return 127;
	if (!pid) {
		signal(SIGPIPE, SIG_DFL); /* ours is ignored; ptxas gets its own */
		execv(real, argv);
		fprintf(stderr, "gpuext: ptxas: cannot run %s: %s\n", real, strerror(errno));
		_exit(127);
	}
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	*signaled = WIFSIGNALED(st);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/* Reached through a link (XLA's <data folder>/bin/ptxas), this program's
 * folder is not where gpuext lives: say where, from the program itself. */
static void find_gpuext(void)
{
	char pre[PATH_MAX], v[PATH_MAX + 64];
	if (!gpuext_prefix(pre, sizeof(pre)))
		return;
	snprintf(v, sizeof(v), "%s/lib/libgxjit.so", pre);
	setenv("GPUEXT_JITLIB", v, 0);
	snprintf(v, sizeof(v), "%s/share/gpuext/tools", pre);
	setenv("GPUEXT_TOOLS_DIR", v, 0);
}

int main(int argc, char **argv)
{
	char rbuf[PATH_MAX];
	const char *real = real_ptxas(rbuf, sizeof(rbuf));
	find_gpuext();
	const char *lvl = getenv("GPUEXT_LOG");
	gx_log_set_level(lvl && gx_log_parse_level(lvl) >= 0 ? gx_log_parse_level(lvl) : GX_LOG_WARN);
	const char *policy = getenv("GPUEXT_POLICY"), *tool = getenv("GPUEXT_TOOL");
	const char *dis = getenv("GPUEXT_DISABLE");
	int nin = 0;
	for (int i = 1; i < argc; i++)
		nin += is_input(argc, argv, i);
	/* the real ptxas's argv: ours, with its path first and inputs swapped */
	char **args = calloc((size_t)argc + 1, sizeof(*args));
	if (!args)
		return 127;
	memcpy(args, argv, (size_t)argc * sizeof(*args));
	args[0] = (char *)real;
	/* Block scheduling puts its policy first in the shim's list, in a form
	 * only the shim derives: cubins built here would not match it, so
	 * such runs get plain cubins (the shim still hooks what carries PTX). */
	const char *sched = getenv("GPUEXT_SCHED");
	if (sched && *sched && nin && (policy || tool))
		pr_info("ptxas: GPUEXT_SCHED is set: compiling without the device policies");
	if (!nin || (!policy && !tool) || (sched && *sched) || (dis && *dis && strcmp(dis, "0"))) {
		execv(real, args); /* nothing to do: be ptxas */
		fprintf(stderr, "gpuext: ptxas: cannot run %s: %s\n", real, strerror(errno));
		return 127;
	}
	/* Our temporary files go with us whatever ends the run: a closed
	 * output (the caller read what it wanted: `| grep -q`) is EPIPE, not
	 * death by SIGPIPE, and a terminating signal removes them first. */
	signal(SIGPIPE, SIG_IGN);
	static const int term[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
	for (size_t i = 0; i < sizeof(term) / sizeof(term[0]); i++)
		signal(term[i], on_term);
	struct gx_policy_list pl;
	struct gx_policy_names pn = {.policy = policy, .tool = tool};
	int ret = gx_policy_list_load(&pn, target_sm(argc, argv), gx_hx_is_struct_ops, &pl);
	int at[MAX_TMP];
	char *orig[MAX_TMP];
	for (int i = 1; !ret && pl.nr && i < argc && ntmp < MAX_TMP; i++)
		if (is_input(argc, argv, i) && !rewrite_file(argv[i], &pl.set, tmp[ntmp], sizeof(tmp[0]))) {
			orig[ntmp] = argv[i];
			at[ntmp] = i;
			args[i] = tmp[ntmp];
			ntmp = ntmp + 1;
		}
	bool signaled;
	int rc = run_real(real, args, &signaled);
	/* a ptxas ended by a signal did not refuse our PTX: no second run */
	if (rc && ntmp && !signaled) {
		/* ptxas refused what we made of it: the original, as asked */
		pr_warn("ptxas: the rewritten PTX did not compile (exit %d); compiling the original", rc);
		for (int k = 0; k < ntmp; k++)
			args[at[k]] = orig[k];
		rc = run_real(real, args, &signaled);
	}
	for (int k = 0; k < ntmp; k++)
		unlink(tmp[k]);
	if (!ret)
		gx_policy_list_free(&pl);
	free(args);
	return rc;
}
