/* hx_native.c — the executor's native back end: a policy's handlers
 * compiled to machine code by the devbpf JIT (LLVM ORC, GX_JIT_NATIVE),
 * reached only through libgxjit.so loaded with dlopen (jitlib_open.c), so
 * the executor — and the shim — never link LLVM. Where the library cannot
 * be loaded (the GPU machine has no libLLVM-19) or a program does not
 * translate, the interpreter runs it (one info line says why).
 *
 * Helpers and kfuncs are the interpreter's own (hx_run.c passes its table):
 * each becomes a JIT extern through a small trampoline that finds the
 * current call's state in a thread-local pointer. Map handles are the
 * addresses of gx_devrt_map descriptors (what the JIT reads value
 * addresses from); the trampolines translate them back to the policy's
 * hx_map before calling the helper.
 *
 * Native code has no run-time memory checks and no step budget: it runs
 * only programs hx_verify.c proved safe (memory, bounded loops, kfunc
 * arguments) at load, as the kernel runs JIT'd struct_ops programs. The
 * shim uses it by default (GPUEXT_HOSTPOLICY_JIT=interp: the interpreter). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devbpf/gx_bpf.h"
#include "gpuext/gx_devrt.h"
#include "attach/gx_attach.h"
#include "hostexec/hx_internal.h"

#define NX_MAX_HELPERS 16

struct hx_native {
	struct gx_jit *jit;
	struct gx_devrt_map dm[HX_MAX_MAPS];
	struct hx_policy *pol;
};

static __thread struct {
	void *user;
	struct hx_native *nx;
} nx_cur;

static const struct gx_bpf_helper_entry *nx_helpers;
static size_t nr_nx_helpers;

typedef struct gx_jit *(*jit_new_fn)(const struct gx_jit_prog *, size_t, const struct gx_jit_opts *, char *, size_t);
typedef void (*jit_free_fn)(struct gx_jit *);
typedef void *(*jit_func_fn)(const struct gx_jit *, const char *);
static jit_new_fn p_new;
static jit_free_fn p_free;
static jit_func_fn p_func;

/* A map handle of native code -> the interpreter's (what the helpers expect). */
static uint64_t handle(uint64_t h)
{
	struct hx_native *nx = nx_cur.nx;
	uint64_t b = (uint64_t)(uintptr_t)nx->dm, e = b + sizeof(nx->dm);
	if (h < b || h >= e || (h - b) % sizeof(nx->dm[0]))
		return h;
	return (uint64_t)(uintptr_t)&nx->pol->maps[(h - b) / sizeof(nx->dm[0])];
}

static unsigned long long tramp(int i, unsigned long long a1, unsigned long long a2, unsigned long long a3,
				unsigned long long a4, unsigned long long a5)
{
	const struct gx_bpf_helper_entry *h = &nx_helpers[i];
	if (h->id == HX_H_LOOKUP || h->id == HX_H_UPDATE || h->id == HX_H_DELETE)
		a1 = handle(a1);
	return h->fn(nx_cur.user, a1, a2, a3, a4, a5);
}

#define T(i)                                                                                               \
	static unsigned long long tramp##i(unsigned long long a1, unsigned long long a2, unsigned long long a3, \
					   unsigned long long a4, unsigned long long a5)                     \
	{                                                                                                  \
		return tramp(i, a1, a2, a3, a4, a5);                                                       \
	}
T(0) T(1) T(2) T(3) T(4) T(5) T(6) T(7) T(8) T(9) T(10) T(11) T(12) T(13) T(14) T(15)
#undef T
static unsigned long long (*const tramps[NX_MAX_HELPERS])(unsigned long long, unsigned long long, unsigned long long,
							   unsigned long long, unsigned long long) = {
	tramp0, tramp1, tramp2, tramp3, tramp4, tramp5, tramp6, tramp7,
	tramp8, tramp9, tramp10, tramp11, tramp12, tramp13, tramp14, tramp15,
};

/* The library is looked for once per process; a failure is remembered
 * (with its reason), so later policies fall back without another dlopen. */
static char jitlib_why[256];

static int load_jitlib(char *why, size_t wl)
{
	if (p_new)
		return 0;
	if (jitlib_why[0]) {
		snprintf(why, wl, "%s", jitlib_why);
		return -ENOENT;
	}
	jit_new_fn n = (jit_new_fn)gx_jitlib_sym("gx_jit__new", why, wl);
	jit_free_fn f = n ? (jit_free_fn)gx_jitlib_sym("gx_jit__free", why, wl) : NULL;
	jit_func_fn fn = f ? (jit_func_fn)gx_jitlib_sym("gx_jit__func", why, wl) : NULL;
	if (!fn) {
		snprintf(jitlib_why, sizeof(jitlib_why), "%s", why[0] ? why : "the JIT library cannot be loaded");
		return -ENOENT;
	}
	p_free = f;
	p_func = fn;
	p_new = n;
	return 0;
}

int hx_native_compile(struct hx_policy *p, const struct gx_bpf_helper_entry *helpers, size_t nr_helpers, char *why,
		      size_t wl)
{
	if (nr_helpers > NX_MAX_HELPERS) {
		snprintf(why, wl, "too many helpers");
		return -E2BIG;
	}
	int err = load_jitlib(why, wl);
	if (err)
		return err;
	nx_helpers = helpers;
	nr_nx_helpers = nr_helpers;
	struct hx_native *nx = calloc(1, sizeof(*nx));
	if (!nx)
		return -ENOMEM;
	struct gx_jit_map maps[HX_MAX_MAPS];
	for (int i = 0; i < p->nmaps; i++) {
		struct hx_map *m = &p->maps[i];
		bool arr = m->internal || m->type == BPF_MAP_TYPE_ARRAY;
		nx->dm[i] = (struct gx_devrt_map){
			.type = arr ? GX_MAP_ARRAY : GX_MAP_HASH,
			.key_size = m->internal ? 4 : m->key_size,
			.value_size = m->internal ? (uint32_t)m->data_len : m->value_size,
			.max_entries = m->internal ? 1 : m->max_entries,
			.nr_shards = 1,
			.data = (uint64_t)(uintptr_t)m->data,
			.data_size = m->data_len,
		};
		maps[i] = (struct gx_jit_map){.name = m->name, .type = nx->dm[i].type, .key_size = nx->dm[i].key_size,
					      .value_size = nx->dm[i].value_size, .max_entries = nx->dm[i].max_entries,
					      .host = (struct gx_map *)(void *)&nx->dm[i]};
	}
	struct gx_jit_extern ext[NX_MAX_HELPERS];
	char syms[NX_MAX_HELPERS][24];
	for (size_t i = 0; i < nr_helpers; i++) {
		snprintf(syms[i], sizeof(syms[i]), "hx_tramp_%zu", i);
		ext[i] = (struct gx_jit_extern){.kfunc = 0, .id = (int)helpers[i].id, .symbol = syms[i], .fn = tramps[i]};
	}
	struct gx_jit_prog progs[HX_MAX_PROGS];
	char fnames[HX_MAX_PROGS][80];
	int np = 0;
	for (int i = 0; i < p->nprogs; i++) {
		snprintf(fnames[np], sizeof(fnames[np]), "hx_%d_%s", i, p->progs[i].name);
		for (char *c = fnames[np]; *c; c++)
			if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9')))
				*c = '_';
		progs[np++] = (struct gx_jit_prog){.name = p->progs[i].name, .func = fnames[i],
						   .insns = p->progs[i].insns, .nr_insns = p->progs[i].cnt};
	}
	struct gx_jit_opts o = {.sz = sizeof(o), .target = GX_JIT_NATIVE, .maps = maps, .nr_maps = (size_t)p->nmaps,
				.ret64 = 1, .externs = ext, .nr_externs = nr_helpers};
	nx->jit = p_new(progs, (size_t)np, &o, why, wl);
	if (!nx->jit) {
		free(nx);
		return -EINVAL;
	}
	for (int i = 0; i < p->nprogs; i++) {
		p->progs[i].native = p_func(nx->jit, fnames[i]);
		if (!p->progs[i].native) {
			snprintf(why, wl, "no native code for %s", p->progs[i].name);
			hx_native_free(nx);
			for (int k = 0; k < p->nprogs; k++)
				p->progs[k].native = NULL;
			return -ENOEXEC;
		}
	}
	nx->pol = p;
	p->native = nx;
	return 0;
}

void hx_native_rebind(struct hx_policy *p)
{
	if (p->native)
		((struct hx_native *)p->native)->pol = p;
}

uint64_t hx_native_run(struct hx_policy *p, struct hx_prog *prog, void *ctx, void *user)
{
	__typeof__(nx_cur) saved = nx_cur;
	nx_cur.user = user;
	nx_cur.nx = p->native;
	uint64_t r = ((uint64_t(*)(void *))prog->native)(ctx);
	nx_cur = saved;
	return r;
}

void hx_native_free(void *native)
{
	struct hx_native *nx = native;
	if (!nx)
		return;
	if (nx->jit && p_free)
		p_free(nx->jit);
	free(nx);
}
