/* test_tenant_policy — the tenant scheduling policies (gpu_sched_ops
 * .task_launch: gx_lcfirst, gx_tbucket, gx_lcslo) in the user-space
 * executor, on made-up views of the GPU: the decision each rule takes,
 * the same decisions as native code and interpreted, and a policy that
 * misbehaves disabled after 16 errors (launches then follow the default). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuext/gpu_ext.h"
#include "hostexec/gx_hostexec.h"
#include "tests/gx_test.h"

#define US 1000ull
#define MS 1000000ull

static const char *dir;

static struct gx_hx *load(const char *policy, const char *knobs, int native)
{
	char path[512];
	struct gx_hx_opts o = {.sz = sizeof(o), .tgid = 4242, .native = native};
	struct gx_hx *hx = gx_hx__new(&o);
	snprintf(path, sizeof(path), "%s/%s.bpf.o", dir, policy);
	int err = gx_hx__load(hx, path, knobs);
	if (err) {
		GX_CHECK(0, "load %s: %d", policy, err);
		gx_hx__free(hx);
		return NULL;
	}
	return hx;
}

/* A BE tenant with `inflight` launches; an LC tenant on the GPU. */
static void base(struct gpu_tenant *t, struct gpu_launch *l, uint64_t now)
{
	memset(t, 0, sizeof(*t));
	memset(l, 0, sizeof(*l));
	t->cls = GPU_CLASS_BE;
	t->tgid = 4242;
	t->kernel_ns = 100 * US;
	l->now_ns = now;
	l->lc_tenants = 1;
	l->be_tenants = 1;
}

/* "pass", "default" or "hold N" (µs) */
static const char *decide(struct gx_hx *hx, struct gpu_tenant *t, struct gpu_launch *l, struct gx_hx_gate *g)
{
	static char buf[64];
	int err = gx_hx__launch(hx, t, l, g);
	if (err)
		snprintf(buf, sizeof(buf), "err %d", err);
	else if (g->decision == GPU_DEFAULT)
		snprintf(buf, sizeof(buf), "default");
	else if (g->decision == GPU_BYPASS && !g->hold_us)
		snprintf(buf, sizeof(buf), "pass");
	else if (g->decision == GPU_BYPASS)
		snprintf(buf, sizeof(buf), "hold %llu", (unsigned long long)g->hold_us);
	else
		snprintf(buf, sizeof(buf), "failed");
	return buf;
}

static void test_lcfirst(int native)
{
	struct gx_hx *hx = load("gx_lcfirst", "guard_us=100,be_window=2,max_hold_ms=50", native);
	if (!hx)
		return;
	struct gpu_tenant t;
	struct gpu_launch l;
	struct gx_hx_gate g;
	const char *n = native ? "native" : "interp";
	uint64_t now = 10000 * MS;
	base(&t, &l, now);
	t.cls = GPU_CLASS_LC;
	l.lc_inflight = 3;
	GX_CHECK(!strcmp(decide(hx, &t, &l, &g), "pass"), "lcfirst (%s): an LC launch passes", n);
	base(&t, &l, now);
	l.lc_tenants = 0;
	GX_CHECK(!strcmp(decide(hx, &t, &l, &g), "default"), "lcfirst (%s): no LC tenant: the default", n);
	base(&t, &l, now);
	l.lc_inflight = 1;
	GX_CHECK(!strcmp(decide(hx, &t, &l, &g), "hold 1000"), "lcfirst (%s): LC in flight: BE held (%s)", n,
		 decide(hx, &t, &l, &g));
	base(&t, &l, now);
	l.lc_last_complete_ns = now - 40 * US;
	GX_CHECK(!strcmp(decide(hx, &t, &l, &g), "hold 61"), "lcfirst (%s): LC done 40 us ago: held for the guard's rest (%s)",
		 n, decide(hx, &t, &l, &g));
	base(&t, &l, now);
	l.lc_last_complete_ns = now - 400 * US;
	t.inflight = 2;
	GX_CHECK(!strcmp(decide(hx, &t, &l, &g), "hold 1000"), "lcfirst (%s): BE at its window of 2: held", n);
	t.inflight = 1;
	GX_CHECK(!strcmp(decide(hx, &t, &l, &g), "default"), "lcfirst (%s): BE under its window, LC idle: passes", n);
	base(&t, &l, now);
	l.lc_inflight = 1;
	l.held_ns = 50 * MS;
	GX_CHECK(!strcmp(decide(hx, &t, &l, &g), "pass"), "lcfirst (%s): held max_hold_ms: passes anyway", n);
	GX_CHECK(gx_hx__global(hx, "nr_starved") == 1 && gx_hx__global(hx, "nr_lc") == 1,
		 "lcfirst (%s): its counters (starved %lld)", n, (long long)gx_hx__global(hx, "nr_starved"));
	gx_hx__free(hx);
}

static void test_tbucket(int native)
{
	struct gx_hx *hx = load("gx_tbucket", "share_pct=50,burst_us=300,be_window=0", native);
	if (!hx)
		return;
	struct gpu_tenant t;
	struct gpu_launch l;
	struct gx_hx_gate g;
	const char *n = native ? "native" : "interp";
	uint64_t now = 10000 * MS;
	int passed = 0;
	base(&t, &l, now);
	for (int i = 0; i < 5; i++)
		passed += !strcmp(decide(hx, &t, &l, &g), "default");
	GX_CHECK(passed == 3, "tbucket (%s): a burst of 300 us pays 3 launches of 100 us (%d)", n, passed);
	const char *d = decide(hx, &t, &l, &g);
	GX_CHECK(!strcmp(d, "hold 201"), "tbucket (%s): then held until 100 us of tokens accrue at 50 %% (%s)", n, d);
	l.now_ns = now + 200 * US;
	GX_CHECK(!strcmp(decide(hx, &t, &l, &g), "default"), "tbucket (%s): 200 us later it passes", n);
	t.cls = GPU_CLASS_LC;
	GX_CHECK(!strcmp(decide(hx, &t, &l, &g), "default"), "tbucket (%s): LC is not limited", n);
	gx_hx__free(hx);
}

static void test_lcslo(int native)
{
	struct gx_hx *hx = load("gx_lcslo", "target_us=100,guard_us=20,max_window=4,margin_us=100,adjust_ms=10", native);
	if (!hx)
		return;
	struct gpu_tenant t;
	struct gpu_launch l;
	struct gx_hx_gate g;
	const char *n = native ? "native" : "interp";
	uint64_t now = 10000 * MS;
	base(&t, &l, now);
	const char *d = decide(hx, &t, &l, &g);
	GX_CHECK(!strcmp(d, "pass") && g.window == 4, "lcslo (%s): first call: window 4 published, passes (%s, %lld)", n, d,
		 (long long)g.window);
	/* LC arrives in 150 us; 1 BE launch of 100 us queued: 100 + 100 + 100 margin > 150 */
	base(&t, &l, now + 1 * MS);
	l.lc_next_ns = now + 1 * MS + 150 * US;
	l.be_queued_ns = 100 * US;
	t.inflight = 1;
	GX_CHECK(!strcmp(decide(hx, &t, &l, &g), "hold 1000"), "lcslo (%s): LC predicted before BE work drains: held", n);
	l.lc_next_ns = now + 1 * MS + 900 * US;
	GX_CHECK(!strcmp(decide(hx, &t, &l, &g), "pass"), "lcslo (%s): predicted later than the drain: passes", n);
	l.lc_inflight = 1;
	GX_CHECK(!strcmp(decide(hx, &t, &l, &g), "hold 1000"), "lcslo (%s): LC in flight: held", n);
	/* p99 over target: the window halves, the margin grows */
	base(&t, &l, now + 20 * MS);
	l.lc_p99_ns = 300 * US;
	decide(hx, &t, &l, &g);
	GX_CHECK(g.window == 2 && gx_hx__global(hx, "nr_tighten") == 1, "lcslo (%s): p99 300 us > 100: window 4 -> %lld", n,
		 (long long)g.window);
	base(&t, &l, now + 30 * MS);
	l.lc_p99_ns = 300 * US;
	decide(hx, &t, &l, &g);
	GX_CHECK(g.window == 2 && gx_hx__global(hx, "nr_tighten") == 2,
		 "lcslo (%s): still over: the window stays at min_window 2 (%lld)", n, (long long)g.window);
	base(&t, &l, now + 40 * MS);
	l.lc_p99_ns = 50 * US;
	decide(hx, &t, &l, &g);
	GX_CHECK(g.window == 3 && gx_hx__global(hx, "nr_relax") == 1, "lcslo (%s): p99 50 us: window grows to %lld", n,
		 (long long)g.window);
	base(&t, &l, now + 41 * MS);
	t.inflight = 3;
	GX_CHECK(!strcmp(decide(hx, &t, &l, &g), "hold 1000"), "lcslo (%s): at its window of 3: held", n);
	gx_hx__free(hx);
}

/* Rule 3: BE tenants take turns of turn_ms, out of turn held while the
 * owner works, passing when it has been idle for idle_us. */
static void test_lcslo_turns(int native)
{
	struct gx_hx *hx = load("gx_lcslo", "turn_ms=10,idle_us=200,max_hold_ms=100,max_window=4", native);
	if (!hx)
		return;
	struct gpu_tenant t;
	struct gpu_launch l;
	struct gx_hx_gate g;
	const char *n = native ? "native" : "interp";
	uint64_t now = 10000 * MS; /* turn 1000 of 10 ms: slot 1000 % 4 = 0 */
	base(&t, &l, now);
	l.be_tenants = 4;
	l.be_rank = 0;
	l.be_inflight = 3;
	l.be_other_last_launch_ns = now - 5 * US;
	GX_CHECK(!strcmp(decide(hx, &t, &l, &g), "pass"), "lcslo turns (%s): rank 0 in slot 0: passes", n);
	l.be_rank = 2;
	t.inflight = 1;
	const char *d = decide(hx, &t, &l, &g);
	GX_CHECK(!strcmp(d, "hold 1000"), "lcslo turns (%s): rank 2 while the owner works: held (%s)", n, d);
	GX_CHECK(gx_hx__global(hx, "nr_held_turn") == 1, "lcslo turns (%s): counted", n);
	/* 19.9 ms into the cycle, rank 2's turn is 0.1 ms away */
	l.now_ns = now + 19900 * US;
	l.be_other_last_launch_ns = l.now_ns - 5 * US;
	d = decide(hx, &t, &l, &g);
	GX_CHECK(!strcmp(d, "hold 101"), "lcslo turns (%s): held until its turn (%s)", n, d);
	l.now_ns = now + 20 * MS;
	GX_CHECK(!strcmp(decide(hx, &t, &l, &g), "pass"), "lcslo turns (%s): its turn: passes with others in flight", n);
	/* out of turn, the owner idle: work conserving */
	l.now_ns = now + 1 * MS;
	l.be_inflight = 1; /* its own */
	l.be_other_last_launch_ns = l.now_ns - 300 * US;
	GX_CHECK(!strcmp(decide(hx, &t, &l, &g), "pass"), "lcslo turns (%s): owner idle 300 us: passes out of turn", n);
	l.be_other_last_launch_ns = l.now_ns - 100 * US;
	GX_CHECK(!strcmp(decide(hx, &t, &l, &g), "hold 1000"), "lcslo turns (%s): owner launched 100 us ago: held", n);
	/* an LC burst just ended: everybody drained for it, not idle */
	l.be_other_last_launch_ns = l.now_ns - 900 * US;
	l.lc_last_complete_ns = l.now_ns - 50 * US;
	GX_CHECK(!strcmp(decide(hx, &t, &l, &g), "hold 1000"), "lcslo turns (%s): after an LC burst the owner goes first", n);
	/* no LC tenant: turns still hold, max_hold_ms ends them */
	base(&t, &l, now + 1 * MS);
	l.lc_tenants = 0;
	l.be_tenants = 2;
	l.be_rank = 1;
	l.be_inflight = 2;
	d = decide(hx, &t, &l, &g);
	GX_CHECK(!strcmp(d, "hold 1000"), "lcslo turns (%s): no LC, out of turn: held (%s)", n, d);
	l.held_ns = 100 * MS;
	GX_CHECK(!strcmp(decide(hx, &t, &l, &g), "default"), "lcslo turns (%s): held max_hold_ms: passes", n);
	gx_hx__free(hx);
	hx = load("gx_lcslo", "turn_ms=50,max_hold_ms=100", native);
	if (!hx)
		return;
	base(&t, &l, 10000 * MS); /* turn 25 ms (100 / 4): slot 400 % 4 = 0 */
	l.lc_tenants = 0;
	l.be_tenants = 4;
	l.be_rank = 1;
	l.be_inflight = 1;
	char d1[64];
	snprintf(d1, sizeof(d1), "%s", decide(hx, &t, &l, &g));
	l.now_ns += 24999 * US;
	const char *d2 = decide(hx, &t, &l, &g);
	GX_CHECK(!strcmp(d1, "hold 1000") && !strcmp(d2, "hold 2"),
		 "lcslo turns (%s): a cycle of 4 x 50 ms over max_hold_ms 100: turns of 25 ms (%s, then %s)", n, d1, d2);
	gx_hx__free(hx);
}

/* The same scripted views give the same decisions native and interpreted. */
static void test_same(void)
{
	const char *all[] = {"gx_lcfirst", "gx_tbucket", "gx_lcslo"};
	for (int p = 0; p < 3; p++) {
		char a[4096] = "", b[4096] = "";
		for (int native = 0; native < 2; native++) {
			struct gx_hx *hx = load(all[p], NULL, native);
			if (!hx)
				return;
			char *out = native ? b : a;
			uint64_t now = 5000 * MS;
			for (int i = 0; i < 200; i++) {
				struct gpu_tenant t;
				struct gpu_launch l;
				struct gx_hx_gate g;
				base(&t, &l, now + (uint64_t)i * 37 * US);
				t.inflight = (uint32_t)(i % 5);
				t.cls = i % 11 == 0 ? GPU_CLASS_LC : GPU_CLASS_BE;
				l.lc_inflight = (uint32_t)(i % 7 == 0);
				l.lc_last_complete_ns = l.now_ns - (uint64_t)(i % 13) * 20 * US;
				l.lc_next_ns = i % 3 ? l.now_ns + (uint64_t)(i % 9) * 100 * US : 0;
				l.be_queued_ns = (uint64_t)(i % 4) * 100 * US;
				l.lc_p99_ns = (uint64_t)(i % 6) * 100 * US;
				l.held_ns = (uint64_t)(i % 17) * 10 * MS;
				l.be_tenants = 1 + (uint32_t)(i % 4);
				l.be_rank = (uint32_t)(i % 3);
				l.be_inflight = t.inflight + (uint32_t)(i % 2);
				l.be_other_last_launch_ns = l.now_ns - (uint64_t)(i % 5) * 100 * US;
				const char *d = decide(hx, &t, &l, &g);
				snprintf(out + strlen(out), 4096 - strlen(out), "%c%lld", d[0] + (int)(g.hold_us % 7),
					 (long long)g.window);
			}
			struct gx_hx_stats st;
			gx_hx__stats(hx, &st);
			GX_CHECK(st.calls == 200 && st.native_calls == (native ? 200u : 0u),
				 "%s: 200 calls %s (%llu native)", all[p], native ? "native" : "interpreted",
				 (unsigned long long)st.native_calls);
			gx_hx__free(hx);
		}
		GX_CHECK(!strcmp(a, b), "%s: native and interpreter decide alike over 200 views", all[p]);
	}
}

static void test_bad(void)
{
	struct gx_hx *hx = load("tn_bad", NULL, 0);
	if (!hx)
		return;
	struct gpu_tenant t;
	struct gpu_launch l;
	struct gx_hx_gate g;
	base(&t, &l, 1000 * MS);
	int failed = 0, calls = 0;
	while (calls < 100 && !gx_hx__launch(hx, &t, &l, &g)) {
		calls++;
		failed += g.decision == -1;
	}
	/* two errors a call: a hold over GPU_HOLD_MAX_US and a bad return */
	GX_CHECK(failed == 8 && calls == 8 && !gx_hx__has_launch(hx),
		 "a policy erring on every call: disabled after 16 errors (%d calls, each failed)", calls);
	GX_CHECK(gx_hx__launch(hx, &t, &l, &g) == -ENOENT, "disabled: launches follow the runtime's default (-ENOENT)");
	gx_hx__free(hx);
	hx = load("gx_prio", NULL, 0);
	GX_CHECK(hx && !gx_hx__has_launch(hx) && gx_hx__launch(hx, &t, &l, &g) == -ENOENT,
		 "a sched policy without task_launch: no launch decisions");
	gx_hx__free(hx);
}

int main(int argc, char **argv)
{
	dir = argc > 1 ? argv[1] : getenv("GX_HB_DIR");
	if (!dir)
		dir = "build/hostbpf";
	if (!getenv("GPUEXT_JITLIB")) { /* next to ../../lib */
		char exe[512];
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (n > 0) {
			exe[n] = 0;
			char *s = strstr(exe, "/tests/tenant/");
			if (s) {
				strcpy(s, "/lib/libgxjit.so");
				setenv("GPUEXT_JITLIB", exe, 1);
			}
		}
	}
	for (int native = 0; native < 2; native++) {
		test_lcfirst(native);
		test_tbucket(native);
		test_lcslo(native);
		test_lcslo_turns(native);
	}
	test_same();
	test_bad();
	return gx_test_done();
}
