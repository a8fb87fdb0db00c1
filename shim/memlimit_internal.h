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

/* The current context's device (dev, may be NULL) and this process's tenant
 * entry for it; NULL: nothing is counted. */
struct gx_tn *gx_ml_current(CUdevice *dev);
/* One info line the first time an allocation is refused. */
void gx_ml_denied(size_t n);
/* memlimit_pool.c: read this process's pools of tn again (the driver trims
 * them at synchronisations down to their release threshold) and give back
 * what they no longer hold; returns those bytes. */
uint64_t gx_ml_pools_settle(struct gx_tn *tn);

/* Reserve, allocate, remember; the allocation call is the macro's body. */
#define ML_ALLOC(kind, size, keyexpr, call)                              \
	do {                                                             \
		struct gx_tn *tn_;                                       \
		size_t sz_ = (size);                                     \
		if (gx_ml_take(sz_, &tn_) != CUDA_SUCCESS)               \
			return CUDA_ERROR_OUT_OF_MEMORY;                 \
		CUresult rc_ = (call);                                   \
		if (rc_ != CUDA_SUCCESS)                                 \
			gx_ml_undo(tn_, sz_);                            \
		else                                                     \
			gx_ml_keep(kind, (uint64_t)(keyexpr), sz_, tn_); \
		return rc_;                                              \
	} while (0)

#define ML_FREE(kind, key, call)                                      \
	do {                                                          \
		struct gx_ml_rec r_;                                  \
		bool had_ = gx_ml_unkeep(kind, (uint64_t)(key), &r_); \
		CUresult rc_ = (call);                                \
		if (had_)                                             \
			gx_ml_freed(&r_, rc_ == CUDA_SUCCESS);        \
		return rc_;                                           \
	} while (0)

/* tenant.c: the tenant entry of this process for a device (joined on first
 * use), NULL when this process is no tenant or could not join. */
struct gx_tn *gx_tenancy_of(CUdevice dev);
/* tenant.c, at cuInit: this process's limits from the environment. */
void gx_memlimit_enable(void);

#endif
