// Dynamic parallelism (-rdc): kernels launched from the device. The child's
// address is taken by its parents (cudaGetParameterBufferV2 + cudaLaunchDeviceV2),
// the recursive kernel launches itself, and a kernel defined after its
// device-side launcher is declared first (an .entry prototype).

__global__ void cdp_late(int *out, int v);

__global__ void cdp_child(int *out, int depth)
{
	out[blockIdx.x * blockDim.x + threadIdx.x] += depth;
}

__global__ void cdp_recurse(int *out, int depth)
{
	if (threadIdx.x == 0 && depth < 3)
		cdp_recurse<<<1, 32>>>(out, depth + 1);
	out[threadIdx.x] = depth;
}

__global__ void cdp_parent(int *out, int n)
{
	if (threadIdx.x == 0 && blockIdx.x == 0) {
		cdp_child<<<n, 32>>>(out, 1);
		cdp_late<<<1, 32>>>(out, 2);
	}
}

__global__ void cdp_late(int *out, int v)
{
	out[threadIdx.x] *= v;
}

// Launched from the host only: the persistent transform may take it.
__global__ void cdp_host_only(int *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = i;
}

// A device function that launches: its callers are refused through it.
__device__ __noinline__ void cdp_spawn(int *out)
{
	cdp_child<<<1, 32>>>(out, 4);
}

__global__ void cdp_via_helper(int *out)
{
	if (threadIdx.x == 0)
		cdp_spawn(out);
}

// Device-side memset: libcudadevrt runs it as a child grid.
__global__ void cdp_memset(int *out, int n)
{
	if (threadIdx.x == 0 && blockIdx.x == 0)
		cudaMemsetAsync(out, 0, n * sizeof(int));
}
