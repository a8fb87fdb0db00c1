/* tools_fmt.c — the four tools' reports: a readable summary (tables,
 * terminal histograms), --json, and Chrome/Perfetto trace events (one track
 * per SM; times in µs of %globaltimer relative to the first event).
 * Input: struct tooldata (cli/tools.c). Output must not depend on anything
 * but the data (golden tests compare it byte for byte). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/gx_tooldata.h"
#include "devbpf/gx_map.h"
#include "gx_util.h"

#define TRACE_MAX_EVENTS 200000

static void bar(unsigned long long v, unsigned long long max, int width)
{
	int n = max ? (int)((v * (unsigned long long)width + max - 1) / max) : 0;
	for (int i = 0; i < n; i++)
		fputs("#", stdout);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* ------------------------------------------------------------ launch ids */
/* Device records carry ctx->launch_id (%gridid: per context, one per grid,
 * increasing in launch order); the shim's log numbers the host's launches.
 * The k-th distinct launch id of a kernel (per process and context) is that
 * kernel's k-th launch there: returns, per record, the index of its launch
 * in td->launches, or SIZE_MAX (id 0, short record, or no such launch).
 * kid_off/lid_off: offsets of kernel_id and launch_id in the payload. */
struct lid_key {
	uint32_t pid, ctx;
	uint64_t kid, lid;
	size_t idx;
};
static int cmp_lid_key(const void *a, const void *b)
{
	const struct lid_key *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->ctx != y->ctx)
		return x->ctx < y->ctx ? -1 : 1;
	if (x->kid != y->kid)
		return x->kid < y->kid ? -1 : 1;
	if (x->lid != y->lid)
		return x->lid < y->lid ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}
static size_t *match_launch_ids(const struct tooldata *td, size_t min_len, size_t kid_off, size_t lid_off)
{
	size_t nr = td->nr_recs, nl = td->nr_launches, nk = 0;
	size_t *out = malloc((nr + 1) * sizeof(*out));
	struct lid_key *rk = calloc(nr + 1, sizeof(*rk)), *lk = calloc(nl + 1, sizeof(*lk));
	if (!out || !rk || !lk) {
		free(rk), free(lk), free(out);
		return NULL;
	}
	for (size_t r = 0; r < nr; r++) {
		out[r] = SIZE_MAX;
		uint64_t kid, lid;
		if (td->recs[r].len < min_len)
			continue;
		memcpy(&kid, (const char *)td->recs[r].data + kid_off, 8);
		memcpy(&lid, (const char *)td->recs[r].data + lid_off, 8);
		if (lid)
			rk[nk++] = (struct lid_key){ td->recs[r].pid, td->recs[r].ctx, kid, lid, r };
	}
	/* launches keyed by (pid, ctx, kernel), in log order (idx) within */
	for (size_t i = 0; i < nl; i++)
		lk[i] = (struct lid_key){ td->launches[i].pid, td->launches[i].ctx, td->launches[i].kernel_id, 0, i };
	qsort(rk, nk, sizeof(*rk), cmp_lid_key);
	qsort(lk, nl, sizeof(*lk), cmp_lid_key);
	size_t g = 0, rank = 0;
	for (size_t i = 0; i < nk; i++) {
		const struct lid_key *k = &rk[i];
		int same_kernel = i && k->pid == rk[i - 1].pid && k->ctx == rk[i - 1].ctx && k->kid == rk[i - 1].kid;
		if (!same_kernel) {
			rank = 0;
			g = 0; /* first launch of this kernel: binary search */
			size_t lo = 0, hi = nl;
			struct lid_key probe = { k->pid, k->ctx, k->kid, 0, 0 };
			while (lo < hi) {
				size_t mid = (lo + hi) / 2;
				if (cmp_lid_key(&lk[mid], &probe) < 0)
					lo = mid + 1;
				else
					hi = mid;
			}
			g = lo;
		} else if (k->lid != rk[i - 1].lid) {
			rank++;
		}
		size_t j = g + rank;
		if (j < nl && lk[j].pid == k->pid && lk[j].ctx == k->ctx && lk[j].kid == k->kid)
			out[k->idx] = lk[j].idx;
	}
	free(rk);
	free(lk);
	return out;
}

/* ------------------------------------------------------------ kernelretsnoop */
struct krs_launch {
	const struct td_launch *l; /* NULL: records no launch accounts for */
	uint64_t kernel_id;
	uint32_t pid, ctx;
	uint64_t nblocks, got;
	uint64_t every, expected; /* sampled launches (gx_krs_sample_mask): 1 in every; records expected */
	uint64_t first, last;
	uint64_t launch_id;            /* the device's id of this launch (0: none seen) */
	const struct gx_krs_rec **blk; /* by linear block index (nblocks) */
};

static uint64_t grid_blocks(const uint32_t g[3])
{
	return (uint64_t)g[0] * g[1] * g[2];
}

int fmt_kernelretsnoop(const struct tooldata *td, int json, FILE *tf)
{
	size_t nl = td->nr_launches;
	struct krs_launch *L = calloc(nl + 1, sizeof(*L));
	unsigned char *done = calloc(td->nr_recs + 1, 1);
	if (!L || !done) {
		free(L);
		free(done);
		return 1;
	}
	/* kernelretsnoop_all: every block of every launch */
	int all = td->tool && !strcmp(td->tool, "kernelretsnoop_all");
	const char *tname = all ? "kernelretsnoop_all" : "kernelretsnoop";
	uint64_t expected = 0, sampled = 0;
	for (size_t i = 0; i < nl; i++) {
		L[i].l = &td->launches[i];
		L[i].kernel_id = td->launches[i].kernel_id;
		L[i].pid = td->launches[i].pid, L[i].ctx = td->launches[i].ctx;
		L[i].nblocks = grid_blocks(td->launches[i].grid);
		L[i].every = all ? 1 : gx_krs_sample_mask(L[i].nblocks) + 1;
		L[i].expected = L[i].nblocks ? (L[i].nblocks - 1) / L[i].every + 1 : 0;
		L[i].first = UINT64_MAX;
		expected += L[i].expected;
		sampled += L[i].every > 1;
	}
	/* Records go to the launch their launch id names; without one (0),
	 * records of a kernel, in ring order, fill its launches in launch order. */
	size_t *byid = match_launch_ids(td, sizeof(struct gx_krs_rec), offsetof(struct gx_krs_rec, kernel_id),
					offsetof(struct gx_krs_rec, launch_id));
	uint64_t unattributed = 0;
	for (size_t r = 0; r < td->nr_recs; r++) {
		if (td->recs[r].len < sizeof(struct gx_krs_rec))
			continue;
		const struct gx_krs_rec *k = td->recs[r].data;
		uint64_t lin = k->ctaid[0] + (uint64_t)k->nctaid[0] * (k->ctaid[1] + (uint64_t)k->nctaid[1] * k->ctaid[2]);
		size_t li = 0;
		if (k->launch_id) {
			li = byid ? byid[r] : SIZE_MAX;
			if (li == SIZE_MAX || lin >= L[li].nblocks ||
			    L[li].nblocks != (uint64_t)k->nctaid[0] * k->nctaid[1] * k->nctaid[2]) {
				unattributed++;
				continue;
			}
			if (!L[li].launch_id)
				L[li].launch_id = k->launch_id;
		}
		for (; !k->launch_id && li < nl; li++) {
			struct krs_launch *x = &L[li];
			if (x->kernel_id != k->kernel_id || x->pid != td->recs[r].pid || x->ctx != td->recs[r].ctx ||
			    x->nblocks != (uint64_t)k->nctaid[0] * k->nctaid[1] * k->nctaid[2] || lin >= x->nblocks)
				continue;
			if (x->got < x->expected) /* new block, or a second exit site of one */
				break;
		}
		if (li == nl) {
			unattributed++;
			continue;
		}
		struct krs_launch *x = &L[li];
		if (!x->blk && !(x->blk = calloc(x->nblocks, sizeof(*x->blk))))
			continue;
		if (!x->blk[lin])
			x->got++;
		x->blk[lin] = k; /* a second exit site of the block: keep the last */
		if (k->ts < x->first)
			x->first = k->ts;
		if (k->ts > x->last)
			x->last = k->ts;
	}
	uint64_t base = UINT64_MAX;
	for (size_t i = 0; i < nl; i++)
		if (L[i].got && L[i].first < base)
			base = L[i].first;
	char nb[64];
	int multi = td_nr_devs(td) > 1;
	if (json) {
		printf("{\"tool\":\"%s\",\"records\":%zu,\"drops\":%llu,\"unattributed\":%llu,"
		       "\"expected\":%llu,\"sampled_launches\":%llu,\"launches\":[",
		       tname, td->nr_recs, (unsigned long long)td->drops, (unsigned long long)unattributed,
		       (unsigned long long)expected, (unsigned long long)sampled);
	} else {
		printf("%s: %zu launches, %zu block records, %llu dropped, %llu unattributed, %llu expected\n\n",
		       tname, nl, td->nr_recs, (unsigned long long)td->drops, (unsigned long long)unattributed,
		       (unsigned long long)expected);
		if (sampled)
			printf("note: %llu launch(es) of more than %u blocks recorded a regular sample of their\n"
			       "blocks (SAMPLE: every Nth by linear index, at most %u per launch);\n"
			       "BLOCKS counts the sampled blocks.\n\n",
			       (unsigned long long)sampled, GX_KRS_FULL_BLOCKS, GX_KRS_FULL_BLOCKS);
		if (td->drops)
			printf("note: %llu block records were dropped (counted, not lost silently): the ring\n"
			       "was full between two drains; launches missing them show fewer BLOCKS.\n\n",
			       (unsigned long long)td->drops);
		if (multi)
			printf("%3s ", "GPU");
		printf("%-32s %6s %15s %6s %5s %12s %11s\n", "KERNEL", "LAUNCH", "BLOCKS", "SAMPLE", "SMS", "SPREAD(us)",
		       "BLK/SM");
	}
	struct td_tracks *tracks = tf ? td_tracks_new() : NULL;
	size_t ntrace = 0;
	for (size_t i = 0, shown = 0; i < nl; i++) {
		struct krs_launch *x = &L[i];
		int dev = td_dev(td, x->pid, x->ctx);
		const char *name = td_kname(td, x->kernel_id, nb, sizeof(nb));
		unsigned persm[4096] = { 0 };
		unsigned nsm = 0, lo = UINT32_MAX, hi = 0;
		for (uint64_t b = 0; x->blk && b < x->nblocks; b++)
			if (x->blk[b] && x->blk[b]->smid < 4096)
				persm[x->blk[b]->smid]++;
		for (unsigned s = 0; s < 4096; s++)
			if (persm[s]) {
				nsm++;
				lo = persm[s] < lo ? persm[s] : lo;
				hi = persm[s] > hi ? persm[s] : hi;
			}
		if (!nsm)
			lo = 0;
		double spread = x->got ? (double)(x->last - x->first) / 1000.0 : 0;
		if (json) {
			printf("%s{\"kernel\":", shown++ ? "," : "");
			gx_json_str(stdout, name);
			printf(",\"pid\":%u,\"ctx\":%u,", x->pid, x->ctx);
			if (multi)
				printf("\"dev\":%d,", dev);
			printf("\"seq\":%u,\"launch_id\":%llu,\"grid_blocks\":%llu,\"sample_every\":%llu,"
			       "\"blocks_expected\":%llu,\"blocks\":%llu,"
			       "\"sms\":%u,\"blocks_per_sm_min\":%u,\"blocks_per_sm_max\":%u,\"first_finish_ns\":%llu,"
			       "\"last_finish_ns\":%llu,\"finishes\":[",
			       x->l->seq, (unsigned long long)x->launch_id, (unsigned long long)x->nblocks,
			       (unsigned long long)x->every, (unsigned long long)x->expected, (unsigned long long)x->got,
			       nsm, lo, hi, (unsigned long long)(x->got ? x->first : 0),
			       (unsigned long long)(x->got ? x->last : 0));
			int c = 0;
			for (uint64_t b = 0; x->blk && b < x->nblocks; b++) {
				const struct gx_krs_rec *k = x->blk[b];
				if (k)
					printf("%s{\"block\":[%u,%u,%u],\"sm\":%u,\"ts\":%llu}", c++ ? "," : "",
					       k->ctaid[0], k->ctaid[1], k->ctaid[2], k->smid,
					       (unsigned long long)k->ts);
			}
			printf("]}");
		} else {
			char blocks[40], every[24] = "all";
			snprintf(blocks, sizeof(blocks), "%llu/%llu", (unsigned long long)x->got,
				 (unsigned long long)x->expected);
			if (x->every > 1)
				snprintf(every, sizeof(every), "1/%llu", (unsigned long long)x->every);
			if (multi)
				printf("%3d ", dev);
			printf("%-32.32s %6u %15s %6s %5u %12.1f %5u..%-5u\n", name, x->l->seq, blocks, every, nsm, spread,
			       lo, hi);
		}
		for (uint64_t b = 0; tf && x->blk && b < x->nblocks && ntrace < TRACE_MAX_EVENTS; b++) {
			const struct gx_krs_rec *k = x->blk[b];
			if (!k)
				continue;
			td_tracks_use(tracks, dev, k->smid);
			fprintf(tf, ",\n{\"name\":\"%s (%u,%u,%u) done\",\"cat\":\"block\",\"ph\":\"i\",\"s\":\"t\",\"pid\":%d,"
				    "\"tid\":%u,\"ts\":%.3f}",
				"block", k->ctaid[0], k->ctaid[1], k->ctaid[2], dev + 1, k->smid, (double)(k->ts - base) / 1000.0);
			ntrace++;
		}
		if (tf && x->got) {
			fprintf(tf, ",\n{\"name\":");
			gx_json_str(tf, name);
			td_tracks_use(tracks, dev, TD_MAX_SMS);
			fprintf(tf, ",\"cat\":\"kernel\",\"ph\":\"X\",\"pid\":%d,\"tid\":100000,\"ts\":%.3f,\"dur\":%.3f,"
				    "\"args\":{\"seq\":%u,\"blocks\":%llu}}",
				dev + 1, (double)(x->first - base) / 1000.0, (double)(x->last - x->first) / 1000.0, x->l->seq,
				(unsigned long long)x->got);
		}
	}
	if (tf)
		td_tracks_names(tf, tracks, td, "kernels (finish spread)", 100000);
	if (json) {
		printf("]}\n");
	} else if (nl) {
		/* Distribution of finish times within the launch with most blocks. */
		size_t best = 0;
		for (size_t i = 1; i < nl; i++)
			if (L[i].got > L[best].got)
				best = i;
		struct krs_launch *x = &L[best];
		if (x->got > 1 && x->last > x->first) {
			unsigned long long h[10] = { 0 }, mx = 0;
			for (uint64_t b = 0; b < x->nblocks; b++)
				if (x->blk[b]) {
					uint64_t k = (x->blk[b]->ts - x->first) * 10 / (x->last - x->first + 1);
					h[k]++;
				}
			for (int k = 0; k < 10; k++)
				mx = h[k] > mx ? h[k] : mx;
			printf("\nblock finishes over time, launch %u of %s:\n", x->l->seq,
			       td_kname(td, x->kernel_id, nb, sizeof(nb)));
			for (int k = 0; k < 10; k++) {
				printf("  %9.1f us | %7llu ", (double)(x->last - x->first) * k / 10 / 1000.0, h[k]);
				bar(h[k], mx, 40);
				printf("\n");
			}
		}
	}
	for (size_t i = 0; i < nl; i++)
		free(L[i].blk);
	free(L);
	free(done);
	free(byid);
	return 0;
}

/* ---------------------------------------------------------------- threadhist */
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
		all.nsm = td->ctxs[i].nr_sms > all.nsm ? td->ctxs[i].nr_sms : all.nsm;
		struct th_gpu *g = &gpu[td_dev(td, td->ctxs[i].pid, td->ctxs[i].ctx)];
		g->nsm = td->ctxs[i].nr_sms > g->nsm ? td->ctxs[i].nr_sms : g->nsm;
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
		printf("]}\n");
	} else if (!multi) {
		printf("threadhist: %u SMs, %llu blocks, %llu warps, %llu threads (%u map files)\n\n", nsm, all.tot.blocks,
		       all.tot.warps, all.tot.threads, files);
		printf("%5s %10s %10s %12s\n", "SM", "BLOCKS", "WARPS", "THREADS");
		for (unsigned s = 0; s < nsm; s++) {
			printf("%5u %10llu %10llu %12llu ", s, sm[s].blocks, sm[s].warps, sm[s].threads);
			bar(sm[s].threads, all.mx, 40);
			printf("\n");
		}
		printf("\nbusy SMs %llu/%u; max/mean threads per SM = %.3f (1.000 = perfectly even)\n", all.busy, nsm,
		       th_imbalance(&all));
	} else {
		printf("threadhist: %u GPUs, %llu blocks, %llu warps, %llu threads (%u map files)\n\n", ngpu,
		       all.tot.blocks, all.tot.warps, all.tot.threads, files);
		printf("%3s %5s %10s %10s %12s\n", "GPU", "SM", "BLOCKS", "WARPS", "THREADS");
		for (int d = 0; d < TD_MAX_DEVS; d++)
			for (unsigned s = 0; gpu[d].sm && s < gpu[d].nsm; s++) {
				const struct gx_th_val *v = &gpu[d].sm[s];
				printf("%3d %5u %10llu %10llu %12llu ", d, s, v->blocks, v->warps, v->threads);
				bar(v->threads, all.mx, 40);
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

/* ---------------------------------------------------------------- launchlate */
int fmt_launchlate(const struct tooldata *td, int json, FILE *tf)
{
	size_t nl = td->nr_launches;
	unsigned char *taken = calloc(nl + 1, 1);
	int64_t *lat = calloc(td->nr_recs + 1, sizeof(*lat));
	size_t *lof = calloc(td->nr_recs + 1, sizeof(*lof));
	if (!taken || !lat || !lof) {
		free(taken), free(lat), free(lof);
		return 1;
	}
	/* A record goes to the launch its launch id names; without one (0), the
	 * k-th record of a kernel (per process and context) to its k-th launch. */
	size_t *byid = match_launch_ids(td, sizeof(struct gx_ll_rec), offsetof(struct gx_ll_rec, kernel_id),
					offsetof(struct gx_ll_rec, launch_id));
	size_t matched = 0, uncal = 0;
	for (size_t r = 0; r < td->nr_recs; r++) {
		lof[r] = SIZE_MAX;
		if (td->recs[r].len < sizeof(struct gx_ll_rec))
			continue;
		const struct gx_ll_rec *k = td->recs[r].data;
		size_t only = k->launch_id ? (byid ? byid[r] : SIZE_MAX) : SIZE_MAX;
		if (k->launch_id && only == SIZE_MAX)
			continue; /* a launch the log does not have */
		for (size_t i = k->launch_id ? only : 0; i < nl; i++) {
			const struct td_launch *l = &td->launches[i];
			if (taken[i] || l->kernel_id != k->kernel_id || l->pid != td->recs[r].pid ||
			    l->ctx != td->recs[r].ctx) {
				if (k->launch_id)
					break;
				continue;
			}
			const struct td_ctx *c = td_ctx(td, l->pid, l->ctx);
			taken[i] = 1;
			lof[r] = i;
			if (!c || !c->calibrated) {
				uncal++;
				lof[r] = SIZE_MAX;
			} else {
				lat[r] = (int64_t)(k->ts - (uint64_t)c->gt_minus_host) - (int64_t)l->host_ns;
				matched++;
			}
			break;
		}
	}
	/* Per kernel (and GPU, with several): sorted latencies. */
	int multi = td_nr_devs(td) > 1;
	uint64_t *ids = calloc(td->nr_knames + td->nr_recs + 1, sizeof(*ids));
	int *idev = calloc(td->nr_knames + td->nr_recs + 1, sizeof(*idev));
	size_t nids = 0;
#define LL_DEV(r) (multi ? td_dev(td, td->launches[lof[r]].pid, td->launches[lof[r]].ctx) : 0)
	for (size_t r = 0; ids && idev && r < td->nr_recs; r++) {
		if (lof[r] == SIZE_MAX)
			continue;
		uint64_t id = td->launches[lof[r]].kernel_id;
		int dev = LL_DEV(r);
		size_t j = 0;
		while (j < nids && (ids[j] != id || idev[j] != dev))
			j++;
		if (j == nids)
			ids[nids] = id, idev[nids++] = dev;
	}
	char nb[64];
	if (json)
		printf("{\"tool\":\"launchlate\",\"launches\":%zu,\"matched\":%zu,\"uncalibrated\":%zu,\"drops\":%llu,"
		       "\"kernels\":[",
		       nl, matched, uncal, (unsigned long long)td->drops);
	else
		printf("launchlate: %zu launches, %zu matched with a first-block start, %llu dropped\n\n%s"
		       "%-32s %6s %10s %10s %10s %10s\n",
		       nl, matched, (unsigned long long)td->drops, multi ? "GPU " : "", "KERNEL", "COUNT", "MIN(us)",
		       "MEDIAN", "P90", "MAX");
	uint64_t *v = calloc(td->nr_recs + 1, sizeof(*v));
	unsigned long long hist[24] = { 0 };
	for (size_t j = 0; v && j < nids; j++) {
		size_t n = 0;
		for (size_t r = 0; r < td->nr_recs; r++)
			if (lof[r] != SIZE_MAX && td->launches[lof[r]].kernel_id == ids[j] && LL_DEV(r) == idev[j])
				v[n++] = (uint64_t)(lat[r] < 0 ? 0 : lat[r]);
		qsort(v, n, sizeof(*v), cmp_u64);
		const char *name = td_kname(td, ids[j], nb, sizeof(nb));
		if (json) {
			printf("%s{\"kernel\":", j ? "," : "");
			gx_json_str(stdout, name);
			if (multi)
				printf(",\"dev\":%d", idev[j]);
			printf(",\"count\":%zu,\"min_ns\":%llu,\"median_ns\":%llu,\"p90_ns\":%llu,\"max_ns\":%llu}", n,
			       (unsigned long long)v[0], (unsigned long long)v[n / 2],
			       (unsigned long long)v[n * 9 / 10], (unsigned long long)v[n - 1]);
		} else {
			if (multi)
				printf("%3d ", idev[j]);
			printf("%-32.32s %6zu %10.1f %10.1f %10.1f %10.1f\n", name, n, v[0] / 1000.0, v[n / 2] / 1000.0,
			       v[n * 9 / 10] / 1000.0, v[n - 1] / 1000.0);
		}
		for (size_t k = 0; k < n; k++) {
			int b = 0;
			for (uint64_t us = v[k] / 1000; us > 0 && b < 23; us >>= 1)
				b++;
			hist[b]++;
		}
	}
	if (json) {
		/* per launch, in log order: the shim's number, the device's id, latency */
		printf("],\"per_launch\":[");
		for (size_t i = 0, c = 0; i < nl; i++)
			for (size_t r = 0; r < td->nr_recs; r++)
				if (lof[r] == i) {
					const struct gx_ll_rec *k = td->recs[r].data;
					printf("%s{\"kernel\":", c++ ? "," : "");
					gx_json_str(stdout, td_kname(td, k->kernel_id, nb, sizeof(nb)));
					printf(",\"pid\":%u,\"ctx\":%u,", td->launches[i].pid, td->launches[i].ctx);
					if (multi)
						printf("\"dev\":%d,", LL_DEV(r));
					printf("\"seq\":%u,\"launch_id\":%llu,\"latency_ns\":%lld}", td->launches[i].seq,
					       (unsigned long long)k->launch_id, (long long)lat[r]);
					break;
				}
		printf("]}\n");
	} else if (matched) {
		unsigned long long mx = 0;
		int hiB = 0;
		for (int b = 0; b < 24; b++)
			if (hist[b]) {
				mx = hist[b] > mx ? hist[b] : mx;
				hiB = b;
			}
		printf("\nlatency histogram (us):\n");
		for (int b = 0; b <= hiB; b++) {
			printf("  %8llu .. %-8llu | %7llu ", b ? 1ull << (b - 1) : 0ull, (1ull << b) - 1,
			       hist[b]);
			bar(hist[b], mx, 40);
			printf("\n");
		}
		const struct td_ctx *c = td->nr_ctxs ? &td->ctxs[0] : NULL;
		if (c && c->calibrated)
			printf("\nclock calibration error: +-%.1f us\n", c->calib_err_ns / 1000.0);
	}
	if (tf) {
		uint64_t base = UINT64_MAX;
		for (size_t r = 0; r < td->nr_recs; r++)
			if (lof[r] != SIZE_MAX) {
				const struct gx_ll_rec *k = td->recs[r].data;
				uint64_t start = k->ts - (uint64_t)lat[r];
				base = start < base ? start : base;
			}
		struct td_tracks *tracks = td_tracks_new();
		for (size_t r = 0, n = 0; r < td->nr_recs && n < TRACE_MAX_EVENTS; r++) {
			if (lof[r] == SIZE_MAX)
				continue;
			const struct gx_ll_rec *k = td->recs[r].data;
			unsigned tid = k->smid < 4096 ? k->smid : 0;
			int dev = td_dev(td, td->launches[lof[r]].pid, td->launches[lof[r]].ctx);
			td_tracks_use(tracks, dev, tid);
			fprintf(tf, ",\n{\"name\":");
			gx_json_str(tf, td_kname(td, k->kernel_id, nb, sizeof(nb)));
			fprintf(tf, ",\"cat\":\"launch latency\",\"ph\":\"X\",\"pid\":%d,\"tid\":%u,\"ts\":%.3f,\"dur\":%.3f,"
				    "\"args\":{\"seq\":%u}}",
				dev + 1, tid, (double)(k->ts - (uint64_t)lat[r] - base) / 1000.0, lat[r] / 1000.0,
				td->launches[lof[r]].seq);
			n++;
		}
		td_tracks_names(tf, tracks, td, NULL, 0);
	}
#undef LL_DEV
	free(v), free(ids), free(idev), free(taken), free(lat), free(lof), free(byid);
	return 0;
}

/* ------------------------------------------------------------------ memtrace */
static const char *op_name(unsigned op)
{
	static const char *const n[] = { "?", "load", "store", "atomic", "reduce" };
	return op < 5 ? n[op] : "?";
}

int fmt_memtrace(const struct tooldata *td, int json, FILE *tf)
{
	unsigned long long ops[5] = { 0 }, sizes[5] = { 0 }, n = 0, lanes = 0;
	uint64_t lo = UINT64_MAX, hi = 0, base = UINT64_MAX;
	for (size_t r = 0; r < td->nr_recs; r++) {
		if (td->recs[r].len < sizeof(struct gx_mt_rec))
			continue;
		const struct gx_mt_rec *m = td->recs[r].data;
		n++;
		ops[m->op < 5 ? m->op : 0]++;
		int sb = m->size >= 16 ? 4 : m->size >= 8 ? 3 : m->size >= 4 ? 2 : m->size >= 2 ? 1 : 0;
		sizes[sb]++;
		lanes += m->nr_active;
		lo = m->addr < lo ? m->addr : lo;
		hi = m->addr > hi ? m->addr : hi;
		base = m->ts < base ? m->ts : base;
	}
	/* Per kernel counts. */
	char nb[64];
	int multi = td_nr_devs(td) > 1;
	if (json) {
		printf("{\"tool\":\"memtrace\",\"samples\":%llu,\"drops\":%llu,\"ops\":{\"load\":%llu,\"store\":%llu,"
		       "\"atomic\":%llu,\"reduce\":%llu},\"addr_min\":%llu,\"addr_max\":%llu,\"records\":[",
		       n, (unsigned long long)td->drops, ops[1], ops[2], ops[3], ops[4],
		       (unsigned long long)(n ? lo : 0), (unsigned long long)(n ? hi : 0));
		size_t c = 0;
		for (size_t r = 0; r < td->nr_recs && c < TRACE_MAX_EVENTS; r++) {
			if (td->recs[r].len < sizeof(struct gx_mt_rec))
				continue;
			const struct gx_mt_rec *m = td->recs[r].data;
			printf("%s{\"kernel\":", c++ ? "," : "");
			gx_json_str(stdout, td_kname(td, m->kernel_id, nb, sizeof(nb)));
			if (multi)
				printf(",\"dev\":%d", td_dev(td, td->recs[r].pid, td->recs[r].ctx));
			printf(",\"addr\":%llu,\"size\":%u,\"op\":\"%s\",\"sm\":%u,\"block\":%u,\"lanes\":%u,\"ts\":%llu}",
			       (unsigned long long)m->addr, m->size, op_name(m->op), m->smid, m->ctaid_x, m->nr_active,
			       (unsigned long long)m->ts);
		}
		printf("]}\n");
	} else {
		printf("memtrace: %llu sampled warp accesses, %llu dropped\n\n", n, (unsigned long long)td->drops);
		unsigned long long mx = 0;
		for (int i = 1; i < 5; i++)
			mx = ops[i] > mx ? ops[i] : mx;
		printf("%-8s %10s\n", "OP", "SAMPLES");
		for (int i = 1; i < 5; i++) {
			printf("%-8s %10llu ", op_name((unsigned)i), ops[i]);
			bar(ops[i], mx, 40);
			printf("\n");
		}
		static const char *const sn[] = { "1B", "2B", "4B", "8B", ">=16B" };
		printf("\n%-8s %10s\n", "BYTES", "SAMPLES");
		for (int i = 0; i < 5; i++)
			printf("%-8s %10llu\n", sn[i], sizes[i]);
		if (n) {
			printf("\naddresses 0x%llx .. 0x%llx, %.1f active lanes per access on average\n",
			       (unsigned long long)lo, (unsigned long long)hi, (double)lanes / n);
			printf("\n%-32s %10s\n", "KERNEL", "SAMPLES");
			for (size_t k = 0; k < td->nr_knames; k++) {
				unsigned long long c = 0;
				for (size_t r = 0; r < td->nr_recs; r++)
					if (td->recs[r].len >= sizeof(struct gx_mt_rec) &&
					    ((const struct gx_mt_rec *)td->recs[r].data)->kernel_id == td->knames[k].id)
						c++;
				if (c)
					printf("%-32.32s %10llu\n", td->knames[k].name, c);
			}
			if (multi) {
				printf("\n%3s %10s\n", "GPU", "SAMPLES");
				for (int d = 0; d < TD_MAX_DEVS; d++) {
					unsigned long long c = 0;
					for (size_t r = 0; r < td->nr_recs; r++)
						c += td->recs[r].len >= sizeof(struct gx_mt_rec) &&
						     td_dev(td, td->recs[r].pid, td->recs[r].ctx) == d;
					if (c)
						printf("%3d %10llu\n", d, c);
				}
			}
		}
	}
	if (tf) {
		struct td_tracks *tracks = td_tracks_new();
		size_t c = 0;
		for (size_t r = 0; r < td->nr_recs && c < TRACE_MAX_EVENTS; r++) {
			if (td->recs[r].len < sizeof(struct gx_mt_rec))
				continue;
			const struct gx_mt_rec *m = td->recs[r].data;
			unsigned tid = m->smid < 4096 ? m->smid : 0;
			int dev = td_dev(td, td->recs[r].pid, td->recs[r].ctx);
			td_tracks_use(tracks, dev, tid);
			fprintf(tf, ",\n{\"name\":\"%s\",\"cat\":\"mem\",\"ph\":\"i\",\"s\":\"t\",\"pid\":%d,\"tid\":%u,"
				    "\"ts\":%.3f,\"args\":{\"addr\":\"0x%llx\",\"size\":%u,\"lanes\":%u}}",
				op_name(m->op), dev + 1, tid, (double)(m->ts - base) / 1000.0, (unsigned long long)m->addr, m->size,
				m->nr_active);
			c++;
		}
		td_tracks_names(tf, tracks, td, NULL, 0);
	}
	return 0;
}
