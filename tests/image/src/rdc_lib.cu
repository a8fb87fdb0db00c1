__device__ float dev2(float x){ return x*2.0f+1.0f; }
__global__ void k3(float *a){ a[0]=dev2(a[1]); }
