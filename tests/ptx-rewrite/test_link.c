/* test_link — linking policy PTX into an application module (pass_link.c)
 * through the public gx_ptx_rewrite() API: renaming, linkage, .version
 * reconciliation, bindings and kernel globs, and the refusals.
 * Usage: test_link APP.ptx POLICY.ptx OUTDIR (test_link.sh runs ptxas on the
 * files written to OUTDIR). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/gx_test.h"
#include "common/gx_util.h"
#include "ptx-rewrite/gx_ptx.h"

static char *app, *pol;
static size_t app_len, pol_len;

static int rewrite(unsigned hooks, const struct gx_hook_binding *b, size_t nb, unsigned maxv,
		   const char *policy, struct gx_ptx_rewrite_result *res)
{
	struct gx_ptx_rewrite_opts o = {
		.sz = sizeof(o),
		.hooks = hooks,
		.policy_ptx = policy,
		.policy_len = policy ? strlen(policy) : 0,
		.bindings = b,
		.nr_bindings = nb,
		.max_ptx_version = maxv,
	};
	return gx_ptx_rewrite(app, app_len, &o, res);
}

static int count(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s APP.ptx POLICY.ptx OUTDIR\n", argv[0]);
		return 2;
	}
	if (gx_read_file(argv[1], &app, &app_len, 0) || gx_read_file(argv[2], &pol, &pol_len, 0)) {
		printf("not ok - link: cannot read inputs\n");
		return 1;
	}
	char path[4096];
	const struct gx_hook_binding b[] = {
		{GDEV_HOOK_ENTRY, "edg*", "probe_entry"},
		{GDEV_HOOK_MEM, NULL, "mem_access"},
	};
	struct gx_ptx_rewrite_result res;

	int err = rewrite(GDEV_HOOK_ENTRY | GDEV_HOOK_MEM, b, 2, 90, pol, &res);
	GX_CHECK(err == 0, "link: policy linked (%s)", err ? res.err : "ok");
	if (!err) {
		GX_CHECK(strstr(res.ptx, ".version 8.5") != NULL,
			 "link: .version is the higher one (8.5 from the policy)");
		GX_CHECK(strstr(res.ptx, ".target sm_90") && count(res.ptx, ".target") == 1,
			 "link: one .target, the application's");
		GX_CHECK(count(res.ptx, ".address_size") == 1, "link: one .address_size");
		GX_CHECK(strstr(res.ptx, "__gx_p_probe_entry") && strstr(res.ptx, "__gx_p_mem_access") &&
			 strstr(res.ptx, "__gx_p_bump"),
			 "link: policy functions renamed with the reserved prefix");
		GX_CHECK(strstr(res.ptx, "__gx_p_counter") && strstr(res.ptx, ".u32 counter;"),
			 "link: clashing global renamed, the application's kept");
		GX_CHECK(!strstr(res.ptx, ".visible .func") &&
			 !strstr(res.ptx, ".visible .global .align 8 .u64 __gx_p_hits"),
			 "link: policy symbols are internal");
		/* small handlers are inlined at their sites (inline.c): the
		 * entry policy is not called, the helper it calls is */
		GX_CHECK(count(res.ptx, "call\t(__gx_cr), __gx_p_probe_entry") +
					 count(res.ptx, "call.uni\t(__gx_cr), __gx_p_probe_entry") ==
				 0,
			 "link: the entry policy is inlined (not called)");
		GX_CHECK(count(res.ptx, "__gx_p_bump,") >= 2,
			 "link: the inlined policy's helper is called (%d call sites)",
			 count(res.ptx, "__gx_p_bump,"));
		GX_CHECK(count(res.ptx, ".visible .const .align 8 .b8 __gx_devrt[") == 1 && !strstr(res.ptx, "__gx_devrt__p"),
			 "link: one __gx_devrt");
		GX_CHECK(res.nr_hooks > 2, "link: hook sites inserted (%u)", res.nr_hooks);
		snprintf(path, sizeof(path), "%s/linked.ptx", argv[3]);
		GX_CHECK(gx_write_file(path, res.ptx, res.len) == 0, "link: wrote %s", path);
	}
	unsigned hooks_all = res.nr_hooks;
	gx_ptx_rewrite_result_free(&res);

	/* The glob does not match: no entry site, mem sites stay. */
	const struct gx_hook_binding b2[] = {
		{GDEV_HOOK_ENTRY, "nomatch*", "probe_entry"},
		{GDEV_HOOK_MEM, NULL, "mem_access"},
	};
	err = rewrite(GDEV_HOOK_ENTRY | GDEV_HOOK_MEM, b2, 2, 0, pol, &res);
	GX_CHECK(err == 0 && res.nr_hooks == hooks_all - 1,
		 "link: kernel glob filters entry sites (%u vs %u)", res.nr_hooks, hooks_all);
	gx_ptx_rewrite_result_free(&res);

	/* The driver's maximum caps the merged version. */
	err = rewrite(GDEV_HOOK_MEM, b, 2, 82, pol, &res);
	GX_CHECK(err == 0 && strstr(res.ptx, ".version 8.2"), "link: version capped at 8.2");
	if (!err) {
		snprintf(path, sizeof(path), "%s/capped.ptx", argv[3]);
		gx_write_file(path, res.ptx, res.len);
	}
	gx_ptx_rewrite_result_free(&res);

	/* Refusals. */
	err = rewrite(GDEV_HOOK_MEM, b, 2, 75, pol, &res);
	GX_CHECK(err == -EOPNOTSUPP &&
			 !strcmp(res.err, "application PTX version 8.0 is above the driver's maximum 7.5"),
		 "link: app above the driver maximum refused (%s)", res.err);
	gx_ptx_rewrite_result_free(&res);

	const struct gx_hook_binding b3[] = {{GDEV_HOOK_MEM, NULL, "nope"}};
	err = rewrite(GDEV_HOOK_MEM, b3, 1, 0, pol, &res);
	GX_CHECK(err == -ENOENT && !strcmp(res.err, "policy PTX does not define bound function nope"),
		 "link: unknown bound function refused (%s)", res.err);
	gx_ptx_rewrite_result_free(&res);

	err = rewrite(GDEV_HOOK_MEM, b, 2, 0, ".version 8.5\n.target sm_90\n.func f( {", &res);
	GX_CHECK(err < 0 && !strncmp(res.err, "policy PTX: ", 12), "link: bad policy PTX refused (%s)",
		 res.err);
	gx_ptx_rewrite_result_free(&res);

	err = rewrite(GDEV_HOOK_MEM, b, 2, 0,
		      ".version 8.5\n.target sm_90\n.address_size 64\n"
		      ".visible .global .u64 __gx_devrt;\n",
		      &res);
	GX_CHECK(err == -EINVAL && !strcmp(res.err, "policy PTX: defines __gx_devrt"),
		 "link: policy defining __gx_devrt refused (%s)", res.err);
	gx_ptx_rewrite_result_free(&res);

	err = rewrite(GDEV_HOOK_MEM, b, 2, 0,
		      ".version 8.5\n.target sm_90\n.address_size 64\n"
		      ".visible .const .align 8 .b8 __gx_devrt__p2[8];\n",
		      &res);
	GX_CHECK(err == -EINVAL && !strcmp(res.err, "policy PTX: defines __gx_devrt__p2"),
		 "link: policy defining a runtime block refused (%s)", res.err);
	gx_ptx_rewrite_result_free(&res);

	/* Extern references to the runtime blocks (the first policy's, and a
	 * third policy's as attach/pmerge.c renames it) bind to blocks the
	 * rewriter defines before the policy code; ptxas checks the result. */
	const char *ext = ".version 8.5\n.target sm_90\n.address_size 64\n"
			  ".extern .const .align 8 .b8 __gx_devrt[3144];\n"
			  ".extern .const .align 8 .b8 __gx_devrt__p2[3144];\n"
			  ".visible .func (.param .b32 r) mem_access(.param .b64 c)\n{\n"
			  "\t.reg .b64 %rd<3>;\n\t.reg .b32 %x;\n"
			  "\tld.const.u64 %rd1, [__gx_devrt+104];\n\tld.const.u64 %rd2, [__gx_devrt__p2+104];\n"
			  "\tadd.u64 %rd1, %rd1, %rd2;\n\tcvt.u32.u64 %x, %rd1;\n"
			  "\tst.param.b32 [r], %x;\n\tret;\n}\n";
	err = rewrite(GDEV_HOOK_MEM, b + 1, 1, 0, ext, &res);
	GX_CHECK(err == 0 && count(res.ptx, ".visible .const .align 8 .b8 __gx_devrt[3144];") == 1 &&
			 count(res.ptx, ".visible .const .align 8 .b8 __gx_devrt__p2[3144];") == 1 &&
			 !strstr(res.ptx, "__gx_devrt__p1") && !strstr(res.ptx, ".extern") &&
			 strstr(res.ptx, "__gx_devrt__p2[3144];") < strstr(res.ptx, "[__gx_devrt__p2+104]"),
		 "link: extern runtime blocks resolve to the module's, defined before use (%s)",
		 err ? res.err : "ok");
	if (!err) {
		snprintf(path, sizeof(path), "%s/devrt.ptx", argv[3]);
		gx_write_file(path, res.ptx, res.len);
	}
	gx_ptx_rewrite_result_free(&res);

	free(app);
	free(pol);
	return gx_test_done();
}
