/* gx_pcache.h — a device policy ready to attach, and the cache that keeps it.
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
 * No LLVM, no libbpf: linked into the shim, the CLI and libgxjit.so. */
#ifndef GX_PCACHE_H
#define GX_PCACHE_H

#include <stddef.h>
#include <stdint.h>

#define GX_PCACHE_FORMAT 1
#define GX_GPUEXT_VERSION "0.1.0"
#define GX_PCACHE_PTXVER 80 /* the JIT emits PTX ISA 8.0 (+ptx80) */
/* Bumped whenever the JIT's output for the same object changes (2:
 * ctx->launch_id reads %gridid; 3: atomics in .global, red for non-fetch
 * ones, array lookups without a division, release fence on ring commits;
 * 4: maps carry GX_BPF_MAP_F_RDONLY, which earlier entries lack), so older
 * entries are never used. */
#define GX_PCACHE_JITREV 4
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
};

uint64_t gx_pcache_hash(const void *buf, size_t len);
/* The cache folder (not created). 0 or -ENOENT when no HOME either. */
int gx_pcache_dir(char *buf, size_t n);
/* Full path of the entry for (hash, sm). */
int gx_pcache_path(const char *dir, uint64_t hash, unsigned sm, char *out, size_t n);
/* The PTX target the JIT uses for a device arch (LLVM 19 stops at sm_90). */
unsigned gx_pcache_jit_sm(unsigned sm);

/* Serialize / parse (the file format). Parse: 0 or -EINVAL with a reason in err. */
char *gx_pdesc_serialize(const struct gx_policy_desc *d, size_t *len);
int gx_pdesc_parse(const char *text, size_t len, struct gx_policy_desc *d, char *err, size_t err_sz);
void gx_pdesc_free(struct gx_policy_desc *d);

/* Look up: 0, -ENOENT (miss) or -EINVAL (corrupt entry: err says why). */
int gx_pcache_load(const char *dir, uint64_t hash, unsigned sm, struct gx_policy_desc *d, char *err,
		   size_t err_sz);
/* Store (creates the folder, mode 0700). 0 or -errno. */
int gx_pcache_store(const char *dir, const struct gx_policy_desc *d);

/* ---- the JIT library's entry point (libgxjit.so; also linked into the CLI) ----
 * Open `obj` (len bytes, named `name`), verify every program, JIT the device
 * programs to PTX for `sm`, and describe the result. 0, or -errno with a
 * one-line reason in err ("prog NAME insn N: reason" for rejections). */
#define GX_JITLIB_SONAME "libgxjit.so"
#define GX_JITLIB_SYM "gx_jitlib_build"
/* A symbol of libgxjit.so (loaded on first use; see jitlib_open.c), or NULL
 * with a one-line reason in err. */
void *gx_jitlib_sym(const char *sym, char *err, size_t en);
/* gx_jitlib_build() of libgxjit.so, loaded on first use: 0 or -errno with err set. */
int gx_jitlib_build_lazy(const void *obj, size_t len, const char *name, unsigned sm,
			 struct gx_policy_desc *d, char *err, size_t en);
/* The same for another library of ours that links LLVM (gpuext-bpfjit.so). */
void *gx_jitlib_sym_in(const char *soname, const char *sym, char *err, size_t en);
typedef int (*gx_jitlib_build_fn)(const void *obj, size_t len, const char *name, unsigned sm,
				  struct gx_policy_desc *out, char *err, size_t err_sz);
int gx_jitlib_build(const void *obj, size_t len, const char *name, unsigned sm,
		    struct gx_policy_desc *out, char *err, size_t err_sz);

#endif
