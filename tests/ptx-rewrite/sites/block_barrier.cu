// GX_PTX_BLOCK_SITE=barrier test kernels (tests/ptx-rewrite/test_sites.sh)
extern "C" __global__ void once(const float *x, float *y, int n)
{
	__shared__ float t[256];
	int i = blockIdx.x * 256 + threadIdx.x;
	t[threadIdx.x] = i < n ? x[i] : 0.f;
	__syncthreads();
	if (i < n)
		y[i] = t[255 - threadIdx.x];
}
extern "C" __global__ void early_out(const float *x, float *y, int n)
{
	__shared__ float t[256];
	if (blockIdx.x * 256 >= n)
		return;
	int i = blockIdx.x * 256 + threadIdx.x;
	t[threadIdx.x] = x[i];
	__syncthreads();
	y[i] = t[255 - threadIdx.x];
}
extern "C" __global__ void in_loop(const float *x, float *y, int n)
{
	__shared__ float t[256];
	float a = 0.f;
	for (int k = 0; k < n; k++) {
		t[threadIdx.x] = x[k * 256 + threadIdx.x];
		__syncthreads();
		a += t[255 - threadIdx.x];
		__syncthreads();
	}
	y[blockIdx.x * 256 + threadIdx.x] = a;
}
extern "C" __global__ void loop_then_once(const float *x, float *y, int n)
{
	__shared__ float t[256];
	float a = 0.f;
	for (int k = threadIdx.x; k < n; k += 256)
		a += x[k];
	t[threadIdx.x] = a;
	__syncthreads();
	y[blockIdx.x * 256 + threadIdx.x] = t[255 - threadIdx.x];
}
