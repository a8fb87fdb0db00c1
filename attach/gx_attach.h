/* gx_attach.h — attach/'s one public header: device policies and tools
 * attached to an application.
 *
 * The path of `gpuext-run --policy P --tool T`: the options become
 * GPUEXT_POLICY / GPUEXT_TOOL → the shim, at its first module rewrite, calls
 * gx_attach_rewrite_opts() → attach/ lists the objects, takes each one's
 * verified PTX from the JIT cache or from libgxjit.so (devbpf's verifier and
 * JIT, dlopened on a miss so the shim never links LLVM), joins several
 * policies into one PTX text, starts their device runtime (maps, rings and
 * tool logs per context: devrt.c) and fills the rewrite options → the
 * rewriter (ptx-rewrite) links the code into the module. Nothing here calls
 * back into the shim's entry points: the driver and the shim's services
 * come in through struct gx_attach_host.
 *
 * Any failure is one "gpuext: policy NAME: ...; running without it" line;
 * the application runs on without that policy. Entries may carry knobs,
 * "obj.bpf.o,name=value,...": the object's plain (not const) global
 * variables of that name start with that value. */
#ifndef GX_ATTACH_H
#define GX_ATTACH_H

/* Every ABI variant of the driver's functions (cuMemAlloc_v2 ...). */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpuext/gx_events.h"
#include "gpuext/gx_hooks.h"
#include "ptx-rewrite/gx_ptx.h"

/* ---- a device policy ready to attach, and the cache that keeps it (pcache.c) ----
 *
 * Why: the machines that run GPU applications may lack LLVM (the JIT's
 * dependency) and libbpf (the loader's), so the shim never opens a .bpf.o
 * itself. Everything it needs — the verified programs' PTX, their hook
 * bindings, the map specs with the initial bytes of global data — is a
 * `struct gx_policy_desc`, produced by the JIT library (libgxjit.so, which
 * loads, verifies and translates) and stored as one file per key:
 *
 *   $GPUEXT_CACHE_DIR (default $XDG_CACHE_HOME/gpuext, ~/.cache/gpuext)
 *     /<fnv64 of the .bpf.o bytes>-<gpuext version>-j<JIT rev>-sm<NN>-ptx<VV>.gxpol
 *
 * An entry exists only for an object that passed the verifier, so a cache
 * hit is as good as a fresh verify + JIT. The file is text: a manifest
 * (one line per program and map), then the PTX. Written to a temporary name
 * and renamed, so concurrent writers and readers never see half a file.
 * No LLVM, no libbpf: linked into the shim, the CLI and libgxjit.so.
 *
 * gx_cache_dir() (common/gx_util.h) is the cache folder. */

#define GX_PCACHE_FORMAT 1
#define GX_PCACHE_PTXVER 80 /* the JIT emits PTX ISA 8.0 (+ptx80) */
/* Bumped whenever the JIT's output for the same object changes (2:
 * ctx->launch_id reads %gridid; 3: atomics in .global, red for non-fetch
 * ones, array lookups without a division, release fence on ring commits;
 * 4: maps carry GX_BPF_MAP_F_RDONLY, and entries list the global
 * variables, for knobs; earlier entries lack both; 5: the runtime block
 * itself in .const, read with ld.const, instead of a pointer to it; 6: array
 * lookups take max_entries and the value stride as immediates), so
 * older entries are never used. */
#define GX_PCACHE_JITREV 6
#define GX_POL_NAME_MAX 64

struct gx_pol_prog {
	char func[96];  /* .func name in the PTX */
	unsigned hook;  /* one enum gdev_hook bit */
	char glob[128]; /* kernel glob; "" = every kernel */
};

struct gx_pol_map {
	char name[GX_POL_NAME_MAX]; /* "<object>.<map>" */
	unsigned type, key_size, value_size, max_entries;
	unsigned gx_flags;          /* GX_BPF_MAP_F_INTERNAL (global data), _RDONLY (.rodata*: sealed) */
	unsigned char *init;        /* initial value bytes (global data) or NULL */
	size_t init_len;
};

/* A global variable (.data/.bss/.rodata): a knob a user may set with
 * "obj.bpf.o,name=value" when it is not .rodata (the JIT folded those). */
struct gx_pol_var {
	char name[GX_POL_NAME_MAX];
	unsigned map, off, size; /* its map (index in maps), place in the value */
};

struct gx_policy_desc {
	char name[GX_POL_NAME_MAX]; /* object name */
	uint64_t hash;              /* fnv64 of the object bytes */
	unsigned sm, ptxver;
	char *ptx;                  /* NUL-terminated */
	size_t ptx_len;
	struct gx_pol_prog *progs;
	size_t nr_progs;
	struct gx_pol_map *maps;    /* in the object's map index order */
	size_t nr_maps;
	struct gx_pol_var *vars;
	size_t nr_vars;
};

/* Set knobs "name=value[,name=value...]" in d's initial global data (the
 * maps' init bytes): 0, or -EINVAL with a one-line reason (no such
 * variable, a .rodata one, a bad value). */
int gx_pdesc_set_knobs(struct gx_policy_desc *d, const char *knobs, char *err, size_t en);
/* Read variable `name` of d's initial data (size bytes, little endian). */
int gx_pdesc_get_var(const struct gx_policy_desc *d, const char *name, void *out, size_t size);
/* A binding's sample (gx_ptx_rewrite_opts.bind_samples): d's GX_MEM_SAMPLE_VAR for a
 * GDEV_HOOK_MEM program, else 0 (every access). */
unsigned gx_pdesc_mem_sample(const struct gx_policy_desc *d, unsigned hook);

uint64_t gx_pcache_hash(const void *buf, size_t len);
/* The cache key of an object: its hash, changed by the JIT's A/B switches
 * (GX_JIT_FOLD=0). */
uint64_t gx_pcache_key(const void *obj, size_t len);
/* Full path of the entry for (hash, sm). */
int gx_pcache_path(const char *dir, uint64_t hash, unsigned sm, char *out, size_t n);
/* The PTX target the JIT uses for a device arch (LLVM 19 stops at sm_90). */
unsigned gx_pcache_jit_sm(unsigned sm);

/* Serialize / parse (the file format). Parse: 0 or -EINVAL with a reason in err. */
char *gx_pdesc_serialize(const struct gx_policy_desc *d, size_t *len);
int gx_pdesc_parse(const char *text, size_t len, struct gx_policy_desc *d, char *err, size_t err_sz);
void gx_pdesc_free(struct gx_policy_desc *d);

/* Look up: 0, -ENOENT (miss), -EINVAL (corrupt entry: err says why) or
 * -EPERM (the folder or the entry breaks the trust rule of gx_trust.h:
 * owned by another user, writable by group or others, a symbolic link; err
 * names the file and why). Any folder owned by this user or root is read,
 * never written (docs/trust.md). */
int gx_pcache_load(const char *dir, uint64_t hash, unsigned sm, struct gx_policy_desc *d, char *err,
		   size_t err_sz);
/* Store: creates the folder (0700; with GX_PCACHE_SHARED 0755 and entries
 * 0644, for a cache prepared for all users of an install), writes only into
 * a folder owned by this user and not writable by group or others (else
 * -EPERM). 0 or -errno. */
#define GX_PCACHE_SHARED 1u
int gx_pcache_store(const char *dir, const struct gx_policy_desc *d, unsigned flags);

/* ---- the JIT library's entry point (libgxjit.so; also linked into the CLI) ----
 * Open `obj` (len bytes, named `name`), verify every program, JIT the device
 * programs to PTX for `sm`, and describe the result. 0, or -errno with a
 * one-line reason in err ("prog NAME insn N: reason" for rejections). */
#define GX_JITLIB_SONAME "libgxjit.so"
#define GX_JITLIB_SYM "gx_jitlib_build"
/* A symbol of libgxjit.so (loaded on first use; see jitlib_open.c), or NULL
 * with a one-line reason in err. */
void *gx_jitlib_sym(const char *sym, char *err, size_t en);
/* fn runs once right after a JIT library (and the LLVM it links) is loaded,
 * on the loading thread: LLVM registers its exit-time destructors then, so
 * an atexit handler registered by fn runs before them (the shim's control
 * thread may be inside LLVM when the process exits: live.c waits there). */
void gx_jitlib_set_loaded_hook(void (*fn)(void));
/* gx_jitlib_build() of libgxjit.so, loaded on first use: 0 or -errno with err set. */
int gx_jitlib_build_lazy(const void *obj, size_t len, const char *name, unsigned sm,
			 struct gx_policy_desc *d, char *err, size_t en);
/* The name a policy goes by: its file name without folder and ".bpf.o". */
void gx_policy_tag(const char *path, char *tag, size_t n);
/* Read the object at `path` and build it for `sm` through libgxjit.so: 0,
 * or -errno with "PATH: reason" in err. */
int gx_policy_build_file(const char *path, unsigned sm, struct gx_policy_desc *d, char *err, size_t en);
/* The same for another library of ours that links LLVM (gpuext-bpfjit.so). */
void *gx_jitlib_sym_in(const char *soname, const char *sym, char *err, size_t en);
typedef int (*gx_jitlib_build_fn)(const void *obj, size_t len, const char *name, unsigned sm,
				  struct gx_policy_desc *out, char *err, size_t err_sz);
int gx_jitlib_build(const void *obj, size_t len, const char *name, unsigned sm,
		    struct gx_policy_desc *out, char *err, size_t err_sz);

/* ---- several device policies in one process (pmerge.c) ----
 *
 * Each policy object is JIT'd (and cached) on its own, so two of them would
 * clash in one module: same symbols, and one __gx_devrt for two map index
 * spaces. The first policy is used as it is; every later one (k = 1..4) is
 * relocated: its symbols renamed (its runtime block becomes
 * `__gx_devrt__p<k>`, which the shim fills with its own maps and ring) and
 * its module header dropped.
 * The relocated PTX texts are appended to the first; the hook bindings of
 * all policies, in order, make the trampolines call them one after another
 * at every hook they share. */

#define GX_PMERGE_MAX 5 /* device policies per process */

/* Relocate d, the k-th policy (1 <= k < GX_PMERGE_MAX), in place (d->ptx and
 * d->progs[].func change). 0, or -EINVAL / -ENOMEM with a one-line reason
 * ("policy NAME: cannot run beside the others: ..."). */
int gx_pdesc_relocate(struct gx_policy_desc *d, unsigned k, char *err, size_t en);

/* What gx_ptx_rewrite needs for a set of policies: one PTX text, the
 * bindings of every program in policy order, the union of their hooks. */
struct gx_policy_set {
	char *ptx;
	size_t ptx_len;
	struct gx_hook_binding *binds; /* point into the descriptions' progs */
	unsigned *samples;             /* per binding: gx_pdesc_mem_sample() */
	size_t nr_binds;
	unsigned hooks;
};
/* Relocate d[1..n-1] (in place) and join them after d[0]. The descriptions
 * must outlive the set. 0 or -errno with a one-line reason. */
int gx_pset_build(struct gx_policy_desc *d, size_t n, struct gx_policy_set *out, char *err, size_t en);
/* The same without relocating: d[k] (k >= 1) already went through
 * gx_pdesc_relocate(&d[k], k). */
int gx_pset_join(const struct gx_policy_desc *d, size_t n, struct gx_policy_set *out);
void gx_pset_free(struct gx_policy_set *s);

/* ---- the configured policies (policy.c) ----
 * The schedule policy (GPUEXT_SCHED less blocksched's own knobs), then
 * GPUEXT_POLICY's device objects (colon-separated, knobs after a comma;
 * objects is_host_policy() claims are skipped), then GPUEXT_TOOL's tools
 * (comma-separated names: $GPUEXT_TOOLS_DIR/NAME.bpf.o, else
 * <folder of this program or library>/../share/gpuext/tools), at most
 * GX_PMERGE_MAX, each from the JIT cache or libgxjit.so for `sm`, joined.
 * What the shim attaches, and what gpuext-ptxas compiles in: the same list
 * gives the same code. A policy that fails is one log line and is left
 * out. 0 (pl->nr may be 0) or -ENOMEM. */
struct gx_policy_list {
	struct gx_policy_desc desc[GX_PMERGE_MAX];
	char tag[GX_PMERGE_MAX][GX_POL_NAME_MAX];
	size_t nr;
	struct gx_policy_set set; /* all of them joined */
};
struct gx_policy_names {
	const char *sched;  /* "obj.bpf.o[,knobs]" or NULL */
	const char *policy; /* GPUEXT_POLICY */
	const char *tool;   /* GPUEXT_TOOL */
};
int gx_policy_list_load(const struct gx_policy_names *pn, unsigned sm, bool (*is_host_policy)(const char *),
			struct gx_policy_list *pl);
void gx_policy_list_free(struct gx_policy_list *pl);

/* ---- attaching in a process (policy.c, devrt.c) ---- */

/* The driver functions the device runtime calls: the real driver's (never
 * the shim's wrappers, which would rewrite the runtime's own module and
 * raise events). */
#define GX_ATTACH_CU_FUNCS(X)                                                          \
	X(cuCtxGetCurrent) X(cuCtxGetDevice) X(cuCtxSetCurrent) X(cuCtxSynchronize)    \
	X(cuDeviceGet) X(cuDeviceGetAttribute) X(cuDeviceGetCount) X(cuFuncGetModule)  \
	X(cuGetErrorName) X(cuKernelGetFunction) X(cuLaunchKernel) X(cuMemAlloc_v2)    \
	X(cuMemFreeHost) X(cuMemFree_v2) X(cuMemHostAlloc) X(cuMemHostGetDevicePointer_v2) \
	X(cuMemHostRegister_v2) X(cuMemHostUnregister) X(cuMemcpyDtoHAsync_v2)         \
	X(cuMemcpyHtoDAsync_v2) X(cuMemcpyHtoD_v2) X(cuMemsetD8Async)                  \
	X(cuModuleGetFunction) X(cuModuleGetGlobal_v2) X(cuModuleLoadData)            \
	X(cuModuleUnload) X(cuStreamCreate) X(cuStreamDestroy_v2) X(cuStreamSynchronize)             \
	X(cuEventCreate) X(cuEventRecord) X(cuEventSynchronize) X(cuEventQuery) X(cuEventElapsedTime) \
	X(cuEventDestroy) X(cuStreamIsCapturing) X(cuThreadExchangeStreamCaptureMode)

struct gx_attach_cu {
#define GX_ATTACH_CU_MEMBER(name) __typeof__(&name) name;
	GX_ATTACH_CU_FUNCS(GX_ATTACH_CU_MEMBER)
#undef GX_ATTACH_CU_MEMBER
};

/* What the process gives attach/: configuration, the driver, the shim's
 * services. Lives as long as the process. */
struct gx_attach_host {
	size_t sz;                  /* sizeof(struct gx_attach_host) */
	const char *policy;         /* GPUEXT_POLICY: "obj.bpf.o[,knobs]:..." (host objects skipped) */
	const char *tool;           /* GPUEXT_TOOL: "name,name" */
	const char *self_dir;       /* folder of the shim: tools in ../share/gpuext/tools */
	const struct gx_attach_cu *cu;
	/* The device's arch as major*10+minor (90 for sm_90), 0 if unknown. */
	unsigned (*dev_sm)(CUdevice dev);
	/* gx_events_subscribe of the shim. */
	int (*subscribe)(unsigned mask, gx_event_fn fn, void *cookie);
	/* Is this object a host (struct_ops) policy? Those are not ours. */
	bool (*is_host_policy)(const char *path);
	/* A device policy asked for [addr, addr + len) to be prefetched. */
	void (*device_prefetch)(CUcontext ctx, CUdevice dev, uint64_t addr, uint64_t len);
	/* Register a lock so fork() holds it (order: outer locks lower). */
	void (*lock_register)(pthread_mutex_t *m, int order);
	/* GPUEXT_SCHED without blocksched's own knobs: "obj.bpf.o[,knobs]",
	 * the schedule policy, attached first (blocksched/gx_blocksched.h). */
	const char *sched;
	/* Called by the drainer after each tick, holding no lock of ours
	 * (the shim's stats file, shim/stats.c); may be NULL. */
	void (*tick)(void);
	/* gx_events_unsubscribe of the shim (a live detach). */
	int (*unsubscribe)(int id);
	/* The module in ctx holding the persistent copies of the launched
	 * function or kernel `f`, when the shim loaded them beside the
	 * application's module (a schedule policy alone: shim/load.c); NULL
	 * otherwise. The device runtime writes that module's __gx_devrt when
	 * it first sees f, since the launch events it gets name the original.
	 * May be NULL. */
	CUmodule (*side_module)(CUcontext ctx, void *f);
};

/* Load the configured policies and start their device runtime (tool logs,
 * launch records; maps per context at its first use). The first call
 * latches `host`. The shim calls it at cuInit, so that the launches of
 * modules that are never rewritten (SASS only) are seen too. 1 when at
 * least one policy is attached, else 0 (none configured, or every one
 * failed: each said why in one line). Thread-safe, idempotent. */
int gx_attach_start(const struct gx_attach_host *host);
/* What the device runtime counted, into the stats file (gpuext/gx_stats.h):
 * launches, instrumented, graph launches, sampled GPU time, ring drops, the
 * policies' tags and the most launched kernels. From a background thread
 * (takes the runtime's lock briefly); nothing when no policy is attached. */
struct gx_stats_file;
void gx_attach_stats(struct gx_stats_file *f);
/* Fill hooks, policy PTX and bindings for a module about to be rewritten
 * (gx_attach_start first, if it has not run); a no-op when no policy is
 * attached. Thread-safe. */
void gx_attach_rewrite_opts(const struct gx_attach_host *host, struct gx_ptx_rewrite_opts *opts);
/* ---- live attach (gpuext attach PID; the shim's live.c) ----
 * Load the policies named in `pn` for a process that runs none from its
 * start, write their maps and tool logs into `dir` (a folder of this user),
 * and start their device runtime; modules are then rewritten with
 * gx_attach_live_opts() by the shim, which keeps the application's own
 * modules as they are and launches instrumented copies. The same names
 * again reuse the loaded descriptions (a few lists are kept, so attach /
 * detach cycles neither JIT again nor grow). 0, -EBUSY (policies from the
 * process's start, or one attached live already), or -errno with a
 * one-line reason in err (also logged). `names` gets the tags attached. */
int gx_attach_live_start(const struct gx_attach_host *host, const struct gx_policy_names *pn, const char *dir,
			 char *names, size_t nn, char *err, size_t en);
/* The live policies' rewrite options (no-op when none is attached live). */
void gx_attach_live_opts(struct gx_ptx_rewrite_opts *opts);
/* The current context's device maps for the live policies: 0 or -EIO. */
int gx_attach_live_ctx_ready(void);
/* Stop the live policies: last drain and flush, tool logs closed, device
 * maps freed unless keep_device (graphs made meanwhile may run the hooks).
 * The caller made sure no instrumented launch is still running. */
void gx_attach_live_stop(bool keep_device);
/* Whether policies are attached live now. */
bool gx_attach_live_on(void);

/* A global variable of the attached policy `tag` (its initial value with
 * the knobs applied): 0, -ENOENT (no such variable of that size) or
 * -ENODEV (no such policy attached). */
int gx_attach_policy_var(const char *tag, const char *name, void *out, size_t size);

#endif
