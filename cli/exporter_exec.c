/* exporter_exec.c — `gpuext exporter ...`: runs gpuext-exporter from this
 * install's bin/ (a program of its own: it needs libmicrohttpd, which the
 * gpuext binary may not, scripts/dist-check.sh). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli_internal.h"

int do_exporter(int argc, char **argv)
{
	(void)argc;
	char prefix[PATH_MAX], path[PATH_MAX + 32];
	if (gx_cli_prefix(prefix, sizeof(prefix))) {
		p_err("cannot find this gpuext's PREFIX (/proc/self/exe): %s", strerror(errno));
		return 1;
	}
	snprintf(path, sizeof(path), "%s/bin/gpuext-exporter", prefix);
	argv[0] = path; /* argv[0] is "exporter": the rest are its arguments */
	execv(path, argv);
	p_err("cannot run %s: %s (it needs libmicrohttpd.so.12: apt-get install libmicrohttpd12, docs/install.md)",
	      path, strerror(errno));
	return 1;
}
