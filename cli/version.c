/* `gpuext version` — also keeps the gx_cmds section non-empty. */
#include <stdio.h>

#include "cli/gx_cli.h"

static int do_version(int argc, char **argv)
{
	(void)argc, (void)argv;
	if (gx_json)
		printf("{\"version\":\"%s\"}\n", "0.1.0");
	else
		printf("gpuext 0.1.0\n");
	return 0;
}
GX_CMD(version, do_version, "print the version");
