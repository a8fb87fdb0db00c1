// Tensor cores: the WMMA API (half, bf16, tf32, int8) and raw mma.sync,
// ldmatrix through inline asm (sm_80+).
#include <mma.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
using namespace nvcuda;

__global__ void wmma_half(const half *a, const half *b, float *c)
{
	wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
	wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
	wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
	wmma::fill_fragment(fc, 0.0f);
	wmma::load_matrix_sync(fa, a, 16);
	wmma::load_matrix_sync(fb, b, 16);
	wmma::mma_sync(fc, fa, fb, fc);
	wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}

__global__ void wmma_bf16_tf32(const __nv_bfloat16 *a, const __nv_bfloat16 *b, const float *x,
			       const float *y, float *c)
{
	wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
	wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> fb;
	wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
	wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> ta;
	wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> tb;
	wmma::fragment<wmma::accumulator, 16, 16, 8, float> tc;
	wmma::fill_fragment(fc, 0.0f);
	wmma::fill_fragment(tc, 0.0f);
	wmma::load_matrix_sync(fa, a, 16);
	wmma::load_matrix_sync(fb, b, 16);
	wmma::mma_sync(fc, fa, fb, fc);
	wmma::load_matrix_sync(ta, x, 8);
	wmma::load_matrix_sync(tb, y, 16);
	for (int i = 0; i < ta.num_elements; i++)
		ta.x[i] = wmma::__float_to_tf32(ta.x[i]);
	wmma::mma_sync(tc, ta, tb, tc);
	for (int i = 0; i < fc.num_elements; i++)
		fc.x[i] += tc.x[i];
	wmma::store_matrix_sync(c, fc, 16, wmma::mem_col_major);
}

__global__ void wmma_int8(const signed char *a, const signed char *b, int *c)
{
	wmma::fragment<wmma::matrix_a, 16, 16, 16, signed char, wmma::row_major> fa;
	wmma::fragment<wmma::matrix_b, 16, 16, 16, signed char, wmma::col_major> fb;
	wmma::fragment<wmma::accumulator, 16, 16, 16, int> fc;
	wmma::fill_fragment(fc, 0);
	wmma::load_matrix_sync(fa, a, 16);
	wmma::load_matrix_sync(fb, b, 16);
	wmma::mma_sync(fc, fa, fb, fc);
	wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}

__global__ void mma_sync_asm(const unsigned *a, const unsigned *b, float *c)
{
	__shared__ unsigned smem[32 * 8];
	int l = threadIdx.x;
	for (int i = 0; i < 8; i++)
		smem[l * 8 + i] = a[l * 8 + i];
	__syncthreads();
	unsigned a0, a1, a2, a3;
	unsigned sa = (unsigned)__cvta_generic_to_shared(&smem[(l % 16) * 8 + (l / 16) * 4]);
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
		     : "=r"(a0), "=r"(a1), "=r"(a2), "=r"(a3)
		     : "r"(sa));
	unsigned b0 = b[l * 2], b1 = b[l * 2 + 1];
	float d0 = 0, d1 = 0, d2 = 0, d3 = 0;
	asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
		     "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
		     : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
		     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
	asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
		     "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
		     : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
		     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
	c[l * 4] = d0, c[l * 4 + 1] = d1, c[l * 4 + 2] = d2, c[l * 4 + 3] = d3;
}
