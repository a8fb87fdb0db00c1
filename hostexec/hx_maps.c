/* hx_maps.c — the BPF maps host policies use (array, hash, LRU hash), in
 * process memory. Open addressing over a fixed slot array: no allocation
 * after load, so a handler never fails for lack of memory; an LRU hash that
 * is full replaces its least recently used entry like the kernel's. */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include "devbpf/gx_bpf.h"
#include "hostexec/hx_internal.h"

enum { T_HASH = 1, T_ARRAY = 2, T_LRU_HASH = 9 };
#define R8(x) (((x) + 7u) & ~7u)

static size_t slot_size(const struct hx_map *m)
{
	return 16 + R8(m->key_size) + R8(m->value_size);
}

int hx_map_init(struct hx_map *m)
{
	if (!m->max_entries || m->max_entries > (1u << 20) || !m->value_size || m->value_size > 4096)
		return -EINVAL;
	if (m->type == T_ARRAY) {
		if (m->key_size != 4)
			return -EINVAL;
		m->data_len = (size_t)m->max_entries * R8(m->value_size);
	} else if (m->type == T_HASH || m->type == T_LRU_HASH) {
		if (!m->key_size || m->key_size > 512)
			return -EINVAL;
		m->data_len = (size_t)m->max_entries * 2 * slot_size(m);
	} else {
		return -EOPNOTSUPP;
	}
	m->data = calloc(1, m->data_len);
	return m->data ? 0 : -ENOMEM;
}

static uint64_t hash_key(const void *k, uint32_t n)
{
	const uint8_t *p = k;
	uint64_t h = 1469598103934665603ull;
	for (uint32_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

/* Slot of key, or the first free slot on its probe path (*found says which). */
static uint8_t *probe(struct hx_map *m, const void *key, bool *found)
{
	size_t n = (size_t)m->max_entries * 2, ss = slot_size(m);
	size_t i = hash_key(key, m->key_size) % n;
	uint8_t *free_slot = NULL;
	for (size_t k = 0; k < n; k++, i = (i + 1) % n) {
		uint8_t *s = m->data + i * ss;
		if (s[0] == 1 && !memcmp(s + 16, key, m->key_size)) {
			*found = true;
			return s;
		}
		if (s[0] != 1 && !free_slot)
			free_slot = s;
		if (s[0] == 0) /* never used: end of the probe path */
			break;
	}
	*found = false;
	return free_slot;
}


int hx_map_share(struct hx_map *m, const char *policy)
{
	char name[GX_MAP_NAME_MAX];
	snprintf(name, sizeof(name), "%.16s.%.46s", policy, m->name[0] == '.' ? m->name + 1 : m->name);
	for (char *c = name; *c; c++)
		if (*c == '/')
			*c = '_';
	struct gx_map_spec spec = {.name = name, .key_size = 4, .max_entries = 1};
	if (m->internal) {
		spec.type = GX_MAP_ARRAY;
		spec.value_size = (unsigned)m->data_len;
	} else {
		spec.type = m->type == T_ARRAY ? GX_MAP_ARRAY : GX_MAP_HASH;
		spec.key_size = m->key_size;
		spec.value_size = m->value_size;
		spec.max_entries = m->max_entries;
	}
	struct gx_map *g;
	int err = gx_map__create(&spec, GX_MAP_F_SHM, &g);
	if (err)
		return err;
	if (m->internal) {
		uint8_t *v = gx_map__shard_elem(g, 0, 0);
		if (!v) {
			gx_map__free(g);
			return -EINVAL;
		}
		memcpy(v, m->data, m->data_len);
		/* knobs (.rodata*) are final now and about to be verified: from
		 * here on the policy reads a private read-only copy */
		if (m->rdonly && (err = gx_map__seal(g, m->data, m->data_len))) {
			gx_map__free(g);
			return err;
		}
		free(m->data);
		m->data = (uint8_t *)(uintptr_t)g->l.data;
	} else {
		free(m->data);
		m->data = (uint8_t *)(uintptr_t)g->l.data;
		m->data_len = (size_t)g->l.data_size;
	}
	m->shm = g;
	return 0;
}

void hx_map_release(struct hx_map *m)
{
	if (m->shm)
		gx_map__free(m->shm);
	else
		free(m->data);
	m->shm = NULL;
	m->data = NULL;
}

uint8_t *hx_map_lookup(struct hx_map *m, const void *key)
{
	if (m->shm)
		return gx_map__lookup(m->shm, key);
	if (m->type == T_ARRAY) {
		uint32_t i;
		memcpy(&i, key, 4);
		return i < m->max_entries ? m->data + (size_t)i * R8(m->value_size) : NULL;
	}
	bool found;
	uint8_t *s = probe(m, key, &found);
	if (!found)
		return NULL;
	memcpy(s + 8, &(uint64_t){++m->clock}, 8);
	return s + 16 + R8(m->key_size);
}

int hx_map_update(struct hx_map *m, const void *key, const void *val, uint64_t flags)
{
	if (flags > 2)
		return -EINVAL;
	if (m->shm) {
		int err = gx_map__update(m->shm, key, val, flags);
		if (err == -E2BIG && m->type == T_LRU_HASH && flags != 2) {
			/* full LRU hash: drop the first key (no recency in the shared
			 * layout), like an eviction */
			uint8_t k[512];
			if (!gx_map__next_key(m->shm, NULL, k))
				gx_map__delete(m->shm, k);
			err = gx_map__update(m->shm, key, val, flags);
		}
		return err;
	}
	if (m->type == T_ARRAY) {
		uint8_t *v = hx_map_lookup(m, key);
		if (!v)
			return -E2BIG;
		if (flags == 1 /* BPF_NOEXIST */)
			return -EEXIST;
		memcpy(v, val, m->value_size);
		return 0;
	}
	bool found;
	uint8_t *s = probe(m, key, &found);
	if (found && flags == 1)
		return -EEXIST;
	if (!found && flags == 2 /* BPF_EXIST */)
		return -ENOENT;
	if (!found && m->nr >= m->max_entries) { /* m->nr: live entries (a full scan per insert cost 200 µs) */
		if (m->type != T_LRU_HASH)
			return -E2BIG;
		size_t n = (size_t)m->max_entries * 2, ss = slot_size(m);
		uint8_t *old = NULL;
		uint64_t best = UINT64_MAX, st;
		for (size_t i = 0; i < n; i++) {
			uint8_t *c = m->data + i * ss;
			memcpy(&st, c + 8, 8);
			if (c[0] == 1 && st < best) {
				best = st;
				old = c;
			}
		}
		if (old) {
			old[0] = 2; /* tombstone */
			m->nr--;
			m->tombs++;
		}
		s = probe(m, key, &found);
	}
	if (!s)
		return -E2BIG;
	if (!found) {
		m->nr++;
		if (s[0] == 2)
			m->tombs--;
	}
	s[0] = 1;
	memcpy(s + 8, &(uint64_t){++m->clock}, 8);
	memcpy(s + 16, key, m->key_size);
	memcpy(s + 16 + R8(m->key_size), val, m->value_size);
	return 0;
}

int hx_map_delete(struct hx_map *m, const void *key)
{
	if (m->shm)
		return gx_map__delete(m->shm, key);
	if (m->type == T_ARRAY)
		return -EINVAL;
	bool found;
	uint8_t *s = probe(m, key, &found);
	if (!found)
		return -ENOENT;
	s[0] = 2;
	m->nr--;
	m->tombs++;
	return 0;
}

void hx_map_maintain(struct hx_map *m)
{
	/* Tombstones lengthen probe paths until misses scan the whole table:
	 * rebuild once they are a quarter of it. Only between handler calls
	 * (value pointers a program holds stay valid during its call). */
	size_t n = (size_t)m->max_entries * 2, ss = slot_size(m);
	if (m->shm || m->type == T_ARRAY || m->tombs < n / 4)
		return;
	uint8_t *old = m->data, *nd = calloc(1, m->data_len);
	if (!nd)
		return;
	m->data = nd;
	m->tombs = 0;
	for (size_t i = 0; i < n; i++) {
		uint8_t *c = old + i * ss;
		if (c[0] != 1)
			continue;
		bool found;
		uint8_t *d = probe(m, c + 16, &found);
		if (d)
			memcpy(d, c, ss);
	}
	free(old);
}
