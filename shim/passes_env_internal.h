/* passes_env_internal.h — device hooks selected by the environment (see passes_env.c). */
#ifndef SHIM_PASSES_ENV_INTERNAL_H
#define SHIM_PASSES_ENV_INTERNAL_H

/* GPUEXT_HOOKS as a mask of enum gdev_hook bits (0 if unset or invalid). */
unsigned gx_hooks_from_env(void);
/* GPUEXT_STUBS (call|elide|probe|probe-call) as enum gx_ptx_stubs; call if
 * unset. Used only when no policy supplies the handlers. */
unsigned gx_stubs_from_env(void);

#endif
