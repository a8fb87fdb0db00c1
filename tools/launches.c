/* launches.c — what every tool's report says about the launches the shim
 * saw host-side: each launch's kernel, whether its module carried the
 * tool's hooks, and its GPU time from timing events (attach/launches.c).
 * Kernels that reach the driver as SASS only (PyTorch wheels, cuBLAS,
 * cuDNN, NCCL) have no device records at all: here they still appear, as
 * "host only (SASS)", so a report covers the whole program and never comes
 * out empty because nothing was instrumented. GPU time is measured on a
 * sample of each kernel's launches (attach/launches.c): a kernel's time is
 * its timed launches' mean times its launches. Shown for tool logs of the
 * second revision (launch records with flags); older logs are reported as
 * before. Text: a summary line and the kernels by GPU time; JSON: an object
 * "host_launches"; trace: one slice per timed launch on a track per stream
 * (times relative to the first timed launch). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "common/gx_util.h"
#include "gpuext/gx_toollog.h"
#include "tools/tooldata_internal.h"

#define TOP_KERNELS 25

struct kstat {
	uint64_t kid, n, n_instr, n_timed, gpu_ns;
	uint64_t n_graph;    /* of n, kernel nodes of graph launches */
	uint64_t n_graph_tg; /* of those, nodes of execs with timed launches (their time: graph_ns) */
	double graph_ns;     /* its share of those execs' estimated GPU time */
	double est_ns;	     /* gpu_ns / n_timed * (n - n_graph_tg) + graph_ns: all its launches */
	UT_hash_handle hh;
};
struct ltot {
	uint64_t n, n_instr, n_timed, gpu_ns, n_graph;
	double est_ns, est_ns_instr, graph_ns;
};

static int cmp_seq(const void *a, const void *b)
{
	const struct td_ltime *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int cmp_gpu(const void *a, const void *b)
{
	const struct kstat *x = a, *y = b;
	if (x->est_ns != y->est_ns)
		return x->est_ns > y->est_ns ? -1 : 1;
	if (x->n != y->n)
		return x->n > y->n ? -1 : 1;
	return x->kid < y->kid ? -1 : x->kid > y->kid;
}

/* The GPU time of a launch (pid, seq), or NULL: a binary search over the
 * timings, sorted by the caller. */
static const struct td_ltime *ltime_of(const struct td_ltime *t, size_t n, uint32_t pid, uint32_t seq)
{
	struct td_ltime key = { .pid = pid, .seq = seq };
	return bsearch(&key, t, n, sizeof(*t), cmp_seq);
}

/* Graph launches are timed whole (GX_TEV_GLTIME): an exec's GPU time is its
 * timed launches' mean times its launches, shared among its kernel nodes —
 * in proportion to their kernels' own timed mean when every kernel of the
 * exec has direct timed launches, else equally per node (the span's copies,
 * sets and gaps included: an estimate, docs/metrics.md). */
static void graph_shares(const struct tooldata *td, struct kstat *byid, struct ltot *tot)
{
	for (size_t i = 0; i < td->nr_gexecs; i++) {
		const struct td_gexec *x = &td->gexecs[i];
		if (!x->timed || !x->rec || !x->nr)
			continue;
		double est = (double)x->gpu_ns / (double)x->timed * (double)x->launches, wsum = 0, wsum_eq = 0;
		bool means = true;
		for (size_t e = 0; e < x->nr; e++) {
			struct kstat *f;
			HASH_FIND(hh, byid, &x->rec->k[e].kernel_id, sizeof(x->rec->k[e].kernel_id), f);
			means &= f && f->n_timed;
			wsum += f && f->n_timed ? (double)f->gpu_ns / (double)f->n_timed * x->rec->k[e].nodes : 0;
			wsum_eq += x->rec->k[e].nodes;
		}
		for (size_t e = 0; e < x->nr; e++) {
			struct kstat *f;
			HASH_FIND(hh, byid, &x->rec->k[e].kernel_id, sizeof(x->rec->k[e].kernel_id), f);
			if (!f)
				continue;
			double w = means && wsum > 0 ? (double)f->gpu_ns / (double)f->n_timed * x->rec->k[e].nodes / wsum
						     : wsum_eq > 0 ? x->rec->k[e].nodes / wsum_eq : 0;
			f->graph_ns += est * w;
			f->n_graph_tg += (uint64_t)x->rec->k[e].nodes * x->launches;
		}
		tot->graph_ns += est;
	}
	/* the execs' node counts bound what a kernel ran in graphs */
	for (struct kstat *f = byid; f; f = f->hh.next)
		if (f->n_graph_tg > f->n_graph)
			f->n_graph_tg = f->n_graph;
}

/* Per kernel, sorted by GPU time; NULL if there is nothing to say. */
static struct kstat *stats(const struct tooldata *td, struct td_ltime *lt, size_t *nk, struct ltot *tot)
{
	memset(tot, 0, sizeof(*tot));
	*nk = 0;
	if (!td->nr_gkernels && (!td->launch_flags || !td->nr_launches))
		return NULL;
	struct kstat *k = calloc(td->nr_launches + td->nr_gkernels + 1, sizeof(*k)), *byid = NULL, *f;
	if (!k)
		return NULL;
	for (size_t i = 0; i < td->nr_launches; i++) {
		const struct td_launch *l = &td->launches[i];
		const struct td_ltime *t = ltime_of(lt, td->nr_ltimes, l->pid, l->seq);
		bool instr = l->flags & GX_TEV_L_INSTRUMENTED;
		HASH_FIND(hh, byid, &l->kernel_id, sizeof(l->kernel_id), f);
		size_t j = f ? (size_t)(f - k) : (*nk)++;
		if (!f) {
			k[j].kid = l->kernel_id;
			HASH_ADD(hh, byid, kid, sizeof(k[j].kid), &k[j]);
		}
		k[j].n++;
		k[j].n_instr += instr;
		tot->n++;
		tot->n_instr += instr;
		if (t) {
			k[j].n_timed++;
			k[j].gpu_ns += t->gpu_ns;
			tot->n_timed++;
			tot->gpu_ns += t->gpu_ns;
		}
	}
	/* graph kernel nodes: launches of their kernels, never timed (the
	 * kernel's timed mean covers them) */
	for (size_t i = 0; i < td->nr_gkernels; i++) {
		const struct td_gkernel *g = &td->gkernels[i];
		HASH_FIND(hh, byid, &g->kernel_id, sizeof(g->kernel_id), f);
		size_t j = f ? (size_t)(f - k) : (*nk)++;
		if (!f) {
			k[j].kid = g->kernel_id;
			HASH_ADD(hh, byid, kid, sizeof(k[j].kid), &k[j]);
		}
		uint64_t ni = g->flags & GX_TEV_L_INSTRUMENTED ? g->nodes : 0;
		k[j].n += g->nodes;
		k[j].n_graph += g->nodes;
		k[j].n_instr += ni;
		tot->n += g->nodes;
		tot->n_graph += g->nodes;
		tot->n_instr += ni;
	}
	graph_shares(td, byid, tot);
	HASH_CLEAR(hh, byid);
	for (size_t j = 0; j < *nk; j++) {
		k[j].est_ns = (k[j].n_timed ? (double)k[j].gpu_ns / (double)k[j].n_timed *
						    (double)(k[j].n - k[j].n_graph_tg)
					    : 0) +
			      k[j].graph_ns;
		tot->est_ns += k[j].est_ns;
		tot->est_ns_instr += k[j].n ? k[j].est_ns * (double)k[j].n_instr / (double)k[j].n : 0;
	}
	qsort(k, *nk, sizeof(*k), cmp_gpu);
	return k;
}

/* Timings sorted by (pid, seq), a copy. */
static struct td_ltime *sorted_ltimes(const struct tooldata *td)
{
	struct td_ltime *lt = malloc((td->nr_ltimes + 1) * sizeof(*lt));
	if (lt && td->nr_ltimes) {
		memcpy(lt, td->ltimes, td->nr_ltimes * sizeof(*lt));
		qsort(lt, td->nr_ltimes, sizeof(*lt), cmp_seq);
	}
	return lt;
}

static const char *hooks_word(const struct kstat *k)
{
	return k->n_instr == k->n ? "yes" : k->n_instr ? "some" : "host only (SASS)";
}

/* The per-kernel table for a report, or NULL (nothing to say). */
static struct kstat *report_stats(const struct tooldata *td, size_t *nk, struct ltot *tot)
{
	struct td_ltime *lt = sorted_ltimes(td);
	struct kstat *k = lt ? stats(td, lt, nk, tot) : NULL;
	free(lt);
	return k;
}

void td_launches_text(const struct tooldata *td)
{
	size_t nk;
	struct ltot tot;
	struct kstat *k = report_stats(td, &nk, &tot);
	if (!k)
		return;
	char nb[64];
	printf("\nlaunches (seen host-side): %llu, %llu instrumented (%.1f %%)", (unsigned long long)tot.n,
	       (unsigned long long)tot.n_instr, 100.0 * (double)tot.n_instr / (double)tot.n);
	if (tot.est_ns > 0)
		printf("; GPU time %.3f ms (from %llu timed launches), %.1f %% of it instrumented",
		       tot.est_ns / 1e6, (unsigned long long)tot.n_timed, 100.0 * tot.est_ns_instr / tot.est_ns);
	if (td->graph_launches)
		printf("\n  of them %llu kernel nodes of %llu graph launches (%llu timed, %.3f ms of graph GPU time "
		       "shared among their kernel nodes)",
		       (unsigned long long)tot.n_graph, (unsigned long long)td->graph_launches,
		       (unsigned long long)td->graph_timed, tot.graph_ns / 1e6);
	if (td->graph_launches) {
		printf("\n%-40s %9s %9s %12s  %s\n", "KERNEL", "LAUNCHES", "IN GRAPHS", "GPU ms", "HOOKS");
		for (size_t i = 0; i < nk && i < TOP_KERNELS; i++)
			printf("%-40.40s %9llu %9llu %12.3f  %s\n", td_kname(td, k[i].kid, nb, sizeof(nb)),
			       (unsigned long long)k[i].n, (unsigned long long)k[i].n_graph, k[i].est_ns / 1e6,
			       hooks_word(&k[i]));
	} else {
		printf("\n%-40s %9s %12s  %s\n", "KERNEL", "LAUNCHES", "GPU ms", "HOOKS");
		for (size_t i = 0; i < nk && i < TOP_KERNELS; i++)
			printf("%-40.40s %9llu %12.3f  %s\n", td_kname(td, k[i].kid, nb, sizeof(nb)),
			       (unsigned long long)k[i].n, k[i].est_ns / 1e6, hooks_word(&k[i]));
	}
	if (nk > TOP_KERNELS)
		printf("(%zu more kernels; --json lists them all)\n", nk - TOP_KERNELS);
	free(k);
}

void td_launches_json(const struct tooldata *td)
{
	size_t nk;
	struct ltot tot;
	struct kstat *k = report_stats(td, &nk, &tot);
	if (!k)
		return;
	char nb[64];
	printf(",\"host_launches\":{\"launches\":%llu,\"instrumented\":%llu,\"timed\":%llu,\"gpu_ns_timed\":%llu,"
	       "\"gpu_ns\":%.0f,\"gpu_ns_instrumented\":%.0f,\"graph_launches\":%llu,\"graph_kernel_launches\":%llu,"
	       "\"graph_launches_timed\":%llu,\"graph_gpu_ns\":%.0f,\"kernels\":[",
	       (unsigned long long)tot.n, (unsigned long long)tot.n_instr, (unsigned long long)tot.n_timed,
	       (unsigned long long)tot.gpu_ns, tot.est_ns, tot.est_ns_instr, (unsigned long long)td->graph_launches,
	       (unsigned long long)tot.n_graph, (unsigned long long)td->graph_timed, tot.graph_ns);
	for (size_t i = 0; i < nk; i++) {
		printf("%s{\"kernel\":", i ? "," : "");
		gx_json_str(stdout, td_kname(td, k[i].kid, nb, sizeof(nb)));
		printf(",\"launches\":%llu,\"instrumented\":%llu,\"timed\":%llu,\"gpu_ns_timed\":%llu,\"gpu_ns\":%.0f,"
		       "\"graph_launches\":%llu,\"graph_gpu_ns\":%.0f}",
		       (unsigned long long)k[i].n, (unsigned long long)k[i].n_instr, (unsigned long long)k[i].n_timed,
		       (unsigned long long)k[i].gpu_ns, k[i].est_ns, (unsigned long long)k[i].n_graph, k[i].graph_ns);
	}
	printf("]}");
	free(k);
}

void td_launches_trace(const struct tooldata *td, FILE *tf)
{
	if (!tf || !td->launch_flags || !td->nr_ltimes)
		return;
	struct td_ltime *lt = sorted_ltimes(td);
	if (!lt)
		return;
	uint64_t t0 = UINT64_MAX;
	for (size_t i = 0; i < td->nr_ltimes; i++)
		t0 = lt[i].start_ns < t0 ? lt[i].start_ns : t0;
	/* Streams numbered in order of first use, one track each, under one
	 * process per GPU (pid 1001 + GPU) so they never mix with SM tracks. */
	uint64_t streams[64];
	unsigned ns = 0, used[TD_MAX_DEVS] = { 0 };
	size_t c = 0;
	char nb[64];
	for (size_t i = 0; i < td->nr_launches && c < TRACE_MAX_EVENTS; i++) {
		const struct td_launch *l = &td->launches[i];
		const struct td_ltime *t = ltime_of(lt, td->nr_ltimes, l->pid, l->seq);
		if (!t)
			continue;
		unsigned s = 0;
		while (s < ns && streams[s] != l->stream)
			s++;
		if (s == ns && ns < 64)
			streams[ns++] = l->stream;
		int dev = td_dev(td, l->pid, l->ctx);
		used[dev] = 1;
		fprintf(tf, ",\n{\"name\":");
		gx_json_str(tf, td_kname(td, l->kernel_id, nb, sizeof(nb)));
		fprintf(tf, ",\"cat\":\"launch\",\"ph\":\"X\",\"pid\":%d,\"tid\":%u,\"ts\":%.3f,\"dur\":%.3f,"
			    "\"args\":{\"seq\":%u,\"hooks\":%s}}",
			1001 + dev, s, (double)(t->start_ns - t0) / 1000.0, (double)t->gpu_ns / 1000.0, l->seq,
			l->flags & GX_TEV_L_INSTRUMENTED ? "true" : "false");
		c++;
	}
	for (int d = 0; d < TD_MAX_DEVS; d++)
		if (used[d])
			fprintf(tf, ",\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"gpuext "
				    "launches: GPU %d (timing events)\"}}",
				1001 + d, d);
	free(lt);
}
