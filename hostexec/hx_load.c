/* hx_load.c — turn a hostbpf struct_ops object into an executable policy.
 *
 * The object is read by devbpf's loader (devbpf/loader.c, no libbpf: the
 * shim must run where libbpf is absent), the one loader of device and host
 * policies, with the host's open options: struct_ops/ sections, the host's
 * map types (array, hash, LRU hash), kfunc calls resolved to HX_KF_* ids,
 * and the struct_ops variable as a map whose function pointers name the
 * programs. It relocates maps and global data into the interpreter's
 * ld_imm64 conventions and copies the .text functions a program reaches
 * after it, so every program is one self-contained array for the verifier,
 * interpreter and JIT. What is the host's alone is here: the kfunc table,
 * the struct_ops type (gpu_mem_ops or gpu_sched_ops) and its handler
 * slots, the executor's limits, knobs, and verification of each handler
 * (hx_verify.c) before it may run. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/btf.h>
#include "common/gx_log.h"
#include "devbpf/gx_bpf.h"
#include "hostexec/hx_internal.h"

static const char *const kfunc_names[] = {
	"bpf_gpu_move_head", "bpf_gpu_move_tail", "bpf_gpu_set_prefetch_region",
	"bpf_gpu_migrate_range", "bpf_gpu_set_attr", "bpf_gpu_reject_bind",
	"bpf_gpu_hold_launch", "bpf_gpu_set_window",
};

static int fail(char *why, size_t wlen, int err, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail(char *why, size_t wlen, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, wlen, fmt, ap);
	va_end(ap);
	return err;
}

/* The loader's open options for host policies. */
static int resolve_kfunc(void *user, const char *name)
{
	(void)user;
	for (size_t k = 0; k < sizeof(kfunc_names) / sizeof(kfunc_names[0]); k++)
		if (!strcmp(name, kfunc_names[k]))
			return HX_KF_BASE + (int)k;
	return -ENOENT;
}

struct why {
	char *buf;
	size_t len;
	bool set;
};

static void loader_msg(void *user, const char *line)
{
	struct why *w = user;
	if (!w->set) /* the first line is the reason */
		snprintf(w->buf, w->len, "%s", line);
	w->set = true;
}

/* Handlers of either struct_ops type; which slot a program fills, and so
 * its signature, comes from the struct_ops variable (hx_verify.c). */
static const struct gx_bpf_sec_def host_sec = {
	.prefix = "struct_ops/", .hook = GX_BPF_HOOK_HOST_FIRST + 1, .flags = GX_BPF_SEC_SUFFIX,
	.ret_min = INT64_MIN, .ret_max = INT64_MAX,
};
static const uint32_t host_map_types[] = { GX_BPF_MAP_ARRAY, GX_BPF_MAP_HASH, GX_BPF_MAP_LRU_HASH,
					   GX_BPF_MAP_STRUCT_OPS };

static struct hx_prog *prog_of(struct hx_policy *p, const struct gx_bpf_prog *bp)
{
	for (int i = 0; bp && i < p->nprogs; i++)
		if (!strcmp(p->progs[i].name, gx_bpf_prog__name(bp)))
			return &p->progs[i];
	return NULL;
}

/* Knob "name=value": a const volatile in .rodata. */
static int set_knobs(struct hx_policy *p, const char *knobs, char *why, size_t wlen)
{
	char buf[256];
	if (!knobs || !*knobs)
		return 0;
	snprintf(buf, sizeof(buf), "%s", knobs);
	for (char *save = NULL, *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');
		if (!eq)
			return fail(why, wlen, -EINVAL, "knob '%s': expected name=value", kv);
		*eq = 0;
		uint32_t sz = 0;
		uint8_t *v = hx_policy_global(p, kv, &sz);
		char *end;
		unsigned long long x = strtoull(eq + 1, &end, 0);
		if (!v || *end || !(sz == 4 || sz == 8 || sz == 1 || sz == 2))
			return fail(why, wlen, -EINVAL, "knob '%s': no such setting", kv);
		memcpy(v, &x, sz); /* little endian */
	}
	return 0;
}

void *hx_policy_global(const struct hx_policy *p, const char *name, uint32_t *size)
{
	for (int i = 0; i < p->nglobals; i++)
		if (!strcmp(p->globals[i].name, name)) {
			*size = p->globals[i].size;
			return p->maps[p->globals[i].map].data + p->globals[i].off;
		}
	return NULL;
}

/* Maps in the object's order (ld_imm64 indices), the struct_ops variable
 * last; global variables of at most 8 bytes (knobs, counters). */
static int take_maps(struct hx_policy *p, const struct gx_bpf_object *obj, const struct gx_bpf_map **ops,
		     char *why, size_t wlen)
{
	for (const struct gx_bpf_map *bm = NULL; (bm = gx_bpf_object__next_map(obj, bm));) {
		const char *n = gx_bpf_map__name(bm);
		if (gx_bpf_map__type(bm) == GX_BPF_MAP_STRUCT_OPS) {
			if (*ops)
				return fail(why, wlen, -EINVAL, "more than one struct_ops variable");
			*ops = bm;
			continue;
		}
		if (*ops) /* the loader puts struct_ops variables last */
			return fail(why, wlen, -EINVAL, "map %s after the struct_ops variable", n);
		if (p->nmaps == HX_MAX_MAPS)
			return fail(why, wlen, -E2BIG, "too many maps");
		struct hx_map *m = &p->maps[p->nmaps++];
		snprintf(m->name, sizeof(m->name), "%s", n);
		m->type = gx_bpf_map__type(bm);
		m->key_size = gx_bpf_map__key_size(bm);
		m->value_size = gx_bpf_map__value_size(bm);
		m->max_entries = gx_bpf_map__max_entries(bm);
		m->internal = gx_bpf_map__gx_flags(bm) & GX_BPF_MAP_F_INTERNAL;
		m->rdonly = gx_bpf_map__gx_flags(bm) & GX_BPF_MAP_F_RDONLY;
		if (!m->internal) {
			if (hx_map_init(m))
				return fail(why, wlen, -EOPNOTSUPP, "map %s: type %u or size not supported", n, m->type);
			continue;
		}
		size_t sz = 0;
		const void *init = gx_bpf_map__initial_value(bm, &sz);
		if (m->value_size > (1u << 20))
			return fail(why, wlen, -E2BIG, "section '%s': too much global data", n);
		m->data_len = (m->value_size + 7) & ~7ull;
		m->data = calloc(1, m->data_len);
		if (!m->data)
			return -ENOMEM;
		memcpy(m->data, init, sz);
	}
	for (size_t i = 0; i < gx_bpf_object__var_cnt(obj) && p->nglobals < 64; i++) {
		const char *vn;
		size_t mi;
		uint32_t off, sz;
		if (gx_bpf_object__var(obj, i, &vn, &mi, &off, &sz) || mi >= (size_t)p->nmaps || sz > 8)
			continue;
		snprintf(p->globals[p->nglobals].name, sizeof(p->globals[0].name), "%s", vn);
		p->globals[p->nglobals].map = (int)mi;
		p->globals[p->nglobals].off = off;
		p->globals[p->nglobals++].size = sz;
	}
	return 0;
}

/* The struct_ops variable: its type says mem or sched, its name member the
 * policy's name, its function pointers the handlers. */
static int take_ops(struct hx_policy *p, const struct gx_bpf_object *obj, const struct gx_bpf_map *ops, char *why,
		    size_t wlen)
{
	const struct gx_btf *btf = gx_bpf_object__btf(obj);
	if (!ops)
		return fail(why, wlen, -EINVAL, "no struct_ops variable (gpu_mem_ops / gpu_sched_ops)");
	const struct btf_type *t = gx_btf__type_by_id(btf, gx_bpf_map__btf_value_type_id(ops));
	const char *tn = t ? gx_btf__name_by_offset(btf, t->name_off) : "?";
	if (!t || (strcmp(tn, "gpu_mem_ops") && strcmp(tn, "gpu_sched_ops")))
		return fail(why, wlen, -EINVAL, "struct_ops type %s is not gpu_mem_ops/gpu_sched_ops", tn);
	p->kind = strcmp(tn, "gpu_mem_ops") ? HX_SCHED : HX_MEM;
	size_t noff = p->kind == HX_MEM ? offsetof(struct gpu_mem_ops, name) : offsetof(struct gpu_sched_ops, name);
	size_t sz = 0;
	const char *bytes = gx_bpf_map__initial_value(ops, &sz);
	if (bytes && noff + GPU_OPS_NAME_LEN <= sz)
		memcpy(p->name, bytes + noff, GPU_OPS_NAME_LEN);
	if (!p->name[0])
		snprintf(p->name, sizeof(p->name), "%.16s", gx_bpf_map__name(ops));
	uint32_t max = p->kind == HX_MEM ? 4 : 3;
	for (uint32_t off = 0; off + 8 <= sz; off += 8) {
		struct gx_bpf_prog *bp = gx_bpf_map__struct_ops_prog(ops, off);
		if (!bp)
			continue;
		struct hx_prog *pr = prog_of(p, bp);
		if (off / 8 >= max || !pr)
			return fail(why, wlen, -EINVAL, "struct_ops %s: bad handler relocation", gx_bpf_map__name(ops));
		p->handler[off / 8] = pr;
	}
	return 0;
}

static int take_object(struct hx_policy *p, const char *path, char *why, size_t wlen)
{
	struct why w = { why, wlen, false };
	struct gx_bpf_open_opts oo = {
		.sz = sizeof(oo), .sec_defs = &host_sec, .nr_sec_defs = 1, .map_types = host_map_types,
		.nr_map_types = sizeof(host_map_types) / sizeof(host_map_types[0]), .resolve_extern = resolve_kfunc,
		.log = loader_msg, .user = &w, .quiet = true,
	};
	struct gx_bpf_object *obj = gx_bpf_object__open_file(path, &oo);
	if (!obj) {
		int e = errno ? errno : EINVAL;
		return w.set ? -e : fail(why, wlen, -e, "%s", strerror(e));
	}
	p->obj = obj;
	if (!gx_bpf_object__btf(obj))
		return fail(why, wlen, -EINVAL, "no BTF (compile with -g)");
	for (const struct gx_bpf_prog *bp = NULL; (bp = gx_bpf_object__next_prog(obj, bp));) {
		size_t n = gx_bpf_prog__insn_cnt(bp);
		if (p->nprogs == HX_MAX_PROGS || n > HX_MAX_INSNS)
			return fail(why, wlen, -E2BIG, "program %s: more than %d programs or %d insns with its subprograms",
				    gx_bpf_prog__name(bp), HX_MAX_PROGS, HX_MAX_INSNS);
		struct hx_prog *pr = &p->progs[p->nprogs++];
		snprintf(pr->name, sizeof(pr->name), "%s", gx_bpf_prog__name(bp));
		pr->cnt = n;
		pr->insns = malloc(n * sizeof(*pr->insns));
		if (!pr->insns)
			return -ENOMEM;
		memcpy(pr->insns, gx_bpf_prog__insns(bp), n * sizeof(*pr->insns));
	}
	const struct gx_bpf_map *ops = NULL;
	int err = take_maps(p, obj, &ops, why, wlen);
	return err ?: take_ops(p, obj, ops, why, wlen);
}

int hx_policy_load(struct hx_policy *p, const char *path, const char *knobs, bool shm, char *why, size_t wlen)
{
	snprintf(why, wlen, "?");
	snprintf(p->file, sizeof(p->file), "%s", path);
	int err = take_object(p, path, why, wlen);
	if (!err)
		err = set_knobs(p, knobs, why, wlen);
	/* After the knobs: shared copies start with the final rodata. Failing
	 * to share is not fatal (private maps, one warning). */
	for (int i = 0; !err && shm && i < p->nmaps; i++) {
		int e = hx_map_share(&p->maps[i], p->name);
		if (e) {
			pr_warn("hostpolicy: %s: map %s stays private (%s)", p->name, p->maps[i].name, strerror(-e));
			break;
		}
	}
	for (int s = 0; !err && s < HX_MAX_HANDLERS; s++)
		if (p->handler[s])
			err = hx_verify_prog(p->handler[s], p->kind, s, p, why, wlen);
	if (!err) {
		bool any = false;
		for (int s = 0; s < HX_MAX_HANDLERS; s++)
			any |= p->handler[s] != NULL;
		if (!any)
			err = fail(why, wlen, -EINVAL, "struct_ops %s has no handlers", p->name);
	}
	/* The object's BTF served the signature checks; the policy keeps copies. */
	gx_bpf_object__close(p->obj);
	p->obj = NULL;
	if (err)
		hx_policy_free(p);
	return err;
}

void hx_policy_free(struct hx_policy *p)
{
	hx_native_free(p->native);
	for (int i = 0; i < p->nprogs; i++)
		free(p->progs[i].insns);
	for (int i = 0; i < p->nmaps; i++)
		hx_map_release(&p->maps[i]);
	gx_bpf_object__close(p->obj);
	memset(p, 0, sizeof(p[0]));
}
