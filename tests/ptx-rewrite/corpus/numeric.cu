// Numerics: fp16/bf16 math and conversions, fp8 (sm_89+), doubles, special
// functions, rounding modes, integer dot products, funnel shifts.
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>

__global__ void half_math(const __half2 *a, const __half2 *b, __half2 *c, __nv_bfloat162 *d)
{
	int i = threadIdx.x;
	__half2 x = __hfma2(a[i], b[i], __float2half2_rn(1.0f));
	x = __hmax2(x, h2exp(a[i]));
	__nv_bfloat162 y = __hmul2(__float22bfloat162_rn(__half22float2(x)), d[i]);
	c[i] = __hadd2(x, __hsub2(a[i], b[i]));
	d[i] = __hfma2(y, y, d[i]);
}

__global__ void fp8_convert(const float2 *in, __nv_fp8x2_e4m3 *o1, __nv_fp8x2_e5m2 *o2, float *back)
{
	int i = threadIdx.x;
	o1[i] = __nv_fp8x2_e4m3(in[i]);
	o2[i] = __nv_fp8x2_e5m2(in[i]);
	back[i] = (float)__nv_fp8_e4m3(in[i].x) + (float)__nv_fp8_e5m2(in[i].y);
}

__global__ void special_funcs(const double *x, double *y, float *z)
{
	int i = threadIdx.x;
	double v = x[i];
	y[i] = sin(v) * exp(v) + log1p(fabs(v)) + pow(v, 2.5) + rsqrt(fabs(v) + 1) + __dadd_rn(v, 1.0);
	float f = (float)v;
	z[i] = __sinf(f) + __expf(f) + __fdividef(f, 3.0f) + __frsqrt_rn(f * f + 1) + __saturatef(f) +
	       __float_as_int(f) + __int_as_float(0x3f800000) + __fmaf_rz(f, f, 1.0f) + erfcinvf(0.5f);
}

__global__ void int_tricks(const unsigned *a, unsigned *b)
{
	int i = threadIdx.x;
	unsigned x = a[i], y = a[i + 1];
	b[i] = __funnelshift_l(x, y, 7) + __funnelshift_rc(x, y, 40) + __dp4a(x, y, 3u) +
	       __dp2a_lo(x, y, 1u) + __byte_perm(x, y, 0x5410) + __vadd4(x, y) + __sad(x, y, 2u) +
	       __ffs(x) + __fns(x, 3, 1) + __nv_bswap32(x);
}
