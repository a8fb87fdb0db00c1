// graph.cu — CUDA graphs: stream capture, and an explicit kernel node
// (cudaGraphAddKernelNode -> cuGraphAddKernelNode), replayed 5 times.
#include "common.h"
#include "kernels.cuh"

int main()
{
	const int n = 1 << 16;
	float *x, *y;
	float *h = (float *)malloc(n * sizeof(float));
	for (int i = 0; i < n; i++)
		h[i] = (float)i / n;
	CK(cudaMalloc(&x, n * sizeof(float)));
	CK(cudaMalloc(&y, n * sizeof(float)));
	CK(cudaMemcpy(x, h, n * sizeof(float), cudaMemcpyHostToDevice));
	CK(cudaMemset(y, 0, n * sizeof(float)));
	cudaStream_t s;
	CK(cudaStreamCreate(&s));
	cudaGraph_t g;
	CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	saxpy<<<n / 256, 256, 0, s>>>(n, 2.0f, x, y);
	CK(cudaStreamEndCapture(s, &g));
	// An explicit node after the captured one.
	cudaGraphNode_t nodes[8];
	size_t nn = 8;
	CK(cudaGraphGetNodes(g, nodes, &nn));
	int nv = n;
	float a = 3.0f;
	void *args[] = { &nv, &a, &x, &y };
	cudaKernelNodeParams p = {};
	p.func = (void *)saxpy;
	p.gridDim = dim3(n / 256);
	p.blockDim = dim3(256);
	p.kernelParams = args;
	cudaGraphNode_t k;
	CK(cudaGraphAddKernelNode(&k, g, nodes, nn, &p));
	cudaGraphExec_t ge;
	CK(cudaGraphInstantiate(&ge, g, 0));
	for (int i = 0; i < 5; i++)
		CK(cudaGraphLaunch(ge, s));
	CK(cudaStreamSynchronize(s));
	CK(cudaMemcpy(h, y, n * sizeof(float), cudaMemcpyDeviceToHost));
	printf("graph checksum %016llx\n", (unsigned long long)fnv(h, n * sizeof(float)));
	cudaGraphExecDestroy(ge), cudaGraphDestroy(g), cudaStreamDestroy(s);
	cudaFree(x), cudaFree(y);
	free(h);
	return 0;
}
