/* tn_parse.c — sizes for --mem-limit, GPUEXT_TENANT_MEM_LIMIT and `gpuext
 * tenant set NAME mem-limit` (its own object: gpuext-run links only this). */
#include <errno.h>
#include <stdio.h>
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

int gx_tn_parse_mem_limits(const char *s, uint64_t *dflt, uint64_t *per, int nper)
{
	char buf[256];
	if (!s || !*s || !dflt || strlen(s) >= sizeof(buf))
		return gx_err(-EINVAL);
	snprintf(buf, sizeof(buf), "%s", s);
	*dflt = 0;
	for (int i = 0; i < nper; i++)
		per[i] = 0;
	char *save = NULL;
	for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(item, '=');
		uint64_t v;
		if (!eq) {
			if (gx_tn_parse_size(item, &v))
				return gx_err(-EINVAL);
			*dflt = v;
			continue;
		}
		*eq = 0;
		char *end;
		errno = 0;
		long ord = strtol(item, &end, 10);
		if (errno || end == item || *end || ord < 0 || ord >= nper || gx_tn_parse_size(eq + 1, &v))
			return gx_err(-EINVAL);
		per[ord] = v;
	}
	return 0;
}
