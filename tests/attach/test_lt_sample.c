/* test_lt_sample.c — which launches get timing events (launches.c:
 * gx_lt_sampled): a kernel's first GX_LT_FIRST, then one in GX_LT_EVERY but
 * at most one per GX_LT_GAP_NS, so a kernel launched every 48 us (Triton's
 * loop) is timed ~50 times a second, not ~330, while a slow one keeps its
 * one in 64. Default GPUEXT_LAUNCH_TIMES only (the setting is read once per
 * process; test_attach.sh runs the others end to end). */
#include <stdlib.h>

#include "attach/attach_internal.h"
#include "tests/gx_test.h"

/* launches.c reaches the driver through it; gx_lt_sampled never does */
const struct gx_attach_host *gx_attach_env;

/* Launches n times, one every `period` ns from t0: how many are timed. */
static unsigned timed(uint64_t n, uint64_t period, uint64_t t0, unsigned *first)
{
	uint64_t last = 0;
	unsigned c = 0;
	*first = 0;
	for (uint64_t i = 1; i <= n; i++)
		if (gx_lt_sampled(i, t0 + i * period, &last)) {
			c++;
			*first += i <= GX_LT_FIRST;
		}
	return c;
}

int main(void)
{
	unsetenv("GPUEXT_LAUNCH_TIMES");
	unsigned first, c;
	/* 1 s of a kernel every 48 us: 20833 launches, one in 64 would be 325 */
	c = timed(20833, 48000, 1000000000000ull, &first);
	GX_CHECK(first == GX_LT_FIRST, "lt: a kernel's first %u launches are timed (%u)", GX_LT_FIRST, first);
	GX_CHECK(c >= GX_LT_FIRST + 40 && c <= GX_LT_FIRST + 50,
		 "lt: a kernel every 48 us: at most one timed per 20 ms (%u in 1 s)", c);
	/* a kernel every 1 ms: one in 64 (every 64 ms) is under the gap */
	c = timed(6400, 1000000, 5000000000000ull, &first);
	GX_CHECK(c == GX_LT_FIRST + 100, "lt: a kernel every 1 ms keeps one in 64 (%u of 6400)", c);
	/* the gap is per kernel: two kernels interleaved each get their share */
	uint64_t la = 0, lb = 0, t = 9000000000000ull;
	unsigned ca = 0, cb = 0;
	for (uint64_t i = 1; i <= 20833; i++, t += 48000) {
		ca += gx_lt_sampled(i, t, &la);
		cb += gx_lt_sampled(i, t + 16000, &lb);
	}
	GX_CHECK(ca == cb && ca >= GX_LT_FIRST + 40, "lt: interleaved kernels sampled alike (%u, %u)", ca, cb);
	/* the 9th launch right after the 8th: not timed; the next one in 64 past the gap is */
	uint64_t last = 0;
	for (uint64_t i = 1; i <= GX_LT_FIRST; i++)
		gx_lt_sampled(i, 100 + i, &last);
	GX_CHECK(!gx_lt_sampled(GX_LT_FIRST + 1, 200, &last) && !gx_lt_sampled(64, 300, &last) &&
			 !gx_lt_sampled(129, 200 + GX_LT_GAP_NS, &last) && gx_lt_sampled(128, 200 + GX_LT_GAP_NS, &last) &&
			 last == 200 + GX_LT_GAP_NS,
		 "lt: past the first, one in 64 and only after the gap");
	return gx_test_done();
}
