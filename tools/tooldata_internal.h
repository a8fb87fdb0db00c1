/* tooldata_internal.h — inside tools/: what a tool run left behind, loaded for the
 * reports (tooldata.c), the helpers the reports share (report.c) and the
 * reports themselves (NAME.c), registered in tools.c. */
#ifndef TOOLS_TOOLDATA_INTERNAL_H
#define TOOLS_TOOLDATA_INTERNAL_H

#include <stdint.h>
#include <stdio.h>

#include "gpuext/gx_toollog.h"
#include "tools/tools_common.h"

struct td_ctx {
	uint32_t pid, ctx, dev, sm, nr_sms, calibrated;
	long long gt_minus_host;
	uint64_t calib_err_ns;
};
struct td_launch {
	uint32_t pid, ctx, seq;
	uint64_t host_ns, kernel_id;
	uint32_t grid[3], block[3];
	uint32_t flags;  /* GX_TEV_L_*: instrumented, timed */
	uint64_t stream;
};
/* When a launch ran on the GPU (timing events; GX_TEV_LTIME). */
struct td_ltime {
	uint32_t pid, ctx, seq;
	uint64_t start_ns, gpu_ns;
};
struct td_rec {
	uint32_t pid, ctx, map, len;
	const void *data; /* payload, len bytes (inside the loaded file buffer) */
};
struct td_kname {
	uint64_t id;
	const char *name;
};

/* Kernel nodes run by graph launches (GX_TEV_GLAUNCH), summed per kernel
 * and hooks: counted, not timed. */
struct td_gkernel {
	uint64_t kernel_id;
	uint32_t flags; /* GX_TEV_L_INSTRUMENTED */
	uint64_t nodes;
};

/* A graph exec's kernel list (GX_TEV_GLAUNCH.exec, per process): its
 * launches, the timed ones (GX_TEV_GLTIME) and their GPU time, and one of
 * its launch records (its kernels and nodes; inside a loaded buffer). */
struct td_gexec {
	uint32_t pid;
	uint64_t exec, launches, timed, gpu_ns;
	const struct gx_tev_glaunch *rec;
	size_t nr; /* entries of rec usable */
};

struct tooldata {
	const char *tool;
	struct td_ctx *ctxs;
	size_t nr_ctxs;
	struct td_launch *launches; /* in file order (per process: launch order) */
	size_t nr_launches;
	struct td_rec *recs;
	size_t nr_recs;
	struct td_kname *knames;
	size_t nr_knames;
	uint64_t drops;
	unsigned nr_procs;
	char **bufs; /* loaded files */
	size_t nr_bufs;
	const char *dir;
	struct td_ltime *ltimes;
	size_t nr_ltimes;
	int launch_flags; /* launch records of the second revision (flags, stream) */
	size_t cap_c, cap_l, cap_r, cap_k, cap_t; /* allocated lengths of ctxs, launches, recs, knames, ltimes */
	struct td_gkernel *gkernels;
	size_t nr_gkernels, cap_g;
	uint64_t graph_launches; /* cuGraphLaunch calls */
	struct td_gexec *gexecs;
	size_t nr_gexecs, cap_x;
	uint64_t graph_timed; /* graph launches timed (GX_TEV_GLTIME) */
};

int td_load(struct tooldata *td, const char *dir, const char *tool);
void td_free(struct tooldata *td);
const char *td_kname(const struct tooldata *td, uint64_t id, char *buf, size_t n);
const struct td_ctx *td_ctx(const struct tooldata *td, uint32_t pid, uint32_t ctx);
/* Paths of the map files "<pid>-<tool>.<map>[@N]" in the folder; malloc'd
 * NULL-terminated array (free with td_paths_free). */
char **td_map_paths(const struct tooldata *td, const char *map);
void td_paths_free(char **p);
/* GPUs in reports. Device columns/fields appear only when the
 * data has more than one device; traces use pid = device + 1. */
#define TD_MAX_DEVS 64
#define TD_MAX_SMS 4096
int td_dev(const struct tooldata *td, uint32_t pid, uint32_t ctx); /* 0 if unknown */
unsigned td_nr_devs(const struct tooldata *td);                    /* >= 1 */
/* (pid, ctx) of a map file "<pid>-<tool>.<map>[@ctx]"; 0 or -1. */
int td_map_file_ctx(const char *path, uint32_t *pid, uint32_t *ctx);
/* Trace tracks used, named at the end (td_tracks_names frees them). */
struct td_tracks;
struct td_tracks *td_tracks_new(void);
void td_tracks_use(struct td_tracks *t, int dev, unsigned sm);
void td_tracks_names(FILE *tf, struct td_tracks *t, const struct tooldata *td, const char *extra_tid_name,
		     unsigned extra_tid);

/* report.c: shared by the reports. */
#define TRACE_MAX_EVENTS 200000
/* A terminal bar of v/max * width '#'. */
void td_bar(unsigned long long v, unsigned long long max, int width);
/* A record's or a launch's key for pairing them: process, context,
 * kernel, launch id (0 for a launch), index (record or launch); the order
 * td_cmp_lid_key sorts by, in that sequence. */
struct td_lid_key {
	uint32_t pid, ctx;
	uint64_t kid, lid;
	size_t idx;
};
int td_cmp_lid_key(const void *a, const void *b);
/* Device records carry ctx->launch_id (%gridid); per record, the index of
 * its launch in td->launches, or SIZE_MAX (malloc'd; NULL if out of memory).
 * kid_off/lid_off: offsets of kernel_id and launch_id in the payload. */
size_t *td_match_launch_ids(const struct tooldata *td, size_t min_len, size_t kid_off, size_t lid_off);

/* Does this launch carry the tool's hooks? (Logs of the first revision do
 * not say: every launch counts as hooked there.) */
static inline int td_hooked(const struct tooldata *td, const struct td_launch *l)
{
	return !td->launch_flags || (l->flags & 1u /* GX_TEV_L_INSTRUMENTED */);
}

/* launches.c: the launches seen host-side (every report): text after the
 * tool's own; JSON: a `,"host_launches":{...}` member, printed by each
 * report before its closing brace; trace: one slice per timed launch. */
void td_launches_text(const struct tooldata *td);
void td_launches_json(const struct tooldata *td);
void td_launches_trace(const struct tooldata *td, FILE *tf);

/* NAME.c: one report per tool. json: 0 text, 1 JSON. trace: a Chrome
 * trace-event file to write, or NULL. Returns 0 or a CLI exit status. */
int fmt_kernelretsnoop(const struct tooldata *td, int json, FILE *trace);
int fmt_threadhist(const struct tooldata *td, int json, FILE *trace);
int fmt_launchlate(const struct tooldata *td, int json, FILE *trace);
int fmt_memtrace(const struct tooldata *td, int json, FILE *trace);

#endif
