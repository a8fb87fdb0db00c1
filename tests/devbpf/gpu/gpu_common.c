/* gpu_common.c — spec file and dump for the GPU differential test. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/devbpf/gpu/gpu_common.h"

/* Arrays with non-zero contents (global data: .rodata/.data, whose bytes
 * the policy reads, e.g. printk formats) carry them as hex after the name:
 * without them the GPU run saw an empty .rodata and printk returned 0. */
int gx_t_write_specs(FILE *f, struct gx_map **maps, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct gx_map *m = maps[i];
		const unsigned char *d = (const unsigned char *)(uintptr_t)m->l.data;
		fprintf(f, "%u %u %u %u %s", m->l.type, m->l.key_size, m->l.value_size, m->l.max_entries,
			m->name);
		size_t nz = 0;
		for (size_t k = 0; m->l.type == GX_MAP_ARRAY && k < m->l.data_size; k++)
			if (d[k])
				nz = k + 1;
		if (nz)
			fputc(' ', f);
		for (size_t k = 0; k < nz; k++)
			fprintf(f, "%02x", d[k]);
		fputc('\n', f);
	}
	return 0;
}

static int hexv(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int gx_t_read_specs(FILE *f, unsigned nr_sms, struct gx_map ***out, size_t *nout)
{
	struct gx_map **maps = calloc(64, sizeof(*maps));
	size_t n = 0, cap = 0;
	char *line = NULL;
	int ret = maps ? 0 : -1;
	while (!ret && n < 64 && getline(&line, &cap, f) > 0) {
		unsigned t, k, v, m;
		char name[128];
		int off = 0;
		if (sscanf(line, "%u %u %u %u %127s%n", &t, &k, &v, &m, name, &off) != 5)
			break;
		struct gx_map_spec s = { name, t, k, v, m, 0 };
		if (t == GX_MAP_PERSM_ARRAY)
			s.nr_shards = nr_sms;
		else if (t == GX_MAP_PERWARP_ARRAY)
			s.nr_shards = nr_sms * GX_WARP_SLOTS_PER_SM;
		if (gx_map__create(&s, 0, &maps[n])) {
			ret = -1;
			break;
		}
		unsigned char *d = (unsigned char *)(uintptr_t)maps[n]->l.data;
		const char *h = line + off;
		while (*h == ' ')
			h++;
		for (size_t b = 0; hexv(h[0]) >= 0 && hexv(h[1]) >= 0; b++, h += 2) {
			if (t != GX_MAP_ARRAY || b >= maps[n]->l.data_size) {
				ret = -1;
				break;
			}
			d[b] = (unsigned char)(hexv(h[0]) << 4 | hexv(h[1]));
		}
		n++;
	}
	free(line);
	if (ret) {
		for (size_t i = 0; maps && i < n; i++)
			gx_map__free(maps[i]);
		free(maps);
		return -1;
	}
	*out = maps;
	*nout = n;
	return 0;
}

struct kv {
	uint64_t k, v;
};
static int cmp_kv(const void *a, const void *b)
{
	const struct kv *x = a, *y = b;
	return x->k < y->k ? -1 : x->k > y->k;
}

struct ringsum {
	uint64_t n, sum;
};
static int ring_cb(void *ctx, unsigned type, const void *rec, size_t len)
{
	struct ringsum *s = ctx;
	if (type == GX_REC_DATA && len == sizeof(struct gx_rec_hdr) + 8) {
		const uint32_t *e = (const uint32_t *)((const char *)rec + sizeof(struct gx_rec_hdr));
		s->n++;
		s->sum += (uint64_t)e[0] * 1000 + e[1];
	}
	return 0;
}

void gx_t_dump(FILE *f, struct gx_map **maps, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct gx_map *m = maps[i];
		const char *name = m->name;
		uint32_t idx;
		switch (m->l.type) {
		case GX_MAP_ARRAY:
			for (int r = gx_map__next_key(m, NULL, &idx); !r; r = gx_map__next_key(m, &idx, &idx)) {
				const uint64_t *v = gx_map__shard_elem(m, 0, idx);
				if (m->l.value_size == 8 && *v)
					fprintf(f, "%s %u %llu\n", name, idx, (unsigned long long)*v);
			}
			break;
		case GX_MAP_PERSM_ARRAY:
		case GX_MAP_PERWARP_ARRAY:
			for (int r = gx_map__next_key(m, NULL, &idx); !r; r = gx_map__next_key(m, &idx, &idx)) {
				uint64_t v[8] = { 0 };
				if (m->l.value_size <= sizeof(v) && !gx_map__merged_u64(m, idx, v) && v[0])
					fprintf(f, "%s merged %u %llu\n", name, idx, (unsigned long long)v[0]);
			}
			break;
		case GX_MAP_HASH: {
			struct kv *e = calloc(m->l.nr_buckets + 1, sizeof(*e));
			size_t ne = 0;
			uint64_t key = 0;
			for (int r = gx_map__next_key(m, NULL, &key); !r && e && m->l.key_size == 8;
			     r = gx_map__next_key(m, &key, &key)) {
				const uint64_t *v = gx_map__lookup(m, &key);
				if (v && ne < m->l.nr_buckets)
					e[ne].k = key, e[ne++].v = *v;
			}
			if (e)
				qsort(e, ne, sizeof(*e), cmp_kv);
			fprintf(f, "%s entries %zu\n", name, ne);
			for (size_t j = 0; j < ne; j++)
				fprintf(f, "%s %llx %llu\n", name, (unsigned long long)e[j].k,
					(unsigned long long)e[j].v);
			free(e);
			break;
		}
		case GX_MAP_RINGBUF: {
			struct ringsum s = { 0, 0 };
			gx_ring__drain(gx_map__ring(m), ring_cb, &s);
			fprintf(f, "%s records %llu checksum %llu drops %llu\n", name,
				(unsigned long long)s.n, (unsigned long long)s.sum,
				(unsigned long long)gx_map__ring(m)->drops);
			break;
		}
		}
	}
}
