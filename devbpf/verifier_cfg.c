/* verifier_cfg.c — the structural pass: every instruction well-formed,
 * subprogram boundaries, jumps inside their subprogram and never into the
 * second half of ld_imm64, no path falling off the end, no unreachable
 * instruction, prune points for the exploration. Runs before any abstract
 * interpretation so the later passes can trust the shape of the code. */
#include <stdlib.h>
#include <string.h>

#include "common/gx_util.h"
#include "devbpf/verifier_internal.h"

static bool is_ldimm64(const struct bpf_insn *in)
{
	return in->code == (BPF_LD | BPF_IMM | BPF_DW);
}

static int check_alu(struct venv *env, uint32_t i, const struct bpf_insn *in)
{
	bool is64 = BPF_CLASS(in->code) == BPF_ALU64;
	uint8_t op = BPF_OP(in->code);
	bool k = BPF_SRC(in->code) == BPF_K;
	if (op > BPF_END)
		return verr(env, i, "invalid opcode 0x%02x", in->code);
	if (in->dst_reg == BPF_REG_10)
		return verr(env, i, "frame pointer r10 is read-only");
	if (op == BPF_END) {
		if (in->src_reg || in->off || (in->imm != 16 && in->imm != 32 && in->imm != 64) ||
		    (is64 && !k))
			return verr(env, i, "invalid byte swap");
		return 0;
	}
	if (op == BPF_NEG) {
		if (!k || in->src_reg || in->off || in->imm)
			return verr(env, i, "invalid opcode 0x%02x", in->code);
		return 0;
	}
	if (k ? in->src_reg != 0 : in->imm != 0)
		return verr(env, i, "reserved field is not zero");
	if (in->off) {
		bool ok = false;
		if ((op == BPF_DIV || op == BPF_MOD) && in->off == 1)
			ok = true;
		if (op == BPF_MOV && !k && (in->off == 8 || in->off == 16 || (is64 && in->off == 32)))
			ok = true;
		if (!ok)
			return verr(env, i, "reserved field is not zero");
	}
	if (k && (op == BPF_DIV || op == BPF_MOD) && in->imm == 0)
		return verr(env, i, "division by zero");
	if (k && (op == BPF_LSH || op == BPF_RSH || op == BPF_ARSH) &&
	    (in->imm < 0 || in->imm >= (is64 ? 64 : 32)))
		return verr(env, i, "invalid shift %d", in->imm);
	return 0;
}

static int check_ldimm64(struct venv *env, uint32_t i, const struct bpf_insn *in)
{
	struct gx_bpf_object *obj = env->prog->obj;
	if (i + 1 >= env->cnt)
		return verr(env, i, "ld_imm64 at the end of the program");
	const struct bpf_insn *in2 = in + 1;
	if (in2->code || in2->dst_reg || in2->src_reg || in2->off || in->off)
		return verr(env, i, "invalid ld_imm64 second half");
	if (in->dst_reg == BPF_REG_10)
		return verr(env, i, "frame pointer r10 is read-only");
	switch (in->src_reg) {
	case 0:
		return 0;
	case BPF_PSEUDO_MAP_IDX:
		if (in->imm < 0 || (size_t)in->imm >= obj->map_cnt || in2->imm)
			return verr(env, i, "map index %d out of range", in->imm);
		return 0;
	case BPF_PSEUDO_MAP_IDX_VALUE: {
		if (in->imm < 0 || (size_t)in->imm >= obj->map_cnt)
			return verr(env, i, "map index %d out of range", in->imm);
		const struct gx_bpf_map *m = &obj->maps[in->imm];
		if (m->type != GX_BPF_MAP_ARRAY || m->max_entries != 1)
			return verr(env, i, "direct value access to a map that is not global data");
		if (in2->imm < 0 || (uint32_t)in2->imm >= m->value_size)
			return verr(env, i, "global data offset %d out of range", in2->imm);
		return 0;
	}
	case BPF_PSEUDO_FUNC: {
		int64_t t = (int64_t)i + in->imm + 1;
		if (t < 0 || t >= env->cnt)
			return verr(env, i, "function address out of range");
		return 0;
	}
	default:
		return verr(env, i, "unsupported ld_imm64 source %d", in->src_reg);
	}
}

static int check_insn(struct venv *env, uint32_t i)
{
	const struct bpf_insn *in = &env->insns[i];
	uint8_t cls = BPF_CLASS(in->code);
	if (in->dst_reg > 10 || in->src_reg > 10)
		return verr(env, i, "invalid register r%d", in->dst_reg > 10 ? in->dst_reg : in->src_reg);
	switch (cls) {
	case BPF_ALU:
	case BPF_ALU64:
		return check_alu(env, i, in);
	case BPF_LD:
		if (is_ldimm64(in))
			return check_ldimm64(env, i, in);
		if (BPF_MODE(in->code) == BPF_ABS || BPF_MODE(in->code) == BPF_IND)
			return verr(env, i, "legacy packet access (LD_ABS/LD_IND) is not supported");
		return verr(env, i, "invalid opcode 0x%02x", in->code);
	case BPF_LDX:
		if (BPF_MODE(in->code) != BPF_MEM &&
		    !(BPF_MODE(in->code) == BPF_MEMSX && BPF_SIZE(in->code) != BPF_DW))
			return verr(env, i, "invalid opcode 0x%02x", in->code);
		if (in->imm)
			return verr(env, i, "reserved field is not zero");
		if (in->dst_reg == BPF_REG_10)
			return verr(env, i, "frame pointer r10 is read-only");
		return 0;
	case BPF_ST:
		if (BPF_MODE(in->code) != BPF_MEM)
			return verr(env, i, "invalid opcode 0x%02x", in->code);
		if (in->src_reg)
			return verr(env, i, "reserved field is not zero");
		return 0;
	case BPF_STX:
		if (BPF_MODE(in->code) == BPF_MEM) {
			if (in->imm)
				return verr(env, i, "reserved field is not zero");
			return 0;
		}
		if (BPF_MODE(in->code) == BPF_ATOMIC) {
			if (BPF_SIZE(in->code) != BPF_W && BPF_SIZE(in->code) != BPF_DW)
				return verr(env, i, "invalid atomic operand size");
			switch (in->imm) {
			case BPF_ADD: case BPF_ADD | BPF_FETCH:
			case BPF_AND: case BPF_AND | BPF_FETCH:
			case BPF_OR: case BPF_OR | BPF_FETCH:
			case BPF_XOR: case BPF_XOR | BPF_FETCH:
			case BPF_XCHG: case BPF_CMPXCHG:
				return 0;
			}
			return verr(env, i, "invalid atomic operation 0x%x", in->imm);
		}
		return verr(env, i, "invalid opcode 0x%02x", in->code);
	case BPF_JMP:
	case BPF_JMP32: {
		uint8_t op = BPF_OP(in->code);
		if (op == BPF_CALL) {
			if (cls != BPF_JMP || in->off || in->dst_reg || BPF_SRC(in->code) != BPF_K)
				return verr(env, i, "invalid opcode 0x%02x", in->code);
			if (in->src_reg == BPF_PSEUDO_KFUNC_CALL)
				return verr(env, i, "kfunc calls are not supported");
			if (in->src_reg == BPF_PSEUDO_CALL) {
				int64_t t = (int64_t)i + in->imm + 1;
				if (t < 0 || t >= env->cnt)
					return verr(env, i, "call to insn %lld out of range", (long long)t);
				return 0;
			}
			if (in->src_reg)
				return verr(env, i, "invalid call");
			return 0;
		}
		if (op == BPF_EXIT) {
			if (cls != BPF_JMP || in->src_reg || in->dst_reg || in->off || in->imm ||
			    BPF_SRC(in->code) != BPF_K)
				return verr(env, i, "invalid opcode 0x%02x", in->code);
			return 0;
		}
		if (op == BPF_JA) {
			if (in->src_reg || in->dst_reg || BPF_SRC(in->code) != BPF_K ||
			    (cls == BPF_JMP ? in->imm != 0 : in->off != 0))
				return verr(env, i, "invalid opcode 0x%02x", in->code);
			return 0;
		}
		if (op > BPF_JSLE)
			return verr(env, i, "invalid opcode 0x%02x", in->code); /* incl. may_goto */
		if (BPF_SRC(in->code) == BPF_K ? in->src_reg != 0 : in->imm != 0)
			return verr(env, i, "reserved field is not zero");
		return 0;
	}
	}
	return verr(env, i, "invalid opcode 0x%02x", in->code);
}

static int64_t jump_target(const struct bpf_insn *in, uint32_t i)
{
	if (BPF_OP(in->code) == BPF_JA && BPF_CLASS(in->code) == BPF_JMP32)
		return (int64_t)i + in->imm + 1;
	return (int64_t)i + in->off + 1;
}

static bool is_cond_jmp(const struct bpf_insn *in)
{
	uint8_t cls = BPF_CLASS(in->code), op = BPF_OP(in->code);
	return (cls == BPF_JMP || cls == BPF_JMP32) && op != BPF_JA && op != BPF_CALL && op != BPF_EXIT;
}

int vcfg_check(struct venv *env)
{
	uint32_t n = env->cnt;
	if (n == 0)
		return verr(env, 0, "empty program");
	uint8_t *second = calloc(n, 1);
	uint32_t *starts = malloc((n + 1) * sizeof(*starts));
	uint8_t *is_cb = calloc(n, 1);
	uint32_t nstarts = 0;
	int err = 0;
	env->prune_point = calloc(n, 1);
	env->is_jmp_target = calloc(n, 1);
	env->subprog_of = malloc(n * sizeof(*env->subprog_of));
	if (!second || !starts || !is_cb || !env->prune_point || !env->is_jmp_target || !env->subprog_of) {
		err = -ENOMEM;
		goto out;
	}
	starts[nstarts++] = 0;
	for (uint32_t i = 0; i < n && !err; i++) {
		if (second[i])
			continue;
		err = check_insn(env, i);
		if (err)
			break;
		const struct bpf_insn *in = &env->insns[i];
		if (is_ldimm64(in)) {
			second[i + 1] = 1;
			if (in->src_reg == BPF_PSEUDO_FUNC) {
				uint32_t t = (uint32_t)((int64_t)i + in->imm + 1);
				starts[nstarts++] = t;
				is_cb[t] = 1;
			}
		} else if (in->code == (BPF_JMP | BPF_CALL) && in->src_reg == BPF_PSEUDO_CALL) {
			starts[nstarts++] = (uint32_t)((int64_t)i + in->imm + 1);
		}
	}
	if (err)
		goto out;
	/* subprograms */
	qsort(starts, nstarts, sizeof(*starts), gx_cmp_u32);
	uint32_t u = 0;
	for (uint32_t i = 0; i < nstarts; i++)
		if (u == 0 || starts[u - 1] != starts[i])
			starts[u++] = starts[i];
	nstarts = u;
	env->subprogs = calloc(nstarts, sizeof(*env->subprogs));
	if (!env->subprogs) {
		err = -ENOMEM;
		goto out;
	}
	env->nsubprogs = nstarts;
	for (uint32_t s = 0; s < nstarts; s++) {
		if (second[starts[s]]) {
			err = verr(env, starts[s], "call into the middle of ld_imm64");
			goto out;
		}
		env->subprogs[s].start = starts[s];
		env->subprogs[s].end = s + 1 < nstarts ? starts[s + 1] : n;
		env->subprogs[s].is_callback = is_cb[starts[s]];
		env->subprogs[s].calls = calloc(nstarts, 1);
		if (!env->subprogs[s].calls) {
			err = -ENOMEM;
			goto out;
		}
		for (uint32_t i = env->subprogs[s].start; i < env->subprogs[s].end; i++)
			env->subprog_of[i] = (int32_t)s;
	}
	/* jumps: in range, inside their subprogram, not into ld_imm64 */
	for (uint32_t i = 0; i < n; i++) {
		const struct bpf_insn *in = &env->insns[i];
		if (second[i])
			continue;
		uint8_t cls = BPF_CLASS(in->code);
		if ((cls != BPF_JMP && cls != BPF_JMP32) || BPF_OP(in->code) == BPF_CALL ||
		    BPF_OP(in->code) == BPF_EXIT)
			continue;
		int64_t t = jump_target(in, i);
		if (t < 0 || t >= n) {
			err = verr(env, i, "jump out of range to insn %lld", (long long)t);
			goto out;
		}
		if (second[t]) {
			err = verr(env, i, "jump into the middle of ld_imm64");
			goto out;
		}
		if (env->subprog_of[t] != env->subprog_of[i]) {
			err = verr(env, i, "jump out of subprogram");
			goto out;
		}
		env->is_jmp_target[t] = 1;
		env->prune_point[t] = 1;
		if (is_cond_jmp(in) && i + 1 < n)
			env->prune_point[i + 1] = 1;
	}
	/* reachability: DFS over successors; calls reach their target too */
	uint8_t *seen = calloc(n, 1);
	uint32_t *stack = malloc((n + 1) * sizeof(*stack));
	if (!seen || !stack) {
		free(seen);
		free(stack);
		err = -ENOMEM;
		goto out;
	}
	uint32_t sp = 0;
	stack[sp++] = 0;
	seen[0] = 1;
	while (sp && !err) {
		uint32_t i = stack[--sp];
		const struct bpf_insn *in = &env->insns[i];
		uint32_t end = env->subprogs[env->subprog_of[i]].end;
		int64_t succ[2];
		int ns = 0;
		uint8_t cls = BPF_CLASS(in->code), op = BPF_OP(in->code);
		if (is_ldimm64(in)) {
			succ[ns++] = i + 2;
			if (in->src_reg == BPF_PSEUDO_FUNC)
				succ[ns++] = (int64_t)i + in->imm + 1;
		} else if ((cls == BPF_JMP || cls == BPF_JMP32) && op == BPF_EXIT) {
			ns = 0;
		} else if ((cls == BPF_JMP || cls == BPF_JMP32) && op == BPF_JA) {
			succ[ns++] = jump_target(in, i);
		} else if (cls == BPF_JMP && op == BPF_CALL) {
			succ[ns++] = i + 1;
			if (in->src_reg == BPF_PSEUDO_CALL)
				succ[ns++] = (int64_t)i + in->imm + 1;
		} else if (is_cond_jmp(in)) {
			succ[ns++] = i + 1;
			succ[ns++] = jump_target(in, i);
		} else {
			succ[ns++] = i + 1;
		}
		for (int k = 0; k < ns; k++) {
			int64_t t = succ[k];
			bool fall = !(cls == BPF_JMP && op == BPF_CALL && k == 1) &&
				    !(is_ldimm64(in) && k == 1);
			if (fall && t >= end) {
				err = verr(env, i, "fallthrough off the end of the %s",
					   env->subprog_of[i] ? "subprogram" : "program");
				break;
			}
			if (!seen[t]) {
				seen[t] = 1;
				stack[sp++] = (uint32_t)t;
			}
		}
	}
	for (uint32_t i = 0; i < n && !err; i++) {
		if (!seen[i] && !second[i])
			err = verr(env, i, "unreachable insn");
	}
	free(seen);
	free(stack);
	for (uint32_t s = 0; s < env->nsubprogs; s++)
		env->prune_point[env->subprogs[s].start] = 1;
out:
	free(second);
	free(starts);
	free(is_cb);
	return err;
}

/* Register liveness (r0-r9), backward over each subprogram: a register not
 * read before being written from an insn on does not matter there, so state
 * pruning ignores it (verifier.c). Calls use r1-r5 and define r0-r5; exit
 * uses r0. */
int vcfg_liveness(struct venv *env)
{
	uint32_t n = env->cnt;
	env->live = calloc(n, sizeof(*env->live));
	if (!env->live)
		return -ENOMEM;
	bool changed = true;
	int rounds = 0;
	while (changed && rounds++ < 1000) {
		changed = false;
		for (uint32_t k = n; k-- > 0;) {
			const struct bpf_insn *in = &env->insns[k];
			uint8_t cls = BPF_CLASS(in->code), op = BPF_OP(in->code);
			uint16_t out = 0, use = 0, def = 0;
			uint32_t end = env->subprogs[env->subprog_of[k]].end;
			if (k > 0 && is_ldimm64(&env->insns[k - 1]))
				continue; /* second half */
			bool fall = true;
			switch (cls) {
			case BPF_ALU:
			case BPF_ALU64:
				def = 1u << in->dst_reg;
				if (op != BPF_MOV)
					use |= 1u << in->dst_reg;
				if (BPF_SRC(in->code) == BPF_X && op != BPF_END && op != BPF_NEG)
					use |= 1u << in->src_reg;
				break;
			case BPF_LD:
				def = 1u << in->dst_reg;
				break;
			case BPF_LDX:
				use = 1u << in->src_reg;
				def = 1u << in->dst_reg;
				break;
			case BPF_ST:
				use = 1u << in->dst_reg;
				break;
			case BPF_STX:
				use = (1u << in->dst_reg) | (1u << in->src_reg);
				if (BPF_MODE(in->code) == BPF_ATOMIC) {
					if (in->imm == BPF_CMPXCHG)
						use |= 1u, def = 1u;
					else if ((in->imm & BPF_FETCH) || in->imm == BPF_XCHG)
						def = 1u << in->src_reg, use |= 1u << in->src_reg;
				}
				break;
			case BPF_JMP:
			case BPF_JMP32:
				if (op == BPF_EXIT) {
					use = 1u;
					fall = false;
				} else if (op == BPF_CALL) {
					use = 0x3e;
					def = 0x3f;
				} else if (op == BPF_JA) {
					fall = false;
					int64_t t = (int64_t)k + (cls == BPF_JMP32 ? in->imm : in->off) + 1;
					out |= env->live[t];
				} else {
					use = 1u << in->dst_reg;
					if (BPF_SRC(in->code) == BPF_X)
						use |= 1u << in->src_reg;
					out |= env->live[(int64_t)k + in->off + 1];
				}
				break;
			}
			uint32_t nx = k + (is_ldimm64(in) ? 2 : 1);
			if (fall && nx < end)
				out |= env->live[nx];
			uint16_t li = (uint16_t)(((out & ~def) | use) & 0x3ff);
			if (li != env->live[k]) {
				env->live[k] = li;
				changed = true;
			}
		}
	}
	return 0;
}
