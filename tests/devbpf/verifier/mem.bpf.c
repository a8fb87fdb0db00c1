/* Memory safety: context (read-only, inside struct gdev_ctx, aligned),
 * stack (512 bytes, initialised before read), map values (inside value_size,
 * after the null check), global data (.rodata read-only). */
#include "gx_test_bpf.h"

struct val {
	__u64 cnt;
	__u64 bytes;
};

struct {
	__uint(type, GDEV_MAP_HASH);
	__uint(max_entries, 128);
	__type(key, __u64);
	__type(value, struct val);
} stats SEC(".maps");

struct {
	__uint(type, GDEV_MAP_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64[8]);
} tab SEC(".maps");

const volatile __u32 nslots = 4;
__u64 counter;
__u64 seeded = 5;

SEC("gdev/mem/access") __description("context read past the end") __failure __msg("context access out of bounds")
__naked int mem_ctx_oob(void)
{
	asm volatile("r0 = *(u32 *)(r1 + 120); r0 = 0; exit;" ::: __clobber_all);
}

SEC("gdev/mem/access") __description("misaligned context read") __failure __msg("misaligned context access")
__naked int mem_ctx_misaligned(void)
{
	asm volatile("r0 = *(u32 *)(r1 + 2); r0 = 0; exit;" ::: __clobber_all);
}

SEC("gdev/mem/access") __description("write to the context") __failure __msg("write to context is not allowed")
__naked int mem_ctx_write(void)
{
	asm volatile("r2 = 1; *(u32 *)(r1 + 24) = r2; r0 = 0; exit;" ::: __clobber_all);
}

SEC("gdev/mem/access") __description("context pointer with a variable offset") __failure __msg("variable offset on context pointer")
__naked int mem_ctx_varoff(void)
{
	asm volatile("r2 = *(u32 *)(r1 + 24);"
		     "r2 &= 8;"
		     "r1 += r2;"
		     "r0 = *(u32 *)(r1 + 0);"
		     "r0 = 0; exit;" ::: __clobber_all);
}

SEC("gdev/mem/access") __description("negative context offset") __failure __msg("context access out of bounds")
__naked int mem_ctx_negative(void)
{
	asm volatile("r0 = *(u64 *)(r1 - 8); r0 = 0; exit;" ::: __clobber_all);
}

SEC("gdev/mem/access") __description("stack write below 512 bytes") __failure __msg("stack access out of bounds")
__naked int mem_stack_oob(void)
{
	asm volatile("r1 = 0; *(u64 *)(r10 - 520) = r1; r0 = 0; exit;" ::: __clobber_all);
}

SEC("gdev/mem/access") __description("stack write above the frame") __failure __msg("stack access out of bounds")
__naked int mem_stack_above(void)
{
	asm volatile("r1 = 0; *(u64 *)(r10 + 0) = r1; r0 = 0; exit;" ::: __clobber_all);
}

SEC("gdev/mem/access") __description("read of uninitialised stack") __failure __msg("read of uninitialized stack")
__naked int mem_stack_uninit(void)
{
	asm volatile("r1 = 0; *(u32 *)(r10 - 8) = r1; r0 = *(u64 *)(r10 - 8); r0 = 0; exit;" ::: __clobber_all);
}

SEC("gdev/mem/access") __description("uninitialised stack as a map key") __failure __msg("read of uninitialized stack")
__naked int mem_stack_uninit_key(void)
{
	asm volatile("r2 = r10; r2 += -8; r1 = %[stats] ll; call %[bpf_map_lookup_elem]; r0 = 0; exit;"
		     :
		     : __imm_addr(stats), __imm(bpf_map_lookup_elem)
		     : __clobber_all);
}

SEC("gdev/mem/access") __description("map value used without a null check") __failure __msg("missing null check")
__naked int mem_no_null_check(void)
{
	asm volatile("r1 = 0; *(u64 *)(r10 - 8) = r1; r2 = r10; r2 += -8;"
		     "r1 = %[stats] ll; call %[bpf_map_lookup_elem];"
		     "r1 = *(u64 *)(r0 + 0); r0 = 0; exit;"
		     :
		     : __imm_addr(stats), __imm(bpf_map_lookup_elem)
		     : __clobber_all);
}

SEC("gdev/mem/access") __description("map value read past value_size") __failure __msg("map value access out of bounds")
__naked int mem_value_oob(void)
{
	asm volatile("r1 = 0; *(u64 *)(r10 - 8) = r1; r2 = r10; r2 += -8;"
		     "r1 = %[stats] ll; call %[bpf_map_lookup_elem];"
		     "if r0 == 0 goto 1f;"
		     "r1 = *(u64 *)(r0 + 16);"
		     "1: r0 = 0; exit;"
		     :
		     : __imm_addr(stats), __imm(bpf_map_lookup_elem)
		     : __clobber_all);
}

SEC("gdev/mem/access") __description("array index not bounded") __failure __msg("map value access out of bounds")
int mem_index_unbounded(struct gdev_ctx *ctx)
{
	__u32 k = 0;
	__u64 *row = bpf_map_lookup_elem(&tab, &k);
	if (!row)
		return 0;
	__u32 i = ctx->size;
	row[i] += 1;
	return 0;
}

SEC("gdev/mem/access") __description("misaligned map value access") __failure __msg("misaligned map value access")
__naked int mem_value_misaligned(void)
{
	asm volatile("r1 = 0; *(u64 *)(r10 - 8) = r1; r2 = r10; r2 += -8;"
		     "r1 = %[stats] ll; call %[bpf_map_lookup_elem];"
		     "if r0 == 0 goto 1f;"
		     "r1 = *(u64 *)(r0 + 4);"
		     "1: r0 = 0; exit;"
		     :
		     : __imm_addr(stats), __imm(bpf_map_lookup_elem)
		     : __clobber_all);
}

SEC("gdev/mem/access") __description("write to .rodata") __failure __msg("write into read-only map")
__naked int mem_rodata_write(void)
{
	asm volatile("r1 = %[nslots] ll; r2 = 9; *(u32 *)(r1 + 0) = r2; r0 = 0; exit;"
		     :
		     : __imm_addr(nslots)
		     : __clobber_all);
}

SEC("gdev/mem/access") __description("pointer stored into a map value") __failure __msg("storing a pointer into a map")
__naked int mem_ptr_leak(void)
{
	asm volatile("r1 = %[counter] ll; *(u64 *)(r1 + 0) = r10; r0 = 0; exit;"
		     :
		     : __imm_addr(counter)
		     : __clobber_all);
}

SEC("gdev/mem/access") __description("scalar used as a pointer") __failure __msg("invalid memory access through scalar")
__naked int mem_scalar_deref(void)
{
	asm volatile("r1 = *(u64 *)(r1 + 16); r0 = *(u64 *)(r1 + 0); r0 = 0; exit;" ::: __clobber_all);
}

SEC("gdev/mem/access") __description("pointer arithmetic before the null check") __failure __msg("missing null check")
__naked int mem_null_arith(void)
{
	asm volatile("r1 = 0; *(u64 *)(r10 - 8) = r1; r2 = r10; r2 += -8;"
		     "r1 = %[stats] ll; call %[bpf_map_lookup_elem];"
		     "r0 += 8; r0 = 0; exit;"
		     :
		     : __imm_addr(stats), __imm(bpf_map_lookup_elem)
		     : __clobber_all);
}

SEC("gdev/mem/access") __description("partial store of a pointer to the stack") __failure __msg("partial store of a pointer")
__naked int mem_partial_ptr(void)
{
	asm volatile("*(u32 *)(r10 - 8) = r1; r0 = 0; exit;" ::: __clobber_all);
}

SEC("gdev/mem/access") __description("every context field") __success
int mem_ctx_all(struct gdev_ctx *ctx)
{
	__u64 s = ctx->kernel_id ^ ctx->launch_id ^ ctx->addr;
	s += ctx->size + ctx->op + ctx->space + ctx->active_mask + ctx->nr_active + ctx->hook;
	s += ctx->ctaid_x + ctx->ctaid_y + ctx->ctaid_z + ctx->nctaid_x + ctx->nctaid_y + ctx->nctaid_z;
	s += ctx->tid_x + ctx->tid_y + ctx->tid_z + ctx->ntid_x + ctx->ntid_y + ctx->ntid_z;
	s += ctx->smid + ctx->warpid + ctx->leader_lane + ctx->unit;
	counter = s;
	return 0;
}

SEC("gdev/mem/access") __description("count bytes per kernel in a hash map") __success
int mem_count(struct gdev_ctx *ctx)
{
	__u64 k = ctx->kernel_id;
	struct val *v = bpf_map_lookup_elem(&stats, &k);
	if (v) {
		v->cnt++;
		v->bytes += ctx->size * ctx->nr_active;
	} else {
		struct val nv = { 1, ctx->size };
		bpf_map_update_elem(&stats, &k, &nv, GDEV_NOEXIST);
	}
	return 0;
}

SEC("gdev/mem/access") __description("array index bounded by a check") __success
int mem_index_bounded(struct gdev_ctx *ctx)
{
	__u32 k = 1;
	__u64 *row = bpf_map_lookup_elem(&tab, &k);
	if (!row)
		return 0;
	__u32 i = ctx->size;
	if (i < 8)
		row[i] += 1;
	return 0;
}

SEC("gdev/mem/access") __description("array index bounded by a mask") __success
int mem_index_masked(struct gdev_ctx *ctx)
{
	__u32 k = ctx->smid & 3;
	__u64 *row = bpf_map_lookup_elem(&tab, &k);
	if (row)
		row[ctx->warpid & 7] = ctx->addr;
	return 0;
}

SEC("gdev/mem/access") __description("global data: .rodata knob, .bss and .data") __success
int mem_globals(struct gdev_ctx *ctx)
{
	if (nslots > 2)
		counter += seeded;
	seeded = ctx->addr;
	return 0;
}

SEC("gdev/mem/access") __description("stack buffer written then read") __success
int mem_stack_buf(struct gdev_ctx *ctx)
{
	volatile __u32 buf[4];
	buf[0] = ctx->smid;
	buf[1] = ctx->warpid;
	buf[2] = buf[0] + buf[1];
	buf[3] = 0;
	counter = buf[2] + buf[3];
	return 0;
}

SEC("gdev/mem/access") __description("atomic add on a map value") __success
int mem_atomic(struct gdev_ctx *ctx)
{
	__u64 k = 7;
	struct val *v = bpf_map_lookup_elem(&stats, &k);
	if (v)
		__sync_fetch_and_add(&v->cnt, ctx->nr_active);
	return 0;
}
