/* sched.c — the shim's side of blocksched (blocksched/gx_blocksched.h):
 * persistent workers and their schedule policy (GPUEXT_SCHED,
 * GPUEXT_PERSISTENT). The real driver's functions and the shim's services
 * are handed over as one table, so blocksched never calls the shim's own
 * entry points (which would raise events and rewrite its memsets). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

#include "attach/gx_attach.h"
#include "blocksched/gx_blocksched.h"
#include "shim/load_internal.h"
#include "shim/tables_internal.h"

static struct gx_bs_cu cu;
static struct gx_bs_host host;
static pthread_once_t host_once = PTHREAD_ONCE_INIT;
static bool host_ok;

static int func_info(CUcontext ctx, void *f, char *name, size_t n, void **mod)
{
	return gx_tab_func_info(ctx, f, name, n, NULL, mod);
}

static void add_func(CUcontext ctx, CUfunction f, void *mod, const char *name)
{
	gx_tab_add_func(ctx, f, mod, false, name);
}

static void host_setup(void)
{
	const char *missing = NULL;
#define GX_FILL(name)                                                                  \
	if (!(cu.name = (__typeof__(cu.name))gx_real_sym(GX_SYM_##name)) && !missing) \
		missing = #name;
	GX_BS_CU_FUNCS(GX_FILL)
#undef GX_FILL
	if (missing) {
		pr_warn("blocksched: the driver at %s has no %s; kernels run unchanged", gx_real_path(), missing);
		return;
	}
	host = (struct gx_bs_host){
		.sz = sizeof(host),
		.sched = gx_config.sched,
		.persistent = getenv("GPUEXT_PERSISTENT"),
		.cu = &cu,
		.subscribe = gx_events_subscribe,
		.func_info = func_info,
		.add_func = add_func,
		.policy_var = gx_attach_policy_var,
		.lock_register = gx_lock_register,
		.lock_order = GX_LOCK_TABLES - 2,
		.unsubscribe = gx_events_unsubscribe,
	};
	host_ok = true;
}

int gx_sched_rewrite_opts(struct gx_ptx_rewrite_opts *opts)
{
	gx_config_load();
	const char *p = getenv("GPUEXT_PERSISTENT");
	if ((!gx_config.sched && (!p || !*p)) || gx_config.disabled)
		return 0;
	pthread_once(&host_once, host_setup);
	return host_ok ? gx_bs_rewrite_opts(&host, opts) : 0;
}

void gx_sched_module(void *handle, bool is_library, const char *log, void *side)
{
	if (host_ok)
		gx_bs_module(handle, is_library, log, side);
}

/* gpuext attach --sched (live.c): blocksched started and stopped while the
 * process runs; its policy is attached live first. */
int gx_sched_live_start(const char *spec)
{
	gx_config_load();
	if (gx_config.disabled)
		return -ENODEV;
	pthread_once(&host_once, host_setup);
	return host_ok ? gx_bs_live_start(&host, spec) : -ENODEV;
}

int gx_sched_live_opts(struct gx_ptx_rewrite_opts *opts)
{
	return host_ok ? gx_bs_live_rewrite_opts(opts) : 0;
}

void gx_sched_live_stop(bool keep_device, char *msg, size_t n)
{
	uint64_t c = 0, s = 0, u = 0;
	if (!host_ok)
		return;
	gx_bs_live_counts(&c, &s, &u);
	gx_bs_live_stop(keep_device);
	snprintf(msg, n, "; blocksched: %llu launches as claiming persistent workers, %llu static, %llu as they are",
		 (unsigned long long)c, (unsigned long long)s, (unsigned long long)u);
}
