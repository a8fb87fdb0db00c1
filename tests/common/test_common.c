#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/gx_ctl.h"
#include "common/gx_log.h"
#include "common/gx_util.h"
#include "tests/gx_test.h"

static char last_msg[256];
static void capture(enum gx_log_level l, const char *fmt, va_list ap)
{
	(void)l;
	vsnprintf(last_msg, sizeof(last_msg), fmt, ap);
}

int main(void)
{
	GX_CHECK(gx_log_parse_level("debug") == GX_LOG_DEBUG, "log level by name");
	GX_CHECK(gx_log_parse_level("2") == GX_LOG_INFO, "log level by number");
	GX_CHECK(gx_log_parse_level("loud") == -1, "unknown log level refused");

	gx_set_print(capture);
	gx_log_set_level(GX_LOG_WARN);
	pr_info("hidden");
	GX_CHECK(last_msg[0] == 0, "message above threshold dropped");
	for (int i = 0; i < 3; i++)
		pr_warn_once("once %d", i);
	GX_CHECK(!strcmp(last_msg, "once 0"), "pr_warn_once logs the first time only");
	gx_set_print(NULL);

	struct gx_buf b;
	gx_buf_init(&b);
	for (int i = 0; i < 1000; i++)
		gx_buf_printf(&b, "%d,", i);
	size_t len;
	char *s = gx_buf_steal(&b, &len);
	GX_CHECK(s && len == strlen(s) && !strncmp(s, "0,1,2,", 6), "gx_buf grows and steals");
	free(s);

	char path[] = "/tmp/gx_test_XXXXXX";
	int fd = mkstemp(path);
	close(fd);
	GX_CHECK(gx_write_file(path, "hello", 5) == 0, "write file");
	char *rd;
	GX_CHECK(gx_read_file(path, &rd, &len, 0) == 0 && len == 5 && !strcmp(rd, "hello"), "read file back");
	free(rd);
	GX_CHECK(gx_read_file(path, &rd, &len, 3) == -EFBIG, "read file over max_len refused");
	unlink(path);
	GX_CHECK(gx_read_file("/nonexistent/x", &rd, &len, 0) == -ENOENT, "missing file gives -ENOENT");
	/* A FIFO stands for /dev/null & co: written through, never replaced. */
	char fifo[] = "/tmp/gx_test_fifo_XXXXXX";
	int tfd = mkstemp(fifo);
	close(tfd);
	unlink(fifo);
	struct stat st;
	int rd_fd = mkfifo(fifo, 0600) == 0 ? open(fifo, O_RDWR | O_NONBLOCK) : -1;
	char got[8] = "";
	GX_CHECK(rd_fd >= 0 && gx_write_file(fifo, "x", 1) == 0 && !stat(fifo, &st) && S_ISFIFO(st.st_mode) &&
			 read(rd_fd, got, sizeof(got)) == 1 && got[0] == 'x',
		 "writing a FIFO/device goes through it (no rename over it)");
	if (rd_fd >= 0)
		close(rd_fd);
	unlink(fifo);

	/* the launch sample's form, shared by gpuext-run, gpuext attach and the shim */
	unsigned long ev = 0, fi = 0;
	GX_CHECK(!gx_ctl_sample_parse("16", &ev, &fi) && ev == 16 && fi == GX_CTL_SAMPLE_FIRST,
		 "launch sample: N alone, the default first 16");
	GX_CHECK(!gx_ctl_sample_parse("64,first=0", &ev, &fi) && ev == 64 && fi == 0, "launch sample: N,first=K");
	GX_CHECK(!gx_ctl_sample_parse("1000000,first=1000000000", &ev, &fi) && ev == 1000000 && fi == 1000000000,
		 "launch sample: the largest N and K");
	const char *bad[] = { "",
			      "0",
			      "1000001",
			      "4x",
			      "-4",
			      " 4",
			      "16,",
			      "16,first=",
			      "16,first=4x",
			      "16,first=-1",
			      "16,First=4",
			      "16,first=1000000001",
			      "99999999999999999999999",
			      "16,first=4,first=5" };
	int refused = 0;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		refused += gx_ctl_sample_parse(bad[i], &ev, &fi) == -EINVAL;
	GX_CHECK(refused == (int)(sizeof(bad) / sizeof(bad[0])), "launch sample: %d of %zu malformed forms refused",
		 refused, sizeof(bad) / sizeof(bad[0]));
	return gx_test_done();
}
