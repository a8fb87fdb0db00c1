/* nvrtc_gen — compile one CUDA source to PTX with NVRTC (the path JIT-heavy
 * applications such as CuPy take), for the PTX corpus.
 * usage: nvrtc_gen SRC.cu sm_XX OUT.ptx [nvrtc options...] */
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *b = n >= 0 ? malloc((size_t)n + 1) : NULL;
	if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
		free(b);
		b = NULL;
	}
	if (b)
		b[n] = 0;
	fclose(f);
	return b;
}

int main(int argc, char **argv)
{
	if (argc < 4 || strncmp(argv[2], "sm_", 3)) {
		fprintf(stderr, "usage: nvrtc_gen SRC.cu sm_XX OUT.ptx [options...]\n");
		return 2;
	}
	char *src = slurp(argv[1]);
	if (!src) {
		perror(argv[1]);
		return 1;
	}
	char arch[64];
	snprintf(arch, sizeof(arch), "--gpu-architecture=compute_%s", argv[2] + 3);
	const char *opts[32];
	int n = 0;
	opts[n++] = arch;
	opts[n++] = "--std=c++17";
	for (int i = 4; i < argc && n < 32; i++)
		opts[n++] = argv[i];
	nvrtcProgram prog;
	nvrtcResult r = nvrtcCreateProgram(&prog, src, argv[1], 0, NULL, NULL);
	if (r != NVRTC_SUCCESS) {
		fprintf(stderr, "nvrtcCreateProgram: %s\n", nvrtcGetErrorString(r));
		return 1;
	}
	r = nvrtcCompileProgram(prog, n, opts);
	size_t logsz = 0;
	nvrtcGetProgramLogSize(prog, &logsz);
	if (logsz > 1) {
		char *log = malloc(logsz);
		if (log && nvrtcGetProgramLog(prog, log) == NVRTC_SUCCESS)
			fputs(log, stderr);
		free(log);
	}
	if (r != NVRTC_SUCCESS) {
		fprintf(stderr, "nvrtcCompileProgram: %s\n", nvrtcGetErrorString(r));
		return 1;
	}
	size_t sz;
	nvrtcGetPTXSize(prog, &sz);
	char *ptx = malloc(sz);
	if (!ptx || nvrtcGetPTX(prog, ptx) != NVRTC_SUCCESS)
		return 1;
	FILE *o = fopen(argv[3], "wb");
	if (!o || fwrite(ptx, 1, strnlen(ptx, sz), o) != strnlen(ptx, sz) || fclose(o)) {
		perror(argv[3]);
		return 1;
	}
	free(ptx);
	free(src);
	nvrtcDestroyProgram(&prog);
	return 0;
}
