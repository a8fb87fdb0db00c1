/* threadhist.c — threadhist's report: blocks, warps and threads executed
 * per SM (the per-warp-slot shards summed), with the imbalance between SMs. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/gx_util.h"
#include "devbpf/gx_bpf.h"
#include "tools/tooldata_internal.h"

/* Per GPU: SMs (from the contexts of that device, else the highest busy
 * one), sums and balance. */
struct th_gpu {
	struct gx_th_val *sm; /* NULL: no data for this device */
	unsigned nsm;
	struct gx_th_val tot;
	unsigned long long mx, busy;
};

static void th_sum(struct th_gpu *g)
{
	for (unsigned s = 0; s < g->nsm; s++) {
		g->tot.blocks += g->sm[s].blocks, g->tot.warps += g->sm[s].warps, g->tot.threads += g->sm[s].threads;
		g->mx = g->sm[s].threads > g->mx ? g->sm[s].threads : g->mx;
		g->busy += g->sm[s].threads != 0;
	}
}

static double th_imbalance(const struct th_gpu *g)
{
	double mean = g->nsm ? (double)g->tot.threads / g->nsm : 0;
	return mean > 0 ? (double)g->mx / mean : 0.0;
}

/* The counts are the instrumented launches' only: said when some launches
 * ran the original (gpuext-run --launch-sample, a copy still compiling
 * under --jit-async, kernels that reach the driver as SASS only). */
static void th_coverage(const struct tooldata *td)
{
	if (!td->launch_flags)
		return;
	size_t ni = 0;
	for (size_t i = 0; i < td->nr_launches; i++)
		ni += td_hooked(td, &td->launches[i]) != 0;
	if (ni < td->nr_launches)
		printf("counted on the %zu instrumented launches of the %zu seen (the others ran the original: "
		       "--launch-sample, a copy not yet compiled, or SASS only)\n\n",
		       ni, td->nr_launches);
}

int fmt_threadhist(const struct tooldata *td, int json, FILE *tf)
{
	enum { MAXSM = TD_MAX_SMS };
	struct th_gpu all = { 0 }, *gpu = calloc(TD_MAX_DEVS, sizeof(*gpu));
	all.sm = calloc(MAXSM, sizeof(*all.sm));
	if (!all.sm || !gpu) {
		free(all.sm), free(gpu);
		return 1;
	}
	unsigned files = 0;
	for (size_t i = 0; i < td->nr_ctxs; i++) {
		/* the log's SM count, at most the rows there are (a damaged log
		 * may say anything: tests/tools/fuzz_tooldata.c) */
		unsigned n = td->ctxs[i].nr_sms < MAXSM ? td->ctxs[i].nr_sms : MAXSM;
		all.nsm = n > all.nsm ? n : all.nsm;
		struct th_gpu *g = &gpu[td_dev(td, td->ctxs[i].pid, td->ctxs[i].ctx)];
		g->nsm = n > g->nsm ? n : g->nsm;
	}
	char **paths = td_map_paths(td, "th_counts");
	for (size_t i = 0; paths && paths[i]; i++) {
		struct gx_map *m = NULL;
		if (gx_map__open(paths[i], 0, &m))
			continue;
		uint32_t pid = 0, ctx = 0;
		td_map_file_ctx(paths[i], &pid, &ctx);
		struct th_gpu *g = &gpu[td_dev(td, pid, ctx)];
		if (!g->sm)
			g->sm = calloc(MAXSM, sizeof(*g->sm));
		if (m->l.value_size >= sizeof(struct gx_th_val) && g->sm) {
			files++;
			for (unsigned s = 0; s < m->l.nr_shards; s++) {
				const struct gx_th_val *v = gx_map__shard_elem(m, s, 0);
				unsigned id = s / GX_WARP_SLOTS_PER_SM;
				if (!v || id >= MAXSM)
					continue;
				all.sm[id].blocks += v->blocks;
				all.sm[id].warps += v->warps;
				all.sm[id].threads += v->threads;
				g->sm[id].blocks += v->blocks;
				g->sm[id].warps += v->warps;
				g->sm[id].threads += v->threads;
				if (id + 1 > all.nsm && (v->blocks || v->warps))
					all.nsm = id + 1;
				if (id + 1 > g->nsm && (v->blocks || v->warps))
					g->nsm = id + 1;
			}
		}
		gx_map__free(m);
	}
	td_paths_free(paths);
	th_sum(&all);
	unsigned ngpu = 0;
	for (int d = 0; d < TD_MAX_DEVS; d++)
		if (gpu[d].sm) {
			th_sum(&gpu[d]);
			ngpu++;
		}
	int multi = ngpu > 1 || td_nr_devs(td) > 1;
	const struct gx_th_val *sm = all.sm;
	unsigned nsm = all.nsm;
	if (json) {
		printf("{\"tool\":\"threadhist\",\"map_files\":%u,\"sms\":[", files);
		for (unsigned s = 0; s < nsm; s++)
			printf("%s{\"sm\":%u,\"blocks\":%llu,\"warps\":%llu,\"threads\":%llu}", s ? "," : "", s,
			       sm[s].blocks, sm[s].warps, sm[s].threads);
		printf("],\"total\":{\"blocks\":%llu,\"warps\":%llu,\"threads\":%llu},\"busy_sms\":%llu,"
		       "\"imbalance\":%.3f,\"gpus\":[",
		       all.tot.blocks, all.tot.warps, all.tot.threads, all.busy, th_imbalance(&all));
		for (int d = 0, c = 0; d < TD_MAX_DEVS; d++) {
			const struct th_gpu *g = &gpu[d];
			if (!g->sm)
				continue;
			printf("%s{\"dev\":%d,\"sms\":%u,\"blocks\":%llu,\"warps\":%llu,\"threads\":%llu,\"busy_sms\":%llu,"
			       "\"imbalance\":%.3f,\"per_sm\":[",
			       c++ ? "," : "", d, g->nsm, g->tot.blocks, g->tot.warps, g->tot.threads, g->busy,
			       th_imbalance(g));
			for (unsigned s = 0; s < g->nsm; s++)
				printf("%s{\"sm\":%u,\"blocks\":%llu,\"warps\":%llu,\"threads\":%llu}", s ? "," : "", s,
				       g->sm[s].blocks, g->sm[s].warps, g->sm[s].threads);
			printf("]}");
		}
		printf("]");
		td_launches_json(td);
		printf("}\n");
	} else if (!multi) {
		printf("threadhist: %u SMs, %llu blocks, %llu warps, %llu threads (%u map files)\n\n", nsm, all.tot.blocks,
		       all.tot.warps, all.tot.threads, files);
		th_coverage(td);
		printf("%5s %10s %10s %12s\n", "SM", "BLOCKS", "WARPS", "THREADS");
		for (unsigned s = 0; s < nsm; s++) {
			printf("%5u %10llu %10llu %12llu ", s, sm[s].blocks, sm[s].warps, sm[s].threads);
			td_bar(sm[s].threads, all.mx, 40);
			printf("\n");
		}
		printf("\nbusy SMs %llu/%u; max/mean threads per SM = %.3f (1.000 = perfectly even)\n", all.busy, nsm,
		       th_imbalance(&all));
	} else {
		printf("threadhist: %u GPUs, %llu blocks, %llu warps, %llu threads (%u map files)\n\n", ngpu,
		       all.tot.blocks, all.tot.warps, all.tot.threads, files);
		th_coverage(td);
		printf("%3s %5s %10s %10s %12s\n", "GPU", "SM", "BLOCKS", "WARPS", "THREADS");
		for (int d = 0; d < TD_MAX_DEVS; d++)
			for (unsigned s = 0; gpu[d].sm && s < gpu[d].nsm; s++) {
				const struct gx_th_val *v = &gpu[d].sm[s];
				printf("%3d %5u %10llu %10llu %12llu ", d, s, v->blocks, v->warps, v->threads);
				td_bar(v->threads, all.mx, 40);
				printf("\n");
			}
		printf("\n");
		for (int d = 0; d < TD_MAX_DEVS; d++)
			if (gpu[d].sm)
				printf("GPU %d: %llu blocks, %llu warps, %llu threads; busy SMs %llu/%u; max/mean threads per "
				       "SM = %.3f\n",
				       d, gpu[d].tot.blocks, gpu[d].tot.warps, gpu[d].tot.threads, gpu[d].busy, gpu[d].nsm,
				       th_imbalance(&gpu[d]));
	}
	for (int d = 0; tf && d < TD_MAX_DEVS; d++) {
		const struct th_gpu *g = multi ? &gpu[d] : d == 0 ? &all : NULL;
		for (unsigned s = 0; g && g->sm && s < g->nsm; s++)
			fprintf(tf, ",\n{\"name\":\"SM %u\",\"ph\":\"C\",\"pid\":%d,\"tid\":%u,\"ts\":0,\"args\":{\"blocks\":%llu,"
				    "\"warps\":%llu,\"threads\":%llu}}",
				s, d + 1, s, g->sm[s].blocks, g->sm[s].warps, g->sm[s].threads);
		if (multi && g && g->sm)
			fprintf(tf, ",\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"gpuext %s: GPU %d\"}}",
				d + 1, td->tool, d);
	}
	for (int d = 0; d < TD_MAX_DEVS; d++)
		free(gpu[d].sm);
	free(gpu);
	free(all.sm);
	return 0;
}

