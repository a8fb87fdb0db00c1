/* The generic loader of the annotated verifier corpus: every program of every
 * object in the directory given as argv[1] is verified and its verdict (and
 * message) compared with its BTF decl tags (gx_test_bpf.h). One check line
 * per program, and a final check that the corpus is as large as promised. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/btf.h>

#include "devbpf/gx_bpf.h"
#include "gx_log.h"
#include "tests/gx_test.h"

struct tags {
	const char *desc, *result, *msg, *max_insns;
	bool no_simt;
};

static void read_tags(const struct btf *btf, const char *func, struct tags *t)
{
	memset(t, 0, sizeof(*t));
	if (!btf)
		return;
	int fid = btf__find_by_name_kind(btf, func, BTF_KIND_FUNC);
	if (fid <= 0)
		return;
	uint32_t n = btf__type_cnt(btf);
	for (uint32_t i = 1; i < n; i++) {
		const struct btf_type *ty = btf__type_by_id(btf, i);
		if (!btf_is_decl_tag(ty) || ty->type != (uint32_t)fid || btf_decl_tag(ty)->component_idx != -1)
			continue;
		const char *s = btf__name_by_offset(btf, ty->name_off);
		if (!strncmp(s, "gx_desc=", 8))
			t->desc = s + 8;
		else if (!strncmp(s, "gx_result=", 10))
			t->result = s + 10;
		else if (!strncmp(s, "gx_msg=", 7))
			t->msg = s + 7;
		else if (!strncmp(s, "gx_max_insns=", 13))
			t->max_insns = s + 13;
		else if (!strcmp(s, "gx_flag=no_simt"))
			t->no_simt = true;
	}
}

static void quiet(enum gx_log_level l, const char *fmt, va_list ap)
{
	(void)l, (void)fmt, (void)ap;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		printf("not ok - usage: test_bpf_verifier DIR\n");
		return 1;
	}
	gx_set_print(quiet);
	DIR *d = opendir(argv[1]);
	GX_CHECK(d != NULL, "open corpus directory %s", argv[1]);
	if (!d)
		return gx_test_done();
	char *names[256];
	int nn = 0;
	struct dirent *de;
	while ((de = readdir(d)) && nn < 256) {
		size_t l = strlen(de->d_name);
		if (l > 6 && !strcmp(de->d_name + l - 6, ".bpf.o"))
			names[nn++] = strdup(de->d_name);
	}
	closedir(d);
	qsort(names, nn, sizeof(names[0]), cmp_str);
	int n_ok = 0, n_fail = 0, untagged = 0;
	for (int i = 0; i < nn; i++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", argv[1], names[i]);
		struct gx_bpf_object *obj = gx_bpf_object__open_file(path, NULL);
		GX_CHECK(obj != NULL, "%s: loads (%s)", names[i], obj ? "" : strerror(errno));
		if (!obj)
			continue;
		const struct btf *btf = gx_bpf_object__btf(obj);
		for (struct gx_bpf_prog *p = NULL; (p = gx_bpf_object__next_prog(obj, p));) {
			struct tags t;
			read_tags(btf, gx_bpf_prog__name(p), &t);
			if (!t.result) {
				untagged++;
				printf("not ok - %s/%s: no __success/__failure tag\n", names[i], gx_bpf_prog__name(p));
				gx_test_failed++;
				continue;
			}
			struct gx_bpf_verify_opts o = { .sz = sizeof(o), .quiet = true };
			if (t.no_simt)
				o.flags |= GX_BPF_VERIFY_NO_SIMT;
			if (t.max_insns)
				o.budget.max_path_insns = (uint32_t)strtoul(t.max_insns, NULL, 0);
			int err = gx_bpf_prog__verify(p, &o);
			const char *msg = gx_bpf_prog__verifier_msg(p);
			bool want_ok = !strcmp(t.result, "success");
			if (want_ok) {
				n_ok++;
				GX_CHECK(err == 0, "%s/%s: %s: accepted (got: %s)", names[i], gx_bpf_prog__name(p),
					 t.desc ? t.desc : "", err ? msg : "ok");
			} else {
				n_fail++;
				bool match = err == -EINVAL && (!t.msg || strstr(msg, t.msg));
				char want[256];
				snprintf(want, sizeof(want), "prog %s insn ", gx_bpf_prog__name(p));
				bool form = !strncmp(msg, want, strlen(want));
				GX_CHECK(match && form, "%s/%s: %s: rejected with \"%s\" (got: %s)", names[i],
					 gx_bpf_prog__name(p), t.desc ? t.desc : "", t.msg ? t.msg : "",
					 err ? msg : "accepted");
			}
		}
		gx_bpf_object__close(obj);
		free(names[i]);
	}
	GX_CHECK(n_fail >= 40, "corpus has >= 40 must-reject programs (%d)", n_fail);
	GX_CHECK(n_ok >= 20, "corpus has >= 20 must-pass programs (%d)", n_ok);
	GX_CHECK(untagged == 0, "every corpus program is annotated");
	return gx_test_done();
}
