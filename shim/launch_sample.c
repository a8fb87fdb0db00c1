/* launch_sample.c — GPUEXT_LAUNCH_SAMPLE=N[,first=K]: a tool instruments
 * each kernel's first K launches (16 unless given), then one launch in N;
 * the others run the application's own kernel at native speed (issue 40,
 * docs/devbpf-tools.md). The default for tools: 16 (GX_CTL_SAMPLE_DEFAULT);
 * GPUEXT_LAUNCH_SAMPLE=1 instruments every launch. `gpuext attach` does
 * the same for the tools it attaches (gx_launch_sample_live, --launch-sample
 * or this process's setting), until their detach.
 *
 * Why: a tool's probe costs every instrumented launch a fixed price per
 * block, and on kernels of many short blocks no placement of it is cheap —
 * GPU runs 116-119 (H100): the least exact block counter (thread 0, three
 * fire-and-forget adds) +8 % on a stencil of 16,384 one-microsecond blocks,
 * at the exit, at the entry, with a branch or predicated; the bare
 * per-warp test alone +2.8 %. What a sampled tool pays is that price on
 * one launch in N, amortised: the figures of the tools' goals.
 *
 * How: the module is loaded as it came and its instrumented copy beside it
 * (through the module cache, on the load path — or off it under
 * GPUEXT_JIT_ASYNC), and the launch switch of shim/live.c (the one `gpuext
 * attach` and GPUEXT_JIT_ASYNC use) runs the copy's function on the
 * sampled launches. The device runtime logs each launch as instrumented
 * or not, so every report says how many it saw (tools/launches.c) and
 * kernelretsnoop expects no records from the others.
 *
 * Only where the copy is faithful (shim/live.c's judge: no module variable
 * the kernels write, no JIT option that changes the code; no library with
 * variables, shim/module.c): other images are rewritten in place and every
 * launch of theirs is instrumented, as without sampling. Only for tools: a device
 * policy (GPUEXT_POLICY) decides on every launch, so with one loaded the
 * setting is refused with a warning. Graph kernel nodes are not sampled (a
 * node is switched once, when it is added). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/gx_ctl.h"
#include "shim/load_internal.h"

static struct {
	int state; /* -1 not read, 0 off, 1 on */
	unsigned long every, first;
} ls = { .state = -1 };

bool gx_launch_sample_on(void)
{
	if (ls.state >= 0)
		return ls.state;
	const char *e = gx_launch_sample_setting();
	const char *env = getenv("GPUEXT_LAUNCH_SAMPLE");
	bool given = env && *env;
	gx_config_load();
	ls.state = 0;
	if (gx_config.disabled || !gx_config.tool)
		return false;
	if (gx_ctl_sample_parse(e, &ls.every, &ls.first)) {
		pr_warn("GPUEXT_LAUNCH_SAMPLE=%s: expected N[,first=K], N from 1 to 1000000: every launch is "
			"instrumented",
			e);
		return false;
	}
	if (ls.every == 1)
		return false; /* every launch: the plain rewrite, no copies */
	if (gx_config.policy || gx_config.sched || getenv("GPUEXT_PERSISTENT")) {
		/* the default gives way silently; a sample asked for is refused */
		if (!given)
			return false;
		pr_warn("GPUEXT_LAUNCH_SAMPLE: not with a device policy or --sched (they act on every launch): every "
			"launch is instrumented");
		return false;
	}
	ls.state = 1;
	return true;
}

const char *gx_launch_sample_setting(void)
{
	const char *e = getenv("GPUEXT_LAUNCH_SAMPLE");
	return e && *e ? e : GX_CTL_SAMPLE_DEFAULT;
}

/* gpuext attach --launch-sample (live.c, under its lock): the sample of
 * the tools attached live, until their detach; every 0: none set */
static struct {
	unsigned long every, first;
} live;

void gx_launch_sample_live(unsigned long every, unsigned long first)
{
	live.every = every;
	live.first = first;
}

bool gx_launch_sample_active(void)
{
	return live.every > 1 || gx_launch_sample_on();
}

bool gx_launch_sampled(unsigned long long n)
{
	unsigned long every = live.every > 1 ? live.every : ls.state > 0 ? ls.every : 1;
	unsigned long first = live.every > 1 ? live.first : ls.first;
	if (every <= 1 || n <= first)
		return true;
	return (n - first - 1) % every == 0;
}

void gx_launch_sample_init(void)
{
	if (!gx_launch_sample_on())
		return;
	if (gx_live_async_start()) {
		pr_warn("GPUEXT_LAUNCH_SAMPLE: no launch switch (no free event subscription): every launch is "
			"instrumented");
		ls.state = 0;
		return;
	}
	pr_info("launch sample: each kernel's first %lu launches instrumented, then 1 in %lu (modules whose copy would "
		"not be faithful: every launch; GPUEXT_LAUNCH_SAMPLE=1 or --every-launch: every launch of every module)",
		ls.first, ls.every);
}
