/* `gpuext cache` — the module cache (docs/cache.md).
 *
 *   gpuext cache prepare [--cache-dir D] [--shared] [--from S] [--] [PROGRAM [ARGS...]]
 *
 * Fills D (default: the user's cache folder) with the rewritten modules and
 * their compiled cubins: by running PROGRAM once with GPUEXT_CACHE_DIR=D
 * (PROGRAM is the run to prepare for, under the shim: `gpuext-run --tool
 * threadhist python train.py`; the tool is part of every key), and/or by
 * copying the entries of a previous run's cache folder S. With --shared D is
 * made the read-only cache of an install (<prefix>/share/gpuext/cache):
 * folders 0755, entries 0644, whatever the umask; the shim of every user
 * reads it after their own cache when it is owned by root or by that user
 * and writable by nobody else (docs/trust.md). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli_internal.h"
#include "common/gx_util.h"

static bool is_entry(const char *name)
{
	size_t l = strlen(name);
	return (l > 6 && !strcmp(name + l - 6, ".gxmod")) || (l > 8 && !strcmp(name + l - 8, ".gxcubin"));
}

/* Copy S/modules/ entries into D/modules/ (temporary name + rename). */
static int copy_from(const char *src, const char *dst, mode_t fmode, unsigned *nr)
{
	char sd[4200];
	snprintf(sd, sizeof(sd), "%.4000s/modules", src);
	DIR *d = opendir(sd);
	if (!d)
		return -errno;
	int ret = 0;
	for (struct dirent *de; (de = readdir(d)) && !ret;) {
		char from[4600], to[4600], *buf = NULL;
		size_t len = 0;
		if (!is_entry(de->d_name))
			continue;
		snprintf(from, sizeof(from), "%s/%s", sd, de->d_name);
		snprintf(to, sizeof(to), "%.4000s/modules/%s", dst, de->d_name);
		if ((ret = gx_read_file(from, &buf, &len, 0)) < 0)
			break;
		ret = gx_write_file_mode(to, buf, len, fmode); /* temporary name, then rename */
		free(buf);
		*nr += !ret;
	}
	closedir(d);
	return ret;
}

/* --shared: what a run stored 0700/0600 becomes 0755/0644. */
static void share_modes(const char *dir)
{
	char md[4200];
	snprintf(md, sizeof(md), "%s/modules", dir);
	chmod(dir, 0755);
	chmod(md, 0755);
	DIR *d = opendir(md);
	for (struct dirent *de; d && (de = readdir(d));)
		if (is_entry(de->d_name))
			fchmodat(dirfd(d), de->d_name, 0644, 0);
	if (d)
		closedir(d);
}

static unsigned count(const char *dir)
{
	char md[4200];
	unsigned n = 0;
	snprintf(md, sizeof(md), "%s/modules", dir);
	DIR *d = opendir(md);
	for (struct dirent *de; d && (de = readdir(d));)
		n += is_entry(de->d_name);
	if (d)
		closedir(d);
	return n;
}

static int do_prepare(int argc, char **argv)
{
	argc--, argv++; /* "prepare" */
	const char *dir = NULL, *from = NULL;
	bool shared = false;
	int i = 0;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--cache-dir") && i + 1 < argc) {
			dir = argv[++i];
		} else if (!strcmp(argv[i], "--from") && i + 1 < argc) {
			from = argv[++i];
		} else if (!strcmp(argv[i], "--shared")) {
			shared = true;
		} else if (!strcmp(argv[i], "--")) {
			i++;
			break;
		} else {
			p_err("unknown argument '%s' (usage: gpuext cache prepare [--cache-dir D] [--shared] [--from S] "
			      "[--] [PROGRAM [ARGS...]])",
			      argv[i]);
			return 2;
		}
	}
	char def[4096];
	if (!dir) {
		if (shared || gx_cache_dir(def, sizeof(def)) < 0) {
			p_err("%s", shared ? "--shared needs --cache-dir" : "no cache folder: give --cache-dir");
			return 2;
		}
		dir = def;
	}
	if (!from && i >= argc) {
		p_err("nothing to prepare from: give a PROGRAM to run or --from a previous run's cache folder");
		return 2;
	}
	char md[4200];
	snprintf(md, sizeof(md), "%s/modules", dir);
	int r = gx_mkdir_p(md, shared ? 0755 : 0700);
	if (r < 0) {
		p_err("cannot make %s: %s", md, strerror(-r));
		return 1;
	}
	unsigned copied = 0;
	if (from && (r = copy_from(from, dir, shared ? 0644 : 0600, &copied)) < 0) {
		p_err("cannot copy the entries of %s: %s", from, strerror(-r));
		return 1;
	}
	int status = 0;
	if (i < argc) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid < 0) {
			p_err("fork: %s", strerror(errno));
			return 1;
		}
		if (!pid) {
			setenv("GPUEXT_CACHE_DIR", dir, 1);
			unsetenv("GPUEXT_CACHE");
			execvp(argv[i], argv + i);
			fprintf(stderr, "gpuext cache prepare: %s: %s\n", argv[i], strerror(errno));
			_exit(127);
		}
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
	}
	if (shared)
		share_modes(dir);
	unsigned n = count(dir);
	printf("%s: %u entries%s", dir, n, shared ? ", shared (0755/0644)" : "");
	if (from)
		printf(", %u copied from %s", copied, from);
	printf("\n");
	if (i < argc && !(WIFEXITED(status) && !WEXITSTATUS(status))) {
		p_err("%s exited with %s %d: the cache may miss modules it would load later", argv[i],
		      WIFEXITED(status) ? "status" : "signal",
		      WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
		return 1;
	}
	return 0;
}

int do_cache(int argc, char **argv)
{
	static const struct gx_cmd cmds[] = {
		{ "prepare", do_prepare, "fill a module cache (rewritten PTX and cubins) from a run or another cache" },
		{ 0 },
	};
	return gx_cmd_dispatch("cache", cmds, argc - 1, argv + 1);
}
