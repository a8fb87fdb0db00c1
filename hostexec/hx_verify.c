/* hx_verify.c — user-space verification of a host policy program before it
 * runs, with the rules the kernel verifier enforces for struct_ops programs.
 *
 * Two stages. First quick structural checks with the executor's own
 * wording (instructions, jumps and calls inside the program, only the map
 * helpers, bpf_loop and the six gpu kfuncs of the struct_ops type). Then
 * devbpf's verifier
 * (gx_bpf_verify_insns: path exploration with typed registers and value
 * ranges) proves the rest, per handler, from the struct_ops member's
 * signature: r1 holds the member's arguments; each is a read-only pointer
 * to the struct the executor passes, accessed only inside its size (the
 * object's own BTF must agree with the executor's layout); map values only
 * after the null check and inside value_size; the stack inside 512 bytes
 * and read only where written; pointer arithmetic only on bounded
 * pointers; no address stored into a map (nor its bytes in a key or value)
 * or returned, and pointers never narrowed; kfunc pointer arguments must be
 * the structs the handler was given; every loop provably bounded within
 * HX_STEP_BUDGET instructions, a bpf_loop callback safe for any number of
 * iterations. Subprograms (.text functions, copied after the program by
 * devbpf's loader for hx_load.c) are verified as part of it. A program that
 * passes may run as native code without run-time checks; the interpreter
 * keeps its own checks as a second line. Which handler may call which kfunc
 * is checked at run time, as gpuext.ko does (misuse is a policy error). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <linux/btf.h>
#include "devbpf/gx_bpf.h"
#include "hostexec/hx_internal.h"

static int bad(char *why, size_t wlen, const struct hx_prog *p, size_t i, const char *msg)
{
	snprintf(why, wlen, "program %s insn %zu: %s", p->name, i, msg);
	return -EINVAL;
}

/* Kfuncs by struct_ops type. Which handler of that type may call which is
 * checked at run time (misuse counts as a policy error, like gpuext.ko). */
static bool kfunc_any(int kind, int id)
{
	if (kind == HX_MEM)
		return id >= HX_KF_MOVE_HEAD && id <= HX_KF_MIGRATE;
	return id == HX_KF_SET_ATTR || id == HX_KF_REJECT || id == HX_KF_HOLD || id == HX_KF_WINDOW;
}

static int structural(const struct hx_prog *prog, int kind, const struct hx_policy *p, char *why, size_t wlen)
{
	const struct bpf_insn *in = prog->insns;
	size_t n = prog->cnt;
	if (!n || n > HX_MAX_INSNS)
		return bad(why, wlen, prog, 0, "empty or too long");
	for (size_t i = 0; i < n; i++) {
		uint8_t cls = BPF_CLASS(in[i].code), op = BPF_OP(in[i].code);
		if (in[i].dst_reg > 10 || in[i].src_reg > 10)
			return bad(why, wlen, prog, i, "bad register");
		if (in[i].code == (BPF_LD | BPF_DW | BPF_IMM)) {
			if (i + 1 >= n || in[i + 1].code || in[i + 1].dst_reg || in[i + 1].src_reg || in[i + 1].off)
				return bad(why, wlen, prog, i, "malformed ld_imm64");
			if (in[i].dst_reg == 10)
				return bad(why, wlen, prog, i, "frame pointer is read-only");
			if (in[i].src_reg == BPF_PSEUDO_MAP_IDX || in[i].src_reg == BPF_PSEUDO_MAP_IDX_VALUE) {
				bool val = in[i].src_reg == BPF_PSEUDO_MAP_IDX_VALUE;
				if (in[i].imm < 0 || in[i].imm >= p->nmaps || p->maps[in[i].imm].internal != val)
					return bad(why, wlen, prog, i, "bad map reference");
			} else if (in[i].src_reg == BPF_PSEUDO_FUNC) {
				long t = (long)i + in[i].imm + 1;
				if (t < 0 || (size_t)t >= n)
					return bad(why, wlen, prog, i, "function address out of range");
			} else if (in[i].src_reg) {
				return bad(why, wlen, prog, i, "unsupported ld_imm64 kind");
			}
			i++;
			continue;
		}
		switch (cls) {
		case BPF_LD:
			return bad(why, wlen, prog, i, "legacy packet loads are not allowed");
		case BPF_LDX: case BPF_ALU: case BPF_ALU64:
			if (in[i].dst_reg == 10)
				return bad(why, wlen, prog, i, "frame pointer is read-only");
			break;
		case BPF_ST: case BPF_STX:
			break;
		case BPF_JMP: case BPF_JMP32:
			if (op == BPF_EXIT && cls == BPF_JMP)
				break;
			if (op == BPF_CALL && cls == BPF_JMP) {
				int id = in[i].imm;
				long t = (long)i + in[i].imm + 1;
				if (in[i].src_reg == BPF_PSEUDO_CALL && (t < 0 || (size_t)t >= n))
					return bad(why, wlen, prog, i, "call out of range");
				if (in[i].src_reg == BPF_PSEUDO_CALL)
					break;
				if (in[i].src_reg)
					return bad(why, wlen, prog, i, "bad call");
				if (id >= HX_KF_BASE && id < HX_KF_END) {
					/* kfunc of the other struct_ops kind: the kernel's
					 * kfunc sets refuse it at load */
					if (!kfunc_any(kind, id))
						return bad(why, wlen, prog, i, "kfunc not available to this struct_ops type");
				} else if (id != HX_H_LOOKUP && id != HX_H_UPDATE && id != HX_H_DELETE &&
					   id != HX_H_KTIME && id != HX_H_PIDTGID && id != HX_H_LOOP) {
					return bad(why, wlen, prog, i, "helper not allowed for host policies");
				}
				break;
			}
			if (op == BPF_CALL || op == BPF_EXIT || (cls == BPF_JMP32 && op == BPF_JA))
				return bad(why, wlen, prog, i, "bad jump");
			{
				long t = (long)i + in[i].off + 1;
				if (t < 0 || (size_t)t >= n)
					return bad(why, wlen, prog, i, "jump out of range");
				if (t > 0 && in[t - 1].code == (BPF_LD | BPF_DW | BPF_IMM) && !in[t].code)
					return bad(why, wlen, prog, i, "jump into the middle of ld_imm64");
				if (t == (long)i + 0 + 0 && op == BPF_JA)
					return bad(why, wlen, prog, i, "infinite loop");
			}
			break;
		}
	}
	uint8_t last = in[n - 1].code;
	if (last != (BPF_JMP | BPF_EXIT) && last != (BPF_JMP | BPF_JA))
		return bad(why, wlen, prog, n - 1, "program falls off its end");
	return 0;
}

/* ---- the member signatures: argument structs, tags for kfunc prototypes */
enum { T_MEM_CTX = 1, T_REGION, T_FAULT, T_SCHED_CTX, T_QUEUE, T_TENANT, T_LAUNCH };
#define ARG(t, s) {sizeof(struct s), t, "struct " #s}
static const struct gx_bpf_ctx_arg mem2[] = {ARG(T_MEM_CTX, gpu_mem_ctx), ARG(T_REGION, gpu_region)};
static const struct gx_bpf_ctx_arg mem3[] = {ARG(T_MEM_CTX, gpu_mem_ctx), ARG(T_REGION, gpu_region),
					     ARG(T_FAULT, gpu_fault)};
static const struct gx_bpf_ctx_arg sched2[] = {ARG(T_SCHED_CTX, gpu_sched_ctx), ARG(T_QUEUE, gpu_queue)};
static const struct gx_bpf_ctx_arg launch3[] = {ARG(T_SCHED_CTX, gpu_sched_ctx), ARG(T_TENANT, gpu_tenant),
						ARG(T_LAUNCH, gpu_launch)};
#undef ARG

#define P(t) GX_BPF_ARG_PTR(t)
#define S GX_BPF_ARG_SCALAR
#define MAPH {HX_H_LOOKUP, "bpf_map_lookup_elem", {GX_BPF_ARG_MAP, GX_BPF_ARG_MAP_KEY}, GX_BPF_RET_MAP_VALUE_OR_NULL, 0}, \
	{HX_H_UPDATE, "bpf_map_update_elem", {GX_BPF_ARG_MAP, GX_BPF_ARG_MAP_KEY, GX_BPF_ARG_MAP_VALUE, S}, \
	 GX_BPF_RET_ERR, GX_BPF_HELPER_F_MAP_WRITE}, \
	{HX_H_DELETE, "bpf_map_delete_elem", {GX_BPF_ARG_MAP, GX_BPF_ARG_MAP_KEY}, GX_BPF_RET_ERR, \
	 GX_BPF_HELPER_F_MAP_WRITE | GX_BPF_HELPER_F_HASH_ONLY}, \
	{HX_H_KTIME, "bpf_ktime_get_ns", {0}, GX_BPF_RET_SCALAR, 0}, \
	{HX_H_PIDTGID, "bpf_get_current_pid_tgid", {0}, GX_BPF_RET_SCALAR, 0}, \
	{HX_H_LOOP, "bpf_loop", {0}, GX_BPF_RET_SCALAR, 0} /* the verifier's own prototype */
static const struct gx_bpf_helper_proto mem_helpers[] = {
	MAPH,
	{HX_KF_MOVE_HEAD, "bpf_gpu_move_head", {P(T_MEM_CTX), P(T_REGION)}, GX_BPF_RET_ERR, 0},
	{HX_KF_MOVE_TAIL, "bpf_gpu_move_tail", {P(T_MEM_CTX), P(T_REGION)}, GX_BPF_RET_ERR, 0},
	{HX_KF_SET_PREFETCH, "bpf_gpu_set_prefetch_region", {P(T_MEM_CTX), S, S}, GX_BPF_RET_ERR, 0},
	{HX_KF_MIGRATE, "bpf_gpu_migrate_range", {P(T_MEM_CTX), S, S}, GX_BPF_RET_ERR, 0},
};
static const struct gx_bpf_helper_proto sched_helpers[] = {
	MAPH,
	{HX_KF_SET_ATTR, "bpf_gpu_set_attr", {P(T_SCHED_CTX), P(T_QUEUE), S, S}, GX_BPF_RET_ERR, 0},
	{HX_KF_REJECT, "bpf_gpu_reject_bind", {P(T_SCHED_CTX), P(T_QUEUE)}, GX_BPF_RET_ERR, 0},
	{HX_KF_HOLD, "bpf_gpu_hold_launch", {P(T_SCHED_CTX), P(T_LAUNCH), S}, GX_BPF_RET_ERR, 0},
	{HX_KF_WINDOW, "bpf_gpu_set_window", {P(T_SCHED_CTX), P(T_TENANT), S}, GX_BPF_RET_ERR, 0},
};
#undef MAPH
#undef S
#undef P

/* Budgets: a handler runs inline in a driver call of the application. */
#define SEC(name, a) {.prefix = name, .hook = GX_BPF_HOOK_HOST_FIRST + 1, .flags = GX_BPF_SEC_VAR_STACK | GX_BPF_SEC_JOIN, .ctx_size = 8 * (sizeof(a) / sizeof(a[0])), \
		      .ret_min = INT64_MIN, .ret_max = INT64_MAX, \
		      .budget = {.max_path_insns = HX_STEP_BUDGET, .max_helper_calls = 1024, .max_processed = 1000000}, \
		      .args = a, .nr_args = sizeof(a) / sizeof(a[0])}
static const struct gx_bpf_sec_def mem_secs[HX_MAX_HANDLERS] = {
	SEC("gpu_mem_ops.gpu_activate", mem2), SEC("gpu_mem_ops.gpu_access", mem2),
	SEC("gpu_mem_ops.gpu_evict_prepare", mem2), SEC("gpu_mem_ops.gpu_prefetch", mem3),
};
static const struct gx_bpf_sec_def sched_secs[3] = {
	SEC("gpu_sched_ops.task_init", sched2), SEC("gpu_sched_ops.task_destroy", sched2),
	SEC("gpu_sched_ops.task_launch", launch3),
};
#undef SEC

static const char *const mem_members[] = {"gpu_activate", "gpu_access", "gpu_evict_prepare", "gpu_prefetch"};
static const char *const sched_members[] = {"task_init", "task_destroy", "task_launch"};

/* The object's BTF for member `slot` of its struct_ops type must describe
 * the arguments the executor passes (same struct names and sizes), as the
 * kernel matches a struct_ops map against its own BTF. */
static int check_signature(const struct hx_policy *p, const struct gx_bpf_sec_def *sec, int slot, char *why,
			   size_t wlen)
{
	const struct gx_btf *b = gx_bpf_object__btf(p->obj);
	const char *tname = p->kind == HX_MEM ? "gpu_mem_ops" : "gpu_sched_ops";
	const char *member = p->kind == HX_MEM ? mem_members[slot] : sched_members[slot];
	int ops_id = gx_btf__find_by_name_kind(b, tname, BTF_KIND_STRUCT);
	const struct btf_type *ops = ops_id > 0 ? gx_btf__type_by_id(b, (uint32_t)ops_id) : NULL;
	if (!ops) {
		snprintf(why, wlen, "struct %s: not in the object's BTF", tname);
		return -EINVAL;
	}
	const struct btf_member *m = (const void *)(ops + 1);
	const struct btf_type *proto = NULL;
	for (uint32_t i = 0; i < BTF_INFO_VLEN(ops->info); i++) {
		if (strcmp(gx_btf__name_by_offset(b, m[i].name_off), member))
			continue;
		const struct btf_type *pt = gx_btf__type_by_id(b, gx_btf__skip_mods(b, m[i].type));
		if (pt && BTF_INFO_KIND(pt->info) == BTF_KIND_PTR)
			pt = gx_btf__type_by_id(b, gx_btf__skip_mods(b, pt->type));
		if (pt && BTF_INFO_KIND(pt->info) == BTF_KIND_FUNC_PROTO)
			proto = pt;
	}
	if (!proto) {
		snprintf(why, wlen, "struct %s: member %s is not a function pointer in the object's BTF", tname, member);
		return -EINVAL;
	}
	const struct btf_param *par = (const void *)(proto + 1);
	if (BTF_INFO_VLEN(proto->info) != sec->nr_args) {
		snprintf(why, wlen, "struct %s: member %s takes %u arguments in the object's BTF, the executor passes %u",
			 tname, member, BTF_INFO_VLEN(proto->info), sec->nr_args);
		return -EINVAL;
	}
	for (uint32_t i = 0; i < sec->nr_args; i++) {
		const struct btf_type *pt = gx_btf__type_by_id(b, gx_btf__skip_mods(b, par[i].type));
		uint32_t sid = pt && BTF_INFO_KIND(pt->info) == BTF_KIND_PTR ? gx_btf__skip_mods(b, pt->type) : 0;
		const struct btf_type *st = gx_btf__type_by_id(b, sid);
		const char *want = sec->args[i].name + 7; /* after "struct " */
		int64_t size = st ? gx_btf__resolve_size(b, sid) : -1;
		if (!st || BTF_INFO_KIND(st->info) != BTF_KIND_STRUCT || strcmp(gx_btf__name_by_offset(b, st->name_off), want) ||
		    size != (int64_t)sec->args[i].size) {
			snprintf(why, wlen,
				 "struct %s: member %s argument %u is not struct %s * of %u bytes in the object's BTF "
				 "(built against another gpu_ext.h?)",
				 tname, member, i, want, sec->args[i].size);
			return -EINVAL;
		}
	}
	return 0;
}

int hx_verify_prog(const struct hx_prog *prog, int kind, int slot, const struct hx_policy *p,
		   char *why, size_t wlen)
{
	int err = structural(prog, kind, p, why, wlen);
	if (err)
		return err;
	const struct gx_bpf_sec_def *sec = kind == HX_MEM ? &mem_secs[slot] : &sched_secs[slot];
	struct gx_bpf_sec_def s = *sec;
	s.helpers = kind == HX_MEM ? mem_helpers : sched_helpers;
	s.nr_helpers = kind == HX_MEM ? sizeof(mem_helpers) / sizeof(mem_helpers[0])
				      : sizeof(sched_helpers) / sizeof(sched_helpers[0]);
	if ((err = check_signature(p, &s, slot, why, wlen)))
		return err;
	struct gx_bpf_map_desc md[HX_MAX_MAPS];
	for (int i = 0; i < p->nmaps; i++) {
		const struct hx_map *m = &p->maps[i];
		md[i] = (struct gx_bpf_map_desc){
			.name = m->name,
			.type = m->internal || m->type == BPF_MAP_TYPE_ARRAY ? GX_BPF_MAP_ARRAY : GX_BPF_MAP_HASH,
			.key_size = m->internal ? 4 : m->key_size,
			.value_size = m->value_size,
			.max_entries = m->internal ? 1 : m->max_entries,
			.gx_flags = (m->internal ? GX_BPF_MAP_F_INTERNAL : 0) | (m->rdonly ? GX_BPF_MAP_F_RDONLY : 0),
			.init = m->rdonly ? m->data : NULL,
		};
	}
	char msg[256];
	err = gx_bpf_verify_insns(prog->name, prog->insns, prog->cnt, &s, md, (size_t)p->nmaps, NULL, msg, sizeof(msg));
	if (err) {
		/* "prog NAME insn N: reason" → the executor's "program NAME insn N: reason" */
		snprintf(why, wlen, "%s%s", strncmp(msg, "prog ", 5) ? "" : "program ", strncmp(msg, "prog ", 5) ? msg : msg + 5);
		return err;
	}
	return 0;
}
