/* The generic loader of the annotated verifier corpus: every program of every
 * object in the directory given as argv[1] is verified and its verdict (and
 * message) compared with its BTF decl tags (gx_test_bpf.h). One check line
 * per program, and a final check that the corpus is as large as promised.
 * Accepted programs run in the interpreter and must stay in their memory;
 * refused ones tagged __exploit run there unverified and must do harm (so
 * the refusal is what keeps them from the interpreter and the JIT). */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <linux/btf.h>

#include "gpuext/gdev_ctx.h"
#include "devbpf/gx_bpf.h"
#include "common/gx_util.h"
#include "common/gx_log.h"
#include "tests/gx_test.h"

struct tags {
	const char *desc, *result, *msg, *max_insns;
	bool no_simt, exploit;
};

static void read_tags(const struct gx_btf *btf, const char *func, struct tags *t)
{
	memset(t, 0, sizeof(*t));
	if (!btf)
		return;
	int fid = gx_btf__find_by_name_kind(btf, func, BTF_KIND_FUNC);
	if (fid <= 0)
		return;
	uint32_t n = gx_btf__type_cnt(btf);
	for (uint32_t i = 1; i < n; i++) {
		const struct btf_type *ty = gx_btf__type_by_id(btf, i);
		if (BTF_INFO_KIND(ty->info) != BTF_KIND_DECL_TAG || ty->type != (uint32_t)fid ||
		    ((const struct btf_decl_tag *)(ty + 1))->component_idx != -1)
			continue;
		const char *s = gx_btf__name_by_offset(btf, ty->name_off);
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
		else if (!strcmp(s, "gx_flag=exploit"))
			t->exploit = true;
	}
}

static void quiet(enum gx_log_level l, const char *fmt, va_list ap)
{
	(void)l, (void)fmt, (void)ap;
}

/* ---- run accepted programs in the interpreter: a verified program must
 * only touch its context, its stack and map values (mem_ok enforces it) ---- */
struct run_env {
	struct gdev_ctx ctx;
	uint8_t *vals[64];
	uint32_t vsize[64];
	size_t nr_maps;
	const struct gx_bpf_object *obj;
	int wild;   /* accesses outside ctx, stack and map values */
	int forged; /* map handles that are none */
	int leaked; /* addresses in map values, records or printk arguments */
};
static struct run_env *renv;

static bool within(uint64_t a, uint32_t n, const void *base, size_t len)
{
	uint64_t b = (uint64_t)(uintptr_t)base;
	return a >= b && a + n <= b + len;
}

static bool run_mem_ok(void *user, uint64_t addr, uint32_t size, bool write)
{
	struct run_env *e = user;
	if (!write && within(addr, size, &e->ctx, sizeof(e->ctx)))
		return true;
	for (int i = 0; i < 64; i++)
		if (e->vals[i] && within(addr, size, e->vals[i], e->vsize[i]))
			return true;
	e->wild++;
	return false;
}

static uint64_t run_map_addr(void *user, uint32_t idx, uint32_t off, bool value)
{
	struct run_env *e = user;
	if (idx >= 64 || (value && !e->vals[idx]))
		return 0;
	return value ? (uint64_t)(uintptr_t)(e->vals[idx] + off) : 0x1000 + idx;
}

/* Does v look like (a part of) the address of the context or of a map
 * value: inside one, or its upper half, or its lower half alone? */
static bool is_addr(const struct run_env *e, uint64_t v)
{
	for (int i = -1; i < 64; i++) {
		uint64_t b = i < 0 ? (uint64_t)(uintptr_t)&e->ctx : (uint64_t)(uintptr_t)e->vals[i];
		uint64_t len = (i < 0 ? sizeof(e->ctx) : e->vsize[i]) + 4096;
		if (i >= 0 && !e->vals[i])
			continue;
		if (v - b < len || (v >> 32 && v >> 32 == b >> 32) || (v <= 0xffffffffull && (uint32_t)(v - b) < len))
			return true;
	}
	return false;
}

static void scan_leaks(struct run_env *e, const uint8_t *p, size_t len)
{
	for (size_t o = 0; o + 8 <= len; o += 4) {
		uint64_t v;
		memcpy(&v, p + o, 8);
		e->leaked += is_addr(e, v);
	}
}

static bool map_ok(uint64_t m)
{
	uint64_t i = m - 0x1000;
	if (i < renv->nr_maps)
		return true;
	renv->forged++;
	return false;
}

static uint64_t h_lookup(void *u, uint64_t m, uint64_t k, uint64_t a, uint64_t b, uint64_t c)
{
	(void)u, (void)k, (void)a, (void)b, (void)c;
	uint64_t i = m - 0x1000;
	return map_ok(m) && renv->vals[i] ? (uint64_t)(uintptr_t)renv->vals[i] : 0;
}
/* update/delete: the handle must be one; a value is copied in */
static uint64_t h_update(void *u, uint64_t m, uint64_t k, uint64_t v, uint64_t f, uint64_t c)
{
	(void)u, (void)f, (void)c;
	if (!map_ok(m))
		return 0;
	const struct gx_bpf_map *map = gx_bpf_object__map_by_idx(renv->obj, m - 0x1000);
	if (k)
		scan_leaks(renv, (const uint8_t *)(uintptr_t)k, gx_bpf_map__key_size(map));
	if (v)
		scan_leaks(renv, (const uint8_t *)(uintptr_t)v, gx_bpf_map__value_size(map));
	return 0;
}
static uint64_t h_delete(void *u, uint64_t m, uint64_t k, uint64_t a, uint64_t b, uint64_t c)
{
	(void)u, (void)k, (void)a, (void)b, (void)c;
	map_ok(m);
	return 0;
}
static uint64_t h_ringbuf(void *u, uint64_t m, uint64_t data, uint64_t size, uint64_t f, uint64_t c)
{
	(void)u, (void)f, (void)c;
	if (map_ok(m) && data && size <= 4096)
		scan_leaks(renv, (const uint8_t *)(uintptr_t)data, size);
	return 0;
}
static uint64_t h_printk(void *u, uint64_t fmt, uint64_t sz, uint64_t a, uint64_t b, uint64_t c)
{
	(void)u, (void)fmt, (void)sz;
	renv->leaked += is_addr(renv, a) + is_addr(renv, b) + is_addr(renv, c);
	return 0;
}
static uint64_t h_zero(void *u, uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e)
{
	(void)u, (void)a, (void)b, (void)c, (void)d, (void)e;
	return 0;
}
static uint64_t h_small(void *u, uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e)
{
	(void)u, (void)a, (void)b, (void)c, (void)d, (void)e;
	return 3;
}

/* Run p in the interpreter: 0, or -EFAULT when it did harm (the counts in
 * *harm: wild accesses, forged map handles, leaked addresses). */
static int run_prog(const struct gx_bpf_object *obj, const struct gx_bpf_prog *p, uint64_t *r0, char *harm,
		    size_t hlen)
{
	struct run_env e = { .obj = obj };
	renv = &e;
	e.ctx.size = 4, e.ctx.nr_active = 32, e.ctx.smid = 5, e.ctx.unit = 7, e.ctx.addr = 0x1000;
	e.nr_maps = gx_bpf_object__map_cnt(obj);
	for (size_t i = 0; i < gx_bpf_object__map_cnt(obj) && i < 64; i++) {
		const struct gx_bpf_map *m = gx_bpf_object__map_by_idx(obj, i);
		size_t sz = 0;
		const void *init = gx_bpf_map__initial_value(m, &sz);
		e.vsize[i] = gx_bpf_map__value_size(m);
		e.vals[i] = e.vsize[i] ? calloc(1, e.vsize[i]) : NULL;
		if (init && e.vals[i])
			memcpy(e.vals[i], init, sz);
	}
	struct gx_bpf_helper_entry h[] = {
		{ 1, h_lookup }, { 2, h_update }, { 3, h_delete }, { 5, h_zero }, { 130, h_ringbuf },
		{ 0x1000, h_zero }, { 0x1001, h_small }, { 0x1002, h_small }, { 0x1003, h_small },
		{ 0x1004, h_small }, { 0x1005, h_small }, { 0x1006, h_zero }, { 0x1007, h_zero },
		{ 0x1008, h_printk }, { 0x1009, h_small }, { 0x100a, h_small },
	};
	struct gx_bpf_interp_opts o = { .sz = sizeof(o), .helpers = h, .nr_helpers = GX_ARRAY_SIZE(h), .user = &e,
					.map_addr = run_map_addr, .mem_ok = run_mem_ok };
	int err = gx_bpf_prog__interp(p, (uint64_t)(uintptr_t)&e.ctx, &o, r0);
	for (int i = 0; i < 64; i++) {
		if (e.vals[i] && !(gx_bpf_map__gx_flags(gx_bpf_object__map_by_idx(obj, (size_t)i)) & GX_BPF_MAP_F_RDONLY))
			scan_leaks(&e, e.vals[i], e.vsize[i]);
		free(e.vals[i]);
	}
	snprintf(harm, hlen, "%d wild accesses, %d forged map handles, %d leaked addresses%s", e.wild, e.forged,
		 e.leaked, err == -EFAULT ? ", stopped by the memory check" : "");
	return e.wild || e.forged || e.leaked ? -EFAULT : err;
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
	int n_ok = 0, n_fail = 0, n_exploit = 0, untagged = 0;
	for (int i = 0; i < nn; i++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", argv[1], names[i]);
		struct gx_bpf_object *obj = gx_bpf_object__open_file(path, NULL);
		GX_CHECK(obj != NULL, "%s: loads (%s)", names[i], obj ? "" : strerror(errno));
		if (!obj)
			continue;
		const struct gx_btf *btf = gx_bpf_object__btf(obj);
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
				if (!err) {
					uint64_t r0 = 0;
					char harm[160];
					int rerr = run_prog(obj, p, &r0, harm, sizeof(harm));
					GX_CHECK(rerr == 0, "%s/%s: runs in the interpreter within its memory (%d: %s)",
						 names[i], gx_bpf_prog__name(p), rerr, harm);
				}
			} else {
				n_fail++;
				bool match = err == -EINVAL && (!t.msg || strstr(msg, t.msg));
				char want[256];
				snprintf(want, sizeof(want), "prog %s insn ", gx_bpf_prog__name(p));
				bool form = !strncmp(msg, want, strlen(want));
				GX_CHECK(match && form, "%s/%s: %s: rejected with \"%s\" (got: %s)", names[i],
					 gx_bpf_prog__name(p), t.desc ? t.desc : "", t.msg ? t.msg : "",
					 err ? msg : "accepted");
				if (t.exploit) {
					uint64_t r0 = 0;
					char harm[160];
					int rerr = run_prog(obj, p, &r0, harm, sizeof(harm));
					n_exploit++;
					GX_CHECK(rerr == -EFAULT, "%s/%s: run unverified, the exploit does harm (%s)",
						 names[i], gx_bpf_prog__name(p), harm);
				}
			}
		}
		gx_bpf_object__close(obj);
		free(names[i]);
	}
	GX_CHECK(n_fail >= 40, "corpus has >= 40 must-reject programs (%d)", n_fail);
	GX_CHECK(n_ok >= 20, "corpus has >= 20 must-pass programs (%d)", n_ok);
	GX_CHECK(n_exploit >= 10, "corpus has >= 10 exploits shown to do harm unverified (%d)", n_exploit);
	GX_CHECK(untagged == 0, "every corpus program is annotated");
	return gx_test_done();
}
