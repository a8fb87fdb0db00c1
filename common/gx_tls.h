/* gx_tls.h — per-thread memory on the heap, for the libraries linked into
 * the shim.
 *
 * Why not __thread: the shim's TLS block is static (hostexec's guard needs
 * an initial-exec variable, which makes the whole block so), and a library
 * dlopen'ed late into a big process gets only glibc's surplus — about
 * 1.6 KB — for all of it. 768 bytes of kernel names in blocksched pushed
 * the shim past it: PyTorch failed with "cannot allocate memory in static
 * TLS block" and saw no driver (bench/results/2026-12-04-gpu-run54.md). So buffers live here, and __thread
 * is kept for a few words. */
#ifndef GX_TLS_H
#define GX_TLS_H

#include <pthread.h>
#include <stddef.h>

struct gx_tls_heap {
	size_t size;              /* bytes of each thread's block, zeroed at first use */
	void (*fini)(void *blk);  /* run on a block at its thread's exit (may be NULL) */
	int ready;                /* the key exists */
	pthread_key_t key;
};
#define GX_TLS_HEAP(sz, fn) { (sz), (fn), 0, 0 }

/* This thread's block of h (allocated at its first call); NULL when memory
 * or a key cannot be had — callers then take their safe path. */
void *gx_tls_heap_get(struct gx_tls_heap *h);

/* For the few per-thread words on the launch path. The shim's TLS block is
 * static already (above), so the initial-exec model costs nothing more and
 * turns each access from a __tls_get_addr call (general dynamic, which GCC
 * also repeats after every call it makes) into one load off %fs
 * (bench/launch_cost.sh). Words only: the surplus is small. */
#define GX_TLS_IE __attribute__((tls_model("initial-exec")))

#endif
