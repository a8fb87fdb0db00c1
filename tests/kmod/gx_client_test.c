/* gx_client_test.c — stands in for the shim: uses hostbpf/gx_kmod_client
 * the way the shim does (open, register, hint our own managed ranges)
 * against gpuext.ko (sim=1) in the VM, and checks the module saw it. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "gx_kmod_ioc.h"
#include "hostkmod/gx_kmod_client.h"
#include "tests/gx_test.h"

int main(void)
{
	struct gx_kmod_stats before, after;
	struct gx_kmod_range r[2], many[257];
	struct gx_region_info info[256];
	struct gx_test_list tl;
	struct gx_kmod *k;
	uint64_t pages = 0;
	unsigned int i, mine = 0;
	char *buf;
	int ret, fd;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ret = gx_kmod_open(&k);
	GX_CHECK(ret == 0, "client: opens /dev/gpuext (%d)", ret);
	if (ret)
		return 1;
	GX_CHECK(!strcmp(gx_kmod__backend(k), "sim"), "client: sees the simulated backend");
	GX_CHECK(gx_kmod__prefetch(k, r, 1, 0, NULL) == -ENOENT, "client: hint before register refused");
	GX_CHECK(gx_kmod__register(k) == 0 && gx_kmod__space_id(k) != 0, "client: registers its address space");
	GX_CHECK(gx_kmod__register(k) == -EEXIST, "client: second register refused");
	gx_kmod__stats(k, &before);
	buf = mmap(NULL, 8 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	GX_CHECK(buf != MAP_FAILED, "client: managed-like buffer mapped");
	r[0].va = (uintptr_t)buf;
	r[0].len = 4 << 20;
	r[1].va = (uintptr_t)buf + (6 << 20);
	r[1].len = 4096;
	ret = gx_kmod__prefetch(k, r, 2, 3, &pages);
	GX_CHECK(ret == 0 && pages == 1024 + 1, "client: hint accepted, %llu pages queued",
		 (unsigned long long)pages);
	gx_kmod__stats(k, &after);
	GX_CHECK(after.hints == before.hints + 1 && after.hint_pages == before.hint_pages + 1025,
		 "client: module counted the hint");
	fd = gx_dev_open();
	GX_PREP(tl);
	tl.nr = 256;
	tl.entries = (uintptr_t)info;
	GX_CHECK(fd >= 0 && gx_ioc(fd, GX_IOC_TEST_LIST, &tl) == 0, "client: region list read");
	for (i = 0; i < tl.nr; i++)
		mine += info[i].space_id == gx_kmod__space_id(k);
	GX_CHECK(mine >= 3, "client: hinted ranges became resident regions (%u)", mine);
	GX_CHECK(gx_kmod__prefetch(k, r, 1, 8, NULL) == -EINVAL, "client: priority 8 refused");
	r[0].len = 0;
	GX_CHECK(gx_kmod__prefetch(k, r, 1, 0, NULL) == -EINVAL, "client: empty range refused");
	r[0].va = ~0ULL - 4096;
	r[0].len = 8192;
	GX_CHECK(gx_kmod__prefetch(k, r, 1, 0, NULL) == -EINVAL, "client: wrapping range refused");
	memset(many, 0, sizeof(many));
	GX_CHECK(gx_kmod__prefetch(k, many, 257, 0, NULL) == -E2BIG, "client: too many ranges refused");
	gx_kmod__close(k);
	if (fd >= 0)
		close(fd);
	return gx_test_done();
}
