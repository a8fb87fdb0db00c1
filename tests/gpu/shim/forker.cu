// forker.cu — fork before and after CUDA is initialised. A child forked
// before init uses CUDA itself; a child forked after init (where CUDA is not
// usable) must still exit cleanly: no lock of the shim may be left held.
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "kernels.cuh"

static unsigned long long run(float a)
{
	const int n = 1 << 12;
	float *x, *y;
	unsigned long long *sum, hs = 0;
	CK(cudaMalloc(&x, n * sizeof(float)));
	CK(cudaMalloc(&y, n * sizeof(float)));
	CK(cudaMalloc(&sum, sizeof(*sum)));
	fill<<<n / 256, 256>>>(n, x);
	CK(cudaMemset(y, 0, n * sizeof(float)));
	CK(cudaMemset(sum, 0, sizeof(*sum)));
	saxpy<<<n / 256, 256>>>(n, a, x, y);
	block_sum<<<n / 256, 256>>>(n, y, sum);
	CK(cudaMemcpy(&hs, sum, sizeof(hs), cudaMemcpyDeviceToHost));
	cudaFree(x), cudaFree(y), cudaFree(sum);
	return hs;
}

int main()
{
	fflush(stdout);
	pid_t p = fork();
	if (p == 0) {
		printf("child-before-init sum %llu\n", run(1.0f));
		fflush(stdout);
		_exit(0);
	}
	int st;
	waitpid(p, &st, 0);
	printf("child-before-init exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	printf("parent sum %llu\n", run(2.0f));
	fflush(stdout);
	for (int i = 0; i < 4; i++) {
		p = fork();
		if (p == 0) {
			alarm(20);
			printf("child-after-init %d ok\n", i);
			fflush(stdout);
			_exit(0);
		}
		waitpid(p, &st, 0);
		printf("child-after-init %d exit %d\n", i, WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	}
	printf("parent again sum %llu\n", run(3.0f));
	return 0;
}
