/* kernelretsnoop.c — kernelretsnoop's report: per launch, when each block
 * finished and on which SM (a regular sample of large launches, see
 * tools_common.h), as a table, JSON, and one trace event per block. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/gx_util.h"
#include "devbpf/gx_bpf.h"
#include "tools/tooldata_internal.h"

/* The most blocks one launch's record array holds (kernelretsnoop_all on
 * a larger grid: its records are counted as unattributed) — 128 MB. */
#define KRS_BLK_MAX (1ull << 24)

struct krs_launch {
	const struct td_launch *l; /* NULL: a launch the log does not list (unlogged) */
	uint32_t seq;              /* l's seq; 0 when unlogged */
	uint64_t kernel_id;
	uint32_t pid, ctx;
	uint64_t nblocks, got;
	uint64_t every, expected; /* sampled launches (gx_krs_sample_mask): 1 in every; records expected */
	uint64_t first, last;
	uint64_t launch_id;            /* the device's id of this launch (0: none seen) */
	const struct gx_krs_rec **blk; /* by place in the sample (linear block index / every), expected */
};

static uint64_t grid_blocks(const uint32_t g[3])
{
	return (uint64_t)g[0] * g[1] * g[2];
}

/* The cap's shift process `pid` ran with: its records' tag (tools_common.h,
 * GX_KRS_CAP), GX_KRS_FULL_SHIFT when none has one. */
static unsigned pid_shift(const struct tooldata *td, uint32_t pid)
{
	for (size_t r = 0; r < td->nr_recs; r++) {
		if (td->recs[r].pid != pid || td->recs[r].len < sizeof(struct gx_krs_rec))
			continue;
		const struct gx_krs_rec *k = td->recs[r].data;
		if (k->nctaid[2] >> GX_KRS_SHIFT_BIT)
			return gx_krs_rec_shift(k->nctaid[2]);
	}
	return GX_KRS_FULL_SHIFT;
}

/* The regular sample a launch of x->nblocks blocks records under the cap
 * 2^shift (every block with kernelretsnoop_all): 1 in x->every, x->expected
 * records. */
static void krs_sample(struct krs_launch *x, int all, unsigned shift)
{
	x->every = all ? 1 : gx_krs_sample_mask_at(x->nblocks, shift) + 1;
	x->expected = x->nblocks ? (x->nblocks - 1) / x->every + 1 : 0;
	x->first = UINT64_MAX;
}

/* Records a and b are of one launch id of one context (u's keys: kernel 0,
 * so td_cmp_lid_key orders them by context, then launch id) */
static int same_id(const struct td_lid_key *a, const struct td_lid_key *b)
{
	return a->pid == b->pid && a->ctx == b->ctx && a->lid == b->lid;
}

/* The launches the log does not list: one per (process, context, launch
 * id) of the records byid ties to no launch, appended to *L after its nl
 * logged ones (its grid, cap and kernel from the group's first record);
 * *ng of them. Returns per record its launch's index in *L, SIZE_MAX for
 * the others (malloc'd); NULL when there are none or out of memory (*ng
 * then says which: 0 or not). */
static size_t *unlogged_launches(const struct tooldata *td, const size_t *byid, int all, struct krs_launch **L,
				 size_t nl, size_t *ng)
{
	size_t nu = 0, g = 0;
	struct td_lid_key *u = malloc((td->nr_recs + 1) * sizeof(*u));
	size_t *rg = malloc((td->nr_recs + 1) * sizeof(*rg));
	*ng = 0;
	if (!u || !rg) {
		free(u), free(rg);
		*ng = 1; /* out of memory */
		return NULL;
	}
	for (size_t r = 0; r < td->nr_recs; r++) {
		rg[r] = SIZE_MAX;
		const struct gx_krs_rec *k = td->recs[r].data;
		if (td->recs[r].len >= sizeof(*k) && k->launch_id && byid[r] == SIZE_MAX)
			u[nu++] = (struct td_lid_key){ td->recs[r].pid, td->recs[r].ctx, 0, k->launch_id, r };
	}
	qsort(u, nu, sizeof(*u), td_cmp_lid_key);
	for (size_t i = 0; i < nu; i++)
		g += !i || !same_id(&u[i], &u[i - 1]);
	struct krs_launch *n = g ? realloc(*L, (nl + g + 1) * sizeof(**L)) : *L;
	if (!n) {
		free(u), free(rg);
		*ng = 1;
		return NULL;
	}
	*L = n;
	memset(n + nl, 0, g * sizeof(*n));
	for (size_t i = 0, j = nl - 1; i < nu; i++) {
		const struct gx_krs_rec *k = td->recs[u[i].idx].data;
		if (!i || !same_id(&u[i], &u[i - 1])) {
			struct krs_launch *x = &n[++j];
			x->kernel_id = k->kernel_id;
			x->pid = u[i].pid, x->ctx = u[i].ctx;
			x->launch_id = u[i].lid;
			x->nblocks = (uint64_t)k->nctaid[0] * k->nctaid[1] * (k->nctaid[2] & GX_KRS_NZ_MASK);
			krs_sample(x, all, gx_krs_rec_shift(k->nctaid[2]));
		}
		/* a record of another kernel under the same id: none of its own */
		if (n[j].kernel_id == k->kernel_id)
			rg[u[i].idx] = j;
	}
	free(u);
	*ng = g;
	if (!g) {
		free(rg);
		return NULL;
	}
	return rg;
}

int fmt_kernelretsnoop(const struct tooldata *td, int json, FILE *tf)
{
	/* Launches without the hooks (SASS only) have no blocks to expect: the
	 * host-side section after the report lists them. */
	size_t nl = 0;
	struct krs_launch *L = calloc(td->nr_launches + 1, sizeof(*L));
	size_t *lidx = malloc((td->nr_launches + 1) * sizeof(*lidx)); /* td->launches index -> L index */
	if (!L || !lidx) {
		free(L);
		free(lidx);
		return 1;
	}
	/* kernelretsnoop_all: every block of every launch */
	int all = td->tool && !strcmp(td->tool, "kernelretsnoop_all");
	const char *tname = all ? "kernelretsnoop_all" : "kernelretsnoop";
	uint64_t expected = 0, sampled = 0;
	uint32_t spid = 0;
	unsigned shift = GX_KRS_FULL_SHIFT, cap_shift = GX_KRS_FULL_SHIFT;
	for (size_t j = 0; j < td->nr_launches; j++) {
		lidx[j] = SIZE_MAX;
		if (!td_hooked(td, &td->launches[j]))
			continue;
		size_t i = lidx[j] = nl++;
		L[i].l = &td->launches[j];
		L[i].seq = td->launches[j].seq;
		L[i].kernel_id = td->launches[j].kernel_id;
		L[i].pid = td->launches[j].pid, L[i].ctx = td->launches[j].ctx;
		L[i].nblocks = grid_blocks(td->launches[j].grid);
		if (!all && (j == 0 || L[i].pid != spid)) {
			spid = L[i].pid;
			shift = pid_shift(td, spid);
			cap_shift = shift < cap_shift ? shift : cap_shift;
		}
		krs_sample(&L[i], all, shift);
	}
	/* Records go to the launch their launch id names; without one (0),
	 * records of a kernel, in ring order, fill its launches in launch order. */
	size_t *byid = td_match_launch_ids(td, sizeof(struct gx_krs_rec), offsetof(struct gx_krs_rec, kernel_id),
					offsetof(struct gx_krs_rec, launch_id));
	/* Records whose launch id names no logged launch: launches the log does
	 * not list one by one (kernel nodes of CUDA graphs: the log counts a
	 * graph launch's nodes). Each such id becomes a launch of its own, its
	 * grid and cap from its records. */
	size_t ng = 0, *rg = byid ? unlogged_launches(td, byid, all, &L, nl, &ng) : NULL;
	if (ng && !rg) {
		free(L), free(lidx), free(byid);
		return 1;
	}
	for (size_t i = 0; i < nl + ng; i++) {
		expected += L[i].expected;
		sampled += L[i].every > 1;
	}
	uint64_t unattributed = 0;
	for (size_t r = 0; r < td->nr_recs; r++) {
		if (td->recs[r].len < sizeof(struct gx_krs_rec))
			continue;
		const struct gx_krs_rec *k = td->recs[r].data;
		uint64_t nz = k->nctaid[2] & GX_KRS_NZ_MASK;
		uint64_t lin = k->ctaid[0] + (uint64_t)k->nctaid[0] * (k->ctaid[1] + (uint64_t)k->nctaid[1] * k->ctaid[2]);
		size_t li = 0;
		if (k->launch_id) {
			li = byid && byid[r] != SIZE_MAX ? lidx[byid[r]] : rg && rg[r] != SIZE_MAX ? rg[r] : SIZE_MAX;
			if (li == SIZE_MAX || lin >= L[li].nblocks ||
			    L[li].nblocks != (uint64_t)k->nctaid[0] * k->nctaid[1] * nz) {
				unattributed++;
				continue;
			}
			if (!L[li].launch_id)
				L[li].launch_id = k->launch_id;
		}
		for (; !k->launch_id && li < nl; li++) {
			struct krs_launch *x = &L[li];
			if (x->kernel_id != k->kernel_id || x->pid != td->recs[r].pid || x->ctx != td->recs[r].ctx ||
			    x->nblocks != (uint64_t)k->nctaid[0] * k->nctaid[1] * nz || lin >= x->nblocks)
				continue;
			if (x->got < x->expected) /* new block, or a second exit site of one */
				break;
		}
		if (!k->launch_id && li == nl) { /* no launch of its kernel left it a place */
			unattributed++;
			continue;
		}
		struct krs_launch *x = &L[li];
		/* its place in the launch's sample (a block off the sample, or
		 * a sample too large to hold: unattributed) */
		uint64_t at = lin / x->every;
		if (lin % x->every || at >= x->expected || (!x->blk && x->expected > KRS_BLK_MAX)) {
			unattributed++;
			continue;
		}
		if (!x->blk && !(x->blk = calloc(x->expected, sizeof(*x->blk))))
			continue;
		if (!x->blk[at])
			x->got++;
		x->blk[at] = k; /* a second exit site of the block: keep the last */
		if (k->ts < x->first)
			x->first = k->ts;
		if (k->ts > x->last)
			x->last = k->ts;
	}
	size_t nlogged = nl;
	nl += ng;
	free(rg);
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
		if (nl > nlogged)
			printf("note: %zu launch(es) are not tied to the launch log (kernel nodes of CUDA\n"
			       "graphs, which the log counts but does not list, or launches their ids could\n"
			       "not place); LAUNCH '-', by launch id, grids from their records.\n\n",
			       nl - nlogged);
		if (sampled)
			printf("note: %llu launch(es) of more than %u blocks recorded a regular sample of their\n"
			       "blocks (SAMPLE: every Nth by linear index, at most %u per launch);\n"
			       "BLOCKS counts the sampled blocks.\n\n",
			       (unsigned long long)sampled, 1u << cap_shift, 1u << cap_shift);
		if (td->drops)
			printf("note: %llu block records were dropped (counted, not lost silently): the ring\n"
			       "was full between two drains; launches missing them show fewer BLOCKS.\n\n",
			       (unsigned long long)td->drops);
		/* the default build's record table (records tagged with its
		 * cap): a region comes round every 256 launches */
		uint64_t missing = 0;
		for (size_t i = 0; i < nl; i++)
			missing += L[i].expected > L[i].got ? L[i].expected - L[i].got : 0;
		if (cap_shift == GX_KRS_TABLE_SHIFT && missing > td->drops)
			printf("note: %llu expected block records never arrived: the record table holds the\n"
			       "last %u launches, and the drain takes a record within two drain periods,\n"
			       "so at more than a few thousand launches a second some launches' records\n"
			       "are overwritten first (GX_KRS_RING=1: a ring keeps 262,144 records\n"
			       "between drains and counts what it refuses).\n\n",
			       (unsigned long long)(missing - td->drops), GX_KRS_TABLE_LAUNCHES);
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
		for (uint64_t b = 0; x->blk && b < x->expected; b++)
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
			if (!x->l)
				printf("\"logged\":false,");
			printf("\"seq\":%u,\"launch_id\":%llu,\"grid_blocks\":%llu,\"sample_every\":%llu,"
			       "\"blocks_expected\":%llu,\"blocks\":%llu,"
			       "\"sms\":%u,\"blocks_per_sm_min\":%u,\"blocks_per_sm_max\":%u,\"first_finish_ns\":%llu,"
			       "\"last_finish_ns\":%llu,\"finishes\":[",
			       x->seq, (unsigned long long)x->launch_id, (unsigned long long)x->nblocks,
			       (unsigned long long)x->every, (unsigned long long)x->expected, (unsigned long long)x->got,
			       nsm, lo, hi, (unsigned long long)(x->got ? x->first : 0),
			       (unsigned long long)(x->got ? x->last : 0));
			int c = 0;
			for (uint64_t b = 0; x->blk && b < x->expected; b++) {
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
			char seq[16] = "-";
			if (x->l)
				snprintf(seq, sizeof(seq), "%u", x->seq);
			printf("%-32.32s %6s %15s %6s %5u %12.1f %5u..%-5u\n", name, seq, blocks, every, nsm, spread, lo,
			       hi);
		}
		for (uint64_t b = 0; tf && x->blk && b < x->expected && ntrace < TRACE_MAX_EVENTS; b++) {
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
				dev + 1, (double)(x->first - base) / 1000.0, (double)(x->last - x->first) / 1000.0, x->seq,
				(unsigned long long)x->got);
		}
	}
	if (tf)
		td_tracks_names(tf, tracks, td, "kernels (finish spread)", 100000);
	if (json) {
		printf("]");
		td_launches_json(td);
		printf("}\n");
	} else if (nl) {
		/* Distribution of finish times within the launch with most blocks. */
		size_t best = 0;
		for (size_t i = 1; i < nl; i++)
			if (L[i].got > L[best].got)
				best = i;
		struct krs_launch *x = &L[best];
		if (x->got > 1 && x->last > x->first) {
			unsigned long long h[10] = { 0 }, mx = 0;
			for (uint64_t b = 0; b < x->expected; b++)
				if (x->blk[b]) {
					uint64_t k = (x->blk[b]->ts - x->first) * 10 / (x->last - x->first + 1);
					h[k]++;
				}
			for (int k = 0; k < 10; k++)
				mx = h[k] > mx ? h[k] : mx;
			printf("\nblock finishes over time, launch %u of %s:\n", x->seq,
			       td_kname(td, x->kernel_id, nb, sizeof(nb)));
			for (int k = 0; k < 10; k++) {
				printf("  %9.1f us | %7llu ", (double)(x->last - x->first) * k / 10 / 1000.0, h[k]);
				td_bar(h[k], mx, 40);
				printf("\n");
			}
		}
	}
	for (size_t i = 0; i < nl; i++)
		free(L[i].blk);
	free(L);
	free(byid);
	free(lidx);
	return 0;
}

