/* stderr_log.h — the shim tests read what the shim logs: stderr goes to a
 * temporary file, and checks count the lines that mention something. */
#ifndef GX_TESTS_SHIM_STDERR_LOG_H
#define GX_TESTS_SHIM_STDERR_LOG_H
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static FILE *logf_;

/* Send stderr (the shim's log) to a temporary file; stdout stays a line at a time. */
static inline void log_capture(void)
{
	logf_ = tmpfile();
	fflush(stderr);
	dup2(fileno(logf_), 2);
	setvbuf(stdout, NULL, _IOLBF, 0);
}

/* The log's current end, for log_count(from, ...). */
static inline long log_mark(void)
{
	fflush(stderr);
	fseek(logf_, 0, SEEK_END);
	return ftell(logf_);
}

/* Lines since `from` containing `s`. */
static inline int log_count(long from, const char *s)
{
	fflush(stderr);
	fseek(logf_, from, SEEK_SET);
	char line[2048];
	int n = 0;
	while (fgets(line, sizeof(line), logf_))
		if (strstr(line, s))
			n++;
	return n;
}
#endif
