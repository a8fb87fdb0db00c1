// mix.cu — the kernel of multictx.c (compiled to PTX by tests/gpu/multi.sh,
// so the shim rewrites it). Deterministic whatever the grid: out[i] depends
// only on i (or in[i]) and salt.
extern "C" __global__ void mix(unsigned *out, const unsigned *in, unsigned n, unsigned salt)
{
	for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		unsigned x = (in ? in[i] : i) ^ salt;
		x *= 2654435761u;
		x ^= x >> 13;
		x *= 0x9e3779b9u;
		out[i] = x ^ (x >> 16);
	}
}
