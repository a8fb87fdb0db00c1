/* gx_vmtest.c — end-to-end checks of gpuext.ko (sim=1) inside the QEMU VM.
 *
 * Runs as root in the VM's initramfs. Each policy is attached by its real
 * loader (build/bin/gx_NAME, started with fork/exec and waited for until it
 * prints "attached"), the simulated backend is driven through the TEST
 * ioctls, and the decisions are read back (eviction list order, prefetch
 * results, queue attributes). Prints ok/not ok lines (tests/gx_test.h).
 * Usage: gx_vmtest BINDIR */
#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gx_kmod_ioc.h"
#include "gpuext/gpu_ext.h"
#include "tests/gx_test.h"

#define MB (1ULL << 20)
#define R(i) (0x40000000ULL + (unsigned long long)(i) * GPU_REGION_SIZE)

static int fd;
static const char *bindir;

/* ---- loaders ---- */

struct loader {
	char name[16];
	pid_t pid;
	int out; /* its stdout */
	char buf[4096];
	size_t len;
};

static int read_until(struct loader *l, const char *word, int timeout_ms)
{
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd p = { .fd = l->out, .events = POLLIN };
		ssize_t n;

		l->buf[l->len] = 0;
		if (word && strstr(l->buf, word))
			return 0;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		int left = timeout_ms - (int)((t1.tv_sec - t0.tv_sec) * 1000 +
					      (t1.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0 || poll(&p, 1, left) <= 0)
			return -ETIMEDOUT;
		n = read(l->out, l->buf + l->len, sizeof(l->buf) - 1 - l->len);
		if (n <= 0)
			return word ? -EPIPE : 0;
		l->len += n;
	}
}

/* Start gx_NAME with args; 0 once it printed "attached". */
static int loader_start(struct loader *l, const char *name, const char *const *args)
{
	char path[256];
	const char *argv[16];
	int p[2], i = 0;

	memset(l, 0, sizeof(*l));
	snprintf(l->name, sizeof(l->name), "%s", name);
	snprintf(path, sizeof(path), "%s/gx_%s", bindir, name);
	argv[i++] = path;
	while (args && *args && i < 15)
		argv[i++] = *args++;
	argv[i] = NULL;
	if (pipe(p))
		return -errno;
	l->pid = fork();
	if (l->pid == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		close(p[0]);
		execv(path, (char *const *)argv);
		_exit(127);
	}
	close(p[1]);
	l->out = p[0];
	if (read_until(l, "attached", 60000)) {
		int st;

		kill(l->pid, SIGKILL);
		waitpid(l->pid, &st, 0);
		close(l->out);
		char note[sizeof(l->buf)];

		snprintf(note, sizeof(note), "%s", l->buf);
		for (char *p = note; *p; p++)
			if (*p == '\n')
				*p = ' '; /* one "# " note line */
		printf("# gx_%s did not attach: %s\n", name, note);
		l->pid = 0;
		return -1;
	}
	return 0;
}

static struct gx_policy_info *policy_named(const char *name);

/* SIGINT, wait; 0 if it exited 0 after printing "detached". The kernel
 * unregisters a struct_ops link from a work item after the last fd is
 * closed, so also wait (up to 10 s) until the module no longer lists it. */
static int loader_stop(struct loader *l)
{
	int st = 0, i;

	if (!l->pid)
		return -1;
	kill(l->pid, SIGINT);
	read_until(l, "detached", 30000);
	read_until(l, NULL, 2000);
	waitpid(l->pid, &st, 0);
	close(l->out);
	l->pid = 0;
	for (i = 0; i < 100 && policy_named(l->name); i++)
		usleep(100000);
	if (policy_named(l->name))
		return -1;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(l->buf, "detached") ? 0 : -1;
}

/* Run a loader expected to fail; 1 if it failed (its output in out). */
static int loader_expect_fail(const char *name, const char *const *args, char *out, size_t outsz)
{
	struct loader l;

	if (loader_start(&l, name, args) == 0) {
		loader_stop(&l);
		return 0;
	}
	if (out)
		snprintf(out, outsz, "%s", l.buf);
	return 1;
}

/* ---- the simulator ---- */

static void sim_reset(unsigned int capacity)
{
	struct gx_test_config c;

	GX_PREP(c);
	c.capacity = capacity;
	if (gx_ioc(fd, GX_IOC_TEST_CONFIG, &c))
		printf("# reset failed: %s\n", strerror(errno));
}

static unsigned int space_for(pid_t tgid)
{
	struct gx_test_space s;

	GX_PREP(s);
	s.tgid = tgid;
	return gx_ioc(fd, GX_IOC_TEST_SPACE, &s) ? 0 : s.space_id;
}

static int faults(unsigned int space, const unsigned long long *vas, unsigned int n,
		  struct gx_fault_result *res)
{
	struct gx_test_fault f;

	GX_PREP(f);
	f.space_id = space;
	f.nr = n;
	f.vas = (unsigned long long)(uintptr_t)vas;
	f.results = (unsigned long long)(uintptr_t)res;
	return gx_ioc(fd, GX_IOC_TEST_FAULT, &f);
}

static int fault1(unsigned int space, unsigned long long va)
{
	return faults(space, &va, 1, NULL);
}

static struct gx_region_info lst[1024];

static unsigned int list_get(void)
{
	struct gx_test_list l;

	GX_PREP(l);
	l.nr = 1024;
	l.entries = (unsigned long long)(uintptr_t)lst;
	return gx_ioc(fd, GX_IOC_TEST_LIST, &l) ? 0 : l.nr;
}

static int resident(unsigned int space, unsigned long long va)
{
	unsigned int n = list_get(), i;

	for (i = 0; i < n; i++)
		if (lst[i].space_id == space && lst[i].va == va)
			return 1;
	return 0;
}

/* The list as "s:idx" tokens, head first, regions numbered by R(). */
static const char *list_str(void)
{
	static char s[2048];
	unsigned int n = list_get(), i;
	size_t o = 0;

	s[0] = 0;
	for (i = 0; i < n && o < sizeof(s) - 32; i++)
		o += snprintf(s + o, sizeof(s) - o, "%s%u:%llu", i ? " " : "", lst[i].space_id,
			      (lst[i].va - R(0)) / GPU_REGION_SIZE);
	return s;
}

static struct gx_stats stats(void)
{
	struct gx_stats st;

	GX_PREP(st);
	gx_ioc(fd, GX_IOC_STATS, &st);
	return st;
}

static struct gx_policy_info pinfo[16];

static int policies(void)
{
	struct gx_policies p;

	GX_PREP(p);
	p.nr = 16;
	p.entries = (unsigned long long)(uintptr_t)pinfo;
	return gx_ioc(fd, GX_IOC_POLICIES, &p) ? -1 : (int)p.nr;
}

static struct gx_policy_info *policy_named(const char *name)
{
	int n = policies(), i;

	for (i = 0; i < n; i++)
		if (!strcmp(pinfo[i].name, name))
			return &pinfo[i];
	return NULL;
}

static pid_t sleeper(void)
{
	pid_t p = fork();

	if (p == 0) {
		for (;;)
			pause();
	}
	return p;
}

static void fault_range(unsigned int space, int from, int to)
{
	for (int i = from; i < to; i++)
		fault1(space, R(i));
}

/* ---- checks ---- */

static void t_default_fifo(pid_t a)
{
	unsigned int s;

	sim_reset(4);
	s = space_for(a);
	fault_range(s, 0, 6);
	char want[128];
	snprintf(want, sizeof(want), "%u:2 %u:3 %u:4 %u:5", s, s, s, s);
	GX_CHECK(!strcmp(list_str(), want), "no policy: FIFO by activation (%s)", list_str());
}

static void t_fifo(pid_t a)
{
	struct loader l;
	unsigned long long calls = stats().policy_calls;
	char want[128];
	unsigned int s;

	if (loader_start(&l, "fifo", NULL)) {
		GX_CHECK(0, "fifo: loader attaches");
		return;
	}
	sim_reset(4);
	s = space_for(a);
	fault_range(s, 0, 6);
	fault1(s, R(3)); /* an access does not reorder */
	snprintf(want, sizeof(want), "%u:2 %u:3 %u:4 %u:5", s, s, s, s);
	GX_CHECK(!strcmp(list_str(), want), "fifo: evicts in activation order (%s)", list_str());
	GX_CHECK(stats().policy_calls > calls, "fifo: policy called");
	GX_CHECK(loader_stop(&l) == 0 && strstr(l.buf, "activate 6"),
		 "fifo: loader detaches and reports stats");
	GX_CHECK(stats().mem_policies == 0, "fifo: detached from the module");
}

static void t_lfu(pid_t a)
{
	const char *args[] = { "-t", "4", NULL };
	struct loader l;
	unsigned int s, i;
	int ok = 1;

	if (loader_start(&l, "lfu", args)) {
		GX_CHECK(0, "lfu: loader attaches");
		return;
	}
	sim_reset(8);
	s = space_for(a);
	fault_range(s, 0, 8);
	for (i = 0; i < 5; i++) {
		fault1(s, R(0));
		fault1(s, R(1));
	}
	fault_range(s, 8, 12);
	GX_CHECK(resident(s, R(0)) && resident(s, R(1)), "lfu: hot regions stay resident (%s)",
		 list_str());
	for (i = 2; i < 6; i++)
		ok &= !resident(s, R(i));
	GX_CHECK(ok, "lfu: cold regions evicted instead");
	GX_CHECK(list_get() == 8, "lfu: no region dropped or duplicated (never drop)");
	/* Critical pressure bypasses the policy: FIFO head goes. */
	struct gx_test_evict e;
	unsigned long long fb = stats().fallbacks;
	GX_PREP(e);
	e.nr = 1;
	e.pressure = GPU_PRESSURE_CRITICAL;
	GX_CHECK(gx_ioc(fd, GX_IOC_TEST_EVICT, &e) == 0 && e.nr == 1 &&
			 stats().fallbacks == fb + 1 && list_get() == 7,
		 "lfu: critical pressure falls back to FIFO");
	GX_CHECK(loader_stop(&l) == 0, "lfu: loader detaches");
}

static void t_mru(pid_t a)
{
	struct loader l;
	unsigned int s, i;
	int ok = 1;

	if (loader_start(&l, "mru", NULL)) {
		GX_CHECK(0, "mru: loader attaches");
		return;
	}
	sim_reset(8);
	s = space_for(a);
	fault_range(s, 0, 9);
	for (i = 0; i < 7; i++)
		ok &= resident(s, R(i));
	GX_CHECK(ok && !resident(s, R(7)) && resident(s, R(8)),
		 "mru: the most recently used region is evicted (%s)", list_str());
	GX_CHECK(loader_stop(&l) == 0, "mru: loader detaches");
}

static void t_quota(pid_t a, pid_t b)
{
	const char *args[] = { "-q", "2", NULL };
	struct loader l;
	unsigned int sa, sb, i, n, na = 0;
	int ok = 1;

	if (loader_start(&l, "quota", args)) {
		GX_CHECK(0, "quota: loader attaches");
		return;
	}
	sim_reset(8);
	sa = space_for(a);
	sb = space_for(b);
	fault_range(sb, 0, 4);
	fault_range(sa, 10, 16);
	for (i = 0; i < 4; i++)
		ok &= resident(sb, R(i));
	n = list_get();
	for (i = 0; i < n; i++)
		na += lst[i].space_id == sa;
	GX_CHECK(ok && na == 4 && n == 8,
		 "quota: the process over its quota pays the evictions (%s)", list_str());
	GX_CHECK(loader_stop(&l) == 0 && strstr(l.buf, "over "), "quota: loader detaches");
}

static void t_seq(pid_t a)
{
	struct gx_fault_result r;
	unsigned long long va;
	struct loader l;
	unsigned int s;

	if (loader_start(&l, "seq", NULL)) {
		GX_CHECK(0, "seq: loader attaches");
		return;
	}
	sim_reset(16);
	s = space_for(a);
	va = R(0) + 300 * GPU_PAGE_SIZE;
	GX_CHECK(faults(s, &va, 1, &r) == 0 && r.first == 300 && r.outer == 512,
		 "seq: prefetches the rest of the region (%u..%u)", r.first, r.outer);
	GX_CHECK(r.nr_migrate == 1 && r.migrate[0].va == R(1) && r.migrate[0].len == 2 * MB &&
			 resident(s, R(1)),
		 "seq: fetches the next region from the upper half");
	GX_CHECK(loader_stop(&l) == 0, "seq: loader detaches");
}

static void t_stride(pid_t a)
{
	const char *args[] = { "-d", "2", "-s", "65536", NULL };
	struct gx_fault_result r[4];
	unsigned long long vas[4], base = 0x80000000ULL, st = 4 * MB;
	struct loader l;
	unsigned int s, i;

	if (loader_start(&l, "stride", args)) {
		GX_CHECK(0, "stride: loader attaches");
		return;
	}
	sim_reset(64);
	s = space_for(a);
	for (i = 0; i < 4; i++)
		vas[i] = base + i * st;
	GX_CHECK(faults(s, vas, 4, r) == 0, "stride: faults served");
	GX_CHECK(r[0].nr_migrate == 0 && r[1].nr_migrate == 0, "stride: no guess before the stride repeats");
	GX_CHECK(r[2].nr_migrate == 2 && r[2].migrate[0].va == base + 3 * st &&
			 r[2].migrate[1].va == base + 4 * st && r[2].migrate[0].len == 65536,
		 "stride: requests the predicted ranges");
	GX_CHECK(r[3].nr_migrate == 2 && r[3].migrate[0].va == base + 4 * st &&
			 r[3].migrate[1].va == base + 5 * st,
		 "stride: keeps predicting along the stride");
	GX_CHECK(resident(s, base + 5 * st), "stride: predicted region made resident");
	GX_CHECK(loader_stop(&l) == 0, "stride: loader detaches");
}

static void t_tree(pid_t a)
{
	const char *args[] = { "-a", "0", NULL };
	struct gx_fault_result r[3];
	unsigned long long vas[3];
	struct loader l;
	unsigned int s, i;

	if (loader_start(&l, "tree", args)) {
		GX_CHECK(0, "tree: loader attaches");
		return;
	}
	sim_reset(16);
	s = space_for(a);
	for (i = 0; i < 3; i++)
		vas[i] = R(0) + i * GPU_PAGE_SIZE;
	GX_CHECK(faults(s, vas, 3, r) == 0 && r[0].first == 0 && r[0].outer == 1 &&
			 r[1].first == 0 && r[1].outer == 2 && r[2].first == 0 && r[2].outer == 4,
		 "tree: grows to the largest subregion above the threshold (%u-%u %u-%u %u-%u)",
		 r[0].first, r[0].outer, r[1].first, r[1].outer, r[2].first, r[2].outer);
	GX_CHECK(loader_stop(&l) == 0, "tree: loader detaches");

	/* Adaptive: an ascending run lowers the threshold 10 points a step. */
	if (loader_start(&l, "tree", NULL)) {
		GX_CHECK(0, "tree: adaptive loader attaches");
		return;
	}
	sim_reset(16);
	s = space_for(a);
	GX_CHECK(faults(s, vas, 3, r) == 0 && r[0].outer == 1 && r[1].first == 0 && r[1].outer == 4 &&
			 r[2].first == 0 && r[2].outer == 8,
		 "tree: adaptive mode grows faster on a run (%u-%u %u-%u %u-%u)", r[0].first,
		 r[0].outer, r[1].first, r[1].outer, r[2].first, r[2].outer);
	GX_CHECK(loader_stop(&l) == 0, "tree: adaptive loader detaches");
}

static int queue(int op, pid_t tgid, int prio, unsigned long long *id, struct gx_test_queue *out)
{
	struct gx_test_queue q;
	int ret;

	GX_PREP(q);
	q.op = op;
	q.tgid = tgid;
	q.priority = prio;
	q.queue_id = id ? *id : 0;
	ret = gx_ioc(fd, GX_IOC_TEST_QUEUE, &q);
	if (!ret && id)
		*id = q.queue_id;
	if (out)
		*out = q;
	return ret;
}

static void t_prio(pid_t a)
{
	const char *args[] = { "-b", "1000", "-m", "2", NULL };
	struct gx_test_queue q0, q7;
	unsigned long long id0 = 0, id7 = 0, id3 = 0;
	struct gx_queue_attr qa;
	struct loader l;

	if (loader_start(&l, "prio", args)) {
		GX_CHECK(0, "prio: loader attaches");
		return;
	}
	sim_reset(16);
	GX_CHECK(queue(GX_TQ_CREATE, a, 0, &id0, &q0) == 0 && q0.timeslice_us == 1000 &&
			 q0.interleave == GPU_IL_LOW,
		 "prio: priority 0 gets the base timeslice (%u us)", q0.timeslice_us);
	GX_CHECK(queue(GX_TQ_CREATE, a, 7, &id7, &q7) == 0 && q7.timeslice_us == 8000 &&
			 q7.interleave == GPU_IL_HIGH && q7.granted_priority == 7,
		 "prio: priority 7 gets 8x and high interleave (%u us)", q7.timeslice_us);
	GX_CHECK(queue(GX_TQ_CREATE, a, 3, &id3, NULL) == -EPERM, "prio: a rejected bind is refused");
	GX_CHECK(stats().queues_rejected >= 1, "prio: rejection counted");
	GX_CHECK(queue(GX_TQ_DESTROY, 0, 0, &id0, NULL) == 0 &&
			 queue(GX_TQ_CREATE, a, 3, &id3, NULL) == 0,
		 "prio: task_destroy frees the slot");
	GX_PREP(qa);
	qa.queue_id = id7;
	qa.op = GX_QATTR_SET;
	qa.mask = GX_QATTR_F_TIMESLICE;
	qa.timeslice_us = 5000;
	GX_CHECK(gx_ioc(fd, GX_IOC_QUEUE_ATTR, &qa) == 0 && qa.timeslice_us == 5000,
		 "prio: queue attributes set through the ioctl");
	qa.timeslice_us = 1;
	GX_CHECK(gx_ioc(fd, GX_IOC_QUEUE_ATTR, &qa) == -EINVAL, "prio: out-of-range timeslice refused");
	GX_CHECK(loader_stop(&l) == 0 && strstr(l.buf, "rejected 1"), "prio: loader detaches");
	sim_reset(16);
}

static void t_scoped(pid_t a, pid_t b)
{
	char pa[16], pb[16], want[128];
	const char *la[] = { "-p", pa, NULL }, *lb[] = { "-p", pb, NULL };
	struct loader l1, l2;
	struct gx_policy_info *p;
	unsigned long long fifo_calls, mru_calls;
	unsigned int sa, sb;

	snprintf(pa, sizeof(pa), "%d", a);
	snprintf(pb, sizeof(pb), "%d", b);
	if (loader_start(&l1, "fifo", la) || loader_start(&l2, "mru", lb)) {
		GX_CHECK(0, "scoped: two loaders attach to two processes");
		loader_stop(&l1);
		return;
	}
	GX_CHECK(stats().mem_policies == 2, "scoped: two memory policies attached at once");
	p = policy_named("fifo");
	GX_CHECK(p && p->scope == GPU_SCOPE_TGID && p->scope_id == (unsigned)a, "scoped: fifo scoped to pid %d", a);
	GX_CHECK(loader_expect_fail("lfu", la, NULL, 0), "scoped: a second policy for the same process is refused");
	sim_reset(64);
	sa = space_for(a);
	sb = space_for(b);
	fault_range(sa, 0, 2);
	fault_range(sb, 10, 12);
	snprintf(want, sizeof(want), "%u:11 %u:10 %u:0 %u:1", sb, sb, sa, sa);
	GX_CHECK(!strcmp(list_str(), want), "scoped: each process gets its own policy (%s)", list_str());
	p = policy_named("fifo");
	fifo_calls = p ? p->calls : 0;
	p = policy_named("mru");
	mru_calls = p ? p->calls : 0;
	GX_CHECK(fifo_calls == 2 && mru_calls == 2, "scoped: calls go to the right policy (%llu, %llu)",
		 fifo_calls, mru_calls);
	GX_CHECK(loader_stop(&l1) == 0 && loader_stop(&l2) == 0, "scoped: both detach");
}

static void t_cgroup(void)
{
	const char *args[] = { "-c", "/sys/fs/cgroup/gxt", NULL };
	struct loader l;
	char buf[32];
	unsigned int s;
	pid_t c;
	int cfd;

	mkdir("/sys/fs/cgroup", 0755);
	if (mount("none", "/sys/fs/cgroup", "cgroup2", 0, NULL) && errno != EBUSY) {
		GX_CHECK(0, "cgroup: cgroup2 mounts (%s)", strerror(errno));
		return;
	}
	mkdir("/sys/fs/cgroup/gxt", 0755);
	c = sleeper();
	cfd = open("/sys/fs/cgroup/gxt/cgroup.procs", O_WRONLY);
	snprintf(buf, sizeof(buf), "%d\n", c);
	GX_CHECK(cfd >= 0 && write(cfd, buf, strlen(buf)) > 0, "cgroup: process moved into a cgroup");
	if (cfd >= 0)
		close(cfd);
	if (loader_start(&l, "mru", args)) {
		GX_CHECK(0, "cgroup: mru attaches to the cgroup");
	} else {
		sim_reset(64);
		s = space_for(c);
		fault_range(s, 0, 3);
		struct gx_policy_info *p = policy_named("mru");
		GX_CHECK(p && p->scope == GPU_SCOPE_CGROUP && p->calls == 3 && list_get() == 3 &&
				 lst[0].va == R(2),
			 "cgroup: the cgroup's policy runs for its processes (%s)", list_str());
		unsigned int s2 = space_for(getpid());
		unsigned long long before = p ? p->calls : 0;
		fault1(s2, R(20));
		p = policy_named("mru");
		GX_CHECK(p && p->calls == before, "cgroup: processes outside the cgroup are untouched");
		GX_CHECK(loader_stop(&l) == 0, "cgroup: loader detaches");
	}
	kill(c, SIGKILL);
	waitpid(c, NULL, 0);
}

static void t_bad(pid_t a)
{
	struct loader l;
	struct gx_policy_info *p;
	char want[128];
	unsigned int s, i;

	if (loader_start(&l, "bad", NULL)) {
		GX_CHECK(0, "bad: misbehaving policy attaches");
		return;
	}
	sim_reset(4);
	s = space_for(a);
	for (i = 0; i < 4; i++)
		fault_range(s, 0, 6);
	snprintf(want, sizeof(want), "%u:2 %u:3 %u:4 %u:5", s, s, s, s);
	GX_CHECK(!strcmp(list_str(), want), "bad: garbage decisions fall back to FIFO (%s)", list_str());
	p = policy_named("bad");
	GX_CHECK(p && p->disabled && p->errors >= 16, "bad: policy disabled after repeated errors");
	GX_CHECK(stats().policy_errors >= 16, "bad: errors counted");
	GX_CHECK(loader_stop(&l) == 0 && strstr(l.buf, "disabled by the kernel after"),
		 "bad: loader detaches and reports that the kernel disabled it");
}

/* An unprivileged process (nobody) may hint its own memory only. */
static void t_unpriv(void)
{
	unsigned int root_space = 0;
	struct gx_register_as ra;
	int st;
	pid_t c;

	GX_PREP(ra);
	if (gx_ioc(fd, GX_IOC_REGISTER_AS, &ra) == 0)
		root_space = ra.space_id;
	GX_CHECK(root_space != 0, "unpriv: root registers its address space");
	fflush(stdout);
	c = fork();
	if (c == 0) {
		struct gx_range rg = { 0x10000000, 1 << 20 };
		struct gx_prefetch pf;
		struct gx_test_config tc;
		int ufd, ret;

		gx_test_failed = 0; /* count only this child's checks */
		if (setgroups(0, NULL) || setgid(65534) || setuid(65534)) {
			printf("not ok - unpriv: setuid(nobody) failed: %s\n", strerror(errno));
			_exit(1);
		}
		ufd = gx_dev_open();
		GX_CHECK(ufd >= 0, "unpriv: nobody opens /dev/gpuext");
		GX_PREP(pf);
		pf.space_id = root_space;
		pf.nr_ranges = 1;
		pf.ranges = (unsigned long long)(uintptr_t)&rg;
		ret = gx_ioc(ufd, GX_IOC_PREFETCH, &pf);
		GX_CHECK(ret == -EPERM, "unpriv: hinting another process's memory is refused (%d)", ret);
		GX_PREP(ra);
		ra.pid = 1;
		GX_CHECK(gx_ioc(ufd, GX_IOC_REGISTER_AS, &ra) == -EPERM,
			 "unpriv: registering another process's address space is refused");
		GX_PREP(ra);
		GX_CHECK(gx_ioc(ufd, GX_IOC_REGISTER_AS, &ra) == 0, "unpriv: own address space registers");
		pf.space_id = ra.space_id;
		GX_CHECK(gx_ioc(ufd, GX_IOC_PREFETCH, &pf) == 0, "unpriv: own memory may be hinted");
		GX_PREP(tc);
		tc.capacity = 4;
		GX_CHECK(gx_ioc(ufd, GX_IOC_TEST_CONFIG, &tc) == -EPERM, "unpriv: TEST commands refused");
		char why[4096] = "";

		GX_CHECK(loader_expect_fail("fifo", NULL, why, sizeof(why)) &&
				 strstr(why, "Operation not permitted"),
			 "unpriv: attaching a policy is refused (EPERM)");
		GX_CHECK(stats().mem_policies == 0, "unpriv: nothing attached");
		_exit(gx_test_failed ? 1 : 0);
	}
	waitpid(c, &st, 0);
	GX_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "unpriv: checks ran as nobody");
}

/* gpuext.ko without the simulator, gx_consumer.ko registered as its only
 * backend (vm-init.sh): the ioctls reach that backend through its ops. */
#define GXC_QUEUE 0x4743 /* gx_consumer.c's queue */
static int t_consumer(void)
{
	struct gx_queue_attr qa;
	struct gx_test_config tc;
	struct gx_version v;

	GX_PREP(v);
	GX_CHECK(gx_ioc(fd, GX_IOC_VERSION, &v) == 0 && !strcmp(v.backend, "gx_consumer") &&
			 !(v.features & GX_FEAT_SIM),
		 "consumer: VERSION names the registered backend (%s), no TEST group", v.backend);
	GX_PREP(qa);
	qa.queue_id = GXC_QUEUE;
	qa.op = GX_QATTR_GET;
	GX_CHECK(gx_ioc(fd, GX_IOC_QUEUE_ATTR, &qa) == 0 && qa.timeslice_us == 1024 &&
			 qa.interleave == GPU_IL_MEDIUM,
		 "consumer: QUEUE_ATTR get answered by the backend's queue (%u us)", qa.timeslice_us);
	qa.op = GX_QATTR_SET;
	qa.mask = GX_QATTR_F_TIMESLICE;
	qa.timeslice_us = 2048;
	GX_CHECK(gx_ioc(fd, GX_IOC_QUEUE_ATTR, &qa) == 0 && qa.timeslice_us == 2048,
		 "consumer: QUEUE_ATTR set reaches the backend");
	qa.timeslice_us = 1;
	GX_CHECK(gx_ioc(fd, GX_IOC_QUEUE_ATTR, &qa) == -EINVAL, "consumer: out-of-range timeslice refused");
	qa.op = GX_QATTR_GET;
	qa.queue_id = GXC_QUEUE + 1;
	GX_CHECK(gx_ioc(fd, GX_IOC_QUEUE_ATTR, &qa) == -ENOENT, "consumer: unknown queue -> ENOENT");
	GX_PREP(tc);
	tc.capacity = 8;
	GX_CHECK(gx_ioc(fd, GX_IOC_TEST_CONFIG, &tc) == -ENODEV, "consumer: TEST group -> ENODEV");
	close(fd);
	return gx_test_done();
}

int main(int argc, char **argv)
{
	struct gx_version v;
	pid_t a, b;

	setvbuf(stdout, NULL, _IOLBF, 0);
	bindir = argc > 1 && strcmp(argv[1], "--consumer") ? argv[1] : "/bin";
	fd = gx_dev_open();
	GX_CHECK(fd >= 0, "vm: /dev/gpuext opens");
	if (fd < 0)
		return 1;
	if (argc > 1 && !strcmp(argv[1], "--consumer"))
		return t_consumer();
	GX_PREP(v);
	GX_CHECK(gx_ioc(fd, GX_IOC_VERSION, &v) == 0 && v.abi_version == GX_ABI_VERSION &&
			 !strcmp(v.backend, "sim"),
		 "vm: ABI version %u, simulated backend", v.abi_version);
	/* Extensible structs: a newer caller's larger struct with a zero tail
	 * is accepted and its tail left alone; a non-zero tail is E2BIG. */
	{
		struct {
			struct gx_stats st;
			unsigned char tail[16];
		} big;
		memset(&big, 0, sizeof(big));
		big.st.size = sizeof(big);
		big.st.version = GX_ABI_VERSION;
		GX_CHECK(gx_ioc(fd, GX_IOC_STATS, &big) == 0 && big.st.size == sizeof(big) &&
				 big.tail[0] == 0,
			 "abi: larger struct with zero tail accepted");
		big.tail[3] = 1;
		GX_CHECK(gx_ioc(fd, GX_IOC_STATS, &big) == -E2BIG, "abi: non-zero unknown tail -> E2BIG");
		big.st.size = 12;
		GX_CHECK(gx_ioc(fd, GX_IOC_STATS, &big) == -EINVAL, "abi: truncated struct -> EINVAL");
		big.st.size = sizeof(struct gx_stats);
		big.st.version = 2;
		GX_CHECK(gx_ioc(fd, GX_IOC_STATS, &big) == -EPROTO, "abi: unknown version -> EPROTO");
	}
	a = sleeper();
	b = sleeper();
	t_default_fifo(a);
	t_fifo(a);
	t_lfu(a);
	t_mru(a);
	t_quota(a, b);
	t_seq(a);
	t_stride(a);
	t_tree(a);
	t_prio(a);
	t_scoped(a, b);
	t_cgroup();
	t_bad(a);
	t_unpriv();
	sim_reset(64);
	kill(a, SIGKILL);
	kill(b, SIGKILL);
	waitpid(a, NULL, 0);
	waitpid(b, NULL, 0);
	close(fd);
	return gx_test_done();
}
