/* attach.c — the shim's side of device-policy attachment (attach/): the
 * real driver's functions and the shim's services, handed over as one
 * table, so attach/ never calls into the shim's own entry points. Also the
 * one place the shim reads a device's arch. */
#include <pthread.h>

#include <stdio.h>

#include "attach/gx_attach.h"
#include "blocksched/gx_blocksched.h"
#include "shim/hostpolicy_internal.h"
#include "shim/load_internal.h"
#include "shim/stats_internal.h"
#include "shim/tables_internal.h"

unsigned gx_dev_sm(CUdevice d)
{
	int maj = 0, min = 0;
	if (REAL(cuDeviceGetAttribute)(&maj, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d) != CUDA_SUCCESS ||
	    REAL(cuDeviceGetAttribute)(&min, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d) != CUDA_SUCCESS ||
	    maj <= 0)
		return 0;
	return (unsigned)(maj * 10 + min);
}

static struct gx_attach_cu cu;
static char sched_obj[4096], sched_knobs[1024];

/* GPUEXT_SCHED for attach/: the object and the knobs meant for it
 * (blocksched keeps kernels=GLOB for itself). */
static const char *sched_spec(void)
{
	static char spec[5200];
	char glob[256];
	if (!gx_config.sched || !*gx_config.sched ||
	    gx_bs_parse_spec(gx_config.sched, sched_obj, sizeof(sched_obj), sched_knobs, sizeof(sched_knobs),
			     glob, sizeof(glob)))
		return NULL;
	snprintf(spec, sizeof(spec), "%s%s%s", sched_obj, sched_knobs[0] ? "," : "", sched_knobs);
	return spec;
}
/* gx_attach_host.side_module: the module of f's copies in ctx, when the
 * shim loaded them beside f's own (load.c, p->side); a library's copies
 * are a library, whose module in ctx the driver gives. */
static CUmodule side_module(CUcontext ctx, void *f)
{
	void *mod = NULL, *side;
	bool lib = false;
	if (gx_tab_func_info(ctx, f, NULL, 0, NULL, &mod) || !mod || !(side = gx_tab_side(mod, &lib)))
		return NULL;
	if (!lib)
		return (CUmodule)side;
	CUmodule m;
	return REAL(cuLibraryGetModule)(&m, (CUlibrary)side) == CUDA_SUCCESS ? m : NULL;
}

static struct gx_attach_host host;
static pthread_once_t host_once = PTHREAD_ONCE_INIT;
static bool host_ok;

static void host_setup(void)
{
	const char *missing = NULL;
#define GX_FILL(name)                                                                  \
	if (!(cu.name = (__typeof__(cu.name))gx_real_sym(GX_SYM_##name)) && !missing) \
		missing = #name;
	GX_ATTACH_CU_FUNCS(GX_FILL)
#undef GX_FILL
	if (missing) {
		pr_warn("policy: the driver at %s has no %s; running without device policies", gx_real_path(),
			missing);
		return;
	}
	host = (struct gx_attach_host){
		.sz = sizeof(host),
		.policy = gx_config.policy,
		.tool = gx_config.tool,
		.sched = sched_spec(),
		.cu = &cu,
		.dev_sm = gx_dev_sm,
		.subscribe = gx_events_subscribe,
		.is_host_policy = gx_hostpolicy_is_struct_ops,
		.device_prefetch = gx_hostpolicy_device_prefetch,
		.lock_register = gx_lock_register,
		.tick = gx_stats_tick,
		.unsubscribe = gx_events_unsubscribe,
		.side_module = side_module,
	};
	host_ok = true;
}

/* The process's host table, or NULL when no device policy is configured
 * (or GPUEXT_DISABLE is set, or the driver lacks a function it needs). */
static const struct gx_attach_host *attach_host(void)
{
	gx_config_load();
	if ((!gx_config.policy && !gx_config.tool && !gx_config.sched) || gx_config.disabled)
		return NULL;
	pthread_once(&host_once, host_setup);
	return host_ok ? &host : NULL;
}

const struct gx_attach_host *gx_attach_host_live(void)
{
	gx_config_load();
	if (gx_config.disabled)
		return NULL;
	pthread_once(&host_once, host_setup);
	return host_ok ? &host : NULL;
}

void gx_attach_init(void)
{
	const struct gx_attach_host *h = attach_host();
	if (h)
		gx_attach_start(h);
}

void gx_attach_opts(struct gx_ptx_rewrite_opts *opts)
{
	const struct gx_attach_host *h = attach_host();
	if (h)
		gx_attach_rewrite_opts(h, opts);
}
