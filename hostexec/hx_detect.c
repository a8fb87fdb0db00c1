/* hx_detect.c — is an object a host (struct_ops) policy? A cheap test on
 * the bytes, for callers that must tell host from device policies without
 * loading anything (the shim sorting GPUEXT_POLICY, gpuext-run, gpuext-ptxas):
 * a struct_ops object names its sections "struct_ops/...". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/gx_util.h"
#include "hostexec/gx_hostexec.h"

GX_EXPORT bool gx_hx_is_struct_ops(const char *path)
{
	char *buf = NULL;
	size_t len = 0;
	if (gx_read_file(path, &buf, &len, 64u << 20))
		return false;
	bool yes = len > 4 && !memcmp(buf, "\177ELF", 4) && memmem(buf, len, "struct_ops/", 11);
	free(buf);
	return yes;
}
