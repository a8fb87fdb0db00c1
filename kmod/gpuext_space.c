// SPDX-License-Identifier: GPL-2.0
/* gpuext_space.c — address spaces known to gpuext: one per process that
 * registered through /dev/gpuext (its mm, for the "own memory only" rule)
 * and the simulator's test spaces. Ids come from an idr under gx_lock; a
 * space that goes away is dropped from every backend first. */
#include <linux/idr.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include "gpuext_internal.h"

static DEFINE_IDR(gx_spaces);
static u32 gx_nr_spaces;

struct gx_space *gx_space_new(u32 tgid, u64 cgid, struct mm_struct *mm)
{
	struct gx_space *sp = kzalloc(sizeof(*sp), GFP_KERNEL);
	int id;

	if (!sp)
		return ERR_PTR(-ENOMEM);
	id = idr_alloc(&gx_spaces, sp, 1, INT_MAX, GFP_KERNEL);
	if (id < 0) {
		kfree(sp);
		return ERR_PTR(id == -ENOSPC ? -ENOSPC : -ENOMEM);
	}
	sp->id = id;
	sp->tgid = tgid;
	sp->cgroup_id = cgid;
	if (mm) {
		mmgrab(mm);
		sp->mm = mm;
	}
	gx_nr_spaces++;
	gx_live_inc();
	return sp;
}

void gx_space_free(struct gx_space *sp)
{
	gx_backend_space_drop(sp->id);
	idr_remove(&gx_spaces, sp->id);
	if (sp->mm)
		mmdrop(sp->mm);
	gx_nr_spaces--;
	kfree(sp);
	gx_live_dec();
}

struct gx_space *gx_space_find(u32 id)
{
	if (!id || id > INT_MAX)
		return NULL;
	return idr_find(&gx_spaces, id);
}

u32 gx_space_count(void)
{
	return gx_nr_spaces;
}

/* Free every test space (a backend's reset). gx_lock held. */
void gx_space_drop_tests(void)
{
	struct gx_space *sp;
	int id;

	idr_for_each_entry(&gx_spaces, sp, id)
		if (sp->test)
			gx_space_free(sp);
}
