// rdc_b.cu — the second translation unit of rdc_a.cu (see there).
__device__ float a_offset(float x); // rdc_a.cu
__device__ float b_scale(float x) { return a_offset(x) * 2.0f; }

__global__ void rdc_kernel_b(float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = a_offset(b_scale((float)i));
}
