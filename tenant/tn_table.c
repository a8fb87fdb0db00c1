/* tn_table.c — the tenant table's life: created once by whoever comes first
 * (made complete under a temporary name, then published with link(), so
 * nobody maps half a table), joined under a robust lock, reaped of dead
 * processes by the survivors, removed by the last one out.
 *
 * Why a robust mutex and not a lease alone: joining and reaping rewrite
 * shared slots, and a process killed inside that section must not leave
 * the lock held; EOWNERDEAD hands it to the next taker, who finds the slots
 * consistent (each section writes a slot's pid last on claim, first on
 * release). The lease (a heartbeat) covers what the lock cannot: a stopped
 * process's launches stop counting without it being reaped. */
#include <dirent.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/gx_log.h"
#include "common/gx_trust.h"
#include "common/gx_util.h"
#include "devbpf/gx_bpf.h"
#include "tenant/tn_internal.h"

uint64_t tn_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t tn_pidns_of(uint32_t pid)
{
	char p[64];
	struct stat st;
	snprintf(p, sizeof(p), "/proc/%u/ns/pid", pid);
	return stat(p, &st) ? 0 : (uint64_t)st.st_ino;
}

static int table_path(char *path, size_t n, const char *suffix)
{
	char dir[256];
	int err = gx_map_shm_dir_default(dir, sizeof(dir));
	if (err)
		return err;
	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	struct stat st;
	if (lstat(dir, &st))
		return -errno;
	/* Ours but opened up (by hand): closed again. */
	if (S_ISDIR(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & 077) && chmod(dir, 0700))
		return -errno;
	/* Not ours: others may plant a table (gx_trust.h). */
	char why[96];
	if ((err = gx_dir_trusted(dir, GX_TRUST_OWN | GX_TRUST_PRIVATE, why, sizeof(why)))) {
		if (err == -EPERM)
			pr_warn("tenant: not using the folder %s: %s; launches are not scheduled", dir, why);
		return err;
	}
	int l = snprintf(path, n, "%s/%s%s", dir, GX_TN_TABLE_FILE, suffix ? suffix : "");
	return l < 0 || (size_t)l >= n ? -ENAMETOOLONG : 0;
}

static int init_file(const char *tmp)
{
	int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	int e = posix_fallocate(fd, 0, sizeof(struct tn_table));
	struct tn_table *t = e ? MAP_FAILED : mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (t == MAP_FAILED) {
		e = e ? e : errno;
		close(fd);
		unlink(tmp);
		return -e;
	}
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&t->lock, &a);
	pthread_mutexattr_destroy(&a);
	t->version = TN_VERSION;
	t->size = sizeof(*t);
	__atomic_store_n(&t->magic, TN_MAGIC, __ATOMIC_RELEASE);
	munmap(t, sizeof(*t));
	close(fd);
	return 0;
}

static int map_existing(const char *path, struct tn_table **out, int *fdp)
{
	char why[96];
	int fd = gx_open_trusted(path, O_RDWR, GX_TRUST_OWN | GX_TRUST_PRIVATE, why, sizeof(why));
	if (fd == -EPERM)
		pr_warn("tenant: not using the table %s: %s; launches are not scheduled", path, why);
	if (fd < 0)
		return fd;
	struct stat st;
	if (fstat(fd, &st) || (size_t)st.st_size < offsetof(struct tn_table, lock)) {
		close(fd);
		return -EBADMSG;
	}
	if ((size_t)st.st_size != sizeof(struct tn_table)) {
		uint32_t hdr[2] = { 0, 0 };
		if (pread(fd, hdr, sizeof(hdr), 0) == (ssize_t)sizeof(hdr) && hdr[0] == TN_MAGIC)
			pr_warn("tenant: the table %s is of version %u, made by processes of another gpuext release; "
				"this one reads version %u: not joining it (no scheduling, no limits) until they are gone",
				path, hdr[1], TN_VERSION);
		close(fd);
		return -EBADMSG;
	}
	struct tn_table *t = mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (t == MAP_FAILED) {
		int e = -errno;
		close(fd);
		return e;
	}
	if (__atomic_load_n(&t->magic, __ATOMIC_ACQUIRE) != TN_MAGIC || t->version != TN_VERSION ||
	    t->size != sizeof(*t)) {
		if (__atomic_load_n(&t->magic, __ATOMIC_ACQUIRE) == TN_MAGIC && t->version != TN_VERSION)
			pr_warn("tenant: the table %s is of version %u, made by processes of another gpuext release; "
				"this one reads version %u: not joining it (no scheduling, no limits) until they are gone",
				path, t->version, TN_VERSION);
		munmap(t, sizeof(*t));
		close(fd);
		return -EBADMSG;
	}
	*out = t;
	*fdp = fd;
	return 0;
}

int tn_map(int create, struct tn_table **t, int *fd, char *path, size_t plen)
{
	int err = table_path(path, plen, NULL);
	if (err)
		return err;
	for (int attempt = 0; attempt < 8; attempt++) {
		err = map_existing(path, t, fd);
		if (err != -ENOENT || !create)
			return err;
		char tmp[420];
		snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid());
		unlink(tmp);
		if ((err = init_file(tmp)))
			return err;
		err = link(tmp, path) ? -errno : 0;
		unlink(tmp);
		if (err && err != -EEXIST)
			return err;
	}
	return -EAGAIN;
}

void tn_unmap(struct tn_table *t, int fd)
{
	if (t)
		munmap(t, sizeof(*t));
	if (fd >= 0)
		close(fd);
}

int tn_lock(struct tn_table *t)
{
	int e = pthread_mutex_lock(&t->lock);
	if (e == EOWNERDEAD) { /* its holder died: the slots are consistent (see top) */
		pthread_mutex_consistent(&t->lock);
		e = 0;
	}
	return -e;
}

void tn_unlock(struct tn_table *t)
{
	pthread_mutex_unlock(&t->lock);
}

void tn_bump(struct tn_table *t)
{
	__atomic_add_fetch(&t->gen, 1, __ATOMIC_RELEASE);
	if (__atomic_load_n(&t->waiters, __ATOMIC_ACQUIRE))
		syscall(SYS_futex, &t->gen, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

/* The policy maps of a dead process (`<pid>-*` in the maps folder). */
static void remove_files_of(uint32_t pid)
{
	char dir[256], pre[24], p[600];
	if (gx_map_shm_dir_default(dir, sizeof(dir)))
		return;
	DIR *d = opendir(dir);
	if (!d)
		return;
	int l = snprintf(pre, sizeof(pre), "%u-", pid);
	struct dirent *e;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, pre, (size_t)l)) {
			snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
			unlink(p);
		}
	closedir(d);
}

void tn_release_locked(struct tn_table *t, uint32_t slot)
{
	struct tn_proc *p = &t->procs[slot];
	if (!p->pid)
		return;
	struct tn_tenant *tt = &t->tenants[p->tenant % GX_TN_MAX_TENANTS];
	tt->launches += LD(p->launches);
	tt->completions += LD(p->completions);
	tt->untracked += LD(p->untracked);
	tt->held += LD(p->held);
	tt->throttled_ns += LD(p->throttled_ns);
	tt->gpu_ns += LD(p->gpu_ns);
	/* Its memory budget goes back to the tenant (dead or leaving: its
	 * part is no longer written). */
	uint64_t mem = __atomic_exchange_n(&p->mem_used, 0, __ATOMIC_RELAXED);
	tn_sub_floor(&tt->mem_used, mem);
	if (p->gpu < TN_GPUS)
		tn_sub_floor(&tt->gpus[p->gpu].mem_used, mem);
	uint32_t tenant = p->tenant;
	ST(p->pid, 0); /* first: readers skip it from now on */
	memset((char *)p + sizeof(p->pid), 0, sizeof(*p) - sizeof(p->pid));
	bool any = false;
	for (uint32_t i = 0; i < t->hiwater && !any; i++)
		any = t->procs[i].pid && t->procs[i].tenant == tenant;
	if (!any)
		memset(tt, 0, sizeof(*tt));
	while (t->hiwater && !t->procs[t->hiwater - 1].pid)
		t->hiwater--;
	tn_bump(t);
}

static bool dead(const struct tn_proc *p, uint64_t my_pidns, uint64_t now)
{
	if (p->pidns && p->pidns == my_pidns) {
		if (kill((pid_t)p->pid, 0) && errno == ESRCH)
			return true;
		uint64_t st = gx_proc_start_time(p->pid);
		return st && p->start_time && st != p->start_time; /* the pid was reused */
	}
	/* Another pid namespace: we cannot ask; a long silence is death. */
	uint64_t hb = LD(p->heartbeat_ns);
	return hb && now > hb + 30ull * 1000000000ull;
}

int tn_reap_locked(struct tn_table *t, uint64_t my_pidns, uint64_t now)
{
	int n = 0;
	for (uint32_t i = 0; i < t->hiwater; i++) {
		struct tn_proc *p = &t->procs[i];
		uint32_t pid = p->pid;
		if (!pid || !dead(p, my_pidns, now))
			continue;
		bool same_ns = p->pidns == my_pidns;
		pr_warn("tenant: process %u of '%.*s' is gone with %u launches in flight; reaped", pid, GX_TN_NAME_MAX,
			t->tenants[p->tenant % GX_TN_MAX_TENANTS].name, LD(p->inflight));
		tn_release_locked(t, i);
		if (same_ns)
			remove_files_of(pid);
		n++;
	}
	return n;
}

static void default_name(char *out, size_t n)
{
	char comm[32] = "proc";
	int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t l = read(fd, comm, sizeof(comm) - 1);
		close(fd);
		if (l > 0) {
			comm[l] = 0;
			comm[strcspn(comm, "\n")] = 0;
		}
	}
	snprintf(out, n, "%.20s-%d", comm, (int)getpid());
}

/* The tenant's slot for this GPU (table locked): found, else claimed with
 * this process's limit for it; TN_GPUS when all are taken (one line: its
 * memory there is not counted). */
static uint32_t join_gpu(struct tn_tenant *tt, const struct gx_tn_opts *o)
{
	uint8_t dev[16] = { 0 };
	uint32_t fr = TN_GPUS;
	if (o->dev)
		memcpy(dev, o->dev, 16);
	for (uint32_t i = 0; i < TN_GPUS; i++) {
		struct tn_gpu *g = &tt->gpus[i];
		if (g->used && !memcmp(g->dev, dev, 16)) {
			if (o->gpu_mem_limit && !LD(g->mem_limit))
				__atomic_store_n(&g->mem_limit, o->gpu_mem_limit, __ATOMIC_RELAXED);
			return i;
		}
		if (!g->used && fr == TN_GPUS)
			fr = i;
	}
	if (fr == TN_GPUS) {
		pr_info("tenant: '%.*s' uses more than %d GPUs; its memory on this one is not counted", GX_TN_NAME_MAX,
			tt->name, TN_GPUS);
		return fr;
	}
	struct tn_gpu *g = &tt->gpus[fr];
	memset(g, 0, sizeof(*g));
	memcpy(g->dev, dev, 16);
	g->mem_limit = o->gpu_mem_limit;
	g->used = 1;
	return fr;
}

int tn_join_locked(struct gx_tn *tn)
{
	const struct gx_tn_opts *o = &tn->o;
	const char *name = tn->name;
	struct tn_table *t = tn->t;
	int ti = -1, fr = -1;
	for (int i = 0; i < GX_TN_MAX_TENANTS; i++) {
		if (t->tenants[i].used && !strncmp(t->tenants[i].name, name, GX_TN_NAME_MAX))
			ti = i;
		else if (!t->tenants[i].used && fr < 0)
			fr = i;
	}
	if (ti < 0) {
		if (fr < 0)
			return -ENOSPC;
		ti = fr;
		struct tn_tenant *tt = &t->tenants[ti];
		memset(tt, 0, sizeof(*tt));
		snprintf(tt->name, sizeof(tt->name), "%s", name);
		tt->cls = o->cls == GPU_CLASS_LC ? GPU_CLASS_LC : GPU_CLASS_BE;
		tt->window = o->window;
		tt->mem_limit = o->mem_limit;
		tt->gpu_share = o->gpu_share;
		tt->created_ns = tn_now();
		tt->used = 1;
	} else {
		struct tn_tenant *tt = &t->tenants[ti];
		if (o->cls >= 0 && (uint32_t)o->cls != tt->cls)
			pr_info("tenant: '%s' is already %s; this process joins it as such", name,
				gx_tn_class_name((int)tt->cls));
		/* Limits: the first process's, or this one's where it had none. */
		uint64_t lim = LD(tt->mem_limit);
		if (o->mem_limit && !lim)
			__atomic_store_n(&tt->mem_limit, o->mem_limit, __ATOMIC_RELAXED);
		else if (o->mem_limit && lim != o->mem_limit)
			pr_info("tenant: '%s' has a memory limit of %llu bytes already; this process shares it", name,
				(unsigned long long)lim);
		if (o->gpu_share && !LD(tt->gpu_share))
			ST(tt->gpu_share, o->gpu_share);
		else if (o->gpu_share && LD(tt->gpu_share) != o->gpu_share)
			pr_info("tenant: '%s' has a GPU share of %u %% already; this process shares it", name,
				LD(tt->gpu_share));
	}
	int slot = -1;
	for (int i = 0; i < GX_TN_MAX_PROCS && slot < 0; i++)
		if (!t->procs[i].pid)
			slot = i;
	if (slot < 0)
		return -ENOSPC;
	struct tn_proc *p = &t->procs[slot];
	memset(p, 0, sizeof(*p));
	p->tenant = (uint32_t)ti;
	p->gpu = tn->gpu = join_gpu(&t->tenants[ti], o);
	p->start_time = tn->start_time;
	p->pidns = tn->pidns;
	if (o->dev)
		memcpy(p->dev, o->dev, 16);
	p->cgroup_id = o->cgroup_id;
	p->heartbeat_ns = tn_now();
	ST(p->pid, tn->mypid); /* last: the entry is complete */
	if ((uint32_t)slot >= t->hiwater)
		t->hiwater = (uint32_t)slot + 1;
	tn->slot = (uint32_t)slot;
	tn->tenant = (uint32_t)ti;
	tn_bump(t);
	return 0;
}

int gx_tn_open(const struct gx_tn_opts *opts, struct gx_tn **out)
{
	struct gx_tn_opts o = {0};
	if (!out || gx_opts_copy(&o, sizeof(o), opts, opts ? opts->sz : 0))
		return gx_err(-EINVAL);
	struct gx_tn *tn = calloc(1, sizeof(*tn));
	if (!tn)
		return gx_err(-ENOMEM);
	if (o.name && *o.name)
		snprintf(tn->name, sizeof(tn->name), "%s", o.name);
	else
		default_name(tn->name, sizeof(tn->name));
	if (o.dev) {
		memcpy(tn->dev, o.dev, 16);
		o.dev = tn->dev;
	}
	o.name = NULL; /* the caller's string need not outlive the call */
	tn->o = o;
	tn->mypid = (uint32_t)getpid();
	tn->fd = -1;
	tn->lease_ns = o.lease_ns ? o.lease_ns : 1000000000ull;
	tn->burst_gap_ns = o.burst_gap_ns ? o.burst_gap_ns : 200000ull;
	tn->pidns = tn_pidns_of((uint32_t)getpid());
	tn->start_time = gx_proc_start_time((uint32_t)getpid());
	pthread_mutex_init(&tn->mu, NULL);
	int err = -EAGAIN;
	for (int attempt = 0; attempt < 8 && err == -EAGAIN; attempt++) {
		if ((err = tn_map(1, &tn->t, &tn->fd, tn->path, sizeof(tn->path))))
			break;
		if ((err = tn_lock(tn->t)))
			break;
		tn_reap_locked(tn->t, tn->pidns, tn_now());
		/* The last process out may have removed the file we mapped. */
		struct stat a, b;
		if (stat(tn->path, &a) || fstat(tn->fd, &b) || a.st_ino != b.st_ino) {
			tn_unlock(tn->t);
			tn_unmap(tn->t, tn->fd);
			tn->t = NULL, tn->fd = -1;
			err = -EAGAIN;
			continue;
		}
		err = tn_join_locked(tn);
		tn_unlock(tn->t);
	}
	if (err) {
		tn_unmap(tn->t, tn->fd);
		pthread_mutex_destroy(&tn->mu);
		free(tn);
		return gx_err(err);
	}
	*out = tn;
	return 0;
}

void gx_tn_leave(struct gx_tn *tn)
{
	if (!tn)
		return;
	struct tn_table *t = tn->t;
	if (t && !tn_lock(t)) {
		if (tn_mine(tn))
			tn_release_locked(t, tn->slot);
		bool any = false;
		for (uint32_t i = 0; i < t->hiwater && !any; i++)
			any = t->procs[i].pid != 0;
		struct stat a, b;
		/* Nobody left: the table goes (only if it is still the one we
		 * mapped; a newer one belongs to others). */
		if (!any && !stat(tn->path, &a) && !fstat(tn->fd, &b) && a.st_ino == b.st_ino)
			unlink(tn->path);
		tn_unlock(t);
	}
}

void gx_tn_close(struct gx_tn *tn)
{
	if (!tn)
		return;
	gx_tn_leave(tn);
	tn_unmap(tn->t, tn->fd);
	pthread_mutex_destroy(&tn->mu);
	free(tn);
}

void gx_tn_forget(struct gx_tn *tn)
{
	if (!tn)
		return;
	tn_unmap(tn->t, tn->fd);
	free(tn);
}

uint32_t gx_tn_gen(const struct gx_tn *tn)
{
	return __atomic_load_n(&tn->t->gen, __ATOMIC_ACQUIRE);
}

int gx_tn_wait(struct gx_tn *tn, uint32_t gen, uint64_t timeout_ns)
{
	struct tn_table *t = tn->t;
	struct timespec ts = {.tv_sec = (time_t)(timeout_ns / 1000000000ull),
			      .tv_nsec = (long)(timeout_ns % 1000000000ull)};
	__atomic_add_fetch(&t->waiters, 1, __ATOMIC_ACQ_REL);
	long r = syscall(SYS_futex, &t->gen, FUTEX_WAIT, gen, &ts, NULL, 0);
	int e = r ? errno : 0;
	__atomic_sub_fetch(&t->waiters, 1, __ATOMIC_ACQ_REL);
	return e == ETIMEDOUT ? -ETIMEDOUT : 0;
}

int gx_tn_tick(struct gx_tn *tn, uint64_t now)
{
	struct tn_table *t = tn->t;
	if (!tn_mine(tn)) {
		/* Taken for dead: join again (launches in flight are forgotten,
		 * as they were by whoever reaped us). */
		if (!tn_lock(t)) {
			if (!tn_mine(tn) && !tn_join_locked(tn))
				pr_info("tenant: '%s': this process was taken for dead; joined again", tn->name);
			tn_unlock(t);
		}
		if (!tn_mine(tn))
			return 0;
	}
	ST(t->procs[tn->slot].heartbeat_ns, now);
	if (now - tn->last_reap_ns < 100000000ull)
		return 0;
	tn->last_reap_ns = now;
	/* Cheap test first: only lock when an entry looks dead. */
	bool suspect = false;
	for (uint32_t i = 0; i < LD(t->hiwater) && !suspect; i++) {
		struct tn_proc *p = &t->procs[i];
		uint32_t pid = LD(p->pid);
		suspect = pid && i != tn->slot && dead(p, tn->pidns, now);
	}
	if (!suspect || tn_lock(t))
		return 0;
	int n = tn_reap_locked(t, tn->pidns, now);
	tn_unlock(t);
	return n;
}
