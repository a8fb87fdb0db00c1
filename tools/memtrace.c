/* memtrace.c — memtrace's report: the sampled global memory accesses
 * (address, size, operation, SM, time) per kernel. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/gx_util.h"
#include "devbpf/gx_bpf.h"
#include "tools/tooldata_internal.h"

static const char *op_name(unsigned op)
{
	static const char *const n[] = { "?", "load", "store", "atomic", "reduce" };
	return op < 5 ? n[op] : "?";
}

/* Record r as a sampled access, or NULL: too short, or a report of
 * samples a lane could not keep (GDEV_MEM_LOST: its size is their count;
 * GX_PTX_MEM_DEFER keeps 8 a lane between two flushes of a loop). */
static const struct gx_mt_rec *mt_sample(const struct tooldata *td, size_t r)
{
	const struct gx_mt_rec *m = td->recs[r].data;
	return td->recs[r].len >= sizeof(*m) && m->op != GDEV_MEM_LOST ? m : NULL;
}

int fmt_memtrace(const struct tooldata *td, int json, FILE *tf)
{
	unsigned long long ops[5] = { 0 }, sizes[5] = { 0 }, n = 0, lanes = 0, lost = 0;
	uint64_t lo = UINT64_MAX, hi = 0, base = UINT64_MAX;
	for (size_t r = 0; r < td->nr_recs; r++) {
		const struct gx_mt_rec *m = td->recs[r].data;
		if (td->recs[r].len < sizeof(*m))
			continue;
		if (m->op == GDEV_MEM_LOST) {
			lost += m->size;
			continue;
		}
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
		printf("{\"tool\":\"memtrace\",\"samples\":%llu,\"drops\":%llu,\"lost\":%llu,\"ops\":{\"load\":%llu,"
		       "\"store\":%llu,\"atomic\":%llu,\"reduce\":%llu},\"addr_min\":%llu,\"addr_max\":%llu,\"records\":[",
		       n, (unsigned long long)td->drops, lost, ops[1], ops[2], ops[3], ops[4],
		       (unsigned long long)(n ? lo : 0), (unsigned long long)(n ? hi : 0));
		size_t c = 0;
		for (size_t r = 0; r < td->nr_recs && c < TRACE_MAX_EVENTS; r++) {
			const struct gx_mt_rec *m = mt_sample(td, r);
			if (!m)
				continue;
			printf("%s{\"kernel\":", c++ ? "," : "");
			gx_json_str(stdout, td_kname(td, m->kernel_id, nb, sizeof(nb)));
			if (multi)
				printf(",\"dev\":%d", td_dev(td, td->recs[r].pid, td->recs[r].ctx));
			printf(",\"addr\":%llu,\"size\":%u,\"op\":\"%s\",\"sm\":%u,\"block\":%u,\"lanes\":%u,\"ts\":%llu}",
			       (unsigned long long)m->addr, m->size, op_name(m->op), m->smid, m->ctaid_x, m->nr_active,
			       (unsigned long long)m->ts);
		}
		printf("]");
		td_launches_json(td);
		printf("}\n");
	} else {
		printf("memtrace: %llu sampled warp accesses, %llu dropped", n, (unsigned long long)td->drops);
		if (lost)
			printf(", %llu taken in loops but not kept (more than a lane keeps between two flushes)", lost);
		printf("\n\n");
		unsigned long long mx = 0;
		for (int i = 1; i < 5; i++)
			mx = ops[i] > mx ? ops[i] : mx;
		printf("%-8s %10s\n", "OP", "SAMPLES");
		for (int i = 1; i < 5; i++) {
			printf("%-8s %10llu ", op_name((unsigned)i), ops[i]);
			td_bar(ops[i], mx, 40);
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
				for (size_t r = 0; r < td->nr_recs; r++) {
					const struct gx_mt_rec *m = mt_sample(td, r);
					c += m && m->kernel_id == td->knames[k].id;
				}
				if (c)
					printf("%-32.32s %10llu\n", td->knames[k].name, c);
			}
			if (multi) {
				printf("\n%3s %10s\n", "GPU", "SAMPLES");
				for (int d = 0; d < TD_MAX_DEVS; d++) {
					unsigned long long c = 0;
					for (size_t r = 0; r < td->nr_recs; r++)
						c += mt_sample(td, r) && td_dev(td, td->recs[r].pid, td->recs[r].ctx) == d;
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
			const struct gx_mt_rec *m = mt_sample(td, r);
			if (!m)
				continue;
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
