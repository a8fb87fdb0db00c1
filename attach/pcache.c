/* gx_pcache.c — the policy cache: keys, folder, file format (gx_pcache.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attach/gx_attach.h"
#include "devbpf/gx_bpf.h"
#include "common/gx_trust.h"
#include "common/gx_util.h"

uint64_t gx_pcache_hash(const void *buf, size_t len)
{
	const unsigned char *p = buf;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

uint64_t gx_pcache_key(const void *obj, size_t len)
{
	/* the JIT's A/B switches change its output: another key each */
	return gx_pcache_hash(obj, len) ^ (gx_jit__fold_env() ? 0 : 0x6e6f2d666f6c64ull /* "no-fold" */);
}

unsigned gx_pcache_jit_sm(unsigned sm)
{
	return sm > 90 || !sm ? 90 : sm;
}

int gx_pcache_path(const char *dir, uint64_t hash, unsigned sm, char *out, size_t n)
{
	int w = snprintf(out, n, "%s/%016llx-%s-j%d-sm%u-ptx%u.gxpol", dir, (unsigned long long)hash,
			 GX_VERSION, GX_PCACHE_JITREV, sm, GX_PCACHE_PTXVER);
	return w < 0 || (size_t)w >= n ? gx_err(-ENAMETOOLONG) : 0;
}

void gx_pdesc_free(struct gx_policy_desc *d)
{
	if (!d)
		return;
	free(d->ptx);
	free(d->progs);
	for (size_t i = 0; d->maps && i < d->nr_maps; i++)
		free(d->maps[i].init);
	free(d->maps);
	free(d->vars);
	memset(d, 0, sizeof(*d));
}

char *gx_pdesc_serialize(const struct gx_policy_desc *d, size_t *len)
{
	struct gx_buf b;
	gx_buf_init(&b);
	gx_buf_printf(&b, "gxpol %d\nname %s\nhash %016llx\ntarget sm%u ptx%u\n", GX_PCACHE_FORMAT, d->name,
		      (unsigned long long)d->hash, d->sm, d->ptxver);
	for (size_t i = 0; i < d->nr_progs; i++)
		gx_buf_printf(&b, "prog %s %u %s\n", d->progs[i].func, d->progs[i].hook,
			      d->progs[i].glob[0] ? d->progs[i].glob : "-");
	for (size_t i = 0; i < d->nr_maps; i++) {
		const struct gx_pol_map *m = &d->maps[i];
		gx_buf_printf(&b, "map %s %u %u %u %u %u ", m->name, m->type, m->key_size, m->value_size,
			      m->max_entries, m->gx_flags);
		if (!m->init_len)
			gx_buf_puts(&b, "-");
		for (size_t k = 0; k < m->init_len; k++)
			gx_buf_printf(&b, "%02x", m->init[k]);
		gx_buf_puts(&b, "\n");
	}
	for (size_t i = 0; i < d->nr_vars; i++)
		gx_buf_printf(&b, "var %s %u %u %u\n", d->vars[i].name, d->vars[i].map, d->vars[i].off,
			      d->vars[i].size);
	gx_buf_printf(&b, "ptx %zu\n", d->ptx_len);
	gx_buf_append(&b, d->ptx ? d->ptx : "", d->ptx_len);
	return gx_buf_steal(&b, len);
}

static int bad(char *err, size_t n, int line, const char *fmt, ...)
{
	char why[160];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (err && n)
		snprintf(err, n, "policy cache entry, line %d: %s", line, why);
	return gx_err(-EINVAL);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int gx_pdesc_parse(const char *text, size_t len, struct gx_policy_desc *d, char *err, size_t err_sz)
{
	memset(d, 0, sizeof(*d));
	const char *p = text, *end = text + len;
	int line = 0, ret;
	char buf[1024];
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		line++;
		if (!nl) {
			ret = bad(err, err_sz, line, "truncated");
			goto fail;
		}
		size_t n = (size_t)(nl - p);
		if (n >= sizeof(buf) - 1 && strncmp(p, "map ", 4)) {
			ret = bad(err, err_sz, line, "line too long");
			goto fail;
		}
		char *l = strndup(p, n);
		if (!l) {
			ret = gx_err(-ENOMEM);
			goto fail;
		}
		p = nl + 1;
		unsigned a, b2;
		int fmt;
		unsigned long long h;
		ret = 0;
		if (line == 1) {
			if (sscanf(l, "gxpol %d", &fmt) != 1 || fmt != GX_PCACHE_FORMAT)
				ret = bad(err, err_sz, line, "not a gpuext policy cache file (format %d expected)",
					  GX_PCACHE_FORMAT);
		} else if (!strncmp(l, "name ", 5)) {
			snprintf(d->name, sizeof(d->name), "%s", l + 5);
		} else if (sscanf(l, "hash %llx", &h) == 1) {
			d->hash = h;
		} else if (sscanf(l, "target sm%u ptx%u", &a, &b2) == 2) {
			d->sm = a, d->ptxver = b2;
		} else if (!strncmp(l, "prog ", 5)) {
			struct gx_pol_prog *np = realloc(d->progs, (d->nr_progs + 1) * sizeof(*np));
			if (!np) {
				free(l);
				ret = gx_err(-ENOMEM);
				goto fail;
			}
			d->progs = np;
			struct gx_pol_prog *pr = &np[d->nr_progs];
			memset(pr, 0, sizeof(*pr));
			if (sscanf(l, "prog %95s %u %127s", pr->func, &pr->hook, pr->glob) != 3 || !pr->hook ||
			    (pr->hook & (pr->hook - 1)))
				ret = bad(err, err_sz, line, "bad prog line");
			if (!strcmp(pr->glob, "-"))
				pr->glob[0] = 0;
			d->nr_progs++;
		} else if (!strncmp(l, "map ", 4)) {
			struct gx_pol_map *nm = realloc(d->maps, (d->nr_maps + 1) * sizeof(*nm));
			if (!nm) {
				free(l);
				ret = gx_err(-ENOMEM);
				goto fail;
			}
			d->maps = nm;
			struct gx_pol_map *m = &nm[d->nr_maps++];
			memset(m, 0, sizeof(*m));
			int off = 0;
			if (sscanf(l, "map %63s %u %u %u %u %u %n", m->name, &m->type, &m->key_size,
				   &m->value_size, &m->max_entries, &m->gx_flags, &off) != 6 || !off) {
				ret = bad(err, err_sz, line, "bad map line");
			} else if (strcmp(l + off, "-")) {
				size_t hl = strlen(l + off);
				if (hl % 2 || hl / 2 > m->value_size) {
					ret = bad(err, err_sz, line, "bad initial value");
				} else if (!(m->init = malloc(hl / 2 + 1))) {
					ret = gx_err(-ENOMEM);
				} else {
					m->init_len = hl / 2;
					for (size_t k = 0; k < m->init_len && !ret; k++) {
						int hi = hexval(l[off + 2 * k]), lo = hexval(l[off + 2 * k + 1]);
						if (hi < 0 || lo < 0)
							ret = bad(err, err_sz, line, "bad initial value");
						else
							m->init[k] = (unsigned char)(hi << 4 | lo);
					}
				}
			}
		} else if (!strncmp(l, "var ", 4)) {
			struct gx_pol_var *nv = realloc(d->vars, (d->nr_vars + 1) * sizeof(*nv));
			if (!nv) {
				free(l);
				ret = gx_err(-ENOMEM);
				goto fail;
			}
			d->vars = nv;
			struct gx_pol_var *v = &nv[d->nr_vars++];
			memset(v, 0, sizeof(*v));
			if (sscanf(l, "var %63s %u %u %u", v->name, &v->map, &v->off, &v->size) != 4)
				ret = bad(err, err_sz, line, "bad var line");
		} else if (sscanf(l, "ptx %u", &a) == 1) {
			free(l);
			if ((size_t)(end - p) != a) {
				ret = bad(err, err_sz, line, "PTX length %u, %zu bytes follow", a, (size_t)(end - p));
				goto fail;
			}
			if (memchr(p, 0, a)) { /* the driver and the rewriter read it as a C string */
				ret = bad(err, err_sz, line, "a NUL byte in the PTX text");
				goto fail;
			}
			d->ptx = malloc((size_t)a + 1);
			if (!d->ptx) {
				ret = gx_err(-ENOMEM);
				goto fail;
			}
			memcpy(d->ptx, p, a);
			d->ptx[a] = 0;
			d->ptx_len = a;
			if (!d->name[0] || !d->nr_progs) {
				ret = bad(err, err_sz, line, "no name or no programs");
				goto fail;
			}
			for (size_t i = 0; i < d->nr_vars; i++)
				if (d->vars[i].map >= d->nr_maps ||
				    d->vars[i].off + (uint64_t)d->vars[i].size > d->maps[d->vars[i].map].value_size) {
					ret = bad(err, err_sz, line, "variable %s outside its map", d->vars[i].name);
					goto fail;
				}
			return 0;
		} else {
			ret = bad(err, err_sz, line, "unknown line");
		}
		free(l);
		if (ret)
			goto fail;
	}
	ret = bad(err, err_sz, line, "no PTX section");
fail:
	gx_pdesc_free(d);
	return ret;
}

int gx_pcache_load(const char *dir, uint64_t hash, unsigned sm, struct gx_policy_desc *d, char *err,
		   size_t err_sz)
{
	char path[4096], why[96];
	int ret = gx_pcache_path(dir, hash, sm, path, sizeof(path));
	if (ret)
		return ret;
	/* The PTX inside is linked into every kernel unverified: only a file
	 * nobody but this user or root could have written (gx_trust.h). */
	ret = gx_dir_trusted(dir, GX_TRUST_ANY_OWNER, why, sizeof(why));
	if (ret == -EPERM)
		snprintf(err, err_sz, "policy cache folder %s: %s", dir, why);
	if (ret)
		return ret == -EPERM ? ret : gx_err(-ENOENT);
	char *buf = NULL;
	size_t len = 0;
	ret = gx_read_trusted(path, GX_TRUST_ANY_OWNER, &buf, &len, 256u << 20, why, sizeof(why));
	if (ret == -EPERM)
		snprintf(err, err_sz, "policy cache entry %s: %s", path, why);
	if (ret)
		return gx_err(ret);
	ret = gx_pdesc_parse(buf, len, d, err, err_sz);
	free(buf);
	if (!ret && (d->hash != hash || d->sm != sm)) {
		gx_pdesc_free(d);
		snprintf(err, err_sz, "policy cache entry %s: key mismatch", path);
		ret = gx_err(-EINVAL);
	}
	return ret;
}

int gx_pcache_store(const char *dir, const struct gx_policy_desc *d, unsigned flags)
{
	bool shared = flags & GX_PCACHE_SHARED;
	char path[4096], tmp[4200];
	int ret = gx_mkdir_p(dir, shared ? 0755 : 0700);
	if (ret)
		return gx_err(ret);
	/* Written only into a folder of this user closed to others: a
	 * file put anywhere else could be swapped before the next read. */
	if (gx_dir_trusted(dir, GX_TRUST_OWN, NULL, 0))
		return gx_err(-EPERM);
	ret = gx_pcache_path(dir, d->hash, d->sm, path, sizeof(path));
	if (ret)
		return ret;
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	size_t len;
	char *text = gx_pdesc_serialize(d, &len);
	if (!text)
		return gx_err(-ENOMEM);
	unlink(tmp); /* a leftover of a dead process with our pid */
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	ret = fd < 0 ? -errno : 0;
	for (size_t w = 0; !ret && w < len;) {
		ssize_t r = write(fd, text + w, len - w);
		if (r < 0 && errno != EINTR)
			ret = -errno;
		else if (r > 0)
			w += (size_t)r;
	}
	free(text);
	if (!ret && shared && fchmod(fd, 0644))
		ret = -errno;
	if (fd >= 0 && close(fd) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret && fd >= 0)
		unlink(tmp);
	return ret ? gx_err(ret) : 0;
}

/* Globals are .data/.bss/.rodata maps named "<object>.<section>". */
static const struct gx_pol_var *find_var(const struct gx_policy_desc *d, const char *name, size_t n)
{
	for (size_t i = 0; i < d->nr_vars; i++)
		if (strlen(d->vars[i].name) == n && !strncmp(d->vars[i].name, name, n))
			return &d->vars[i];
	return NULL;
}

int gx_pdesc_set_knobs(struct gx_policy_desc *d, const char *knobs, char *err, size_t en)
{
	for (const char *k = knobs; k && *k;) {
		const char *c = strchr(k, ','), *eq = strchr(k, '=');
		size_t len = c ? (size_t)(c - k) : strlen(k);
		if (!eq || eq > k + len) {
			snprintf(err, en, "knob '%.*s': expected name=value", (int)len, k);
			return gx_err(-EINVAL);
		}
		const struct gx_pol_var *v = find_var(d, k, (size_t)(eq - k));
		const struct gx_pol_map *m = v ? &d->maps[v->map] : NULL;
		char *end;
		errno = 0;
		unsigned long long x = strtoull(eq + 1, &end, 0);
		if (!v || !m->init || v->off + (size_t)v->size > m->init_len ||
		    !(v->size == 1 || v->size == 2 || v->size == 4 || v->size == 8)) {
			snprintf(err, en, "knob '%.*s': no such setting", (int)(eq - k), k);
			return gx_err(-EINVAL);
		}
		if (strstr(m->name, "..rodata")) {
			snprintf(err, en, "knob '%.*s' is const (.rodata, folded by the JIT); it must be a plain global",
				 (int)(eq - k), k);
			return gx_err(-EINVAL);
		}
		if (errno || end == eq + 1 || end != k + len ||
		    (v->size < 8 && x >> (8 * v->size))) {
			snprintf(err, en, "knob '%.*s': bad value", (int)len, k);
			return gx_err(-EINVAL);
		}
		memcpy(m->init + v->off, &x, v->size); /* little endian */
		k = c ? c + 1 : NULL;
	}
	return 0;
}

unsigned gx_pdesc_mem_sample(const struct gx_policy_desc *d, unsigned hook)
{
	uint32_t n = 0;
	if (!(hook & GDEV_HOOK_MEM) || gx_pdesc_get_var(d, GX_MEM_SAMPLE_VAR, &n, sizeof(n)))
		return 0;
	return n;
}

int gx_pdesc_get_var(const struct gx_policy_desc *d, const char *name, void *out, size_t size)
{
	const struct gx_pol_var *v = find_var(d, name, strlen(name));
	if (!v || v->size != size || !d->maps[v->map].init || v->off + size > d->maps[v->map].init_len)
		return gx_err(-ENOENT);
	memcpy(out, d->maps[v->map].init + v->off, size);
	return 0;
}
