/* hx_verify.c — user-space checks of a host policy program before it runs.
 *
 * The kernel verifier proves these programs safe symbolically; here the
 * same rules are enforced as a documented split (docs/hostpolicy.md):
 * statically — well-formed instructions, jumps inside the program, no
 * bpf-to-bpf calls, only the map helpers plus the six gpu kfuncs, and each
 * kfunc only in the handlers the kernel allows it in (its "signature");
 * at run time — every load/store outside the interpreter's stack is checked
 * against the memory the call may touch (read-only arguments, map values,
 * global data; .rodata read-only), and a call is bounded to HX_STEP_BUDGET
 * instructions, so a loop the compiler did not bound is an error, not a
 * hang. Violations at run time count as policy errors. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "hostbpf/hx_internal.h"

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
	return id == HX_KF_SET_ATTR || id == HX_KF_REJECT;
}

int hx_verify_prog(const struct hx_prog *prog, int kind, int slot, const struct hx_policy *p,
		   char *why, size_t wlen)
{
	const struct bpf_insn *in = prog->insns;
	(void)slot;
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
				if (in[i].src_reg)
					return bad(why, wlen, prog, i, "bpf-to-bpf calls are not supported");
				if (id >= HX_KF_BASE && id < HX_KF_END) {
					/* kfunc of the other struct_ops kind: the kernel's
					 * kfunc sets refuse it at load */
					if (!kfunc_any(kind, id))
						return bad(why, wlen, prog, i, "kfunc not available to this struct_ops type");
				} else if (id != HX_H_LOOKUP && id != HX_H_UPDATE && id != HX_H_DELETE &&
					   id != HX_H_KTIME && id != HX_H_PIDTGID) {
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
