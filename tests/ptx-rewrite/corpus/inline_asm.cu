// Inline PTX the way nvcc pastes it: scoped { } blocks with their own
// registers, predicates, labels made unique with %=, special registers,
// vector operands, and constructs the compiler itself seldom emits.
#include <cstdint>

__global__ void asm_special_regs(unsigned *out)
{
	unsigned smid, warpid, laneid, nsm, lt;
	uint64_t t0, t1;
	asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
	asm volatile("mov.u32 %0, %%warpid;" : "=r"(warpid));
	asm volatile("mov.u32 %0, %%laneid;" : "=r"(laneid));
	asm volatile("mov.u32 %0, %%nsmid;" : "=r"(nsm));
	asm volatile("mov.u32 %0, %%lanemask_lt;" : "=r"(lt));
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
	asm volatile("mov.u64 %0, %%clock64;" : "=l"(t1));
	out[threadIdx.x] = smid + warpid + laneid + nsm + lt + (unsigned)(t1 - t0);
}

__global__ void asm_scopes_preds(const int *in, int *out)
{
	int v = in[threadIdx.x], r;
	asm("{\n\t"
	    ".reg .pred %%p<3>;\n\t"
	    ".reg .s32 t;\n\t"
	    "setp.gt.s32 %%p0, %1, 0;\n\t"
	    "setp.lt.and.s32 %%p1|%%p2, %1, 100, %%p0;\n\t"
	    "selp.s32 t, %1, 0, %%p1;\n\t"
	    "@!%%p2 neg.s32 t, t;\n\t"
	    "mov.s32 %0, t;\n\t"
	    "}"
	    : "=r"(r)
	    : "r"(v));
	asm volatile("{\n\t"
		     ".reg .pred p;\n\t"
		     "setp.eq.s32 p, %0, 7;\n\t"
		     "@p bra.uni SKIP%=;\n\t"
		     "membar.gl;\n\t"
		     "SKIP%=:\n\t"
		     "}" ::"r"(r));
	out[threadIdx.x] = r;
}

__global__ void asm_vectors_memory(float4 *p, uint64_t *q)
{
	float4 v;
	asm volatile("ld.global.nc.v4.f32 {%0, %1, %2, %3}, [%4];"
		     : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
		     : "l"(p + threadIdx.x));
	asm volatile("st.global.wb.v4.f32 [%0+16], {%1, %2, %3, %4};" ::"l"(p + threadIdx.x),
		     "f"(v.w), "f"(v.z), "f"(v.y), "f"(v.x)
		     : "memory");
	uint64_t old;
	asm volatile("atom.global.gpu.relaxed.exch.b64 %0, [%1], %2;"
		     : "=l"(old)
		     : "l"(q), "l"((uint64_t)threadIdx.x));
	asm volatile("red.global.sys.release.add.u64 [%0], %1;" ::"l"(q + 1), "l"(old) : "memory");
	asm volatile("fence.acq_rel.gpu;" ::: "memory");
	asm volatile("fence.sc.sys;" ::: "memory");
	asm volatile("membar.cta;" ::: "memory");
	unsigned u;
	asm volatile("ld.volatile.global.u32 %0, [%1];" : "=r"(u) : "l"(q));
	asm volatile("ld.relaxed.gpu.global.L1::no_allocate.u32 %0, [%1];" : "=r"(u) : "l"(q));
	asm volatile("prefetch.global.L2::evict_last [%0];" ::"l"(q));
	asm volatile("st.global.L1::no_allocate.b32 [%0], %1;" ::"l"(q), "r"(u));
	uint64_t pol;
	asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
	asm volatile("ld.global.L2::cache_hint.b32 %0, [%1], %2;" : "=r"(u) : "l"(q), "l"(pol));
	q[2 + threadIdx.x] = u;
}

__global__ void asm_jump_table(const int *sel, int *out)
{
	int r;
	asm volatile("{\n\t"
		     ".reg .u32 idx;\n\t"
		     "and.b32 idx, %1, 3;\n\t"
		     "JT%=: .branchtargets C0_%=, C1_%=, C2_%=, C3_%=;\n\t"
		     "brx.idx idx, JT%=;\n\t"
		     "C0_%=: mov.u32 %0, 10; bra.uni END_%=;\n\t"
		     "C1_%=: mov.u32 %0, 11; bra.uni END_%=;\n\t"
		     "C2_%=: mov.u32 %0, 12; bra.uni END_%=;\n\t"
		     "C3_%=: mov.u32 %0, 13;\n\t"
		     "END_%=:\n\t"
		     "}"
		     : "=r"(r)
		     : "r"(sel[threadIdx.x]));
	out[threadIdx.x] = r;
}
