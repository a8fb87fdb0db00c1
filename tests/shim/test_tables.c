/* The shim's handle tables (shim/tables.c) on their own: a launch's kernel
 * name from the thread's cache (gx_tab_func_name) is the table's name, and
 * stays right when functions leave or change — an unload, a handle reused
 * with another name, a context gone — and past more functions than the
 * cache holds. */
#include <pthread.h>

#include "shim/tables_internal.h"
#include "tests/gx_test.h"

void gx_lock_register(pthread_mutex_t *m, int order)
{
	(void)m, (void)order;
}

static const char *nm(CUcontext c, uintptr_t f, bool *k)
{
	return gx_tab_func_name(c, (void *)f, k);
}

static void *other_thread(void *arg)
{
	const char *n = nm((CUcontext)arg, 0x201, NULL);
	return (void *)(uintptr_t)(n && !strcmp(n, "beta"));
}

int main(void)
{
	CUcontext c1 = (CUcontext)0x10, c2 = (CUcontext)0x20;
	bool k = true;
	gx_tab_add_mod(c1, (void *)0x100, false, false, NULL, 1);
	gx_tab_add_func(c1, (void *)0x200, (void *)0x100, false, "alpha");
	gx_tab_add_func(c1, (void *)0x201, (void *)0x100, false, "beta");
	const char *a = nm(c1, 0x200, &k);
	GX_CHECK(a && !strcmp(a, "alpha") && !k, "name of a function (%s)", a ? a : "NULL");
	GX_CHECK(nm(c1, 0x200, NULL) == a, "a second launch: the cached entry");
	GX_CHECK(!nm(c2, 0x200, NULL), "another context's table does not have it");
	GX_CHECK(!nm(c1, 0x999, NULL), "an unknown handle: NULL");
	/* more functions than the cache holds, round robin: every name right */
	char want[16];
	int right = 1;
	for (int i = 0; i < 6; i++) {
		snprintf(want, sizeof(want), "f%d", i);
		gx_tab_add_func(c1, (void *)(uintptr_t)(0x300 + i), (void *)0x100, false, want);
	}
	for (int r = 0; r < 3; r++)
		for (int i = 0; i < 6; i++) {
			snprintf(want, sizeof(want), "f%d", i);
			const char *n = nm(c1, 0x300 + (uintptr_t)i, NULL);
			right &= n && !strcmp(n, want);
		}
	GX_CHECK(right, "six functions in turn through a four-entry cache: every name right");
	/* the same handle, another name (a driver reusing a freed handle) */
	nm(c1, 0x200, NULL);
	gx_tab_add_func(c1, (void *)0x200, (void *)0x100, false, "gamma");
	a = nm(c1, 0x200, NULL);
	GX_CHECK(a && !strcmp(a, "gamma"), "a handle recorded again with another name: the new name (%s)", a ? a : "NULL");
	/* a kernel (context-less table) flag change is seen */
	gx_tab_add_func(c1, (void *)0x400, (void *)0x100, true, "kern");
	k = false;
	a = nm(c1, 0x400, &k);
	GX_CHECK(a && !strcmp(a, "kern") && k, "a CUkernel: found through the context-less table, flagged");
	pthread_t t;
	void *res = NULL;
	GX_CHECK(pthread_create(&t, NULL, other_thread, c1) == 0 && pthread_join(t, &res) == 0 && res,
		 "another thread: its own cache, the same name");
	/* an unload empties every cache */
	nm(c1, 0x201, NULL);
	void *side = NULL;
	GX_CHECK(gx_tab_set_side((void *)0x100, (void *)0x900) == 0 && gx_tab_set_side((void *)0x999, NULL) == -ENOENT,
		 "a module's side module recorded (an unknown module: ENOENT)");
	GX_CHECK(gx_tab_del_mod((void *)0x100, &side) == 0 && side == (void *)0x900,
		 "the unload hands back the side module to unload with it");
	GX_CHECK(!nm(c1, 0x201, NULL) && !nm(c1, 0x200, NULL), "after the module's unload: no name");
	gx_tab_add_mod(c1, (void *)0x100, false, false, NULL, 2);
	side = (void *)1;
	GX_CHECK(gx_tab_del_mod((void *)0x100, &side) == 0 && !side, "a module loaded again: no side module of the old one");
	gx_tab_add_mod(c1, (void *)0x100, false, false, NULL, 2);
	gx_tab_add_func(c1, (void *)0x201, (void *)0x100, false, "delta");
	a = nm(c1, 0x201, NULL);
	GX_CHECK(a && !strcmp(a, "delta"), "a module loaded again at the same handles: the new names (%s)", a ? a : "NULL");
	/* a context gone */
	gx_tab_ctx_gone(c1);
	GX_CHECK(!nm(c1, 0x201, NULL), "after the context is gone: no name");
	gx_tab_clear();
	return gx_test_done();
}
