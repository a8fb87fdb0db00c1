/* cubin_ptxas.c — a rewritten module compiled whole by ptxas.
 *
 * Why not the driver's linker (cuLinkAddData, cubin.c's GPUEXT_CUBIN=link):
 * it compiles PTX as relocatable code, and relocatable code addresses its
 * shared-memory arrays through relocations instead of folding their offsets
 * into the instructions. tool_bench's shared-memory GEMM ran 29 % slower
 * through it and its row softmax 5 %, with no hook at all (GPU run 107, H100:
 * ptxas -c made the GEMM 160 instructions against 128). A PTX load (the
 * driver's JIT of the whole module) and ptxas without -c make the same code
 * as nvcc. ptxas is the compiler the toolkit, Triton (TRITON_PTXAS_PATH) and
 * NVIDIA's pip wheels ship; where none is found the module loads as PTX.
 *
 * The PTX goes to a private temporary folder, ptxas runs as a child
 * (posix_spawn: safe in a threaded process), its stderr comes back through a
 * pipe whose end tells when it finished (an application ignoring SIGCHLD
 * leaves no status to wait for), bounded at GX_PTXAS_TIMEOUT_S. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/gx_log.h"
#include "common/gx_util.h"
#include "shim/load_internal.h"

extern char **environ;

#define GX_PTXAS_TIMEOUT_S 300

/* Not gpuext's own ptxas (gpuext-ptxas, share/gpuext/cuda/bin/ptxas): it
 * would put hooks into PTX that has them. */
static bool usable(const char *path)
{
	char rp[PATH_MAX];
	if (!path || !*path || access(path, X_OK) || !realpath(path, rp))
		return false;
	const char *base = strrchr(rp, '/');
	return strcmp(base ? base + 1 : rp, "gpuext-ptxas") && !strstr(rp, "/share/gpuext/");
}

/* The first usable of the candidates (an explicit GPUEXT_CUBIN_PTXAS that
 * is not usable is said, not replaced by another one) into buf, "" if none;
 * one line says which. */
static void find_ptxas(char *buf, size_t n)
{
	const char *home = getenv("CUDA_HOME"), *cpath = getenv("CUDA_PATH");
	const char *cand[] = { getenv("GPUEXT_CUBIN_PTXAS"), getenv("TRITON_PTXAS_PATH"), NULL, NULL,
			       "/usr/local/cuda/bin/ptxas" };
	char h[PATH_MAX], c[PATH_MAX];
	if (home && *home)
		snprintf(h, sizeof(h), "%s/bin/ptxas", home), cand[2] = h;
	if (cpath && *cpath)
		snprintf(c, sizeof(c), "%s/bin/ptxas", cpath), cand[3] = c;
	buf[0] = 0;
	const char *want = cand[0];
	if (want && *want && !usable(want)) {
		pr_warn("GPUEXT_CUBIN_PTXAS=%s: not an executable ptxas; rewritten modules load as PTX", want);
		return;
	}
	for (size_t i = 0; i < sizeof(cand) / sizeof(cand[0]) && !buf[0]; i++)
		if (usable(cand[i]))
			snprintf(buf, n, "%s", cand[i]);
	if (buf[0])
		pr_info("cubins: rewritten modules compiled whole by %s", buf);
	else
		pr_info("cubins: no ptxas (GPUEXT_CUBIN_PTXAS, TRITON_PTXAS_PATH, $CUDA_HOME/bin, "
			"/usr/local/cuda/bin): rewritten modules load as PTX (the driver's JIT, cached by the "
			"driver); GPUEXT_CUBIN=link compiles them with the driver's linker (relocatable code)");
}

const char *gx_cubin_ptxas(void)
{
	static char found[PATH_MAX];
	static int done;
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	if (!__atomic_load_n(&done, __ATOMIC_ACQUIRE)) {
		/* once, under the lock: racing first loads say it once */
		pthread_mutex_lock(&mu);
		if (!done) {
			find_ptxas(found, sizeof(found));
			__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
		}
		pthread_mutex_unlock(&mu);
	}
	return found[0] ? found : NULL;
}

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Read the child's stderr until it closes (it exited) or the deadline. */
static bool drain_stderr(int fd, char *err, size_t errn, double deadline)
{
	size_t n = 0;
	for (;;) {
		double left = deadline - mono_s();
		if (left <= 0)
			return false;
		struct pollfd pf = { fd, POLLIN, 0 };
		int r = poll(&pf, 1, (int)(left * 1000) + 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		char tmp[512];
		ssize_t k = read(fd, tmp, sizeof(tmp));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return true;
		for (ssize_t i = 0; i < k && n + 1 < errn; i++)
			err[n++] = tmp[i] == '\n' ? ' ' : tmp[i];
		err[n] = 0;
	}
}

int gx_cubin_ptxas_compile(const char *ptxas, const char *ptx, size_t len, const char *arch, void **cubin, size_t *clen,
			   char *err, size_t errn)
{
	err[0] = 0;
	const char *td = getenv("TMPDIR");
	char dir[PATH_MAX], in[PATH_MAX + 16], out[PATH_MAX + 16], archopt[64];
	snprintf(dir, sizeof(dir), "%s/gpuext-ptxas.XXXXXX", td && *td ? td : "/tmp");
	if (!mkdtemp(dir)) {
		snprintf(err, errn, "no temporary folder: %s", strerror(errno));
		return -errno;
	}
	snprintf(in, sizeof(in), "%s/m.ptx", dir);
	snprintf(out, sizeof(out), "%s/m.cubin", dir);
	snprintf(archopt, sizeof(archopt), "-arch=%s", arch);
	int ret = -EIO;
	if (gx_write_file_mode(in, ptx, len, 0600)) {
		snprintf(err, errn, "cannot write the PTX: %s", strerror(errno));
		goto out;
	}
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC)) {
		snprintf(err, errn, "pipe: %s", strerror(errno));
		goto out;
	}
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 2);
	/* none of the application's descriptors: a pipe it waits to see
	 * closed must not stay open in our compiler */
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	/* the application's signal dispositions stay its own */
	posix_spawnattr_t sa;
	posix_spawnattr_init(&sa);
	sigset_t none, def;
	sigemptyset(&none);
	sigemptyset(&def);
	sigaddset(&def, SIGPIPE);
	sigaddset(&def, SIGCHLD);
	posix_spawnattr_setsigmask(&sa, &none);
	posix_spawnattr_setsigdefault(&sa, &def);
	posix_spawnattr_setflags(&sa, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	char *argv[] = { (char *)ptxas, archopt, (char *)"-o", out, in, NULL };
	pid_t pid;
	int se = posix_spawn(&pid, ptxas, &fa, &sa, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&sa);
	close(pfd[1]);
	if (se) {
		close(pfd[0]);
		snprintf(err, errn, "cannot run %s: %s", ptxas, strerror(se));
		goto out;
	}
	bool done = drain_stderr(pfd[0], err, errn, mono_s() + GX_PTXAS_TIMEOUT_S);
	close(pfd[0]);
	if (!done) {
		kill(pid, SIGKILL);
		snprintf(err, errn, "%s ran over %d s", ptxas, GX_PTXAS_TIMEOUT_S);
	}
	int st = 0;
	pid_t w;
	while ((w = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
		;
	/* ECHILD: the application ignores SIGCHLD, the child was reaped for
	 * us; its output file is then what tells */
	if (!done || (w == pid && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))) {
		if (done && !err[0])
			snprintf(err, errn, "%s exited with status %d", ptxas, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		goto out;
	}
	char *buf = NULL;
	size_t n = 0;
	if (gx_read_file(out, &buf, &n, 1ull << 31) || n < 4 || memcmp(buf, "\177ELF", 4)) {
		free(buf);
		if (!err[0])
			snprintf(err, errn, "%s wrote no cubin", ptxas);
		goto out;
	}
	*cubin = buf, *clen = n;
	ret = 0;
out:
	unlink(in);
	unlink(out);
	rmdir(dir);
	return ret;
}
