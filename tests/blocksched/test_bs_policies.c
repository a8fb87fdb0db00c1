/* test_bs_policies.c — the shipped schedule policies' decisions, run by the
 * reference interpreter on simulated launches.
 *   test_bs_policies POLICY_DIR
 * The simulator is event driven over the real claim protocol (bs_rt.c, the
 * host build of the code the kernels run): W workers on SMS SMs claim
 * chunks; a chunk takes the sum of its units' costs (ns of simulated time);
 * the policy's programs run where the transform calls them (exit after a
 * chunk, should_try_steal when the runtime asks), with the context the
 * transform fills and %globaltimer = the simulated clock. Checks: every
 * unit once in every launch; fixed_work is static and never steals; greedy
 * steals and beats owner-only on a clustered heavy tail; max_steals (knob 2)
 * never lets a worker steal a third chunk; latency_budget (knob 100 µs)
 * refuses exactly the workers older than the budget; adaptive gives no class
 * on the first launch and on even work, classes that grow with cost on a
 * heavy tail, and the launch after learning finishes sooner than the first
 * (heaviest chunks first). Each program also compiles with the native JIT
 * and, where time plays no part, decides as the interpreter does. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "blocksched/bs_rt_internal.h"
#include "devbpf/gx_bpf.h"
#include "tests/devbpf/interp_shim.h"
#include "tests/gx_test.h"

#define SMS 4
#define MAXW 64
#define MAXU 4096

static uint64_t now_ns; /* the simulated clock */

static bs_u64 sim_clock(void)
{
	return now_ns;
}

static uint64_t h_globaltimer(void *u, uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e)
{
	(void)u, (void)a, (void)b, (void)c, (void)d, (void)e;
	return now_ns;
}

/* The interpreter's helpers, with the simulated clock. */
static struct gx_bpf_helper_entry helpers[sizeof(gx_test_helpers) / sizeof(gx_test_helpers[0])];

struct policy {
	const char *name;
	struct gx_bpf_object *obj;
	const struct gx_bpf_prog *exitp, *stealp;
	struct gx_map **maps;
	size_t nmaps;
	struct gx_jit_map *jm;
};

static int run_prog(struct policy *p, const struct gx_bpf_prog *prog, struct gdev_ctx *c, uint32_t smid)
{
	gx_host_env.smid = smid;
	struct gx_bpf_interp_opts o = { .sz = sizeof(o), .helpers = helpers,
					.nr_helpers = sizeof(helpers) / sizeof(helpers[0]), .user = p->jm,
					.map_addr = gx_test_map_addr };
	uint64_t r = 0;
	if (gx_bpf_interp_run(gx_bpf_prog__insns(prog), gx_bpf_prog__insn_cnt(prog), (uint64_t)(uintptr_t)c, &o,
			      &r))
		return -1;
	return (int)r;
}

/* A global variable of the policy (its .data bytes in the host map). */
static void *var(struct policy *p, const char *name)
{
	for (size_t i = 0; i < gx_bpf_object__var_cnt(p->obj); i++) {
		const char *n;
		size_t map;
		uint32_t off, size;
		if (!gx_bpf_object__var(p->obj, i, &n, &map, &off, &size) && !strcmp(n, name) && map < p->nmaps)
			return (char *)gx_map__shard_elem(p->maps[map], 0, 0) + off;
	}
	return NULL;
}

static int load(struct policy *p, const char *dir, const char *name)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s.bpf.o", dir, name);
	memset(p, 0, sizeof(*p));
	p->name = name;
	p->obj = gx_bpf_object__open_file(path, NULL);
	struct gx_bpf_verify_opts vo = { .sz = sizeof(vo), .quiet = true };
	if (!p->obj || gx_bpf_object__verify(p->obj, &vo))
		return -1;
	for (const struct gx_bpf_prog *pr = NULL; (pr = gx_bpf_object__next_prog(p->obj, pr));) {
		if (gx_bpf_prog__hook(pr) == GX_BPF_HOOK_SCHED_EXIT)
			p->exitp = pr;
		if (gx_bpf_prog__hook(pr) == GX_BPF_HOOK_SCHED_STEAL)
			p->stealp = pr;
	}
	if (gx_jit_object_maps(p->obj, 0, SMS, &p->maps, &p->nmaps))
		return -1;
	p->jm = calloc(p->nmaps ? p->nmaps : 1, sizeof(*p->jm));
	for (size_t i = 0; i < p->nmaps; i++)
		p->jm[i].host = p->maps[i];
	return 0;
}

static void unload(struct policy *p)
{
	gx_jit_object_maps_free(p->maps, p->nmaps);
	free(p->jm);
	gx_bpf_object__close(p->obj);
}

/* ---- the simulator ---- */
struct sim {
	unsigned total, chunk, nw;
	const uint64_t *cost; /* ns per unit */
	uint64_t launch_id;
	uint64_t kernel_id;   /* 0: 0x1234 */
	int steal_never;      /* owner-only: every steal refused, no policy asked */
	/* results */
	uint64_t makespan;
	unsigned runs[MAXU];
	unsigned steals[MAXW];
	unsigned cls[MAXU];   /* last class the exit hook gave each chunk's first unit */
	int bad_decision;     /* latency_budget: a decision that broke the budget rule */
	unsigned asks, refusals;
};

static unsigned char state_mem[GX_WORK_STATE_HDR + 4 * MAXU] __attribute__((aligned(128)));
static unsigned char *hints_mem;

static void fill_ctx(struct gdev_ctx *c, unsigned hook, struct sim *s, unsigned w, uint64_t start, unsigned units,
		     unsigned first, unsigned steals)
{
	memset(c, 0, sizeof(*c));
	c->kernel_id = s->kernel_id ? s->kernel_id : 0x1234;
	c->launch_id = s->launch_id;
	c->hook = hook;
	c->sched_start = start;
	c->sched_units = units;
	c->sched_worker = w;
	c->sched_steals = steals;
	c->ctaid_x = first;
	c->unit = first;
	c->nctaid_x = s->total, c->nctaid_y = 1, c->nctaid_z = 1;
	c->active_mask = 1;
	c->nr_active = 1;
	c->smid = w % SMS;
}

/* Run one launch; budget_ns: check latency_budget's rule (0: no check). */
static int simulate(struct policy *p, struct sim *s, uint64_t budget_ns)
{
	struct gx_bs_ws ws[MAXW];
	uint64_t t[MAXW], cstart[MAXW];
	uint64_t r[MAXW];
	int done[MAXW] = { 0 }, busy[MAXW] = { 0 }, left = (int)s->nw;
	memset(s->runs, 0, sizeof(s->runs));
	memset(s->steals, 0, sizeof(s->steals));
	s->makespan = 0;
	now_ns = 0;
	for (unsigned w = 0; w < s->nw; w++) {
		gxbsrt_begin(&ws[w], (uint64_t)(uintptr_t)state_mem, (uint64_t)(uintptr_t)hints_mem, 0, s->total, s->chunk,
			     w, s->nw);
		t[w] = 0;
		r[w] = gxbsrt_next(&ws[w], 0);
		cstart[w] = 0;
	}
	while (left) {
		/* the worker whose event comes first */
		unsigned w = MAXW;
		for (unsigned i = 0; i < s->nw; i++)
			if (!done[i] && (w == MAXW || t[i] < t[w]))
				w = i;
		now_ns = t[w];
		if (busy[w]) {
			/* its chunk ends now: the exit hook, then the next claim
			 * (claims happen in the order chunks end, as on the GPU) */
			unsigned n = (unsigned)(r[w] >> 32), first = (unsigned)r[w];
			unsigned cls = 0;
			if (p && p->exitp) {
				struct gdev_ctx c;
				fill_ctx(&c, GDEV_HOOK_SCHED_EXIT, s, w, cstart[w], n, first, ws[w].steals);
				int v = run_prog(p, p->exitp, &c, w % SMS);
				cls = v < 0 ? 0 : (unsigned)v;
				s->cls[first] = cls;
			}
			busy[w] = 0;
			r[w] = gxbsrt_next(&ws[w], cls);
			continue;
		}
		if (r[w] == GX_WORK_ASK) {
			int ok = 1;
			if (s->steal_never) {
				ok = 0;
			} else if (p && p->stealp) {
				struct gdev_ctx c;
				fill_ctx(&c, GDEV_HOOK_SCHED_STEAL, s, w, ws[w].t0, ws[w].units, 0, ws[w].steals);
				int d = run_prog(p, p->stealp, &c, w % SMS);
				ok = d == GDEV_DEFAULT;
				s->asks++;
				s->refusals += !ok;
				if (budget_ns && ok != (now_ns - ws[w].t0 <= budget_ns))
					s->bad_decision++;
			}
			r[w] = gxbsrt_steal(&ws[w], ok);
			continue;
		}
		unsigned n = (unsigned)(r[w] >> 32), first = (unsigned)r[w];
		if (!n) {
			done[w] = 1;
			left--;
			s->steals[w] = ws[w].steals;
			if (t[w] > s->makespan)
				s->makespan = t[w];
			continue;
		}
		/* run the chunk: its end is the worker's next event */
		cstart[w] = now_ns;
		uint64_t d = 0;
		for (unsigned u = first; u < first + n; u++) {
			s->runs[u]++;
			d += s->cost[u];
		}
		t[w] = cstart[w] + d;
		busy[w] = 1;
	}
	int bad = 0;
	for (unsigned u = 0; u < s->total; u++)
		bad += s->runs[u] != 1;
	return bad;
}

static void reset_state(void)
{
	memset(state_mem, 0, sizeof(state_mem));
	size_t hb = gx_work_hints_bytes(MAXU);
	memset(hints_mem, 0, hb);
	((struct gx_work_hints *)hints_mem)->cap = MAXU;
}

/* Costs: heavy: the last tenth of the units 100..200x; even: all 1000 ns. */
static uint64_t heavy[MAXU], even[MAXU];

static void check_native(struct policy *p)
{
	struct gx_jit_object_opts o = { .sz = sizeof(o), .target = GX_JIT_NATIVE, .maps = p->maps,
					.nr_maps = p->nmaps, .device_only = 1 };
	char err[256] = "";
	struct gx_jit *j = gx_jit_object(p->obj, &o, NULL, NULL, err, sizeof(err));
	GX_CHECK(j != NULL, "%s: compiles with the native JIT (%s)", p->name, j ? "ok" : err);
	if (!j)
		return;
	/* time-free decisions: the native steal hook agrees with the interpreter */
	char fname[96];
	snprintf(fname, sizeof(fname), "gxp_%s", p->stealp ? gx_bpf_prog__name(p->stealp) : "");
	uint32_t (*fn)(void *) = p->stealp ? (uint32_t(*)(void *))gx_jit__func(j, fname) : NULL;
	if (fn && strcmp(p->name, "latency_budget")) {
		int same = 1;
		struct sim s = { .total = 10, .nw = 2 };
		for (unsigned st = 0; st < 6; st++) {
			struct gdev_ctx c;
			fill_ctx(&c, GDEV_HOOK_SCHED_STEAL, &s, 1, 0, 3, 0, st);
			same &= (int)fn(&c) == run_prog(p, p->stealp, &c, 1);
		}
		GX_CHECK(same, "%s: the native steal hook decides as the interpreter (steals 0..5)", p->name);
	}
	gx_jit__free(j);
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "build/share/gpuext/sched";
	memcpy(helpers, gx_test_helpers, sizeof(helpers));
	for (size_t i = 0; i < sizeof(helpers) / sizeof(helpers[0]); i++)
		if (helpers[i].id == GX_HID_GLOBALTIMER || helpers[i].id == GX_HID_KTIME_GET_NS)
			helpers[i].fn = h_globaltimer;
	gx_bs_host_clock = sim_clock;
	hints_mem = aligned_alloc(256, (gx_work_hints_bytes(MAXU) + 255) / 256 * 256);
	uint64_t rng = 7;
	for (unsigned u = 0; u < MAXU; u++) {
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		heavy[u] = u >= 900 && u < 1000 ? 100000 + (rng >> 33) % 100000 : 1000;
		even[u] = 1000;
	}
	static const char *const names[] = { "fixed_work", "greedy", "max_steals", "latency_budget", "adaptive" };
	struct policy pol[5];
	for (int i = 0; i < 5; i++) {
		int ok = !load(&pol[i], dir, names[i]);
		GX_CHECK(ok, "%s: loads and verifies", names[i]);
		if (!ok)
			return gx_test_done();
		GX_CHECK(var(&pol[i], "gx_sched_mode") && var(&pol[i], "gx_sched_chunks"),
			 "%s: declares gx_sched_mode and gx_sched_chunks", names[i]);
	}
	struct policy *fixed = &pol[0], *greedy = &pol[1], *maxst = &pol[2], *budget = &pol[3], *adapt = &pol[4];
	static struct sim s;

	/* fixed_work: static, refuses every steal. */
	{
		unsigned *mode = var(fixed, "gx_sched_mode");
		s = (struct sim){ .total = 1000, .chunk = 1, .nw = 16, .cost = heavy, .launch_id = 1 };
		reset_state();
		int bad = simulate(fixed, &s, 0);
		GX_CHECK(mode && *mode == GX_WORK_STATIC && bad == 0 && s.asks == s.refusals && s.asks > 0,
			 "fixed_work: mode static; forced to claim, it refuses all %u steals and runs every unit once",
			 s.asks);
	}
	/* greedy: steals, and beats owner-only on a clustered heavy tail. */
	uint64_t owner_only;
	{
		s = (struct sim){ .total = 1000, .chunk = 1, .nw = 16, .cost = heavy, .launch_id = 1, .steal_never = 1 };
		reset_state();
		int bad = simulate(NULL, &s, 0);
		owner_only = s.makespan;
		s = (struct sim){ .total = 1000, .chunk = 1, .nw = 16, .cost = heavy, .launch_id = 2 };
		int bad2 = simulate(greedy, &s, 0);
		unsigned st = 0;
		for (unsigned w = 0; w < 16; w++)
			st += s.steals[w];
		GX_CHECK(bad == 0 && bad2 == 0 && st > 0 && s.makespan * 10 < owner_only * 7,
			 "greedy: %u steals, makespan %.1f ms vs %.1f ms owner-only (clustered heavy tail)", st,
			 s.makespan / 1e6, owner_only / 1e6);
	}
	/* max_steals=2: no worker steals a third chunk. */
	{
		unsigned *k = var(maxst, "max_steals");
		if (k)
			*k = 2;
		s = (struct sim){ .total = 1000, .chunk = 1, .nw = 16, .cost = heavy, .launch_id = 3 };
		reset_state();
		int bad = simulate(maxst, &s, 0);
		unsigned mx = 0;
		for (unsigned w = 0; w < 16; w++)
			mx = s.steals[w] > mx ? s.steals[w] : mx;
		GX_CHECK(k && bad == 0 && mx == 2 && s.refusals > 0,
			 "max_steals=2: the busiest thief stole %u chunks, %u asks refused, every unit once", mx,
			 s.refusals);
	}
	/* latency_budget=100 µs: refuses exactly the workers older than that
	 * (the light owners finish at ~62 us, steal for a while, then stop). */
	{
		unsigned *b = var(budget, "budget_us");
		if (b)
			*b = 100;
		s = (struct sim){ .total = 1000, .chunk = 1, .nw = 16, .cost = heavy, .launch_id = 4 };
		reset_state();
		int bad = simulate(budget, &s, 100000);
		GX_CHECK(b && bad == 0 && s.bad_decision == 0 && s.refusals > 0 && s.refusals < s.asks,
			 "latency_budget=100: %u of %u asks refused, each exactly when the worker was older than 100 us",
			 s.refusals, s.asks);
	}
	/* adaptive: learns the heavy tail; even work gives no class. */
	{
		reset_state();
		uint64_t span[4];
		int bad = 0, first_cls = 0, order_ok = 1;
		for (int l = 0; l < 4; l++) {
			memset(s.cls, 0, sizeof(s.cls));
			s = (struct sim){ .total = 1000, .chunk = 1, .nw = 16, .cost = heavy, .launch_id = 100 + l };
			bad += simulate(adapt, &s, 0);
			span[l] = s.makespan;
			if (l == 0)
				for (unsigned u = 0; u < 1000; u++)
					first_cls |= s.cls[u] != 0;
			/* classes grow with cost: every heavy unit above every light one */
			for (unsigned u = 0; l == 1 && u < 1000; u++)
				if ((u < 900 && s.cls[u] > 1) || (u >= 900 && s.cls[u] < 2))
					order_ok = 0;
		}
		GX_CHECK(bad == 0 && !first_cls && order_ok,
			 "adaptive: no class on the first launch, then the heavy units' classes above the light ones'");
		GX_CHECK(span[3] * 100 < span[0] * 95,
			 "adaptive: after learning the launch takes %.2f ms instead of %.2f ms (heaviest first)",
			 span[3] / 1e6, span[0] / 1e6);
		reset_state();
		int any = 0;
		for (int l = 0; l < 3; l++) {
			memset(s.cls, 0, sizeof(s.cls));
			s = (struct sim){ .total = 1000, .chunk = 4, .nw = 16, .cost = even, .launch_id = 200 + l,
					  .kernel_id = 0x5678 };
			bad += simulate(adapt, &s, 0);
			for (unsigned u = 0; u < 1000; u++)
				any |= s.cls[u] != 0;
		}
		const struct gx_work_hints *h = (const struct gx_work_hints *)hints_mem;
		unsigned listed = 0;
		for (int b = 0; b < 2; b++)
			for (int c = 1; c <= GX_WORK_CLASSES; c++)
				listed += h->count[b][c];
		GX_CHECK(bad == 0 && !any && !listed, "adaptive: even work gets no class and no hint list");
		/* Two units per SM (one worker each, as a kernel of one block per
		 * SM): the classes must order the units across SMs, so the learned
		 * launch is the LPT schedule (8 units of 1..8 x 50 us on 4 SMs:
		 * makespan 9 x 50 us; the first launch, owners' ranges, 11 x 50 us). */
		static uint64_t few[8];
		static const unsigned perm[8] = { 2, 5, 0, 7, 3, 6, 1, 4 }; /* cost rank of unit u */
		for (unsigned u = 0; u < 8; u++)
			few[u] = 50000ull * (perm[u] + 1);
		reset_state();
		uint64_t first = 0;
		int mono = 1;
		for (int l = 0; l < 4; l++) {
			memset(s.cls, 0, sizeof(s.cls));
			s = (struct sim){ .total = 8, .chunk = 1, .nw = SMS, .cost = few, .launch_id = 300 + l,
					  .kernel_id = 0x9abc };
			bad += simulate(adapt, &s, 0);
			if (!l)
				first = s.makespan;

			for (unsigned a = 0; l >= 1 && a < 8; a++)
				for (unsigned b = 0; b < 8; b++)
					if (few[a] > few[b] && s.cls[a] < s.cls[b])
						mono = 0;
		}
		GX_CHECK(bad == 0 && mono && s.makespan == 9 * 50000ull && first > s.makespan,
			 "adaptive: two units per SM: classes order them across SMs, learned launch %.0f us (LPT 450) "
			 "instead of %.0f us",
			 s.makespan / 1e3, first / 1e3);
	}
	for (int i = 0; i < 5; i++)
		check_native(&pol[i]);
	for (int i = 0; i < 5; i++)
		unload(&pol[i]);
	free(hints_mem);
	return gx_test_done();
}
