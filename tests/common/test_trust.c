/* test_trust.c — the trust rule for files in shared places (gx_trust.h):
 * a file or folder of this user closed to others passes; one owned by
 * another user (root runs: chown to nobody), writable by its group or by
 * others, a symbolic link, a FIFO (refused without hanging) are refused with
 * -EPERM and a reason; GX_TRUST_OWN refuses root's files for another
 * user, GX_TRUST_PRIVATE any bit for group or others; a missing file is
 * -ENOENT; gx_read_trusted reads what it checked. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/gx_trust.h"
#include "common/gx_util.h"
#include "tests/gx_test.h"

static char why[96];

static int open_rd(const char *p, unsigned rule)
{
	why[0] = 0;
	int fd = gx_open_trusted(p, O_RDONLY, rule, why, sizeof(why));
	if (fd >= 0)
		close(fd);
	return fd >= 0 ? 0 : fd;
}

static void put(const char *p, mode_t mode)
{
	unlink(p);
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd >= 0) {
		(void)!write(fd, "gpuext\n", 7);
		fchmod(fd, mode);
		close(fd);
	}
}

int main(void)
{
	char dir[] = "/tmp/gx-trust-XXXXXX", f[256], g[256], l[256], sub[256];
	if (!mkdtemp(dir))
		return 1;
	snprintf(f, sizeof(f), "%s/f", dir);
	snprintf(g, sizeof(g), "%s/g", dir);
	snprintf(l, sizeof(l), "%s/l", dir);
	snprintf(sub, sizeof(sub), "%s/sub", dir);

	put(f, 0644);
	GX_CHECK(open_rd(f, 0) == 0, "trust: a 0644 file of this user is trusted");
	GX_CHECK(gx_dir_trusted(dir, 0, why, sizeof(why)) == 0, "trust: a 0700 folder of this user is trusted");
	char *buf = NULL;
	size_t len = 0;
	GX_CHECK(gx_read_trusted(f, 0, &buf, &len, 0, why, sizeof(why)) == 0 && len == 7 && !strcmp(buf, "gpuext\n"),
		 "trust: gx_read_trusted reads the checked file");
	free(buf);
	GX_CHECK(open_rd(f, GX_TRUST_PRIVATE) == -EPERM && strstr(why, "open to group or others (mode 0644)"),
		 "trust: GX_TRUST_PRIVATE refuses a 0644 file (%s)", why);

	put(f, 0666);
	GX_CHECK(open_rd(f, 0) == -EPERM && !strcmp(why, "writable by others (mode 0666)"),
		 "trust: a file writable by others is refused (%s)", why);
	put(f, 0664);
	GX_CHECK(open_rd(f, 0) == -EPERM && !strcmp(why, "writable by its group (mode 0664)"),
		 "trust: a file writable by its group is refused (%s)", why);

	put(g, 0644);
	if (symlink(g, l))
		return 1;
	GX_CHECK(open_rd(l, 0) == -EPERM && !strcmp(why, "a symbolic link"),
		 "trust: a symbolic link to a good file is refused (%s)", why);
	GX_CHECK(gx_dir_trusted(l, 0, why, sizeof(why)) == -EPERM && !strcmp(why, "a symbolic link"),
		 "trust: a symbolic link as folder is refused (%s)", why);
	char fifo[300];
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	mkfifo(fifo, 0600);
	GX_CHECK(open_rd(fifo, 0) == -EPERM && !strcmp(why, "not a regular file"),
		 "trust: a FIFO is refused, without hanging (%s)", why);
	GX_CHECK(gx_dir_trusted(f, 0, why, sizeof(why)) == -EPERM && !strcmp(why, "not a folder"),
		 "trust: a file as folder is refused (%s)", why);
	snprintf(fifo, sizeof(fifo), "%s/none", dir);
	GX_CHECK(open_rd(fifo, 0) == -ENOENT && gx_dir_trusted(fifo, 0, why, sizeof(why)) == -ENOENT,
		 "trust: a missing file or folder is -ENOENT, not a refusal");

	mkdir(sub, 0700);
	chmod(sub, 0777);
	GX_CHECK(gx_dir_trusted(sub, 0, why, sizeof(why)) == -EPERM && !strcmp(why, "writable by others (mode 0777)"),
		 "trust: a folder writable by others is refused (%s)", why);
	chmod(sub, 01777);
	GX_CHECK(gx_dir_trusted(sub, 0, why, sizeof(why)) == -EPERM, "trust: a sticky folder writable by others (/tmp-like) is refused");

	if (geteuid() == 0) {
		chmod(sub, 0755);
		put(f, 0644);
		GX_CHECK(chown(f, 65534, 65534) == 0 && open_rd(f, 0) == -EPERM && !strcmp(why, "owned by uid 65534"),
			 "trust: a file of another user (nobody) is refused (%s)", why);
		GX_CHECK(chown(sub, 65534, 65534) == 0 && gx_dir_trusted(sub, 0, why, sizeof(why)) == -EPERM &&
				 !strcmp(why, "owned by uid 65534"),
			 "trust: a folder of another user (nobody) is refused (%s)", why);
		/* root's files for another user: trusted, unless GX_TRUST_OWN */
		put(f, 0644);
		chmod(dir, 0755);
		if (setegid(65534) || seteuid(65534)) {
			GX_CHECK(0, "trust: seteuid(nobody)");
		} else {
			GX_CHECK(open_rd(f, 0) == 0, "trust: a root-owned 0644 file is trusted by another user");
			GX_CHECK(open_rd(f, GX_TRUST_OWN) == -EPERM && !strcmp(why, "owned by uid 0"),
				 "trust: ... but not with GX_TRUST_OWN (%s)", why);
			GX_CHECK(gx_dir_trusted(dir, 0, why, sizeof(why)) == 0 &&
					 gx_dir_trusted(dir, GX_TRUST_OWN, why, sizeof(why)) == -EPERM,
				 "trust: a root-owned 0755 folder: read by another user, not written (GX_TRUST_OWN)");
			if (seteuid(0) || setegid(0))
				return 1;
		}
	} else {
		printf("# not root: the checks of files owned by another user are skipped\n");
	}
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	(void)!system(cmd);
	return gx_test_done();
}
