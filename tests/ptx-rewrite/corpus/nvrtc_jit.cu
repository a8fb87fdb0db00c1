// Compiled with NVRTC (no host code, no standard headers): the kind of
// source CuPy/Numba-style JITs hand the driver.
extern "C" __global__ void nvrtc_axpy(float a, const float *x, float *y, unsigned n)
{
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = a * x[i] + y[i];
}

extern "C" __global__ void nvrtc_histogram(const unsigned char *in, unsigned *bins, unsigned n)
{
	__shared__ unsigned h[256];
	for (unsigned i = threadIdx.x; i < 256; i += blockDim.x)
		h[i] = 0;
	__syncthreads();
	for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
		atomicAdd(&h[in[i]], 1u);
	__syncthreads();
	for (unsigned i = threadIdx.x; i < 256; i += blockDim.x)
		atomicAdd(&bins[i], h[i]);
}

template <typename T> __global__ void nvrtc_scale(T *p, T s)
{
	p[threadIdx.x] *= s;
}
template __global__ void nvrtc_scale<float>(float *, float);
template __global__ void nvrtc_scale<int>(int *, int);
