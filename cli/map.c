/* `gpuext map list|dump` — read the maps of running (or finished) gpuext
 * processes from their shared-memory files (`/dev/shm/gpuext-$UID/`, or
 * $GPUEXT_SHM_DIR), without attaching to them. Values are the last flushed
 * snapshot (gen / flush time say how fresh). */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli_internal.h"
#include "devbpf/gx_bpf.h"
#include "common/gx_util.h"

static int alive(uint32_t pid)
{
	return pid && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
}

/* Calls fn for every map file; returns the number of files visited. */
static int for_each_map(int (*fn)(struct gx_map *m, const char *file, void *u), void *u)
{
	char dir[256], path[600];
	if (gx_map_shm_dir(dir, sizeof(dir)))
		return -ENAMETOOLONG;
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	struct dirent *e;
	int n = 0, stop = 0;
	/* sorted for stable output */
	char **names = NULL;
	size_t nn = 0;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char **t = realloc(names, (nn + 1) * sizeof(*names));
		if (!t)
			break;
		names = t;
		if (!(names[nn] = strdup(e->d_name)))
			break;
		nn++;
	}
	closedir(d);
	qsort(names, nn, sizeof(*names), (int (*)(const void *, const void *))strcmp);
	for (size_t i = 0; i < nn; i++) {
		if (!stop) {
			snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
			struct gx_map *m;
			if (!gx_map__open(path, 0, &m)) {
				n++;
				stop = fn(m, names[i], u);
				gx_map__free(m);
			}
		}
		free(names[i]);
	}
	free(names);
	return n;
}

static int list_one(struct gx_map *m, const char *file, void *u)
{
	int *first = u;
	const struct gx_shm_hdr *h = m->hdr;
	if (gx_json) {
		printf("%s{\"file\":", *first ? "" : ",");
		gx_json_str(stdout, file);
		printf(",\"name\":");
		gx_json_str(stdout, m->name);
		printf(",\"pid\":%u,\"alive\":%s,\"type\":\"%s\",\"key_size\":%u,\"value_size\":%u,"
		       "\"max_entries\":%u,\"shards\":%u,\"gen\":%" PRIu64 ",\"flush_ns\":%" PRIu64 ",\"const\":%s}",
		       h->pid, alive(h->pid) ? "true" : "false", gx_map_type_name(m->l.type),
		       m->l.key_size, m->l.value_size, m->l.max_entries, m->l.nr_shards, h->gen,
		       h->flush_ns, gx_map__is_const(m) ? "true" : "false");
	} else {
		printf("%-36s %7u%s %-13s key %-3u value %-4u max %-7u shards %-5u gen %" PRIu64 "%s\n",
		       file, h->pid, alive(h->pid) ? " " : "x", gx_map_type_name(m->l.type),
		       m->l.key_size, m->l.value_size, m->l.max_entries, m->l.nr_shards, h->gen,
		       gx_map__is_const(m) ? " const" : "");
	}
	*first = 0;
	return 0;
}

static int do_list(int argc, char **argv)
{
	(void)argc, (void)argv;
	int first = 1;
	if (gx_json)
		printf("[");
	else
		printf("%-36s %8s %-13s\n", "FILE", "PID", "TYPE");
	int n = for_each_map(list_one, &first);
	if (gx_json)
		printf("]\n");
	if (n < 0) {
		p_err("cannot read the map folder: %s", strerror(-n));
		return 1;
	}
	return 0;
}

static void print_bytes(const unsigned char *p, unsigned n)
{
	if (gx_json) {
		putchar('"');
		for (unsigned i = 0; i < n; i++)
			printf("%02x", p[i]);
		putchar('"');
		return;
	}
	if (n == 8)
		printf("%" PRIu64, *(const uint64_t *)p);
	else if (n == 4)
		printf("%u", *(const uint32_t *)p);
	else
		for (unsigned i = 0; i < n; i++)
			printf("%s%02x", i ? " " : "", p[i]);
}

static int zero(const unsigned char *p, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

static void dump_map(struct gx_map *m, int all)
{
	int first = 1;
	unsigned vs = m->l.value_size;
	if (gx_json) {
		printf("{\"name\":");
		gx_json_str(stdout, m->name);
		printf(",\"type\":\"%s\",\"gen\":%" PRIu64 ",\"entries\":[", gx_map_type_name(m->l.type),
		       m->hdr->gen);
	} else {
		printf("map %s (%s, gen %" PRIu64 ")\n", m->name, gx_map_type_name(m->l.type), m->hdr->gen);
	}
	if (m->l.type == GX_MAP_RINGBUF) {
		const struct gx_ring *r = gx_map__ring(m);
		/* drops: what the last drain summed, or the producers' shards if
		 * they counted more since (a ring nobody drained lately) */
		uint64_t drops = gx_ring__drops(r) > r->drops ? gx_ring__drops(r) : r->drops;
		if (gx_json)
			printf("],\"ring\":{\"size\":%" PRIu64 ",\"head\":%" PRIu64 ",\"tail\":%" PRIu64
			       ",\"drops\":%" PRIu64 "}}\n",
			       (uint64_t)r->size, (uint64_t)r->head, (uint64_t)r->tail, drops);
		else
			printf("  ring size %" PRIu64 " head %" PRIu64 " tail %" PRIu64 " drops %" PRIu64 "\n",
			       (uint64_t)r->size, (uint64_t)r->head, (uint64_t)r->tail, drops);
		return;
	}
	unsigned char key[512];
	for (int r = gx_map__next_key(m, NULL, key); !r; r = gx_map__next_key(m, key, key)) {
		if (m->l.type == GX_MAP_HASH) {
			const unsigned char *v = gx_map__lookup(m, key);
			if (!v)
				continue;
			if (gx_json) {
				printf("%s{\"key\":", first ? "" : ",");
				print_bytes(key, m->l.key_size);
				printf(",\"value\":");
				print_bytes(v, vs);
				printf("}");
			} else {
				printf("  key ");
				print_bytes(key, m->l.key_size);
				printf(" value ");
				print_bytes(v, vs);
				printf("\n");
			}
			first = 0;
			continue;
		}
		uint32_t idx = *(uint32_t *)key;
		int nz = 0;
		for (unsigned s = 0; s < m->l.nr_shards; s++)
			nz |= !zero(gx_map__shard_elem(m, s, idx), vs);
		if (!nz && !all)
			continue;
		if (gx_json)
			printf("%s{\"key\":%u", first ? "" : ",", idx);
		else
			printf("  [%u]", idx);
		if (m->l.type == GX_MAP_ARRAY) {
			printf(gx_json ? ",\"value\":" : " ");
			print_bytes(gx_map__shard_elem(m, 0, idx), vs);
		} else {
			uint64_t merged[64];
			if (vs <= sizeof(merged) && !gx_map__merged_u64(m, idx, merged)) {
				printf(gx_json ? ",\"merged\":" : " merged ");
				print_bytes((const unsigned char *)merged, vs);
			}
			printf(gx_json ? ",\"shards\":{" : " shards");
			int f2 = 1;
			for (unsigned s = 0; s < m->l.nr_shards; s++) {
				const unsigned char *v = gx_map__shard_elem(m, s, idx);
				if (zero(v, vs) && !all)
					continue;
				printf(gx_json ? "%s\"%u\":" : " %s%u=", gx_json && !f2 ? "," : "", s);
				print_bytes(v, vs);
				f2 = 0;
			}
			if (gx_json)
				printf("}");
		}
		printf(gx_json ? "}" : "\n");
		first = 0;
	}
	if (gx_json)
		printf("]}\n");
}

struct dump_req {
	const char *name;
	int all, found, devices;
	char **files; /* --devices: matching files, collected */
	size_t nr_files;
};

/* "<map>@<ctx>" names one context's copy of <map>; the base is <map>. */
static int base_matches(const char *want, const char *map_name)
{
	char base[GX_MAP_NAME_MAX];
	snprintf(base, sizeof(base), "%s", map_name);
	char *at = strrchr(base, '@');
	if (at)
		*at = 0;
	const char *dot = strrchr(base, '.');
	return !strcmp(want, base) || (dot && !strcmp(want, dot + 1));
}

static int collect_one(struct gx_map *m, const char *file, void *u)
{
	struct dump_req *q = u;
	if (!base_matches(q->name, m->name) || m->l.type == GX_MAP_RINGBUF)
		return 0;
	char **f = realloc(q->files, (q->nr_files + 1) * sizeof(*f));
	if (!f)
		return 1;
	q->files = f;
	if ((f[q->nr_files] = strdup(file)))
		q->nr_files++;
	return 0;
}

/* The 64-bit words of one copy's value at a key (sharded arrays: summed
 * over its shards). 0, 1 when the key is absent, -1 when not mergeable. */
static int copy_value(struct gx_map *m, const unsigned char *key, uint64_t *out, unsigned words)
{
	memset(out, 0, words * 8);
	if (m->l.type == GX_MAP_HASH) {
		const uint64_t *v = gx_map__lookup(m, key);
		if (v)
			memcpy(out, v, words * 8);
		return v ? 0 : 1;
	}
	uint32_t idx;
	memcpy(&idx, key, 4);
	if (idx >= m->l.max_entries)
		return 1;
	if (m->l.type == GX_MAP_ARRAY) {
		memcpy(out, gx_map__shard_elem(m, 0, idx), words * 8);
		return 0;
	}
	return gx_map__merged_u64(m, idx, out) ? -1 : 0;
}

static void print_words(const uint64_t *v, unsigned words)
{
	if (words == 1) {
		printf("%" PRIu64, v[0]);
		return;
	}
	printf(gx_json ? "[" : "(");
	for (unsigned w = 0; w < words; w++)
		printf("%s%" PRIu64, w ? (gx_json ? "," : " ") : "", v[w]);
	printf(gx_json ? "]" : ")");
}

/* --devices: every copy of one map (contexts, GPUs, processes) merged —
 * the sum of each 64-bit word, the counters' view — and per GPU (copies of
 * one device summed; the device of each copy is in its header). */
static int dump_devices(struct dump_req *q)
{
	char dir[256], path[600];
	if (gx_map_shm_dir(dir, sizeof(dir)))
		return 1;
	enum { MAXC = 256 };
	struct gx_map *ms[MAXC];
	const char *fn[MAXC];
	int devs[MAXC], dl[MAXC], nd = 0;
	size_t n = 0;
	for (size_t i = 0; i < q->nr_files && n < MAXC; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, q->files[i]);
		if (gx_map__open(path, 0, &ms[n]))
			continue;
		if (n && (ms[n]->l.type != ms[0]->l.type || ms[n]->l.value_size != ms[0]->l.value_size ||
			  ms[n]->l.key_size != ms[0]->l.key_size)) {
			p_err("%s: not the same map as %s (type or sizes differ); skipped", q->files[i], fn[0]);
			gx_map__free(ms[n]);
			continue;
		}
		fn[n] = q->files[i];
		devs[n] = (int)ms[n]->hdr->dev - 1; /* -1: unknown */
		n++;
	}
	if (!n) {
		p_err("no map named '%s' (see 'gpuext map list')", q->name);
		return 1;
	}
	struct gx_map *m0 = ms[0];
	unsigned vs = m0->l.value_size, words = vs / 8;
	int rc = 0;
	if (vs % 8 || !words || words > 64 || m0->l.key_size > 512) {
		p_err("%s: values of %u bytes are not 64-bit counters; dump each copy without --devices", q->name, vs);
		rc = 1;
		goto out;
	}
	for (size_t i = 0; i < n; i++) { /* distinct devices, ascending */
		int seen = 0;
		for (int j = 0; j < nd; j++)
			seen |= dl[j] == devs[i];
		if (!seen)
			dl[nd++] = devs[i];
	}
	for (int i = 0; i < nd; i++)
		for (int j = i + 1; j < nd; j++)
			if (dl[j] < dl[i]) {
				int t = dl[i];
				dl[i] = dl[j], dl[j] = t;
			}
	if (gx_json) {
		printf("{\"name\":");
		gx_json_str(stdout, q->name);
		printf(",\"type\":\"%s\",\"copies\":[", gx_map_type_name(m0->l.type));
		for (size_t i = 0; i < n; i++) {
			printf("%s{\"file\":", i ? "," : "");
			gx_json_str(stdout, fn[i]);
			printf(",\"pid\":%u,\"ctx\":%u,\"dev\":%d}", ms[i]->hdr->pid, ms[i]->hdr->ctx, devs[i]);
		}
		printf("],\"entries\":[");
	} else {
		printf("map %s (%s, %zu copies, %d GPU%s)\n", q->name, gx_map_type_name(m0->l.type), n, nd,
		       nd == 1 ? "" : "s");
	}
	/* Keys: indexes for arrays (the same in every copy); for hashes the
	 * union over copies. */
	unsigned char key[512], prev[512];
	int first = 1;
	for (size_t c = 0; c < n && (c == 0 || m0->l.type == GX_MAP_HASH); c++) {
		for (int r = gx_map__next_key(ms[c], NULL, key); !r; r = gx_map__next_key(ms[c], prev, key)) {
			memcpy(prev, key, m0->l.key_size);
			int dup = 0; /* a hash key already printed from an earlier copy */
			for (size_t e = 0; e < c; e++)
				dup |= gx_map__lookup(ms[e], key) != NULL;
			if (dup)
				continue;
			uint64_t merged[64] = { 0 }, perdev[64], v[64];
			int any = 0;
			for (size_t i = 0; i < n; i++) {
				if (copy_value(ms[i], key, v, words))
					continue;
				for (unsigned w = 0; w < words; w++) {
					merged[w] += v[w];
					any |= v[w] != 0;
				}
			}
			if (!any && !q->all)
				continue;
			if (gx_json) {
				printf("%s{\"key\":", first ? "" : ",");
				if (m0->l.type == GX_MAP_HASH)
					print_bytes(key, m0->l.key_size);
				else
					printf("%u", *(uint32_t *)key);
				printf(",\"merged\":");
			} else if (m0->l.type == GX_MAP_HASH) {
				printf("  key ");
				print_bytes(key, m0->l.key_size);
				printf(" merged ");
			} else {
				printf("  [%u] merged ", *(uint32_t *)key);
			}
			print_words(merged, words);
			printf(gx_json ? ",\"gpus\":{" : " ");
			for (int d = 0; d < nd; d++) {
				memset(perdev, 0, sizeof(perdev));
				for (size_t i = 0; i < n; i++) {
					if (devs[i] != dl[d] || copy_value(ms[i], key, v, words))
						continue;
					for (unsigned w = 0; w < words; w++)
						perdev[w] += v[w];
				}
				if (gx_json)
					printf("%s\"%d\":", d ? "," : "", dl[d]);
				else if (dl[d] < 0)
					printf(" gpu?=");
				else
					printf(" gpu%d=", dl[d]);
				print_words(perdev, words);
			}
			printf(gx_json ? "}}" : "\n");
			first = 0;
		}
	}
	if (gx_json)
		printf("]}\n");
out:
	for (size_t i = 0; i < n; i++)
		gx_map__free(ms[i]);
	return rc;
}

/* Does `name` (from the command line) name map m in `file`: the file name
 * ("PID-NAME"), the map name, or its last component? */
static bool names(const char *name, const struct gx_map *m, const char *file)
{
	const char *dot = strrchr(m->name, '.');
	return !strcmp(name, file) || !strcmp(name, m->name) || (dot && !strcmp(name, dot + 1));
}

static int dump_one(struct gx_map *m, const char *file, void *u)
{
	struct dump_req *q = u;
	if (!names(q->name, m, file))
		return 0;
	dump_map(m, q->all);
	q->found++;
	return 0;
}

static int do_dump(int argc, char **argv)
{
	struct dump_req q = { 0 };
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--all"))
			q.all = 1;
		else if (!strcmp(argv[i], "--devices"))
			q.devices = 1;
		else if (argv[i][0] != '-' && !q.name)
			q.name = argv[i];
		else {
			p_err("usage: gpuext map dump NAME|FILE|PATH [--all] [--devices]");
			return 2;
		}
	}
	if (!q.name) {
		p_err("usage: gpuext map dump NAME|FILE|PATH [--all] [--devices]");
		return 2;
	}
	if (q.devices) {
		int n = for_each_map(collect_one, &q);
		int rc = 1;
		if (n < 0)
			p_err("cannot read the map folder: %s", strerror(-n));
		else
			rc = dump_devices(&q);
		for (size_t i = 0; i < q.nr_files; i++)
			free(q.files[i]);
		free(q.files);
		return rc;
	}
	if (strchr(q.name, '/')) {
		struct gx_map *m;
		int ret = gx_map__open(q.name, 0, &m);
		if (ret) {
			p_err("%s: not a gpuext map: %s", q.name, strerror(-ret));
			return 1;
		}
		dump_map(m, q.all);
		gx_map__free(m);
		return 0;
	}
	int n = for_each_map(dump_one, &q);
	if (n < 0 || !q.found) {
		p_err("no map named '%s' (see 'gpuext map list')", q.name);
		return 1;
	}
	return 0;
}

/* gpuext map update: write one field of one entry, in place, in every copy
 * of the map that NAME matches (one per process: one command steers every
 * tenant running that policy) or in FILE/PATH. Host policies and device
 * policies read these very mappings, so the next event sees the value. Only
 * the field written changes (a store of 1-8 bytes): the policy's own updates
 * to the rest of the entry are not overwritten. */
struct upd_req {
	const char *name;
	char **paths;
	size_t n;
};

static int collect_path(struct gx_map *m, const char *file, void *u)
{
	struct upd_req *q = u;
	if (!names(q->name, m, file))
		return 0;
	char **t = realloc(q->paths, (q->n + 1) * sizeof(*t));
	if (!t)
		return 1;
	q->paths = t;
	if (!(t[q->n] = strdup(m->path)))
		return 1;
	q->n++;
	return 0;
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *e;
	errno = 0;
	if (!*s || *s == '-')
		return -1;
	unsigned long long x = strtoull(s, &e, 0);
	if (errno || *e)
		return -1;
	*v = x;
	return 0;
}

static void store_field(unsigned char *p, uint64_t val, unsigned size)
{
	/* aligned stores are single-copy atomic for the reading policy */
	if (((uintptr_t)p & (size - 1)) == 0) {
		switch (size) {
		case 1: __atomic_store_n(p, (uint8_t)val, __ATOMIC_RELEASE); return;
		case 2: __atomic_store_n((uint16_t *)(void *)p, (uint16_t)val, __ATOMIC_RELEASE); return;
		case 4: __atomic_store_n((uint32_t *)(void *)p, (uint32_t)val, __ATOMIC_RELEASE); return;
		default: __atomic_store_n((uint64_t *)(void *)p, val, __ATOMIC_RELEASE); return;
		}
	}
	memcpy(p, &val, size); /* little-endian host */
}

static int update_path(const char *path, uint64_t key, uint64_t val, unsigned off, unsigned size)
{
	struct gx_map *m;
	int ret = gx_map__open(path, 1, &m);
	if (ret == -EROFS) {
		/* whatever its name: the creator marked it (gx_map__seal) */
		const char *b = strrchr(path, '/');
		p_err("%s: read-only: its bytes are constants the verifier folded into the policy's code "
		      "(.rodata*); set knobs at load (FILE.bpf.o,NAME=VALUE)",
		      b ? b + 1 : path);
		return 1;
	}
	if (ret) {
		p_err("%s: cannot open for writing: %s", path, strerror(-ret));
		return 1;
	}
	int rc = 1;
	unsigned t = m->l.type, ks = m->l.key_size, vs = m->l.value_size, sz = size ? size : (vs < 8 ? vs : 8);
	unsigned char k[8] = { 0 };
	if (t != GX_MAP_ARRAY && t != GX_MAP_HASH) {
		p_err("%s: %s maps cannot be updated from outside (array and hash maps can)", m->name,
		      gx_map_type_name(t));
		goto out;
	}
	if (sz != 1 && sz != 2 && sz != 4 && sz != 8) {
		p_err("%s: --size must be 1, 2, 4 or 8 (values are %u bytes)", m->name, vs);
		goto out;
	}
	if ((uint64_t)off + sz > vs) {
		p_err("%s: field at offset %u of %u bytes is outside the %u-byte value", m->name, off, sz, vs);
		goto out;
	}
	if (sz < 8 && val >> (8 * sz)) {
		p_err("%s: value %" PRIu64 " does not fit in %u bytes", m->name, val, sz);
		goto out;
	}
	if (ks > 8 || (ks < 8 && key >> (8 * ks))) {
		p_err("%s: key %" PRIu64 " does not fit the map's %u-byte key", m->name, key, ks);
		goto out;
	}
	memcpy(k, &key, ks);
	unsigned char *v = gx_map__lookup(m, k);
	if (!v && t == GX_MAP_HASH) {
		unsigned char *nv = calloc(1, vs);
		if (!nv)
			goto out;
		store_field(nv + off, val, sz);
		ret = gx_map__update(m, k, nv, 0);
		free(nv);
		if (ret) {
			p_err("%s: cannot add key %" PRIu64 ": %s", m->name, key, strerror(-ret));
			goto out;
		}
		rc = 0;
		goto out;
	}
	if (!v) {
		p_err("%s: index %" PRIu64 " is outside the array (%u entries)", m->name, key, m->l.max_entries);
		goto out;
	}
	store_field(v + off, val, sz);
	rc = 0;
out:
	gx_map__free(m);
	return rc;
}

static int do_update(int argc, char **argv)
{
	static const char usage[] = "usage: gpuext map update NAME|FILE|PATH KEY VALUE [--offset N] [--size 1|2|4|8]";
	const char *pos[3] = { 0 };
	int np = 0;
	uint64_t off = 0, size = 0, key, val;
	for (int i = 1; i < argc; i++) {
		if ((!strcmp(argv[i], "--offset") || !strcmp(argv[i], "--size")) && i + 1 < argc) {
			if (parse_u64(argv[i + 1], argv[i][2] == 'o' ? &off : &size) || off > 1u << 20) {
				p_err("%s: not a number: '%s'", argv[i], argv[i + 1]);
				return 2;
			}
			i++;
		} else if (argv[i][0] != '-' && np < 3) {
			pos[np++] = argv[i];
		} else {
			p_err("%s", usage);
			return 2;
		}
	}
	if (np != 3) {
		p_err("%s", usage);
		return 2;
	}
	if (parse_u64(pos[1], &key) || parse_u64(pos[2], &val)) {
		p_err("KEY and VALUE are unsigned integers (decimal or 0x...): '%s' '%s'", pos[1], pos[2]);
		return 2;
	}
	if (strchr(pos[0], '/'))
		return update_path(pos[0], key, val, (unsigned)off, (unsigned)size);
	struct upd_req q = { .name = pos[0] };
	int n = for_each_map(collect_path, &q), rc = 0;
	if (n < 0 || !q.n) {
		p_err("no map named '%s' (see 'gpuext map list')", q.name);
		rc = 1;
	}
	for (size_t i = 0; i < q.n; i++) {
		rc |= update_path(q.paths[i], key, val, (unsigned)off, (unsigned)size);
		free(q.paths[i]);
	}
	free(q.paths);
	if (!rc)
		printf("updated %zu map%s\n", q.n, q.n == 1 ? "" : "s");
	return rc;
}

static const struct gx_cmd map_cmds[] = {
	{ "list", do_list, "maps of gpuext processes (shared memory)" },
	{ "dump", do_dump, "NAME|FILE|PATH [--all] [--devices]: print a map's entries (--devices: every context's "
			   "copy merged, and per GPU)" },
	{ "update", do_update, "NAME|FILE|PATH KEY VALUE [--offset N] [--size 1|2|4|8]: write one field of an "
			       "entry in every process's copy (steers running policies)" },
	{ 0 },
};

int do_map(int argc, char **argv)
{
	return gx_cmd_dispatch("map", map_cmds, argc - 1, argv + 1);
}
