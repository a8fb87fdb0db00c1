/* launchlate.c — launchlate's report: per kernel, the latency from the
 * host's launch call to the first block's start (%globaltimer calibrated
 * against CLOCK_REALTIME per context). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/gx_util.h"
#include "devbpf/gx_bpf.h"
#include "tools/tooldata_internal.h"

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
	size_t *byid = td_match_launch_ids(td, sizeof(struct gx_ll_rec), offsetof(struct gx_ll_rec, kernel_id),
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
				/* in unsigned arithmetic (a damaged log's times wrap,
				 * not overflow), then signed */
				lat[r] = (int64_t)(k->ts - (uint64_t)c->gt_minus_host - l->host_ns);
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
		qsort(v, n, sizeof(*v), gx_cmp_u64);
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
		/* each launch's record, found once (a scan of the records per
		 * launch took minutes at 100,000 launches) */
		size_t *rof = malloc((nl + 1) * sizeof(*rof));
		for (size_t i = 0; rof && i < nl; i++)
			rof[i] = SIZE_MAX;
		for (size_t r = 0; rof && r < td->nr_recs; r++)
			if (lof[r] < nl && rof[lof[r]] == SIZE_MAX)
				rof[lof[r]] = r;
		for (size_t i = 0, c = 0; rof && i < nl; i++) {
			size_t r = rof[i];
			if (r == SIZE_MAX)
				continue;
			const struct gx_ll_rec *k = td->recs[r].data;
			printf("%s{\"kernel\":", c++ ? "," : "");
			gx_json_str(stdout, td_kname(td, k->kernel_id, nb, sizeof(nb)));
			printf(",\"pid\":%u,\"ctx\":%u,", td->launches[i].pid, td->launches[i].ctx);
			if (multi)
				printf("\"dev\":%d,", LL_DEV(r));
			printf("\"seq\":%u,\"launch_id\":%llu,\"latency_ns\":%lld}", td->launches[i].seq,
			       (unsigned long long)k->launch_id, (long long)lat[r]);
		}
		free(rof);
		printf("]");
		td_launches_json(td);
		printf("}\n");
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
			td_bar(hist[b], mx, 40);
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

