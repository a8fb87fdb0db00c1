/* shim_internal.h — internals shared by the files of the shim (libcuda.so.1).
 *
 * The shim exports every driver symbol. Forwarded ones are assembly
 * trampolines (gx_tramp.S, generated) jumping through gx_slots[]; intercepted
 * ones are C functions in this directory that call the real driver through
 * the same slots with REAL(name). The slot of a symbol is resolved on its
 * first call (lazy.S -> gx_resolve_slot), so nothing touches the real driver
 * before the application calls into it. */
#ifndef SHIM_INTERNAL_H
#define SHIM_INTERNAL_H

/* All ABI variants of every driver function get their real prototypes
 * (cuMemFree and cuMemFree_v2, cuLaunchKernel and cuLaunchKernel_ptsz...). */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/gx_log.h"
#include "gx_syms.h"
#include "common/gx_util.h"

/* Generated tables (gx_tramp.S), indexed by enum gx_sym. */
extern void *gx_slots[GX_NR_SYMS];            /* where calls go now */
extern void *const gx_lazy[GX_NR_SYMS];       /* initial slot values */
extern void *const gx_tramp[GX_NR_SYMS];      /* our forwarding trampolines */
extern void *const gx_ours[GX_NR_SYMS];       /* what we export (wrapper or trampoline) */
extern const char *const gx_sym_names[GX_NR_SYMS];

/* The real driver's function for a symbol, resolved on first use. */
#define REAL(name) ((__typeof__(&name))__atomic_load_n(&gx_slots[GX_SYM_##name], __ATOMIC_RELAXED))

static inline bool gx_sym_intercepted(unsigned i)
{
	return gx_ours[i] != gx_tramp[i];
}

/* real.c */
void *gx_resolve_slot(unsigned i);
void *gx_real_handle(void);              /* dlopen the real driver once; NULL if none */
const char *gx_real_path(void);
void *gx_real_sym(unsigned i);           /* the real driver's address of symbol i, or NULL */
int gx_sym_find(const char *name);       /* index of a name, or -1 */
bool gx_is_ours(const void *addr);       /* does addr lie in this library? */
void gx_real_reset_after_fork(void);

/* config.c: process-wide settings, read once. */
struct gx_config {
	bool disabled;       /* GPUEXT_DISABLE=1: forward only, no rewriting, no events */
	const char *policy;  /* GPUEXT_POLICY */
	const char *tool;    /* GPUEXT_TOOL */
	const char *sched;   /* GPUEXT_SCHED: a schedule policy, "obj.bpf.o[,knobs]" */
};
extern struct gx_config gx_config;
void gx_config_load(void);
extern int gx_initialized; /* cuInit succeeded */

/* Locks: every shim lock is registered so pthread_atfork can hold them all.
 * `order` is the lock order: outer locks (taken first) have lower numbers. */
enum { GX_LOCK_EVENTS = 10, GX_LOCK_TABLES = 20, GX_LOCK_TENANT = 30, GX_LOCK_REAL = 90 };
void gx_lock_register(pthread_mutex_t *m, int order);

/* attach.c: a device's arch as major*10+minor (90 for sm_90), 0 if unknown. */
unsigned gx_dev_sm(CUdevice d);

/* Tag for a CUDA error, "CUDA_ERROR_X (n)", from the real driver if loaded. */
const char *gx_cu_errname(CUresult rc, char *buf, size_t len);

#endif
