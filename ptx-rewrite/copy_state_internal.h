/* copy_state_internal.h — module-scope state a second copy of a module
 * could not keep equal to the original's (copy_state.c). */
#ifndef PTX_COPY_STATE_INTERNAL_H
#define PTX_COPY_STATE_INTERNAL_H

#include <stddef.h>

struct ptx_module;
/* How many module variables a copy could not share (0: a copy is
 * faithful as far as the device code goes); the first one's name into
 * name (n bytes, may be 0). */
unsigned ptx_copy_unsafe(const struct ptx_module *m, char *name, size_t n);

#endif
