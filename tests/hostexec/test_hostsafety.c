/* test_hostexec_safety — no policy, however steered, crashes the
 * application (issue 20, item 4). Each part runs as native code (the devbpf
 * JIT through libgxjit.so) and interpreted, with maps in shared memory:
 *  - hx_cfgknob's knob `slot` lives in .rodata.cfg and indexes its
 *    counters; the verifier folded it, so its file is constant (0400,
 *    GX_SHM_F_CONST), nobody opens it for writing (-EROFS), and bytes
 *    written into the file anyway never reach the policy, which goes on
 *    counting where it was proved to; a knob set at load still works;
 *  - a fault inside policy code (its .bss taken away with mprotect)
 *    disables the policy with one line and the process goes on;
 *  - a fault outside policy code still reaches the application's own
 *    SIGSEGV handler (installed before the policy's guard).
 * argv[1]: the folder with hx_cfgknob.bpf.o. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devbpf/gx_bpf.h"
#include "hostexec/gx_hostexec.h"
#include "tests/gx_test.h"

#define MB (1ull << 20)
#define VA 0x7f0000000000ull
#define REGIONS 8 /* 16 MiB of 2 MiB regions: one fault each per touch */

static const char *dir;
static char shm[256];

static void on_prefetch(void *u, uint64_t va, uint64_t len, int to_host)
{
	(void)u, (void)va, (void)len, (void)to_host;
}

static struct gx_hx *mk(int native, const char *knobs)
{
	char path[512];
	struct gx_hx_opts o = { .sz = sizeof(o), .tgid = 4242, .shm_maps = 1, .native = native,
				.act = { .prefetch = on_prefetch } };
	struct gx_hx *hx = gx_hx__new(&o);
	snprintf(path, sizeof(path), "%s/hx_cfgknob.bpf.o", dir);
	int err = hx ? gx_hx__load(hx, path, knobs) : -ENOMEM;
	GX_CHECK(err == 0, "%s: hx_cfgknob loads (%s)", native ? "native" : "interp", knobs ? knobs : "no knobs");
	if (err) {
		gx_hx__free(hx);
		return NULL;
	}
	return hx;
}

static void map_path(char *buf, size_t n, const char *map)
{
	snprintf(buf, n, "%s/%d-cfgknob.%s", shm, (int)getpid(), map);
}

/* Word i of a global data file, read from outside (-1 if unreadable). */
static int64_t word(const char *map, unsigned i)
{
	char path[512];
	map_path(path, sizeof(path), map);
	struct gx_map *m;
	if (gx_map__open(path, 0, &m))
		return -1;
	uint32_t k = 0;
	const uint8_t *v = gx_map__lookup(m, &k);
	int64_t r = -1;
	if (v && (i + 1) * 8 <= m->l.value_size)
		memcpy(&r, v + 8 * i, 8);
	else if (v && i == 0 && m->l.value_size == 4)
		r = *(const uint32_t *)v;
	gx_map__free(m);
	return r;
}

/* gx_hx__touch with stderr captured: the number of lines written. */
static int touch_lines(struct gx_hx *hx, char *first, size_t n)
{
	FILE *tf = tmpfile();
	int saved = dup(2), lines = 0;
	fflush(stderr);
	dup2(fileno(tf), 2);
	gx_hx__sync(hx);
	gx_hx__touch(hx, VA, 0);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(tf);
	char buf[512];
	first[0] = 0;
	while (fgets(buf, sizeof(buf), tf))
		if (!lines++)
			snprintf(first, n, "%s", buf);
	fclose(tf);
	first[strcspn(first, "\n")] = 0;
	return lines;
}

static void test_constant_knob(int native)
{
	const char *mode = native ? "native" : "interp";
	struct gx_hx *hx = mk(native, NULL);
	if (!hx)
		return;
	gx_hx__alloc(hx, VA, 2 * REGIONS * MB);
	gx_hx__touch(hx, VA, 0);
	struct gx_hx_stats st;
	gx_hx__stats(hx, &st);
	GX_CHECK(word("bss", 3) == REGIONS && st.calls == REGIONS && st.native_calls == (native ? st.calls : 0),
		 "%s: every fault counts in hits[3], the knob's default (%lld, %llu native calls)", mode,
		 (long long)word("bss", 3), (unsigned long long)st.native_calls);
	char path[512];
	map_path(path, sizeof(path), "rodata.cfg");
	struct stat s;
	struct gx_map *m = NULL;
	GX_CHECK(!stat(path, &s) && (s.st_mode & 0777) == 0400 && gx_map__open(path, 1, &m) == -EROFS && !m,
		 "%s: the .rodata.cfg file is 0400 and nobody opens it for writing (-EROFS)", mode);
	GX_CHECK(word("rodata.cfg", 0) == 3, "%s: ... and reads slot = 3 from outside", mode);
	/* behind gpuext's back: writable again, and a huge index written */
	uint32_t evil = 1000000;
	int fd = chmod(path, 0600) ? -1 : open(path, O_WRONLY);
	bool wrote = fd >= 0 && pwrite(fd, &evil, sizeof(evil), GX_SHM_DATA_OFF) == (ssize_t)sizeof(evil);
	if (fd >= 0)
		close(fd);
	char line[512];
	int lines = touch_lines(hx, line, sizeof(line));
	GX_CHECK(wrote && lines == 0 && gx_hx__mem_enabled(hx) && word("bss", 3) == 2 * REGIONS,
		 "%s: a knob written into the file does not reach the policy: it counts on in hits[3] (%lld)", mode,
		 (long long)word("bss", 3));
	gx_hx__free(hx);
	hx = mk(native, "slot=1");
	if (!hx)
		return;
	gx_hx__alloc(hx, VA, 2 * REGIONS * MB);
	gx_hx__touch(hx, VA, 0);
	GX_CHECK(word("rodata.cfg", 0) == 1 && word("bss", 1) == REGIONS && word("bss", 3) == 0,
		 "%s: a knob set at load (slot=1) is what the policy runs with", mode);
	gx_hx__free(hx);
}

/* The mapping of a shm file in this process ([start, end)), or -1. */
static int find_mapping(const char *path, uintptr_t *start, uintptr_t *end)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[1024];
	int found = -1;
	while (f && found && fgets(line, sizeof(line), f)) {
		char *nl = strchr(line, '\n'), *p = strchr(line, '/');
		if (nl)
			*nl = 0;
		if (p && !strcmp(p, path) && sscanf(line, "%lx-%lx", start, end) == 2)
			found = 0;
	}
	if (f)
		fclose(f);
	return found;
}

static void test_fault(int native)
{
	const char *mode = native ? "native" : "interp";
	struct gx_hx *hx = mk(native, NULL);
	if (!hx)
		return;
	gx_hx__alloc(hx, VA, 2 * REGIONS * MB);
	char path[512];
	map_path(path, sizeof(path), "bss");
	uintptr_t a = 0, b = 0;
	int found = find_mapping(path, &a, &b);
	/* the policy's counters (after the file's header page) become unreadable */
	bool gone = !found && b > a + GX_SHM_DATA_OFF &&
		    !mprotect((void *)(a + GX_SHM_DATA_OFF), b - a - GX_SHM_DATA_OFF, PROT_NONE);
	char line[512];
	int lines = touch_lines(hx, line, sizeof(line));
	GX_CHECK(gone && lines == 1 && strstr(line, "gpuext: hostpolicy: cfgknob: SIGSEGV at ") &&
			 strstr(line, native ? "in native program cfgknob_prefetch; policy disabled, FIFO applies"
					     : "in interpreted program cfgknob_prefetch; policy disabled"),
		 "%s: a fault in the policy's code: one line, and the process goes on (%s)", mode, line);
	struct gx_hx_stats s0, s1;
	gx_hx__stats(hx, &s0);
	lines = touch_lines(hx, line, sizeof(line));
	gx_hx__stats(hx, &s1);
	GX_CHECK(!gx_hx__mem_enabled(hx) && lines == 0 && s1.calls == s0.calls && s1.faults > s0.faults,
		 "%s: ... the policy is disabled: events go on without calling it", mode);
	if (gone)
		mprotect((void *)(a + GX_SHM_DATA_OFF), b - a - GX_SHM_DATA_OFF, PROT_READ | PROT_WRITE);
	gx_hx__free(hx);
}

/* The application's own handler, installed before any policy's guard. */
static sigjmp_buf app_jb;
static volatile sig_atomic_t app_saw;

static void app_handler(int sig, siginfo_t *si, void *uc)
{
	(void)si, (void)uc;
	app_saw = sig;
	siglongjmp(app_jb, 1);
}

static void test_chain(void)
{
	char *page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page != MAP_FAILED && !sigsetjmp(app_jb, 1))
		*(volatile char *)page = 1;
	GX_CHECK(page != MAP_FAILED && app_saw == SIGSEGV,
		 "a fault outside policy code reaches the application's own handler");
	if (page != MAP_FAILED)
		munmap(page, 4096);
}

int main(int argc, char **argv)
{
	gx_test_find_jitlib();
	dir = argc > 1 ? argv[1] : "build/hostbpf";
	struct sigaction sa = { .sa_sigaction = app_handler, .sa_flags = SA_SIGINFO };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
	char tmpl[] = "/tmp/hx_safety.XXXXXX";
	if (!mkdtemp(tmpl)) {
		printf("not ok - temp folder\n");
		return 1;
	}
	snprintf(shm, sizeof(shm), "%s", tmpl);
	setenv("GPUEXT_SHM_DIR", shm, 1);
	for (int native = 1; native >= 0; native--) {
		test_constant_knob(native);
		test_fault(native);
	}
	test_chain();
	rmdir(shm);
	return gx_test_done();
}
