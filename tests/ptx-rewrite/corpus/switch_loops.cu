// Control flow: dense switches (jump tables), nested loops with breaks,
// unrolling pragmas, divergent early returns, templates with long names.
template <int N, typename T> struct Acc {
	__device__ static T run(const T *p)
	{
		T s = 0;
#pragma unroll
		for (int i = 0; i < N; i++)
			s += p[i] * (T)(i + 1);
		return s;
	}
};

__global__ void dense_switch(const int *sel, float *out)
{
	int i = threadIdx.x;
	float r;
	switch (sel[i]) {
	case 0: r = 1.5f; break;
	case 1: r = out[i] * 2; break;
	case 2: r = sqrtf(out[i]); break;
	case 3: r = -out[i]; break;
	case 4: r = out[i] + 7; break;
	case 5: r = out[i] / 3; break;
	case 6: r = expf(out[i]); break;
	case 7: r = logf(out[i]); break;
	default: r = 0;
	}
	out[i] = r;
}

__global__ void nested_loops(const int *m, int *out, int n)
{
	int acc = 0;
	for (int i = 0; i < n; i++) {
		if (m[i] < 0)
			break;
#pragma unroll 1
		for (int j = 0; j < m[i]; j++) {
			if ((j ^ i) == threadIdx.x)
				continue;
			acc += j * i;
			if (acc > 100000)
				goto done;
		}
	}
done:
	if (threadIdx.x & 1)
		return;
	out[threadIdx.x] = acc;
}

template <typename T> __global__ void templated_acc(const T *p, T *out)
{
	out[threadIdx.x] = Acc<8, T>::run(p + threadIdx.x * 8);
}
template __global__ void templated_acc<float>(const float *, float *);
template __global__ void templated_acc<double>(const double *, double *);
template __global__ void templated_acc<long long>(const long long *, long long *);
