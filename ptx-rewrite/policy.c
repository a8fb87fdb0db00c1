/* policy.c — the linked policy code's names and extent (policy_internal.h): one
 * place for what pass_link.c decides and the later passes rely on. */
#include <stdlib.h>
#include <string.h>

#include "ptx-rewrite/passlib_internal.h"
#include "ptx-rewrite/policy_internal.h"

const char *ptx_policy_name(const struct ptx_policy *p, const char *name)
{
	for (size_t i = 0; i < p->nr_renames; i++)
		if (!strcmp(p->renames[i].from, name))
			return p->renames[i].to;
	return name;
}

int ptx_policy_rename(struct ptx_policy *p, struct ptx_module *m, const char *from)
{
	struct ptx_rename *r = realloc(p->renames, (p->nr_renames + 1) * sizeof(*r));
	if (!r)
		return -ENOMEM;
	p->renames = r;
	r[p->nr_renames].from = from;
	r[p->nr_renames].to = ptx_sprintf(m, "%s_p_%s", m->fresh_prefix, from);
	if (!r[p->nr_renames].to)
		return -ENOMEM;
	p->nr_renames++;
	return 0;
}

void ptx_policy_append(struct ptx_policy *p, struct ptx_module *m, struct ptx_item *first, struct ptx_item *last)
{
	struct ptx_item *hdr = ptx_module_header_end(m);
	ptx_item_insert_after(m, p->last ? p->last : hdr, first, last);
	p->last = last;
}

void ptx_policy_insert_after(struct ptx_policy *p, struct ptx_module *m, struct ptx_item *at, struct ptx_item *first,
			     struct ptx_item *last)
{
	ptx_item_insert_after(m, at, first, last);
	if (p->last == at)
		p->last = last;
}

void ptx_policy_free(struct ptx_policy *p)
{
	free(p->renames);
	p->renames = NULL;
	p->nr_renames = 0;
}
