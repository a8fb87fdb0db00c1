/* gen_bomb OUT ENTRIES MIB_EACH — write the decompression bomb of bomb.h to
 * OUT (test_image_bomb.sh, the fuzzers' seeds). */
#include "tests/image/bomb.h"

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: gen_bomb OUT ENTRIES MIB_EACH\n");
		return 2;
	}
	unsigned n = (unsigned)strtoul(argv[2], NULL, 0);
	uint64_t size = (uint64_t)strtoull(argv[3], NULL, 0) << 20;
	size_t len;
	uint8_t *p = bomb_fatbin(n, size, &len);
	FILE *f = fopen(argv[1], "wb");
	if (!f || fwrite(p, 1, len, f) != len || fclose(f)) {
		perror(argv[1]);
		return 1;
	}
	free(p);
	return 0;
}
