/* libFuzzer target of the one policy object loader (devbpf/loader.c) and
 * its BTF reader (devbpf/btf.c): open any bytes as a device policy object,
 * verify every program that loads, disassemble it, and run the verified ones
 * in the reference interpreter against a fake context with memory checks (a
 * verified program must never touch memory outside its context, stack and
 * map values); open the same bytes with the host executor's options
 * (struct_ops sections and variables, LRU hashes, kfuncs) and walk every
 * program, map and BTF type; bytes that are not ELF are read as a .BTF
 * section. Seeded with the verifier corpus, the loader objects and the host
 * policies (make fuzz). */
#include <linux/btf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpuext/gdev_ctx.h"
#include "devbpf/btf_internal.h"
#include "devbpf/gx_bpf.h"
#include "common/gx_log.h"

static void quiet(enum gx_log_level l, const char *fmt, va_list ap)
{
	(void)l, (void)fmt, (void)ap;
}

struct env {
	struct gdev_ctx ctx;
	uint8_t *vals[256];
	uint32_t vsize[256];
	const struct gx_bpf_object *obj;
};

static bool in(uint64_t a, uint32_t n, const void *base, size_t len)
{
	uint64_t b = (uint64_t)(uintptr_t)base;
	return a >= b && a + n <= b + len;
}

static bool mem_ok(void *user, uint64_t addr, uint32_t size, bool write)
{
	struct env *e = user;
	if (!write && in(addr, size, &e->ctx, sizeof(e->ctx)))
		return true;
	for (int i = 0; i < 256; i++)
		if (e->vals[i] && in(addr, size, e->vals[i], e->vsize[i]))
			return true;
	abort(); /* the verifier let through an access the interpreter finds wild */
}

static uint64_t map_addr(void *user, uint32_t idx, uint32_t off, bool value)
{
	struct env *e = user;
	if (idx >= 256 || !e->vals[idx])
		return 0;
	return value ? (uint64_t)(uintptr_t)(e->vals[idx] + off) : 0x1000 + idx;
}

/* lookup returns the map's first value (arrays) or NULL (hash); others 0 */
static struct env *cur;
static uint64_t h_lookup(void *u, uint64_t m, uint64_t k, uint64_t a, uint64_t b, uint64_t c)
{
	(void)u, (void)k, (void)a, (void)b, (void)c;
	uint64_t idx = m - 0x1000;
	if (idx >= 256 || !cur->vals[idx])
		return 0;
	const struct gx_bpf_map *map = gx_bpf_object__map_by_idx(cur->obj, idx);
	return gx_bpf_map__type(map) == GX_BPF_MAP_HASH ? 0 : (uint64_t)(uintptr_t)cur->vals[idx];
}
static uint64_t h_zero(void *u, uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e)
{
	(void)u, (void)a, (void)b, (void)c, (void)d, (void)e;
	return 0;
}

/* Every getter of the BTF reader on every type. */
static void walk_btf(const struct gx_btf *btf)
{
	uint64_t sum = 0;
	for (uint32_t id = 0; id <= gx_btf__type_cnt(btf); id++) {
		const struct btf_type *t = gx_btf__type_by_id(btf, id);
		const char *n = t ? gx_btf__name_by_offset(btf, t->name_off) : "";
		sum += strlen(n) + gx_btf__skip_mods(btf, id) + (uint64_t)gx_btf__resolve_size(btf, id);
		if (t && *n && id < 64)
			sum += (uint64_t)gx_btf__find_by_name_kind(btf, n, BTF_INFO_KIND(t->info));
	}
	if (sum == 42)
		gx_btf__name_by_offset(btf, 0);
}

/* The host executor's options (hostexec/hx_load.c): struct_ops handlers,
 * its map types, kfuncs by name. */
static int any_kfunc(void *user, const char *name)
{
	(void)user;
	return strncmp(name, "bpf_gpu_", 8) ? -1 : 0x4000 + (int)(strlen(name) % 8);
}

static void open_host(const uint8_t *data, size_t size)
{
	static const struct gx_bpf_sec_def sec = { .prefix = "struct_ops/", .hook = GX_BPF_HOOK_HOST_FIRST + 1,
						   .flags = GX_BPF_SEC_SUFFIX, .ret_min = INT64_MIN,
						   .ret_max = INT64_MAX };
	static const uint32_t types[] = { GX_BPF_MAP_ARRAY, GX_BPF_MAP_HASH, GX_BPF_MAP_LRU_HASH,
					  GX_BPF_MAP_STRUCT_OPS };
	struct gx_bpf_open_opts oo = { .sz = sizeof(oo), .sec_defs = &sec, .nr_sec_defs = 1, .map_types = types,
				       .nr_map_types = 4, .resolve_extern = any_kfunc, .quiet = true };
	struct gx_bpf_object *obj = gx_bpf_object__open_mem(data, size, &oo);
	if (!obj)
		return;
	walk_btf(gx_bpf_object__btf(obj));
	FILE *devnull = fopen("/dev/null", "w");
	for (struct gx_bpf_prog *p = NULL; devnull && (p = gx_bpf_object__next_prog(obj, p));)
		gx_bpf_prog__dump(p, devnull);
	if (devnull)
		fclose(devnull);
	for (struct gx_bpf_map *m = NULL; (m = gx_bpf_object__next_map(obj, m));) {
		size_t n = 0;
		const uint8_t *init = gx_bpf_map__initial_value(m, &n);
		for (uint32_t off = 0; off < n + 8; off += 8)
			if (gx_bpf_map__struct_ops_prog(m, off) && init && !init[0])
				break;
	}
	gx_bpf_object__close(obj);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gx_set_print(quiet);
	if (size < 4 || memcmp(data, "\177ELF", 4)) {
		struct gx_btf *btf = NULL;
		if (!gx_btf_parse(data, size, &btf))
			walk_btf(btf);
		gx_btf_free(btf);
		return 0;
	}
	open_host(data, size);
	struct gx_bpf_object *obj = gx_bpf_object__open_mem(data, size, NULL);
	if (!obj)
		return 0;
	struct env e = { 0 };
	e.obj = obj;
	cur = &e;
	for (size_t i = 0; i < gx_bpf_object__map_cnt(obj) && i < 256; i++) {
		const struct gx_bpf_map *m = gx_bpf_object__map_by_idx(obj, i);
		uint32_t vs = gx_bpf_map__value_size(m);
		if (vs && vs <= (1u << 16)) {
			e.vals[i] = calloc(1, vs);
			e.vsize[i] = vs;
			/* global data starts with its initial bytes, as in the runtime:
			 * the verifier folds .rodata loads into constants */
			size_t n = 0;
			const void *init = gx_bpf_map__initial_value(m, &n);
			if (e.vals[i] && init)
				memcpy(e.vals[i], init, n < vs ? n : vs);
		}
	}
	struct gx_bpf_helper_entry helpers[] = { { 1, h_lookup } };
	struct gx_bpf_verify_opts vo = { .sz = sizeof(vo), .quiet = true, .collect_facts = true,
					 .budget = { .max_path_insns = 1024, .max_processed = 5000 } };
	for (struct gx_bpf_prog *p = NULL; (p = gx_bpf_object__next_prog(obj, p));) {
		if (gx_bpf_prog__verify(p, &vo))
			continue;
		FILE *devnull = fopen("/dev/null", "w");
		if (devnull) {
			gx_bpf_prog__dump(p, devnull);
			fclose(devnull);
		}
		/* run only when every helper it calls is a lookup: others need a runtime */
		const struct bpf_insn *in = gx_bpf_prog__insns(p);
		bool simple = true;
		for (size_t i = 0; i < gx_bpf_prog__insn_cnt(p); i++)
			if (in[i].code == (BPF_JMP | BPF_CALL) && in[i].src_reg == 0 && in[i].imm != 1)
				simple = false;
		if (!simple)
			continue;
		struct gx_bpf_interp_opts io = { .sz = sizeof(io), .helpers = helpers, .nr_helpers = 1, .user = &e,
						 .map_addr = map_addr, .mem_ok = mem_ok, .max_steps = 100000 };
		uint64_t r;
		gx_bpf_prog__interp(p, (uint64_t)(uintptr_t)&e.ctx, &io, &r);
	}
	(void)h_zero;
	for (int i = 0; i < 256; i++)
		free(e.vals[i]);
	walk_btf(gx_bpf_object__btf(obj));
	gx_bpf_object__close(obj);
	return 0;
}
