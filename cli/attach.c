/* attach.c — `gpuext attach`, `gpuext detach`, `gpuext ps`: tools, device
 * policies and host (struct_ops) policies attached to processes already
 * running under the shim, through the per-user control folder
 * (common/gx_ctl.h, docs/attach.md).
 *
 *   gpuext attach PID|--all [--tool NAME]... [--policy FILE.bpf.o[,knob=v]]... [--timeout S]
 *   gpuext detach PID [NAME|--all] [--keep] [--timeout S]
 *   gpuext ps
 *
 * attach makes a run folder (GPUEXT_SHM_DIR or /dev/shm/gpuext-$UID,
 * attach-PID-XXXXXX, 0700) for the tools' maps and logs, writes the request
 * and waits for the answer; detach waits for the process to stop the tools
 * (their last launches complete, maps flushed), prints each tool's report
 * from that folder (`gpuext tools report`) and removes it. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli_internal.h"
#include "common/gx_ctl.h"
#include "common/gx_trust.h"
#include "common/gx_util.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: gpuext attach PID|--all [--tool NAME]... [--policy FILE.bpf.o[,knob=v...]]...\n"
		   "                    [--sched POLICY[,knob=v...][,kernels=GLOB]]\n"
		   "                    [--launch-sample N[,first=K] | --every-launch]\n"
		   "                    [--timeout S]\n"
		   "       gpuext detach PID [NAME|--all] [--keep] [--timeout S]\n"
		   "       gpuext ps\n"
		   "Attach device tools and policies, and host (struct_ops) policies, to a process running under the\n"
		   "gpuext shim, and detach them (the tools' reports are printed at detach). The device tools and\n"
		   "policies of one process form one set (attach them together); host policies attach and detach\n"
		   "on their own, by name. --sched (a shipped schedule policy's name, or its object) joins the\n"
		   "device set: the copies also carry persistent workers. Tools run on a sample of launches: each\n"
		   "kernel's first K launches (16) after the attach, then 1 launch in N (--launch-sample; without\n"
		   "it, the process's GPUEXT_LAUNCH_SAMPLE, else 16); the others run the original. --every-launch\n"
		   "(--launch-sample 1) instruments them all; device policies and --sched always do. Same user\n"
		   "(or root) only. See docs/attach.md.\n");
}

/* A shipped schedule policy's object: <this executable>/../share/gpuext/sched/NAME.bpf.o,
 * or "" when there is no such file. */
static void shipped_sched(const char *name, char *out, size_t n)
{
	char exe[PATH_MAX];
	ssize_t l = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	out[0] = 0;
	if (n < PATH_MAX || l <= 0 || !*name || strchr(name, '/') || strchr(name, '.'))
		return;
	exe[l] = 0;
	char *slash = strrchr(exe, '/');
	if (!slash)
		return;
	*slash = 0;
	char p[2 * PATH_MAX];
	snprintf(p, sizeof(p), "%s/../share/gpuext/sched/%s.bpf.o", exe, name);
	if (!realpath(p, out))
		out[0] = 0;
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static bool alive(int pid)
{
	return !kill(pid, 0) || errno == EPERM;
}

/* The process is ours (or we are root) and runs under the shim. */
static int check_pid(const char *ctl, int pid)
{
	char p[64], ps[4200];
	struct stat st;
	snprintf(p, sizeof(p), "/proc/%d", pid);
	if (stat(p, &st)) {
		p_err("process %d: no such process", pid);
		return -ESRCH;
	}
	if (geteuid() && st.st_uid != geteuid()) {
		p_err("process %d belongs to uid %u: only its user (or root) can attach to it", pid,
		      (unsigned)st.st_uid);
		return -EPERM;
	}
	snprintf(ps, sizeof(ps), "%s/%d.ps", ctl, pid);
	if (stat(ps, &st)) {
		p_err("process %d does not run under the gpuext shim (no %s: not started with gpuext-run or the "
		      "shim first in LD_LIBRARY_PATH, no cuInit yet, or GPUEXT_ATTACH=0)",
		      pid, ps);
		return -ENOENT;
	}
	return 0;
}

/* One request and its answer: 0 with *r filled, or -errno (printed). */
static int transact(const char *ctl, int pid, struct gx_ctl_msg *m, struct gx_ctl_msg *r, unsigned timeout_s)
{
	char buf[GX_CTL_MAX_BYTES], name[64], resp[4300], err[200];
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	m->seq = ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20);
	int n = gx_ctl_format(m, buf, sizeof(buf));
	if (n < 0) {
		p_err("request too long");
		return n;
	}
	snprintf(name, sizeof(name), "%d.req", pid);
	int ret = gx_ctl_write(ctl, name, buf, (size_t)n);
	if (ret) {
		p_err("cannot write the request into %s: %s", ctl, strerror(-ret));
		return ret;
	}
	snprintf(resp, sizeof(resp), "%s/%d.%llu.resp", ctl, pid, (unsigned long long)m->seq);
	uint64_t until = now_ms() + (uint64_t)timeout_s * 1000;
	for (;;) {
		char *text = NULL, why[96];
		size_t len = 0;
		ret = gx_read_trusted(resp, GX_TRUST_ANY_OWNER, &text, &len, GX_CTL_MAX_BYTES, why, sizeof(why));
		if (!ret) {
			unlink(resp);
			ret = gx_ctl_parse(text, len, r, err, sizeof(err));
			free(text);
			if (ret)
				p_err("process %d answered with a bad message: %s", pid, err);
			return ret;
		}
		if (ret == -EPERM) {
			p_err("not reading the answer %s: %s", resp, why);
			return ret;
		}
		if (!alive(pid)) {
			snprintf(resp, sizeof(resp), "%s/%d.req", ctl, pid);
			unlink(resp);
			p_err("process %d exited before answering", pid);
			return -ESRCH;
		}
		if (now_ms() > until) {
			snprintf(resp, sizeof(resp), "%s/%d.req", ctl, pid);
			unlink(resp);
			p_err("process %d did not answer within %u s", pid, timeout_s);
			return -ETIMEDOUT;
		}
		struct timespec d = { 0, 5000000 };
		nanosleep(&d, NULL);
	}
}

static void rm_run_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[4400];
	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
			unlink(p);
		}
	if (d)
		closedir(d);
	rmdir(dir);
}

static int attach_one(const char *ctl, int pid, struct gx_ctl_msg *m, unsigned timeout_s)
{
	char base[4096], dir[4200];
	struct gx_ctl_msg *r = calloc(1, sizeof(*r));
	if (!r || check_pid(ctl, pid)) {
		free(r);
		return 1;
	}
	const char *e = getenv("GPUEXT_SHM_DIR");
	if (e && *e)
		snprintf(base, sizeof(base), "%s", e);
	else
		snprintf(base, sizeof(base), "/dev/shm/gpuext-%u", (unsigned)geteuid());
	mkdir(base, 0700);
	snprintf(dir, sizeof(dir), "%s/attach-%d-XXXXXX", base, pid);
	if (!mkdtemp(dir)) {
		p_err("cannot make a run folder in %s: %s", base, strerror(errno));
		free(r);
		return 1;
	}
	snprintf(m->dir, sizeof(m->dir), "%.4000s", dir);
	uint64_t t0 = now_ms();
	int ret = transact(ctl, pid, m, r, timeout_s);
	if (!ret && r->status) {
		p_err("process %d refused: %s", pid, r->msg);
		ret = r->status;
	}
	if (ret) {
		rm_run_dir(dir);
		free(r);
		return 1;
	}
	if (gx_json)
		printf("{\"pid\":%d,\"attached\":\"%s\",\"modules\":%u,\"ms\":%u,\"total_ms\":%llu,\"dir\":\"%s\"}\n",
		       pid, r->attached, r->modules, r->ms, (unsigned long long)(now_ms() - t0), dir);
	else
		printf("gpuext: process %d: %s (%u ms in the process, %llu ms in all); data in %s\n", pid, r->msg,
		       r->ms, (unsigned long long)(now_ms() - t0), dir);
	free(r);
	return 0;
}

static int parse_pid(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);
	return *s && !*end && v > 0 && v < INT32_MAX ? (int)v : -1;
}

int do_attach(int argc, char **argv)
{
	char ctl[4096];
	struct gx_ctl_msg *m = calloc(1, sizeof(*m));
	unsigned timeout_s = 120;
	int pid = 0; /* -1: --all */
	if (!m || gx_ctl_dir(ctl, sizeof(ctl)))
		return 1;
	m->op = GX_CTL_ATTACH;
	unsigned long every = 1, first; /* the last --launch-sample / --every-launch */
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			free(m);
			return 0;
		} else if (!strcmp(a, "--all")) {
			pid = -1;
		} else if ((!strcmp(a, "--tool") || !strcmp(a, "--policy") || !strcmp(a, "--timeout") ||
			    !strcmp(a, "--sched") || !strcmp(a, "--launch-sample")) &&
			   !v) {
			p_err("%s needs a value", a);
			free(m);
			return 2;
		} else if (!strcmp(a, "--tool")) {
			for (const char *t = v; *t;) {
				size_t l = strcspn(t, ",");
				if (m->nr_tools + m->nr_policies >= GX_CTL_MAX_ITEMS || !l || l >= sizeof(m->tool[0]) ||
				    memchr(t, '/', l) || memchr(t, '.', l)) {
					p_err("--tool %s: a tool name (see 'gpuext tools'), at most %d in all", v,
					      GX_CTL_MAX_ITEMS);
					free(m);
					return 2;
				}
				snprintf(m->tool[m->nr_tools++], sizeof(m->tool[0]), "%.*s", (int)l, t);
				t += l + (t[l] == ',');
			}
			i++;
		} else if (!strcmp(a, "--policy") || !strcmp(a, "--sched")) {
			char path[PATH_MAX], real[PATH_MAX];
			size_t l = strcspn(v, ",");
			snprintf(path, sizeof(path), "%.*s", (int)l, v);
			if (!strcmp(a, "--sched"))
				shipped_sched(path, real, sizeof(real));
			if (!strcmp(a, "--sched") && real[0]) {
			} else if (!realpath(path, real)) {
				p_err("%s %s: %s", a, path, strerror(errno));
				free(m);
				return 2;
			}
			char *dst = !strcmp(a, "--sched") ? m->sched : m->policy[m->nr_policies];
			if (strcmp(a, "--sched") && m->nr_tools + m->nr_policies >= GX_CTL_MAX_ITEMS) {
				p_err("at most %d tools and policies", GX_CTL_MAX_ITEMS);
				free(m);
				return 2;
			}
			snprintf(dst, GX_CTL_ITEM_MAX, "%.4000s%s", real, v + l);
			if (strcmp(a, "--sched"))
				m->nr_policies++;
			i++;
		} else if (!strcmp(a, "--launch-sample")) {
			if (gx_ctl_sample_parse(v, &every, &first) || strlen(v) >= sizeof(m->sample)) {
				p_err("--launch-sample %s: expected N[,first=K], N from 1 to 1000000 (e.g. 16, or 64,first=4)",
				      v);
				free(m);
				return 2;
			}
			snprintf(m->sample, sizeof(m->sample), "%s", v);
			i++;
		} else if (!strcmp(a, "--every-launch")) {
			snprintf(m->sample, sizeof(m->sample), "1");
			every = 1;
		} else if (!strcmp(a, "--timeout")) {
			timeout_s = (unsigned)strtoul(v, NULL, 10);
			i++;
		} else if (!pid && parse_pid(a) > 0) {
			pid = parse_pid(a);
		} else {
			p_err("unexpected argument '%s'", a);
			usage(stderr);
			free(m);
			return 2;
		}
	}
	if (!pid || (!m->nr_tools && !m->nr_policies && !m->sched[0])) {
		usage(stderr);
		free(m);
		return 2;
	}
	if (every > 1 && (m->nr_policies || m->sched[0])) {
		/* a device policy acts on every launch (shim/launch_sample.c) */
		p_err("--launch-sample is for tools: a device policy or --sched acts on every launch");
		free(m);
		return 2;
	}
	int rc = 0;
	if (pid > 0) {
		rc = attach_one(ctl, pid, m, timeout_s);
	} else {
		DIR *d = opendir(ctl);
		struct dirent *e;
		int nr = 0;
		while (d && (e = readdir(d))) {
			int p = 0;
			char end[8] = "";
			if (sscanf(e->d_name, "%d%7s", &p, end) == 2 && !strcmp(end, ".ps") && p > 0 && alive(p)) {
				nr++;
				rc |= attach_one(ctl, p, m, timeout_s);
			}
		}
		if (d)
			closedir(d);
		if (!nr) {
			p_err("no process runs under the gpuext shim (in %s)", ctl);
			rc = 1;
		}
	}
	free(m);
	return rc;
}

/* `gpuext tools report NAME --dir DIR` with this executable. */
static int report(const char *tool, const char *dir)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -1;
	exe[n] = 0;
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		char *av[8];
		int a = 0;
		av[a++] = exe;
		if (gx_json)
			av[a++] = "--json";
		av[a++] = "tools", av[a++] = "report", av[a++] = (char *)tool, av[a++] = "--dir";
		av[a++] = (char *)dir, av[a] = NULL;
		execv(exe, av);
		_exit(127);
	}
	int st = 0;
	if (c < 0 || waitpid(c, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

int do_detach(int argc, char **argv)
{
	char ctl[4096];
	int pid = 0;
	bool keep = false;
	unsigned timeout_s = 120;
	struct gx_ctl_msg *m = calloc(1, sizeof(*m)), *r = calloc(1, sizeof(*r));
	if (!m || !r || gx_ctl_dir(ctl, sizeof(ctl)))
		goto fail;
	m->op = GX_CTL_DETACH;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			free(m), free(r);
			return 0;
		} else if (!strcmp(a, "--keep")) {
			keep = true;
		} else if (!strcmp(a, "--timeout") && i + 1 < argc) {
			timeout_s = (unsigned)strtoul(argv[++i], NULL, 10);
		} else if (!pid && parse_pid(a) > 0) {
			pid = parse_pid(a);
		} else if (pid && !m->what[0] && strlen(a) < sizeof(m->what) && !strchr(a, '/')) {
			snprintf(m->what, sizeof(m->what), "%s", a);
		} else {
			p_err("unexpected argument '%s'", a);
			usage(stderr);
			free(m), free(r);
			return 2;
		}
	}
	if (!pid) {
		usage(stderr);
		free(m), free(r);
		return 2;
	}
	if (check_pid(ctl, pid) || transact(ctl, pid, m, r, timeout_s))
		goto fail;
	if (r->status) {
		p_err("process %d: %s", pid, r->msg);
		goto fail;
	}
	if (!gx_json)
		printf("gpuext: process %d: %s\n", pid, r->msg);
	int rc = 0;
	char *save = NULL, *list = strdup(r->attached);
	for (char *t = list ? strtok_r(list, ",", &save) : NULL; t && r->dir[0]; t = strtok_r(NULL, ",", &save)) {
		char sp[PATH_MAX];
		shipped_sched(t, sp, sizeof(sp));
		if (sp[0]) /* a schedule policy: what it did is in the detach message */
			continue;
		if (report(t, r->dir))
			fprintf(stderr, "gpuext: no report for %s (not a tool: its maps and log are in %s)\n", t,
				r->dir),
				keep = true;
	}
	free(list);
	if (r->dir[0] && !keep && !strncmp(r->dir, "/", 1) && strstr(r->dir, "/attach-"))
		rm_run_dir(r->dir);
	else if (r->dir[0])
		printf("gpuext: data kept in %s\n", r->dir);
	free(m), free(r);
	return rc;
fail:
	free(m), free(r);
	return 1;
}

int do_ps(int argc, char **argv)
{
	(void)argv;
	char ctl[4096];
	if (argc > 1) {
		usage(stderr);
		return 2;
	}
	if (gx_ctl_dir(ctl, sizeof(ctl)))
		return 1;
	DIR *d = opendir(ctl);
	struct dirent *e;
	int nr = 0;
	if (gx_json)
		printf("[");
	else
		printf("%-8s %-4s %-12s %-12s %-20s %s\n", "PID", "GPUS", "LAUNCHES", "INSTR", "ATTACHED", "COMMAND");
	while (d && (e = readdir(d))) {
		int pid = 0;
		char end[8] = "", path[4400], why[96], *text = NULL;
		size_t len = 0;
		if (sscanf(e->d_name, "%d%7s", &pid, end) != 2 || strcmp(end, ".ps") || pid <= 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", ctl, e->d_name);
		if (!alive(pid)) { /* ended without cleaning up (killed) */
			unlink(path);
			continue;
		}
		if (gx_read_trusted(path, GX_TRUST_ANY_OWNER, &text, &len, 8192, why, sizeof(why)))
			continue;
		char cmd[300] = "?", att[520] = "-", host[200] = "-";
		int gpus = 0;
		unsigned long long launches = 0, instr = 0, graphs = 0;
		for (char *s = text, *nl; s && *s; s = nl ? nl + 1 : NULL) {
			nl = strchr(s, '\n');
			if (nl)
				*nl = 0;
			if (!strncmp(s, "cmd ", 4))
				snprintf(cmd, sizeof(cmd), "%s", s + 4);
			else if (!strncmp(s, "attached ", 9))
				snprintf(att, sizeof(att), "%s", s + 9);
			else if (!strncmp(s, "host ", 5))
				snprintf(host, sizeof(host), "%s", s + 5);
			sscanf(s, "graph_launches_uninstrumented %llu", &graphs);
			sscanf(s, "gpus %d", &gpus);
			sscanf(s, "launches %llu", &launches);
			sscanf(s, "instrumented %llu", &instr);
		}
		free(text);
		if (gx_json) {
			printf("%s{\"pid\":%d,\"gpus\":%d,\"launches\":%llu,\"instrumented\":%llu,\"attached\":\"%s\","
			       "\"host_policies\":\"%s\",\"graph_launches_uninstrumented\":%llu,\"command\":\"",
			       nr ? "," : "", pid, gpus, launches, instr, att, host, graphs);
			for (const char *c = cmd; *c; c++)
				printf(*c == '"' || *c == '\\' ? "\\%c" : "%c", *c);
			printf("\"}");
		} else {
			printf("%-8d %-4d %-12llu %-12llu %-20s %s\n", pid, gpus, launches, instr, att, cmd);
		}
		nr++;
	}
	if (d)
		closedir(d);
	if (gx_json)
		printf("]\n");
	return 0;
}
