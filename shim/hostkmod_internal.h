/* hostkmod_internal.h — the shim's side of host policies run by gpuext.ko
 * (hostkmod.c): launch footprints become prefetch hints on /dev/gpuext.
 * Used by hostpolicy.c only, under its lock. */
#ifndef SHIM_HOSTKMOD_INTERNAL_H
#define SHIM_HOSTKMOD_INTERNAL_H
#include <stdint.h>

/* Open /dev/gpuext ($GPUEXT_DEV) and register this process: 0, or a
 * negative errno (-ENOENT: no module; -EPROTO: another ABI). */
int gx_hostkmod_open(void);
const char *gx_hostkmod_backend(void);
void gx_hostkmod_alloc(uint64_t va, uint64_t len);
void gx_hostkmod_free(uint64_t va);
/* A host synchronisation: every allocation may be hinted again. */
void gx_hostkmod_sync(void);
/* A word of a launch's arguments: if it points into managed memory not
 * hinted since the last sync, queue [word, end of allocation). */
void gx_hostkmod_note(uint64_t v);
/* Queue one range as it is (a device policy's gdev_mem_prefetch). */
void gx_hostkmod_note_range(uint64_t va, uint64_t len);
/* Send the queued ranges as one hint (before the launch). */
void gx_hostkmod_flush(void);
/* Summary line, close the device. */
void gx_hostkmod_close(void);
#endif
