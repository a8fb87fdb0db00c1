/* libFuzzer target for the tool logs' reader and the four reports
 * (tools/tooldata.c, tools/report.c, tools/NAME.c): a tool log is what a
 * process under gpuext left in its shm folder, and `gpuext tools report`
 * reads whatever is there. Any bytes, as each tool's log, give a report or
 * a one-line error, never a crash. Build: make; run:
 * tests/tools/test_tooldata_fuzz.sh. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/gx_tools.h"

static char dir[] = "/tmp/gx-fuzz-tooldata-XXXXXX";

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	if (!mkdtemp(dir) || !freopen("/dev/null", "w", stdout))
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const tools[] = { "kernelretsnoop", "threadhist", "launchlate", "memtrace" };
	char path[128], trace[128], err[256];
	snprintf(trace, sizeof(trace), "%s/trace.json", dir);
	for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++) {
		snprintf(path, sizeof(path), "%s/4242-%s.events", dir, tools[i]);
		FILE *f = fopen(path, "wb");
		if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f))
			abort();
		err[0] = 0;
		int r = gx_tools_report(tools[i], dir, size & 1, size & 2 ? trace : NULL, err, sizeof(err));
		if (r < 0 && (!err[0] || !memchr(err, 0, sizeof(err))))
			abort(); /* a refusal says why */
		unlink(path);
		unlink(trace);
	}
	return 0;
}
