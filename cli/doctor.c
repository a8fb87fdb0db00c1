/* `gpuext doctor` — one screen about this machine, for a bug report.
 *
 *   gpuext doctor [--json]
 *
 * One line per check, `ok`, `info`, `warn` or `fail`, with the fix when not
 * ok: the install (PREFIX, the shim), NVIDIA's driver as the shim would find
 * it (common/gx_libcuda.h, the same walk), the GPUs it sees, whether a
 * program started now goes through the shim, the JIT or the prepared policy
 * cache for each GPU, the cache and shared-memory folders, the kernel
 * module, the Python stacks, and the environment that changes gpuext's
 * behaviour. Exit 0 without a `fail`, 1 with one. Nothing here needs a GPU:
 * every missing piece is a line, never a crash. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attach/gx_attach.h"
#include "cli/cli_internal.h"
#include "common/gx_libcuda.h"
#include "common/gx_util.h"
#include "devbpf/gx_bpf.h"

extern char **environ;

enum dr_status { DR_OK, DR_INFO, DR_WARN, DR_FAIL };
static const char *const dr_names[] = { "ok", "info", "warn", "fail" };

#define DR_MAX 96
static struct dr_check {
	char name[32];
	enum dr_status st;
	char detail[1536];
	char fix[768];
} checks[DR_MAX];
static int nr_checks;

static void add(const char *name, enum dr_status st, const char *fix, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void add(const char *name, enum dr_status st, const char *fix, const char *fmt, ...)
{
	if (nr_checks >= DR_MAX)
		return;
	struct dr_check *c = &checks[nr_checks++];
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->st = st;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->detail, sizeof(c->detail), fmt, ap);
	va_end(ap);
	snprintf(c->fix, sizeof(c->fix), "%s", fix ? fix : "");
}

/* ---- what the checks share ---- */
#define DR_MAXGPU 64
static struct {
	char prefix[PATH_MAX], lib[PATH_MAX + 8], shim[PATH_MAX + 32];
	struct stat shim_st;
	bool shim_ok;
	void *drv; /* NVIDIA's driver, dlopen'ed */
	char drv_path[PATH_MAX];
	char drv_err[1024];	/* why the explicit GPUEXT_REAL_LIBCUDA did not load */
	int nr_skipped;		/* copies of the shim met on the way */
	unsigned sm[DR_MAXGPU]; /* per GPU, major * 10 + minor */
	int nr_gpus;
	bool jit; /* libgxjit.so loads */
} dr;

/* A file that is the shim (same file as PREFIX/lib/libcuda.so.1). */
static bool is_our_shim(const char *path)
{
	struct stat st;
	return dr.shim_ok && stat(path, &st) == 0 && st.st_dev == dr.shim_st.st_dev && st.st_ino == dr.shim_st.st_ino;
}

/* Any copy of the shim: ours, or a file exporting its marker. */
static bool is_a_shim(const char *path)
{
	if (is_our_shim(path))
		return true;
	void *h = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
	bool shim = h && dlsym(h, "gpuext_shim_marker");
	if (h)
		dlclose(h);
	return shim;
}

/* ---- the install ---- */
static void check_install(void)
{
	if (gx_cli_prefix(dr.prefix, sizeof(dr.prefix))) {
		add("gpuext", DR_FAIL, "run gpuext from its install folder (PREFIX/bin/gpuext)",
		    "gpuext %s; cannot find PREFIX from /proc/self/exe: %s", GX_VERSION, strerror(errno));
		return;
	}
	add("gpuext", DR_OK, NULL, "gpuext %s, PREFIX %s", GX_VERSION, dr.prefix);
	snprintf(dr.lib, sizeof(dr.lib), "%s/lib", dr.prefix);
	snprintf(dr.shim, sizeof(dr.shim), "%s/libcuda.so.1", dr.lib);
	char fix[PATH_MAX + 128];
	if (stat(dr.shim, &dr.shim_st)) {
		add("shim", DR_FAIL, "reinstall gpuext (the tarball or wheel unpacks PREFIX/lib/libcuda.so.1)",
		    "%s: %s", dr.shim, strerror(errno));
		return;
	}
	dr.shim_ok = true;
	/* Its dependencies (libelf, libzstd, liblz4) must be here too. Loading
	 * it is inert: it opens no driver until a CUDA call. */
	void *h = dlopen(dr.shim, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		add("shim", DR_FAIL, "install the libraries it names (libelf1, libzstd1, liblz4-1)",
		    "%s does not load: %s", dr.shim, dlerror());
		return;
	}
	bool marker = dlsym(h, "gpuext_shim_marker") != NULL;
	if (!marker) {
		add("shim", DR_FAIL, "reinstall gpuext", "%s is not gpuext's shim (no gpuext_shim_marker)", dr.shim);
		return;
	}
	char so[PATH_MAX + 32];
	snprintf(so, sizeof(so), "%s/libcuda.so", dr.lib);
	if (access(so, R_OK)) {
		snprintf(fix, sizeof(fix), "ln -s libcuda.so.1 %s (Numba opens libcuda.so)", so);
		add("shim", DR_WARN, fix, "%s loads; %s is missing", dr.shim, so);
	} else {
		add("shim", DR_OK, NULL, "%s loads (and libcuda.so)", dr.shim);
	}
}

/* ---- NVIDIA's driver, found as the shim finds it ---- */
static int drv_candidate(const char *path, bool explicit_path, void *arg)
{
	(void)arg;
	if (is_our_shim(path)) {
		dr.nr_skipped++;
		if (explicit_path)
			snprintf(dr.drv_err, sizeof(dr.drv_err), "it is the shim itself");
		return explicit_path;
	}
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		if (explicit_path)
			snprintf(dr.drv_err, sizeof(dr.drv_err), "%s", dlerror());
		return explicit_path;
	}
	if (dlsym(h, "gpuext_shim_marker")) {
		dr.nr_skipped++;
		if (explicit_path)
			snprintf(dr.drv_err, sizeof(dr.drv_err), "it is a copy of gpuext's shim");
		dlclose(h);
		return explicit_path;
	}
	dr.drv = h;
	snprintf(dr.drv_path, sizeof(dr.drv_path), "%s", path);
	return 1;
}

typedef int (*cu_int_fn)(int *);
typedef int (*cu_init_fn)(unsigned);
typedef int (*cu_name_fn)(char *, int, int);
typedef int (*cu_attr_fn)(int *, int, int);
typedef int (*cu_get_fn)(int *, int);
typedef int (*cu_errname_fn)(int, const char **);
#define CU_ATTR_CC_MAJOR 75 /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR */
#define CU_ATTR_CC_MINOR 76

static const char *cu_err_name(int rc, char *buf, size_t n)
{
	cu_errname_fn en = dr.drv ? (cu_errname_fn)dlsym(dr.drv, "cuGetErrorName") : NULL;
	const char *s = NULL;
	if (!en || en(rc, &s) || !s)
		s = "CUDA error";
	snprintf(buf, n, "%s (%d)", s, rc);
	return buf;
}

static void kernel_driver_line(void)
{
	char *txt = NULL;
	size_t len = 0;
	/* GX_TEST_NVIDIA_VERSION: the file in its place, for tests/cli/test_doctor.sh */
	const char *vf = getenv("GX_TEST_NVIDIA_VERSION");
	if (gx_read_file(vf && *vf ? vf : "/proc/driver/nvidia/version", &txt, &len, 1 << 16)) {
		add("kernel-driver", dr.drv ? DR_WARN : DR_INFO,
		    dr.drv ? "load NVIDIA's kernel module (modprobe nvidia), or in a container mount the GPUs" : NULL,
		    "no /proc/driver/nvidia/version: NVIDIA's kernel module is not loaded");
		return;
	}
	/* "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159  Tue ...",
	 * "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04 ...":
	 * the first word after "Module" that is a version */
	char *nl = strchr(txt, '\n');
	if (nl)
		*nl = 0;
	char *v = strstr(txt, "Kernel Module");
	char ver[64] = "";
	for (char *t = v; t && *t && !ver[0];) {
		t += strcspn(t, " \t");
		t += strspn(t, " \t");
		unsigned a, b;
		char dot;
		if (sscanf(t, "%u%c%u", &a, &dot, &b) == 3 && dot == '.')
			sscanf(t, "%63s", ver);
	}
	if (ver[0])
		add("kernel-driver", DR_OK, NULL, "NVIDIA kernel module %s%s", ver,
		    strstr(txt, "Open Kernel") ? " (open)" : "");
	else
		add("kernel-driver", DR_OK, NULL, "%.200s", txt);
	free(txt);
}

static void check_driver(void)
{
	const char *fix = "install NVIDIA's driver or set GPUEXT_REAL_LIBCUDA";
	const char *env = getenv("GPUEXT_REAL_LIBCUDA");
	gx_libcuda_candidates(drv_candidate, NULL);
	if (!dr.drv && env && *env) {
		add("driver", DR_FAIL, fix, "GPUEXT_REAL_LIBCUDA=%s cannot be used: %s", env,
		    dr.drv_err[0] ? dr.drv_err : "not found");
	} else if (!dr.drv) {
		add("driver", DR_FAIL, fix,
		    "no NVIDIA libcuda.so.1 found (searched LD_LIBRARY_PATH, the ld.so cache and the usual "
		    "folders%s)",
		    dr.nr_skipped ? "; only copies of gpuext's shim" : "");
	} else {
		cu_int_fn ver = (cu_int_fn)dlsym(dr.drv, "cuDriverGetVersion");
		int v = 0, rc = ver ? ver(&v) : -1;
		char e[96];
		if (rc)
			add("driver", DR_WARN, "reinstall NVIDIA's driver", "%s: cuDriverGetVersion: %s", dr.drv_path,
			    ver ? cu_err_name(rc, e, sizeof(e)) : "missing");
		else
			add("driver", DR_OK, NULL, "%s, CUDA %d.%d (driver API %d)", dr.drv_path, v / 1000,
			    v % 1000 / 10, v);
	}
	kernel_driver_line();
}

static void check_gpus(void)
{
	if (!dr.drv) {
		add("gpus", DR_FAIL, "install NVIDIA's driver or set GPUEXT_REAL_LIBCUDA", "no driver to ask");
		return;
	}
	cu_init_fn init = (cu_init_fn)dlsym(dr.drv, "cuInit");
	cu_int_fn count = (cu_int_fn)dlsym(dr.drv, "cuDeviceGetCount");
	cu_get_fn get = (cu_get_fn)dlsym(dr.drv, "cuDeviceGet");
	cu_name_fn name = (cu_name_fn)dlsym(dr.drv, "cuDeviceGetName");
	cu_attr_fn attr = (cu_attr_fn)dlsym(dr.drv, "cuDeviceGetAttribute");
	if (!init || !count || !get || !name || !attr) {
		add("gpus", DR_FAIL, "reinstall NVIDIA's driver", "%s lacks cuInit/cuDeviceGet* entry points",
		    dr.drv_path);
		return;
	}
	char e[96];
	const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
	char fix[256];
	snprintf(fix, sizeof(fix), "check nvidia-smi%s", cvd ? " and CUDA_VISIBLE_DEVICES" : "");
	int rc = init(0), n = 0;
	if (rc) {
		add("gpus", DR_FAIL, fix, "cuInit: %s", cu_err_name(rc, e, sizeof(e)));
		return;
	}
	rc = count(&n);
	if (rc || n <= 0) {
		add("gpus", DR_FAIL, fix, "cuDeviceGetCount: %s", rc ? cu_err_name(rc, e, sizeof(e)) : "no GPU");
		return;
	}
	for (int i = 0; i < n; i++) {
		char nm[256] = "?", tag[16];
		int dev = 0, mj = 0, mn = 0;
		snprintf(tag, sizeof(tag), "gpu%d", i);
		rc = get(&dev, i);
		if (!rc)
			rc = name(nm, sizeof(nm), dev);
		if (!rc)
			rc = attr(&mj, CU_ATTR_CC_MAJOR, dev);
		if (!rc)
			rc = attr(&mn, CU_ATTR_CC_MINOR, dev);
		if (rc) {
			add(tag, DR_FAIL, fix, "%s", cu_err_name(rc, e, sizeof(e)));
			continue;
		}
		nm[sizeof(nm) - 1] = 0;
		unsigned sm = (unsigned)(mj * 10 + mn);
		if (dr.nr_gpus < DR_MAXGPU)
			dr.sm[dr.nr_gpus++] = sm;
		if (sm < 70)
			add(tag, DR_WARN, "device hooks need sm_70 or newer; host hooks still work", "%s, sm_%u", nm,
			    sm);
		else
			add(tag, DR_OK, NULL, "%s, sm_%u (device policies JIT for sm_%u)", nm, sm,
			    gx_pcache_jit_sm(sm));
	}
}

/* ---- would a program started now load the shim? ---- */
static int first_path(const char *path, bool explicit_path, void *arg)
{
	(void)explicit_path;
	snprintf(arg, PATH_MAX, "%s", path);
	return 1;
}

static void check_interpose(void)
{
	char fix[3 * PATH_MAX];
	snprintf(
		fix, sizeof(fix),
		"start programs with %s/bin/gpuext-run, or export LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}",
		dr.prefix, dr.lib);
	/* What the loader finds for "libcuda.so.1": LD_LIBRARY_PATH first,
	 * then the ld.so cache (a program's RUNPATH aside). */
	char llp_hit[PATH_MAX + 16] = "", cache_hit[PATH_MAX] = "";
	const char *llp = getenv("LD_LIBRARY_PATH");
	if (llp && *llp) {
		char *dup = strdup(llp), *save = NULL;
		for (char *d = dup ? strtok_r(dup, ":", &save) : NULL; d; d = strtok_r(NULL, ":", &save)) {
			char p[PATH_MAX + 16];
			snprintf(p, sizeof(p), "%s/libcuda.so.1", d);
			if (access(p, R_OK) == 0) {
				snprintf(llp_hit, sizeof(llp_hit), "%s", p);
				break;
			}
		}
		free(dup);
	}
	gx_ldcache_each("libcuda.so.1", first_path, cache_hit);
	if (llp_hit[0] && is_a_shim(llp_hit))
		add("interpose", DR_OK, NULL, "LD_LIBRARY_PATH finds %s first: programs started now load the shim%s",
		    llp_hit, is_our_shim(llp_hit) ? "" : " (another gpuext install)");
	else if (llp_hit[0])
		add("interpose", DR_WARN, fix,
		    "LD_LIBRARY_PATH finds %s before the shim: programs started now "
		    "bypass gpuext",
		    llp_hit);
	else if (cache_hit[0] && is_a_shim(cache_hit))
		add("interpose", DR_OK, NULL, "the ld.so cache resolves libcuda.so.1 to %s (installed system-wide)",
		    cache_hit);
	else if (cache_hit[0])
		add("interpose", DR_WARN, fix,
		    "a program started without gpuext-run loads %s (the ld.so cache, "
		    "ldconfig -p), not the shim",
		    cache_hit);
	else
		add("interpose", DR_WARN, fix, "a program started without gpuext-run finds no libcuda.so.1 at all");

	const char *dis = getenv("GPUEXT_DISABLE");
	if (dis && *dis && strcmp(dis, "0"))
		add("disable", DR_WARN, "unset GPUEXT_DISABLE", "GPUEXT_DISABLE=%s: the shim only forwards", dis);

	char *pre = NULL;
	size_t plen = 0;
	if (!gx_read_file("/etc/ld.so.preload", &pre, &plen, 1 << 16)) {
		for (char *s = pre; *s; s++)
			if (*s == '\n' || *s == '\t')
				*s = ' ';
		if (strstr(pre, dr.lib) || strstr(pre, "libcuda"))
			add("ld.so.preload", DR_INFO, NULL, "/etc/ld.so.preload names the driver or gpuext: %.400s",
			    pre);
		else if (strspn(pre, " ") != plen)
			add("ld.so.preload", DR_INFO, NULL,
			    "/etc/ld.so.preload loads into every process (e.g. HAMi's libvgpu.so): %.400s", pre);
		free(pre);
	}

	char audit[PATH_MAX + 32];
	snprintf(audit, sizeof(audit), "%s/gpuext-audit.so", dr.lib);
	if (access(audit, R_OK))
		add("audit", DR_WARN, "reinstall gpuext", "%s is missing: gpuext-run --audit cannot work", audit);
	else
		add("audit", DR_INFO, NULL,
		    "programs that dlopen libcuda by absolute path bypass LD_LIBRARY_PATH: "
		    "run them with gpuext-run --audit");

	const char *tl = getenv("TRITON_LIBCUDA_PATH");
	char tlr[PATH_MAX];
	if (tl && *tl && (!realpath(tl, tlr) || strcmp(tlr, dr.lib)))
		add("triton", DR_WARN, "gpuext-run sets TRITON_LIBCUDA_PATH to PREFIX/lib",
		    "TRITON_LIBCUDA_PATH=%s: Triton's launchers link that driver, not the shim", tl);
}

/* ---- the JIT and the prepared policy cache ---- */
static void check_jit(void)
{
	char err[600] = "";
	void *sym = gx_jitlib_sym(GX_JITLIB_SYM, err, sizeof(err));
	Dl_info di;
	if (sym && dladdr(sym, &di) && di.dli_fname) {
		dr.jit = true;
		char rp[PATH_MAX];
		add("jit", DR_OK, NULL, "%s loads: device policies compile here",
		    realpath(di.dli_fname, rp) ? rp : di.dli_fname);
	} else {
		add("jit", DR_INFO, "for your own device policies install libLLVM-19 and libbpf 1.x (libgxjit.so)",
		    "cache only (%s); host policies run interpreted", sym ? "?" : err);
	}
}

/* Device objects shipped in PREFIX/share/gpuext/{tools,sched}: their hashes. */
#define DR_MAXOBJ 128
static struct dr_obj {
	char name[80];
	uint64_t hash;
} objs[DR_MAXOBJ];
static int nr_objs;

static int obj_cmp(const void *a, const void *b)
{
	return strcmp(((const struct dr_obj *)a)->name, ((const struct dr_obj *)b)->name);
}

static void scan_objects(void)
{
	static const char *const dirs[] = { "tools", "sched" };
	for (size_t i = 0; i < GX_ARRAY_SIZE(dirs); i++) {
		char d[PATH_MAX + 64];
		snprintf(d, sizeof(d), "%s/share/gpuext/%s", dr.prefix, dirs[i]);
		DIR *dir = opendir(d);
		struct dirent *de;
		while (dir && (de = readdir(dir)) && nr_objs < DR_MAXOBJ) {
			size_t l = strlen(de->d_name);
			if (l < 7 || strcmp(de->d_name + l - 6, ".bpf.o"))
				continue;
			char p[2 * PATH_MAX], *buf = NULL;
			size_t len = 0;
			snprintf(p, sizeof(p), "%s/%s", d, de->d_name);
			if (gx_read_file(p, &buf, &len, 64u << 20))
				continue;
			snprintf(objs[nr_objs].name, sizeof(objs[0].name), "%s/%.*s", dirs[i], (int)(l - 6),
				 de->d_name);
			objs[nr_objs++].hash = gx_pcache_key(buf, len);
			free(buf);
		}
		if (dir)
			closedir(dir);
	}
	qsort(objs, nr_objs, sizeof(objs[0]), obj_cmp);
}

/* Cache coverage for JIT target sm: "N/M" line. */
static void cache_line(unsigned sm, const char *shipped, const char *user)
{
	int in_shipped = 0, in_user = 0, miss = 0;
	char missing[600] = "";
	for (int i = 0; i < nr_objs; i++) {
		char p[2 * PATH_MAX];
		gx_pcache_path(shipped, objs[i].hash, sm, p, sizeof(p));
		if (access(p, R_OK) == 0) {
			in_shipped++;
			continue;
		}
		if (user[0]) {
			gx_pcache_path(user, objs[i].hash, sm, p, sizeof(p));
			if (access(p, R_OK) == 0) {
				in_user++;
				continue;
			}
		}
		size_t ml = strlen(missing);
		if (ml < sizeof(missing) - 2)
			snprintf(missing + ml, sizeof(missing) - ml, "%s%.79s", miss ? ", " : "", objs[i].name);
		miss++;
	}
	char tag[32], fix[256];
	snprintf(tag, sizeof(tag), "cache-sm%u", sm);
	snprintf(fix, sizeof(fix),
		 "gpuext tools prepare --sm %u [FILE.bpf.o...] where LLVM 19 is installed, then copy "
		 "that cache folder here (GPUEXT_CACHE_DIR)",
		 sm);
	if (!miss)
		add(tag, DR_OK, NULL,
		    "%d/%d shipped device policies prepared for sm_%u (%d shipped, %d in the user cache)", nr_objs,
		    nr_objs, sm, in_shipped, in_user);
	else
		add(tag, dr.jit ? DR_INFO : DR_WARN, dr.jit ? NULL : fix,
		    "%d/%d shipped device policies prepared for sm_%u; %s: %s", nr_objs - miss, nr_objs, sm,
		    dr.jit ? "compiled at first use" : "cannot attach here", missing);
}

static void check_cache(void)
{
	char shipped[PATH_MAX + 32], user[4096] = "";
	snprintf(shipped, sizeof(shipped), "%s/share/gpuext/cache", dr.prefix);
	gx_cache_dir(user, sizeof(user));
	scan_objects();
	if (!nr_objs) {
		add("policies", DR_WARN, "reinstall gpuext", "no device policies in %s/share/gpuext/{tools,sched}",
		    dr.prefix);
		return;
	}
	unsigned sms[DR_MAXGPU];
	int ns = 0;
	for (int i = 0; i < dr.nr_gpus; i++) {
		unsigned s = gx_pcache_jit_sm(dr.sm[i]);
		bool seen = false;
		for (int j = 0; j < ns; j++)
			seen |= sms[j] == s;
		if (!seen && dr.sm[i] >= 70)
			sms[ns++] = s;
	}
	if (ns) {
		for (int i = 0; i < ns; i++)
			cache_line(sms[i], shipped, user);
		return;
	}
	/* No GPU seen: which targets the shipped cache holds. */
	char pat[64], list[256] = "";
	snprintf(pat, sizeof(pat), "-%s-j%d-sm", GX_VERSION, GX_PCACHE_JITREV);
	bool have[256] = { false };
	DIR *dir = opendir(shipped);
	struct dirent *de;
	int files = 0;
	while (dir && (de = readdir(dir))) {
		const char *s = strstr(de->d_name, pat);
		if (!s || !strstr(de->d_name, ".gxpol"))
			continue;
		unsigned sm = (unsigned)strtoul(s + strlen(pat), NULL, 10);
		files++;
		if (sm < GX_ARRAY_SIZE(have))
			have[sm] = true;
	}
	if (dir)
		closedir(dir);
	for (unsigned s = 0; s < GX_ARRAY_SIZE(have); s++)
		if (have[s]) {
			size_t l = strlen(list);
			snprintf(list + l, sizeof(list) - l, "%ssm_%u", l ? ", " : "", s);
		}
	if (files)
		add("cache", DR_INFO, NULL,
		    "no GPU seen; %s holds %d entries of this version for %s (%d device policies "
		    "shipped)",
		    shipped, files, list, nr_objs);
	else
		add("cache", dr.jit ? DR_INFO : DR_WARN, dr.jit ? NULL : "use the tarball or wheel, which carry it",
		    "no GPU seen; no prepared policy cache in %s (%d device policies shipped)", shipped, nr_objs);
}

/* ---- folders ---- */
/* follow: the cache folder may be a symlink (to a larger disk); the maps
 * folder may not (the shim refuses one). */
static void check_folder(const char *tag, const char *dir, const char *what, bool follow)
{
	struct stat st;
	char fix[PATH_MAX + 64];
	if ((follow ? stat : lstat)(dir, &st)) {
		add(tag, DR_OK, NULL, "%s %s: not created yet (made mode 0700 at first use)", what, dir);
		return;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(fix, sizeof(fix), "remove %s", dir);
		add(tag, DR_FAIL, fix, "%s %s is not a folder%s", what, dir, S_ISLNK(st.st_mode) ? " (a symlink)" : "");
		return;
	}
	struct passwd *pw = getpwuid(st.st_uid);
	char own[96];
	snprintf(own, sizeof(own), "%s", pw ? pw->pw_name : "?");
	struct statvfs vfs;
	double free_mb = statvfs(dir, &vfs) == 0 ? (double)vfs.f_bavail * vfs.f_frsize / (1 << 20) : -1;
	char free_s[48];
	if (free_mb < 0)
		snprintf(free_s, sizeof(free_s), "free space unknown");
	else if (free_mb >= 10240)
		snprintf(free_s, sizeof(free_s), "%.0f GiB free", free_mb / 1024);
	else
		snprintf(free_s, sizeof(free_s), "%.0f MiB free", free_mb);
	unsigned mode = st.st_mode & 07777;
	if (st.st_uid != geteuid()) {
		snprintf(fix, sizeof(fix), "chown %u %s (or set %s to a folder of yours)", (unsigned)geteuid(), dir,
			 !strcmp(tag, "shm-dir") ? "GPUEXT_SHM_DIR" : "GPUEXT_CACHE_DIR");
		add(tag, DR_WARN, fix, "%s %s: owned by %s (uid %u), not by you (uid %u); mode %04o, %s", what, dir,
		    own, (unsigned)st.st_uid, (unsigned)geteuid(), mode, free_s);
	} else if (mode & 022) {
		snprintf(fix, sizeof(fix), "chmod go-w %s", dir);
		add(tag, DR_WARN, fix, "%s %s: mode %04o is %s-writable: others could plant entries; owner %s, %s",
		    what, dir, mode,
		    (mode & 022) == 022 ? "group- and other"
		    : mode & 020	? "group"
					: "other",
		    own, free_s);
	} else if (free_mb >= 0 && free_mb < 100) {
		add(tag, DR_WARN, "free some space", "%s %s: owner %s, mode %04o, only %s", what, dir, own, mode,
		    free_s);
	} else {
		add(tag, DR_OK, NULL, "%s %s: owner %s, mode %04o, %s", what, dir, own, mode, free_s);
	}
}

static void check_folders(void)
{
	char d[4096];
	if (gx_cache_dir(d, sizeof(d)))
		add("cache-dir", DR_WARN, "set GPUEXT_CACHE_DIR or HOME",
		    "no cache folder: neither GPUEXT_CACHE_DIR, "
		    "XDG_CACHE_HOME nor HOME is set; nothing is cached");
	else
		check_folder("cache-dir", d, "cache", true);
	if (gx_map_shm_dir(d, sizeof(d)) == 0)
		check_folder("shm-dir", d, "maps", false);
	if (access("/dev/gpuext", F_OK) == 0)
		add("kmod", DR_OK, NULL, "/dev/gpuext: gpuext.ko is loaded; host policies can run in the kernel");
	else
		add("kmod", DR_INFO, NULL, "no /dev/gpuext: host policies run in the shim");
}

/* ---- Python stacks: one python3, 20 s at most ---- */
static const char py_script[] =
	"import sys\n"
	"print('python', sys.version.split()[0])\n"
	"try:\n"
	"    import importlib.metadata as m\n"
	"except ImportError:\n"
	"    sys.exit(0)\n"
	"seen = set()\n"
	"for d in m.distributions():\n"
	"    n = (d.metadata['Name'] or '').lower()\n"
	"    if (n in ('torch', 'triton', 'jax', 'jaxlib') or n.startswith('cupy')) and n not in seen:\n"
	"        seen.add(n)\n"
	"        print(n, d.version)\n";

static void check_python(void)
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC))
		return;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	char *argv[] = { "python3", "-c", (char *)py_script, NULL };
	pid_t pid;
	int rc = posix_spawnp(&pid, "python3", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(fds[1]);
	if (rc) { /* no python3: no line */
		close(fds[0]);
		return;
	}
	char out[4096];
	size_t len = 0;
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	bool timed_out = false;
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		long left = 20000 - ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0) {
			timed_out = true;
			break;
		}
		struct pollfd p = { fds[0], POLLIN, 0 };
		int r = poll(&p, 1, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			timed_out = r == 0;
			break;
		}
		ssize_t k = read(fds[0], out + len, sizeof(out) - 1 - len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		len += k;
		if (len >= sizeof(out) - 1)
			break;
	}
	close(fds[0]);
	if (timed_out)
		kill(pid, SIGKILL);
	int ws = 0;
	while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
		;
	out[len] = 0;
	if (timed_out) {
		add("python", DR_WARN, "check python3 (it did not answer in 20 s)", "python3 timed out");
		return;
	}
	if (!WIFEXITED(ws) || WEXITSTATUS(ws) == 127 || strncmp(out, "python ", 7))
		return; /* not a usable python3: no line */
	/* "python 3.11.2\ntorch 2.5.1\n..." → "python 3.11.2; torch 2.5.1; ..." */
	char line[1024] = "", *save = NULL;
	int n = 0;
	for (char *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save), n++) {
		size_t k = strlen(line);
		snprintf(line + k, sizeof(line) - k, "%s%s", n ? "; " : "", l);
	}
	add("python", DR_INFO, NULL, "%s%s", line, n > 1 ? "" : "; none of torch, triton, cupy, jax");
}

/* ---- the environment that changes gpuext's behaviour ---- */
static void check_env(void)
{
	static const char *const names[] = {
		"LD_LIBRARY_PATH",
		"LD_PRELOAD",
		"LD_AUDIT",
		"TRITON_LIBCUDA_PATH",
		"CUDA_VISIBLE_DEVICES",
		"TRITON_PTXAS_PATH",
		"XLA_FLAGS",
		"CUPY_COMPILE_WITH_PTX",
		"TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER",
	};
	int n = 0;
	for (char **e = environ; *e; e++)
		if (!strncmp(*e, "GPUEXT_", 7)) {
			add("env", DR_INFO, NULL, "%s", *e);
			n++;
		}
	for (size_t i = 0; i < GX_ARRAY_SIZE(names); i++) {
		const char *v = getenv(names[i]);
		if (v) {
			add("env", DR_INFO, NULL, "%s=%s", names[i], v);
			n++;
		}
	}
	if (!n)
		add("env", DR_INFO, NULL, "none of gpuext's variables is set");
}

/* ---- output ---- */
static int print_all(void)
{
	int cnt[4] = { 0 };
	for (int i = 0; i < nr_checks; i++)
		cnt[checks[i].st]++;
	if (gx_json) {
		printf("{\"version\":\"%s\",\"prefix\":", GX_VERSION);
		gx_json_str(stdout, dr.prefix);
		printf(",\"checks\":[");
		for (int i = 0; i < nr_checks; i++) {
			printf("%s{\"name\":", i ? "," : "");
			gx_json_str(stdout, checks[i].name);
			printf(",\"status\":\"%s\",\"detail\":", dr_names[checks[i].st]);
			gx_json_str(stdout, checks[i].detail);
			printf(",\"fix\":");
			if (checks[i].fix[0])
				gx_json_str(stdout, checks[i].fix);
			else
				printf("null");
			printf("}");
		}
		printf("],\"ok\":%d,\"info\":%d,\"warn\":%d,\"fail\":%d}\n", cnt[DR_OK], cnt[DR_INFO], cnt[DR_WARN],
		       cnt[DR_FAIL]);
	} else {
		for (int i = 0; i < nr_checks; i++) {
			printf("%-4s  %-14s %s\n", dr_names[checks[i].st], checks[i].name, checks[i].detail);
			if (checks[i].fix[0])
				printf("      %-14s fix: %s\n", "", checks[i].fix);
		}
		printf("%d ok, %d info, %d warn, %d fail\n", cnt[DR_OK], cnt[DR_INFO], cnt[DR_WARN], cnt[DR_FAIL]);
	}
	return cnt[DR_FAIL] ? 1 : 0;
}

int do_doctor(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json") || !strcmp(argv[i], "-j")) {
			gx_json = true;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help") || !strcmp(argv[i], "help")) {
			printf("usage: gpuext doctor [--json]\n\n"
			       "Check this machine for gpuext: the install, NVIDIA's driver and GPUs, whether programs\n"
			       "load the shim, the JIT and policy cache, folders, the kernel module, Python stacks,\n"
			       "the environment. One line each: ok, info, warn or fail (with the fix). Exit 1 on a fail.\n");
			return 0;
		} else {
			p_err("unknown argument '%s' (usage: gpuext doctor [--json])", argv[i]);
			return 2;
		}
	}
	check_install();
	check_driver();
	check_gpus();
	if (dr.prefix[0])
		check_interpose();
	check_jit();
	if (dr.prefix[0])
		check_cache();
	check_folders();
	check_python();
	check_env();
	return print_all();
}
