/* hx_internal.h — the executor's private types, shared by hx_load.c
 * (object → policy), hx_verify.c (static checks) and hx_run.c (events). */
#ifndef HX_INTERNAL_H
#define HX_INTERNAL_H
#include "common/gx_bpf_isa.h"
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include "gpuext/gpu_ext.h"
#include "hostexec/gx_hostexec.h"

/* Helper ids the policies may call (kernel numbering) and our kfunc ids. */
enum {
	HX_H_LOOKUP = 1, HX_H_UPDATE = 2, HX_H_DELETE = 3, HX_H_KTIME = 5,
	HX_H_PIDTGID = 14, HX_H_LOOP = 181,
	HX_KF_BASE = 0x4000,
	HX_KF_MOVE_HEAD = HX_KF_BASE, HX_KF_MOVE_TAIL, HX_KF_SET_PREFETCH,
	HX_KF_MIGRATE, HX_KF_SET_ATTR, HX_KF_REJECT, HX_KF_HOLD, HX_KF_WINDOW, HX_KF_END,
};
/* Handler slots: gpu_mem_ops members 0..3, gpu_sched_ops members 0..2
 * (task_init, task_destroy, task_launch). */
enum { HX_MEM = 0, HX_SCHED = 1 };
#define HX_MAX_HANDLERS 4
#define HX_MAX_MAPS 16
#define HX_MAX_PROGS 8
#define HX_MAX_INSNS 8192
#define HX_STEP_BUDGET 65536 /* instructions one handler call may execute */

struct hx_map {
	char name[64];
	uint32_t type, key_size, value_size, max_entries;
	bool rdonly, internal;
	uint8_t *data;   /* internal/array: values; hash: slots */
	size_t data_len;
	uint64_t clock;  /* LRU stamps */
	uint32_t nr;     /* hash: live entries */
	uint32_t tombs;  /* hash: deleted slots (hx_map_maintain rebuilds) */
	struct gx_map *shm; /* shared-memory copy (gpuext map dump), or NULL */
};

struct hx_prog {
	char name[64];
	struct bpf_insn *insns;
	size_t cnt;
	void *native; /* machine code (hx_native.c), or NULL: interpreted */
};

struct hx_policy {
	int kind; /* HX_MEM / HX_SCHED */
	char name[GPU_OPS_NAME_LEN + 1];
	char file[128];
	struct hx_prog progs[HX_MAX_PROGS];
	int nprogs;
	struct hx_prog *handler[HX_MAX_HANDLERS];
	struct hx_map maps[HX_MAX_MAPS];
	int nmaps;
	struct gx_bpf_object *obj; /* while loading: its BTF serves hx_verify.c */
	struct { char name[48]; int map; uint32_t off, size; } globals[64]; /* <= 8 bytes */
	int nglobals;
	int errors;
	bool disabled;
	void *native; /* struct hx_native (hx_native.c), or NULL */
};

/* hx_load.c */
int hx_policy_load(struct hx_policy *p, const char *path, const char *knobs, bool shm, char *why, size_t wlen);
void hx_policy_free(struct hx_policy *p);
void *hx_policy_global(const struct hx_policy *p, const char *name, uint32_t *size);
/* hx_verify.c: static checks of one handler; kind/slot say which kfuncs fit. */
int hx_verify_prog(const struct hx_prog *prog, int kind, int slot, const struct hx_policy *p,
		   char *why, size_t wlen);
/* hx_native.c: compile p's programs with libgxjit.so (dlopen'ed); 0, or
 * -errno with why set (then everything stays interpreted). */
struct gx_bpf_helper_entry;
int hx_native_compile(struct hx_policy *p, const struct gx_bpf_helper_entry *helpers, size_t nr_helpers, char *why,
		      size_t wl);
/* After p was copied (the native state points back at its policy). */
void hx_native_rebind(struct hx_policy *p);
uint64_t hx_native_run(struct hx_policy *p, struct hx_prog *prog, void *ctx, void *user);
void hx_native_free(void *native);
/* hx_guard.c: a handler call's fault guard. hx_guard_install once (it
 * chains to the previous SIGSEGV/SIGBUS handlers); then per call:
 * sigsetjmp(g.jb, 0) returning non-zero means the call faulted (g.sig,
 * g.addr set, the guard already left); else enter, call, leave. */
struct hx_guard {
	sigjmp_buf jb;
	struct hx_guard *prev; /* nested guards of this thread */
	int sig;               /* SIGSEGV or SIGBUS after a fault, else 0 */
	void *addr;            /* the faulting address */
};
int hx_guard_install(void);
void hx_guard_enter(struct hx_guard *g);
void hx_guard_leave(struct hx_guard *g);
/* hx_maps.c */
uint8_t *hx_map_lookup(struct hx_map *m, const void *key);
int hx_map_update(struct hx_map *m, const void *key, const void *val, uint64_t flags);
int hx_map_delete(struct hx_map *m, const void *key);
int hx_map_init(struct hx_map *m);
/* Between handler calls: rebuild a hash whose deleted slots pile up. */
void hx_map_maintain(struct hx_map *m);
/* Back m with a map file in /dev/shm/gpuext-$UID (devbpf/gx_bpf.h), named
 * "<policy>.<map>"; global data sections become one-element arrays.
 * Replaces m->data. 0 or -errno (then m is unchanged). */
int hx_map_share(struct hx_map *m, const char *policy);
void hx_map_release(struct hx_map *m);
#endif
