// Texture and surface objects: tex1Dfetch, tex2D, tex3D, layered, gather,
// surf2Dread/write, and the query intrinsics.
#include <cuda_runtime.h>

__global__ void tex_fetch(cudaTextureObject_t t1, cudaTextureObject_t t2, cudaTextureObject_t t3,
			  float *out, int w)
{
	int x = threadIdx.x, y = blockIdx.x;
	float a = tex1Dfetch<float>(t1, x);
	float b = tex2D<float>(t2, x + 0.5f, y + 0.5f);
	float c = tex3D<float>(t3, x, y, 0.5f);
	float4 g = tex2Dgather<float4>(t2, x + 0.5f, y + 0.5f, 0);
	float l = tex2DLayered<float>(t2, x, y, 1);
	float lod = tex2DLod<float>(t2, x, y, 1.0f);
	out[y * w + x] = a + b + c + g.x + g.w + l + lod;
}

__global__ void surf_copy(cudaSurfaceObject_t src, cudaSurfaceObject_t dst, int w, int h)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
	if (x >= w || y >= h)
		return;
	float4 v = surf2Dread<float4>(src, x * sizeof(float4), y);
	v.x *= 2;
	surf2Dwrite(v, dst, x * sizeof(float4), y);
	uchar4 c = surf2Dread<uchar4>(src, x * 4, y, cudaBoundaryModeClamp);
	surf2Dwrite(c, dst, x * 4, y, cudaBoundaryModeZero);
	float f = surf1Dread<float>(src, x * 4);
	surf1Dwrite(f + 1, dst, x * 4);
}
