/* Identity rewrite: placeholder until the parser/IR/passes land. It copies the
 * module unchanged so the shim's whole load path can be exercised today. */
#include <stdlib.h>
#include <string.h>

#include "gx_util.h"
#include "ptx-rewrite/gx_ptx.h"

GX_EXPORT int gx_ptx_rewrite(const char *ptx, size_t len, const struct gx_ptx_rewrite_opts *opts,
			     struct gx_ptx_rewrite_result *res)
{
	if (!ptx || !res || (opts && opts->sz < sizeof(size_t)))
		return gx_err(-EINVAL);
	memset(res, 0, sizeof(*res));
	res->ptx = malloc(len + 1);
	if (!res->ptx)
		return gx_err(-ENOMEM);
	memcpy(res->ptx, ptx, len);
	res->ptx[len] = 0;
	res->len = strnlen(res->ptx, len);
	return 0;
}

GX_EXPORT void gx_ptx_rewrite_result_free(struct gx_ptx_rewrite_result *res)
{
	if (!res)
		return;
	free(res->ptx);
	free(res->log);
	res->ptx = res->log = NULL;
}
