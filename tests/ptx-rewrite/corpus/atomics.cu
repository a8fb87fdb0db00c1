// Atomics of every kind: add/cas/exch/min/max/and/or/xor/inc/dec on 32/64
// bits, float/double/half/bf16 adds, scopes (block, device, system), and
// reductions (results unused: nvcc emits red.*).
#include <cuda_fp16.h>
#include <cuda_bf16.h>

__global__ void atom_int32(int *p, unsigned *u, int v)
{
	int r = 0;
	r += atomicAdd(p, v);
	r += atomicSub(p + 1, v);
	r += atomicExch(p + 2, v);
	r += atomicMin(p + 3, v);
	r += atomicMax(p + 4, v);
	r += atomicCAS(p + 5, v, r);
	r += atomicAnd(p + 6, v);
	r += atomicOr(p + 7, v);
	r += atomicXor(p + 8, v);
	r += atomicInc(u, 100u);
	r += atomicDec(u + 1, 100u);
	r += atomicMin(u + 2, (unsigned)v);
	p[9 + threadIdx.x] = r;
}

__global__ void atom_int64(unsigned long long *p, long long *s, unsigned long long v)
{
	unsigned long long r = 0;
	r += atomicAdd(p, v);
	r += atomicExch(p + 1, v);
	r += atomicCAS(p + 2, v, r);
	r += atomicMin(p + 3, v);
	r += atomicMax(p + 4, v);
	r += atomicAnd(p + 5, v);
	r += atomicOr(p + 6, v);
	r += atomicXor(p + 7, v);
	r += atomicMin(s, (long long)v);
	r += atomicMax(s + 1, (long long)v);
	p[8 + threadIdx.x] = r;
}

__global__ void atom_float(float *f, double *d, __half *h, __half2 *h2, __nv_bfloat16 *b,
			   __nv_bfloat162 *b2, float v)
{
	float r = atomicAdd(f, v) + atomicExch(f + 1, v);
	double rd = atomicAdd(d, (double)v);
	__half rh = atomicAdd(h, __float2half(v));
	__half2 rh2 = atomicAdd(h2, __floats2half2_rn(v, v));
	__nv_bfloat16 rb = atomicAdd(b, __float2bfloat16(v));
	__nv_bfloat162 rb2 = atomicAdd(b2, __floats2bfloat162_rn(v, v));
#if __CUDA_ARCH__ >= 900
	float2 r2 = atomicAdd((float2 *)(f + 2), make_float2(v, v));
	float4 r4 = atomicAdd((float4 *)(f + 4), make_float4(v, v, v, v));
	r += r2.x + r4.w;
#endif
	f[8 + threadIdx.x] = r + (float)rd + __half2float(rh) + __low2float(rh2) +
			     __bfloat162float(rb) + __low2float(rb2);
}

__global__ void atom_scopes(int *p, unsigned long long *q, float *f, int v)
{
	int r = atomicAdd_block(p, v) + atomicAdd_system(p + 1, v);
	r += atomicCAS_block(p + 2, v, 0) + atomicCAS_system(p + 3, v, 0);
	r += atomicExch_system(p + 4, v) + atomicMax_block(p + 5, v);
	unsigned long long rq = atomicAdd_system(q, 1ull) + atomicOr_block(q + 1, 3ull);
	float rf = atomicAdd_block(f, 1.0f) + atomicAdd_system(f + 1, 2.0f);
	p[6 + threadIdx.x] = r + (int)rq + (int)rf;
}

__global__ void reductions(int *p, unsigned long long *q, float *f, double *d, int v)
{
	atomicAdd(p, v);
	atomicOr(p + 1, v);
	atomicAnd(p + 2, v);
	atomicXor(p + 3, v);
	atomicMax(p + 4, v);
	atomicInc((unsigned *)p + 5, 10u);
	atomicAdd(q, (unsigned long long)v);
	atomicAdd(f, 1.5f);
	atomicAdd(d, 2.5);
	atomicAdd_system(p + 6, v);
	atomicAdd_block(p + 7, v);
}

__global__ void shared_atomics(int *out, int v)
{
	__shared__ int s[4];
	__shared__ unsigned long long s64;
	if (threadIdx.x < 4)
		s[threadIdx.x] = 0;
	if (threadIdx.x == 0)
		s64 = 0;
	__syncthreads();
	atomicAdd(&s[threadIdx.x & 3], v);
	atomicMax(&s[1], v);
	atomicCAS(&s64, 0ull, (unsigned long long)v);
	int old = atomicExch(&s[2], v);
	__syncthreads();
	out[threadIdx.x] = s[threadIdx.x & 3] + old + (int)s64;
}
