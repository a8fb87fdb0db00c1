/* Loader tests: the object model of a well-formed object (maps, global data,
 * relocations, flattened subprograms, hooks), then malformed inputs — bad map
 * definitions, externs, unknown sections, truncations, patched headers,
 * relocations and counts, random corruption — each must fail with a clear
 * message and no crash (this test also runs under ASan in `make fuzz`).
 * argv[1]: the folder with good.bpf.o and bad-N.bpf.o. */
#include <elf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "gpuext/gdev_ctx.h"
#include "gpuext/gdev_helpers.h"
#include "devbpf/gx_bpf.h"
#include "common/gx_log.h"
#include "common/gx_util.h"
#include "tests/devbpf/bpf_bomb.h"
#include "tests/gx_test.h"

static char last_msg[1024];

static void capture(enum gx_log_level l, const char *fmt, va_list ap)
{
	(void)l;
	vsnprintf(last_msg, sizeof(last_msg), fmt, ap);
}

static const char *dir;

static char *load(const char *name, size_t *len)
{
	char path[4096], *buf = NULL;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (gx_read_file(path, &buf, len, 0))
		return NULL;
	return buf;
}

/* Open a buffer; true if it failed with errno set and a message containing want. */
static bool fails_with(const void *buf, size_t len, const char *want)
{
	last_msg[0] = 0;
	errno = 0;
	struct gx_bpf_open_opts o = { .sz = sizeof(o), .object_name = "t" };
	struct gx_bpf_object *obj = gx_bpf_object__open_mem(buf, len, &o);
	if (obj) {
		gx_bpf_object__close(obj);
		return false;
	}
	if (!errno)
		return false;
	if (want && !strstr(last_msg, want)) {
		printf("# message was: %s", last_msg);
		return false;
	}
	return true;
}

static Elf64_Shdr *shdr(char *buf, int i)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)buf;
	return (Elf64_Shdr *)(buf + eh->e_shoff) + i;
}

static int find_sec(char *buf, const char *name)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)buf;
	const char *strs = buf + shdr(buf, eh->e_shstrndx)->sh_offset;
	for (int i = 1; i < eh->e_shnum; i++)
		if (!strcmp(strs + shdr(buf, i)->sh_name, name))
			return i;
	return -1;
}

static void check_good(const char *buf, size_t len)
{
	struct gx_bpf_object *obj = gx_bpf_object__open_mem(buf, len, NULL);
	GX_CHECK(obj != NULL, "good object opens");
	if (!obj)
		return;
	GX_CHECK(gx_bpf_object__prog_cnt(obj) == 4, "four programs");
	GX_CHECK(gx_bpf_object__map_cnt(obj) == 8, "five maps and three global data maps (%zu)",
		 gx_bpf_object__map_cnt(obj));
	struct gx_bpf_map *m = gx_bpf_object__find_map(obj, "counts");
	GX_CHECK(m && gx_bpf_map__type(m) == GX_BPF_MAP_HASH && gx_bpf_map__key_size(m) == 8 &&
			 gx_bpf_map__value_size(m) == 16 && gx_bpf_map__max_entries(m) == 1024 &&
			 gx_bpf_map__btf_value_type_id(m) != 0,
		 "hash map from __type key/value");
	m = gx_bpf_object__find_map(obj, "arr");
	GX_CHECK(m && gx_bpf_map__type(m) == GX_BPF_MAP_ARRAY && gx_bpf_map__key_size(m) == 4 &&
			 gx_bpf_map__value_size(m) == 8 && gx_bpf_map__btf_key_type_id(m) == 0,
		 "array map from key_size/value_size");
	GX_CHECK(m && (gx_bpf_map__gx_flags(m) & GX_BPF_MAP_F_RECORDS) &&
			 gx_bpf_map__map_flags(m) == GDEV_F_RECORDS,
		 "GDEV_F_RECORDS makes the array a record table");
	m = gx_bpf_object__find_map(obj, "counts");
	GX_CHECK(m && !(gx_bpf_map__gx_flags(m) & GX_BPF_MAP_F_RECORDS), "a map without it is not one");
	m = gx_bpf_object__find_map(obj, "arr");
	m = gx_bpf_object__find_map(obj, "per_sm");
	GX_CHECK(m && gx_bpf_map__type(m) == GX_BPF_MAP_PERSM_ARRAY, "per-SM sharded array");
	m = gx_bpf_object__find_map(obj, "per_warp");
	GX_CHECK(m && gx_bpf_map__type(m) == GX_BPF_MAP_PERWARP_ARRAY && gx_bpf_map__max_entries(m) == 2,
		 "per-warp sharded array");
	m = gx_bpf_object__find_map(obj, "events");
	GX_CHECK(m && gx_bpf_map__type(m) == GX_BPF_MAP_RINGBUF && gx_bpf_map__max_entries(m) == 65536,
		 "ringbuf");
	struct gx_bpf_map *ro = gx_bpf_object__find_map(obj, ".rodata");
	size_t sz = 0;
	const void *iv = ro ? gx_bpf_map__initial_value(ro, &sz) : NULL;
	uint32_t knob = 0;
	if (iv && sz >= 4)
		memcpy(&knob, iv, 4);
	GX_CHECK(ro && (gx_bpf_map__gx_flags(ro) & GX_BPF_MAP_F_RDONLY) && knob == 3,
		 ".rodata is read-only and holds knob = 3");
	struct gx_bpf_map *data = gx_bpf_object__find_map(obj, ".data");
	uint64_t seeded = 0;
	iv = data ? gx_bpf_map__initial_value(data, &sz) : NULL;
	if (iv && sz == 8)
		memcpy(&seeded, iv, 8);
	GX_CHECK(seeded == 42 && !(gx_bpf_map__gx_flags(data) & GX_BPF_MAP_F_RDONLY), ".data holds seeded = 42");
	struct gx_bpf_map *bss = gx_bpf_object__find_map(obj, ".bss");
	GX_CHECK(bss && (gx_bpf_map__gx_flags(bss) & GX_BPF_MAP_F_INTERNAL), ".bss is a global data map");
	uint32_t nk = 7;
	GX_CHECK(gx_bpf_map__set_initial_value(ro, &nk, 4) == -EINVAL, "set_initial_value wants the full size");
	GX_CHECK(gx_bpf_map__set_initial_value(gx_bpf_object__find_map(obj, "counts"), &nk, 4) == -EINVAL,
		 "set_initial_value refuses a non-global map");

	struct gx_bpf_prog *p = gx_bpf_object__find_prog(obj, "on_access");
	GX_CHECK(p && gx_bpf_prog__hook(p) == GX_BPF_HOOK_MEM_ACCESS && gx_bpf_prog__gdev_hook(p) == GDEV_HOOK_MEM &&
			 !strcmp(gx_bpf_prog__attach_target(p), ""),
		 "on_access: memory hook");
	int n_map = 0, n_val = 0, n_call = 0, call_ok = 1;
	const struct bpf_insn *in = p ? gx_bpf_prog__insns(p) : NULL;
	size_t cnt = p ? gx_bpf_prog__insn_cnt(p) : 0;
	for (size_t i = 0; in && i < cnt; i++) {
		if (in[i].code == (BPF_LD | BPF_IMM | BPF_DW)) {
			if (in[i].src_reg == BPF_PSEUDO_MAP_IDX &&
			    !strcmp(gx_bpf_map__name(gx_bpf_object__map_by_idx(obj, (size_t)in[i].imm)), "counts"))
				n_map++;
			if (in[i].src_reg == BPF_PSEUDO_MAP_IDX_VALUE)
				n_val++;
			i++;
		} else if (in[i].code == (BPF_JMP | BPF_CALL) && in[i].src_reg == BPF_PSEUDO_CALL) {
			n_call++;
			int64_t t = (int64_t)i + in[i].imm + 1;
			if (t <= (int64_t)i || t >= (int64_t)cnt)
				call_ok = 0;
		}
	}
	GX_CHECK(n_map == 1, "map reference relocated to BPF_PSEUDO_MAP_IDX of 'counts'");
	GX_CHECK(n_val >= 3, "global data references relocated to BPF_PSEUDO_MAP_IDX_VALUE (%d)", n_val);
	GX_CHECK(n_call == 1 && call_ok, "subprogram appended and the call points inside the program");
	p = gx_bpf_object__find_prog(obj, "on_entry");
	GX_CHECK(p && gx_bpf_prog__hook(p) == GX_BPF_HOOK_PROBE && !strcmp(gx_bpf_prog__attach_target(p), "vec_add*") &&
			 !strcmp(gx_bpf_prog__section_name(p), "gdev/probe/vec_add*"),
		 "on_entry: probe with its kernel glob");
	p = gx_bpf_object__find_prog(obj, "on_exit_");
	GX_CHECK(p && gx_bpf_prog__hook(p) == GX_BPF_HOOK_RETPROBE && gx_bpf_prog__gdev_hook(p) == GDEV_HOOK_EXIT,
		 "on_exit_: retprobe");
	p = gx_bpf_object__find_prog(obj, "steal");
	GX_CHECK(p && gx_bpf_prog__hook(p) == GX_BPF_HOOK_SCHED_STEAL, "steal: scheduler hook");
	GX_CHECK(gx_bpf_object__find_prog(obj, "scale") == NULL && errno == ENOENT,
		 "static subprogram is not a program");
	GX_CHECK(gx_bpf_object__verify(obj, &(struct gx_bpf_verify_opts){ .sz = sizeof(struct gx_bpf_verify_opts),
									     .quiet = true }) == 0,
		 "good object verifies");
	p = gx_bpf_object__find_prog(obj, "on_access");
	GX_CHECK(gx_bpf_prog__verified(p) && gx_bpf_prog__stack_depth(p) == 8, "stack depth is reported (%u)",
		 gx_bpf_prog__stack_depth(p));
	char line[128];
	GX_CHECK(gx_bpf_insn_str(gx_bpf_prog__insns(p), gx_bpf_prog__insn_cnt(p), 0, line, sizeof(line)) == 1 &&
			 line[0],
		 "disassembler: \"%s\"", line);
	gx_bpf_object__close(obj);
}

static struct gx_bpf_sec_def host_def = {
	.prefix = "struct_ops/gpu_mem", .hook = GX_BPF_HOOK_HOST_FIRST, .ctx_size = 64, .ret_min = 0, .ret_max = 1,
	.budget = { 1000, 10, 10000 },
};

/* Every program gets its own copy of the subprograms it calls, so the
 * object's flattened size is bounded: max(2^20, 4 x its code). */
static void check_flat_budget(void)
{
	size_t len;
	uint8_t *b = bpf_bomb_object(100, 10000, &len);
	struct gx_bpf_object *obj = gx_bpf_object__open_mem(b, len, NULL);
	GX_CHECK(obj && gx_bpf_object__prog_cnt(obj) == 100 &&
			 gx_bpf_prog__insn_cnt(gx_bpf_object__prog_by_idx(obj, 99)) == 10002,
		 "100 programs calling one 10000-insn subprogram: 1000200 insns flattened, under 2^20");
	gx_bpf_object__close(obj);
	free(b);
	b = bpf_bomb_object(105, 10000, &len);
	GX_CHECK(fails_with(b, len, "program 'p104' brings the object past 1048576 instructions") && errno == E2BIG,
		 "105 of them go past 2^20: -E2BIG naming the program");
	free(b);
	/* issue 20's bomb: an 8 MB object, 500 programs over 1M instructions */
	b = bpf_bomb_object(500, 1048000, &len);
	struct rusage r0, r1;
	getrusage(RUSAGE_SELF, &r0);
	bool refused = fails_with(b, len, "program 'p4' brings the object past 4196000 instructions");
	getrusage(RUSAGE_SELF, &r1);
	GX_CHECK(refused && errno == E2BIG, "a %zu-byte object of 500 programs over a 1M-insn subprogram: -E2BIG at p4",
		 len);
	GX_CHECK(r1.ru_maxrss - r0.ru_maxrss < 128 * 1024, "... having used at most 4x its code (peak RSS +%ld KiB)",
		 r1.ru_maxrss - r0.ru_maxrss);
	free(b);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		printf("not ok - usage: test_bpf_loader DIR\n");
		return 1;
	}
	dir = argv[1];
	gx_set_print(capture);
	size_t len = 0;
	char *good = load("good.bpf.o", &len);
	GX_CHECK(good != NULL, "read good.bpf.o");
	if (!good)
		return gx_test_done();
	check_good(good, len);

	static const char *bad_msgs[] = {
		NULL,
		"key_size disagrees with key",
		"unknown attribute 'frobnicate'",
		"max_entries is 0",
		"over the limit",
		"must be a power of 2",
		"array key size must be 4",
		"unsupported map type 9",
		"no type",
		"value size 2097152 out of range",
		"externs are not supported",
		"unknown program section",
		"GDEV_F_RECORDS is for arrays",
		"a record table of 1048576 x 32 bytes is over 16 MiB",
	};
	for (int v = 1; v < (int)GX_ARRAY_SIZE(bad_msgs); v++) {
		char name[64];
		size_t bl = 0;
		snprintf(name, sizeof(name), "bad-%d.bpf.o", v);
		char *b = load(name, &bl);
		GX_CHECK(b && fails_with(b, bl, bad_msgs[v]), "%s fails: %s", name, bad_msgs[v]);
		free(b);
	}

	check_flat_budget();
	GX_CHECK(fails_with("", 0, "not an ELF file"), "empty input");
	GX_CHECK(fails_with("hello world, not an ELF object at all, sorry!!!!!!!!!!!!!!!!!!!!!", 64, "not an ELF file"),
		 "text input");
	GX_CHECK(gx_bpf_object__open_file("/nonexistent/x.bpf.o", NULL) == NULL && errno == ENOENT,
		 "missing file gives ENOENT");
	GX_CHECK(gx_bpf_object__open_mem(good, len, &(struct gx_bpf_open_opts){ .sz = 1 }) == NULL && errno == EINVAL,
		 "options with a bad size are refused");

	/* truncations: every length must fail cleanly */
	int trunc_ok = 1;
	for (size_t l = 0; l < len; l += (l < 256 ? 1 : 61))
		if (!fails_with(good, l, NULL))
			trunc_ok = 0;
	GX_CHECK(trunc_ok, "every truncation of the object fails cleanly");

	char *c = malloc(len);
	memcpy(c, good, len);
	((Elf64_Ehdr *)c)->e_machine = EM_X86_64;
	GX_CHECK(fails_with(c, len, "not a BPF object"), "x86-64 object refused");
	memcpy(c, good, len);
	c[EI_CLASS] = ELFCLASS32;
	GX_CHECK(fails_with(c, len, NULL), "32-bit class refused");
	memcpy(c, good, len);
	((Elf64_Ehdr *)c)->e_type = ET_EXEC;
	GX_CHECK(fails_with(c, len, "not a relocatable object"), "executable refused");
	memcpy(c, good, len);
	((Elf64_Ehdr *)c)->e_shnum = 0xffff;
	GX_CHECK(fails_with(c, len, NULL), "huge section count refused");
	memcpy(c, good, len);
	((Elf64_Ehdr *)c)->e_shoff = (Elf64_Off)len * 4;
	GX_CHECK(fails_with(c, len, NULL), "section headers past the end refused");

	memcpy(c, good, len);
	int s = find_sec(c, ".symtab");
	shdr(c, s)->sh_size = (Elf64_Xword)1 << 40;
	GX_CHECK(fails_with(c, len, "extends past the end"), "huge symbol table refused");
	memcpy(c, good, len);
	shdr(c, s)->sh_entsize = 7;
	GX_CHECK(fails_with(c, len, "bad symbol table"), "bad symbol entry size refused");

	memcpy(c, good, len);
	int r = find_sec(c, ".relgdev/mem/access");
	GX_CHECK(r > 0, "object has relocations for gdev/mem/access");
	if (r > 0) {
		memcpy(c, good, len);
		Elf64_Rel *rel = (Elf64_Rel *)(c + shdr(c, r)->sh_offset);
		rel->r_offset = 0x100000;
		GX_CHECK(fails_with(c, len, "bad offset"), "relocation offset out of range");
		memcpy(c, good, len);
		rel->r_offset = 3;
		GX_CHECK(fails_with(c, len, "bad offset"), "misaligned relocation offset");
		memcpy(c, good, len);
		rel->r_info = ELF64_R_INFO(0xffffff, ELF64_R_TYPE(rel->r_info));
		GX_CHECK(fails_with(c, len, "bad symbol index"), "relocation symbol index out of range");
		memcpy(c, good, len);
		rel->r_info = ELF64_R_INFO(ELF64_R_SYM(rel->r_info), 77);
		GX_CHECK(fails_with(c, len, "relocation of type 77"), "unknown relocation type");
		memcpy(c, good, len);
		rel->r_offset = 0; /* onto the first insn, which is not ld_imm64 */
		GX_CHECK(fails_with(c, len, "not ld_imm64"), "relocation on the wrong instruction");
		memcpy(c, good, len);
		shdr(c, r)->sh_info = 0xffff;
		GX_CHECK(fails_with(c, len, "bad target section"), "relocation section with a bad target");
	}
	memcpy(c, good, len);
	int btf = find_sec(c, ".BTF");
	{
		Elf64_Ehdr *eh = (Elf64_Ehdr *)c;
		char *nm = c + shdr(c, eh->e_shstrndx)->sh_offset + shdr(c, btf)->sh_name;
		nm[1] = 'X'; /* ".BTF" -> ".XTF" */
	}
	GX_CHECK(fails_with(c, len, "need BTF"), "maps without BTF refused");
	memcpy(c, good, len);
	memset(c + shdr(c, btf)->sh_offset, 0xa5, 24);
	GX_CHECK(fails_with(c, len, "invalid BTF"), "corrupt BTF refused");

	/* random corruption: never a crash; fixed seed keeps it reproducible */
	unsigned seed = 12345;
	int opened = 0;
	for (int i = 0; i < 3000; i++) {
		memcpy(c, good, len);
		for (int k = 0; k < 4; k++) {
			seed = seed * 1103515245u + 12345u;
			size_t pos = (seed >> 8) % len;
			seed = seed * 1103515245u + 12345u;
			c[pos] = (char)(seed >> 16);
		}
		struct gx_bpf_object *obj = gx_bpf_object__open_mem(c, len, NULL);
		if (obj) {
			opened++;
			gx_bpf_object__verify(obj, &(struct gx_bpf_verify_opts){ .sz = sizeof(struct gx_bpf_verify_opts),
										   .quiet = true });
			gx_bpf_object__close(obj);
		}
	}
	GX_CHECK(1, "3000 randomly corrupted objects: no crash (%d still opened)", opened);
	free(c);

	/* an extra section rule, as a host-policy part would register */
	GX_CHECK(gx_bpf_register_section(&host_def) == 0, "register a host section rule");
	GX_CHECK(gx_bpf_find_section("struct_ops/gpu_mem") == &host_def &&
			 gx_bpf_find_section("gdev/probe/") == NULL && gx_bpf_find_section("gdev/probe/x") != NULL,
		 "section lookup: registered, suffix required, built-in");
	const struct gx_bpf_sec_def *bp = gx_bpf_find_section("gdev/blockprobe/*");
	GX_CHECK(bp && bp->hook == GX_BPF_HOOK_BLOCKPROBE && bp->gdev_hook == GDEV_HOOK_BLOCK &&
			 !strcmp(gx_bpf_hook_str(GX_BPF_HOOK_BLOCKPROBE), "blockprobe") &&
			 gx_bpf_find_section("gdev/blockprobe/") == NULL,
		 "gdev/blockprobe/GLOB: the block hook, its name, suffix required");
	GX_CHECK(gx_bpf_register_section(&(struct gx_bpf_sec_def){ .prefix = "" }) == -EINVAL,
		 "an empty rule is refused");
	free(good);
	return gx_test_done();
}
