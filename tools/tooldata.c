/* tooldata.c — what a tool run left behind, loaded for the reports: the
 * shim's tool logs ("<pid>-<tool>.events", gpuext/gx_toollog.h) and the
 * tool's map files ("<pid>-<tool>.<map>[@ctx]") in one folder, merged over
 * processes.
 *
 * GPUs: a record, launch or map file belongs to a (process, context); the
 * log says which device each context ran on (GX_TEV_CTX), so a device is
 * the CUDA ordinal as that process saw it. Reports stay the same shape on
 * one GPU: device columns, fields and trace process names appear only when
 * the data has more than one device. Traces put each GPU on its own track
 * (Chrome trace "pid" = device + 1, so GPU 0 keeps pid 1, named "gpuext
 * TOOL: GPU N (sm_XX)") with one thread per SM. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/gx_util.h"
#include "gpuext/gx_toollog.h"
#include "tools/tooldata_internal.h"

static void *grow(void *p, size_t *cap, size_t n, size_t sz)
{
	if (n < *cap)
		return p;
	size_t nc = *cap ? *cap * 2 : 64;
	void *q = realloc(p, nc * sz);
	if (q)
		*cap = nc;
	return q;
}

/* The exec list `exec` of process pid (a linear search over the few execs
 * a program has), added if new; NULL when out of memory. */
static struct td_gexec *gexec_of(struct tooldata *td, uint32_t pid, uint64_t exec)
{
	for (size_t i = 0; i < td->nr_gexecs; i++)
		if (td->gexecs[i].pid == pid && td->gexecs[i].exec == exec)
			return &td->gexecs[i];
	if (!(td->gexecs = grow(td->gexecs, &td->cap_x, td->nr_gexecs, sizeof(*td->gexecs))))
		return NULL;
	struct td_gexec *x = &td->gexecs[td->nr_gexecs++];
	memset(x, 0, sizeof(*x));
	x->pid = pid, x->exec = exec;
	return x;
}

/* A graph launch's kernel nodes, added to the per-kernel sums (a linear
 * search: a program has tens to hundreds of graph kernels) and to its
 * exec's launches. */
static void add_glaunch(struct tooldata *td, uint32_t pid, const struct gx_tev_glaunch *g, size_t len)
{
	td->graph_launches++;
	size_t nr = (len - sizeof(*g)) / sizeof(g->k[0]);
	if (g->nr < nr)
		nr = g->nr;
	struct td_gexec *x = gexec_of(td, pid, g->exec);
	if (x) {
		x->launches++;
		if (!x->rec)
			x->rec = g, x->nr = nr;
	}
	for (size_t i = 0; i < nr; i++) {
		const struct gx_tev_gkernel *e = &g->k[i];
		uint32_t fl = e->flags & GX_TEV_L_INSTRUMENTED;
		size_t j = 0;
		while (j < td->nr_gkernels && (td->gkernels[j].kernel_id != e->kernel_id || td->gkernels[j].flags != fl))
			j++;
		if (j == td->nr_gkernels) {
			if (!(td->gkernels = grow(td->gkernels, &td->cap_g, td->nr_gkernels, sizeof(*td->gkernels))))
				return;
			td->gkernels[td->nr_gkernels++] = (struct td_gkernel){ e->kernel_id, fl, 0 };
		}
		td->gkernels[j].nodes += e->nodes;
	}
}

static int load_events(struct tooldata *td, const char *path)
{
	char *buf = NULL;
	size_t len = 0;
	int ret = gx_read_file(path, &buf, &len, (size_t)8 << 30);
	if (ret)
		return ret;
	char **nb = realloc(td->bufs, (td->nr_bufs + 1) * sizeof(*nb));
	if (!nb) {
		free(buf);
		return -ENOMEM;
	}
	td->bufs = nb;
	td->bufs[td->nr_bufs++] = buf;
	uint32_t pid = 0;
	for (size_t off = 0; off + sizeof(struct gx_tev) <= len;) {
		const struct gx_tev *h = (const struct gx_tev *)(buf + off);
		if (h->len < sizeof(*h) || h->len % 8 || h->len > len - off)
			break; /* truncated tail (process killed mid-write) */
		switch (h->type) {
		case GX_TEV_PROC:
			if (h->len >= sizeof(struct gx_tev_proc)) {
				pid = ((const struct gx_tev_proc *)h)->pid;
				td->nr_procs++;
			}
			break;
		case GX_TEV_CTX:
			if (h->len >= sizeof(struct gx_tev_ctx) &&
			    (td->ctxs = grow(td->ctxs, &td->cap_c, td->nr_ctxs, sizeof(*td->ctxs)))) {
				const struct gx_tev_ctx *c = (const void *)h;
				td->ctxs[td->nr_ctxs++] = (struct td_ctx){ pid, c->ctx, c->dev, c->sm, c->nr_sms,
									   c->calibrated, c->gt_minus_host,
									   c->calib_err_ns };
			}
			break;
		case GX_TEV_KNAME:
			if (h->len > sizeof(struct gx_tev_kname) &&
			    (td->knames = grow(td->knames, &td->cap_k, td->nr_knames, sizeof(*td->knames)))) {
				const struct gx_tev_kname *k = (const void *)h;
				if (memchr(k->name, 0, h->len - sizeof(*k)))
					td->knames[td->nr_knames++] = (struct td_kname){ k->kernel_id, k->name };
			}
			break;
		case GX_TEV_LAUNCH:
			/* the first revision's records end before flags: flags 0 */
			if (h->len >= GX_TEV_LAUNCH_V1_SIZE &&
			    (td->launches = grow(td->launches, &td->cap_l, td->nr_launches, sizeof(*td->launches)))) {
				struct gx_tev_launch l = { 0 };
				memcpy(&l, h, h->len < sizeof(l) ? h->len : sizeof(l));
				td->launch_flags |= h->len >= sizeof(l);
				struct td_launch *o = &td->launches[td->nr_launches++];
				*o = (struct td_launch){ .pid = pid, .ctx = l.ctx, .seq = l.seq, .host_ns = l.host_ns,
							 .kernel_id = l.kernel_id, .flags = l.flags, .stream = l.stream };
				memcpy(o->grid, l.grid, sizeof(o->grid));
				memcpy(o->block, l.block, sizeof(o->block));
			}
			break;
		case GX_TEV_LTIME:
			if (h->len >= sizeof(struct gx_tev_ltime) &&
			    (td->ltimes = grow(td->ltimes, &td->cap_t, td->nr_ltimes, sizeof(*td->ltimes)))) {
				const struct gx_tev_ltime *r = (const void *)h;
				td->ltimes[td->nr_ltimes++] = (struct td_ltime){ pid, r->ctx, r->seq, r->start_ns,
										 r->gpu_ns };
			}
			break;
		case GX_TEV_REC:
			if (h->len >= sizeof(struct gx_tev_rec) &&
			    (td->recs = grow(td->recs, &td->cap_r, td->nr_recs, sizeof(*td->recs)))) {
				const struct gx_tev_rec *r = (const void *)h;
				td->recs[td->nr_recs++] = (struct td_rec){ pid, r->ctx, r->map,
									   (uint32_t)(h->len - sizeof(*r)), r + 1 };
			}
			break;
		case GX_TEV_GLAUNCH:
			if (h->len >= sizeof(struct gx_tev_glaunch))
				add_glaunch(td, pid, (const struct gx_tev_glaunch *)h, h->len);
			break;
		case GX_TEV_GLTIME:
			if (h->len >= sizeof(struct gx_tev_gltime)) {
				const struct gx_tev_gltime *r = (const void *)h;
				struct td_gexec *x = gexec_of(td, pid, r->exec);
				if (x)
					x->timed++, x->gpu_ns += r->gpu_ns;
				td->graph_timed++;
			}
			break;
		case GX_TEV_DROPS:
			if (h->len >= sizeof(struct gx_tev_drops))
				td->drops += ((const struct gx_tev_drops *)h)->drops;
			break;
		default:
			break;
		}
		off += h->len;
	}
	return 0;
}

int td_load(struct tooldata *td, const char *dir, const char *tool)
{
	memset(td, 0, sizeof(*td));
	td->tool = tool;
	td->dir = dir;
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	char suffix[96], p[4400];
	snprintf(suffix, sizeof(suffix), "-%s.events", tool);
	struct dirent *e;
	int ret = 0;
	char **names = NULL;
	size_t nn = 0;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name), sl = strlen(suffix);
		if (l > sl && !strcmp(e->d_name + l - sl, suffix)) {
			char **q = realloc(names, (nn + 1) * sizeof(*q));
			if (!q)
				break;
			names = q;
			names[nn++] = strdup(e->d_name);
		}
	}
	closedir(d);
	/* Sorted, so output does not depend on readdir order. */
	for (size_t i = 0; i < nn; i++)
		for (size_t j = i + 1; j < nn; j++)
			if (names[i] && names[j] && strcmp(names[i], names[j]) > 0) {
				char *t = names[i];
				names[i] = names[j];
				names[j] = t;
			}
	for (size_t i = 0; i < nn; i++) {
		if (names[i] && !ret) {
			snprintf(p, sizeof(p), "%.4000s/%s", dir, names[i]);
			ret = load_events(td, p);
		}
		free(names[i]);
	}
	free(names);
	return ret;
}

void td_free(struct tooldata *td)
{
	for (size_t i = 0; i < td->nr_bufs; i++)
		free(td->bufs[i]);
	free(td->bufs);
	free(td->ctxs);
	free(td->launches);
	free(td->ltimes);
	free(td->recs);
	free(td->knames);
	free(td->gkernels);
	free(td->gexecs);
	memset(td, 0, sizeof(*td));
}

const char *td_kname(const struct tooldata *td, uint64_t id, char *buf, size_t n)
{
	for (size_t i = 0; i < td->nr_knames; i++)
		if (td->knames[i].id == id)
			return td->knames[i].name;
	snprintf(buf, n, "kernel-%016llx", (unsigned long long)id);
	return buf;
}

const struct td_ctx *td_ctx(const struct tooldata *td, uint32_t pid, uint32_t ctx)
{
	for (size_t i = 0; i < td->nr_ctxs; i++)
		if (td->ctxs[i].pid == pid && td->ctxs[i].ctx == ctx)
			return &td->ctxs[i];
	return NULL;
}

char **td_map_paths(const struct tooldata *td, const char *map)
{
	char want[160];
	snprintf(want, sizeof(want), "-%s.%s", td->tool, map);
	DIR *d = opendir(td->dir);
	char **out = calloc(1, sizeof(*out));
	size_t n = 0;
	if (!d || !out) {
		if (d)
			closedir(d);
		return out;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		const char *s = strstr(e->d_name, want);
		if (!s) { /* the maps runtime writes '.' in names as '_' */
			want[strlen(td->tool) + 1] = '_';
			s = strstr(e->d_name, want);
			want[strlen(td->tool) + 1] = '.';
		}
		if (!s || (s[strlen(want)] && s[strlen(want)] != '@'))
			continue;
		char **q = realloc(out, (n + 2) * sizeof(*q));
		if (!q)
			break;
		out = q;
		size_t l = strlen(td->dir) + strlen(e->d_name) + 2;
		out[n] = malloc(l);
		if (out[n])
			snprintf(out[n++], l, "%s/%s", td->dir, e->d_name);
		out[n] = NULL;
	}
	closedir(d);
	return out;
}

void td_paths_free(char **p)
{
	for (size_t i = 0; p && p[i]; i++)
		free(p[i]);
	free(p);
}

int td_dev(const struct tooldata *td, uint32_t pid, uint32_t ctx)
{
	const struct td_ctx *c = td_ctx(td, pid, ctx);
	return c && c->dev < TD_MAX_DEVS ? (int)c->dev : 0;
}

unsigned td_nr_devs(const struct tooldata *td)
{
	unsigned char seen[TD_MAX_DEVS] = { 0 };
	unsigned n = 0;
	for (size_t i = 0; i < td->nr_ctxs; i++) {
		unsigned d = td->ctxs[i].dev < TD_MAX_DEVS ? td->ctxs[i].dev : 0;
		n += !seen[d];
		seen[d] = 1;
	}
	return n ? n : 1;
}

int td_map_file_ctx(const char *path, uint32_t *pid, uint32_t *ctx)
{
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	char *end;
	unsigned long p = strtoul(b, &end, 10);
	if (end == b || *end != '-')
		return -1;
	const char *at = strrchr(end, '@');
	*pid = (uint32_t)p;
	*ctx = at ? (uint32_t)strtoul(at + 1, NULL, 10) : 0;
	return 0;
}

struct td_tracks {
	unsigned char used[TD_MAX_DEVS][TD_MAX_SMS];
	unsigned char dev[TD_MAX_DEVS];
};

struct td_tracks *td_tracks_new(void)
{
	return calloc(1, sizeof(struct td_tracks));
}

void td_tracks_use(struct td_tracks *t, int dev, unsigned sm)
{
	if (!t || dev < 0 || dev >= TD_MAX_DEVS)
		return;
	t->dev[dev] = 1;
	if (sm < TD_MAX_SMS)
		t->used[dev][sm] = 1;
}

void td_tracks_names(FILE *tf, struct td_tracks *t, const struct tooldata *td, const char *extra_tid_name,
		     unsigned extra_tid)
{
	if (!t)
		return;
	int multi = td_nr_devs(td) > 1;
	for (int d = 0; d < TD_MAX_DEVS; d++) {
		if (!t->dev[d] && !(d == 0 && !multi && extra_tid_name))
			continue;
		if (multi) {
			unsigned sm = 0;
			for (size_t i = 0; i < td->nr_ctxs; i++)
				if (td->ctxs[i].dev == (uint32_t)d)
					sm = td->ctxs[i].sm;
			fprintf(tf, ",\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"gpuext %s: GPU %d%s",
				d + 1, td->tool, d, sm ? " (sm_" : "");
			if (sm)
				fprintf(tf, "%u)", sm);
			fprintf(tf, "\"}},\n{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"sort_index\":%d}}",
				d + 1, d);
		}
		for (unsigned s = 0; s < TD_MAX_SMS; s++)
			if (t->used[d][s])
				fprintf(tf, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"args\":{\"name\":\"SM %u\"}}",
					d + 1, s, s);
		if (extra_tid_name)
			fprintf(tf, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"args\":{\"name\":\"%s\"}}",
				d + 1, extra_tid, extra_tid_name);
	}
	free(t);
}
