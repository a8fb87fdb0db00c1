/* mkmulti.c — synthetic tool data of a run on three GPUs, for
 * tests/tools/test_tools_multi.sh: what the shim would leave behind.
 *   process 100: context 0 on GPU 0 (sm_90, 4 SMs), context 1 on GPU 1
 *                (sm_80, 2 SMs) — one process driving two GPUs;
 *   process 200: context 0 on GPU 2 (sm_90, 4 SMs) — one process per GPU.
 * Each context launches kernel "k" once: 2 blocks on GPU 0, 3 on GPU 1, 4 on
 * GPU 2 (launch ids 11, 21, 31), records for every block (kernelretsnoop),
 * one start per launch 1000/2000/3000 ns after the host's launch
 * (launchlate), two samples (memtrace), and threadhist per-warp-slot maps
 * whose totals per GPU are 10, 20 and 30 blocks, with the context-1 map
 * named "<map>@1" as the shim names it. usage: mkmulti DIR TOOL */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuext/gx_devrt.h"
#include "devbpf/gx_bpf.h"
#include "gpuext/gx_toollog.h"
#include "tools/tools_common.h"
#include "common/gx_util.h"
#include "ptx-rewrite/gx_ptx.h"

static struct gx_buf out;

static void put(void *rec, size_t len)
{
	static const char zero[8];
	struct gx_tev *h = rec;
	h->len = (gdev_u32)GX_ROUND8(len);
	gx_buf_append(&out, rec, len);
	gx_buf_append(&out, zero, h->len - len);
}

static void ring(unsigned ctx, const void *payload, size_t n)
{
	char b[256];
	struct gx_tev_rec *r = (struct gx_tev_rec *)b;
	memset(b, 0, sizeof(b));
	r->h.type = GX_TEV_REC;
	r->ctx = ctx;
	memcpy(r + 1, payload, n);
	put(r, sizeof(*r) + n);
}

struct cx {
	unsigned pid, ctx, dev, sm, nsms, blocks, th_blocks;
	unsigned long long lid;
};
static const struct cx cxs[] = {
	{ 100, 0, 0, 90, 4, 2, 10, 11 },
	{ 100, 1, 1, 80, 2, 3, 20, 21 },
	{ 200, 0, 2, 90, 4, 4, 30, 31 },
};

static int write_file(const char *dir, unsigned pid, const char *tool)
{
	char p[600];
	snprintf(p, sizeof(p), "%s/%u-%s.events", dir, pid, tool);
	FILE *f = fopen(p, "wb");
	if (!f || fwrite(out.data, 1, out.len, f) != out.len) {
		perror(p);
		return 1;
	}
	fclose(f);
	out.len = 0;
	return 0;
}

static int th_map(const struct cx *c, const char *tool)
{
	char name[96];
	if (c->ctx)
		snprintf(name, sizeof(name), "%s.th_counts@%u", tool, c->ctx);
	else
		snprintf(name, sizeof(name), "%s.th_counts", tool);
	struct gx_map_spec s = { .name = name, .type = GX_MAP_PERWARP_ARRAY, .key_size = 4,
				 .value_size = sizeof(struct gx_th_val), .max_entries = 1,
				 .nr_shards = c->nsms * GX_WARP_SLOTS_PER_SM };
	struct gx_map *m;
	if (gx_map__create(&s, GX_MAP_F_SHM | GX_MAP_F_KEEP, &m))
		return 1;
	/* warp slot 0 of each SM; the blocks spread so the sum is th_blocks */
	for (unsigned sm = 0, left = c->th_blocks; sm < c->nsms; sm++) {
		struct gx_th_val *v = gx_map__shard_elem(m, sm * GX_WARP_SLOTS_PER_SM, 0);
		unsigned b = sm + 1 == c->nsms ? left : c->th_blocks / c->nsms;
		v->blocks = b, v->warps = 4ull * b, v->threads = 128ull * b;
		left -= b;
	}
	m->hdr->dev = c->dev + 1; /* as the shim marks each context's copy */
	m->hdr->ctx = c->ctx;
	char from[600], to[600];
	snprintf(from, sizeof(from), "%s", m->path);
	const char *slash = strrchr(from, '/');
	snprintf(to, sizeof(to), "%.*s/%u-%s", (int)(slash - from), from, c->pid, name);
	m->keep = 1;
	gx_map__free(m);
	return rename(from, to) ? (perror(to), 1) : 0;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: mkmulti DIR TOOL\n");
		return 2;
	}
	const char *dir = argv[1], *tool = argv[2];
	setenv("GPUEXT_SHM_DIR", dir, 1);
	gx_buf_init(&out);
	unsigned long long kid = gx_kernel_id("k");
	for (unsigned pid = 100; pid <= 200; pid += 100) {
		struct gx_tev_proc pr = { .h.type = GX_TEV_PROC, .pid = pid, .start_ns = 1000000 };
		snprintf(pr.tag, sizeof(pr.tag), "%s", tool);
		put(&pr, sizeof(pr));
		char kn[sizeof(struct gx_tev_kname) + 8] = { 0 };
		struct gx_tev_kname *k = (struct gx_tev_kname *)kn;
		k->h.type = GX_TEV_KNAME;
		k->kernel_id = kid;
		strcpy(k->name, "k");
		put(k, sizeof(*k) + 2);
		unsigned seq = 0;
		for (size_t i = 0; i < sizeof(cxs) / sizeof(cxs[0]); i++) {
			const struct cx *c = &cxs[i];
			if (c->pid != pid)
				continue;
			struct gx_tev_ctx ev = { .h.type = GX_TEV_CTX, .ctx = c->ctx, .dev = c->dev, .sm = c->sm,
						 .nr_sms = c->nsms, .calibrated = 1, .gt_minus_host = 5000,
						 .calib_err_ns = 100 };
			put(&ev, sizeof(ev));
			unsigned long long host = 10000ull * (i + 1);
			struct gx_tev_launch l = { .h.type = GX_TEV_LAUNCH, .host_ns = host, .kernel_id = kid, .flags = GX_TEV_L_INSTRUMENTED,
						   .ctx = c->ctx, .seq = ++seq, .grid = { c->blocks, 1, 1 },
						   .block = { 128, 1, 1 } };
			put(&l, sizeof(l));
			if (!strcmp(tool, "kernelretsnoop")) {
				for (unsigned b = 0; b < c->blocks; b++) {
					struct gx_krs_rec r = { .kernel_id = kid, .ts = host + 5000 + 1000 * (b + 1),
								.ctaid = { b, 0, 0 }, .smid = b % c->nsms,
								.nctaid = { c->blocks, 1, 1 }, .ntid = 128,
								.launch_id = c->lid };
					ring(c->ctx, &r, sizeof(r));
				}
			} else if (!strcmp(tool, "launchlate")) {
				struct gx_ll_rec r = { .kernel_id = kid, .ts = host + 5000 + 1000 * (c->dev + 1),
						       .smid = 1, .nblocks = c->blocks, .launch_id = c->lid };
				ring(c->ctx, &r, sizeof(r));
			} else if (!strcmp(tool, "memtrace")) {
				for (unsigned j = 0; j < 2; j++) {
					struct gx_mt_rec r = { .kernel_id = kid, .addr = 0x1000u * (c->dev + 1) + j,
							       .ts = host + j, .size = 4, .op = 1 + j, .smid = j,
							       .nr_active = 32 };
					ring(c->ctx, &r, sizeof(r));
				}
				/* a loop's samples one lane could not keep
				 * (GX_PTX_MEM_DEFER): counted, not an access */
				struct gx_mt_rec lost = { .kernel_id = kid, .ts = host + 2, .size = 3, .op = GDEV_MEM_LOST,
							  .nr_active = 1 };
				ring(c->ctx, &lost, sizeof(lost));
			} else if (!strcmp(tool, "threadhist")) {
				if (th_map(c, tool))
					return 1;
				/* one more launch that ran the original (--launch-sample):
				 * counted by nothing, said by the report */
				l.flags = 0;
				l.seq = ++seq;
				l.host_ns = host + 1000;
				put(&l, sizeof(l));
			}
		}
		if (write_file(dir, pid, tool))
			return 1;
	}
	gx_buf_free(&out);
	return 0;
}
