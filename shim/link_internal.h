/* link_internal.h — what the module loader asks the cuLink* wrappers. */
#ifndef SHIM_LINK_INTERNAL_H
#define SHIM_LINK_INTERNAL_H

#include "shim/shim_internal.h"

/* Is `image` a cubin produced by cuLinkComplete of a live link state? Then
 * 0, with how many inputs were rewritten / passed through; else -ENOENT. */
int gx_link_cubin_info(const void *image, unsigned *nr_rewritten, unsigned *nr_passed);

#endif
