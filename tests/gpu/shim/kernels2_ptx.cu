// kernels2_ptx.cu — a second PTX input for the cuLink case: the same math
// under other names (a linker rejects duplicate kernels and shared arrays).
extern "C" __global__ void fill2(int n, float *x)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] = (float)(i % 97) * 0.5f;
}

extern "C" __global__ void saxpy2(int n, float a, const float *x, float *y)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = a * x[i] + y[i] * 0.5f;
}
