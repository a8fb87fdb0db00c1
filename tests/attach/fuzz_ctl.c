/* libFuzzer target for the control messages of gpuext attach (common/gx_ctl.c:
 * the shim parses what any process of the user may write into the control
 * folder). Any bytes give a message or a one-line error, never a crash; a
 * message formats to text that parses back to the same text. Build: make;
 * run: tests/attach/test_ctl_fuzz.sh. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/gx_ctl.h"

static struct gx_ctl_msg m, e;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256], t1[GX_CTL_MAX_BYTES * 2], t2[GX_CTL_MAX_BYTES * 2];
	err[0] = 0;
	if (gx_ctl_parse((const char *)data, size, &m, err, sizeof(err))) {
		if (!err[0] || !memchr(err, 0, sizeof(err)))
			abort(); /* a refusal always says why */
		return 0;
	}
	int n1 = gx_ctl_format(&m, t1, sizeof(t1));
	if (n1 < 0)
		abort(); /* what parsed formats */
	if (gx_ctl_parse(t1, (size_t)n1, &e, err, sizeof(err)))
		abort(); /* our own text parses */
	int n2 = gx_ctl_format(&e, t2, sizeof(t2));
	if (n2 != n1 || memcmp(t1, t2, (size_t)n1))
		abort(); /* and gives the same text again */
	return 0;
}
