/* run_tool.c — `gpuext-run --tool NAME`: run the command with the tool
 * attached, then print the tool's report.
 *
 * Why fork instead of exec: the report is made after the application exits,
 * from what its shim left behind (maps and the tool log). The run gets a
 * fresh folder (GPUEXT_SHM_DIR=/dev/shm/gpuext-$UID/run-XXXXXX) so the report
 * reads exactly this run's processes (children included), and the folder is
 * removed afterwards unless GPUEXT_KEEP=1. The formatter is `gpuext tools
 * report` next to this program, so gpuext-run stays small. Several tools
 * (GPUEXT_TOOL=a,b): one report each, in that order (--json: one JSON
 * document per line). Exit status: the application's. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/run_internal.h"

static void rm_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	char p[PATH_MAX + 300];
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
			unlink(p);
		}
	closedir(d);
	rmdir(dir);
}

/* Signals meant for the run reach the application: `timeout`, `kill` or a
 * service manager sends them to this process, which only waits; without
 * this the application ran on, orphaned, still holding its GPU (GPU run 97:
 * a memtrace run killed by `timeout` kept the GPU busy into the next
 * measurements). Ctrl-C and Ctrl-\ reach it from the terminal already. */
static volatile pid_t app_pid;
static void forward(int sig)
{
	if (app_pid > 0)
		kill(app_pid, sig);
}

static int wait_child(pid_t pid)
{
	int st = 0;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return 127;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int gx_run_tool(const char *tool, char **cmd, int json, const char *trace)
{
	char base[PATH_MAX], dir[PATH_MAX + 32];
	const char *shm = getenv("GPUEXT_SHM_DIR");
	if (shm && *shm)
		snprintf(base, sizeof(base), "%s", shm);
	else
		snprintf(base, sizeof(base), "/dev/shm/gpuext-%u", (unsigned)getuid());
	mkdir(base, 0700);
	snprintf(dir, sizeof(dir), "%s/run-XXXXXX", base);
	if (!mkdtemp(dir)) {
		fprintf(stderr, "gpuext: error: --tool: cannot create a run folder in %s: %s\n", base, strerror(errno));
		return 2;
	}
	setenv("GPUEXT_SHM_DIR", dir, 1);
	setenv("GPUEXT_TOOL", tool, 1);
	fflush(NULL);
	/* held from before the fork until the handlers know the child: a
	 * signal sent meanwhile is forwarded, not lost with this process */
	const int fwd[] = { SIGTERM, SIGHUP, SIGUSR1, SIGUSR2 };
	sigset_t held, old;
	sigemptyset(&held);
	for (size_t i = 0; i < sizeof(fwd) / sizeof(fwd[0]); i++)
		sigaddset(&held, fwd[i]);
	sigprocmask(SIG_BLOCK, &held, &old);
	pid_t pid = fork();
	if (pid < 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		fprintf(stderr, "gpuext: error: --tool: fork: %s\n", strerror(errno));
		rm_dir(dir);
		return 2;
	}
	if (pid == 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		execvp(cmd[0], cmd);
		int e = errno;
		fprintf(stderr, "gpuext: error: cannot run '%s': %s\n", cmd[0], strerror(e));
		_exit(e == ENOENT ? 127 : 126);
	}
	/* Ctrl-C goes to the application; we stay to print the report. */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	app_pid = pid;
	struct sigaction sa = { .sa_handler = forward, .sa_flags = SA_RESTART };
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(fwd) / sizeof(fwd[0]); i++)
		sigaction(fwd[i], &sa, NULL);
	sigprocmask(SIG_SETMASK, &old, NULL);
	int rc = wait_child(pid);
	unsetenv("GPUEXT_TOOL");
	unsetenv("LD_LIBRARY_PATH");
	char exe[PATH_MAX], gpuext[PATH_MAX + 16];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = 0;
	char *slash = strrchr(exe, '/');
	if (slash)
		*slash = 0;
	snprintf(gpuext, sizeof(gpuext), "%s/gpuext", slash ? exe : ".");
	/* One report per tool, in the order given; with several tools each
	 * trace goes to FILE with "-TOOL" before its ".json". */
	char *list = strdup(tool), *save = NULL;
	int several = strchr(tool, ',') != NULL;
	for (char *t = list ? strtok_r(list, ",", &save) : NULL; t; t = strtok_r(NULL, ",", &save)) {
		char tr[PATH_MAX + 80];
		if (trace && several) {
			size_t tl = strlen(trace);
			int js = tl > 5 && !strcmp(trace + tl - 5, ".json");
			snprintf(tr, sizeof(tr), "%.*s-%s%s", (int)(js ? tl - 5 : tl), trace, t, js ? ".json" : "");
		} else if (trace) {
			snprintf(tr, sizeof(tr), "%s", trace);
		}
		char *argv[10];
		int a = 0;
		argv[a++] = gpuext;
		if (json)
			argv[a++] = "--json";
		argv[a++] = "tools";
		argv[a++] = "report";
		argv[a++] = t;
		argv[a++] = "--dir";
		argv[a++] = dir;
		if (trace) {
			argv[a++] = "--trace";
			argv[a++] = tr;
		}
		argv[a] = NULL;
		if (several && !json && t != list)
			printf("\n");
		fflush(NULL);
		pid_t f = fork();
		if (f == 0) {
			execv(gpuext, argv);
			fprintf(stderr, "gpuext: error: cannot run %s for the report: %s\n", gpuext, strerror(errno));
			_exit(127);
		}
		int r = f > 0 ? wait_child(f) : 127;
		if (r)
			fprintf(stderr, "gpuext: the %s report failed (status %d)\n", t, r);
	}
	free(list);
	const char *keep = getenv("GPUEXT_KEEP");
	if (keep && *keep && strcmp(keep, "0"))
		fprintf(stderr, "gpuext: tool data kept in %s\n", dir);
	else
		rm_dir(dir);
	return rc;
}
