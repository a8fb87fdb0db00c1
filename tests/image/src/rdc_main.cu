#include <cstdio>
extern __device__ float dev2(float);
__global__ void k2(float *a){ a[threadIdx.x] = dev2(a[threadIdx.x]); }
int main(){ float *p; cudaMalloc(&p, 64); k2<<<1,16>>>(p); printf("%d\n", (int)cudaDeviceSynchronize()); return 0; }
