/* report.c — what the four reports share: terminal bars, sorting, and the
 * pairing of device records with the host's launches. Reports must not
 * depend on anything but the data (golden tests compare them byte for byte):
 * a readable summary (tables, terminal histograms), --json, and Chrome /
 * Perfetto trace events (one track per SM; times in µs of %globaltimer
 * relative to the first event). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/gx_util.h"
#include "devbpf/gx_bpf.h"
#include "tools/tooldata_internal.h"

void td_bar(unsigned long long v, unsigned long long max, int width)
{
	int n = max ? (int)((v * (unsigned long long)width + max - 1) / max) : 0;
	for (int i = 0; i < n; i++)
		fputs("#", stdout);
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
size_t *td_match_launch_ids(const struct tooldata *td, size_t min_len, size_t kid_off, size_t lid_off)
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

