/* devrt.c — the per-context runtime of the attached device policies (one
 * to GX_PMERGE_MAX; each has its own maps, rings, gx_devrt block and tool
 * log; an instrumented module holds a copy of each block in its constant
 * bank, `__gx_devrt` for the first policy, `__gx_devrt__p<k>` for the k-th —
 * gx_pmerge.h).
 *
 * Per context (keyed by CUcontext, created before the first rewrite in it or
 * at the first launch that needs it): host maps in the shm folder (one file
 * per map, "<pid>-<object>.<map>", kept after exit for the formatters), their
 * device copies and the `struct gx_devrt` block (devbpf/maps_dev.c over the
 * real driver), rings in device memory too (copied to their pinned host
 * mirrors by the drains), a private non-blocking stream for flushes and
 * ring drains, and a
 * %globaltimer ↔ CLOCK_REALTIME calibration (a ping-pong kernel).
 *
 * Launch events: before a launch, the function's module gets the blocks
 * written into its `__gx_devrt` variables (once per module and context;
 * cuModuleGetGlobal + a copy), and the launch is logged (host time, kernel, grid) for the
 * tools. One background thread drains rings (records → the tool log,
 * printk → stderr, prefetch requests counted) every GPUEXT_FLUSH_MS (20) and
 * flushes device maps into the host copies every 10th tick, on its own
 * stream; a last drain and flush happen at context destroy and exit. Nothing
 * here waits on the application's streams except the exit path, which
 * synchronizes each context once so the final counts are complete. */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <uthash.h>

#include "attach/attach_internal.h"
#include "common/gx_trust.h"
#include "common/gx_capture.h"
#include "common/gx_tls.h"
#include "devbpf/gx_bpf.h"
#include "gpuext/gx_stats.h"
#include "gpuext/gx_toollog.h"

#define MAX_CTX 64
#define MAX_DONE 4096
#define RT_RING_BYTES (1u << 20)

/* One attached policy: its description, its tool log. */
struct polst {
	const struct gx_policy_desc *pd;
	char tag[GX_POL_NAME_MAX];
	struct gx_buf evlog; /* pending tool-log bytes */
	int ev_fd;
	bool ev_lost;  /* a write to the tool log failed (warned once) */
};
static struct polst pols[GX_PMERGE_MAX];
static unsigned nr_pols;

struct ctxst {
	CUcontext ctx;
	unsigned idx;
	int failed;
	CUdevice dev;
	unsigned nr_sms;
	struct gx_map **maps[GX_PMERGE_MAX];    /* per policy, in its map order */
	struct gx_devmaps *dm[GX_PMERGE_MAX];   /* per policy: maps and its gx_devrt block */
	struct gx_ring *rt_ring[GX_PMERGE_MAX]; /* per policy: printk, prefetch */
	CUstream stream;
	unsigned cur; /* the policy being set up, for the warning */
	char why[160]; /* the first driver call that failed during setup */
	struct gx_lt lt; /* launch timing (launches.c) */
	/* record tables (records_due): launches when last looked, drains since
	 * the last launch, whether slots wait for a second look */
	uint64_t rec_launches;
	unsigned rec_quiet;
	bool rec_pending;
};

static pthread_mutex_t rt_lock = PTHREAD_MUTEX_INITIALIZER;
/* Held by whoever drains rings or writes tool log files (the drainer for a
 * whole tick, context destruction, exit), always taken before rt_lock. A
 * tick copies and parses up to a full ring per map (16 MiB of records) —
 * under rt_lock that stalled every launch of the application (launches log
 * themselves under it) for milliseconds; now the drainer holds rt_lock only
 * to snapshot the contexts and take the pending launch log. A context is
 * torn down only with drain_lock held, so the drainer's snapshot stays
 * valid. */
static pthread_mutex_t drain_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ctxst ctxs[MAX_CTX];
static unsigned nr_ctx;
/* What launches have taught us, so that a launch costs hash lookups, not
 * driver queries: modules whose __gx_devrt is written (or that have none),
 * functions seen per context, kernel names already in the tool logs. All
 * under rt_lock; module and function tables are forgotten when a module is
 * unloaded or a context destroyed (their handles may come back). */
struct mod_seen {
	CUmodule mod;
	bool instr; /* it carries the hooks (defines __gx_devrt) */
	UT_hash_handle hh;
};
struct fn_key { /* hashed as bytes: no padding left unset */
	CUfunction f;
	unsigned ctx;
	unsigned zero; /* 0: designated initialisers leave it so */
};
struct kname_seen;
struct fn_seen {
	struct fn_key key;
	bool instr;
	struct kname_seen *kname; /* its kernel's record, once launched */
	UT_hash_handle hh;
};
struct kname_seen {
	uint64_t kid;
	uint64_t launches; /* so far, for the timing sample */
	uint64_t graph_launches; /* of those, as graph kernel nodes */
	char *name; /* for the stats file (NULL: unnamed) */
	uint64_t lt_last_ns; /* when its last sampled launch was */
	UT_hash_handle hh;
};
static struct mod_seen *mods_seen;
static struct fn_seen *fns_seen;
static struct kname_seen *knames_seen;
/* The last functions launched (under rt_lock): most launches repeat a few
 * kernels, and hashing the key cost more than the rest of the handler
 * (bench/launch_cost.sh). Emptied with the entries (seen_forget). */
#define FN_RECENT 4
static struct fn_seen *fn_recent[FN_RECENT];
static unsigned fn_recent_next;
static unsigned launch_seq;
static uint64_t nr_launches, nr_instr; /* for the summary line at exit */
static uint64_t nr_graph_launches, nr_graph_kernels; /* cuGraphLaunch calls, kernel nodes they ran */
/* what torn-down contexts had measured (the stats file's totals never go back) */
static uint64_t gone_gpu_ns, gone_gpu_ns_instr, gone_drops, gone_graph_timed, gone_graph_gpu_ns;
/* The launch of this thread whose LAUNCH_DONE comes next: its timing pair. */
/* One TLS block, initial-exec (gx_tls.h). */
static __thread struct open_launch {
	struct ctxst *st;
	int slot;
	unsigned seq;
	bool instr;
	unsigned gen; /* rt_gen of the runtime that opened it */
	unsigned long long graph; /* a graph launch's exec list (gen); 0: a kernel launch */
} open_l GX_TLS_IE = { .slot = -1 };
static pthread_t drainer;
static int drainer_on, stopping;
/* A live attach (gpuext attach) starts and stops the runtime many times in
 * one process: each start is a generation; a thread's open launch of an
 * older one is forgotten, not closed. */
static unsigned rt_gen = 1;
static int sub_id = -1;
static bool atexit_on;
static unsigned long long nr_prefetch; /* atomic: the drainer counts without rt_lock */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- tool logs (one per policy) ---- */
static void ev_put(struct polst *p, const void *rec, size_t len)
{
	static const char zero[8];
	struct gx_tev *h = (struct gx_tev *)rec;
	size_t padded = GX_ROUND8(len);
	h->len = (gdev_u32)padded;
	gx_buf_append(&p->evlog, rec, len);
	if (padded > len) /* most records are whole words already */
		gx_buf_append(&p->evlog, zero, padded - len);
}
static void ev_put_all(const void *rec, size_t len)
{
	for (unsigned i = 0; i < nr_pols; i++)
		ev_put(&pols[i], rec, len);
}

/* Append b to p's tool log file and empty it. The file is written only by
 * holders of drain_lock. A write that fails (a full /dev/shm, an I/O error)
 * loses those records: said once per policy, with the reason, never
 * silently. */
static void ev_write_buf(struct polst *p, struct gx_buf *b)
{
	size_t off = 0;
	while (p->ev_fd >= 0 && off < b->len) {
		ssize_t w = write(p->ev_fd, b->data + off, b->len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (!p->ev_lost)
				pr_warn("policy %s: writing its tool log failed (%s): %zu bytes of "
					"records lost; the summary will miss them",
					p->tag, w < 0 ? strerror(errno) : "no progress", b->len - off);
			p->ev_lost = true;
			break;
		}
		off += (size_t)w;
	}
	b->len = 0;
}
static void ev_write(void)
{
	for (unsigned i = 0; i < nr_pols; i++)
		ev_write_buf(&pols[i], &pols[i].evlog);
}

/* ---- the device ops over the real driver (maps_dev.c calls these) ---- */
static int cu_rc(CUresult rc)
{
	return rc == CUDA_SUCCESS ? 0 : -EIO;
}
/* Remember the first failing driver call of a context's setup, for the one
 * warning that says why the policy is not attached there. */
static int cu_fail(struct ctxst *st, const char *call, size_t n, CUresult rc)
{
	const char *name = NULL;
	if (CU(cuGetErrorName)(rc, &name) != CUDA_SUCCESS || !name)
		name = "unknown error";
	if (st && !st->why[0])
		snprintf(st->why, sizeof(st->why), "%s of %zu bytes: %s (%d)", call, n, name, (int)rc);
	return -EIO;
}
static int op_alloc(void *c, size_t n, uint64_t *d)
{
	CUdeviceptr p = 0;
	CUresult rc = CU(cuMemAlloc_v2)(&p, n ? n : 8);
	*d = p;
	return rc == CUDA_SUCCESS ? 0 : cu_fail(c, "cuMemAlloc", n, rc);
}
static void op_free(void *c, uint64_t d)
{
	(void)c;
	CU(cuMemFree_v2)((CUdeviceptr)d);
}
/* A copy done before returning. Through the context's own non-blocking
 * stream where there is one: a synchronous cuMemcpyHtoD runs on the legacy
 * stream, and while the application captures a blocking stream (its first
 * launch inside cudaStreamBeginCapture sets the context up) that implicit
 * dependency is refused and invalidates the capture. */
static int op_htod(void *c, uint64_t d, const void *s, size_t n)
{
	struct ctxst *st = c;
	CUresult rc;
	if (st && st->stream) {
		rc = CU(cuMemcpyHtoDAsync_v2)((CUdeviceptr)d, s, n, st->stream);
		if (rc == CUDA_SUCCESS)
			rc = CU(cuStreamSynchronize)(st->stream);
	} else {
		rc = CU(cuMemcpyHtoD_v2)((CUdeviceptr)d, s, n);
	}
	return rc == CUDA_SUCCESS ? 0 : cu_fail(c, "cuMemcpyHtoD", n, rc);
}

static int op_dtoh(void *c, void *dst, uint64_t d, size_t n)
{
	struct ctxst *st = c;
	if (CU(cuMemcpyDtoHAsync_v2)(dst, (CUdeviceptr)d, n, st->stream) != CUDA_SUCCESS)
		return -EIO;
	return cu_rc(CU(cuStreamSynchronize)(st->stream));
}
static int op_host_map(void *c, void *h, size_t n, uint64_t *d)
{
	CUdeviceptr p = 0;
	CUresult rc = CU(cuMemHostRegister_v2)(h, n, CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_PORTABLE);
	if (rc != CUDA_SUCCESS)
		return cu_fail(c, "cuMemHostRegister", n, rc);
	if ((rc = CU(cuMemHostGetDevicePointer_v2)(&p, h, 0)) != CUDA_SUCCESS) {
		CU(cuMemHostUnregister)(h);
		return cu_fail(c, "cuMemHostGetDevicePointer", n, rc);
	}
	*d = p;
	return 0;
}
static void op_host_unmap(void *c, void *h)
{
	(void)c;
	CU(cuMemHostUnregister)(h);
}
/* Device rings' consumer ops: the private non-blocking stream only, never
 * the legacy default stream (that would serialise with the application). */
static int op_dzero_async(void *c, uint64_t d, size_t n)
{
	struct ctxst *st = c;
	return cu_rc(CU(cuMemsetD8Async)((CUdeviceptr)d, 0, n, st->stream));
}
static int op_htod_async(void *c, uint64_t d, const void *s, size_t n)
{
	struct ctxst *st = c;
	return cu_rc(CU(cuMemcpyHtoDAsync_v2)((CUdeviceptr)d, s, n, st->stream));
}
static int op_sync(void *c)
{
	struct ctxst *st = c;
	return cu_rc(CU(cuStreamSynchronize)(st->stream));
}

/* ---- %globaltimer calibration ---- */
static const char calib_ptx[] =
	".version 7.0\n.target sm_70\n.address_size 64\n"
	".visible .entry gx_calib(.param .u64 buf)\n{\n"
	"\t.reg .pred %p<4>;\n\t.reg .b64 %rd<12>;\n"
	"\tld.param.u64 %rd1, [buf];\n"
	"\tmov.u64 %rd2, %globaltimer;\n" /* start, for the timeout */
	"\tmov.u64 %rd3, 1;\n"
	"$round:\n"
	"\tld.volatile.global.u64 %rd4, [%rd1];\n"
	"\tsetp.eq.u64 %p1, %rd4, %rd3;\n"
	"\t@%p1 bra $hit;\n"
	"\tmov.u64 %rd5, %globaltimer;\n"
	"\tsub.u64 %rd5, %rd5, %rd2;\n"
	"\tsetp.gt.u64 %p2, %rd5, 200000000;\n" /* 200 ms: give up */
	"\t@%p2 bra $done;\n"
	"\tbra $round;\n"
	"$hit:\n"
	"\tmov.u64 %rd6, %globaltimer;\n"
	"\tst.volatile.global.u64 [%rd1+8], %rd6;\n"
	"\tmembar.sys;\n"
	"\tst.volatile.global.u64 [%rd1+16], %rd3;\n"
	"\tadd.u64 %rd3, %rd3, 1;\n"
	"\tsetp.le.u64 %p3, %rd3, 8;\n"
	"\t@%p3 bra $round;\n"
	"$done:\n\tret;\n}\n";

static void calibrate(struct ctxst *st, struct gx_tev_ctx *ev)
{
	CUmodule mod = NULL;
	CUfunction fn;
	volatile uint64_t *buf = NULL;
	CUdeviceptr dbuf;
	if (CU(cuModuleLoadData)(&mod, calib_ptx) != CUDA_SUCCESS)
		return;
	if (CU(cuModuleGetFunction)(&fn, mod, "gx_calib") != CUDA_SUCCESS ||
	    CU(cuMemHostAlloc)((void **)&buf, 64, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE) !=
		    CUDA_SUCCESS || !buf) {
		CU(cuModuleUnload)(mod);
		return;
	}
	memset((void *)buf, 0, 64);
	if (CU(cuMemHostGetDevicePointer_v2)(&dbuf, (void *)buf, 0) == CUDA_SUCCESS) {
		void *args[] = { &dbuf };
		if (CU(cuLaunchKernel)(fn, 1, 1, 1, 1, 1, 1, 0, st->stream, args, NULL) == CUDA_SUCCESS) {
			uint64_t best = UINT64_MAX;
			for (uint64_t i = 1; i <= 8; i++) {
				uint64_t t0 = now_ns(), t1;
				__atomic_store_n(&buf[0], i, __ATOMIC_SEQ_CST);
				while (__atomic_load_n(&buf[2], __ATOMIC_SEQ_CST) != i) {
					if (now_ns() - t0 > 100000000ull)
						goto out;
				}
				t1 = now_ns();
				uint64_t gt = buf[1];
				if (t1 - t0 < best) {
					best = t1 - t0;
					ev->gt_minus_host = (long long)(gt - (t0 + (t1 - t0) / 2));
					ev->calib_err_ns = (t1 - t0 + 1) / 2;
					ev->calibrated = 1;
				}
			}
		out:
			CU(cuStreamSynchronize)(st->stream);
		}
	}
	CU(cuMemFreeHost)((void *)buf);
	CU(cuModuleUnload)(mod);
}

/* ---- per-context state ---- */
static void ctx_teardown(struct ctxst *st, bool free_maps)
{
	gone_gpu_ns += st->lt.gpu_ns;
	gone_gpu_ns_instr += st->lt.gpu_ns_instr;
	gone_graph_timed += st->lt.graph_timed;
	gone_graph_gpu_ns += st->lt.graph_gpu_ns;
	for (unsigned p = 0; free_maps && p < nr_pols; p++)
		for (size_t i = 0; st->maps[p] && i < pols[p].pd->nr_maps; i++)
			if (st->maps[p][i] && st->maps[p][i]->l.type == GX_MAP_RINGBUF)
				gone_drops += __atomic_load_n(&gx_map__ring(st->maps[p][i])->drops, __ATOMIC_RELAXED);
	for (unsigned p = 0; p < nr_pols; p++) {
		if (st->dm[p])
			gx_devmaps__free(st->dm[p]);
		st->dm[p] = NULL;
		for (size_t i = 0; free_maps && st->maps[p] && i < pols[p].pd->nr_maps; i++)
			if (st->maps[p][i]) {
				st->maps[p][i]->keep = 1;
				gx_map__free(st->maps[p][i]);
			}
		if (free_maps) {
			free(st->maps[p]);
			st->maps[p] = NULL;
		}
		free(st->rt_ring[p]);
		st->rt_ring[p] = NULL;
	}
	if (open_l.st == st && open_l.slot >= 0)
		open_l.slot = -1;
	gx_lt_free(&st->lt);
	if (st->stream)
		CU(cuStreamDestroy_v2)(st->stream);
	st->stream = NULL;
}

static void cfg_fill(struct gx_map *m)
{
	const char *c = getenv("GPUEXT_CFG");
	if (!c || m->l.type != GX_MAP_ARRAY || m->l.value_size != 8)
		return;
	for (unsigned k = 0; *c && k < m->l.max_entries; k++) {
		char *end;
		unsigned long long v = strtoull(c, &end, 0);
		if (end != c)
			*(uint64_t *)gx_map__shard_elem(m, 0, k) = v;
		c = *end == ',' ? end + 1 : end;
		if (end == c && *c != ',' && *c)
			break;
	}
}

/* GX_RING_ROOMY=1 (issue 40 A/B): ring producers take roomy hints
 * (GX_DEVRT_F_RING_ROOMY, gx_devrt.h). */
static unsigned ring_roomy(void)
{
	const char *e = getenv("GX_RING_ROOMY");
	return e && e[0] == '1' ? GX_DEVRT_F_RING_ROOMY : 0;
}

/* One policy's maps, rings and gx_devrt block in this context. */
static int pol_setup(struct ctxst *st, unsigned p)
{
	const struct gx_policy_desc *pd = pols[p].pd;
	st->cur = p;
	st->maps[p] = calloc(pd->nr_maps ? pd->nr_maps : 1, sizeof(*st->maps[p]));
	if (!st->maps[p])
		return -ENOMEM;
	for (size_t i = 0; i < pd->nr_maps; i++) {
		const struct gx_pol_map *pm = &pd->maps[i];
		char name[GX_MAP_NAME_MAX];
		if (st->idx)
			snprintf(name, sizeof(name), "%.56s@%u", pm->name, st->idx % 1000);
		else
			snprintf(name, sizeof(name), "%s", pm->name);
		struct gx_map_spec s = { .name = name, .type = pm->type, .key_size = pm->key_size,
					 .value_size = pm->value_size, .max_entries = pm->max_entries };
		if (s.type == GX_MAP_PERSM_ARRAY)
			s.nr_shards = st->nr_sms;
		else if (s.type == GX_MAP_PERWARP_ARRAY)
			s.nr_shards = st->nr_sms * GX_WARP_SLOTS_PER_SM;
		/* Rings stay private: the device writes them through a
		 * cuMemHostRegister mapping, and Linux (>= 6.5, with NVIDIA's
		 * long-term pins) refuses to pin writable MAP_SHARED pages of a
		 * file outside tmpfs — a GPUEXT_SHM_DIR under /tmp on ext4 or
		 * overlayfs made every tool with a ring fail to attach on the
		 * H200. Their records reach the tool log through our drainer
		 * (the only consumer a ring may have) anyway. */
		unsigned rec = pm->gx_flags & GX_BPF_MAP_F_RECORDS ? GX_MAP_F_RECORDS : 0;
		int ret = s.type == GX_MAP_RINGBUF ? gx_map__create(&s, 0, &st->maps[p][i])
						   : gx_map__create(&s, GX_MAP_F_SHM | GX_MAP_F_KEEP | rec, &st->maps[p][i]);
		if (ret && s.type != GX_MAP_RINGBUF) {
			/* No shm folder: the policy still runs, tools just cannot see it. */
			pr_warn("policy %s: map %s: no shared-memory copy (%s); keeping it private", pols[p].tag,
				name, strerror(-ret));
			ret = gx_map__create(&s, rec, &st->maps[p][i]);
		}
		if (ret)
			return ret;
		/* Whose copy this is: `gpuext map dump --devices` groups by it. */
		st->maps[p][i]->hdr->dev = (uint32_t)st->dev + 1;
		st->maps[p][i]->hdr->ctx = st->idx;
		if (pm->init && pm->init_len && s.type == GX_MAP_ARRAY)
			memcpy(gx_map__shard_elem(st->maps[p][i], 0, 0), pm->init, pm->init_len);
		/* .rodata* was verified with these bytes: sealed, never "cfg" */
		if (pm->gx_flags & GX_BPF_MAP_F_RDONLY)
			ret = gx_map__seal(st->maps[p][i], pm->init, pm->init_len);
		else if (!strcmp(strrchr(pm->name, '.') ? strrchr(pm->name, '.') + 1 : pm->name, "cfg"))
			cfg_fill(st->maps[p][i]);
		if (ret)
			return ret;
	}
	if (posix_memalign((void **)&st->rt_ring[p], 4096, gx_ring_bytes(RT_RING_BYTES)))
		return -ENOMEM;
	memset(st->rt_ring[p], 0, gx_ring_bytes(RT_RING_BYTES));
	gx_ring__init(st->rt_ring[p], RT_RING_BYTES);
	struct gx_dev_ops ops = { .ctx = st, .alloc = op_alloc, .free = op_free, .htod = op_htod,
				  .dtoh = op_dtoh, .host_map = op_host_map, .host_unmap = op_host_unmap,
				  .dzero_async = op_dzero_async, .htod_async = op_htod_async, .sync = op_sync };
	return gx_devmaps__create(st->maps[p], pd->nr_maps, st->rt_ring[p], gx_ring_bytes(RT_RING_BYTES),
				  GX_DEVRT_F_PRINTK | GX_DEVRT_F_PREFETCH | ring_roomy(), &ops, &st->dm[p]);
}

static int ctx_setup(struct ctxst *st)
{
	int nsm = 0;
	if (CU(cuCtxGetDevice)(&st->dev) != CUDA_SUCCESS ||
	    CU(cuDeviceGetAttribute)(&nsm, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, st->dev) != CUDA_SUCCESS ||
	    nsm <= 0)
		return -ENODEV;
	st->nr_sms = (unsigned)nsm;
	CUresult rc = CU(cuStreamCreate)(&st->stream, CU_STREAM_NON_BLOCKING);
	if (rc != CUDA_SUCCESS)
		return cu_fail(st, "cuStreamCreate", 0, rc);
	if (gx_lt_init(&st->lt, st->stream))
		pr_info("policy %s: launches in context %u are not timed (timing events failed)", pols[0].tag,
			st->idx);
	for (unsigned p = 0; p < nr_pols; p++) {
		int ret = pol_setup(st, p);
		if (ret)
			return ret;
	}
	struct gx_tev_ctx ev = { .h.type = GX_TEV_CTX, .ctx = st->idx, .dev = (gdev_u32)st->dev,
				 .nr_sms = st->nr_sms };
	ev.sm = gx_attach_env->dev_sm(st->dev);
	calibrate(st, &ev);
	ev_put_all(&ev, sizeof(ev));
	return 0;
}

static void *drain_main(void *arg);

/* The state of the current context, created on first use; NULL if it failed
 * (logged once per context). Called with rt_lock held. */
static struct ctxst *ctx_get(CUcontext c)
{
	if (!c)
		return NULL;
	for (unsigned i = 0; i < nr_ctx; i++)
		if (ctxs[i].ctx == c)
			return ctxs[i].failed ? NULL : &ctxs[i];
	if (nr_ctx >= MAX_CTX)
		return NULL;
	struct ctxst *st = &ctxs[nr_ctx];
	memset(st, 0, sizeof(*st));
	st->ctx = c;
	st->idx = nr_ctx++;
	/* setup's allocations and copies relaxed (common/gx_capture.h; bench/results/2026-12-04-gpu-run54.md:
	 * a program whose first launch was inside a capture failed under any tool) */
	struct gx_capture_mode cm = gx_capture_relax(CU(cuThreadExchangeStreamCaptureMode));
	int ret = ctx_setup(st);
	if (ret) {
		pr_warn("policy %s: not attached in context %u: cannot set up its device maps: %s; running "
			"without it%s",
			pols[st->cur].tag, st->idx, st->why[0] ? st->why : strerror(-ret),
			nr_pols > 1 ? " (nor the other policies, in that context)" : "");
		ctx_teardown(st, true);
		/* Modules rewritten before the failure still call the policies:
		 * their blocks stay zero (never written), no maps, no ring — every
		 * helper finds nothing. */
		st->failed = 1;
		gx_capture_restore(CU(cuThreadExchangeStreamCaptureMode), cm);
		return NULL;
	}
	gx_capture_restore(CU(cuThreadExchangeStreamCaptureMode), cm);
	if (!drainer_on && !pthread_create(&drainer, NULL, drain_main, NULL))
		drainer_on = 1;
	return st;
}

int gx_devrt_ctx_ready(void)
{
	CUcontext c = NULL;
	/* No current context (a library loaded before any): its contexts get
	 * their maps at their first launch. */
	if (CU(cuCtxGetCurrent)(&c) != CUDA_SUCCESS || !c)
		return 0;
	pthread_mutex_lock(&rt_lock);
	struct ctxst *st = ctx_get(c);
	pthread_mutex_unlock(&rt_lock);
	return st ? 0 : -EIO;
}

/* ---- draining ---- */
/* Completed launch timings of a context into every tool log (rt_lock held). */
static void lt_harvest(struct ctxst *st, unsigned max)
{
	struct gx_buf b;
	gx_buf_init(&b);
	if (gx_lt_harvest(&st->lt, st->idx, &b, max))
		for (unsigned p = 0; p < nr_pols; p++)
			gx_buf_append(&pols[p].evlog, b.data, b.len);
	gx_buf_free(&b);
}

/* The policies' own pending logs, for drains under rt_lock (teardown, exit). */
static struct gx_buf *const *evlogs(void)
{
	static struct gx_buf *v[GX_PMERGE_MAX];
	for (unsigned p = 0; p < GX_PMERGE_MAX; p++)
		v[p] = &pols[p].evlog;
	return v;
}
struct drain_arg {
	struct ctxst *st;
	struct gx_buf *out; /* the policy's pending tool-log bytes */
	unsigned map;
};

static int rec_cb(void *ctx, unsigned type, const void *rec, size_t len)
{
	struct drain_arg *a = ctx;
	if (type != GX_REC_DATA || len < sizeof(struct gx_rec_hdr))
		return 0;
	size_t pl = len - sizeof(struct gx_rec_hdr);
	struct gx_tev_rec h = { .h.type = GX_TEV_REC, .ctx = a->st->idx, .map = a->map };
	static const char zero[8];
	size_t total = GX_ROUND8(sizeof(h) + pl);
	h.h.len = (gdev_u32)total;
	gx_buf_append(a->out, &h, sizeof(h));
	gx_buf_append(a->out, (const char *)rec + sizeof(struct gx_rec_hdr), pl);
	gx_buf_append(a->out, zero, total - sizeof(h) - pl);
	return 0;
}

static int rt_cb(void *ctx, unsigned type, const void *rec, size_t len)
{
	struct ctxst *st = ctx;
	if (type == GX_REC_PRINTK && len >= sizeof(struct gx_rec_printk)) {
		char line[512];
		gx_printk_format(rec, line, sizeof(line));
		size_t n = strlen(line);
		while (n && line[n - 1] == '\n')
			line[--n] = 0;
		fprintf(stderr, "gpuext: %s\n", line);
	} else if (type == GX_REC_PREFETCH) {
		__atomic_fetch_add(&nr_prefetch, 1, __ATOMIC_RELAXED);
		/* to the host memory policy (hostpolicy.c), if one runs */
		if (len >= sizeof(struct gx_rec_prefetch))
			gx_attach_env->device_prefetch(st->ctx, st->dev, ((const struct gx_rec_prefetch *)rec)->addr,
						      ((const struct gx_rec_prefetch *)rec)->len);
	}
	return 0;
}

/* Whether this drain looks at st's record tables (rt_lock held): while
 * launches come, while slots wait for their second look, for a second after
 * the last launch (a queued kernel may write later), and at the last drain.
 * A record table is copied whole: an idle process copies nothing. */
static bool records_due(struct ctxst *st)
{
	if (st->rec_launches != nr_launches) {
		st->rec_launches = nr_launches;
		st->rec_quiet = 0;
		return true;
	}
	return __atomic_load_n(&st->rec_pending, __ATOMIC_RELAXED) || st->rec_quiet++ < 50;
}

/* Records go to out[p] (policy p's pending log bytes). Caller holds
 * drain_lock. records: look at the record tables too (records_due);
 * final: the context was synchronized, their producers are done. */
static void drain_ctx(struct ctxst *st, bool flush, bool records, bool final, struct gx_buf *const *out)
{
	/* Rings live in device memory: draining them is driver work in st's
	 * context (copies on its private stream). */
	if (!st->dm[0] || CU(cuCtxSetCurrent)(st->ctx) != CUDA_SUCCESS)
		return;
	long pending = 0;
	for (unsigned p = 0; p < nr_pols; p++) {
		for (size_t i = 0; i < pols[p].pd->nr_maps; i++) {
			struct gx_map *m = st->maps[p][i];
			struct drain_arg a = { st, out[p], (unsigned)i };
			long left = 0;
			if (m && m->records && (records || final)) {
				gx_devmaps__drain_records(st->dm[p], (long)i, rec_cb, &a, final, &left);
				pending += left;
			}
			if (!m || m->l.type != GX_MAP_RINGBUF)
				continue;
			gx_devmaps__drain(st->dm[p], (long)i, rec_cb, &a);
		}
		gx_devmaps__drain(st->dm[p], GX_DEVMAPS_RT, rt_cb, st);
	}
	if (flush)
		for (unsigned p = 0; p < nr_pols; p++)
			gx_devmaps__flush(st->dm[p]);
	if (records || final)
		__atomic_store_n(&st->rec_pending, pending > 0, __ATOMIC_RELAXED);
}

static void drops_out(struct ctxst *st)
{
	for (unsigned p = 0; p < nr_pols; p++)
		for (size_t i = 0; st->maps[p] && i < pols[p].pd->nr_maps; i++) {
			struct gx_map *m = st->maps[p][i];
			if (!m || m->l.type != GX_MAP_RINGBUF)
				continue;
			uint64_t d = __atomic_load_n(&gx_map__ring(m)->drops, __ATOMIC_RELAXED);
			if (!d)
				continue;
			struct gx_tev_drops ev = { .h.type = GX_TEV_DROPS, .ctx = st->idx, .map = (gdev_u32)i,
						   .drops = d };
			ev_put(&pols[p], &ev, sizeof(ev));
			pr_warn("policy %s: ring %s dropped %llu records (full)", pols[p].tag, m->name,
				(unsigned long long)d);
		}
}

static void *drain_main(void *arg)
{
	(void)arg;
	/* this thread's queries (launch timings, ring reads) relaxed for its
	 * whole life (common/gx_capture.h; bench/results/2026-12-04-gpu-run54.md: a drainer query
	 * during a global-mode capture failed it) */
	gx_capture_relax(CU(cuThreadExchangeStreamCaptureMode));
	const char *e = getenv("GPUEXT_FLUSH_MS");
	long ms = e ? strtol(e, NULL, 10) : 20;
	if (ms < 1 || ms > 10000)
		ms = 20;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	struct gx_buf pend[GX_PMERGE_MAX];
	struct gx_buf *out[GX_PMERGE_MAX];
	for (unsigned p = 0; p < GX_PMERGE_MAX; p++) {
		gx_buf_init(&pend[p]);
		out[p] = &pend[p];
	}
	for (unsigned tick = 1;; tick++) {
		nanosleep(&ts, NULL);
		pthread_mutex_lock(&drain_lock);
		pthread_mutex_lock(&rt_lock);
		if (stopping) {
			pthread_mutex_unlock(&rt_lock);
			pthread_mutex_unlock(&drain_lock);
			break;
		}
		/* the contexts set up so far (setup runs under rt_lock) and the
		 * launch log so far (swapped out: launches keep logging) */
		struct ctxst *ready[MAX_CTX];
		bool rec_due[MAX_CTX];
		unsigned n = 0;
		for (unsigned i = 0; i < nr_ctx; i++)
			if (!ctxs[i].failed && ctxs[i].dm[0]) {
				rec_due[n] = records_due(&ctxs[i]);
				ready[n++] = &ctxs[i];
				/* bounded: launches wait for rt_lock meanwhile */
				lt_harvest(&ctxs[i], 4096);
			}
		for (unsigned p = 0; p < nr_pols; p++) {
			struct gx_buf t = pols[p].evlog;
			pols[p].evlog = pend[p];
			pend[p] = t;
		}
		pthread_mutex_unlock(&rt_lock);
		for (unsigned p = 0; p < nr_pols; p++)
			ev_write_buf(&pols[p], &pend[p]);
		for (unsigned k = 0; k < n; k++)
			drain_ctx(ready[k], tick % 10 == 0, rec_due[k], false, out);
		for (unsigned p = 0; p < nr_pols; p++)
			ev_write_buf(&pols[p], &pend[p]);
		pthread_mutex_unlock(&drain_lock);
		if (gx_attach_env->sz > offsetof(struct gx_attach_host, tick) && gx_attach_env->tick)
			gx_attach_env->tick();
	}
	for (unsigned p = 0; p < GX_PMERGE_MAX; p++)
		gx_buf_free(&pend[p]);
	return NULL;
}

/* ---- events ---- */
static void seen_forget(void)
{
	memset(fn_recent, 0, sizeof(fn_recent));
	struct mod_seen *m, *mt;
	HASH_ITER(hh, mods_seen, m, mt) {
		HASH_DEL(mods_seen, m);
		free(m);
	}
	struct fn_seen *f, *ft;
	HASH_ITER(hh, fns_seen, f, ft) {
		HASH_DEL(fns_seen, f);
		free(f);
	}
}

/* Each policy's block into the module's copy (`__gx_devrt`, then
 * `__gx_devrt__p<k>`), through the runtime's own stream in the relaxed
 * capture mode. Whether the module carries the hooks (defines __gx_devrt). */
static bool module_blocks(struct ctxst *st, CUmodule mod)
{
	struct gx_capture_mode cm = { 0 };
	bool instr = false, relaxed = false;
	for (unsigned p = 0; p < nr_pols; p++) {
		char sym[sizeof(GDEV_DEVRT_SYMBOL) + 16];
		gx_devrt_symbol(sym, sizeof(sym), p);
		CUdeviceptr g = 0;
		size_t sz = 0;
		if (CU(cuModuleGetGlobal_v2)(&g, &sz, mod, sym) != CUDA_SUCCESS) {
			if (!p)
				break; /* not a module we rewrote */
			continue;  /* no code of policy p linked into it */
		}
		if (!p)
			instr = true;
		if (sz != sizeof(struct gx_devrt)) {
			pr_warn("policy %s: a module's %s has %zu bytes, not %zu (rewritten by another gpuext "
				"version?): its hooks find no maps",
				pols[p].tag, sym, sz, sizeof(struct gx_devrt));
			break;
		}
		if (!relaxed) {
			cm = gx_capture_relax(CU(cuThreadExchangeStreamCaptureMode));
			relaxed = true;
		}
		if (op_htod(st, g, gx_devmaps__devrt(st->dm[p]), sz))
			pr_warn("policy %s: cannot write %s of a module", pols[p].tag, sym);
		else
			pr_debug("policy %s: %s written in context %u", pols[p].tag, sym, st->idx);
	}
	if (relaxed)
		gx_capture_restore(CU(cuThreadExchangeStreamCaptureMode), cm);
	return instr;
}

/* The first launch of a module in a context writes its __gx_devrt. Whether
 * the function's module carries the hooks (is instrumented), remembered in
 * the function's entry (returned; NULL only when out of memory). */
static struct fn_seen *fn_devrt(struct ctxst *st, CUfunction f, bool is_kernel, bool *instr_out)
{
	struct fn_seen *fs;
	for (unsigned i = 0; i < FN_RECENT; i++) {
		fs = fn_recent[i];
		if (fs && fs->key.f == f && fs->key.ctx == st->idx) {
			*instr_out = fs->instr;
			return fs;
		}
	}
	struct fn_key key = { .f = f, .ctx = st->idx };
	HASH_FIND(hh, fns_seen, &key, sizeof(key), fs);
	if (fs) {
		fn_recent[fn_recent_next++ % FN_RECENT] = fs;
		*instr_out = fs->instr;
		return fs;
	}
	bool instr = false;
	CUmodule mod = NULL;
	CUfunction fn = f;
	if ((!is_kernel || CU(cuKernelGetFunction)(&fn, (CUkernel)f) == CUDA_SUCCESS) &&
	    CU(cuFuncGetModule)(&mod, fn) == CUDA_SUCCESS && mod) {
		struct mod_seen *ms;
		HASH_FIND_PTR(mods_seen, &mod, ms);
		if (ms) {
			instr = ms->instr;
		} else {
			instr = module_blocks(st, mod);
			/* copies loaded beside an unchanged module: their blocks
			 * now, since launches name the original */
			CUmodule side = NULL;
			if (!instr && gx_attach_env->sz > offsetof(struct gx_attach_host, side_module) &&
			    gx_attach_env->side_module && (side = gx_attach_env->side_module(st->ctx, f)))
				module_blocks(st, side);
			if ((ms = calloc(1, sizeof(*ms)))) {
				ms->mod = mod;
				ms->instr = instr;
				HASH_ADD_PTR(mods_seen, mod, ms);
			}
		}
	}
	if ((fs = calloc(1, sizeof(*fs)))) {
		fs->key = key;
		fs->instr = instr;
		HASH_ADD(hh, fns_seen, key, sizeof(key), fs);
		fn_recent[fn_recent_next++ % FN_RECENT] = fs;
	}
	*instr_out = instr;
	return fs;
}

static bool module_devrt(struct ctxst *st, CUfunction f, bool is_kernel)
{
	bool instr;
	fn_devrt(st, f, is_kernel, &instr);
	return instr;
}

/* The kernel (by id; 0: unnamed), and its name into the tool logs the
 * first time it launches. NULL only when out of memory. */
static struct kname_seen *kname_get(uint64_t kid, const char *name)
{
	struct kname_seen *k;
	HASH_FIND(hh, knames_seen, &kid, sizeof(kid), k);
	if (k || !(k = calloc(1, sizeof(*k))))
		return k;
	k->kid = kid;
	HASH_ADD(hh, knames_seen, kid, sizeof(kid), k);
	if (!name)
		return k;
	k->name = strdup(name);
	size_t n = strlen(name) + 1;
	struct gx_tev_kname *r = calloc(1, sizeof(*r) + n);
	if (r) {
		r->h.type = GX_TEV_KNAME;
		r->kernel_id = kid;
		memcpy(r->name, name, n);
		ev_put_all(r, sizeof(*r) + n);
		free(r);
	}
	return k;
}

static void log_launch(struct ctxst *st, const struct gx_launch_event *l, uint64_t kid, uint64_t t, unsigned seq,
		       unsigned flags)
{
	struct gx_tev_launch ev = { .h.type = GX_TEV_LAUNCH, .host_ns = t, .kernel_id = kid, .ctx = st->idx,
				    .seq = seq, .flags = flags, .stream = (uint64_t)(uintptr_t)l->stream };
	memcpy(ev.grid, l->grid, sizeof(ev.grid));
	memcpy(ev.block, l->block, sizeof(ev.block));
	ev_put_all(&ev, sizeof(ev));
}

/* GX_LT_DONE_ALL=1: LAUNCH_DONE after every launch, as before the timed
 * launches asked for theirs (an A/B switch for the host path's cost,
 * docs/devbpf-perf.md). Read once, when the runtime subscribes. */
static bool lt_done_all(void)
{
	const char *e = getenv("GX_LT_DONE_ALL");
	return e && *e == '1';
}

/* A launch: its module's __gx_devrt, its record, its timing pair opened. */
static void on_launch(struct ctxst *st, struct gx_event *ev)
{
	struct gx_launch_event *l = &ev->launch;
	struct open_launch *o = &open_l;
	if (o->slot >= 0 && o->gen == rt_gen) /* the last launch of this thread never happened */
		gx_lt_abandon(&o->st->lt, o->slot);
	o->gen = rt_gen;
	o->graph = 0;
	bool instr;
	struct fn_seen *fs = fn_devrt(st, l->func, l->is_kernel, &instr);
	/* the kernel's record, found by hashing its name once per function */
	struct kname_seen *k = fs ? fs->kname : NULL;
	if (!k) {
		k = kname_get(l->name ? gx_kernel_id(l->name) : 0, l->name);
		if (fs)
			fs->kname = k;
	}
	uint64_t kid = k ? k->kid : l->name ? gx_kernel_id(l->name) : 0;
	o->st = st;
	o->seq = ++launch_seq;
	o->instr = instr;
	uint64_t now = now_ns();
	/* the sample counts direct launches (graph nodes are not timed) */
	o->slot = k && gx_lt_sampled(++k->launches - k->graph_launches, now, &k->lt_last_ns)
			  ? gx_lt_start(&st->lt, l->stream)
			  : -1;
	/* a timed launch asks for its LAUNCH_DONE (the others get none when
	 * subscribed with GX_EV_F_DONE_ASKED) */
	int sid = __atomic_load_n(&sub_id, __ATOMIC_RELAXED);
	if (o->slot >= 0 && sid >= 0 && sid < 32 && GX_EV_HAS(ev, launch.done_for))
		l->done_for |= 1u << sid;
	nr_launches++;
	nr_instr += instr;
	log_launch(st, l, kid, now, o->seq,
		   (instr ? GX_TEV_L_INSTRUMENTED : 0) | (o->slot >= 0 ? GX_TEV_L_TIMED : 0));
}

/* ---- graph launches: each kernel node counts as a launch of its kernel ----
 * Per exec kernel list (gen, shim/graph_exec.c), built at its first launch:
 * the kernels' records and the tool log record, so a graph launch costs one
 * lookup, a few additions and one append. The graph launch as a whole is
 * timed on the kernels' sample (gx_lt_sampled, per exec list): a pair of
 * events around cuGraphLaunch (GX_EV_GRAPH_LAUNCH_PRE opens it), a
 * GX_TEV_GLTIME record; its kernel nodes are not timed one by one. */
struct gexec_seen {
	unsigned long long gen;
	uint64_t launches, lt_last_ns; /* for the timing sample */
	unsigned nr, nodes, instr_nodes;
	struct kname_seen **k;
	struct gx_tev_glaunch *rec;
	size_t rec_len;
	UT_hash_handle hh;
};
static struct gexec_seen *gexecs_seen, *gexec_last;

static void gexec_free(struct gexec_seen *x)
{
	if (x == gexec_last)
		gexec_last = NULL;
	HASH_DEL(gexecs_seen, x);
	free(x->k);
	free(x->rec);
	free(x);
}

static struct gexec_seen *gexec_get(struct ctxst *st, const struct gx_graph_launch_event *g)
{
	struct gexec_seen *x = gexec_last;
	if (x && x->gen == g->gen)
		return x;
	HASH_FIND(hh, gexecs_seen, &g->gen, sizeof(g->gen), x);
	if (x)
		return gexec_last = x;
	size_t len = sizeof(*x->rec) + g->nr_kernels * sizeof(x->rec->k[0]);
	if (!(x = calloc(1, sizeof(*x))) || !(x->k = calloc(g->nr_kernels, sizeof(*x->k))) ||
	    !(x->rec = calloc(1, GX_ROUND8(len)))) {
		if (x)
			free(x->k);
		free(x);
		return NULL;
	}
	x->gen = g->gen;
	x->rec_len = len;
	x->rec->h.type = GX_TEV_GLAUNCH;
	x->rec->exec = g->gen;
	for (unsigned i = 0; i < g->nr_kernels; i++) {
		const struct gx_graph_kernel *gk = &g->kernels[i];
		bool instr = false;
		struct fn_seen *fs = gk->func ? fn_devrt(st, gk->func, gk->is_kernel, &instr) : NULL;
		struct kname_seen *k = fs ? fs->kname : NULL;
		if (!k) {
			k = kname_get(gk->name ? gx_kernel_id(gk->name) : 0, gk->name);
			if (fs)
				fs->kname = k;
		}
		if (!k)
			continue;
		struct gx_tev_gkernel *r = &x->rec->k[x->nr];
		r->kernel_id = k->kid;
		r->nodes = gk->nodes;
		r->flags = instr ? GX_TEV_L_INSTRUMENTED : 0;
		x->k[x->nr++] = k;
		x->nodes += gk->nodes;
		x->instr_nodes += instr ? gk->nodes : 0;
	}
	x->rec->nr = x->nr;
	x->rec_len = sizeof(*x->rec) + x->nr * sizeof(x->rec->k[0]);
	HASH_ADD(hh, gexecs_seen, gen, sizeof(x->gen), x);
	return gexec_last = x;
}

/* Before the launch: its timing pair opened, if sampled. */
static void on_graph_pre(struct ctxst *st, const struct gx_graph_launch_event *g)
{
	struct open_launch *o = &open_l;
	if (o->slot >= 0 && o->gen == rt_gen) /* the last launch of this thread never happened */
		gx_lt_abandon(&o->st->lt, o->slot);
	o->gen = rt_gen;
	o->st = st;
	o->slot = -1;
	o->graph = g->gen;
	struct gexec_seen *x = g->gen && g->nr_kernels ? gexec_get(st, g) : NULL;
	if (x && gx_lt_sampled(++x->launches, now_ns(), &x->lt_last_ns))
		o->slot = gx_lt_start(&st->lt, g->stream);
}

static void on_graph_launch(struct ctxst *st, const struct gx_graph_launch_event *g)
{
	nr_graph_launches++;
	struct open_launch *o = &open_l;
	if (o->slot >= 0 && o->gen == rt_gen && o->st == st && o->graph == g->gen)
		gx_lt_end_graph(&st->lt, o->slot, g->stream, g->gen);
	else if (o->slot >= 0 && o->gen == rt_gen)
		gx_lt_abandon(&o->st->lt, o->slot);
	o->slot = -1;
	o->graph = 0;
	struct gexec_seen *x = g->gen && g->nr_kernels ? gexec_get(st, g) : NULL;
	if (!x)
		return;
	for (unsigned i = 0; i < x->nr; i++) {
		x->k[i]->launches += x->rec->k[i].nodes;
		x->k[i]->graph_launches += x->rec->k[i].nodes;
	}
	nr_launches += x->nodes;
	nr_instr += x->instr_nodes;
	nr_graph_kernels += x->nodes;
	x->rec->host_ns = now_ns();
	x->rec->ctx = st->idx;
	ev_put_all(x->rec, x->rec_len);
}

/* The driver accepted it: close its timing pair. */
static void on_launch_done(struct ctxst *st, const struct gx_launch_event *l)
{
	struct open_launch *o = &open_l;
	if (o->gen != rt_gen)
		o->slot = -1;
	if (o->slot >= 0 && o->st == st && !o->graph)
		gx_lt_end(&st->lt, o->slot, l->stream, o->seq, o->instr);
	else if (o->slot >= 0)
		gx_lt_abandon(&o->st->lt, o->slot);
	o->slot = -1;
}

static CUresult on_event(struct gx_event *ev, void *cookie)
{
	(void)cookie;
	/* Most launches are not timed (one in GX_LT_EVERY): their LAUNCH_DONE
	 * has nothing to close, and this thread's open_l.slot says so without
	 * the lock pair every launch would otherwise pay twice. */
	if (ev->kind == GX_EV_LAUNCH_DONE && open_l.slot < 0)
		return CUDA_SUCCESS;
	CUcontext c = ev->ctx;
	if (!c && CU(cuCtxGetCurrent)(&c) != CUDA_SUCCESS)
		return CUDA_SUCCESS;
	bool destroy = ev->kind == GX_EV_CTX_DESTROY;
	if (destroy) /* drains and tears down: drain_lock first */
		pthread_mutex_lock(&drain_lock);
	pthread_mutex_lock(&rt_lock);
	if (stopping || !nr_pols) { /* exiting, or stopped by a detach */
		pthread_mutex_unlock(&rt_lock);
		if (destroy)
			pthread_mutex_unlock(&drain_lock);
		return CUDA_SUCCESS;
	}
	if (ev->kind == GX_EV_GRAPH_EXEC_DESTROY) {
		struct gexec_seen *x;
		HASH_FIND(hh, gexecs_seen, &ev->glaunch.gen, sizeof(ev->glaunch.gen), x);
		if (x)
			gexec_free(x);
		pthread_mutex_unlock(&rt_lock);
		return CUDA_SUCCESS;
	}
	if (ev->kind == GX_EV_MODULE_UNLOAD) {
		/* A later module may get the same handle: forget what we wrote. */
		seen_forget();
		pthread_mutex_unlock(&rt_lock);
		return CUDA_SUCCESS;
	}
	if (ev->kind == GX_EV_CTX_DESTROY) {
		for (unsigned i = 0; i < nr_ctx; i++)
			if (ctxs[i].ctx == c && !ctxs[i].failed) {
				/* The context going away need not be this thread's
				 * current one (another GPU's, a primary released from
				 * elsewhere): work in it, then give the thread back its
				 * own. */
				CUcontext old = NULL;
				bool other = CU(cuCtxGetCurrent)(&old) == CUDA_SUCCESS && old != c &&
					     CU(cuCtxSetCurrent)(c) == CUDA_SUCCESS;
				CU(cuCtxSynchronize)();
				lt_harvest(&ctxs[i], UINT_MAX);
				drain_ctx(&ctxs[i], true, true, true, evlogs());
				drops_out(&ctxs[i]);
				ev_write();
				ctx_teardown(&ctxs[i], true);
				ctxs[i].failed = 1; /* a new context at this address gets a new slot */
				ctxs[i].ctx = NULL;
				if (other)
					CU(cuCtxSetCurrent)(old);
			}
		seen_forget(); /* module and function handles of that context may be reused */
		pthread_mutex_unlock(&rt_lock);
		pthread_mutex_unlock(&drain_lock);
		return CUDA_SUCCESS;
	}
	struct ctxst *st = ctx_get(c);
	if (!st) {
		/* no runtime in this context: the modules' blocks stay zero */
	} else if (ev->kind == GX_EV_LAUNCH) {
		on_launch(st, ev);
	} else if (ev->kind == GX_EV_LAUNCH_DONE) {
		on_launch_done(st, &ev->launch);
	} else if (ev->kind == GX_EV_GRAPH_LAUNCH_PRE) {
		on_graph_pre(st, &ev->glaunch);
	} else if (ev->kind == GX_EV_GRAPH_LAUNCH) {
		on_graph_launch(st, &ev->glaunch);
	} else if (ev->kind == GX_EV_GRAPH_KERNEL_NODE && ev->graph.params.func) {
		module_devrt(st, ev->graph.params.func, false);
	}
	pthread_mutex_unlock(&rt_lock);
	return CUDA_SUCCESS;
}

/* The last drain, flush and summary: at exit (after synchronizing each
 * context, so the counts are complete) or at a live detach (`live`: no
 * synchronization — the shim waited for the instrumented launches — and
 * every context's maps are released unless `keep_device`: graphs made
 * during the attach may still run the hooks). */
static void finish(bool live, bool keep_device)
{
	uint64_t gpu_ns = 0, gpu_ns_instr = 0, untimed = 0, graph_timed = 0, graph_gpu_ns = 0;
	pthread_mutex_lock(&rt_lock);
	if (!nr_pols) { /* never started, or stopped already */
		pthread_mutex_unlock(&rt_lock);
		return;
	}
	stopping = 1;
	pthread_mutex_unlock(&rt_lock);
	if (drainer_on)
		pthread_join(drainer, NULL);
	drainer_on = 0;
	pthread_mutex_lock(&drain_lock);
	pthread_mutex_lock(&rt_lock);
	CUcontext cur = NULL;
	if (live && CU(cuCtxGetCurrent)(&cur) != CUDA_SUCCESS)
		cur = NULL;
	for (unsigned i = 0; i < nr_ctx; i++) {
		struct ctxst *st = &ctxs[i];
		if (st->failed || !st->dm[0])
			continue;
		if (CU(cuCtxSetCurrent)(st->ctx) == CUDA_SUCCESS && !live)
			CU(cuCtxSynchronize)();
		lt_harvest(st, UINT_MAX);
		/* a live detach does not wait for the kernels: a record table's
		 * slot seen for the first time is left (it may be half written) */
		drain_ctx(st, true, true, !live, evlogs());
		drops_out(st);
		gpu_ns += st->lt.gpu_ns;
		gpu_ns_instr += st->lt.gpu_ns_instr;
		untimed += st->lt.untimed;
		graph_timed += st->lt.graph_timed;
		graph_gpu_ns += st->lt.graph_gpu_ns;
	}
	ev_write();
	if (nr_prefetch)
		pr_info("policy %s: %llu gdev_mem_prefetch requests seen", pols[0].tag, nr_prefetch);
	/* What the tools could see of this process: the one summary line. */
	if (nr_launches) {
		char gpu[96] = "";
		if (gpu_ns)
			snprintf(gpu, sizeof(gpu), "; %.1f %% of %.1f ms of sampled GPU time instrumented",
				 100.0 * (double)gpu_ns_instr / (double)gpu_ns, (double)gpu_ns / 1e6);
		char graphs[192] = "";
		if (nr_graph_launches)
			snprintf(graphs, sizeof(graphs),
				 "; %llu of them kernel nodes of %llu graph launches (%llu graph launches timed: %.1f ms)",
				 (unsigned long long)nr_graph_kernels, (unsigned long long)nr_graph_launches,
				 (unsigned long long)graph_timed, (double)graph_gpu_ns / 1e6);
		pr_info("launches: %llu, %llu instrumented (%.1f %%)%s%s%s%s", (unsigned long long)nr_launches,
			(unsigned long long)nr_instr, 100.0 * (double)nr_instr / (double)nr_launches,
			nr_instr < nr_launches ? ", the rest seen host-side only (SASS)" : "", graphs, gpu,
			untimed ? " (some untimed: too many in flight)" : "");
	}
	for (unsigned p = 0; p < nr_pols; p++) {
		if (pols[p].ev_fd >= 0)
			close(pols[p].ev_fd);
		pols[p].ev_fd = -1;
	}
	if (live) {
		for (unsigned i = 0; i < nr_ctx; i++)
			if (!ctxs[i].failed && ctxs[i].dm[0] && !keep_device &&
			    CU(cuCtxSetCurrent)(ctxs[i].ctx) == CUDA_SUCCESS)
				ctx_teardown(&ctxs[i], true);
		CU(cuCtxSetCurrent)(cur);
		for (unsigned p = 0; p < nr_pols; p++)
			gx_buf_free(&pols[p].evlog);
		seen_forget();
		struct kname_seen *k, *kt;
		HASH_ITER(hh, knames_seen, k, kt) {
			HASH_DEL(knames_seen, k);
			free(k);
		}
		memset(ctxs, 0, sizeof(ctxs));
		nr_ctx = 0;
		nr_pols = 0;
		nr_launches = nr_instr = 0;
		nr_prefetch = 0;
		rt_gen++;
		stopping = 0;
	}
	pthread_mutex_unlock(&rt_lock);
	pthread_mutex_unlock(&drain_lock);
}

static void at_exit(void)
{
	finish(false, false);
}

void gx_devrt_stop(bool keep_device)
{
	if (sub_id >= 0 && gx_attach_env->sz > offsetof(struct gx_attach_host, unsubscribe) &&
	    gx_attach_env->unsubscribe)
		gx_attach_env->unsubscribe(sub_id);
	sub_id = -1;
	finish(true, keep_device);
}

int gx_devrt_start(const struct gx_policy_desc *d, const char *const *tags, size_t n)
{
	if (!n || n > GX_PMERGE_MAX)
		return -EINVAL;
	char dir[512], path[700];
	bool have_dir = gx_map_shm_dir(dir, sizeof(dir)) == 0, refused = false;
	if (have_dir) {
		mkdir(dir, 0700);
		/* Tool logs go only into a folder of this user (files 0600);
		 * ours but opened up (a fresh tmpfs is 1777): closed again, as
		 * the maps do with it (devbpf/maps.c). */
		struct stat st;
		if (!lstat(dir, &st) && S_ISDIR(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & 077))
			chmod(dir, 0700);
		char why[96];
		if (gx_dir_trusted(dir, GX_TRUST_OWN, why, sizeof(why)) == -EPERM) {
			pr_warn("policy: not writing tool logs into %s: %s; records are lost", dir, why);
			have_dir = false, refused = true;
		}
	}
	for (size_t i = 0; i < n; i++) {
		struct polst *p = &pols[i];
		p->pd = &d[i];
		snprintf(p->tag, sizeof(p->tag), "%s", tags[i]);
		gx_buf_init(&p->evlog);
		p->ev_fd = -1;
		if (have_dir) {
			snprintf(path, sizeof(path), "%s/%d-%s.events", dir, (int)getpid(), p->tag);
			p->ev_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
		}
		if (p->ev_fd < 0 && !refused)
			pr_warn("policy %s: cannot write the tool log in %s; records are lost", p->tag, dir);
		struct gx_tev_proc pr = { .h.type = GX_TEV_PROC, .pid = (gdev_u32)getpid(), .start_ns = now_ns() };
		snprintf(pr.tag, sizeof(pr.tag), "%s", p->tag);
		ev_put(p, &pr, sizeof(pr));
	}
	pthread_mutex_lock(&rt_lock);
	nr_pols = (unsigned)n;
	pthread_mutex_unlock(&rt_lock);
	if (!atexit_on)
		gx_attach_env->lock_register(&rt_lock, 15);
	unsigned mask = GX_EV_MASK(GX_EV_LAUNCH) | GX_EV_MASK(GX_EV_GRAPH_KERNEL_NODE) |
			GX_EV_MASK(GX_EV_GRAPH_LAUNCH) | GX_EV_MASK(GX_EV_GRAPH_EXEC_DESTROY) |
			GX_EV_MASK(GX_EV_GRAPH_LAUNCH_PRE) |
			GX_EV_MASK(GX_EV_CTX_DESTROY) | GX_EV_MASK(GX_EV_MODULE_UNLOAD);
	if (gx_lt_every())
		mask |= GX_EV_MASK(GX_EV_LAUNCH_DONE) | (lt_done_all() ? 0 : GX_EV_F_DONE_ASKED);
	int id = gx_attach_env->subscribe(mask, on_event, NULL);
	if (id == -EINVAL && (mask & GX_EV_F_DONE_ASKED)) /* a shim older than the flag */
		id = gx_attach_env->subscribe(mask & ~GX_EV_F_DONE_ASKED, on_event, NULL);
	if (id < 0) {
		pthread_mutex_lock(&rt_lock);
		nr_pols = 0;
		pthread_mutex_unlock(&rt_lock);
		for (size_t i = 0; i < n; i++) {
			if (pols[i].ev_fd >= 0)
				close(pols[i].ev_fd);
			pols[i].ev_fd = -1;
			gx_buf_free(&pols[i].evlog);
		}
		return id;
	}
	__atomic_store_n(&sub_id, id, __ATOMIC_RELAXED);
	if (!atexit_on)
		atexit(at_exit);
	atexit_on = true;
	return 0;
}

void gx_attach_stats(struct gx_stats_file *f)
{
	pthread_mutex_lock(&rt_lock);
	if (!nr_pols) {
		pthread_mutex_unlock(&rt_lock);
		return;
	}
	f->flags |= GX_STATS_F_TOOLS;
	f->nr_policies = nr_pols;
	size_t at = 0;
	for (unsigned p = 0; p < nr_pols; p++) {
		int w = snprintf(f->policies + at, sizeof(f->policies) - at, "%s%s", p ? "," : "", pols[p].tag);
		if (w < 0 || (size_t)w >= sizeof(f->policies) - at)
			break;
		at += (size_t)w;
	}
	f->launches = nr_launches;
	f->instrumented = nr_instr;
	f->graph_launches = nr_graph_launches;
	f->graph_kernel_launches = nr_graph_kernels;
	for (unsigned i = 0; i < nr_ctx; i++) {
		struct ctxst *st = &ctxs[i];
		f->sampled_gpu_ns += st->lt.gpu_ns;
		f->sampled_gpu_ns_instr += st->lt.gpu_ns_instr;
		f->graph_timed_launches += st->lt.graph_timed;
		f->graph_gpu_ns += st->lt.graph_gpu_ns;
		if (st->failed)
			continue;
		for (unsigned p = 0; p < nr_pols; p++)
			for (size_t m = 0; st->maps[p] && m < pols[p].pd->nr_maps; m++)
				if (st->maps[p][m] && st->maps[p][m]->l.type == GX_MAP_RINGBUF)
					f->ring_drops += __atomic_load_n(&gx_map__ring(st->maps[p][m])->drops,
									 __ATOMIC_RELAXED);
	}
	f->sampled_gpu_ns += gone_gpu_ns;
	f->graph_timed_launches += gone_graph_timed;
	f->graph_gpu_ns += gone_graph_gpu_ns;
	f->sampled_gpu_ns_instr += gone_gpu_ns_instr;
	f->ring_drops += gone_drops;
	/* the most launched kernels: a selection over the (few hundred) kernels */
	unsigned n = 0;
	struct kname_seen *k, *kt;
	HASH_ITER(hh, knames_seen, k, kt) {
		if (!k->launches)
			continue;
		unsigned at_k = n < GX_STATS_KERNELS ? n++ : GX_STATS_KERNELS;
		if (at_k == GX_STATS_KERNELS) {
			if (f->kernels[GX_STATS_KERNELS - 1].launches >= k->launches)
				continue;
			at_k = GX_STATS_KERNELS - 1;
		}
		while (at_k > 0 && f->kernels[at_k - 1].launches < k->launches) {
			f->kernels[at_k] = f->kernels[at_k - 1];
			f->kernel_ids[at_k] = f->kernel_ids[at_k - 1];
			at_k--;
		}
		struct gx_stats_kernel *o = &f->kernels[at_k];
		memset(o, 0, sizeof(*o));
		snprintf(o->name, sizeof(o->name), "%s", k->name ? k->name : "?");
		o->launches = k->launches;
		o->graph_launches = k->graph_launches;
		f->kernel_ids[at_k] = k->kid;
	}
	f->nr_kernels = n;
	pthread_mutex_unlock(&rt_lock);
}
