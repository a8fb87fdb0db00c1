/* gen_bpf_bomb OUT NPROGS SUB_INSNS — write the object of bpf_bomb.h to OUT
 * (test_bpf_cli.sh, the loader fuzzer's seeds). */
#include "tests/devbpf/bpf_bomb.h"

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: gen_bpf_bomb OUT NPROGS SUB_INSNS\n");
		return 2;
	}
	size_t len, sub = strtoul(argv[3], NULL, 0);
	if (!sub) {
		fprintf(stderr, "gen_bpf_bomb: SUB_INSNS must be at least 1\n");
		return 2;
	}
	uint8_t *b = bpf_bomb_object((unsigned)strtoul(argv[2], NULL, 0), sub, &len);
	FILE *f = fopen(argv[1], "wb");
	if (!f || fwrite(b, 1, len, f) != len || fclose(f)) {
		perror(argv[1]);
		return 1;
	}
	free(b);
	return 0;
}
