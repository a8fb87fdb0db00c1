/* test_bs_parse — gx_bs_parse_log (blocksched/bs_parse.c) on golden notes:
 * a claiming copy, a static-only one, both copies of a kernel in either
 * order (the static one becomes scopy), several kernels, the in-place
 * transform's line (no copy: no record), refusals, malformed and overlong
 * lines, and names with the characters C++ mangling uses. */
#include <stdlib.h>
#include <string.h>

#include "blocksched/gx_blocksched.h"
#include "tests/gx_test.h"

#define LINE(k, c, np, ub, tail)                                                                     \
	"persistent: " k ": copy " c " transformed (work descriptor: parameter " #np " __gx_work, loop " \
	"barrier 1, unit barrier " ub tail ")\n"

static int same(const char *a, const char *b)
{
	return a && b ? !strcmp(a, b) : a == b;
}

int main(void)
{
	struct gx_bs_kernel *k;
	size_t n;

	GX_CHECK(gx_bs_parse_log(LINE("vadd", "__gx_pw_vadd", 5, "no", ""), &k, &n) == 0 && n == 1 &&
			 same(k[0].name, "vadd") && same(k[0].copy, "__gx_pw_vadd") && k[0].nparams == 5 &&
			 !k[0].unit_bar && !k[0].static_only && !k[0].scopy,
		 "a claiming copy: one record, no static copy");
	gx_bs_kernels_free(k, n);

	GX_CHECK(gx_bs_parse_log(LINE("r", "__gx_pw_r", 4, "yes", ", static only"), &k, &n) == 0 && n == 1 &&
			 k[0].static_only && k[0].unit_bar && !k[0].scopy,
		 "a static-only copy (a static policy): static_only, no scopy");
	gx_bs_kernels_free(k, n);

	const char *both = LINE("vadd", "__gx_pw_vadd", 5, "no", "") "hooks: 2 sites\n"
		LINE("vadd", "__gx_ps_vadd", 5, "no", ", static only") LINE("gemm", "__gx_pw_gemm", 6, "yes", "")
		LINE("gemm", "__gx_ps_gemm", 6, "yes", ", static only");
	GX_CHECK(gx_bs_parse_log(both, &k, &n) == 0 && n == 2 && same(k[0].copy, "__gx_pw_vadd") &&
			 same(k[0].scopy, "__gx_ps_vadd") && !k[0].static_only && same(k[1].name, "gemm") &&
			 same(k[1].copy, "__gx_pw_gemm") && same(k[1].scopy, "__gx_ps_gemm") && k[1].unit_bar,
		 "both copies of two kernels (other notes between): two records, each with its scopy");
	gx_bs_kernels_free(k, n);

	const char *rev = LINE("vadd", "__gx_ps_vadd", 5, "no", ", static only") LINE("vadd", "__gx_pw_vadd", 5, "no", "");
	GX_CHECK(gx_bs_parse_log(rev, &k, &n) == 0 && n == 1 && same(k[0].copy, "__gx_pw_vadd") &&
			 same(k[0].scopy, "__gx_ps_vadd") && !k[0].static_only,
		 "the static copy logged first: the claiming one still becomes the copy");
	gx_bs_kernels_free(k, n);

	const char *twice = LINE("v", "__gx_pw_v", 3, "no", "") LINE("v", "__gx_pw_v2", 3, "no", "");
	GX_CHECK(gx_bs_parse_log(twice, &k, &n) == 0 && n == 2 && !k[0].scopy && !k[1].scopy,
		 "two claiming copies of one name are two records (no static copy made of either)");
	gx_bs_kernels_free(k, n);

	const char *odd = LINE("v", "__gx_pw_v", 5, "no", "") LINE("v", "__gx_pw_v", 5, "no", ", static only")
		LINE("w", "__gx_pw_w", 5, "no", "") LINE("w", "__gx_ps_w", 6, "no", ", static only");
	GX_CHECK(gx_bs_parse_log(odd, &k, &n) == 0 && n == 4 && !k[0].scopy && !k[2].scopy,
		 "a static copy of the same name, or with other parameters, is no scopy (found by fuzz_bs_parse)");
	gx_bs_kernels_free(k, n);

	const char *other = "persistent: vadd: transformed (work descriptor: trailing parameter __gx_work, loop "
			    "barrier 1, unit barrier no)\n"
			    "persistent: early: refused: threads may exit before a CTA barrier\n"
			    "persistent: x: copy __gx_pw_x transformed (work descriptor: parameter 0 __gx_work, loop "
			    "barrier 1, unit barrier no)\n"
			    "persistent: y: copy __gx_pw_y transformed (work descriptor: parameter 3 __gx_wrk, loop "
			    "barrier 1, unit barrier no)\n"
			    "persistent: z: copy\n";
	GX_CHECK(gx_bs_parse_log(other, &k, &n) == 0 && n == 0 && !k,
		 "in-place transforms, refusals, zero parameters, other descriptors, cut lines: no record");

	char *big = malloc(4096);
	memset(big, 'a', 4095);
	big[4095] = 0;
	memcpy(big, "persistent: ", 12);
	GX_CHECK(gx_bs_parse_log(big, &k, &n) == 0 && n == 0, "a 4 KiB line: no record, no overflow");
	free(big);

	const char *mangled = LINE("_Z4gemmIfLi128EEvPKT_S2_PS0_i", "__gx_pw__Z4gemmIfLi128EEvPKT_S2_PS0_i", 5, "yes", "");
	GX_CHECK(gx_bs_parse_log(mangled, &k, &n) == 0 && n == 1 && same(k[0].name, "_Z4gemmIfLi128EEvPKT_S2_PS0_i"),
		 "a mangled C++ name");
	gx_bs_kernels_free(k, n);

	GX_CHECK(gx_bs_parse_log(NULL, &k, &n) == 0 && n == 0 && gx_bs_parse_log("", &k, &n) == 0 && n == 0,
		 "no notes: no records");
	return gx_test_done();
}
