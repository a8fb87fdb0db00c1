/* hx_guard.c — defence in depth for handler calls. Native code runs
 * without run-time checks, on the strength of the load-time proof (as the
 * kernel runs JIT'd struct_ops programs). Should that proof ever be wrong,
 * or a map's memory be taken away under the policy, a SIGSEGV or SIGBUS
 * raised while a thread runs policy code (native or interpreted) returns
 * from the call as a fault, and the caller disables that policy; it never
 * kills the application.
 *
 * The handler is installed once per process, before the first policy call,
 * and chains to whatever handler was there: a fault outside policy code, or
 * a signal another process sent, gets exactly what it got before (the
 * default action kills the process). An application that installs its own
 * handler later replaces ours; then policy faults are its to handle. The
 * guard costs a thread-local store and a sigsetjmp without the signal mask
 * (no system call) per call: the mask is restored only on a fault.
 *
 * Limits: a fault inside a helper that holds a lock, or inside malloc,
 * leaves that lock taken; the executor's own helpers take none. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>

#include "hostexec/hx_internal.h"

/* initial-exec: the shim may be dlopen'ed, and a signal handler must not
 * make glibc allocate this thread's TLS block */
static __thread struct hx_guard *cur __attribute__((tls_model("initial-exec")));
static struct sigaction old_segv, old_bus;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int install_err;

/* What the previous handler would have done with this signal. */
static void chain(int sig, siginfo_t *si, void *uc)
{
	const struct sigaction *o = sig == SIGBUS ? &old_bus : &old_segv;
	if (o->sa_flags & SA_SIGINFO) {
		o->sa_sigaction(sig, si, uc);
		return;
	}
	if (o->sa_handler == SIG_IGN && si->si_code <= 0)
		return; /* sent, not a fault: ignored as before */
	if (o->sa_handler == SIG_IGN || o->sa_handler == SIG_DFL) {
		/* the default action: a fault happens again on return and kills
		 * the process as it would have; a sent signal is raised again */
		signal(sig, SIG_DFL);
		if (si->si_code <= 0)
			raise(sig);
		return;
	}
	o->sa_handler(sig);
}

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	struct hx_guard *g = cur;
	if (!g || si->si_code <= 0) { /* not in policy code, or not a fault */
		chain(sig, si, uc);
		return;
	}
	cur = g->prev;
	g->sig = sig;
	g->addr = si->si_addr;
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, sig);
	pthread_sigmask(SIG_UNBLOCK, &s, NULL); /* sigsetjmp did not save the mask */
	siglongjmp(g->jb, 1);
}

static void install(void)
{
	struct sigaction sa = { .sa_sigaction = on_fault, .sa_flags = SA_SIGINFO | SA_ONSTACK };
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, &old_segv) || sigaction(SIGBUS, &sa, &old_bus))
		install_err = -errno;
}

int hx_guard_install(void)
{
	pthread_once(&once, install);
	return install_err;
}

void hx_guard_enter(struct hx_guard *g)
{
	g->prev = cur;
	g->sig = 0;
	g->addr = NULL;
	cur = g;
}

void hx_guard_leave(struct hx_guard *g)
{
	cur = g->prev;
}
