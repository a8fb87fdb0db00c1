/* tools_dev.c — GPUs in the tools' reports (several GPUs, issue 7).
 *
 * A record, launch or map file belongs to a (process, context); the shim's
 * log says which device each context ran on (GX_TEV_CTX), so a device is
 * the CUDA ordinal as that process saw it. Reports stay the same shape on
 * one GPU: device columns, fields and trace process names appear only when
 * the data has more than one device. Traces put each GPU on its own track
 * (Chrome trace "pid" = device + 1, so GPU 0 keeps pid 1, named "gpuext
 * TOOL: GPU N (sm_XX)") with one thread per SM. */
#include <stdlib.h>
#include <string.h>

#include "cli/gx_tooldata.h"

int td_dev(const struct tooldata *td, uint32_t pid, uint32_t ctx)
{
	const struct td_ctx *c = td_ctx(td, pid, ctx);
	return c && c->dev < TD_MAX_DEVS ? (int)c->dev : 0;
}

unsigned td_nr_devs(const struct tooldata *td)
{
	unsigned char seen[TD_MAX_DEVS] = { 0 };
	unsigned n = 0;
	for (size_t i = 0; i < td->nr_ctxs; i++) {
		unsigned d = td->ctxs[i].dev < TD_MAX_DEVS ? td->ctxs[i].dev : 0;
		n += !seen[d];
		seen[d] = 1;
	}
	return n ? n : 1;
}

int td_map_file_ctx(const char *path, uint32_t *pid, uint32_t *ctx)
{
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	char *end;
	unsigned long p = strtoul(b, &end, 10);
	if (end == b || *end != '-')
		return -1;
	const char *at = strrchr(end, '@');
	*pid = (uint32_t)p;
	*ctx = at ? (uint32_t)strtoul(at + 1, NULL, 10) : 0;
	return 0;
}

struct td_tracks {
	unsigned char used[TD_MAX_DEVS][TD_MAX_SMS];
	unsigned char dev[TD_MAX_DEVS];
};

struct td_tracks *td_tracks_new(void)
{
	return calloc(1, sizeof(struct td_tracks));
}

void td_tracks_use(struct td_tracks *t, int dev, unsigned sm)
{
	if (!t || dev < 0 || dev >= TD_MAX_DEVS)
		return;
	t->dev[dev] = 1;
	if (sm < TD_MAX_SMS)
		t->used[dev][sm] = 1;
}

void td_tracks_names(FILE *tf, struct td_tracks *t, const struct tooldata *td, const char *extra_tid_name,
		     unsigned extra_tid)
{
	if (!t)
		return;
	int multi = td_nr_devs(td) > 1;
	for (int d = 0; d < TD_MAX_DEVS; d++) {
		if (!t->dev[d] && !(d == 0 && !multi && extra_tid_name))
			continue;
		if (multi) {
			unsigned sm = 0;
			for (size_t i = 0; i < td->nr_ctxs; i++)
				if (td->ctxs[i].dev == (uint32_t)d)
					sm = td->ctxs[i].sm;
			fprintf(tf, ",\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"gpuext %s: GPU %d%s",
				d + 1, td->tool, d, sm ? " (sm_" : "");
			if (sm)
				fprintf(tf, "%u)", sm);
			fprintf(tf, "\"}},\n{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"sort_index\":%d}}",
				d + 1, d);
		}
		for (unsigned s = 0; s < TD_MAX_SMS; s++)
			if (t->used[d][s])
				fprintf(tf, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"args\":{\"name\":\"SM %u\"}}",
					d + 1, s, s);
		if (extra_tid_name)
			fprintf(tf, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"args\":{\"name\":\"%s\"}}",
				d + 1, extra_tid, extra_tid_name);
	}
	free(t);
}
