/* gx_hostpolicy.h — host struct_ops policies in the shim (hostpolicy.c). */
#ifndef GX_HOSTPOLICY_H
#define GX_HOSTPOLICY_H
#include <stdbool.h>

/* Attach the struct_ops entries of GPUEXT_POLICY (after cuInit succeeded). */
void gx_hostpolicy_init(void);
/* Is this file a host (struct_ops) policy object? Device-policy code skips
 * these entries of GPUEXT_POLICY. */
bool gx_hostpolicy_is_struct_ops(const char *path);
#endif
