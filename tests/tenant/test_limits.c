/* test_limits — per-tenant limits in the tenant table (tenant/tn_limits.c):
 * 16 threads racing a memory limit never take the tenant past it and leave
 * no budget behind; several processes of one tenant share one budget; a
 * process killed with budget reserved gives it back when reaped; a limit
 * changed from outside (lowered below what is used: new reservations fail,
 * nothing is taken back); limits per GPU (each GPU its budget, one GPU's
 * own limit, charges past the limit, figures per GPU); sizes and per-GPU
 * lists parse; GPU-share turns: the owner passes, the other waits, an idle
 * owner lends its turn. No CUDA. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tenant/gx_tenant.h"
#include "tenant/tn_internal.h"
#include "tests/gx_test.h"

#define MiB (1ull << 20)

static char dir[64];

static struct gx_tn *join(const char *name, uint64_t limit, uint32_t share, const uint8_t *dev)
{
	struct gx_tn_opts o = { .sz = sizeof(o),
				.name = name,
				.cls = -1,
				.dev = dev,
				.lease_ns = 200000000ull,
				.mem_limit = limit,
				.gpu_share = share };
	struct gx_tn *tn = NULL;
	return gx_tn_open(&o, &tn) ? NULL : tn;
}

static int info_of(const char *name, struct gx_tn_info *out)
{
	struct gx_tn_info in[GX_TN_MAX_TENANTS];
	int n = gx_tn_list(in, GX_TN_MAX_TENANTS, 1);
	for (int i = 0; i < n; i++)
		if (!strcmp(in[i].name, name)) {
			*out = in[i];
			return 0;
		}
	return -ENOENT;
}

/* ---- 16 threads racing the limit ---- */
struct racer {
	struct gx_tn *tn;
	uint64_t limit;
	unsigned seed;
	long ok, denied, over;
};

static void *race(void *arg)
{
	struct racer *r = arg;
	uint64_t held[32];
	int nh = 0;
	for (int i = 0; i < 20000; i++) {
		if (nh < 32 && (rand_r(&r->seed) & 1)) {
			uint64_t n = (1 + rand_r(&r->seed) % 8) * MiB;
			if (!gx_tn_mem_reserve(r->tn, n)) {
				held[nh++] = n;
				r->ok++;
				uint64_t lim, used;
				gx_tn_mem_get(r->tn, &lim, &used);
				if (used > r->limit)
					r->over++;
			} else {
				r->denied++;
			}
		} else if (nh) {
			gx_tn_mem_release(r->tn, held[--nh]);
		}
	}
	while (nh)
		gx_tn_mem_release(r->tn, held[--nh]);
	return NULL;
}

static void run_racers(struct gx_tn *tn, uint64_t limit, int nthreads, long *ok, long *denied, long *over)
{
	pthread_t th[16];
	struct racer r[16];
	for (int i = 0; i < nthreads; i++) {
		r[i] = (struct racer){ .tn = tn, .limit = limit, .seed = (unsigned)(i * 7919 + getpid()) };
		pthread_create(&th[i], NULL, race, &r[i]);
	}
	*ok = *denied = *over = 0;
	for (int i = 0; i < nthreads; i++) {
		pthread_join(th[i], NULL);
		*ok += r[i].ok, *denied += r[i].denied, *over += r[i].over;
	}
}

static void test_threads(void)
{
	uint64_t limit = 64 * MiB;
	struct gx_tn *tn = join("race", limit, 0, NULL);
	GX_CHECK(tn, "join with a 64 MiB limit");
	if (!tn)
		return;
	long ok, denied, over;
	run_racers(tn, limit, 16, &ok, &denied, &over);
	struct gx_tn_info in;
	GX_CHECK(!info_of("race", &in), "the tenant is listed");
	GX_CHECK(ok > 1000 && denied > 1000, "16 threads: %ld reservations granted, %ld refused at the limit", ok,
		 denied);
	GX_CHECK(!over && in.mem_hiwater <= limit && in.mem_hiwater > limit - 8 * MiB,
		 "never over the limit (high-water %llu MiB of 64)", (unsigned long long)(in.mem_hiwater / MiB));
	GX_CHECK(in.mem_used == 0, "no budget leaked (used %llu)", (unsigned long long)in.mem_used);
	GX_CHECK(in.mem_denied == (uint64_t)denied, "refusals counted (%llu)", (unsigned long long)in.mem_denied);
	GX_CHECK(in.mem_limit == limit, "limit listed");
	gx_tn_close(tn);
}

/* ---- several processes of one tenant ---- */
static void test_processes(void)
{
	uint64_t limit = 48 * MiB;
	struct gx_tn *keep = join("procs", limit, 0, NULL); /* keeps the tenant while children come and go */
	int p[2];
	if (pipe(p))
		return;
	pid_t kids[4];
	for (int k = 0; k < 4; k++) {
		if ((kids[k] = fork()) == 0) {
			struct gx_tn *tn = join("procs", 0, 0, NULL);
			long ok = 0, denied = 0, over = 0;
			if (tn)
				run_racers(tn, limit, 4, &ok, &denied, &over);
			/* y: good; j: the join failed; o: saw the budget over the
			 * limit; z: no reservation granted (the flake of one run of
			 * the whole suite under load names which) */
			char c = !tn ? 'j' : over ? 'o' : !ok ? 'z' : 'y';
			if (write(p[1], &c, 1) != 1)
				_exit(1);
			gx_tn_close(tn);
			_exit(0);
		}
	}
	int good = 0;
	char got[5] = "????";
	for (int k = 0; k < 4; k++) {
		char c = 0;
		if (read(p[0], &c, 1) == 1) {
			got[k] = c;
			good += c == 'y';
		}
		waitpid(kids[k], NULL, 0);
	}
	close(p[0]), close(p[1]);
	struct gx_tn_info in;
	info_of("procs", &in);
	GX_CHECK(good == 4,
		 "4 processes x 4 threads on one budget: none saw it over the limit (%s: y good, j join "
		 "failed, o over, z none granted)",
		 got);
	GX_CHECK(in.mem_hiwater <= limit, "tenant high-water %llu MiB <= 48",
		 (unsigned long long)(in.mem_hiwater / MiB));
	GX_CHECK(in.mem_used == 0, "all given back at exit (used %llu)", (unsigned long long)in.mem_used);
	gx_tn_close(keep);
}

/* ---- kill -9 with budget reserved ---- */
static void test_kill(void)
{
	struct gx_tn *keep = join("killed", 100 * MiB, 0, NULL);
	int p[2];
	if (!keep || pipe(p))
		return;
	pid_t pid = fork();
	if (pid == 0) {
		struct gx_tn *tn = join("killed", 0, 0, NULL);
		char c = tn && !gx_tn_mem_reserve(tn, 60 * MiB) ? 'y' : 'n';
		if (write(p[1], &c, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	char c = 0;
	GX_CHECK(read(p[0], &c, 1) == 1 && c == 'y', "a child reserves 60 MiB of 100");
	GX_CHECK(gx_tn_mem_reserve(keep, 50 * MiB) == -ENOMEM, "50 more MiB refused while it lives");
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	uint64_t t0 = tn_now();
	int ok = 0;
	while (!ok && tn_now() - t0 < 1000000000ull) {
		gx_tn_tick(keep, tn_now()); /* the completion thread's 100 ms reap */
		ok = !gx_tn_mem_reserve(keep, 50 * MiB);
		if (!ok)
			usleep(10000);
	}
	GX_CHECK(ok, "after kill -9 its 60 MiB are back within 1 s (%.0f ms)", (tn_now() - t0) / 1e6);
	struct gx_tn_info in;
	info_of("killed", &in);
	GX_CHECK(in.mem_used == 50 * MiB, "used is the survivor's 50 MiB (%llu)",
		 (unsigned long long)(in.mem_used / MiB));
	gx_tn_mem_release(keep, 50 * MiB);
	close(p[0]), close(p[1]);
	gx_tn_close(keep);
}

/* ---- the control plane ---- */
static void test_set(void)
{
	struct gx_tn *tn = join("live", 0, 0, NULL);
	if (!tn)
		return;
	GX_CHECK(!gx_tn_mem_reserve(tn, 100 * MiB), "no limit: 100 MiB reserved");
	GX_CHECK(!gx_tn_set_limits("live", 64 * MiB, -1), "gpuext tenant set live mem-limit 64M");
	GX_CHECK(gx_tn_mem_reserve(tn, 1) == -ENOMEM, "below usage: new reservations fail");
	struct gx_tn_info in;
	info_of("live", &in);
	GX_CHECK(in.mem_used == 100 * MiB && in.mem_limit == 64 * MiB, "nothing taken back (used 100 MiB, limit 64)");
	gx_tn_mem_release(tn, 60 * MiB);
	GX_CHECK(!gx_tn_mem_reserve(tn, 20 * MiB) && gx_tn_mem_reserve(tn, 5 * MiB) == -ENOMEM,
		 "after freeing 60: 20 fits, 5 more does not");
	GX_CHECK(!gx_tn_set_limits("live", 0, 50), "limit removed, share 50");
	GX_CHECK(!gx_tn_mem_reserve(tn, 1ull << 40), "no limit again");
	info_of("live", &in);
	GX_CHECK(in.gpu_share == 50, "share listed");
	GX_CHECK(gx_tn_set_limits("nobody", 1, -1) == -ENOENT, "unknown tenant: ENOENT");
	GX_CHECK(gx_tn_set_limits("live", -1, 101) == -EINVAL, "share 101: EINVAL");
	gx_tn_close(tn);
}

/* ---- per GPU ---- */
static void test_gpus(void)
{
	uint8_t d0[16] = { 0xa0 }, d1[16] = { 0xa1 };
	struct gx_tn_opts o = {
		.sz = sizeof(o), .name = "gpus", .cls = -1, .dev = d1, .mem_limit = 64 * MiB, .gpu_mem_limit = 16 * MiB
	};
	struct gx_tn *a = join("gpus", 64 * MiB, 0, d0), *b = NULL;
	GX_CHECK(a && !gx_tn_open(&o, &b), "one tenant on two GPUs (the second with its own 16 MiB)");
	if (!a || !b)
		return;
	GX_CHECK(!gx_tn_mem_reserve(a, 60 * MiB) && gx_tn_mem_reserve(a, 8 * MiB) == -ENOMEM,
		 "GPU 0: 60 of 64 MiB, 8 more refused");
	GX_CHECK(!gx_tn_mem_reserve(b, 16 * MiB) && gx_tn_mem_reserve(b, 1) == -ENOMEM,
		 "GPU 1 has its own budget: its 16 MiB, then refused");
	uint64_t lim, used;
	gx_tn_mem_get(b, &lim, &used);
	GX_CHECK(lim == 16 * MiB && used == 16 * MiB, "what cuMemGetInfo reads there: 16 of 16 MiB");
	gx_tn_mem_charge(b, 4 * MiB); /* a pool that grew past its reservation */
	struct gx_tn_info in;
	info_of("gpus", &in);
	GX_CHECK(in.nr_gpus == 2 && in.gpus[0].dev[0] == 0xa0 && in.gpus[1].dev[0] == 0xa1,
		 "listed per GPU, in the order of first use");
	GX_CHECK(in.gpus[0].mem_used == 60 * MiB && in.gpus[0].mem_limit == 64 * MiB && in.gpus[0].mem_denied == 1 &&
			 in.gpus[1].mem_used == 20 * MiB && in.gpus[1].mem_limit == 16 * MiB &&
			 in.gpus[1].mem_hiwater == 20 * MiB,
		 "each GPU's usage, limit, high-water and refusals (a charge counts past the limit)");
	GX_CHECK(in.mem_used == 80 * MiB && in.mem_denied == 2,
		 "the tenant's figures are the sums (80 MiB, 2 refused)");
	GX_CHECK(!gx_tn_set_limits("gpus", 32 * MiB, -1), "gpuext tenant set gpus mem-limit 32M");
	info_of("gpus", &in);
	GX_CHECK(in.gpus[0].mem_limit == 32 * MiB && in.gpus[1].mem_limit == 32 * MiB,
		 "applies to every GPU (the own limit goes)");
	gx_tn_mem_release(b, 20 * MiB);
	GX_CHECK(!gx_tn_mem_reserve(b, 32 * MiB), "GPU 1 now takes 32 MiB");
	gx_tn_close(b);
	info_of("gpus", &in);
	GX_CHECK(in.gpus[1].mem_used == 0 && in.gpus[0].mem_used == 60 * MiB && in.mem_used == 60 * MiB,
		 "the process on GPU 1 leaves: its part there given back, GPU 0's kept");
	gx_tn_close(a);
}

static void test_parse(void)
{
	static const struct {
		const char *s;
		uint64_t v;
		int err;
	} t[] = {
		{ "4G", 4ull << 30, 0 },   { "4GiB", 4ull << 30, 0 }, { "512m", 512ull << 20, 0 },
		{ "1.5G", 3ull << 29, 0 }, { "1024", 1024, 0 },	      { "2T", 2ull << 40, 0 },
		{ "10KB", 10240, 0 },	   { "", 0, -EINVAL },	      { "-1G", 0, -EINVAL },
		{ "4X", 0, -EINVAL },	   { "G", 0, -EINVAL },	      { "1e30", 0, -EINVAL },
	};
	int bad = 0;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		uint64_t v = 0;
		int err = gx_tn_parse_size(t[i].s, &v);
		if (err != t[i].err || (!err && v != t[i].v)) {
			printf("# '%s': %d %llu\n", t[i].s, err, (unsigned long long)v);
			bad++;
		}
	}
	GX_CHECK(!bad, "sizes parse (K/M/G/T, iB, fractions; errors refused)");
	uint64_t dflt = 1, per[4];
	GX_CHECK(!gx_tn_parse_mem_limits("8G,1=20G", &dflt, per, 4) && dflt == 8ull << 30 && per[0] == 0 &&
			 per[1] == 20ull << 30,
		 "8G,1=20G: 8 GiB on every GPU, 20 on GPU 1");
	GX_CHECK(!gx_tn_parse_mem_limits("0=1G,3=2M", &dflt, per, 4) && dflt == 0 && per[0] == 1ull << 30 &&
			 per[3] == 2ull << 20,
		 "0=1G,3=2M: no default");
	GX_CHECK(gx_tn_parse_mem_limits("4=1G", &dflt, per, 4) && gx_tn_parse_mem_limits("x=1G", &dflt, per, 4) &&
			 gx_tn_parse_mem_limits("1=", &dflt, per, 4) && gx_tn_parse_mem_limits("", &dflt, per, 4),
		 "ordinals out of range, bad ordinals and sizes refused");
}

/* ---- GPU-share turns ---- */
static void test_share(void)
{
	uint8_t dev[16] = { 1 };
	gx_tn_share_config(100000000ull, 500000ull, 2000000ull); /* 100 ms turns */
	struct gx_tn *a = join("sa", 0, 30, dev), *b = join("sb", 0, 70, dev);
	if (!a || !b)
		return;
	uint64_t P = 100000000ull, now = tn_now();
	uint64_t base = now - now % P + P; /* the next period: a's turn [0, 30 ms), b's [30, 100) */
	/* both busy: one launch in flight each */
	gx_tn_launched(a, base - 10), gx_tn_launched(b, base - 10);
	GX_CHECK(gx_tn_share_hold(a, base + 1000) == 0, "in its turn a 30 %% tenant passes");
	uint64_t w = gx_tn_share_hold(b, base + 1000);
	GX_CHECK(w > 28000000ull && w <= 30000000ull, "the 70 %% tenant waits for the rest of a's turn (%.1f ms)",
		 w / 1e6);
	GX_CHECK(gx_tn_share_hold(b, base + 40000000ull) == 0, "b passes in its own turn");
	GX_CHECK(gx_tn_share_hold(a, base + 40000000ull) > 0, "a waits in b's turn");
	/* a idle: nothing in flight, last launch long ago -> b borrows */
	gx_tn_completed(a, base - 10, base - 5);
	GX_CHECK(gx_tn_share_hold(b, base + 10000000ull) == 0, "a idle in its turn: b borrows it (work-conserving)");
	/* alone with a share */
	gx_tn_close(a);
	GX_CHECK(gx_tn_share_hold(b, base + 1000) == 0, "alone: never held");
	gx_tn_close(b);
	gx_tn_share_config(40000000ull, 500000ull, 2000000ull);
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/gx_tl.XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	setenv("GPUEXT_SHM_DIR", dir, 1);
	test_threads();
	test_processes();
	test_kill();
	test_set();
	test_gpus();
	test_parse();
	test_share();
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd)) {
	}
	return gx_test_done();
}
