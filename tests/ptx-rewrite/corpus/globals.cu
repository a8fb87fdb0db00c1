// Module-level data: __constant__ tables with initialisers, __device__
// variables and arrays (initialised, zero, 64-bit, structs), __managed__
// variables (.attribute(.managed)), device-side pointers to globals.
struct Params {
	float scale;
	int shift;
	double bias[3];
};

__constant__ float c_coef[8] = {0.5f, 1.5f, -2.25f, 3.0f, 1e-3f, 2e10f, -0.0f, 7.0f};
__constant__ Params c_params = {2.0f, 3, {0.1, 0.2, 0.3}};
__constant__ unsigned long long c_big[2] = {0xdeadbeefcafef00dull, 42};
__device__ int d_zero[1024];
__device__ short d_init[4] = {1, -2, 3, -4};
__device__ int *d_ptr = &d_zero[5];
__device__ char d_str[] = "gpuext corpus";
__managed__ int m_count = 7;

__global__ void use_globals(float *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	float v = c_coef[i & 7] * c_params.scale + (float)c_params.bias[i % 3];
	v += (float)(c_big[i & 1] >> c_params.shift);
	d_zero[i & 1023] += d_init[i & 3] + *d_ptr + d_str[i % 13];
	atomicAdd(&m_count, 1);
	out[i] = v;
}
