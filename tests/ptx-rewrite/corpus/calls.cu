// Device calls: non-inlined functions, recursion, function pointers
// (indirect calls with prototypes), virtual dispatch, structs by value.
struct Vec3 {
	float x, y, z;
};

__device__ __noinline__ Vec3 cross(Vec3 a, Vec3 b)
{
	return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}

__device__ __noinline__ unsigned long long fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

__device__ __noinline__ int ackermann(int m, int n)
{
	if (m == 0)
		return n + 1;
	if (n == 0)
		return ackermann(m - 1, 1);
	return ackermann(m - 1, ackermann(m, n - 1));
}

__device__ float op_add(float a, float b) { return a + b; }
__device__ float op_mul(float a, float b) { return a * b; }
__device__ float op_max(float a, float b) { return fmaxf(a, b); }
typedef float (*binop)(float, float);
__device__ binop ops[3] = {op_add, op_mul, op_max};

__global__ void call_struct(const Vec3 *a, const Vec3 *b, Vec3 *c)
{
	int i = threadIdx.x;
	c[i] = cross(a[i], b[i]);
}

__global__ void call_recursive(const int *n, unsigned long long *out)
{
	int i = threadIdx.x;
	out[i] = fib(n[i] & 15) + ackermann(1, n[i] & 7);
}

__global__ void call_indirect(const float *a, const float *b, float *c, const int *sel)
{
	int i = threadIdx.x;
	binop f = ops[sel[i] % 3];
	c[i] = f(a[i], b[i]);
}

struct Shape {
	__device__ virtual float area() const = 0;
	__device__ virtual ~Shape() {}
};
struct Square : Shape {
	float s;
	__device__ Square(float s) : s(s) {}
	__device__ float area() const override { return s * s; }
};
struct Circle : Shape {
	float r;
	__device__ Circle(float r) : r(r) {}
	__device__ float area() const override { return 3.14159f * r * r; }
};

__global__ void call_virtual(const float *in, float *out)
{
	int i = threadIdx.x;
	Square sq(in[i]);
	Circle ci(in[i]);
	const Shape *s = (i & 1) ? (const Shape *)&sq : (const Shape *)&ci;
	out[i] = s->area();
}
