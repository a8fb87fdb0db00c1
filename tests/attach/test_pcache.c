/* test_pcache.c — the policy cache file format and keys (gx_pcache.h):
 * round trip, key mismatch, corrupt and truncated entries give -EINVAL with
 * a line number, a miss gives -ENOENT; relocation of a second policy
 * (gx_pmerge.h): symbols renamed (the runtime block __gx_devrt too, to the
 * policy's own __gx_devrt__p<k>), header dropped, a __gx_devrt declared any
 * other way than the JIT's refused. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach/gx_attach.h"
#include "common/gx_util.h"
#include "tests/gx_test.h"

int main(void)
{
	char dir[] = "/tmp/gx-pcache-XXXXXX", err[256], path[512];
	if (!mkdtemp(dir))
		return 1;
	unsigned char init[4] = { 1, 2, 0xab, 0 };
	int r;
	const char *bad;
	struct gx_pol_prog pr = { "gxp_t", 2, "vec*" };
	struct gx_pol_map mp = { "t.cfg", 2, 4, 8, 4, 1, init, 4 };
	struct gx_policy_desc d = { .hash = 0x1234, .sm = 90, .ptxver = 80, .ptx = (char *)"// ptx\n",
				    .ptx_len = 7, .progs = &pr, .nr_progs = 1, .maps = &mp, .nr_maps = 1 };
	snprintf(d.name, sizeof(d.name), "t");
	GX_CHECK(gx_pcache_store(dir, &d, 0) == 0, "pcache: store");
	struct gx_policy_desc e;
	GX_CHECK(gx_pcache_load(dir, 0x1234, 90, &e, err, sizeof(err)) == 0, "pcache: load hit");
	GX_CHECK(e.nr_progs == 1 && !strcmp(e.progs[0].func, "gxp_t") && e.progs[0].hook == 2 &&
			 !strcmp(e.progs[0].glob, "vec*"),
		 "pcache: program round trip");
	GX_CHECK(e.nr_maps == 1 && e.maps[0].init_len == 4 && !memcmp(e.maps[0].init, init, 4) &&
			 e.maps[0].gx_flags == 1 && e.maps[0].max_entries == 4,
		 "pcache: map round trip with initial bytes");
	GX_CHECK(e.ptx_len == 7 && !strcmp(e.ptx, "// ptx\n"), "pcache: PTX round trip");
	gx_pdesc_free(&e);

	/* Global variables (knobs): round trip, set, read back, refusals. */
	unsigned char data[12] = { 0 }, ro[4] = { 7, 0, 0, 0 };
	struct gx_pol_map vm[2] = { { "k..data", 2, 4, 12, 1, 1, data, 12 }, { "k..rodata", 2, 4, 4, 1, 1, ro, 4 } };
	struct gx_pol_var vv[3] = { { "a", 0, 0, 4 }, { "b", 0, 8, 2 }, { "c", 1, 0, 4 } };
	struct gx_policy_desc dv = { .hash = 0x99, .sm = 90, .ptxver = 80, .ptx = (char *)"//\n", .ptx_len = 3,
				     .progs = &pr, .nr_progs = 1, .maps = vm, .nr_maps = 2, .vars = vv, .nr_vars = 3 };
	snprintf(dv.name, sizeof(dv.name), "k");
	GX_CHECK(gx_pcache_store(dir, &dv, 0) == 0 && gx_pcache_load(dir, 0x99, 90, &e, err, sizeof(err)) == 0 &&
			 e.nr_vars == 3 && !strcmp(e.vars[1].name, "b") && e.vars[1].off == 8 && e.vars[1].size == 2,
		 "pcache: variables round trip");
	unsigned va = 0;
	unsigned short vb = 0;
	r = gx_pdesc_set_knobs(&e, "a=0x1234,b=7", err, sizeof(err));
	GX_CHECK(r == 0 && gx_pdesc_get_var(&e, "a", &va, 4) == 0 && va == 0x1234 &&
			 gx_pdesc_get_var(&e, "b", &vb, 2) == 0 && vb == 7,
		 "pcache: knobs set plain globals (a=0x%x b=%u)", va, vb);
	GX_CHECK(gx_pdesc_set_knobs(&e, "c=1", err, sizeof(err)) == -EINVAL && strstr(err, "const"),
		 "pcache: a .rodata knob is refused (%s)", err);
	GX_CHECK(gx_pdesc_set_knobs(&e, "z=1", err, sizeof(err)) == -EINVAL && strstr(err, "no such setting"),
		 "pcache: an unknown knob is refused (%s)", err);
	GX_CHECK(gx_pdesc_set_knobs(&e, "b=70000", err, sizeof(err)) == -EINVAL && strstr(err, "bad value"),
		 "pcache: a value too large for the variable is refused (%s)", err);
	GX_CHECK(gx_pdesc_set_knobs(&e, "a", err, sizeof(err)) == -EINVAL && strstr(err, "name=value"),
		 "pcache: a knob without '=' is refused (%s)", err);
	GX_CHECK(gx_pdesc_get_var(&e, "a", &vb, 2) == -ENOENT, "pcache: reading a variable at the wrong size fails");
	gx_pdesc_free(&e);
	bad = NULL;
	GX_CHECK(gx_pcache_load(dir, 0x1235, 90, &e, err, sizeof(err)) == -ENOENT, "pcache: other hash is a miss");
	GX_CHECK(gx_pcache_load(dir, 0x1234, 80, &e, err, sizeof(err)) == -ENOENT, "pcache: other sm is a miss");
	/* Corrupt: truncate the PTX. */
	gx_pcache_path(dir, 0x1234, 90, path, sizeof(path));
	GX_CHECK(truncate(path, 100) == 0 || 1, "pcache: truncate");
	char *buf;
	size_t len;
	gx_read_file(path, &buf, &len, 0);
	r = gx_pdesc_parse(buf, len, &e, err, sizeof(err));
	GX_CHECK(r == -EINVAL && strstr(err, "line"), "pcache: truncated entry rejected (%s)", err);
	free(buf);
	bad = "gxpol 1\nname x\nprog f 3 -\nptx 0\n";
	r = gx_pdesc_parse(bad, strlen(bad), &e, err, sizeof(err));
	GX_CHECK(r == -EINVAL && strstr(err, "line 3"), "pcache: two hook bits rejected (%s)", err);
	bad = "gxpol 2\n";
	r = gx_pdesc_parse(bad, strlen(bad), &e, err, sizeof(err));
	GX_CHECK(r == -EINVAL && strstr(err, "format"), "pcache: other format version rejected (%s)", err);
	bad = "gxpol 1\nname x\nmap m 2 4 8 1 1 zz\nprog f 1 -\nptx 0\n";
	r = gx_pdesc_parse(bad, strlen(bad), &e, err, sizeof(err));
	GX_CHECK(r == -EINVAL, "pcache: bad hex rejected (%s)", err);
	static const char nul[] = "gxpol 1\nname x\nprog f 1 -\nptx 4\n.v\0x";
	r = gx_pdesc_parse(nul, sizeof(nul) - 1, &e, err, sizeof(err));
	GX_CHECK(r == -EINVAL && strstr(err, "NUL"), "pcache: a NUL byte in the PTX rejected (%s)", err);
	setenv("GPUEXT_CACHE_DIR", "/x/y", 1);
	GX_CHECK(gx_cache_dir(path, sizeof(path)) == 0 && !strcmp(path, "/x/y"), "pcache: GPUEXT_CACHE_DIR");
	unsetenv("GPUEXT_CACHE_DIR");
	setenv("XDG_CACHE_HOME", "/c", 1);
	GX_CHECK(gx_cache_dir(path, sizeof(path)) == 0 && !strcmp(path, "/c/gpuext"), "pcache: XDG_CACHE_HOME");
	GX_CHECK(gx_pcache_jit_sm(100) == 90 && gx_pcache_jit_sm(80) == 80, "pcache: JIT target arch");
	/* relocation of a second policy */
	static const char ptx2[] =
		"//\n.version 8.0\n.target sm_90\n.address_size 64\n\n"
		".extern .const .align 8 .b8 __gx_devrt[3144];\n"
		".global .align 4 .b8 tbl[8];\n"
		".func (.param .b32 r) helper(.param .b64 a);\n"
		".visible .func  (.param .b32 func_retval0) gxp_t(\n\t.param .b64 gxp_t_param_0\n)\n{\n"
		"\t.reg .b64 %rd<4>;\n\tld.const.u64 \t%rd1, [__gx_devrt+104];\n\tld.u64 %rd2, [tbl];\n"
		"$L__BB0_1:\n\tcall.uni (r), helper, (a); // gxp_t\n\tret;\n}\n";
	struct gx_pol_prog pr2 = { "gxp_t", 1, "" };
	struct gx_policy_desc d2 = { .progs = &pr2, .nr_progs = 1 };
	snprintf(d2.name, sizeof(d2.name), "two");
	d2.ptx = strdup(ptx2);
	d2.ptx_len = strlen(ptx2);
	r = gx_pdesc_relocate(&d2, 2, err, sizeof(err));
	GX_CHECK(r == 0, "pmerge: second policy relocated (%s)", r ? err : "ok");
	GX_CHECK(!r && !strcmp(pr2.func, "gxp_t__p2") && strstr(d2.ptx, ") gxp_t__p2(") && strstr(d2.ptx, "[tbl__p2]") &&
			 strstr(d2.ptx, ".b8 tbl__p2[8]") && strstr(d2.ptx, "helper__p2, (a)") &&
			 strstr(d2.ptx, ") helper__p2(.param") && strstr(d2.ptx, "// gxp_t\n"),
		 "pmerge: module-scope symbols renamed, comments and labels kept");
	GX_CHECK(!r && !strstr(d2.ptx, ".version") && strstr(d2.ptx, "$L__BB0_1:") &&
			 strstr(d2.ptx, ".extern .const .align 8 .b8 __gx_devrt__p2[3144];\n") &&
			 strstr(d2.ptx, "ld.const.u64 \t%rd1, [__gx_devrt__p2+104];") && !strstr(d2.ptx, "__gx_devrt["),
		 "pmerge: header dropped, the runtime block renamed __gx_devrt__p2");
	free(d2.ptx);
	static const char bad2[] = "// an older JIT's pointer\n.extern .global .align 8 .u64 __gx_devrt;\n.func f()\n{\n\tld.global.u64 %rd1, [__gx_devrt];\n}\n";
	snprintf(pr2.func, sizeof(pr2.func), "f");
	d2.ptx = strdup(bad2);
	d2.ptx_len = strlen(bad2);
	r = gx_pdesc_relocate(&d2, 1, err, sizeof(err));
	GX_CHECK(r == -EINVAL && strstr(err, "policy two: cannot run beside the others: PTX line 2: __gx_devrt not declared"),
		 "pmerge: a __gx_devrt declared otherwise refused (%s)", err);
	free(d2.ptx);
	d2.ptx = strdup(ptx2);
	d2.ptx_len = strlen(ptx2);
	r = gx_pdesc_relocate(&d2, 5, err, sizeof(err));
	GX_CHECK(r == -EINVAL && strstr(err, "at most 5"), "pmerge: a sixth policy refused (%s)", err);
	free(d2.ptx);
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	GX_CHECK(system(cmd) == 0, "pcache: cleanup");
	return gx_test_done();
}
