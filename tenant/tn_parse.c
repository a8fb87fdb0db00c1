/* tn_parse.c — sizes for --mem-limit, GPUEXT_TENANT_MEM_LIMIT and `gpuext
 * tenant set NAME mem-limit` (its own object: gpuext-run links only this). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/gx_util.h"
#include "tenant/gx_tenant.h"

int gx_tn_parse_size(const char *s, uint64_t *out)
{
	if (!s || !*s || !out)
		return gx_err(-EINVAL);
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || !(v >= 0) || *s == '-')
		return gx_err(-EINVAL);
	double mul = 1;
	switch (*end) {
	case 'k':
	case 'K':
		mul = 1024.0;
		end++;
		break;
	case 'm':
	case 'M':
		mul = 1048576.0;
		end++;
		break;
	case 'g':
	case 'G':
		mul = 1073741824.0;
		end++;
		break;
	case 't':
	case 'T':
		mul = 1099511627776.0;
		end++;
		break;
	default:
		break;
	}
	if (mul > 1 && (!strcasecmp(end, "ib") || !strcasecmp(end, "b")))
		end += strlen(end);
	else if (mul == 1 && !strcasecmp(end, "b"))
		end++;
	if (*end || v * mul >= 18446744073709551615.0)
		return gx_err(-EINVAL);
	*out = (uint64_t)(v * mul + 0.5);
	return 0;
}
