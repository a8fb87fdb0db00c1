// SPDX-License-Identifier: GPL-2.0
/* gpuext_core.c — the policy side of gpuext.ko: the two struct_ops types
 * (gpu_mem_ops, gpu_sched_ops), the kfuncs, the table of attached policies
 * (several at once, one per scope) and the hooks backends call (the
 * backends themselves are listed in gpuext_backend.c).
 *
 * Authority stays here: a policy only reorders regions through kfuncs that
 * act on the region it was handed; eviction always removes exactly one
 * region, chosen by a bounded re-pick loop that ends in FIFO; garbage
 * decisions and kfunc misuse are counted and, past GX_POLICY_MAX_ERRORS,
 * disable the policy. Policies are called under rcu_read_lock and removed
 * with list_del_rcu + synchronize_rcu, so a hook never runs a freed one. */
#include <linux/bpf.h>
#include <linux/bpf_verifier.h>
#include <linux/btf.h>
#include <linux/btf_ids.h>
#include <linux/capability.h>
#include <linux/cgroup.h>
#include <linux/module.h>
#include <linux/rculist.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include "gpuext_internal.h"

struct gx_counters gx_stat;

struct gx_policy {
	struct list_head node;
	void *kdata; /* struct gpu_mem_ops / gpu_sched_ops (kernel copy) */
	u32 kind;    /* GX_POLICY_MEM / GX_POLICY_SCHED */
	u32 scope;
	u64 scope_id;
	char name[GPU_OPS_NAME_LEN];
	atomic64_t calls, errors;
	bool disabled;
};

static DEFINE_MUTEX(gx_pol_lock);
static LIST_HEAD(gx_mem_policies);
static LIST_HEAD(gx_sched_policies);
static u32 gx_nr_mem, gx_nr_sched;

u64 gx_task_cgroup_id(struct task_struct *t)
{
	u64 id = 0;

	rcu_read_lock();
	id = cgroup_id(task_dfl_cgroup(t));
	rcu_read_unlock();
	return id;
}

u64 gx_current_cgroup_id(void)
{
	return gx_task_cgroup_id(current);
}

/* ---- policy table ---- */

/* Most specific match: tgid, then cgroup, then global. RCU read side. */
static struct gx_policy *gx_policy_find(struct list_head *head, u32 tgid, u64 cgid)
{
	struct gx_policy *p, *cg = NULL, *gl = NULL;

	list_for_each_entry_rcu(p, head, node) {
		if (READ_ONCE(p->disabled))
			continue;
		if (p->scope == GPU_SCOPE_TGID && p->scope_id == tgid)
			return p;
		if (p->scope == GPU_SCOPE_CGROUP && p->scope_id == cgid)
			cg = p;
		else if (p->scope == GPU_SCOPE_GLOBAL)
			gl = p;
	}
	return cg ?: gl;
}

static void gx_policy_error(struct gx_policy *p)
{
	gx_inc(policy_errors);
	if (atomic64_inc_return(&p->errors) == GX_POLICY_MAX_ERRORS) {
		WRITE_ONCE(p->disabled, true);
		pr_warn("gpuext: policy '%s' disabled after %d errors; FIFO fallback\n", p->name,
			GX_POLICY_MAX_ERRORS);
	}
}

static int gx_policy_add(u32 kind, void *kdata, u32 scope, u64 scope_id, const char *name)
{
	struct list_head *head = kind == GX_POLICY_MEM ? &gx_mem_policies : &gx_sched_policies;
	struct gx_policy *p, *q;

	/* bpf() already demands CAP_BPF for struct_ops; a policy governs
	 * other processes' memory, so check again here. */
	if (!capable(CAP_BPF) && !capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (scope == GPU_SCOPE_TGID && scope_id != task_tgid_nr(current) &&
	    !capable(CAP_SYS_ADMIN) && !capable(CAP_SYS_NICE))
		return -EPERM;
	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	p->kind = kind;
	p->kdata = kdata;
	p->scope = scope;
	p->scope_id = scope_id;
	strscpy(p->name, name, sizeof(p->name));
	mutex_lock(&gx_pol_lock);
	list_for_each_entry(q, head, node) {
		if (q->scope == scope && q->scope_id == scope_id) {
			mutex_unlock(&gx_pol_lock);
			kfree(p);
			return -EEXIST;
		}
	}
	list_add_tail_rcu(&p->node, head);
	if (kind == GX_POLICY_MEM)
		gx_nr_mem++;
	else
		gx_nr_sched++;
	gx_live_inc();
	mutex_unlock(&gx_pol_lock);
	pr_info("gpuext: attached %s policy '%s' (scope %u:%llu)\n",
		kind == GX_POLICY_MEM ? "mem" : "sched", p->name, scope, scope_id);
	return 0;
}

static void gx_policy_del(u32 kind, void *kdata)
{
	struct list_head *head = kind == GX_POLICY_MEM ? &gx_mem_policies : &gx_sched_policies;
	struct gx_policy *p, *found = NULL;

	mutex_lock(&gx_pol_lock);
	list_for_each_entry(p, head, node) {
		if (p->kdata == kdata) {
			found = p;
			list_del_rcu(&p->node);
			if (kind == GX_POLICY_MEM)
				gx_nr_mem--;
			else
				gx_nr_sched--;
			break;
		}
	}
	mutex_unlock(&gx_pol_lock);
	if (!found)
		return;
	synchronize_rcu();
	pr_info("gpuext: detached policy '%s'\n", found->name);
	kfree(found);
	gx_live_dec();
}

int gx_policies_fill(struct gx_policy_info *buf, u32 room, u32 *total)
{
	struct list_head *heads[2] = { &gx_mem_policies, &gx_sched_policies };
	struct gx_policy *p;
	u32 n = 0, t = 0;
	int i;

	mutex_lock(&gx_pol_lock);
	for (i = 0; i < 2; i++) {
		list_for_each_entry(p, heads[i], node) {
			if (n < room) {
				struct gx_policy_info *e = &buf[n++];

				memset(e, 0, sizeof(*e));
				strscpy(e->name, p->name, sizeof(e->name));
				e->kind = p->kind;
				e->scope = p->scope;
				e->scope_id = p->scope_id;
				e->calls = atomic64_read(&p->calls);
				e->errors = atomic64_read(&p->errors);
				e->disabled = READ_ONCE(p->disabled);
			}
			t++;
		}
	}
	mutex_unlock(&gx_pol_lock);
	*total = t;
	return n;
}

void gx_policy_counts(u32 *mem, u32 *sched)
{
	mutex_lock(&gx_pol_lock);
	*mem = gx_nr_mem;
	*sched = gx_nr_sched;
	mutex_unlock(&gx_pol_lock);
}

/* ---- one call into a memory policy ---- */

struct gx_mem_call {
	struct gpu_mem_ctx pub; /* what the policy sees; kfuncs container_of it */
	struct gx_dev *dev;
	struct gx_policy *pol;
	struct gpu_region *region;
	struct gpu_fault *fault;
	bool region_set;
	u32 first, outer;
	u32 nr_migrate;
	struct { u64 va, len; } migrate[GPU_MIGRATE_MAX];
};

/* Returns GPU_DEFAULT when there is no policy, it declined, or it erred. */
static int gx_mem_call(struct gx_mem_call *c, u32 event, u32 pressure, u32 attempt)
{
	struct gpu_region *r = c->region;
	struct gpu_mem_ops *ops;
	struct gx_policy *p;
	int ret = GPU_DEFAULT;

	c->pub.event = event;
	c->pub.pressure = pressure;
	c->pub.attempt = attempt;
	c->pub.nr_resident = c->dev->nr_resident;
	c->pub.capacity = c->dev->capacity;
	c->pub.tgid = r->tgid;
	c->pub.cgroup_id = r->cgroup_id;

	rcu_read_lock();
	p = gx_policy_find(&gx_mem_policies, r->tgid, r->cgroup_id);
	if (!p)
		goto out;
	c->pol = p;
	ops = p->kdata;
	switch (event) {
	case GPU_EV_ACTIVATE:
		if (!ops->gpu_activate)
			goto out;
		ret = ops->gpu_activate(&c->pub, r);
		break;
	case GPU_EV_ACCESS:
		if (!ops->gpu_access)
			goto out;
		ret = ops->gpu_access(&c->pub, r);
		break;
	case GPU_EV_EVICT:
		if (!ops->gpu_evict_prepare)
			goto out;
		ret = ops->gpu_evict_prepare(&c->pub, r);
		break;
	case GPU_EV_PREFETCH:
		if (!ops->gpu_prefetch)
			goto out;
		ret = ops->gpu_prefetch(&c->pub, r, c->fault);
		break;
	}
	atomic64_inc(&p->calls);
	gx_inc(policy_calls);
	if (ret != GPU_DEFAULT && ret != GPU_BYPASS) {
		gx_policy_error(p);
		ret = -EINVAL;
	}
out:
	rcu_read_unlock();
	return ret;
}

int gx_hook_activate(struct gx_dev *dev, struct gpu_region *r)
{
	struct gx_mem_call c = { .dev = dev, .region = r };
	int ret;

	gx_inc(activations);
	ret = gx_mem_call(&c, GPU_EV_ACTIVATE, GPU_PRESSURE_NONE, 0);
	if (ret != GPU_BYPASS) {
		dev->ops->move(dev, r, false); /* default: FIFO by activation */
		return GPU_DEFAULT;
	}
	return ret;
}

int gx_hook_access(struct gx_dev *dev, struct gpu_region *r)
{
	struct gx_mem_call c = { .dev = dev, .region = r };
	u32 i;
	int ret;

	gx_inc(accesses);
	ret = gx_mem_call(&c, GPU_EV_ACCESS, GPU_PRESSURE_NONE, 0);
	for (i = 0; i < c.nr_migrate; i++)
		if (dev->ops->migrate(dev, r, c.migrate[i].va, c.migrate[i].len) >= 0)
			gx_inc(migrations);
	return ret == GPU_BYPASS ? GPU_BYPASS : GPU_DEFAULT; /* default: no reorder */
}

struct gpu_region *gx_hook_evict_pick(struct gx_dev *dev, u32 pressure)
{
	struct gpu_region *r;
	u32 attempt;

	for (attempt = 0;; attempt++) {
		struct gx_mem_call c = { .dev = dev };
		int ret;

		r = dev->ops->head(dev);
		if (!r)
			return NULL;
		if (pressure >= GPU_PRESSURE_CRITICAL || attempt >= GX_EVICT_TRIES) {
			gx_inc(fallbacks);
			return r;
		}
		c.region = r;
		ret = gx_mem_call(&c, GPU_EV_EVICT, pressure ?: GPU_PRESSURE_EVICTING, attempt);
		if (ret == GPU_BYPASS)
			continue; /* the policy reordered: re-pick */
		if (ret < 0)
			gx_inc(fallbacks);
		return r;
	}
}

int gx_hook_prefetch(struct gx_dev *dev, struct gpu_region *r, struct gpu_fault *f,
		     struct gx_prefetch_out *out)
{
	struct gx_mem_call c = { .dev = dev, .region = r, .fault = f };
	u32 i;
	int ret;

	ret = gx_mem_call(&c, GPU_EV_PREFETCH, GPU_PRESSURE_NONE, 0);
	out->first = f->default_first;
	out->outer = f->default_outer;
	if (ret >= 0 && c.region_set) {
		out->first = c.first;
		out->outer = c.outer;
	}
	out->nr_migrate = ret >= 0 ? c.nr_migrate : 0;
	for (i = 0; i < out->nr_migrate; i++) {
		out->migrate[i].va = c.migrate[i].va;
		out->migrate[i].len = c.migrate[i].len;
		if (dev->ops->migrate(dev, r, c.migrate[i].va, c.migrate[i].len) >= 0)
			gx_inc(migrations);
	}
	return ret == GPU_BYPASS ? GPU_BYPASS : GPU_DEFAULT;
}

/* ---- one call into a scheduling policy ---- */

struct gx_sched_call {
	struct gpu_sched_ctx pub;
	struct gpu_queue *q;
	bool rejected;
};

static int gx_sched_call(struct gx_sched_call *c, u32 event)
{
	struct gpu_sched_ops *ops;
	struct gx_policy *p;
	int ret = GPU_DEFAULT;

	c->pub.event = event;
	c->pub.tgid = c->q->tgid;
	c->pub.cgroup_id = c->q->cgroup_id;
	rcu_read_lock();
	p = gx_policy_find(&gx_sched_policies, c->q->tgid, c->q->cgroup_id);
	if (!p)
		goto out;
	ops = p->kdata;
	if (event == GPU_EV_TASK_INIT && ops->task_init)
		ret = ops->task_init(&c->pub, c->q);
	else if (event == GPU_EV_TASK_DESTROY && ops->task_destroy)
		ret = ops->task_destroy(&c->pub, c->q);
	else
		goto out; /* no handler: not a call */
	atomic64_inc(&p->calls);
	gx_inc(policy_calls);
	if (ret != GPU_DEFAULT && ret != GPU_BYPASS) {
		gx_policy_error(p);
		c->rejected = false; /* a broken policy cannot refuse binds */
		ret = -EINVAL;
	}
out:
	rcu_read_unlock();
	return ret;
}

int gx_hook_task_init(struct gx_dev *dev, struct gpu_queue *q)
{
	struct gx_sched_call c = { .q = q };

	(void)dev;
	gx_sched_call(&c, GPU_EV_TASK_INIT);
	if (c.rejected) {
		gx_inc(queues_rejected);
		return -EPERM;
	}
	gx_inc(queues_created);
	return 0;
}

void gx_hook_task_destroy(struct gx_dev *dev, struct gpu_queue *q)
{
	struct gx_sched_call c = { .q = q };

	(void)dev;
	gx_sched_call(&c, GPU_EV_TASK_DESTROY);
}

const struct gx_hooks gx_hooks = {
	.abi = GX_HOOKS_ABI,
	.dev_register = gx_dev_register,
	.dev_unregister = gx_dev_unregister,
	.activate = gx_hook_activate,
	.access = gx_hook_access,
	.evict_pick = gx_hook_evict_pick,
	.prefetch = gx_hook_prefetch,
	.task_init = gx_hook_task_init,
	.task_destroy = gx_hook_task_destroy,
};
EXPORT_SYMBOL_GPL(gx_hooks);

/* ---- kfuncs ---- */

static int gx_kf_err(struct gx_mem_call *c, int err)
{
	if (c->pol)
		gx_policy_error(c->pol);
	return err;
}

__bpf_kfunc_start_defs();

__bpf_kfunc int bpf_gpu_move_head(struct gpu_mem_ctx *ctx, struct gpu_region *r)
{
	struct gx_mem_call *c = container_of(ctx, struct gx_mem_call, pub);

	if (ctx->event == GPU_EV_PREFETCH)
		return gx_kf_err(c, -EINVAL);
	return c->dev->ops->move(c->dev, r, true);
}

__bpf_kfunc int bpf_gpu_move_tail(struct gpu_mem_ctx *ctx, struct gpu_region *r)
{
	struct gx_mem_call *c = container_of(ctx, struct gx_mem_call, pub);

	if (ctx->event == GPU_EV_PREFETCH)
		return gx_kf_err(c, -EINVAL);
	return c->dev->ops->move(c->dev, r, false);
}

__bpf_kfunc int bpf_gpu_set_prefetch_region(struct gpu_mem_ctx *ctx, u32 first, u32 outer)
{
	struct gx_mem_call *c = container_of(ctx, struct gx_mem_call, pub);

	if (ctx->event != GPU_EV_PREFETCH || !c->fault)
		return gx_kf_err(c, -EINVAL);
	if (first >= outer || first < c->fault->max_first || outer > c->fault->max_outer)
		return gx_kf_err(c, -ERANGE);
	c->first = first;
	c->outer = outer;
	c->region_set = true;
	return 0;
}

__bpf_kfunc int bpf_gpu_migrate_range(struct gpu_mem_ctx *ctx, u64 va, u64 len)
{
	struct gx_mem_call *c = container_of(ctx, struct gx_mem_call, pub);

	if (ctx->event != GPU_EV_PREFETCH && ctx->event != GPU_EV_ACCESS)
		return gx_kf_err(c, -EINVAL);
	if (!len || len > GPU_MIGRATE_MAX_LEN || va >= GX_VA_LIMIT || len > GX_VA_LIMIT - va)
		return gx_kf_err(c, -ERANGE);
	if (c->nr_migrate >= GPU_MIGRATE_MAX)
		return -ENOSPC; /* not an error: the policy asked for a lot */
	c->migrate[c->nr_migrate].va = va;
	c->migrate[c->nr_migrate].len = len;
	c->nr_migrate++;
	return 0;
}

__bpf_kfunc int bpf_gpu_set_attr(struct gpu_sched_ctx *ctx, struct gpu_queue *q, u32 attr,
				 u64 value)
{
	struct gx_sched_call *c = container_of(ctx, struct gx_sched_call, pub);

	if (ctx->event != GPU_EV_TASK_INIT || q != c->q)
		return -EINVAL;
	switch (attr) {
	case GPU_ATTR_PRIORITY:
		if (value > GPU_PRIO_MAX)
			return -ERANGE;
		q->priority = value;
		return 0;
	case GPU_ATTR_TIMESLICE_US:
		if (value < GPU_TIMESLICE_MIN_US || value > GPU_TIMESLICE_MAX_US)
			return -ERANGE;
		q->timeslice_us = value;
		return 0;
	case GPU_ATTR_INTERLEAVE:
		if (value > GPU_IL_HIGH)
			return -ERANGE;
		q->interleave = value;
		return 0;
	}
	return -EINVAL;
}

__bpf_kfunc int bpf_gpu_reject_bind(struct gpu_sched_ctx *ctx, struct gpu_queue *q)
{
	struct gx_sched_call *c = container_of(ctx, struct gx_sched_call, pub);

	if (ctx->event != GPU_EV_TASK_INIT || q != c->q)
		return -EINVAL;
	c->rejected = true;
	return 0;
}

/* Launch gating lives in user-space runtimes (the shim's tenants): the
 * kernel never calls task_launch, so these only let the same policy
 * objects load here. */
__bpf_kfunc int bpf_gpu_hold_launch(struct gpu_sched_ctx *ctx, struct gpu_launch *l, u64 us)
{
	return -EOPNOTSUPP;
}

__bpf_kfunc int bpf_gpu_set_window(struct gpu_sched_ctx *ctx, struct gpu_tenant *t, u32 n)
{
	return -EOPNOTSUPP;
}

__bpf_kfunc_end_defs();

BTF_KFUNCS_START(gx_kfunc_ids)
BTF_ID_FLAGS(func, bpf_gpu_move_head, KF_TRUSTED_ARGS)
BTF_ID_FLAGS(func, bpf_gpu_move_tail, KF_TRUSTED_ARGS)
BTF_ID_FLAGS(func, bpf_gpu_set_prefetch_region, KF_TRUSTED_ARGS)
BTF_ID_FLAGS(func, bpf_gpu_migrate_range, KF_TRUSTED_ARGS)
BTF_ID_FLAGS(func, bpf_gpu_set_attr, KF_TRUSTED_ARGS)
BTF_ID_FLAGS(func, bpf_gpu_reject_bind, KF_TRUSTED_ARGS)
BTF_ID_FLAGS(func, bpf_gpu_hold_launch, KF_TRUSTED_ARGS)
BTF_ID_FLAGS(func, bpf_gpu_set_window, KF_TRUSTED_ARGS)
BTF_KFUNCS_END(gx_kfunc_ids)

static const struct btf_kfunc_id_set gx_kfunc_set = {
	.owner = THIS_MODULE,
	.set = &gx_kfunc_ids,
};

/* ---- struct_ops plumbing shared by both types ---- */

static const struct bpf_func_proto *gx_get_func_proto(enum bpf_func_id func_id,
						      const struct bpf_prog *prog)
{
	return bpf_base_func_proto(func_id, prog);
}

static bool gx_is_valid_access(int off, int size, enum bpf_access_type type,
			       const struct bpf_prog *prog, struct bpf_insn_access_aux *info)
{
	return bpf_tracing_btf_ctx_access(off, size, type, prog, info);
}

/* No btf_struct_access: everything a policy is handed is read-only. */
static const struct bpf_verifier_ops gx_verifier_ops = {
	.get_func_proto = gx_get_func_proto,
	.is_valid_access = gx_is_valid_access,
};

static int gx_st_init(struct btf *btf)
{
	return 0;
}

/* Data members (scope, flags, scope_id, name) come from user space here;
 * the generic code only copies function members. Same layout in both types. */
#define GX_INIT_DATA(type)                                                                   \
	static int gx_##type##_init_member(const struct btf_type *t,                          \
					   const struct btf_member *member, void *kdata,       \
					   const void *udata)                                  \
	{                                                                                    \
		const struct type *u = udata;                                                \
		struct type *k = kdata;                                                      \
		u32 moff = __btf_member_bit_offset(t, member) / 8;                           \
                                                                                             \
		switch (moff) {                                                              \
		case offsetof(struct type, scope):                                           \
			if (u->scope > GPU_SCOPE_CGROUP)                                     \
				return -EINVAL;                                              \
			k->scope = u->scope;                                                 \
			return 1;                                                            \
		case offsetof(struct type, flags):                                           \
			if (u->flags)                                                        \
				return -EINVAL;                                              \
			k->flags = 0;                                                        \
			return 1;                                                            \
		case offsetof(struct type, scope_id):                                        \
			k->scope_id = u->scope_id;                                           \
			return 1;                                                            \
		case offsetof(struct type, name):                                            \
			if (strnlen(u->name, sizeof(u->name)) >= sizeof(u->name))            \
				return -EINVAL;                                              \
			memcpy(k->name, u->name, sizeof(k->name));                           \
			return 1;                                                            \
		}                                                                            \
		return 0;                                                                    \
	}

GX_INIT_DATA(gpu_mem_ops)
GX_INIT_DATA(gpu_sched_ops)

static int gx_check_scope(u32 scope, u64 id)
{
	if (scope == GPU_SCOPE_GLOBAL && id)
		return -EINVAL;
	if (scope != GPU_SCOPE_GLOBAL && !id)
		return -EINVAL;
	if (scope == GPU_SCOPE_TGID && id > PID_MAX_LIMIT)
		return -EINVAL;
	return 0;
}

static int gx_mem_reg(void *kdata, struct bpf_link *link)
{
	struct gpu_mem_ops *ops = kdata;
	int ret = gx_check_scope(ops->scope, ops->scope_id);

	return ret ?: gx_policy_add(GX_POLICY_MEM, kdata, ops->scope, ops->scope_id,
				    ops->name[0] ? ops->name : "mem");
}

static void gx_mem_unreg(void *kdata, struct bpf_link *link)
{
	gx_policy_del(GX_POLICY_MEM, kdata);
}

static int gx_sched_reg(void *kdata, struct bpf_link *link)
{
	struct gpu_sched_ops *ops = kdata;
	int ret = gx_check_scope(ops->scope, ops->scope_id);

	return ret ?: gx_policy_add(GX_POLICY_SCHED, kdata, ops->scope, ops->scope_id,
				    ops->name[0] ? ops->name : "sched");
}

static void gx_sched_unreg(void *kdata, struct bpf_link *link)
{
	gx_policy_del(GX_POLICY_SCHED, kdata);
}

/* CFI stubs: the signatures the trampolines are checked against. */
static int gx_stub_mem(struct gpu_mem_ctx *ctx, struct gpu_region *r)
{
	return 0;
}

static int gx_stub_prefetch(struct gpu_mem_ctx *ctx, struct gpu_region *r, struct gpu_fault *f)
{
	return 0;
}

static int gx_stub_sched(struct gpu_sched_ctx *ctx, struct gpu_queue *q)
{
	return 0;
}

static int gx_stub_launch(struct gpu_sched_ctx *ctx, struct gpu_tenant *t, struct gpu_launch *l)
{
	return 0;
}

static struct gpu_mem_ops gx_mem_stubs = {
	.gpu_activate = gx_stub_mem,
	.gpu_access = gx_stub_mem,
	.gpu_evict_prepare = gx_stub_mem,
	.gpu_prefetch = gx_stub_prefetch,
};

static struct gpu_sched_ops gx_sched_stubs = {
	.task_init = gx_stub_sched,
	.task_destroy = gx_stub_sched,
	.task_launch = gx_stub_launch,
};

static struct bpf_struct_ops gx_mem_st_ops = {
	.verifier_ops = &gx_verifier_ops,
	.init = gx_st_init,
	.init_member = gx_gpu_mem_ops_init_member,
	.reg = gx_mem_reg,
	.unreg = gx_mem_unreg,
	.cfi_stubs = &gx_mem_stubs,
	.name = "gpu_mem_ops",
	.owner = THIS_MODULE,
};

static struct bpf_struct_ops gx_sched_st_ops = {
	.verifier_ops = &gx_verifier_ops,
	.init = gx_st_init,
	.init_member = gx_gpu_sched_ops_init_member,
	.reg = gx_sched_reg,
	.unreg = gx_sched_unreg,
	.cfi_stubs = &gx_sched_stubs,
	.name = "gpu_sched_ops",
	.owner = THIS_MODULE,
};

int gx_core_init(void)
{
	int ret;

	ret = register_btf_kfunc_id_set(BPF_PROG_TYPE_STRUCT_OPS, &gx_kfunc_set);
	ret = ret ?: register_bpf_struct_ops(&gx_mem_st_ops, gpu_mem_ops);
	ret = ret ?: register_bpf_struct_ops(&gx_sched_st_ops, gpu_sched_ops);
	return ret;
}

void gx_core_exit(void)
{
	/* struct_ops types go away with the module's BTF; attached policies
	 * hold a module reference, so none is left here. */
}
