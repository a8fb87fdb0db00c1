/* verifier_helpers.c — helper prototypes (argument and return types, map
 * kinds, uniformity) and the checks of one helper call. The table is the
 * single source of truth for which helpers exist; docs/devbpf.md lists it. */
#include <stdio.h>
#include <string.h>

#include "gpuext/gdev_helpers.h"
#include "devbpf/verifier_internal.h"

enum varg {
	A_NONE = 0,
	A_ANY,     /* initialised register of any type */
	A_SCALAR,
	A_MAP,     /* map handle */
	A_KEY,     /* pointer to key_size initialised bytes */
	A_VALUE,   /* pointer to value_size initialised bytes */
	A_MEM,     /* pointer to initialised memory, size in the next argument */
	A_SIZE,    /* constant or bounded size for the previous A_MEM/A_FMT */
	A_DIM,     /* constant 0, 1 or 2 */
	A_FUNC,    /* callback subprogram */
	A_FMT,     /* printk format: constant string in .rodata */
	A_ZERO,    /* flags: constant 0 */
	A_ARG0 = 64, /* + tag: a section argument pointer of that tag, offset 0 */
};

enum vret {
	R_SCALAR = 0,
	R_U32,
	R_ERR,       /* 0 or -errno */
	R_LANE,      /* 0..31 */
	R_TID,       /* 0..1023 */
	R_BDIM,      /* 1..1024 */
	R_WARP,      /* 0..31 */
	R_MAP_VALUE_OR_NULL,
};

enum {
	F_VARYING = 1u << 0,      /* result is lane-varying */
	F_UNIFORM_KEY = 1u << 1,  /* key must be warp-uniform */
	F_RINGBUF = 1u << 2,      /* map must be a ringbuf */
	F_NOT_RINGBUF = 1u << 3,  /* map must not be a ringbuf */
	F_MAP_WRITE = 1u << 4,    /* writes the map */
	F_HASH_ONLY = 1u << 5,    /* map must be a hash */
	F_UNIFORM_ARG1 = 1u << 6, /* first argument must be warp-uniform (loop bound) */
};

struct vproto {
	int32_t id;
	const char *name;
	uint8_t args[5];
	uint8_t ret;
	uint32_t flags;
};

static const struct vproto protos[] = {
	{ GDEV_HELPER_MAP_LOOKUP_ELEM, "bpf_map_lookup_elem", { A_MAP, A_KEY }, R_MAP_VALUE_OR_NULL, F_NOT_RINGBUF },
	{ GDEV_HELPER_MAP_UPDATE_ELEM, "bpf_map_update_elem", { A_MAP, A_KEY, A_VALUE, A_SCALAR }, R_ERR,
	  F_NOT_RINGBUF | F_UNIFORM_KEY | F_MAP_WRITE },
	{ GDEV_HELPER_MAP_DELETE_ELEM, "bpf_map_delete_elem", { A_MAP, A_KEY }, R_ERR,
	  F_HASH_ONLY | F_UNIFORM_KEY | F_MAP_WRITE },
	{ GDEV_HELPER_KTIME_GET_NS, "bpf_ktime_get_ns", { 0 }, R_SCALAR, 0 },
	{ GDEV_HELPER_RINGBUF_OUTPUT, "bpf_ringbuf_output", { A_MAP, A_MEM, A_SIZE, A_SCALAR }, R_ERR, F_RINGBUF },
	{ GDEV_HELPER_LOOP, "bpf_loop", { A_SCALAR, A_FUNC, A_ANY, A_ZERO }, R_SCALAR, F_UNIFORM_ARG1 },
	{ GDEV_HELPER_GLOBALTIMER, "gdev_globaltimer", { 0 }, R_SCALAR, 0 },
	{ GDEV_HELPER_SMID, "gdev_smid", { 0 }, R_U32, 0 },
	{ GDEV_HELPER_WARPID, "gdev_warpid", { 0 }, R_WARP, 0 },
	{ GDEV_HELPER_LANEID, "gdev_laneid", { 0 }, R_LANE, F_VARYING },
	{ GDEV_HELPER_BLOCK_IDX, "gdev_block_idx", { A_DIM }, R_U32, 0 },
	{ GDEV_HELPER_THREAD_IDX, "gdev_thread_idx", { A_DIM }, R_TID, F_VARYING },
	{ GDEV_HELPER_MEM_PREFETCH, "gdev_mem_prefetch", { A_SCALAR, A_SCALAR }, R_ERR, 0 },
	{ GDEV_HELPER_L2_PREFETCH, "gdev_l2_prefetch", { A_SCALAR }, R_ERR, 0 },
	{ GDEV_HELPER_PRINTK, "gdev_printk", { A_FMT, A_SIZE, A_ANY, A_ANY, A_ANY }, R_SCALAR, 0 },
	{ GDEV_HELPER_BLOCK_DIM, "gdev_block_dim", { A_DIM }, R_BDIM, 0 },
	{ GDEV_HELPER_GRID_DIM, "gdev_grid_dim", { A_DIM }, R_U32, 0 },
};

/* Known kernel helpers we refuse, with the reason. */
static const struct {
	int32_t id;
	const char *why;
} refused[] = {
	{ 6, "bpf_trace_printk is not supported (use gdev_printk)" },
	{ 12, "tail calls are not supported" },
	{ 93, "bpf_spin_lock is not allowed: locks and barriers would stall the warp" },
	{ 94, "bpf_spin_unlock is not allowed: locks and barriers would stall the warp" },
};

static const struct vproto *find_proto(int32_t id)
{
	for (size_t i = 0; i < sizeof(protos) / sizeof(protos[0]); i++)
		if (protos[i].id == id)
			return &protos[i];
	return NULL;
}

const char *vhelper_name(int32_t id)
{
	const struct vproto *p = find_proto(id);
	return p ? p->name : NULL;
}

static void set_ret(struct vreg *r0, uint8_t ret)
{
	switch (ret) {
	case R_U32: vreg_set_urange(r0, 0, 0xffffffffull); break;
	case R_LANE: vreg_set_urange(r0, 0, 31); break;
	case R_WARP: vreg_set_urange(r0, 0, 31); break;
	case R_TID: vreg_set_urange(r0, 0, 1023); break;
	case R_BDIM: vreg_set_urange(r0, 1, 1024); break;
	case R_ERR:
		vreg_mark_unknown(r0);
		r0->smin = -4095, r0->smax = 0;
		vreg_sync(r0);
		break;
	default: vreg_mark_unknown(r0); break;
	}
}

/* A section's own prototype (host struct_ops) in the internal form. A table
 * that lists bpf_loop gets the verifier's own prototype for it (a callback
 * and its context, which the public argument kinds do not describe). */
static const struct vproto *sec_proto(const struct venv *env, int32_t id, struct vproto *out)
{
	for (uint32_t i = 0; i < env->sec->nr_helpers; i++) {
		const struct gx_bpf_helper_proto *h = &env->sec->helpers[i];
		if (h->id != id)
			continue;
		if (id == GDEV_HELPER_LOOP)
			return find_proto(id);
		memset(out, 0, sizeof(*out));
		out->id = id;
		out->name = h->name;
		for (int a = 0; a < 5; a++) {
			uint8_t k = h->args[a];
			out->args[a] = k == GX_BPF_ARG_SCALAR ? A_SCALAR : k == GX_BPF_ARG_MAP ? A_MAP
				     : k == GX_BPF_ARG_MAP_KEY ? A_KEY : k == GX_BPF_ARG_MAP_VALUE ? A_VALUE
				     : k >= GX_BPF_ARG_PTR0 ? (uint8_t)(A_ARG0 + (k - GX_BPF_ARG_PTR0)) : A_NONE;
		}
		out->ret = h->ret == GX_BPF_RET_ERR ? R_ERR : h->ret == GX_BPF_RET_MAP_VALUE_OR_NULL
			 ? R_MAP_VALUE_OR_NULL : R_SCALAR;
		out->flags = F_NOT_RINGBUF | ((h->flags & GX_BPF_HELPER_F_MAP_WRITE) ? F_MAP_WRITE : 0) |
			     ((h->flags & GX_BPF_HELPER_F_HASH_ONLY) ? F_HASH_ONLY : 0);
		return out;
	}
	return NULL;
}

/* The name of the struct a kfunc argument of `tag` wants, for messages. */
static const char *tag_name(const struct venv *env, uint32_t tag)
{
	for (uint32_t i = 0; i < env->sec->nr_args; i++)
		if (env->sec->args[i].type == tag && env->sec->args[i].name)
			return env->sec->args[i].name;
	return "a handler argument";
}

int vhelper_call(struct venv *env, struct vstate *st, uint32_t idx, int32_t id, uint32_t *cb_target,
		 uint64_t *cb_iters)
{
	struct vframe *f = vcur(st);
	struct vproto own;
	const struct vproto *p = env->sec->helpers ? sec_proto(env, id, &own) : find_proto(id);
	if (!p && env->sec->helpers)
		return verr(env, idx, "helper %d is not available to %s handlers", id, env->sec->prefix);
	if (!p) {
		for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
			if (refused[i].id == id)
				return verr(env, idx, "%s", refused[i].why);
		return verr(env, idx, "unknown helper %d", id);
	}
	const struct gx_bpf_map *map = NULL;
	bool key_varying = false, any_varying = false;
	int32_t map_idx = -1;
	for (int a = 0; a < 5 && p->args[a]; a++) {
		uint8_t regno = (uint8_t)(a + 1);
		struct vreg *r = &f->regs[regno];
		int err = vcheck_value(env, idx, r, regno);
		if (err)
			return err;
		switch (p->args[a]) {
		case A_ANY:
			/* bpf_loop hands its ctx to the callback; printk's
			 * arguments go out to the host */
			if (id != GDEV_HELPER_LOOP && r->type != V_SCALAR)
				return verr(env, idx, "%s: r%d leaks addr into printk", p->name, regno);
			break;
		case A_SCALAR:
			if (r->type != V_SCALAR)
				return verr(env, idx, "%s: argument r%d must be a scalar", p->name, regno);
			if ((p->flags & F_UNIFORM_ARG1) && a == 0 && r->varying && env->simt)
				return verr(env, idx, "loop bound is lane-varying");
			if (id == GDEV_HELPER_LOOP && a == 0) {
				if (r->umax > (1u << 23))
					return verr(env, idx, "bpf_loop bound too large");
				*cb_iters = r->umax;
			}
			break;
		case A_ZERO:
			if (!vreg_is_const(r) || r->umin != 0)
				return verr(env, idx, "%s: argument r%d must be 0", p->name, regno);
			break;
		case A_MAP: {
			if (r->type != V_CONST_MAP)
				return verr(env, idx, "%s: argument r%d must be a map", p->name, regno);
			map = &env->prog->obj->maps[r->map_idx];
			map_idx = r->map_idx;
			if ((p->flags & F_RINGBUF) && map->type != GX_BPF_MAP_RINGBUF)
				return verr(env, idx, "%s: map '%s' is not a ringbuf", p->name, map->name);
			if ((p->flags & F_NOT_RINGBUF) && map->type == GX_BPF_MAP_RINGBUF)
				return verr(env, idx, "%s: map '%s' is a ringbuf", p->name, map->name);
			if ((p->flags & F_HASH_ONLY) && map->type != GX_BPF_MAP_HASH)
				return verr(env, idx, "%s: map '%s' is not a hash", p->name, map->name);
			if ((p->flags & F_MAP_WRITE) && (map->gx_flags & GX_BPF_MAP_F_RDONLY))
				return verr(env, idx, "write into read-only map '%s'", map->name);
			break;
		}
		case A_KEY:
		case A_VALUE: {
			uint32_t sz = p->args[a] == A_KEY ? map->key_size : map->value_size;
			bool vary = false;
			char sink[80];
			snprintf(sink, sizeof(sink), "map '%s'", map->name);
			err = vmem_helper_mem(env, st, idx, regno, sz, false, &vary, p->name, sink);
			if (err)
				return err;
			if (p->args[a] == A_KEY)
				key_varying = vary;
			if ((p->flags & F_UNIFORM_KEY) && p->args[a] == A_KEY && vary && env->simt)
				return verr(env, idx, "map %s key is lane-varying",
					    id == GDEV_HELPER_MAP_DELETE_ELEM ? "delete" : "update");
			break;
		}
		case A_MEM:
		case A_FMT: {
			struct vreg *sz = &f->regs[regno + 1];
			if (sz->type != V_SCALAR)
				return verr(env, idx, "%s: size argument r%d must be a scalar", p->name, regno + 1);
			if (sz->umin == 0)
				return verr(env, idx, "%s: size argument r%d may be zero", p->name, regno + 1);
			if (sz->umax > (1u << 16))
				return verr(env, idx, "%s: size argument r%d is unbounded", p->name, regno + 1);
			if (p->args[a] == A_FMT) {
				const struct gx_bpf_map *m =
					r->type == V_PTR_MAP_VALUE ? &env->prog->obj->maps[r->map_idx] : NULL;
				if (!m || !(m->gx_flags & GX_BPF_MAP_F_RDONLY) || r->omin != r->omax ||
				    !vreg_is_const(sz))
					return verr(env, idx, "printk format must be a constant string in .rodata");
				if (r->omin < 0 || r->omin + (int64_t)sz->umin > (int64_t)m->value_size)
					return verr(env, idx, "map value access out of bounds (helper argument r%d)",
						    regno);
				if (!memchr((const char *)m->init + r->omin, 0, sz->umin))
					return verr(env, idx, "printk format is not NUL-terminated");
				break;
			}
			bool vary = false;
			char sink[80];
			snprintf(sink, sizeof(sink), "%s '%s'", map && map->type == GX_BPF_MAP_RINGBUF ? "ringbuf" : "map",
				 map ? map->name : "?");
			err = vmem_helper_mem(env, st, idx, regno, sz->umax, false, &vary, p->name, sink);
			if (err)
				return err;
			break;
		}
		case A_SIZE:
			break; /* checked with its memory argument */
		default:
			if (p->args[a] >= A_ARG0) {
				/* kfunc pointer argument: the very struct the
				 * handler was given (the kernel's BTF type match
				 * on a trusted pointer at offset 0) */
				uint32_t tag = (uint32_t)(p->args[a] - A_ARG0);
				if (r->type != V_PTR_ARG || varg_of(env, r)->type != tag || r->omin != 0 ||
				    r->omax != 0)
					return verr(env, idx, "%s: argument r%d must be %s * as passed to the handler",
						    p->name, regno, tag_name(env, tag));
			}
			break;
		case A_DIM:
			if (!vreg_is_const(r) || r->umin > 2)
				return verr(env, idx, "%s: dimension must be a constant 0, 1 or 2", p->name);
			break;
		case A_FUNC: {
			if (r->type != V_PTR_FUNC)
				return verr(env, idx, "%s: argument r%d must be a function", p->name, regno);
			*cb_target = (uint32_t)r->map_idx;
			break;
		}
		}
		if (r->varying)
			any_varying = true;
	}
	(void)any_varying;
	for (int r = 1; r <= 5; r++) {
		memset(&f->regs[r], 0, sizeof(f->regs[r]));
	}
	struct vreg *r0 = &f->regs[0];
	memset(r0, 0, sizeof(*r0));
	if (p->ret == R_MAP_VALUE_OR_NULL) {
		r0->type = V_PTR_MAP_VALUE_OR_NULL;
		r0->map_idx = map_idx;
		r0->id = ++env->next_id;
		r0->tz = 63;
		r0->varying = key_varying;
	} else {
		set_ret(r0, p->ret);
		r0->varying = (p->flags & F_VARYING) ? 1 : 0;
	}
	return 0;
}
