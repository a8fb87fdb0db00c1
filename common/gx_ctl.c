/* gx_ctl.c — the control messages of gpuext attach (gx_ctl.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/gx_ctl.h"
#include "common/gx_util.h"

static const char *const op_names[] = { "", "attach", "detach", "status", "reply" };

/* A value: printable, no control characters (a path may hold spaces). */
static int copy_val(char *dst, size_t n, const char *v, size_t vl)
{
	if (!vl || vl >= n)
		return -1;
	for (size_t i = 0; i < vl; i++)
		if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f)
			return -1;
	memcpy(dst, v, vl);
	dst[vl] = 0;
	return 0;
}

static int parse_u64(const char *v, size_t vl, uint64_t max, uint64_t *out)
{
	uint64_t x = 0;
	if (!vl || vl > 20)
		return -1;
	for (size_t i = 0; i < vl; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -1;
		uint64_t d = (uint64_t)(v[i] - '0');
		if (x > (max - d) / 10)
			return -1;
		x = x * 10 + d;
	}
	*out = x;
	return 0;
}

int gx_ctl_parse(const char *text, size_t len, struct gx_ctl_msg *m, char *err, size_t en)
{
	memset(m, 0, sizeof(*m));
	if (len > GX_CTL_MAX_BYTES) {
		snprintf(err, en, "message of %zu bytes (at most %d)", len, GX_CTL_MAX_BYTES);
		return -EINVAL;
	}
	size_t off = 0;
	unsigned line = 0;
	while (off < len) {
		const char *s = text + off;
		const char *nl = memchr(s, '\n', len - off);
		size_t ll = nl ? (size_t)(nl - s) : len - off;
		off += ll + (nl ? 1 : 0);
		line++;
		if (line == 1) {
			if (ll != strlen(GX_CTL_MAGIC) || memcmp(s, GX_CTL_MAGIC, ll)) {
				snprintf(err, en, "line 1: not a gpuext control message (want \"%s\")", GX_CTL_MAGIC);
				return -EINVAL;
			}
			continue;
		}
		if (!ll)
			continue;
		const char *sp = memchr(s, ' ', ll);
		if (!sp) {
			snprintf(err, en, "line %u: no value", line);
			return -EINVAL;
		}
		size_t kl = (size_t)(sp - s), vl = ll - kl - 1;
		const char *v = sp + 1;
#define KEY(k) (kl == sizeof(k) - 1 && !memcmp(s, k, kl))
		int bad = 0;
		uint64_t x = 0;
		if (KEY("seq")) {
			bad = parse_u64(v, vl, UINT64_MAX, &m->seq);
		} else if (KEY("op")) {
			bad = 1;
			for (unsigned i = 1; i < sizeof(op_names) / sizeof(op_names[0]); i++)
				if (vl == strlen(op_names[i]) && !memcmp(v, op_names[i], vl))
					m->op = (enum gx_ctl_op)i, bad = 0;
		} else if (KEY("tool")) {
			bad = m->nr_tools + m->nr_policies >= GX_CTL_MAX_ITEMS ||
			      copy_val(m->tool[m->nr_tools], sizeof(m->tool[0]), v, vl) ||
			      strpbrk(m->tool[m->nr_tools], "/., ");
			if (!bad)
				m->nr_tools++;
		} else if (KEY("policy")) {
			bad = m->nr_tools + m->nr_policies >= GX_CTL_MAX_ITEMS ||
			      copy_val(m->policy[m->nr_policies], sizeof(m->policy[0]), v, vl) ||
			      m->policy[m->nr_policies][0] != '/';
			if (!bad)
				m->nr_policies++;
		} else if (KEY("sched")) {
			bad = copy_val(m->sched, sizeof(m->sched), v, vl) || m->sched[0] != '/';
		} else if (KEY("dir")) {
			bad = copy_val(m->dir, sizeof(m->dir), v, vl) || m->dir[0] != '/';
		} else if (KEY("what")) {
			bad = copy_val(m->what, sizeof(m->what), v, vl) || strchr(m->what, '/');
		} else if (KEY("sample")) {
			unsigned long ev, fi;
			bad = copy_val(m->sample, sizeof(m->sample), v, vl) || gx_ctl_sample_parse(m->sample, &ev, &fi);
		} else if (KEY("status")) {
			int neg = vl && v[0] == '-';
			bad = parse_u64(v + neg, vl - (size_t)neg, 4095, &x);
			m->status = neg ? -(int)x : (int)x;
		} else if (KEY("msg")) {
			bad = copy_val(m->msg, sizeof(m->msg), v, vl);
		} else if (KEY("attached")) {
			bad = copy_val(m->attached, sizeof(m->attached), v, vl);
		} else if (KEY("modules")) {
			bad = parse_u64(v, vl, UINT32_MAX, &x);
			m->modules = (unsigned)x;
		} else if (KEY("ms")) {
			bad = parse_u64(v, vl, UINT32_MAX, &x);
			m->ms = (unsigned)x;
		} else {
			snprintf(err, en, "line %u: unknown key \"%.*s\"", line, (int)(kl < 32 ? kl : 32), s);
			return -EINVAL;
		}
#undef KEY
		if (bad) {
			snprintf(err, en, "line %u: bad value for \"%.*s\"", line, (int)(kl < 32 ? kl : 32), s);
			return -EINVAL;
		}
	}
	if (line == 0) {
		snprintf(err, en, "empty message");
		return -EINVAL;
	}
	if (m->op == GX_CTL_NONE) {
		snprintf(err, en, "no op");
		return -EINVAL;
	}
	if (m->op == GX_CTL_ATTACH && !m->nr_tools && !m->nr_policies && !m->sched[0]) {
		snprintf(err, en, "attach: nothing to attach");
		return -EINVAL;
	}
	return 0;
}

int gx_ctl_sample_parse(const char *s, unsigned long *every, unsigned long *first)
{
	uint64_t n, k = GX_CTL_SAMPLE_FIRST;
	if (!s)
		return -EINVAL;
	size_t nl = strcspn(s, ",");
	if (parse_u64(s, nl, 1000000, &n) || n < 1)
		return -EINVAL;
	if (s[nl] && (strncmp(s + nl, ",first=", 7) || parse_u64(s + nl + 7, strlen(s + nl + 7), 1000000000, &k)))
		return -EINVAL;
	*every = (unsigned long)n;
	*first = (unsigned long)k;
	return 0;
}

static int has_nl(const char *s)
{
	return strchr(s, '\n') != NULL;
}

int gx_ctl_format(const struct gx_ctl_msg *m, char *buf, size_t n)
{
	if ((unsigned)m->op >= sizeof(op_names) / sizeof(op_names[0]) || m->op == GX_CTL_NONE ||
	    m->nr_tools > GX_CTL_MAX_ITEMS || m->nr_policies > GX_CTL_MAX_ITEMS)
		return -EINVAL;
	size_t o = 0;
	int w;
#define PUT(...)                                                       \
	do {                                                           \
		w = snprintf(buf + o, o < n ? n - o : 0, __VA_ARGS__); \
		if (w < 0 || o + (size_t)w >= n)                       \
			return -ENOSPC;                                \
		o += (size_t)w;                                        \
	} while (0)
	PUT("%s\nseq %llu\nop %s\n", GX_CTL_MAGIC, (unsigned long long)m->seq, op_names[m->op]);
	for (unsigned i = 0; i < m->nr_tools; i++) {
		if (has_nl(m->tool[i]))
			return -EINVAL;
		PUT("tool %s\n", m->tool[i]);
	}
	for (unsigned i = 0; i < m->nr_policies; i++) {
		if (has_nl(m->policy[i]))
			return -EINVAL;
		PUT("policy %s\n", m->policy[i]);
	}
	const char *f[] = { m->sched, m->dir, m->what, m->sample, m->msg, m->attached };
	const char *k[] = { "sched", "dir", "what", "sample", "msg", "attached" };
	for (unsigned i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		if (!f[i][0])
			continue;
		if (has_nl(f[i]))
			return -EINVAL;
		PUT("%s %s\n", k[i], f[i]);
	}
	if (m->op == GX_CTL_REPLY)
		PUT("status %d\nmodules %u\nms %u\n", m->status, m->modules, m->ms);
#undef PUT
	return (int)o;
}

int gx_ctl_dir(char *buf, size_t n)
{
	const char *e = getenv("GPUEXT_CTL_DIR");
	int len = e && *e ? snprintf(buf, n, "%s", e) : snprintf(buf, n, "/dev/shm/gpuext-%u/ctl", (unsigned)geteuid());
	return len < 0 || (size_t)len >= n ? -ENAMETOOLONG : 0;
}

int gx_ctl_write(const char *dir, const char *name, const char *data, size_t len)
{
	char path[4400];
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
		return -ENAMETOOLONG;
	const void *parts[1] = { data };
	return gx_write_parts(dir, path, parts, &len, 1);
}
