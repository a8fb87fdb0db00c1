/* bs_log.c — the schedule log (gx_blocksched.h): what `gpuext sched` shows.
 *
 * Decisions ("K: launched as ...", "K: runs unchanged: why") are lines at
 * once. What the workers did is only known on the device: a sampled launch
 * gets a stats area (struct gx_work_wstat per worker) in pinned host memory
 * mapped for the device, which each worker fills when it leaves, `done`
 * last after a system fence. The host never waits for it: at later launches
 * and synchronisations it looks at the pending samples and writes those
 * whose workers all reported; at exit what is complete is written and the
 * rest dropped. So sampling costs a launch nothing but the descriptor's one
 * more pointer, and a run that never synchronises loses only its samples.
 *
 * Which launches: the first GX_BS_SAMPLE_FIRST of each kernel, then one in
 * GPUEXT_SCHED_SAMPLE (64). At most BS_SLOTS samples are pending at once
 * (the rest are not sampled): pinned memory is slow to allocate, so the
 * buffers are made on first use and kept.
 *
 * File format (text, one record per line, fields separated by spaces):
 *   gxsched 1 <pid>
 *   D <kernel> <text...>                         a decision
 *   L <kernel> <nth> <units> <gx> <gy> <gz> <workers> <chunk> <per_sm> <sms>
 *   W <worker> <smid> <units> <chunks> <steals> <t0> <t1>   (after its L) */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blocksched/bs_internal.h"
#include "common/gx_util.h"
#include "devbpf/gx_bpf.h"

#define BS_SLOTS 8
#define GX_BS_SAMPLE_FIRST 3

struct sample {
	bool used;
	CUcontext ctx, buf_ctx; /* the launch's; the one the buffer was made in */
	struct gx_work_wstat *host; /* pinned, mapped */
	size_t cap;                 /* slots */
	char kernel[256];
	unsigned long long nth;
	unsigned workers, units, chunk, grid[3], per_sm, nsm;
};

static int fd = -2; /* -2 unknown, -1 off */
static unsigned every = 64;
static struct sample samples[BS_SLOTS];

static void open_log(void)
{
	const char *e = getenv("GPUEXT_SCHED_LOG");
	fd = -1;
	if (!e || !*e || !strcmp(e, "0"))
		return;
	const char *ev = getenv("GPUEXT_SCHED_SAMPLE");
	if (ev && atoi(ev) > 0)
		every = (unsigned)atoi(ev);
	char path[4096], dir[4000];
	if (e[0] == '/') {
		snprintf(path, sizeof(path), "%s", e);
	} else {
		if (gx_map_shm_dir(dir, sizeof(dir)))
			return;
		mkdir(dir, 0700);
		snprintf(path, sizeof(path), "%s/%d-sched.log", dir, (int)getpid());
	}
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		pr_warn("blocksched: cannot write the schedule log %s: %s", path, strerror(errno));
		return;
	}
	char hdr[64];
	int n = snprintf(hdr, sizeof(hdr), "gxsched 1 %d\n", (int)getpid());
	if (write(fd, hdr, (size_t)n) != n)
		pr_debug("blocksched: short write to the schedule log");
}

bool bs_log_on(void)
{
	if (fd == -2)
		open_log();
	return fd >= 0;
}

static void put(struct gx_buf *b)
{
	if (!b->failed && fd >= 0 && write(fd, b->data, b->len) != (ssize_t)b->len)
		pr_debug("blocksched: short write to the schedule log");
	gx_buf_free(b);
}

void bs_log_decision(const char *kernel, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pr_info("blocksched: %s: %s", kernel, msg);
	if (!bs_log_on())
		return;
	struct gx_buf b;
	gx_buf_init(&b);
	gx_buf_printf(&b, "D %s %s\n", kernel, msg);
	put(&b);
}

uint64_t bs_log_sample(CUcontext ctx, const char *kernel, unsigned long long nth, unsigned workers,
		       unsigned units, unsigned chunk, const unsigned grid[3], unsigned per_sm, unsigned nsm)
{
	if (!bs_log_on() || (nth >= GX_BS_SAMPLE_FIRST && nth % every))
		return 0;
	struct sample *s = NULL;
	for (int i = 0; i < BS_SLOTS && !s; i++)
		if (!samples[i].used && (samples[i].cap >= workers || !samples[i].host))
			s = &samples[i];
	for (int i = 0; i < BS_SLOTS && !s; i++)
		if (!samples[i].used)
			s = &samples[i];
	if (!s)
		return 0;
	if (s->cap < workers) {
		size_t cap = workers < 1024 ? 1024 : workers;
		void *p = NULL;
		if (s->host)
			CU(cuMemFreeHost)(s->host);
		s->host = NULL;
		s->cap = 0;
		if (CU(cuMemHostAlloc)(&p, cap * sizeof(struct gx_work_wstat),
				       CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE) != CUDA_SUCCESS || !p)
			return 0;
		s->host = p;
		s->cap = cap;
		s->buf_ctx = ctx;
	}
	CUdeviceptr d = 0;
	if (CU(cuMemHostGetDevicePointer_v2)(&d, s->host, 0) != CUDA_SUCCESS)
		return 0;
	memset(s->host, 0, workers * sizeof(struct gx_work_wstat));
	s->used = true;
	s->ctx = ctx;
	snprintf(s->kernel, sizeof(s->kernel), "%s", kernel);
	s->nth = nth;
	s->workers = workers;
	s->units = units;
	s->chunk = chunk;
	memcpy(s->grid, grid, sizeof(s->grid));
	s->per_sm = per_sm;
	s->nsm = nsm;
	return d;
}

static bool complete(const struct sample *s)
{
	for (unsigned w = 0; w < s->workers; w++)
		if (!__atomic_load_n(&s->host[w].done, __ATOMIC_ACQUIRE))
			return false;
	return true;
}

static uint64_t n_sampled, n_steals; /* atomics: the stats file reads them */

void bs_log_counts(uint64_t *sampled, uint64_t *steals)
{
	*sampled = __atomic_load_n(&n_sampled, __ATOMIC_RELAXED);
	*steals = __atomic_load_n(&n_steals, __ATOMIC_RELAXED);
}

static void write_sample(struct sample *s)
{
	uint64_t steals = 0;
	struct gx_buf b;
	gx_buf_init(&b);
	gx_buf_printf(&b, "L %s %llu %u %u %u %u %u %u %u %u\n", s->kernel, s->nth, s->units, s->grid[0],
		      s->grid[1], s->grid[2], s->workers, s->chunk, s->per_sm, s->nsm);
	for (unsigned w = 0; w < s->workers; w++) {
		const struct gx_work_wstat *x = &s->host[w];
		gx_buf_printf(&b, "W %u %u %u %u %u %llu %llu\n", w, x->smid, x->units, x->chunks, x->steals,
			      x->t0, x->t1);
		steals += x->steals;
	}
	__atomic_fetch_add(&n_sampled, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&n_steals, steals, __ATOMIC_RELAXED);
	put(&b);
}

void bs_log_poll(bool all)
{
	for (int i = 0; i < BS_SLOTS; i++) {
		struct sample *s = &samples[i];
		if (!s->used)
			continue;
		if (complete(s))
			write_sample(s);
		else if (!all)
			continue;
		s->used = false;
	}
}

void bs_log_ctx_gone(CUcontext ctx)
{
	for (int i = 0; i < BS_SLOTS; i++) {
		struct sample *s = &samples[i];
		if (s->used && (s->ctx == ctx || s->buf_ctx == ctx)) {
			if (complete(s))
				write_sample(s);
			s->used = false;
		}
		if (s->host && s->buf_ctx == ctx) {
			s->host = NULL; /* pinned memory goes with its context */
			s->cap = 0;
		}
	}
}
