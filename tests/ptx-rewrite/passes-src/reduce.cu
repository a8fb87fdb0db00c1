extern "C" __global__ void reduce(const float *in, float *out, int n){
  __shared__ float s[256];
  int i = blockIdx.x*blockDim.x+threadIdx.x;
  s[threadIdx.x] = i < n ? in[i] : 0.f;
  __syncthreads();
  for (int k = blockDim.x/2; k > 0; k >>= 1) { if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x+k]; __syncthreads(); }
  if (threadIdx.x == 0) atomicAdd(out, s[0]);
}
extern "C" __global__ void early(const float *in, float *out, int n){
  __shared__ float s[256];
  int i = blockIdx.x*blockDim.x+threadIdx.x;
  if (i >= n) return;
  s[threadIdx.x] = in[i];
  __syncthreads();
  out[i] = s[(threadIdx.x+1)%blockDim.x];
}
