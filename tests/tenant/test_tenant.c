/* test_tenant — the tenant table (tenant/gx_tenant.h) across processes:
 * joining creates it and the last one out removes it; one tenant gathers
 * its processes; the view sums the other processes' launches by class; a
 * process that dies (kill -9) is reaped with its map files, one whose pid
 * was reused too; a holder of the lock that dies does not block the rest
 * (robust mutex); a stopped process stops counting after its lease; a
 * waiter wakes on a change; the control plane lists and changes tenants;
 * burst periods become a prediction; the GPU time per launch is measured
 * from completions. No CUDA. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tenant/gx_tenant.h"
#include "tenant/tn_internal.h"
#include "tests/gx_test.h"

static char dir[64];

static int exists(const char *name)
{
	char p[200];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return !stat(p, &st);
}

static struct gx_tn *join(const char *name, int cls, const uint8_t *dev)
{
	struct gx_tn_opts o = {.sz = sizeof(o), .name = name, .cls = cls, .dev = dev, .lease_ns = 200000000ull};
	struct gx_tn *tn = NULL;
	int err = gx_tn_open(&o, &tn);
	return err ? NULL : tn;
}

/* A child that joins as `name`, does `launches` launches without
 * completing them, says so on the pipe, then sleeps (to be killed). */
static pid_t child(const char *name, int cls, int launches, int *rfd)
{
	int p[2];
	if (pipe(p))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		struct gx_tn *tn = join(name, cls, NULL);
		for (int i = 0; tn && i < launches; i++)
			gx_tn_launched(tn, tn_now());
		char c = tn ? 'y' : 'n';
		if (write(p[1], &c, 1) != 1)
			_exit(1);
		for (;;) {
			if (tn)
				gx_tn_tick(tn, tn_now());
			usleep(10000);
		}
	}
	close(p[1]);
	char c = 0;
	if (read(p[0], &c, 1) != 1 || c != 'y') {
		close(p[0]);
		return -1;
	}
	*rfd = p[0];
	return pid;
}

static void reap_child(pid_t pid, int fd)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(fd);
}

static void test_life(void)
{
	GX_CHECK(gx_tn_list(NULL, 0, 0) == -ENOENT, "no table: list says -ENOENT");
	struct gx_tn *a = join("alpha", GPU_CLASS_BE, NULL);
	GX_CHECK(a && exists(GX_TN_TABLE_FILE), "join creates %s", GX_TN_TABLE_FILE);
	struct gx_tn *b = join("alpha", GPU_CLASS_LC, (const uint8_t *)"0123456789abcdef");
	GX_CHECK(b && gx_tn_class(b) == GPU_CLASS_BE, "a second entry of the tenant keeps its class (be)");
	struct gx_tn_info in[4];
	int n = gx_tn_list(in, 4, 0);
	GX_CHECK(n == 1 && !strcmp(in[0].name, "alpha") && in[0].nr_procs == 2 && in[0].pids[0] == (uint32_t)getpid(),
		 "one tenant, two entries (n=%d procs=%u)", n, n > 0 ? in[0].nr_procs : 0);
	GX_CHECK(gx_tn_set("alpha", GPU_CLASS_LC, 5) == 0 && gx_tn_class(a) == GPU_CLASS_LC && gx_tn_window(b) == 5,
		 "gx_tn_set: class and window change for every entry");
	GX_CHECK(gx_tn_set("beta", GPU_CLASS_LC, -1) == -ENOENT && gx_tn_set("alpha", 7, -1) == -EINVAL,
		 "gx_tn_set: unknown tenant -ENOENT, bad class -EINVAL");
	gx_tn_close(b);
	GX_CHECK(exists(GX_TN_TABLE_FILE), "the table stays while a process is in it");
	gx_tn_close(a);
	GX_CHECK(!exists(GX_TN_TABLE_FILE), "the last one out removes it");
	GX_CHECK(gx_tn_parse_class("lc") == GPU_CLASS_LC && gx_tn_parse_class("BE") == GPU_CLASS_BE &&
			 gx_tn_parse_class("x") == -EINVAL && !strcmp(gx_tn_class_name(GPU_CLASS_LC), "lc"),
		 "class names");
}

static void test_view_and_kill(void)
{
	struct gx_tn *me = join("be", GPU_CLASS_BE, NULL);
	int fd;
	pid_t lc = child("lc", GPU_CLASS_LC, 3, &fd);
	GX_CHECK(me && lc > 0, "a BE tenant here, an LC tenant in a child with 3 launches in flight");
	if (!me || lc <= 0)
		return;
	gx_tn_launched(me, tn_now());
	struct gpu_tenant t;
	struct gpu_launch l;
	gx_tn_view(me, tn_now(), &t, &l);
	GX_CHECK(l.lc_tenants == 1 && l.be_tenants == 1 && l.lc_inflight == 3 && l.be_inflight == 1 && t.inflight == 1 &&
			 t.cls == GPU_CLASS_BE && t.nr_procs == 1 && t.tgid == (uint32_t)getpid() && l.lc_last_launch_ns,
		 "view: 1 LC tenant with 3 in flight, this BE tenant with 1 (lc %u/%u be %u/%u)", l.lc_tenants,
		 l.lc_inflight, l.be_tenants, l.be_inflight);
	/* its policy map files go with it */
	char p[200];
	snprintf(p, sizeof(p), "%s/%d-pol.bss", dir, (int)lc);
	FILE *f = fopen(p, "w");
	if (f)
		fclose(f);
	uint32_t gen = gx_tn_gen(me);
	reap_child(lc, fd);
	int n = gx_tn_tick(me, tn_now() + 200000000ull);
	gx_tn_view(me, tn_now(), &t, &l);
	GX_CHECK(n == 1 && l.lc_tenants == 0 && l.lc_inflight == 0 && gx_tn_gen(me) != gen,
		 "kill -9 of the LC process: reaped by the next tick (%d), its launches no longer count", n);
	GX_CHECK(access(p, F_OK) && errno == ENOENT, "its policy map files are removed");
	gx_tn_close(me);
	GX_CHECK(!exists(GX_TN_TABLE_FILE), "table gone");
}

/* Turns among BE tenants: every process sees the same ranks (table order)
 * and when the other BE tenants last launched. */
static void test_be_rank(void)
{
	struct gx_tn *a = join("bea", GPU_CLASS_BE, NULL);
	int fd;
	pid_t b = child("beb", GPU_CLASS_BE, 2, &fd);
	struct gx_tn *c = join("bec", GPU_CLASS_BE, NULL);
	GX_CHECK(a && b > 0 && c, "three BE tenants: two here, one in a child with 2 in flight");
	if (!a || b <= 0 || !c)
		return;
	uint64_t t0 = tn_now();
	gx_tn_launched(a, t0);
	struct gpu_tenant t;
	struct gpu_launch l;
	gx_tn_view(a, tn_now(), &t, &l);
	uint32_t ra = l.be_rank;
	uint64_t la = l.be_other_last_launch_ns;
	gx_tn_view(c, tn_now(), &t, &l);
	GX_CHECK(l.be_tenants == 3 && ra == 0 && l.be_rank == 2 && l.be_inflight == 3,
		 "ranks by table order: first 0, third 2 (%u, %u of %u)", ra, l.be_rank, l.be_tenants);
	GX_CHECK(la && la < t0 && l.be_other_last_launch_ns == t0,
		 "other BE tenants' latest launch: the child's for the first, the first's for the third");
	reap_child(b, fd);
	gx_tn_tick(c, tn_now() + 200000000ull);
	gx_tn_view(c, tn_now(), &t, &l);
	GX_CHECK(l.be_tenants == 2 && l.be_rank == 1, "the child reaped: the third is rank 1 of 2 (%u of %u)", l.be_rank,
		 l.be_tenants);
	gx_tn_view(a, tn_now(), &t, &l);
	GX_CHECK(l.be_other_last_launch_ns == 0, "the first sees no other launch (the third never launched)");
	gx_tn_close(c);
	gx_tn_close(a);
	gx_tn_gc();
}

static void test_gc_all_dead(void)
{
	int fd;
	pid_t c = child("lone", GPU_CLASS_BE, 1, &fd);
	GX_CHECK(c > 0 && exists(GX_TN_TABLE_FILE), "a lone tenant in a child");
	reap_child(c, fd);
	GX_CHECK(exists(GX_TN_TABLE_FILE), "killed: its table stays behind");
	GX_CHECK(gx_tn_gc() == 1 && !exists(GX_TN_TABLE_FILE), "gx_tn_gc reaps it and removes the table");
}

/* A child takes the table's lock and dies holding it. */
static void test_robust(void)
{
	struct gx_tn *me = join("r", GPU_CLASS_BE, NULL);
	pid_t pid = fork();
	if (pid == 0) {
		struct tn_table *t;
		int fd;
		char path[400];
		if (tn_map(0, &t, &fd, path, sizeof(path)) || tn_lock(t))
			_exit(1);
		_exit(0); /* with the lock held */
	}
	int st = -1;
	waitpid(pid, &st, 0);
	GX_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a child took the lock and died holding it");
	GX_CHECK(gx_tn_set("r", GPU_CLASS_LC, 2) == 0 && gx_tn_window(me) == 2,
		 "the next taker gets the lock (robust: EOWNERDEAD made consistent)");
	gx_tn_close(me);
	GX_CHECK(!exists(GX_TN_TABLE_FILE), "and leaving still works");
}

/* pid reuse: an entry whose start time is not its process's is reaped. */
static void test_pid_reuse(void)
{
	struct gx_tn *me = join("p", GPU_CLASS_BE, NULL);
	int fd;
	pid_t c = child("q", GPU_CLASS_BE, 0, &fd);
	struct tn_table *t = me->t;
	uint32_t slot = GX_TN_MAX_PROCS;
	for (uint32_t i = 0; i < t->hiwater; i++)
		if (t->procs[i].pid == (uint32_t)c)
			slot = i;
	GX_CHECK(slot < GX_TN_MAX_PROCS && t->procs[slot].start_time, "the child's entry has its start time");
	if (slot < GX_TN_MAX_PROCS)
		t->procs[slot].start_time += 12345; /* as if the pid now named another process */
	int n = gx_tn_gc();
	struct gx_tn_info in[4];
	int k = gx_tn_list(in, 4, 0);
	/* the child may already have joined again (its tick, under a loaded
	 * machine's scheduling): then it is listed too, as a new entry */
	bool p_kept = false;
	for (int i = 0; i < k && i < 4; i++)
		p_kept |= !strcmp(in[i].name, "p");
	GX_CHECK(n == 1 && p_kept && k <= 2, "a live pid with another start time is reaped (%d)", n);
	/* the child notices at its next tick and joins again */
	usleep(300000);
	k = gx_tn_list(in, 4, 0);
	GX_CHECK(k == 2, "the process taken for dead joins again at its next tick (%d tenants)", k);
	reap_child(c, fd);
	gx_tn_close(me);
	gx_tn_gc();
}

/* A stopped process stops counting after its lease, without being reaped. */
static void test_lease(void)
{
	struct gx_tn *me = join("be", GPU_CLASS_BE, NULL);
	int fd;
	pid_t c = child("lc", GPU_CLASS_LC, 2, &fd);
	struct gpu_tenant t;
	struct gpu_launch l;
	gx_tn_view(me, tn_now(), &t, &l);
	GX_CHECK(l.lc_inflight == 2, "LC child: 2 in flight");
	kill(c, SIGSTOP);
	usleep(400000); /* lease 200 ms */
	gx_tn_view(me, tn_now(), &t, &l);
	struct gx_tn_info in[4];
	int k = gx_tn_list(in, 4, 1);
	GX_CHECK(l.lc_inflight == 0 && l.lc_tenants == 0 && k == 2,
		 "stopped past its lease: not counted (lc in flight %u), not reaped (%d tenants)", l.lc_inflight, k);
	kill(c, SIGCONT);
	usleep(100000);
	gx_tn_view(me, tn_now(), &t, &l);
	GX_CHECK(l.lc_inflight == 2, "continued: counted again");
	reap_child(c, fd);
	gx_tn_close(me);
	gx_tn_gc();
}

static void test_wait(void)
{
	struct gx_tn *me = join("w", GPU_CLASS_BE, NULL);
	uint32_t gen = gx_tn_gen(me);
	uint64_t t0 = tn_now();
	GX_CHECK(gx_tn_wait(me, gen, 20000000ull) == -ETIMEDOUT && tn_now() - t0 >= 15000000ull,
		 "wait: no change, a timeout");
	pid_t pid = fork();
	if (pid == 0) {
		usleep(50000);
		_exit(gx_tn_set("w", -1, 9) ? 1 : 0);
	}
	t0 = tn_now();
	gen = gx_tn_gen(me);
	int r = gx_tn_wait(me, gen, 5000000000ull);
	uint64_t dt = tn_now() - t0;
	waitpid(pid, NULL, 0);
	GX_CHECK(r == 0 && dt < 2000000000ull && gx_tn_window(me) == 9,
		 "wait: a change from another process wakes it (%.1f ms)", dt / 1e6);
	gx_tn_close(me);
}

static void test_stats(void)
{
	struct gx_tn *me = join("lcsvc", GPU_CLASS_LC, NULL);
	uint64_t t = tn_now();
	/* bursts every 10 ms: one launch, done 1 ms later */
	for (int i = 0; i < 6; i++) {
		uint64_t s = t + (uint64_t)i * 10000000ull;
		gx_tn_launched(me, s);
		gx_tn_completed(me, s, s + 1000000ull);
	}
	struct gpu_tenant tt;
	struct gpu_launch l;
	gx_tn_view(me, t + 50500000ull, &tt, &l);
	uint64_t want = t + 60000000ull;
	GX_CHECK(l.lc_next_ns == want && l.lc_p50_ns == 1000000ull && l.lc_p99_ns == 1000000ull,
		 "regular bursts: the next one predicted at +10 ms (off by %lld ns), latency 1 ms",
		 (long long)(l.lc_next_ns - want));
	gx_tn_view(me, t + 80000000ull, &tt, &l);
	GX_CHECK(l.lc_next_ns == 0, "a prediction past due by more than a quarter period is dropped");
	gx_tn_close(me);
	/* a BE process with 8 launches queued, completing every 2 ms */
	me = join("besvc", GPU_CLASS_BE, NULL);
	for (int i = 0; i < 8; i++)
		gx_tn_launched(me, t);
	for (int i = 0; i < 8; i++)
		gx_tn_completed(me, t, t + (uint64_t)(i + 1) * 2000000ull);
	struct gx_tn_info in;
	gx_tn_self(me, &in);
	GX_CHECK(in.kernel_ns == 2000000ull && in.completions == 8 && in.inflight == 0 && in.max_inflight == 8,
		 "GPU time per launch from back-to-back completions: %.3f ms", in.kernel_ns / 1e6);
	gx_tn_close(me);
	/* kernels of 1 ms, then of 5 ms: the samples 1..5 ms, their median 3 */
	me = join("bemix", GPU_CLASS_BE, NULL);
	for (int i = 0; i < 9; i++)
		gx_tn_launched(me, t);
	uint64_t at = t;
	for (int i = 0; i < 9; i++) {
		at += (i < 5 ? 1 : 5) * 1000000ull;
		gx_tn_completed(me, t, at);
	}
	gx_tn_self(me, &in);
	GX_CHECK(in.kernel_ns == 3000000ull, "kernels of 1 then 5 ms: the median sample, %.3f ms (not the lowest)",
		 in.kernel_ns / 1e6);
	gx_tn_close(me);
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/gx_tn.XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	setenv("GPUEXT_SHM_DIR", dir, 1);
	test_life();
	test_view_and_kill();
	test_be_rank();
	test_gc_all_dead();
	test_robust();
	test_pid_reuse();
	test_lease();
	test_wait();
	test_stats();
	GX_CHECK(!exists(GX_TN_TABLE_FILE), "nothing left in the folder");
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd)) {
	}
	return gx_test_done();
}
