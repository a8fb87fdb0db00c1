/* core.c — process-wide state of the shim: configuration from the
 * environment, the registry of locks held across fork(), error names.
 * Nothing here calls the driver: loading the shim must stay inert. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim/shim_internal.h"

struct gx_config gx_config;
int gx_initialized;

static void config_load_once(void)
{
	const char *d = getenv("GPUEXT_DISABLE");
	gx_config.disabled = d && *d && strcmp(d, "0");
	gx_config.policy = getenv("GPUEXT_POLICY");
	gx_config.tool = getenv("GPUEXT_TOOL");
	gx_config.sched = getenv("GPUEXT_SCHED");
}

void gx_config_load(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, config_load_once);
}

/* fork(): a lock held by another thread at fork time would stay locked in the
 * child forever. We take every shim lock before fork and release it after,
 * in both processes, outer locks first (the `order` given at registration is
 * the global lock order: a lower order is never taken while holding a higher). */
#define MAX_LOCKS 32
static struct {
	pthread_mutex_t *m;
	int order;
} locks[MAX_LOCKS];
static int nr_locks;

void gx_lock_register(pthread_mutex_t *m, int order)
{
	if (nr_locks >= MAX_LOCKS)
		return;
	int i = nr_locks++;
	for (; i > 0 && locks[i - 1].order > order; i--)
		locks[i] = locks[i - 1];
	locks[i].m = m;
	locks[i].order = order;
}

static void fork_prepare(void)
{
	for (int i = 0; i < nr_locks; i++)
		pthread_mutex_lock(locks[i].m);
}

static void fork_release(void)
{
	for (int i = nr_locks - 1; i >= 0; i--)
		pthread_mutex_unlock(locks[i].m);
}

const char *gx_cu_errname(CUresult rc, char *buf, size_t len)
{
	const char *name = NULL;
	if (REAL(cuGetErrorName)(rc, &name) != CUDA_SUCCESS || !name)
		name = "CUDA error";
	snprintf(buf, len, "%s (%d)", name, (int)rc);
	return buf;
}

__attribute__((constructor(101))) static void core_init(void)
{
	pthread_atfork(fork_prepare, fork_release, fork_release);
}
