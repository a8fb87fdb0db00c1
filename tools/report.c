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
int td_cmp_lid_key(const void *a, const void *b)
{
	const struct td_lid_key *x = a, *y = b;
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
/* The first of lk[0..nl) (sorted by td_cmp_lid_key) at or after
 * (pid, ctx, kid): a kernel's launches in a context start there. */
static size_t lk_first(const struct td_lid_key *lk, size_t nl, uint32_t pid, uint32_t ctx, uint64_t kid)
{
	struct td_lid_key probe = { pid, ctx, kid, 0, 0 };
	size_t lo = 0, hi = nl;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (td_cmp_lid_key(&lk[mid], &probe) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The rank rule is exact while every launch of a kernel left a record.
 * When some did not — a record table keeps each drain period's last
 * launches, a full ring its first — the k-th surviving id is not the k-th
 * launch: kernelretsnoop's records of launch 500 would be told launch 1.
 * %gridid counts a context's grids one by one, so for launches a before b
 * of one context, id_b - id_a = (pos_b - pos_a) + g, where pos is the place
 * in the context's log and g >= 0 counts grids the log does not list
 * between them (graph kernel nodes, the driver's own). realign() places a
 * context's ids by those differences wherever one of its kernels has fewer
 * ids than launches. Two walks: from the largest id down (anchored at the
 * last launch of its kernel: what a record table keeps) and from the
 * smallest up (at its kernel's first launch: what a ring keeps); each next
 * id goes to the nearest launch of its kernel at the place the difference
 * names, or up to GAP_MAX places further from the anchor side; an id that
 * fits nowhere keeps the rank rule's launch if that is free and in order,
 * else none. The walk that leaves fewer ids without a launch wins, then
 * the one that puts more ids exactly where their differences say. */
#define GAP_MAX 64
struct lid_ent {
	uint64_t kid, lid;
	size_t r0;  /* the rank rule's launch (td->launches index), or SIZE_MAX */
	size_t pos; /* a walk's answer: place in the context's log, or SIZE_MAX */
};
static int cmp_lid_ent(const void *a, const void *b)
{
	const struct lid_ent *x = a, *y = b;
	return x->lid < y->lid ? -1 : x->lid > y->lid;
}

/* One walk over e[0..n) (ids ascending) against the context's launches
 * cl[0..nc) (td->launches indices, log order; pos_of: index -> place).
 * down: from the largest id. Returns ids placed exactly; e[].pos set,
 * *unplaced: the ids it found no launch for. */
static size_t walk(const struct tooldata *td, struct lid_ent *e, size_t n, const size_t *cl, size_t nc,
		   const size_t *pos_of, unsigned char *used, int down, size_t *unplaced)
{
	size_t exact = 0, prev = SIZE_MAX;
	*unplaced = 0;
	uint64_t prev_lid = 0;
	memset(used, 0, nc);
	for (size_t i = 0; i < n; i++) {
		struct lid_ent *x = &e[down ? n - 1 - i : i];
		size_t p = SIZE_MAX;
		if (prev == SIZE_MAX) { /* the anchor: its kernel's last (first) launch */
			for (size_t q = 0; q < nc && p == SIZE_MAX; q++) {
				size_t c = down ? nc - 1 - q : q;
				if (td->launches[cl[c]].kernel_id == x->kid)
					p = c;
			}
		} else {
			uint64_t d = down ? prev_lid - x->lid : x->lid - prev_lid;
			/* the place the difference names, then up to GAP_MAX toward
			 * the anchor (grids the log does not list); a difference
			 * beyond the log names no place */
			long long est = d > nc ? 0 : down ? (long long)prev - (long long)d : (long long)prev + (long long)d;
			for (long long k = 0; d <= nc && k <= GAP_MAX && p == SIZE_MAX; k++) {
				long long c = down ? est + k : est - k;
				if (c < 0 || c >= (long long)nc || (down ? c >= (long long)prev : c <= (long long)prev))
					continue;
				if (!used[c] && td->launches[cl[c]].kernel_id == x->kid) {
					p = (size_t)c;
					exact += k == 0;
				}
			}
			if (p == SIZE_MAX && x->r0 != SIZE_MAX) {
				size_t c = pos_of[x->r0];
				if (c < nc && !used[c] && (down ? c < prev : c > prev))
					p = c;
			}
		}
		x->pos = p;
		*unplaced += p == SIZE_MAX;
		if (p != SIZE_MAX) {
			used[p] = 1;
			prev = p;
			prev_lid = x->lid;
		}
	}
	return exact;
}

static void realign(const struct tooldata *td, const struct td_lid_key *rk, size_t nk, const struct td_lid_key *lk,
		    size_t *out)
{
	size_t nl = td->nr_launches;
	size_t *cl = malloc((nl + 1) * sizeof(*cl)), *pos_of = malloc((nl + 1) * sizeof(*pos_of));
	struct lid_ent *e = malloc((nk + 1) * sizeof(*e)), *e2 = malloc((nk + 1) * sizeof(*e2));
	unsigned char *used = malloc(nl + 1);
	for (size_t a = 0; cl && pos_of && e && e2 && used && a < nk;) {
		/* rk[a..b): one context, sorted by kernel, then id */
		size_t b = a, n = 0, nc = 0;
		int short_of = 0;
		while (b < nk && rk[b].pid == rk[a].pid && rk[b].ctx == rk[a].ctx)
			b++;
		for (size_t i = a; i < b; i++) {
			if (i > a && rk[i].kid == rk[i - 1].kid && rk[i].lid == rk[i - 1].lid)
				continue;
			e[n++] = (struct lid_ent){ rk[i].kid, rk[i].lid, out[rk[i].idx], SIZE_MAX };
		}
		/* a kernel with fewer ids than launches in this context? (lk is
		 * sorted by context and kernel) */
		for (size_t i = 0, j = 0; i < n && !short_of; i = j) {
			size_t ids = 0, launches = 0;
			for (j = i; j < n && e[j].kid == e[i].kid; j++)
				ids++;
			for (size_t q = lk_first(lk, nl, rk[a].pid, rk[a].ctx, e[i].kid);
			     q < nl && lk[q].pid == rk[a].pid && lk[q].ctx == rk[a].ctx && lk[q].kid == e[i].kid; q++)
				launches++;
			short_of = ids < launches;
		}
		if (short_of) {
			for (size_t q = 0; q < nl; q++) {
				pos_of[q] = SIZE_MAX;
				if (td->launches[q].pid == rk[a].pid && td->launches[q].ctx == rk[a].ctx)
					pos_of[q] = nc, cl[nc++] = q;
			}
			/* ids ascending across the context's kernels */
			qsort(e, n, sizeof(*e), cmp_lid_ent);
			memcpy(e2, e, n * sizeof(*e));
			/* A walk from a wrong anchor (the ring lost its kernel's last
			 * launches, the table its first) places the ids it meets
			 * shifted, each "exactly", and runs out of launches at the far
			 * end: the walk that leaves fewer ids unplaced wins, then the
			 * one with more exact places */
			size_t un_down, un_up;
			size_t down = walk(td, e, n, cl, nc, pos_of, used, 1, &un_down);
			size_t up = walk(td, e2, n, cl, nc, pos_of, used, 0, &un_up);
			const struct lid_ent *w = un_up != un_down ? (un_up < un_down ? e2 : e) : up > down ? e2 : e;
			for (size_t i = a; i < b; i++) {
				size_t lo = 0, hi = n; /* w sorted by id: its entry */
				while (lo < hi) {
					size_t mid = (lo + hi) / 2;
					if (w[mid].lid < rk[i].lid)
						lo = mid + 1;
					else
						hi = mid;
				}
				/* (one id under two kernels, a damaged log: its own kernel's) */
				while (lo < n && w[lo].lid == rk[i].lid && w[lo].kid != rk[i].kid)
					lo++;
				out[rk[i].idx] = lo < n && w[lo].lid == rk[i].lid && w[lo].kid == rk[i].kid && w[lo].pos != SIZE_MAX
							 ? cl[w[lo].pos]
							 : SIZE_MAX;
			}
		}
		a = b;
	}
	free(cl);
	free(pos_of);
	free(e);
	free(e2);
	free(used);
}

size_t *td_match_launch_ids(const struct tooldata *td, size_t min_len, size_t kid_off, size_t lid_off)
{
	size_t nr = td->nr_recs, nl = td->nr_launches, nk = 0;
	size_t *out = malloc((nr + 1) * sizeof(*out));
	struct td_lid_key *rk = calloc(nr + 1, sizeof(*rk)), *lk = calloc(nl + 1, sizeof(*lk));
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
			rk[nk++] = (struct td_lid_key){ td->recs[r].pid, td->recs[r].ctx, kid, lid, r };
	}
	/* launches keyed by (pid, ctx, kernel), in log order (idx) within */
	for (size_t i = 0; i < nl; i++)
		lk[i] = (struct td_lid_key){ td->launches[i].pid, td->launches[i].ctx, td->launches[i].kernel_id, 0, i };
	qsort(rk, nk, sizeof(*rk), td_cmp_lid_key);
	qsort(lk, nl, sizeof(*lk), td_cmp_lid_key);
	size_t g = 0, rank = 0;
	for (size_t i = 0; i < nk; i++) {
		const struct td_lid_key *k = &rk[i];
		int same_kernel = i && k->pid == rk[i - 1].pid && k->ctx == rk[i - 1].ctx && k->kid == rk[i - 1].kid;
		if (!same_kernel) {
			rank = 0;
			g = lk_first(lk, nl, k->pid, k->ctx, k->kid); /* this kernel's first launch */
		} else if (k->lid != rk[i - 1].lid) {
			rank++;
		}
		size_t j = g + rank;
		if (j < nl && lk[j].pid == k->pid && lk[j].ctx == k->ctx && lk[j].kid == k->kid)
			out[k->idx] = lk[j].idx;
	}
	realign(td, rk, nk, lk, out);
	free(rk);
	free(lk);
	return out;
}

