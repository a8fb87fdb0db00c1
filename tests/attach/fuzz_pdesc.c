/* libFuzzer target for the policy cache's entries (attach/pcache.c, read from
 * a folder any process of the user may write) and for what is done with one
 * that parses: a relocation beside other policies (attach/pmerge.c) and a
 * knob setting. Any bytes give a description or a one-line error, never a
 * crash or a leak; a description serialises to text that parses back to the
 * same text; a relocation succeeds or says why. Build: make; run:
 * tests/attach/test_pdesc_fuzz.sh. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attach/gx_attach.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gx_policy_desc d;
	char err[256];
	memset(&d, 0, sizeof(d));
	if (gx_pdesc_parse((const char *)data, size, &d, err, sizeof(err))) {
		if (!err[0] || !memchr(err, 0, sizeof(err)))
			abort(); /* a refusal always says why */
		gx_pdesc_free(&d);
		return 0;
	}
	size_t n1 = 0, n2 = 0;
	char *t1 = gx_pdesc_serialize(&d, &n1);
	if (t1) {
		struct gx_policy_desc e;
		memset(&e, 0, sizeof(e));
		if (gx_pdesc_parse(t1, n1, &e, err, sizeof(err)))
			abort(); /* our own text must parse */
		char *t2 = gx_pdesc_serialize(&e, &n2);
		if (!t2 || n1 != n2 || memcmp(t1, t2, n1))
			abort(); /* and give the same text again */
		free(t2);
		gx_pdesc_free(&e);
		free(t1);
	}
	gx_pdesc_set_knobs(&d, "a=1,b=-2,c=0x10", err, sizeof(err));
	if (d.ptx && gx_pdesc_relocate(&d, 1 + (unsigned)(size % 4), err, sizeof(err)) == 0 && d.ptx_len != strlen(d.ptx))
		abort(); /* the relocated text is NUL-terminated, its length right */
	gx_pdesc_free(&d);
	return 0;
}
