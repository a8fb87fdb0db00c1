/* gx_kmod_fuzz.c — ioctl fuzzer for /dev/gpuext (runs in the VM as root,
 * after the policy tests). Each call is either a targeted mutation with one
 * known right errno (short/huge size, non-zero unknown tail, bad version,
 * bad pointers, unknown command, empty/huge/wrapping ranges, too many
 * entries) or random bytes with a valid header, whose result must be in
 * the documented errno set. Afterwards the module must be back to its
 * baseline of live objects (our leak check when kmemleak is absent).
 * Usage: gx_kmod_fuzz [ITERATIONS [SEED]] */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "gx_kmod_ioc.h"
#include "tests/gx_test.h"

static const unsigned long cmds[] = {
	GX_IOC_VERSION,	    GX_IOC_REGISTER_AS, GX_IOC_PREFETCH,  GX_IOC_QUEUE_ATTR,
	GX_IOC_STATS,	    GX_IOC_POLICIES,	GX_IOC_TEST_CONFIG, GX_IOC_TEST_SPACE,
	GX_IOC_TEST_FAULT,  GX_IOC_TEST_LIST,	GX_IOC_TEST_EVICT, GX_IOC_TEST_QUEUE,
};
static const unsigned int sizes[] = {
	sizeof(struct gx_version),     sizeof(struct gx_register_as), sizeof(struct gx_prefetch),
	sizeof(struct gx_queue_attr),  sizeof(struct gx_stats),	      sizeof(struct gx_policies),
	sizeof(struct gx_test_config), sizeof(struct gx_test_space),  sizeof(struct gx_test_fault),
	sizeof(struct gx_test_list),   sizeof(struct gx_test_evict),  sizeof(struct gx_test_queue),
};
#define NCMD (sizeof(cmds) / sizeof(cmds[0]))

static uint64_t rng;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

struct tally {
	const char *name;
	unsigned long calls, bad;
	char first[160];
};
enum { T_SHORT, T_HUGE, T_TAIL, T_VERSION, T_PTR, T_CMD, T_RANGE, T_RANDOM, T_N };
static struct tally tally[T_N] = {
	{ .name = "short size -> EINVAL" },   { .name = "size > page -> E2BIG" },
	{ .name = "non-zero tail -> E2BIG" }, { .name = "unknown version -> EPROTO" },
	{ .name = "bad pointers -> EFAULT" }, { .name = "unknown command -> ENOTTY" },
	{ .name = "bad ranges/counts -> EINVAL/E2BIG/EFAULT/ENOENT/EPERM" },
	{ .name = "random contents -> documented errno" },
};

static void expect(int t, int ret, int want1, int want2, unsigned long cmd)
{
	tally[t].calls++;
	if (ret == want1 || ret == want2)
		return;
	if (!tally[t].bad++)
		snprintf(tally[t].first, sizeof(tally[t].first), "cmd %#lx: got %d (%s), want %d/%d",
			 cmd, ret, ret ? strerror(-ret) : "ok", want1, want2);
}

static int allowed(int ret)
{
	switch (-ret) {
	case 0: case EINVAL: case E2BIG: case EPROTO: case EFAULT: case ENOTTY: case ENOENT:
	case EPERM: case EEXIST: case ENOSPC: case ESRCH: case ERANGE:
		return 1;
	}
	return 0;
}

static unsigned long long live(int fd)
{
	struct gx_stats st;

	GX_PREP(st);
	return gx_ioc(fd, GX_IOC_STATS, &st) ? ~0ULL : st.live_objects;
}

int main(int argc, char **argv)
{
	unsigned long iters = argc > 1 ? strtoul(argv[1], NULL, 0) : 100000, i;
	unsigned char *buf, *unmapped;
	unsigned long long base;
	struct gx_test_config tc;
	struct gx_register_as ra;
	unsigned int own;
	int fd, fd2, t;

	setvbuf(stdout, NULL, _IOLBF, 0);
	rng = argc > 2 ? strtoull(argv[2], NULL, 0) : 0x9e3779b97f4a7c15ULL;
	fd = gx_dev_open();
	GX_CHECK(fd >= 0, "fuzz: /dev/gpuext opens");
	if (fd < 0)
		return 1;
	GX_PREP(tc);
	tc.capacity = 32;
	gx_ioc(fd, GX_IOC_TEST_CONFIG, &tc);
	base = live(fd);
	fd2 = gx_dev_open();
	GX_PREP(ra);
	gx_ioc(fd2, GX_IOC_REGISTER_AS, &ra);
	own = ra.space_id;
	buf = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unmapped = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(unmapped, 4096);
	for (i = 0; i < iters; i++) {
		unsigned int c = rnd() % NCMD, sz = sizes[c], k;
		unsigned long cmd = cmds[c];
		uint32_t *h = (uint32_t *)buf;
		int ret, f = (rnd() & 1) ? fd : fd2;

		memset(buf, 0, 3 * 4096);
		h[0] = sz;
		h[1] = GX_ABI_VERSION;
		t = rnd() % T_N;
		switch (t) {
		case T_SHORT:
			h[0] = rnd() % sz;
			expect(t, gx_ioc(f, cmd, buf), -EINVAL, -EPERM, cmd);
			break;
		case T_HUGE:
			h[0] = 4097 + rnd() % 8000;
			expect(t, gx_ioc(f, cmd, buf), -E2BIG, -EPERM, cmd);
			break;
		case T_TAIL:
			h[0] = sz + 1 + rnd() % 64;
			buf[sz + rnd() % (h[0] - sz)] = 1 + rnd() % 255;
			expect(t, gx_ioc(f, cmd, buf), -E2BIG, -EPERM, cmd);
			break;
		case T_VERSION:
			do
				h[1] = rnd();
			while (h[1] == GX_ABI_VERSION);
			expect(t, gx_ioc(f, cmd, buf), -EPROTO, -EPERM, cmd);
			break;
		case T_PTR: {
			void *p = (rnd() & 1) ? NULL : (rnd() & 1) ? (void *)unmapped
						  : (void *)(0xffff800000000000ULL + (rnd() & 0xffff000));
			ret = ioctl(f, cmd, p) < 0 ? -errno : 0;
			expect(t, ret, -EFAULT, -EPERM, cmd);
			break;
		}
		case T_CMD: {
			unsigned long bad;

			do
				bad = _IOC(rnd() & 3, (rnd() & 1) ? GX_IOC_MAGIC : rnd() & 0xff, rnd() & 0xff,
					   rnd() & 0x3fff);
			while ((bad >> 8 & 0xff) == GX_IOC_MAGIC && (bad & 0xff) <= 0x45 &&
			       ((bad & 0xff) <= 5 || (bad & 0xff) >= 0x40) && !(bad >> 16));
			expect(t, gx_ioc(f, bad, buf), -ENOTTY, -ENOTTY, bad);
			break;
		}
		case T_RANGE:
			if (cmd == GX_IOC_PREFETCH) {
				struct gx_prefetch *pf = (void *)buf;
				struct gx_range *rg = (void *)(buf + 4096);
				unsigned int m = rnd() % 6;

				pf->space_id = own;
				pf->nr_ranges = 1;
				pf->ranges = (uintptr_t)rg;
				rg->va = 0x10000000;
				rg->len = 4096;
				if (m == 0) {
					pf->nr_ranges = 0;
					expect(t, gx_ioc(fd2, cmd, buf), -EINVAL, -EINVAL, cmd);
				} else if (m == 1) {
					pf->nr_ranges = GX_MAX_RANGES + 1 + rnd() % 100000;
					expect(t, gx_ioc(fd2, cmd, buf), -E2BIG, -E2BIG, cmd);
				} else if (m == 2) {
					rg->va = rnd();
					rg->len = (rnd() & 1) ? 0 : ~0ULL - (rnd() & 0xffff);
					expect(t, gx_ioc(fd2, cmd, buf), -EINVAL, -EINVAL, cmd);
				} else if (m == 3) {
					pf->ranges = (uintptr_t)unmapped;
					expect(t, gx_ioc(fd2, cmd, buf), -EFAULT, -EFAULT, cmd);
				} else if (m == 4) {
					pf->priority = 8 + rnd() % 1000;
					expect(t, gx_ioc(fd2, cmd, buf), -EINVAL, -EINVAL, cmd);
				} else {
					pf->space_id = own + 1 + rnd() % 1000;
					expect(t, gx_ioc(fd2, cmd, buf), -ENOENT, -EPERM, cmd);
				}
			} else if (cmd == GX_IOC_TEST_FAULT) {
				struct gx_test_fault *tf = (void *)buf;
				uint64_t *vas = (void *)(buf + 4096);
				unsigned int m = rnd() % 4;

				tf->space_id = own;
				tf->nr = 1;
				tf->vas = (uintptr_t)vas;
				vas[0] = 1ULL << 57 | rnd();
				if (m == 0) {
					tf->nr = 0;
					expect(t, gx_ioc(f, cmd, buf), -EINVAL, -EINVAL, cmd);
				} else if (m == 1) {
					tf->nr = GX_MAX_FAULTS + 1 + rnd() % 1000000;
					expect(t, gx_ioc(f, cmd, buf), -E2BIG, -E2BIG, cmd);
				} else if (m == 2) {
					expect(t, gx_ioc(f, cmd, buf), -EINVAL, -EINVAL, cmd);
				} else {
					tf->vas = (uintptr_t)unmapped;
					expect(t, gx_ioc(f, cmd, buf), -EFAULT, -EFAULT, cmd);
				}
			} else if (cmd == GX_IOC_TEST_LIST || cmd == GX_IOC_POLICIES) {
				struct gx_test_list *tl = (void *)buf; /* same head as gx_policies */

				tl->nr = 70000 + rnd() % 1000000;
				expect(t, gx_ioc(f, cmd, buf), -E2BIG, -E2BIG, cmd);
			} else if (cmd == GX_IOC_QUEUE_ATTR) {
				struct gx_queue_attr *qa = (void *)buf;

				qa->queue_id = 1000000 + rnd() % 1000000;
				expect(t, gx_ioc(f, cmd, buf), -ENOENT, -ENOENT, cmd);
			} else {
				expect(t, 0, 0, 0, cmd);
			}
			break;
		default: /* random contents, valid header */
			for (k = 8; k < sz; k++)
				buf[k] = (rnd() & 3) ? 0 : rnd();
			/* keep counts small so random calls stay cheap */
			if (cmd == GX_IOC_TEST_FAULT) {
				struct gx_test_fault *tf = (void *)buf;
				uint64_t *vas = (void *)(buf + 4096);

				tf->nr %= 64;
				tf->vas = (rnd() & 3) ? (uintptr_t)vas : tf->vas;
				tf->results = (rnd() & 1) ? 0 : tf->results;
				tf->space_id = (rnd() & 1) ? own : tf->space_id % 8;
				for (k = 0; k < 64; k++)
					vas[k] = rnd() & 0xffffffffffULL;
			} else if (cmd == GX_IOC_TEST_CONFIG) {
				((struct gx_test_config *)buf)->capacity %= 128;
			} else if (cmd == GX_IOC_TEST_EVICT) {
				((struct gx_test_evict *)buf)->nr %= 64;
			} else if (cmd == GX_IOC_TEST_LIST || cmd == GX_IOC_POLICIES) {
				((struct gx_test_list *)buf)->nr %= 64;
			} else if (cmd == GX_IOC_TEST_SPACE) {
				((struct gx_test_space *)buf)->tgid %= 64;
			} else if (cmd == GX_IOC_TEST_QUEUE) {
				((struct gx_test_queue *)buf)->tgid %= 64;
				((struct gx_test_queue *)buf)->queue_id %= 64;
			} else if (cmd == GX_IOC_PREFETCH) {
				((struct gx_prefetch *)buf)->nr_ranges %= 8;
				((struct gx_prefetch *)buf)->ranges = (uintptr_t)(buf + 4096);
			}
			ret = gx_ioc(f, cmd, buf);
			tally[t].calls++;
			if (!allowed(ret) && !tally[t].bad++)
				snprintf(tally[t].first, sizeof(tally[t].first), "cmd %#lx: got %d", cmd, ret);
			break;
		}
	}
	for (t = 0; t < T_N; t++)
		GX_CHECK(tally[t].calls > 0 && tally[t].bad == 0, "fuzz: %s (%lu calls, %lu wrong%s%s)",
			 tally[t].name, tally[t].calls, tally[t].bad, tally[t].bad ? ": " : "",
			 tally[t].first);
	close(fd2);
	close(fd); /* drops a space a random REGISTER_AS may have made */
	fd = gx_dev_open();
	gx_ioc(fd, GX_IOC_TEST_CONFIG, &tc);
	GX_CHECK(live(fd) == base, "fuzz: no leaked objects after %lu calls (live %llu, baseline %llu)",
		 iters, live(fd), base);
	close(fd);
	return gx_test_done();
}
