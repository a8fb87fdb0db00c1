/* krs_map.c — a kernelretsnoop krs_counts map file with chosen counts, for
 * tests/cli/test_exporter.sh: the fake driver runs no device code, so the
 * tool's own map stays empty there; this one, named for a live process,
 * is what the exporter would read after a real run (docs/metrics.md).
 * argv: FOLDER PID NAME:LAUNCHES:BLOCKS... — writes
 * FOLDER/PID-kernelretsnoop.krs_counts@0 (GPU 0); the key of NAME is its
 * kernel id (gx_kernel_id), or NAME itself if it is 0x<hex>. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "devbpf/gx_bpf.h"
#include "gpuext/gx_hooks.h"
#include "tools/tools_common.h"

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: krs_map FOLDER PID NAME:LAUNCHES:BLOCKS...\n");
		return 2;
	}
	char tmp[600]; /* made in FOLDER: the rename stays on its file system */
	snprintf(tmp, sizeof(tmp), "%s/.krs_map.XXXXXX", argv[1]);
	if (!mkdtemp(tmp))
		return 1;
	gx_map_shm_dir_set(tmp);
	struct gx_map_spec spec = { .name = "kernelretsnoop.krs_counts",
				    .type = GX_MAP_HASH,
				    .key_size = 8,
				    .value_size = sizeof(struct gx_krs_count),
				    .max_entries = 4096 };
	struct gx_map *m;
	if (gx_map__create(&spec, GX_MAP_F_SHM | GX_MAP_F_KEEP, &m))
		return 1;
	m->hdr->dev = 1; /* CUDA device 0 */
	for (int i = 3; i < argc; i++) {
		char name[256];
		unsigned long long l, b;
		if (sscanf(argv[i], "%255[^:]:%llu:%llu", name, &l, &b) != 3)
			return 2;
		uint64_t id = strncmp(name, "0x", 2) ? gx_kernel_id(name) : strtoull(name, NULL, 16);
		struct gx_krs_count c = { l, b };
		if (gx_map__update(m, &id, &c, 0))
			return 1;
	}
	char from[600], to[1200];
	snprintf(from, sizeof(from), "%s", m->path);
	snprintf(to, sizeof(to), "%s/%s-kernelretsnoop.krs_counts@0", argv[1], argv[2]);
	gx_map__free(m);
	int rc = rename(from, to) ? 1 : 0;
	rmdir(tmp);
	return rc;
}
