/* bs_report.c — `gpuext sched`: a run's schedule log (bs_log.c) read back.
 *
 * Per kernel: the decisions, and for each sampled launch what its workers
 * did — units per SM (min / mean / max over the SMs that ran workers),
 * steals, the launch's span (first worker's start to last worker's end) and
 * its idle share: 1 - (sum of worker busy times) / (workers x span), the
 * part of the launch its workers spent waiting for the slowest one. The
 * trace has a track per SM and a slice per worker (its first claim to its
 * leaving), the per-SM timeline of each sampled launch. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blocksched/gx_blocksched.h"
#include "common/gx_util.h"

#define MAX_SM 1024

struct wrec {
	unsigned w, smid, units, chunks, steals;
	unsigned long long t0, t1;
};

struct launch {
	unsigned long long nth;
	unsigned units, grid[3], workers, chunk, per_sm, nsm;
	struct wrec *w;
	unsigned nw;
};

struct kern {
	char *name;
	char **dec;
	size_t ndec;
	struct launch *l;
	size_t nl;
};

struct report {
	struct kern *k;
	size_t nk;
};

static struct kern *kern_get(struct report *r, const char *name)
{
	for (size_t i = 0; i < r->nk; i++)
		if (!strcmp(r->k[i].name, name))
			return &r->k[i];
	struct kern *nk = realloc(r->k, (r->nk + 1) * sizeof(*nk));
	if (!nk)
		return NULL;
	r->k = nk;
	memset(&nk[r->nk], 0, sizeof(*nk));
	nk[r->nk].name = strdup(name);
	return nk[r->nk].name ? &nk[r->nk++] : NULL;
}

static void report_free(struct report *r)
{
	for (size_t i = 0; i < r->nk; i++) {
		for (size_t j = 0; j < r->k[i].ndec; j++)
			free(r->k[i].dec[j]);
		for (size_t j = 0; j < r->k[i].nl; j++)
			free(r->k[i].l[j].w);
		free(r->k[i].dec);
		free(r->k[i].l);
		free(r->k[i].name);
	}
	free(r->k);
}

static int parse(const char *text, struct report *r, char *err, size_t en)
{
	struct launch *cur = NULL;
	int line = 0;
	for (const char *p = text; p && *p;) {
		const char *e = strchr(p, '\n');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		char *l = strndup(p, len), name[512];
		p = e ? e + 1 : NULL;
		line++;
		if (!l)
			return -ENOMEM;
		int off = 0;
		struct launch L = { 0 };
		struct wrec w;
		if (line == 1 && strncmp(l, "gxsched 1 ", 10)) {
			snprintf(err, en, "not a schedule log (line 1: %.60s)", l);
			free(l);
			return -EINVAL;
		} else if (line == 1) {
		} else if (sscanf(l, "D %511s %n", name, &off) == 1 && off) {
			struct kern *k = kern_get(r, name);
			char **nd = k ? realloc(k->dec, (k->ndec + 1) * sizeof(*nd)) : NULL;
			if (!nd) {
				free(l);
				return -ENOMEM;
			}
			k->dec = nd;
			if (!(nd[k->ndec] = strdup(l + off))) {
				free(l);
				return -ENOMEM;
			}
			k->ndec++;
			cur = NULL;
		} else if (sscanf(l, "L %511s %llu %u %u %u %u %u %u %u %u", name, &L.nth, &L.units, &L.grid[0],
				  &L.grid[1], &L.grid[2], &L.workers, &L.chunk, &L.per_sm, &L.nsm) == 10) {
			struct kern *k = kern_get(r, name);
			struct launch *nl = k ? realloc(k->l, (k->nl + 1) * sizeof(*nl)) : NULL;
			if (!nl) {
				free(l);
				return -ENOMEM;
			}
			k->l = nl;
			nl[k->nl] = L;
			cur = &nl[k->nl++];
		} else if (cur && sscanf(l, "W %u %u %u %u %u %llu %llu", &w.w, &w.smid, &w.units, &w.chunks,
					 &w.steals, &w.t0, &w.t1) == 7) {
			struct wrec *nw = realloc(cur->w, (cur->nw + 1) * sizeof(*nw));
			if (!nw) {
				free(l);
				return -ENOMEM;
			}
			cur->w = nw;
			nw[cur->nw++] = w;
		} else if (len) {
			snprintf(err, en, "line %d: not understood: %.60s", line, l);
			free(l);
			return -EINVAL;
		}
		free(l);
	}
	return 0;
}

struct lsum {
	unsigned sm_min, sm_max, nsm_used;
	double sm_mean, span_us, idle_pct, busy_mean_us;
	unsigned long long steals;
	unsigned long long t0;
};

static void summarize(const struct launch *L, struct lsum *s)
{
	static unsigned per[MAX_SM];
	memset(per, 0, sizeof(per));
	memset(s, 0, sizeof(*s));
	unsigned long long t0 = ~0ull, t1 = 0;
	double busy = 0;
	unsigned used = 0;
	for (unsigned i = 0; i < L->nw; i++) {
		const struct wrec *w = &L->w[i];
		per[w->smid % MAX_SM] += w->units;
		s->steals += w->steals;
		if (w->t0 < t0)
			t0 = w->t0;
		if (w->t1 > t1)
			t1 = w->t1;
		busy += w->t1 > w->t0 ? (double)(w->t1 - w->t0) : 0;
	}
	s->sm_min = ~0u;
	unsigned long long sum = 0;
	for (unsigned i = 0; i < MAX_SM; i++) {
		bool ran = false;
		for (unsigned j = 0; j < L->nw && !ran; j++)
			ran = L->w[j].smid % MAX_SM == i;
		if (!ran)
			continue;
		used++;
		sum += per[i];
		if (per[i] < s->sm_min)
			s->sm_min = per[i];
		if (per[i] > s->sm_max)
			s->sm_max = per[i];
	}
	if (!used)
		s->sm_min = 0;
	s->nsm_used = used;
	s->sm_mean = used ? (double)sum / used : 0;
	double span = t1 > t0 ? (double)(t1 - t0) : 0;
	s->span_us = span / 1e3;
	s->busy_mean_us = L->nw ? busy / L->nw / 1e3 : 0;
	s->idle_pct = span > 0 && L->nw ? 100.0 * (1.0 - busy / ((double)L->nw * span)) : 0;
	s->t0 = t0;
}

static void print_text(const struct report *r)
{
	for (size_t i = 0; i < r->nk; i++) {
		const struct kern *k = &r->k[i];
		printf("%s\n", k->name);
		for (size_t j = 0; j < k->ndec; j++)
			printf("  %s\n", k->dec[j]);
		if (k->nl)
			printf("  %-8s %8s %7s %5s %18s %7s %10s %6s\n", "launch", "units", "workers", "chunk",
			       "units/SM min/mean/max", "steals", "span us", "idle%");
		for (size_t j = 0; j < k->nl; j++) {
			const struct launch *L = &k->l[j];
			struct lsum s;
			summarize(L, &s);
			printf("  %-8llu %8u %7u %5u %5u/%6.1f/%5u %7llu %10.1f %6.1f\n", L->nth, L->units, L->workers,
			       L->chunk, s.sm_min, s.sm_mean, s.sm_max, s.steals, s.span_us, s.idle_pct);
		}
	}
	if (!r->nk)
		printf("no kernel was scheduled (is GPUEXT_SCHED_LOG set and the policy attached?)\n");
}

static void print_json(const struct report *r)
{
	printf("{\"kernels\":[");
	for (size_t i = 0; i < r->nk; i++) {
		const struct kern *k = &r->k[i];
		printf("%s{\"name\":", i ? "," : "");
		gx_json_str(stdout, k->name);
		printf(",\"decisions\":[");
		for (size_t j = 0; j < k->ndec; j++) {
			printf("%s", j ? "," : "");
			gx_json_str(stdout, k->dec[j]);
		}
		printf("],\"launches\":[");
		for (size_t j = 0; j < k->nl; j++) {
			const struct launch *L = &k->l[j];
			struct lsum s;
			summarize(L, &s);
			printf("%s{\"nth\":%llu,\"units\":%u,\"grid\":[%u,%u,%u],\"workers\":%u,\"chunk\":%u,"
			       "\"per_sm\":%u,\"sms\":%u,\"sms_used\":%u,\"units_per_sm\":{\"min\":%u,\"mean\":%.2f,"
			       "\"max\":%u},\"steals\":%llu,\"span_us\":%.2f,\"busy_mean_us\":%.2f,\"idle_pct\":%.2f}",
			       j ? "," : "", L->nth, L->units, L->grid[0], L->grid[1], L->grid[2], L->workers, L->chunk,
			       L->per_sm, L->nsm, s.nsm_used, s.sm_min, s.sm_mean, s.sm_max, s.steals, s.span_us,
			       s.busy_mean_us, s.idle_pct);
		}
		printf("]}");
	}
	printf("]}\n");
}

static int write_trace(const struct report *r, const char *path, char *err, size_t en)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		snprintf(err, en, "cannot write %s: %s", path, strerror(errno));
		return -errno;
	}
	unsigned long long base = ~0ull;
	for (size_t i = 0; i < r->nk; i++)
		for (size_t j = 0; j < r->k[i].nl; j++)
			for (unsigned w = 0; w < r->k[i].l[j].nw; w++)
				if (r->k[i].l[j].w[w].t0 < base)
					base = r->k[i].l[j].w[w].t0;
	static unsigned char named[MAX_SM];
	memset(named, 0, sizeof(named));
	fprintf(f, "{\"traceEvents\":[\n");
	int first = 1;
	for (size_t i = 0; i < r->nk; i++)
		for (size_t j = 0; j < r->k[i].nl; j++) {
			const struct launch *L = &r->k[i].l[j];
			for (unsigned w = 0; w < L->nw; w++) {
				const struct wrec *x = &L->w[w];
				unsigned sm = x->smid % MAX_SM;
				if (!named[sm]) {
					named[sm] = 1;
					fprintf(f, "%s{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":%u,"
						   "\"args\":{\"name\":\"SM %u\"}}",
						first ? "" : ",\n", sm, sm);
					first = 0;
				}
				fprintf(f, ",\n{\"ph\":\"X\",\"pid\":1,\"tid\":%u,\"ts\":%.3f,\"dur\":%.3f,\"name\":", sm,
					(double)(x->t0 - base) / 1e3,
					x->t1 > x->t0 ? (double)(x->t1 - x->t0) / 1e3 : 0.0);
				gx_json_str(f, r->k[i].name);
				fprintf(f, ",\"args\":{\"launch\":%llu,\"worker\":%u,\"units\":%u,\"chunks\":%u,"
					   "\"steals\":%u}}",
					L->nth, x->w, x->units, x->chunks, x->steals);
			}
		}
	fprintf(f, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"args\":{\"name\":\"blocksched\"}}\n]}\n",
		first ? "" : ",\n");
	if (fclose(f)) {
		snprintf(err, en, "cannot write %s: %s", path, strerror(errno));
		return -EIO;
	}
	return 0;
}

int gx_bs_report(const char *path, bool json, const char *trace, char *err, size_t en)
{
	char *text = NULL;
	size_t len = 0;
	int ret = gx_read_file(path, &text, &len, 1u << 30);
	if (ret) {
		snprintf(err, en, "cannot read %s: %s", path, strerror(-ret));
		return ret;
	}
	struct report r = { 0 };
	ret = parse(text, &r, err, en);
	free(text);
	if (ret == -ENOMEM)
		snprintf(err, en, "out of memory");
	if (!ret && trace)
		ret = write_trace(&r, trace, err, en);
	if (!ret) {
		if (json)
			print_json(&r);
		else
			print_text(&r);
	}
	report_free(&r);
	return ret;
}
