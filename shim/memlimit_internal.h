/* memlimit_internal.h — per-tenant device-memory limits in the shim
 * (memlimit.c, docs/limits.md): every allocation entry point reserves its
 * size from the tenant's budget in the tenant table first and fails with
 * CUDA_ERROR_OUT_OF_MEMORY past the limit; frees give it back.
 *
 * gx_memlimit_on is the one branch an allocation pays when this process is
 * no tenant (it is set at cuInit by tenant.c, never cleared but in a forked
 * child). */
#ifndef SHIM_MEMLIMIT_INTERNAL_H
#define SHIM_MEMLIMIT_INTERNAL_H

#include "shim/shim_internal.h"

struct gx_tn;
extern bool gx_memlimit_on;
#define GX_ML_ON() __builtin_expect(__atomic_load_n(&gx_memlimit_on, __ATOMIC_RELAXED), 0)

/* What a reservation is keyed by at free time. */
enum gx_ml_kind { GX_ML_PTR, GX_ML_HANDLE, GX_ML_ARRAY, GX_ML_NR };

/* Reserve n bytes for the current context's tenant: CUDA_SUCCESS (and *tn,
 * NULL when nothing was counted) or CUDA_ERROR_OUT_OF_MEMORY. */
CUresult gx_ml_take(size_t n, struct gx_tn **tn);
/* The driver refused: give the reservation back. */
void gx_ml_undo(struct gx_tn *tn, size_t n);
/* The driver allocated: remember key -> (n, tn) for the free. */
void gx_ml_keep(enum gx_ml_kind k, uint64_t key, size_t n, struct gx_tn *tn);
/* About to free key: take its record out (0 if none); after the driver's
 * answer, gx_ml_freed gives it back (ok) or puts it back. */
struct gx_ml_rec {
	struct gx_tn *tn;
	uint64_t key;
	size_t n;
	enum gx_ml_kind kind;
};
bool gx_ml_unkeep(enum gx_ml_kind k, uint64_t key, struct gx_ml_rec *r);
void gx_ml_freed(const struct gx_ml_rec *r, bool ok);

/* tenant.c: the tenant entry of this process for a device (joined on first
 * use), NULL when this process is no tenant or could not join. */
struct gx_tn *gx_tenancy_of(CUdevice dev);
/* tenant.c, at cuInit: this process's limits from the environment. */
void gx_memlimit_enable(void);

#endif
