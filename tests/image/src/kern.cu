__global__ void add(float *a, const float *b, int n){int i=blockIdx.x*blockDim.x+threadIdx.x; if(i<n) a[i]+=b[i];}
__global__ void mul(float *a, float s, int n){int i=blockIdx.x*blockDim.x+threadIdx.x; if(i<n) a[i]*=s;}
