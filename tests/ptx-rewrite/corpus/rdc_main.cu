// Relocatable device code: calls into another translation unit (extern
// .func declarations), extern device variables, a weak template.
extern __device__ int rdc_counter;
extern __device__ float rdc_table[16];
__device__ float rdc_scale(float x, int k);
template <typename T> __device__ T rdc_square(T v);

__global__ void rdc_use(float *out, const float *in)
{
	int i = threadIdx.x;
	out[i] = rdc_scale(in[i], i) + rdc_square(in[i]) + (float)rdc_square((double)i) +
		 rdc_table[i & 15] + rdc_counter;
}

__global__ void rdc_reset()
{
	rdc_counter = 0;
}
