/* Reference interpreter: the shared ALU/jump table, helpers through a
 * caller table, map references, bpf_loop, and the error paths. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpuext/gdev_helpers.h"
#include "devbpf/gx_bpf.h"
#include "tests/devbpf/alu_table.h"
#include "tests/gx_test.h"

static uint64_t h_add(void *user, uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e)
{
	(void)c, (void)d, (void)e;
	(*(int *)user)++;
	return a * 2 + b;
}

static uint64_t map_base[4] = { 100, 200, 300, 400 };
static uint64_t h_map_addr(void *user, uint32_t idx, uint32_t off, bool value)
{
	(void)user;
	if (value)
		return (uint64_t)(uintptr_t)((char *)&map_base[idx] + off);
	return 0x1000 + idx;
}

static bool deny_all(void *user, uint64_t addr, uint32_t size, bool write)
{
	(void)user, (void)addr, (void)size, (void)write;
	return false;
}

#define RUN(arr, o, r) gx_bpf_interp_run(arr, sizeof(arr) / sizeof(arr[0]), 0, o, r)

int main(void)
{
	size_t n = sizeof(gx_alu_cases) / sizeof(gx_alu_cases[0]);
	int bad = 0;
	for (size_t i = 0; i < n; i++) {
		const struct gx_alu_case *c = &gx_alu_cases[i];
		uint64_t r = 0;
		int err = gx_bpf_interp_run(c->insns, gx_alu_case_len(c), 0, NULL, &r);
		if (err || r != c->expect) {
			bad++;
			printf("not ok - alu table: %s: err %d r0 %#llx, want %#llx\n", c->name, err,
			       (unsigned long long)r, (unsigned long long)c->expect);
		}
	}
	GX_CHECK(bad == 0, "alu table: %zu cases agree with the interpreter", n);
	GX_CHECK(n >= 100, "alu table has >= 100 cases (%zu)", n);

	int calls = 0;
	struct gx_bpf_helper_entry helpers[] = { { 0x7001, h_add } };
	struct gx_bpf_interp_opts o = { .sz = sizeof(o), .helpers = helpers, .nr_helpers = 1,
					.user = &calls, .map_addr = h_map_addr };
	uint64_t r = 0;
	struct bpf_insn call[] = { GX_MOV64_IMM(1, 20), GX_MOV64_IMM(2, 2), GX_CALL_HELPER(0x7001),
				   GX_EXIT() };
	GX_CHECK(RUN(call, &o, &r) == 0 && r == 42 && calls == 1, "helper call through the table (r0 %llu)",
		 (unsigned long long)r);
	struct bpf_insn clob[] = { GX_MOV64_IMM(1, 20), GX_MOV64_IMM(2, 2), GX_CALL_HELPER(0x7001),
				   GX_MOV64_REG(0, 1), GX_EXIT() };
	GX_CHECK(RUN(clob, &o, &r) == 0 && r != 20, "helper call clobbers r1-r5");
	struct bpf_insn unk[] = { GX_CALL_HELPER(0x7002), GX_EXIT() };
	GX_CHECK(RUN(unk, &o, &r) == -EINVAL, "unknown helper is -EINVAL");
	struct bpf_insn mapref[] = { GX_LD_MAP(0, 3), GX_EXIT() };
	GX_CHECK(RUN(mapref, &o, &r) == 0 && r == 0x1003, "ld_imm64 map index resolved by map_addr");
	struct bpf_insn mapval[] = { GX_LD_MAP_VALUE(1, 2, 0), GX_LDX(BPF_DW, 0, 1, 0), GX_EXIT() };
	GX_CHECK(RUN(mapval, &o, &r) == 0 && r == 300, "ld_imm64 map value resolved and readable");
	o.mem_ok = deny_all;
	GX_CHECK(RUN(mapval, &o, &r) == -EFAULT, "mem_ok refusing an access gives -EFAULT");
	struct bpf_insn stack_ok[] = { GX_ST(BPF_DW, 10, -512, 3), GX_LDX(BPF_DW, 0, 10, -512), GX_EXIT() };
	GX_CHECK(RUN(stack_ok, &o, &r) == 0 && r == 3, "own stack is always accessible (512 bytes)");
	o.mem_ok = NULL;
	struct bpf_insn stack_oob[] = { GX_ST(BPF_DW, 10, -520, 3), GX_MOV64_IMM(0, 0), GX_EXIT() };
	GX_CHECK(RUN(stack_oob, &o, &r) == -EFAULT, "store below the stack is -EFAULT");
	struct bpf_insn stack_up[] = { GX_LDX(BPF_DW, 0, 10, 0), GX_EXIT() };
	GX_CHECK(RUN(stack_up, &o, &r) == -EFAULT, "load above the frame-0 stack is -EFAULT");

	/* bpf_loop: sum i for i < 10 into the callback ctx (a stack slot) */
	struct bpf_insn loop[] = {
		GX_ST(BPF_DW, 10, -8, 0),
		GX_MOV64_IMM(1, 10),
		GX_LD_IMM64_RAW(2, BPF_PSEUDO_FUNC, 7, 0), /* callback at 2+7+1 = 10 */
		GX_MOV64_REG(3, 10),
		GX_ALU64_IMM(BPF_ADD, 3, -8),
		GX_MOV64_IMM(4, 0),
		GX_CALL_HELPER(GDEV_HELPER_LOOP),
		GX_LDX(BPF_DW, 0, 10, -8),
		GX_EXIT(),
		/* callback(i = r1, ctx = r2) */
		GX_LDX(BPF_DW, 3, 2, 0),
		GX_ALU64_REG(BPF_ADD, 3, 1),
		GX_STX(BPF_DW, 2, 3, 0),
		GX_MOV64_IMM(0, 0),
		GX_EXIT(),
	};
	GX_CHECK(RUN(loop, &o, &r) == 0 && r == 45, "bpf_loop runs the callback 10 times (sum %llu)",
		 (unsigned long long)r);

	struct bpf_insn badop[] = { GX_INSN(0xff, 0, 0, 0, 0), GX_EXIT() };
	GX_CHECK(RUN(badop, NULL, &r) == -EINVAL, "unknown opcode is -EINVAL");
	struct bpf_insn fall[] = { GX_MOV64_IMM(0, 1) };
	GX_CHECK(RUN(fall, NULL, &r) == -EINVAL, "falling off the end is -EINVAL");
	struct bpf_insn jout[] = { GX_JA(5), GX_EXIT() };
	GX_CHECK(RUN(jout, NULL, &r) == -EINVAL, "jump out of range is -EINVAL");
	struct bpf_insn inf[] = { GX_JA(-1), GX_EXIT() };
	struct gx_bpf_interp_opts lim = { .sz = sizeof(lim), .max_steps = 1000 };
	GX_CHECK(RUN(inf, &lim, &r) == -E2BIG, "step limit stops an endless loop");
	struct bpf_insn rec[] = { GX_CALL_REL(-1), GX_EXIT() };
	GX_CHECK(RUN(rec, NULL, &r) == -EOVERFLOW, "unbounded recursion is -EOVERFLOW");
	struct bpf_insn ldabs[] = { GX_INSN(BPF_LD | BPF_ABS | BPF_W, 0, 0, 0, 0), GX_EXIT() };
	GX_CHECK(RUN(ldabs, NULL, &r) == -EINVAL, "legacy LD_ABS is -EINVAL");
	struct bpf_insn r10w[] = { GX_MOV64_IMM(10, 0), GX_EXIT() };
	GX_CHECK(RUN(r10w, NULL, &r) == -EINVAL, "writing r10 is -EINVAL");
	struct { struct gx_bpf_interp_opts o; uint64_t extra; } big = { { .sz = sizeof(big) }, 1 };
	GX_CHECK(RUN(call, &big.o, &r) == -EINVAL, "options with a non-zero unknown tail are refused");
	big.extra = 0;
	GX_CHECK(RUN(fall, &big.o, &r) == -EINVAL && errno == EINVAL, "errno is set on failure");
	return gx_test_done();
}
