/* gpu_ref.c — CPU side of the GPU differential test (tests/gpu/devbpf.sh).
 *   gpu_ref POLICY.bpf.o BENCH.bpf.o OUTDIR
 * JITs both objects to PTX (policy.ptx: gxp_*, bench.ptx: gxb_*), writes
 * their map specs, and runs the check kernel's exact event stream (every
 * warp leader: one entry hook, GX_T_ITERS memory hooks) through the reference
 * interpreter and through the native JIT, each on its own maps. Both final
 * states must match; the interpreter's becomes OUTDIR/expected.txt, which the
 * GPU run must reproduce. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "devbpf/gx_bpf.h"
#include "ptx-rewrite/gx_ptx.h"
#include "tests/devbpf/gpu/gpu_common.h"
#include "tests/devbpf/interp_shim.h"
#include "tests/gx_test.h"

#define SIM_SMS 4

static struct gx_bpf_object *load(const char *path)
{
	struct gx_bpf_object *obj = gx_bpf_object__open_file(path, NULL);
	struct gx_bpf_verify_opts vo = { .sz = sizeof(vo), .quiet = true };
	GX_CHECK(obj && !gx_bpf_object__verify(obj, &vo), "load and verify %s", path);
	return obj;
}

static int write_ptx(struct gx_bpf_object *obj, const char *prefix, const char *path)
{
	/* standalone: the driver links it with the test kernels, no rewriter */
	struct gx_jit_object_opts o = { .sz = sizeof(o), .target = GX_JIT_PTX, .prefix = prefix,
					.define_devrt = 1 };
	char err[256];
	struct gx_jit *j = gx_jit_object(obj, &o, NULL, NULL, err, sizeof(err));
	GX_CHECK(j != NULL, "PTX for %s (%s)", path, j ? "ok" : err);
	if (!j)
		return -1;
	printf("# %s: jit %.1f ms wall, %.1f ms cpu\n", path, gx_jit__time_ms(j), gx_jit__cpu_ms(j));
	FILE *f = fopen(path, "w");
	int ok = f && fputs(gx_jit__ptx(j, NULL), f) >= 0;
	if (f)
		fclose(f);
	gx_jit__free(j);
	return ok ? 0 : -1;
}

static int write_specs(struct gx_bpf_object *obj, const char *path)
{
	struct gx_map **maps;
	size_t n;
	if (gx_jit_object_maps(obj, 0, 1, &maps, &n))
		return -1;
	FILE *f = fopen(path, "w");
	if (f) {
		gx_t_write_specs(f, maps, n);
		fclose(f);
	}
	gx_jit_object_maps_free(maps, n);
	return f ? 0 : -1;
}

typedef uint32_t (*hook_fn)(void *);

/* Run the event stream; native != NULL: through native functions. */
static void simulate(struct gx_bpf_object *obj, struct gx_map **maps, size_t nm,
		     hook_fn native_entry, hook_fn native_access)
{
	struct gx_jit_map *jm = calloc(nm, sizeof(*jm));
	for (size_t i = 0; i < nm; i++)
		jm[i].host = maps[i];
	const struct gx_bpf_prog *pe = gx_bpf_object__find_prog(obj, "gpu_entry");
	const struct gx_bpf_prog *pa = gx_bpf_object__find_prog(obj, "gpu_access");
	int bad = 0;
	for (unsigned b = 0; b < GX_T_GRID; b++)
		for (unsigned w = 0; w < GX_T_BLOCK / 32; w++) {
			struct gdev_ctx c = { .kernel_id = gx_kernel_id(GX_T_KERNEL),
					      .size = 4, .op = GDEV_MEM_LOAD, .space = GDEV_SPACE_GLOBAL,
					      .active_mask = 0xffffffffu, .nr_active = 32,
					      .hook = GDEV_HOOK_ENTRY, .ctaid_x = b, .ctaid_y = 0,
					      .nctaid_x = GX_T_GRID, .nctaid_y = 1, .nctaid_z = 1,
					      .tid_x = w * 32, .ntid_x = GX_T_BLOCK, .ntid_y = 1, .ntid_z = 1,
					      .smid = b % SIM_SMS, .warpid = w };
			gx_host_env = (struct gx_host_env){ .smid = b % SIM_SMS, .warpid = w,
							    .block_idx = { b, 0, 0 },
							    .thread_idx = { w * 32, 0, 0 },
							    .block_dim = { GX_T_BLOCK, 1, 1 },
							    .grid_dim = { GX_T_GRID, 1, 1 } };
			uint64_t r;
			if (native_entry)
				native_entry(&c);
			else
				bad += gx_test_interp_maps(gx_bpf_prog__insns(pe), gx_bpf_prog__insn_cnt(pe), &c, jm, &r) != 0;
			c.hook = GDEV_HOOK_MEM;
			for (unsigned i = 0; i < GX_T_ITERS; i++) {
				c.addr = GX_T_ADDR(b, w, i);
				if (native_access)
					native_access(&c);
				else
					bad += gx_test_interp_maps(gx_bpf_prog__insns(pa), gx_bpf_prog__insn_cnt(pa), &c, jm, &r) != 0;
			}
		}
	GX_CHECK(bad == 0, "%s ran every event", native_entry ? "native JIT" : "interpreter");
	free(jm);
}

static char *dump_str(struct gx_map **maps, size_t n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	gx_t_dump(f, maps, n);
	fclose(f);
	return buf;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: gpu_ref POLICY.bpf.o BENCH.bpf.o OUTDIR\n");
		return 2;
	}
	char path[512];
	struct gx_bpf_object *obj = load(argv[1]), *bench = load(argv[2]);
	if (!obj || !bench)
		return 1;
	snprintf(path, sizeof(path), "%s/policy.ptx", argv[3]);
	write_ptx(obj, "gxp_", path);
	snprintf(path, sizeof(path), "%s/bench.ptx", argv[3]);
	write_ptx(bench, "gxb_", path);
	snprintf(path, sizeof(path), "%s/maps.txt", argv[3]);
	GX_CHECK(!write_specs(obj, path), "map specs written");
	snprintf(path, sizeof(path), "%s/bench_maps.txt", argv[3]);
	GX_CHECK(!write_specs(bench, path), "bench map specs written");

	static _Alignas(64) unsigned char ring[sizeof(struct gx_ring) + (1 << 16)];
	gx_ring__init((struct gx_ring *)ring, 1 << 16);
	gx_host_ring = (struct gx_ring *)ring;

	struct gx_map **mi, **mn;
	size_t ni, nn;
	gx_jit_object_maps(obj, 0, SIM_SMS, &mi, &ni);
	gx_jit_object_maps(obj, 0, SIM_SMS, &mn, &nn);
	simulate(obj, mi, ni, NULL, NULL);
	struct gx_jit_object_opts o = { .sz = sizeof(o), .target = GX_JIT_NATIVE, .maps = mn, .nr_maps = nn };
	char err[256];
	struct gx_jit *j = gx_jit_object(obj, &o, NULL, NULL, err, sizeof(err));
	GX_CHECK(j != NULL, "native JIT of the GPU policies (%s)", j ? "ok" : err);
	if (j)
		simulate(obj, mn, nn, (hook_fn)gx_jit__func(j, "gxp_gpu_entry"),
			 (hook_fn)gx_jit__func(j, "gxp_gpu_access"));
	char *di = dump_str(mi, ni), *dn = dump_str(mn, nn);
	GX_CHECK(di && dn && !strcmp(di, dn), "interpreter and native JIT end in the same map state");
	/* The GPU harness builds its maps from maps.txt, not from the object:
	 * run the interpreter once more on maps made that way, so whatever the
	 * spec file loses (it once lost .rodata, and printk saw an empty
	 * format on the GPU) shows up here, without a GPU. */
	struct gx_map **ms = NULL;
	size_t ns = 0;
	snprintf(path, sizeof(path), "%s/maps.txt", argv[3]);
	FILE *sf = fopen(path, "r");
	int sr = sf ? gx_t_read_specs(sf, SIM_SMS, &ms, &ns) : -1;
	if (sf)
		fclose(sf);
	GX_CHECK(sr == 0 && ns == ni, "maps re-created from %s (%zu maps)", path, ns);
	if (sr == 0) {
		simulate(obj, ms, ns, NULL, NULL);
		char *ds = dump_str(ms, ns);
		GX_CHECK(di && ds && !strcmp(di, ds),
			 "maps made from the spec file (as on the GPU) end in the interpreter's state");
		if (di && ds && strcmp(di, ds))
			for (char *a = di, *b = ds; *a && *b;) {
				size_t la = strcspn(a, "\n"), lb = strcspn(b, "\n");
				if (la != lb || memcmp(a, b, la)) {
					printf("#  expected: %.*s\n#  got:      %.*s\n", (int)la, a, (int)lb, b);
					break;
				}
				a += la + (a[la] != 0), b += lb + (b[lb] != 0);
			}
		free(ds);
		gx_jit_object_maps_free(ms, ns);
	}
	GX_CHECK(di && strstr(di, "checks 0 1056\n") && strstr(di, "checks 7 1\n") &&
			 strstr(di, "events records 16 "),
		 "reference state has the expected counts");
	snprintf(path, sizeof(path), "%s/expected.txt", argv[3]);
	FILE *f = fopen(path, "w");
	GX_CHECK(f && fputs(di ? di : "", f) >= 0, "expected state written to %s", path);
	if (f)
		fclose(f);
	free(di);
	free(dn);
	gx_jit__free(j);
	gx_jit_object_maps_free(mi, ni);
	gx_jit_object_maps_free(mn, nn);
	gx_bpf_object__close(obj);
	gx_bpf_object__close(bench);
	return gx_test_done();
}
