/* `gpuext run` / `gpuext-run`: run a command with the shim in front of the
 * real CUDA driver. It only prepares the environment and execs, so the
 * application runs unchanged: the shim's folder goes first in
 * LD_LIBRARY_PATH (and in TRITON_LIBCUDA_PATH, which Triton's launchers use
 * instead), the configuration travels as GPUEXT_* variables, and --audit adds
 * an LD_AUDIT module that redirects dlopen("/abs/path/libcuda.so.1"), which
 * LD_LIBRARY_PATH cannot catch. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli_internal.h"
#include "cli/run_internal.h"
#include "tenant/gx_tenant.h"
#include "common/gx_ctl.h"
#include "common/gx_log.h"
#include "common/gx_util.h"
#include "hostexec/gx_hostexec.h"

static const char *prog = "gpuext run";

static void run_err(const char *hint, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void run_err(const char *hint, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "gpuext: error: ");
	vfprintf(stderr, fmt, ap);
	if (hint)
		fprintf(stderr, " (%s)", hint);
	fputc('\n', stderr);
	va_end(ap);
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: %s [-v] [--tool NAME] [--policy FILE[,KNOB=V...]] [--sched POLICY[,KNOB=V...]]\n"
		"       [--tenant NAME] [--class lc|be] [--window N] [--mem-limit SIZE] [--gpu-share PCT]\n"
		"       [--log LEVEL] [--audit] [--ptxas] [--jit-async] [--launch-sample N[,first=K] | --every-launch]\n"
		"       [--disable] [--] CMD [ARGS...]\n\n"
		"Run CMD with gpuext's libcuda.so.1 in front of NVIDIA's driver.\n\n"
		"  -v, --verbose     log what the shim does (GPUEXT_LOG=info; twice: debug)\n"
		"  --log LEVEL       GPUEXT_LOG: error, warn, info or debug\n"
		"  --tool NAME       run an observability tool (GPUEXT_TOOL), print its report at exit;\n"
		"                    repeat (or NAME,NAME) for several: their hooks run in that order\n"
		"  --json            --tool: the report as JSON\n"
		"  --trace FILE      --tool: also write a Chrome/Perfetto trace (JSON)\n"
		"  --sample N        --tool memtrace: record 1 of N warp accesses (GPUEXT_CFG, GPUEXT_MEM_SAMPLE)\n"
		"  --launch-sample N[,first=K]\n"
		"                    --tool: instrument each kernel's first K launches (16), then 1 in N;\n"
		"                    the others run natively (GPUEXT_LAUNCH_SAMPLE; the default: 16;\n"
		"                    not beside --policy or --sched; docs/devbpf-tools.md)\n"
		"  --every-launch    --tool: instrument every launch (--launch-sample 1): exact counts\n"
		"  --policy FILE     load a policy object, *.bpf.o (GPUEXT_POLICY); repeatable, and\n"
		"                    usable with --tool (device policies run before the tools)\n"
		"  --tenant NAME     this process is tenant NAME of its GPUs (GPUEXT_TENANT; several\n"
		"                    processes may share one); see 'gpuext tenant'\n"
		"  --class lc|be     the tenant's class: latency critical or best effort (GPUEXT_TENANT_CLASS)\n"
		"  --window N        at most N of the tenant's launches in flight (GPUEXT_TENANT_WINDOW)\n"
		"  --mem-limit SIZE  device memory of the tenant on each GPU, over all its processes, e.g.\n"
		"                    4G; per GPU ordinal: 0=10G,1=20G (a bare SIZE: the others)\n"
		"                    (GPUEXT_TENANT_MEM_LIMIT); cuMemGetInfo reports it as total\n"
		"  --gpu-share PCT   the tenant's share of GPU time when others want it, work-conserving\n"
		"                    (GPUEXT_TENANT_GPU_SHARE); see docs/limits.md\n"
		"  --sched P[,K=V]   schedule the blocks of the kernels with policy P: a *.bpf.o or\n"
		"                    a shipped one (fixed_work, greedy, max_steals, latency_budget,\n"
		"                    adaptive); knobs K=V, kernels=GLOB (GPUEXT_SCHED). The run's\n"
		"                    decisions and samples: gpuext sched (GPUEXT_SCHED_LOG)\n"
		"  --audit           also redirect dlopen of libcuda by absolute path (LD_AUDIT)\n"
		"  --ptxas           compilers that run ptxas themselves compile the device policies in:\n"
		"                    Triton (TRITON_PTXAS_PATH) and XLA (XLA_FLAGS, PATH) use gpuext-ptxas;\n"
		"                    XLA's part is set whenever a device policy or tool is attached\n"
		"  --jit-async       a module whose instrumented code is not in the module cache loads as\n"
		"                    it came and is compiled by worker threads; its launches until then\n"
		"                    run uninstrumented (GPUEXT_JIT_ASYNC=1; docs/cache.md)\n"
		"  --disable         keep the shim loaded but only forward (GPUEXT_DISABLE=1)\n"
		"  --print-env       print the environment that would be set, do not run\n"
		"  -h, --help        this help\n"
		"  -V, --version     print the version\n\n"
		"The shim is found next to this program (../lib/libcuda.so.1) or in\n"
		"GPUEXT_LIB_DIR. The real driver is found by path (GPUEXT_REAL_LIBCUDA overrides).\n",
		prog);
}

/* ../lib relative to this executable, or GPUEXT_LIB_DIR. */
static int shim_dir(char *out, size_t len)
{
	const char *env = getenv("GPUEXT_LIB_DIR");
	if (env && *env) {
		snprintf(out, len, "%s", env);
	} else {
		char exe[PATH_MAX];
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (n > 0 && (size_t)n + 8 > len)
			return -ENAMETOOLONG;
		if (n <= 0)
			return -errno;
		exe[n] = 0;
		char *slash = strrchr(exe, '/');
		if (!slash)
			return -ENOENT;
		*slash = 0;
		memcpy(out, exe, slash - exe);
		strcpy(out + (slash - exe), "/../lib");
	}
	char real[PATH_MAX], lib[PATH_MAX + 32];
	if (!realpath(out, real))
		return -ENOENT;
	snprintf(lib, sizeof(lib), "%s/libcuda.so.1", real);
	if (access(lib, R_OK))
		return -ENOENT;
	snprintf(out, len, "%s", real);
	return 0;
}

static int set(const char *k, const char *v, bool print)
{
	if (print)
		printf("%s=%s\n", k, v);
	return setenv(k, v, 1);
}

static int set_default(const char *k, const char *v, bool print)
{
	const char *old = getenv(k);
	return old ? 0 : set(k, v, print);
}

/* K = V joined to K's current value by SEP, V first (a search path) or
 * last (a flag list); just V when K is unset or empty. -1: out of memory. */
static int join_env(const char *k, const char *v, char sep, bool first, bool print)
{
	const char *old = getenv(k);
	if (!old || !*old) {
		set(k, v, print);
		return 0;
	}
	size_t n = strlen(v) + strlen(old) + 2;
	char *s = malloc(n);
	if (!s)
		return -1;
	snprintf(s, n, "%s%c%s", first ? v : old, sep, first ? old : v);
	set(k, s, print);
	free(s);
	return 0;
}

/* Is one of the --policy objects a device policy (not struct_ops)? A
 * struct_ops object names its sections "struct_ops/..." (hostexec/). */
static bool has_device_policy(const char *list)
{
	char path[4096];
	for (const char *p = list; p && *p;) {
		const char *c = strchr(p, ':');
		size_t len = c ? (size_t)(c - p) : strlen(p);
		const char *k = memchr(p, ',', len); /* knobs after the object */
		snprintf(path, sizeof(path), "%.*s", (int)(k ? (size_t)(k - p) : len), p);
		if (path[0] && !gx_hx_is_struct_ops(path))
			return true;
		p = c ? c + 1 : NULL;
	}
	return false;
}

/* --ptxas: Triton runs TRITON_PTXAS_PATH, XLA the ptxas of its CUDA data
 * folder (in-process compilation off, so that it runs one): both get
 * gpuext-ptxas (cli/ptxas.c), which compiles the device policies in and
 * runs the real ptxas — the one the user had named, if any. The data
 * folder's bin/ also goes first on PATH: jaxlib 0.11's XLA ignores
 * --xla_gpu_cuda_data_dir and looks for <dir>/bin/ptxas over the folders
 * of PATH (bench/results/2026-12-03-gpu-run32.md: its search log), taking the first found;
 * gpuext-ptxas skips itself when it looks for the real one on PATH. */
static int set_ptxas(const char *libdir, bool print, bool triton)
{
	char bin[PATH_MAX + 32], cuda[PATH_MAX + 32];
	snprintf(bin, sizeof(bin), "%s/../bin/gpuext-ptxas", libdir);
	snprintf(cuda, sizeof(cuda), "%s/../share/gpuext/cuda", libdir);
	if (access(bin, X_OK)) {
		if (!triton)
			return 0; /* the automatic XLA route: nothing to set up */
		run_err("rebuild with 'make'", "--ptxas: %s is missing", bin);
		return -1;
	}
	if (triton) {
		const char *user = getenv("TRITON_PTXAS_PATH");
		if (user && *user)
			set_default("GPUEXT_REAL_PTXAS", user, print);
		set("TRITON_PTXAS_PATH", bin, print);
	}
	char v[sizeof(cuda) + 96];
	snprintf(v, sizeof(v), "--xla_gpu_enable_libnvptxcompiler=false --xla_gpu_cuda_data_dir=%s", cuda);
	if (join_env("XLA_FLAGS", v, ' ', false, print))
		return -1;
	snprintf(v, sizeof(v), "%s/bin", cuda);
	return join_env("PATH", v, ':', true, print);
}

/* Repeated --tool (GPUEXT_TOOL=a,b) and --policy (GPUEXT_POLICY=p:q). */
static int add_item(char *list, size_t n, const char *v, char sep)
{
	size_t l = strlen(list);
	if (!*v)
		return 0;
	if (l + strlen(v) + 2 > n) {
		run_err("name fewer", "too many --tool/--policy values");
		return -1;
	}
	snprintf(list + l, n - l, "%s%s", l ? (char[]){ sep, 0 } : "", v);
	return 0;
}
/* FILE[,knob=value...]: the path made absolute, the knobs kept. */
static int add_policy(char *list, size_t n, const char *v)
{
	char rp[PATH_MAX], file[PATH_MAX], item[PATH_MAX + 512];
	const char *knobs = strchr(v, ',');
	snprintf(file, sizeof(file), "%.*s", knobs ? (int)(knobs - v) : (int)strlen(v), v);
	if (!realpath(file, rp) || access(rp, R_OK)) {
		run_err("give the path of a compiled policy, e.g. policy.bpf.o", "cannot read policy '%s': %s", file,
			strerror(errno));
		return -1;
	}
	snprintf(item, sizeof(item), "%s%s", rp, knobs ? knobs : "");
	return add_item(list, n, item, ':');
}

/* --sched P[,knobs]: P a policy object, or the name of a shipped one
 * (<shim dir>/../share/gpuext/sched/P.bpf.o); out = the object's real path
 * and the knobs. */
static int sched_spec(const char *v, const char *shim, char *out, size_t n)
{
	const char *c = strchr(v, ',');
	char obj[PATH_MAX], rp[PATH_MAX];
	snprintf(obj, sizeof(obj), "%.*s", (int)(c ? (size_t)(c - v) : strlen(v)), v);
	if (!strchr(obj, '/') && !strchr(obj, '.') && *obj) {
		char p[2 * PATH_MAX + 64]; /* shim dir + name: each up to PATH_MAX */
		snprintf(p, sizeof(p), "%s/../share/gpuext/sched/%s.bpf.o", shim, obj);
		snprintf(obj, sizeof(obj), "%.*s", PATH_MAX - 1, p);
	}
	if (!realpath(obj, rp) || access(rp, R_OK)) {
		run_err("a compiled policy (e.g. policy.bpf.o) or a shipped name: fixed_work, greedy, max_steals, "
			"latency_budget, adaptive",
			"cannot read schedule policy '%s': %s", obj, strerror(errno));
		return -1;
	}
	if ((size_t)snprintf(out, n, "%s%s", rp, c ? c : "") >= n) {
		run_err(NULL, "--sched: too long");
		return -1;
	}
	return 0;
}

int gx_run_main(int argc, char **argv, const char *name)
{
	prog = name;
	int verbose = 0, audit = 0, disable = 0, print_env = 0, ptxas = 0, jit_async = 0;
	const char *tool = NULL, *policy = NULL, *log = NULL;
	const char *tenant = NULL, *cls = NULL, *window = NULL; /* tenant scheduling (docs/tenants.md) */
	const char *mem_limit = NULL, *gpu_share = NULL;	/* limits (docs/limits.md) */
	char tools[1024] = "", pols[8192] = "";			/* repeated --tool / --policy, joined */
	int tool_given = 0;
	const char *trace = NULL, *sample = NULL; /* --tool reports (run_tool.c) */
	const char *launch_sample = NULL;
	const char *sched = NULL;
	int json = 0;
	int i = 1;
	for (; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (a[0] != '-')
			break;
		if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
			verbose++;
		} else if (!strcmp(a, "-vv")) {
			verbose += 2;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
			printf("gpuext %s\n", GX_VERSION);
			return 0;
		} else if (!strcmp(a, "--audit")) {
			audit = 1;
		} else if (!strcmp(a, "--ptxas")) {
			ptxas = 1;
		} else if (!strcmp(a, "--jit-async")) {
			jit_async = 1;
		} else if (!strcmp(a, "--disable")) {
			disable = 1;
		} else if (!strcmp(a, "--json")) {
			json = 1;
		} else if (!strcmp(a, "--launch-sample") && i + 1 < argc) {
			launch_sample = argv[++i];
		} else if (!strcmp(a, "--every-launch")) {
			launch_sample = "1";
		} else if ((!strcmp(a, "--trace") || !strcmp(a, "--sample")) && i + 1 < argc) {
			if (!strcmp(a, "--trace"))
				trace = argv[++i];
			else
				sample = argv[++i];
		} else if (!strcmp(a, "--print-env")) {
			print_env = 1;
		} else if (!strcmp(a, "--tenant") || !strcmp(a, "--class") || !strcmp(a, "--window") ||
			   !strcmp(a, "--mem-limit") || !strcmp(a, "--gpu-share")) {
			if (i + 1 >= argc) {
				run_err("try '--help'", "%s needs a value", a);
				return 2;
			}
			const char *v = argv[++i];
			if (!strcmp(a, "--tenant"))
				tenant = v;
			else if (!strcmp(a, "--class"))
				cls = v;
			else if (!strcmp(a, "--mem-limit"))
				mem_limit = v;
			else if (!strcmp(a, "--gpu-share"))
				gpu_share = v;
			else
				window = v;
		} else if (!strcmp(a, "--sched") && i + 1 < argc) {
			sched = argv[++i];
		} else if (!strncmp(a, "--sched=", 8)) {
			sched = a + 8;
		} else if (!strcmp(a, "--tool") || !strcmp(a, "--policy") || !strcmp(a, "--log")) {
			if (i + 1 >= argc) {
				run_err("try '--help'", "%s needs a value", a);
				return 2;
			}
			const char *v = argv[++i];
			if (!strcmp(a, "--tool")) {
				tool_given = 1;
				if (add_item(tools, sizeof(tools), v, ','))
					return 2;
			} else if (!strcmp(a, "--policy")) {
				if (add_policy(pols, sizeof(pols), v))
					return 2;
			} else {
				log = v;
			}
		} else if (!strncmp(a, "--tool=", 7)) {
			tool_given = 1;
			if (add_item(tools, sizeof(tools), a + 7, ','))
				return 2;
		} else if (!strncmp(a, "--policy=", 9)) {
			if (add_policy(pols, sizeof(pols), a + 9))
				return 2;
		} else if (!strncmp(a, "--log=", 6)) {
			log = a + 6;
		} else {
			run_err("try '--help'; put the command after '--' if it starts with '-'", "unknown option '%s'",
				a);
			return 2;
		}
	}
	if (i >= argc) {
		run_err("usage: gpuext run [OPTIONS] [--] CMD [ARGS...]", "no command to run");
		return 2;
	}
	if (tool && !*tool) {
		run_err("try 'gpuext tools' for the list", "--tool needs a name");
		return 2;
	}
	if (log && gx_log_parse_level(log) < 0) {
		run_err("use error, warn, info or debug", "unknown log level '%s'", log);
		return 2;
	}
	if (tenant && (!*tenant || strlen(tenant) >= 32)) {
		run_err("1 to 31 characters", "bad --tenant name '%s'", tenant);
		return 2;
	}
	if (cls && strcmp(cls, "lc") && strcmp(cls, "be")) {
		run_err("lc: latency critical, be: best effort", "unknown --class '%s'", cls);
		return 2;
	}
	if (window) {
		char *end;
		unsigned long w = strtoul(window, &end, 10);
		if (!*window || *end || w > 1000000) {
			run_err("launches in flight, 0: no cap", "bad --window '%s'", window);
			return 2;
		}
	}
	uint64_t bytes;
	uint64_t per[64];
	if (mem_limit && gx_tn_parse_mem_limits(mem_limit, &bytes, per, 64)) {
		run_err("bytes with an optional K, M, G or T (powers of 1024), e.g. 4G, or per GPU ordinal: 0=10G,1=20G",
			"bad --mem-limit '%s'", mem_limit);
		return 2;
	}
	if (gpu_share) {
		char *end;
		unsigned long p = strtoul(gpu_share, &end, 10);
		if (!*gpu_share || *end || p < 1 || p > 100) {
			run_err("a percentage, 1 to 100", "bad --gpu-share '%s'", gpu_share);
			return 2;
		}
	}
	if (pols[0])
		policy = pols;
	if (tools[0] || tool_given)
		tool = tools;
	char dir[PATH_MAX];
	if (shim_dir(dir, sizeof(dir)) < 0) {
		run_err("build it with 'make', or set GPUEXT_LIB_DIR to the folder holding libcuda.so.1",
			"cannot find the gpuext shim (libcuda.so.1)");
		return 2;
	}
	if (join_env("LD_LIBRARY_PATH", dir, ':', true, print_env))
		return 1;
	set("TRITON_LIBCUDA_PATH", dir, print_env);
	if (policy)
		set("GPUEXT_POLICY", policy, print_env);
	if (tool)
		set("GPUEXT_TOOL", tool, print_env);
	if (tenant)
		set("GPUEXT_TENANT", tenant, print_env);
	if (cls)
		set("GPUEXT_TENANT_CLASS", cls, print_env);
	if (window)
		set("GPUEXT_TENANT_WINDOW", window, print_env);
	if (mem_limit)
		set("GPUEXT_TENANT_MEM_LIMIT", mem_limit, print_env);
	if (gpu_share)
		set("GPUEXT_TENANT_GPU_SHARE", gpu_share, print_env);
	if (log)
		set("GPUEXT_LOG", log, print_env);
	else if (verbose)
		set("GPUEXT_LOG", verbose > 1 ? "debug" : "info", print_env);
	if (disable)
		set("GPUEXT_DISABLE", "1", print_env);
	if (jit_async)
		set("GPUEXT_JIT_ASYNC", "1", print_env);
	if (launch_sample) {
		/* the shim reads it (shim/launch_sample.c); a typo is said here,
		 * before the run, not as a warning in the application's log */
		unsigned long every, first;
		if (gx_ctl_sample_parse(launch_sample, &every, &first)) {
			run_err("e.g. --launch-sample 16 or --launch-sample 64,first=4",
				"--launch-sample %s: expected N[,first=K], N from 1 to 1000000", launch_sample);
			return 2;
		}
		set("GPUEXT_LAUNCH_SAMPLE", launch_sample, print_env);
	}
	if (audit) {
		char a[PATH_MAX + 32];
		snprintf(a, sizeof(a), "%s/gpuext-audit.so", dir);
		if (access(a, R_OK)) {
			run_err("rebuild with 'make'", "--audit: %s is missing", a);
			return 2;
		}
		if (join_env("LD_AUDIT", a, ':', true, print_env))
			return 1;
	}
	if (sample) { /* memtrace's 1 in N: its cfg[0], and memtrace_gate's gx_mem_sample */
		set("GPUEXT_CFG", sample, print_env);
		set("GPUEXT_MEM_SAMPLE", sample, print_env);
	}
	/* Device hooks need PTX: CuPy's own kernels reach the driver as PTX
	 * (not NVRTC's cubins) with CUPY_COMPILE_WITH_PTX=1; its precompiled
	 * libraries stay SASS either way. Only when device code is attached,
	 * and never over the user's own setting. */
	if (tool || sched || (policy && has_device_policy(policy)))
		set_default("CUPY_COMPILE_WITH_PTX", "1", print_env);
	/* XLA has no other way to device hooks (its cubins carry no PTX), and
	 * the ptxas it finds on PATH is its only reader of the route: set up
	 * whenever device code is attached. Triton's needs --ptxas (the shim
	 * already rewrites the PTX its cubins carry). */
	if ((ptxas || tool || (policy && has_device_policy(policy))) && set_ptxas(dir, print_env, ptxas))
		return 2;
	if (sched) {
		char spec[PATH_MAX + 1024];
		if (sched_spec(sched, dir, spec, sizeof(spec)))
			return 2;
		set("GPUEXT_SCHED", spec, print_env);
		set("GPUEXT_SCHED_LOG", "1", print_env);
	}
	if (print_env)
		return 0;
	if (tool)
		return gx_run_tool(tool, argv + i, json, trace);
	execvp(argv[i], argv + i);
	int e = errno;
	run_err(e == ENOENT ? "is it installed and in PATH?" : NULL, "cannot run '%s': %s", argv[i], strerror(e));
	return e == ENOENT ? 127 : 126;
}

int do_run(int argc, char **argv)
{
	return gx_run_main(argc, argv, "gpuext run");
}
