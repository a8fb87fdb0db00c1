/* tn_ctl.c — the control plane: list tenants, change a tenant's class or
 * window while it runs, reap the dead. Used by `gpuext tenant`; maps the
 * table without joining it, so looking never makes a tenant. */
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/stat.h>

#include "common/gx_util.h"
#include "tenant/tn_internal.h"

const char *gx_tn_class_name(int cls)
{
	return cls == GPU_CLASS_LC ? "lc" : "be";
}

int gx_tn_parse_class(const char *s)
{
	if (!s)
		return gx_err(-EINVAL);
	if (!strcasecmp(s, "lc") || !strcasecmp(s, "latency") || !strcmp(s, "1"))
		return GPU_CLASS_LC;
	if (!strcasecmp(s, "be") || !strcasecmp(s, "best-effort") || !strcmp(s, "0"))
		return GPU_CLASS_BE;
	return gx_err(-EINVAL);
}

static int open_table(struct tn_table **t, int *fd, char *path, size_t n)
{
	int err = tn_map(0, t, fd, path, n);
	return err == -EPERM || err == -ENOENT ? -ENOENT : err;
}

/* Nobody left: the table goes (the last process died without leaving). */
static void drop_if_empty(struct tn_table *t, int fd, const char *path)
{
	for (uint32_t i = 0; i < t->hiwater; i++)
		if (t->procs[i].pid)
			return;
	struct stat a, b;
	if (!stat(path, &a) && !fstat(fd, &b) && a.st_ino == b.st_ino)
		unlink(path);
}

int gx_tn_gc(void)
{
	struct tn_table *t;
	int fd;
	char path[400];
	int err = open_table(&t, &fd, path, sizeof(path));
	if (err)
		return gx_err(err);
	int n = 0;
	if (!(err = tn_lock(t))) {
		n = tn_reap_locked(t, tn_pidns_of((uint32_t)getpid()), tn_now());
		drop_if_empty(t, fd, path);
		tn_unlock(t);
	}
	tn_unmap(t, fd);
	return gx_err(err ? err : n);
}

static void add_proc(struct gx_tn_info *o, const struct tn_proc *p, uint32_t pid)
{
	if (o->nr_procs < 8)
		o->pids[o->nr_procs] = pid;
	o->nr_procs++;
	o->inflight += LD(p->inflight);
	uint32_t mx = LD(p->max_inflight);
	o->max_inflight = mx > o->max_inflight ? mx : o->max_inflight;
	o->launches += LD(p->launches);
	o->completions += LD(p->completions);
	o->untracked += LD(p->untracked);
	o->held += LD(p->held);
	o->throttled_ns += LD(p->throttled_ns);
	o->gpu_ns += LD(p->gpu_ns);
#define MAXQ(f) o->f = LD(p->f) > o->f ? LD(p->f) : o->f
	MAXQ(p50_ns);
	MAXQ(p99_ns);
	MAXQ(p999_ns);
	MAXQ(kernel_ns);
#undef MAXQ
}

static void tenant_info(struct gx_tn_info *o, const struct tn_tenant *tt)
{
	memset(o, 0, sizeof(*o));
	memcpy(o->name, tt->name, sizeof(o->name));
	o->name[sizeof(o->name) - 1] = 0;
	o->cls = (int)LD(tt->cls);
	o->window = LD(tt->window);
	o->created_ns = tt->created_ns;
	o->mem_limit = LD(tt->mem_limit);
	o->mem_used = LD(tt->mem_used);
	o->mem_hiwater = LD(tt->mem_hiwater);
	o->mem_denied = LD(tt->mem_denied);
	o->gpu_share = LD(tt->gpu_share);
	o->gpu_ns = LD(tt->gpu_ns);
	for (int i = 0; i < TN_GPUS; i++) {
		const struct tn_gpu *g = &tt->gpus[i];
		if (!LD(g->used))
			continue;
		struct gx_tn_gpu_info *gi = &o->gpus[o->nr_gpus++];
		memcpy(gi->dev, g->dev, sizeof(gi->dev));
		gi->mem_limit = LD(g->mem_limit) ? LD(g->mem_limit) : o->mem_limit;
		gi->mem_used = LD(g->mem_used);
		gi->mem_hiwater = LD(g->mem_hiwater);
		gi->mem_denied = LD(g->mem_denied);
	}
}

void gx_tn_self(const struct gx_tn *tn, struct gx_tn_info *out)
{
	const struct tn_proc *p = &tn->t->procs[tn->slot];
	tenant_info(out, &tn->t->tenants[tn->tenant]);
	add_proc(out, p, LD(p->pid));
}

void gx_tn_self_usage(const struct gx_tn *tn, uint64_t *mem_used, uint64_t *mem_hiwater, uint64_t *gpu_ns)
{
	const struct tn_proc *p = &tn->t->procs[tn->slot];
	*mem_used = LD(p->mem_used);
	*mem_hiwater = LD(p->mem_hiwater);
	*gpu_ns = LD(p->gpu_ns);
}

int gx_tn_list(struct gx_tn_info *out, int max, int reap)
{
	struct tn_table *t;
	int fd;
	char path[400];
	int err = open_table(&t, &fd, path, sizeof(path));
	if (err)
		return gx_err(err);
	if (reap && !tn_lock(t)) {
		tn_reap_locked(t, tn_pidns_of((uint32_t)getpid()), tn_now());
		tn_unlock(t);
	}
	int n = 0;
	for (int i = 0; i < GX_TN_MAX_TENANTS && n < max; i++) {
		const struct tn_tenant *tt = &t->tenants[i];
		if (!LD(tt->used))
			continue;
		struct gx_tn_info *o = &out[n++];
		tenant_info(o, tt);
		o->launches = LD(tt->launches);
		o->completions = LD(tt->completions);
		o->untracked = LD(tt->untracked);
		o->held = LD(tt->held);
		o->throttled_ns = LD(tt->throttled_ns);
		for (uint32_t j = 0; j < LD(t->hiwater) && j < GX_TN_MAX_PROCS; j++) {
			const struct tn_proc *p = &t->procs[j];
			uint32_t pid = LD(p->pid);
			if (pid && LD(p->tenant) == (uint32_t)i)
				add_proc(o, p, pid);
		}
	}
	tn_unmap(t, fd);
	return n;
}

/* Change the named tenant under the table lock: apply(tenant, arg), then
 * bump the generation so processes re-read it; -ENOENT if it is not there. */
int tn_update_tenant(const char *name, void (*apply)(struct tn_tenant *, const void *), const void *arg)
{
	struct tn_table *t;
	int fd;
	char path[400];
	int err = open_table(&t, &fd, path, sizeof(path));
	if (err)
		return err;
	if ((err = tn_lock(t))) {
		tn_unmap(t, fd);
		return err;
	}
	err = -ENOENT;
	for (int i = 0; i < GX_TN_MAX_TENANTS; i++) {
		struct tn_tenant *tt = &t->tenants[i];
		if (!tt->used || strncmp(tt->name, name, GX_TN_NAME_MAX))
			continue;
		apply(tt, arg);
		err = 0;
	}
	if (!err)
		tn_bump(t);
	tn_unlock(t);
	tn_unmap(t, fd);
	return err;
}

struct cls_window {
	int cls;
	int64_t window;
};

static void apply_cls_window(struct tn_tenant *tt, const void *arg)
{
	const struct cls_window *a = arg;
	if (a->cls >= 0)
		ST(tt->cls, (uint32_t)a->cls);
	if (a->window >= 0)
		ST(tt->window, (uint32_t)a->window);
}

int gx_tn_set(const char *name, int cls, int64_t window)
{
	if (!name || (cls >= 0 && cls != GPU_CLASS_LC && cls != GPU_CLASS_BE) || window > UINT32_MAX)
		return gx_err(-EINVAL);
	struct cls_window a = { cls, window };
	return gx_err(tn_update_tenant(name, apply_cls_window, &a));
}
