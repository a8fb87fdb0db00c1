/* bs_parse.c — the copies a rewrite made, read from the rewriter's notes
 * (gx_blocksched.h: gx_bs_parse_log). One record per kernel: its claiming
 * or static copy, and beside a claiming one the static-only copy the
 * guard's third arm runs. The notes are the rewriter's own text, but a
 * parser is a parser: any bytes give records or nothing, never a crash
 * (tests/blocksched/test_bs_parse.c, fuzz_bs_parse.c). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blocksched/gx_blocksched.h"
#include "gpuext/gx_work.h"

int gx_bs_parse_log(const char *log, struct gx_bs_kernel **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	size_t cap = 0;
	for (const char *l = log; l && *l;) {
		const char *e = strchr(l, '\n');
		size_t len = e ? (size_t)(e - l) : strlen(l);
		char name[512], copy[600], line[1300], ub[4] = "";
		unsigned np, bar;
		if (len < sizeof(line)) {
			memcpy(line, l, len);
			line[len] = 0;
			if (sscanf(line,
				   "persistent: %511[^:]: copy %599s transformed (work descriptor: parameter %u "
				   GX_WORK_PARAM ", loop barrier %u, unit barrier %3[a-z])",
				   name, copy, &np, &bar, ub) == 5 &&
			    np > 0) {
				bool so = strstr(line, ", static only)") != NULL;
				struct gx_bs_kernel *pk = NULL;
				/* the kernel's other copy: the other kind, another name, the
				 * same parameters (the launcher gives either copy the same
				 * arguments) — else a record of its own */
				for (size_t i = 0; i < *n && !pk; i++)
					if (!strcmp((*out)[i].name, name) && !(*out)[i].scopy &&
					    (*out)[i].static_only != so && strcmp((*out)[i].copy, copy) &&
					    (*out)[i].nparams == np)
						pk = &(*out)[i];
				if (pk) {
					/* the static-only one is scopy */
					char *c = strdup(copy);
					if (!c)
						return -ENOMEM;
					if (so) {
						pk->scopy = c;
					} else {
						pk->scopy = pk->copy;
						pk->copy = c;
						pk->unit_bar = !strcmp(ub, "yes");
						pk->static_only = false;
					}
					l = e ? e + 1 : NULL;
					continue;
				}
				if (*n == cap) {
					cap = cap ? 2 * cap : 8;
					struct gx_bs_kernel *nk = realloc(*out, cap * sizeof(*nk));
					if (!nk)
						return -ENOMEM;
					*out = nk;
				}
				struct gx_bs_kernel *k = &(*out)[*n];
				k->name = strdup(name);
				k->copy = strdup(copy);
				k->nparams = np;
				k->unit_bar = !strcmp(ub, "yes");
				k->static_only = so;
				k->scopy = NULL;
				if (!k->name || !k->copy) {
					free(k->name);
					free(k->copy);
					return -ENOMEM;
				}
				(*n)++;
			}
		}
		l = e ? e + 1 : NULL;
	}
	return 0;
}

void gx_bs_kernels_free(struct gx_bs_kernel *k, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(k[i].name);
		free(k[i].copy);
		free(k[i].scopy);
	}
	free(k);
}
