/* test_shm_trust.c — files of the maps folder (/dev/shm/gpuext-$UID, here
 * GPUEXT_SHM_DIR) under the trust rule (gx_trust.h, docs/trust.md): a tenant
 * table or a map file owned by another user (root runs: nobody), writable
 * by others, or a symbolic link is refused (-EPERM) with exactly one
 * "gpuext: ..." line naming it; a folder of another user or open to others'
 * writes is refused the same way; good files still open. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/gx_log.h"
#include "devbpf/gx_bpf.h"
#include "include/gpuext/gx_devrt.h"
#include "tenant/gx_tenant.h"
#include "tests/gx_test.h"

static int nr_lines;
static char line[512];
static void capture(enum gx_log_level l, const char *fmt, va_list ap)
{
	(void)l;
	nr_lines++;
	vsnprintf(line, sizeof(line), fmt, ap);
}

/* Lines logged since the last call; the last one in `line`. */
static int logged(void)
{
	int n = nr_lines;
	nr_lines = 0;
	return n;
}

static int join(void)
{
	struct gx_tn_opts o = { .sz = sizeof(o), .name = "t" };
	struct gx_tn *tn = NULL;
	int err = gx_tn_open(&o, &tn);
	gx_tn_close(tn);
	return err;
}

int main(void)
{
	char dir[] = "/tmp/gx-shmtrust-XXXXXX", shm[300], tab[400], cmd[1400];
	if (!mkdtemp(dir))
		return 1;
	snprintf(shm, sizeof(shm), "%s/shm", dir);
	snprintf(tab, sizeof(tab), "%s/" GX_TN_TABLE_FILE, shm);
	setenv("GPUEXT_SHM_DIR", shm, 1);
	gx_set_print(capture);
	bool root = geteuid() == 0;

	GX_CHECK(join() == 0 && logged() == 0, "shm: a tenant table of this user is joined, nothing logged");

	/* The tenant table, planted: a table file is kept between the cases. */
	struct gx_tn_opts o = { .sz = sizeof(o), .name = "keep" };
	struct gx_tn *keep = NULL;
	GX_CHECK(gx_tn_open(&o, &keep) == 0, "shm: a process holds the table");
	for (int how = 0; how < 3; how++) {
		const char *want = how == 0 ? "owned by uid 65534" : how == 1 ? "writable by others (mode 0666)" : "a symbolic link";
		char moved[420];
		snprintf(moved, sizeof(moved), "%s.real", tab);
		if (how == 0 && !root) {
			printf("# not root: a table of nobody not planted\n");
			continue;
		}
		if (how == 0)
			(void)!chown(tab, 65534, 65534);
		else if (how == 1)
			chmod(tab, 0666);
		else if (rename(tab, moved) || symlink(moved, tab))
			return 1;
		logged();
		int err = join();
		int n = logged();
		GX_CHECK(err == -EPERM && n == 1 && strstr(line, tab) && strstr(line, want),
			 "shm: tenant table %s: refused with one line (%d: %s)", want, n, line);
		if (how == 0)
			(void)!chown(tab, getuid(), getgid());
		else if (how == 1)
			chmod(tab, 0600);
		else if (unlink(tab) || rename(moved, tab))
			return 1;
	}
	GX_CHECK(join() == 0 && logged() == 0, "shm: the repaired table is joined again");
	gx_tn_close(keep);

	/* Map files: a map created here, then planted variants of it. */
	struct gx_map_spec spec = { .name = "m", .type = GX_MAP_ARRAY, .key_size = 4, .value_size = 8, .max_entries = 4 };
	struct gx_map *m = NULL, *r = NULL;
	char mp[400], evil[420];
	GX_CHECK(gx_map__create(&spec, GX_MAP_F_SHM | GX_MAP_F_KEEP, &m) == 0, "shm: a map file created");
	gx_map__free(m);
	snprintf(mp, sizeof(mp), "%s/%d-m", shm, (int)getpid());
	snprintf(evil, sizeof(evil), "%s/evil", dir);
	GX_CHECK(gx_map__open(mp, 0, &r) == 0 && logged() == 0, "shm: a map file of this user opens");
	gx_map__free(r);
	snprintf(cmd, sizeof(cmd), "cp %s %s", mp, evil);
	if (system(cmd))
		return 1;
	for (int how = 0; how < 3; how++) {
		const char *want = how == 0 ? "owned by uid 65534" : how == 1 ? "writable by others (mode 0666)" : "a symbolic link";
		char p[440];
		snprintf(p, sizeof(p), "%s/%d-planted%d", shm, (int)getpid(), how);
		if (how == 0 && !root) {
			printf("# not root: a map file of nobody not planted\n");
			continue;
		}
		if (how == 2) {
			if (symlink(evil, p))
				return 1;
		} else {
			snprintf(cmd, sizeof(cmd), "cp %s %s && %s %s", evil, p, how == 0 ? "chown nobody:" : "chmod 666", p);
			if (system(cmd))
				return 1;
		}
		logged();
		r = NULL;
		int err = gx_map__open(p, 0, &r);
		int n = logged();
		GX_CHECK(err == -EPERM && !r && n == 1 && strstr(line, p) && strstr(line, want),
			 "shm: map file %s: refused with one line (%d: %s)", want, n, line);
	}

	/* The folder itself: another user's, or a symbolic link. */
	char other[320];
	snprintf(other, sizeof(other), "%s/other", dir);
	mkdir(other, 0700);
	if (root) {
		(void)!chown(other, 65534, 65534);
		setenv("GPUEXT_SHM_DIR", other, 1);
		logged();
		int err = join();
		int n = logged();
		GX_CHECK(err == -EPERM && n == 1 && strstr(line, other) && strstr(line, "owned by uid 65534"),
			 "shm: a maps folder of nobody: tenant table refused with one line (%d: %s)", n, line);
		m = NULL;
		err = gx_map__create(&spec, GX_MAP_F_SHM, &m);
		n = logged();
		GX_CHECK(err == -EPERM && !m && n == 1 && strstr(line, "owned by uid 65534"),
			 "shm: a maps folder of nobody: no map file created in it (%d: %s)", n, line);
	}
	snprintf(other, sizeof(other), "%s/link", dir);
	if (symlink(shm, other))
		return 1;
	setenv("GPUEXT_SHM_DIR", other, 1);
	logged();
	int err = join();
	int n = logged();
	GX_CHECK(err == -EPERM && n == 1 && strstr(line, "a symbolic link"),
		 "shm: a maps folder that is a symbolic link: refused with one line (%d: %s)", n, line);
	gx_set_print(NULL);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	(void)!system(cmd);
	return gx_test_done();
}
