/* test_image — gx_image on synthetic images: every layout feature the nvcc
 * tests cannot force (several containers, wrappers of both versions with
 * in-process pointers, LZ4 and zstd entries, names and options), the PTX
 * choice, and malformed inputs (every truncation, bogus sizes and offsets,
 * corrupt payloads) that must fail with a clear error and never crash. Also
 * built with ASan+UBSan. With FILE arguments it parses each file (host ELF or
 * image) and decompresses every entry: the nvcc test runs it that way. */
#include <errno.h>
#include <fcntl.h>
#include <lz4.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "common/gx_util.h"
#include "image/gx_image.h"
#include "tests/gx_test.h"

static const char ptx80[] = "//\n// test\n//\n.version 8.0\n.target sm_80\n.address_size 64\n"
			    ".visible .entry k() { ret; }\n";
static const char ptx90[] = "\n\n.version 9.0\n.target sm_90\n.address_size 64\n"
			    ".visible .entry k90() { ret; }\n// padding padding padding padding\n"
			    "// padding padding padding padding padding padding padding padding\n";

/* A growable byte image. */
struct img {
	uint8_t *p;
	size_t len;
};
static void put(struct img *b, const void *d, size_t n)
{
	b->p = realloc(b->p, b->len + n);
	memcpy(b->p + b->len, d, n);
	b->len += n;
}
static void put16(struct img *b, uint16_t v) { put(b, &v, 2); }
static void put32(struct img *b, uint32_t v) { put(b, &v, 4); }
static void put64(struct img *b, uint64_t v) { put(b, &v, 8); }
static void pad8(struct img *b)
{
	static const uint8_t z[8];
	put(b, z, (8 - b->len % 8) % 8);
}

struct ent {
	uint16_t kind;
	unsigned sm;
	uint64_t flags;     /* compression chosen from flags */
	const void *data;
	size_t len;         /* raw bytes (PTX: with NUL) */
	const char *name;
	const char *options;
};

/* One entry: header (64 bytes + name + options descriptor) and payload. */
static void put_entry(struct img *b, const struct ent *e)
{
	uint8_t *comp = NULL;
	size_t csize = 0;
	if (e->flags & GX_FATBIN_F_ZSTD) {
		comp = malloc(ZSTD_compressBound(e->len));
		csize = ZSTD_compress(comp, ZSTD_compressBound(e->len), e->data, e->len, 3);
	} else if (e->flags & GX_FATBIN_F_LZ4) {
		comp = malloc(LZ4_compressBound((int)e->len));
		csize = (size_t)LZ4_compress_default(e->data, (char *)comp, (int)e->len,
						     LZ4_compressBound((int)e->len));
	}
	size_t nlen = e->name ? strlen(e->name) : 0, olen = e->options ? strlen(e->options) : 0;
	size_t nsz = (nlen + 7) / 8 * 8, osz = (olen + 7) / 8 * 8;
	uint32_t hsize = 64 + (uint32_t)nsz + 8 + (uint32_t)osz;
	const void *pay = comp ? comp : e->data;
	size_t plen = comp ? csize : e->len, ppad = (plen + 7) / 8 * 8;
	put16(b, e->kind);
	put16(b, 0x0101);
	put32(b, hsize);
	put64(b, ppad);
	put32(b, comp ? (uint32_t)csize : 0);
	put32(b, 64 + (uint32_t)nsz); /* options descriptor offset */
	put16(b, 0);
	put16(b, e->kind == 1 ? 9 : 1);
	put32(b, e->sm);
	put32(b, nlen ? 64 : 0);
	put32(b, (uint32_t)nlen);
	put64(b, e->flags);
	put64(b, 0);
	put64(b, comp ? e->len : 0);
	size_t at = b->len;
	put(b, e->name ? e->name : "", nlen);
	while (b->len < at + nsz)
		put(b, "", 1);
	put32(b, 64 + (uint32_t)nsz + 8);
	put32(b, (uint32_t)olen);
	at = b->len;
	put(b, e->options ? e->options : "", olen);
	while (b->len < at + osz)
		put(b, "", 1);
	put(b, pay, plen);
	pad8(b);
	free(comp);
}

static void put_container(struct img *b, const struct ent *es, size_t n)
{
	size_t start = b->len;
	put32(b, 0xBA55ED50);
	put16(b, 1);
	put16(b, 16);
	put64(b, 0);
	for (size_t i = 0; i < n; i++)
		put_entry(b, &es[i]);
	uint64_t fat = b->len - start - 16;
	memcpy(b->p + start + 8, &fat, 8);
}

/* A minimal cubin: ELF64 header, one section (.shstrtab) and its table. */
static size_t make_cubin(uint8_t *out, unsigned sm, uint16_t machine)
{
	memset(out, 0, 256);
	memcpy(out, "\177ELF\2\1\1\x41\x08", 9);
	uint16_t v16;
	uint32_t v32;
	uint64_t v64;
	v16 = 2, memcpy(out + 0x10, &v16, 2);
	v16 = machine, memcpy(out + 0x12, &v16, 2);
	v32 = 1, memcpy(out + 0x14, &v32, 4);
	v32 = 0x6000004 | sm << 8, memcpy(out + 0x30, &v32, 4);
	v16 = 64, memcpy(out + 0x34, &v16, 2);
	v16 = 56, memcpy(out + 0x36, &v16, 2);
	v16 = 64, memcpy(out + 0x3a, &v16, 2);
	v16 = 2, memcpy(out + 0x3c, &v16, 2);
	v16 = 1, memcpy(out + 0x3e, &v16, 2);
	memcpy(out + 64, "\0.shstrtab\0", 11); /* 11 bytes at 64 */
	v64 = 80, memcpy(out + 0x28, &v64, 8);  /* section table at 80 */
	uint8_t *sh1 = out + 80 + 64;
	v32 = 1, memcpy(sh1, &v32, 4);          /* name */
	v32 = 3, memcpy(sh1 + 4, &v32, 4);      /* SHT_STRTAB */
	v64 = 64, memcpy(sh1 + 0x18, &v64, 8);
	v64 = 11, memcpy(sh1 + 0x20, &v64, 8);
	return 80 + 2 * 64;
}

static int parse(const void *p, size_t n, struct gx_image *im, char *err)
{
	return gx_image_parse(p, n, im, err, 256);
}

/* One entry decompressed on a budget of its own (the budget tests share one). */
static int entry_data(const struct gx_image_entry *e, void **d, size_t *n)
{
	size_t budget = GX_IMAGE_BUDGET_MIN;
	return gx_image_entry_data(e, &budget, d, n);
}

static bool entry_is(const struct gx_image_entry *e, const void *want, size_t len)
{
	void *d;
	size_t n;
	if (entry_data(e, &d, &n))
		return false;
	bool ok = n == len && !memcmp(d, want, len) && (e->kind != GX_ENTRY_PTX || !((char *)d)[n]);
	free(d);
	return ok;
}

static void test_fatbin(void)
{
	uint8_t cub[256];
	size_t cublen = make_cubin(cub, 90, 190);
	struct ent es[] = {
		{ GX_ENTRY_ELF, 90, 0x11, cub, cublen, NULL, NULL },
		{ GX_ENTRY_PTX, 80, 0x11 | GX_FATBIN_F_ZSTD, ptx80, sizeof(ptx80), "k.cu", "-O3 -lineinfo" },
		{ GX_ENTRY_PTX, 90, 0x11 | GX_FATBIN_F_LZ4, ptx90, sizeof(ptx90), NULL, NULL },
		{ GX_ENTRY_PTX, 90, 0x11, ptx90, sizeof(ptx90), NULL, NULL },
	};
	struct img b = { 0 };
	put_container(&b, es, 4);
	size_t one = b.len;
	put_container(&b, es + 2, 1); /* a second container, right after */

	struct gx_image im;
	char err[256];
	int ret = parse(b.p, b.len, &im, err);
	GX_CHECK(ret == 0, "synthetic fatbin parses (%s)", err);
	if (ret)
		return;
	GX_CHECK(im.kind == GX_IMAGE_FATBIN && im.nr_entries == 5 && im.nr_containers == 2 &&
		 im.extent == b.len, "two containers back to back: 5 entries, extent %zu", im.extent);
	const struct gx_image_entry *e = im.entries;
	GX_CHECK(e[0].kind == GX_ENTRY_ELF && e[0].sm == 90 && e[0].comp == GX_COMP_NONE &&
		 e[0].raw_size == cublen && e[0].size == (cublen + 7) / 8 * 8,
		 "uncompressed ELF entry: raw size from its own headers");
	GX_CHECK(entry_is(&e[0], cub, cublen), "ELF entry bytes");
	GX_CHECK(e[1].comp == GX_COMP_ZSTD && e[1].raw_size == sizeof(ptx80) && e[1].sm == 80 &&
		 e[1].ver_major == 9 && e[1].name && !strcmp(e[1].name, "k.cu") && e[1].options &&
		 !strcmp(e[1].options, "-O3 -lineinfo"), "zstd PTX entry: sizes, name, options");
	GX_CHECK(entry_is(&e[1], ptx80, sizeof(ptx80) - 1), "zstd PTX decompresses to the text");
	GX_CHECK(e[2].comp == GX_COMP_LZ4 && entry_is(&e[2], ptx90, sizeof(ptx90) - 1),
		 "LZ4 PTX decompresses to the text");
	GX_CHECK(e[3].comp == GX_COMP_NONE && e[3].raw_size == sizeof(ptx90) &&
		 entry_is(&e[3], ptx90, sizeof(ptx90) - 1), "plain PTX entry: text up to its NUL");
	GX_CHECK(e[4].container == 1 && e[4].offset == 16, "second container's entry numbered 1");
	gx_image_free(&im);

	ret = gx_image_parse(b.p, SIZE_MAX, &im, err, sizeof(err));
	GX_CHECK(ret == 0 && im.extent == one && im.nr_entries == 4,
		 "pointer-only fatbin: first container, extent %zu from its header", one);
	gx_image_free(&im);

	/* Every truncation fails cleanly (or parses the first container only). */
	int bad = 0;
	for (size_t n = 0; n < one; n++) {
		err[0] = 0;
		if (!parse(b.p, n, &im, err) || !err[0])
			bad++;
		gx_image_free(&im);
	}
	GX_CHECK(bad == 0, "all %zu truncations of a container are errors with a reason", one);
	err[0] = 0;
	ret = parse(b.p, one + 20, &im, err);
	GX_CHECK(ret == -EBADMSG && strstr(err, "fatbin container 1 at offset"),
		 "a truncated second container is an error: %s", err);
	gx_image_free(&im);

	/* Corruptions, each with its stable message. */
	struct {
		size_t off;
		uint64_t val;
		int width;
		const char *msg;
	} cases[] = {
		{ 0, 0xdeadbeef, 4, "unrecognised image" },
		{ 6, 4, 2, "header size 4 out of range" },
		{ 8, 1ull << 40, 8, "over the" },
		{ 8, one, 8, "exceeds the" },
		{ 16 + 4, 8, 4, "has header size 8" },
		{ 16 + 4, 1u << 30, 4, "has header size" },
		{ 16 + 8, 1ull << 62, 8, "beyond the container" },
	};
	for (size_t i = 0; i < GX_ARRAY_SIZE(cases); i++) {
		uint8_t *c = malloc(one);
		memcpy(c, b.p, one);
		memcpy(c + cases[i].off, &cases[i].val, cases[i].width);
		err[0] = 0;
		ret = parse(c, one, &im, err);
		GX_CHECK(ret < 0 && strstr(err, cases[i].msg), "corrupt field at %zu: '%s' (got '%s')",
			 cases[i].off, cases[i].msg, err);
		gx_image_free(&im);
		free(c);
	}

	/* Corrupt compressed payloads and lying sizes: parse ok, data -EBADMSG. */
	size_t e1 = 16 + im.extent; /* placeholder, recomputed below */
	ret = parse(b.p, one, &im, err);
	e1 = (size_t)((const uint8_t *)im.entries[1].data - b.p);
	size_t e2 = (size_t)((const uint8_t *)im.entries[2].data - b.p);
	size_t h1 = 16 + im.entries[1].offset - 16, h2 = im.entries[2].offset;
	gx_image_free(&im);
	for (int which = 0; which < 2; which++) {
		size_t d = which ? e2 : e1, h = which ? h2 : h1;
		const char *what = which ? "LZ4" : "zstd";
		uint8_t *c = malloc(one);
		void *out;
		size_t n;
		memcpy(c, b.p, one);
		/* zstd: damage the block headers; LZ4 (no checksum): turn the
		 * first tokens into runs longer than the output. */
		for (size_t k = which ? 0 : 4; k < 24; k++)
			c[d + k] = which ? 0xff : c[d + k] ^ 0x5a;
		ret = parse(c, one, &im, err);
		int dr = ret ? ret : entry_data(&im.entries[1 + which], &out, &n);
		if (!dr)
			free(out);
		GX_CHECK(dr == -EBADMSG, "corrupt %s payload: -EBADMSG", what);
		gx_image_free(&im);
		memcpy(c, b.p, one);
		uint64_t raw = (which ? sizeof(ptx90) : sizeof(ptx80)) + 1;
		memcpy(c + h + 0x38, &raw, 8);
		ret = parse(c, one, &im, err);
		GX_CHECK(ret == 0 && entry_data(&im.entries[1 + which], &out, &n) == -EBADMSG,
			 "%s raw size off by one: -EBADMSG", what);
		gx_image_free(&im);
		memcpy(c, b.p, one);
		uint32_t cs = 1u << 30;
		memcpy(c + h + 0x10, &cs, 4);
		err[0] = 0;
		ret = parse(c, one, &im, err);
		GX_CHECK(ret == -EBADMSG && strstr(err, "compressed size"), "%s compressed size beyond payload: %s",
			 what, err);
		gx_image_free(&im);
		memcpy(c, b.p, one);
		uint64_t huge = 1ull << 40;
		memcpy(c + h + 0x38, &huge, 8);
		ret = parse(c, one, &im, err);
		GX_CHECK(ret == -EBADMSG && strstr(err, "uncompressed size"), "%s absurd raw size refused", what);
		gx_image_free(&im);
		/* Name and options offsets pointing anywhere are ignored, not followed. */
		memcpy(c, b.p, one);
		uint32_t far = 0xfffffff0;
		memcpy(c + h + 0x20, &far, 4);
		memcpy(c + h + 0x14, &far, 4);
		ret = parse(c, one, &im, err);
		GX_CHECK(ret == 0 && !im.entries[1 + which].name && !im.entries[1 + which].options,
			 "%s bogus name/options offsets ignored", what);
		gx_image_free(&im);
		free(c);
	}
	free(b.p);
}

/* One budget for every entry of an image: entries that fit are decompressed
 * and charged, the first that does not is refused before any allocation and
 * leaves the budget as it was; the budget's size follows the input's. */
static void test_budget(void)
{
	size_t big = 1u << 20;
	char *text = malloc(big);
	for (size_t i = 0; i < big; i++)
		text[i] = (char)('a' + i % 23);
	text[big - 1] = 0;
	struct ent es[3];
	for (int i = 0; i < 3; i++)
		es[i] = (struct ent){ GX_ENTRY_PTX, 80 + i, 0x11 | (i == 1 ? GX_FATBIN_F_LZ4 : GX_FATBIN_F_ZSTD),
				      text, big, NULL, NULL };
	struct img b = { 0 };
	put_container(&b, es, 3);
	struct gx_image im;
	char err[256];
	int ret = parse(b.p, b.len, &im, err);
	size_t budget = 2 * big + big / 2, n0 = 0, n1 = 0, n2 = 0;
	void *d0 = NULL, *d1 = NULL, *d2 = NULL;
	int r0 = ret ? ret : gx_image_entry_data(&im.entries[0], &budget, &d0, &n0);
	int r1 = ret ? ret : gx_image_entry_data(&im.entries[1], &budget, &d1, &n1);
	size_t left = budget;
	int r2 = ret ? ret : gx_image_entry_data(&im.entries[2], &budget, &d2, &n2);
	GX_CHECK(!r0 && !r1 && n0 == big - 1 && n1 == big - 1 && left == big / 2,
		 "two 1 MiB entries (zstd, LZ4) charged to one 2.5 MiB budget: %zu left", left);
	GX_CHECK(r2 == -E2BIG && !d2 && budget == big / 2, "the third is refused with -E2BIG, nothing allocated");
	free(d0);
	free(d1);
	gx_image_free(&im);
	free(b.p);
	free(text);
	GX_CHECK(gx_image_budget(0) == GX_IMAGE_BUDGET_MIN && gx_image_budget(4u << 20) == GX_IMAGE_BUDGET_MIN &&
		 gx_image_budget(5u << 20) == (size_t)320 << 20 && gx_image_budget(SIZE_MAX / 2) == SIZE_MAX,
		 "budget: max(256 MiB, 64 x the input), saturating");
}

/* Wrappers with real in-process pointers (the shim's case), both versions. */
static void test_ltoir(void)
{
	static const char ir[] = "\xed\x43\x4e\x7f not really IR";
	struct ent es[] = {
		{ GX_ENTRY_LTOIR, 80, 0x11, ir, sizeof(ir), NULL, "-ftz=0" },
		{ GX_ENTRY_LTOIR, 80, 0x11 | GX_FATBIN_F_ZSTD | GX_FATBIN_F_ENCODED, ir, sizeof(ir), NULL, NULL },
		{ 5, 80, 0x11, ir, sizeof(ir), NULL, NULL }, /* unknown kind: skipped */
	};
	struct img b = { 0 };
	put_container(&b, es, 3);
	struct gx_image im;
	char err[256];
	void *d;
	size_t n;
	int ret = gx_image_parse(b.p, b.len, &im, err, sizeof(err));
	GX_CHECK(ret == 0 && im.nr_entries == 2 && im.entries[0].kind == GX_ENTRY_LTOIR &&
		 im.entries[0].options && !strcmp(im.entries[0].options, "-ftz=0"),
		 "LTO-IR entries listed with their options, unknown kinds skipped");
	d = NULL;
	GX_CHECK(ret == 0 && entry_data(&im.entries[0], &d, &n) == 0 &&
		 n == (sizeof(ir) + 7) / 8 * 8 && !memcmp(d, ir, sizeof(ir)),
		 "plain LTO-IR: the stored payload (padded: no length of its own)");
	free(d);
	GX_CHECK(ret == 0 && entry_data(&im.entries[1], &d, &n) == -ENOTSUP,
		 "encoded LTO-IR: -ENOTSUP, not garbage");
	GX_CHECK(ret == 0 && !gx_image_pick_ptx(&im, 80, NULL), "LTO-IR is never picked as PTX");
	gx_image_free(&im);
	free(b.p);
}

static void test_wrapper(void)
{
	struct ent main_es[] = { { GX_ENTRY_PTX, 90, 0x11 | GX_FATBIN_F_ZSTD, ptx90, sizeof(ptx90), NULL, NULL } };
	struct ent rel_es[] = { { GX_ENTRY_PTX, 80, 0x11, ptx80, sizeof(ptx80), NULL, "--compile-only" } };
	struct img fb = { 0 }, rel = { 0 };
	put_container(&fb, main_es, 1);
	put_container(&rel, rel_es, 1);
	const void *list[] = { rel.p, rel.p, NULL };
	struct {
		uint32_t magic, version;
		const void *data;
		const void *fatbins;
	} w = { 0x466243B1, 1, fb.p, NULL };
	struct gx_image im;
	char err[256];
	int ret = gx_image_parse(&w, SIZE_MAX, &im, err, sizeof(err));
	GX_CHECK(ret == 0 && im.kind == GX_IMAGE_WRAPPER && im.wrapper_version == 1 && im.nr_entries == 1 &&
		 im.fatbin == fb.p && im.fatbin_extent == fb.len && im.extent == 24,
		 "wrapper v1 (in-process pointer): one fatbin, extent %zu", im.fatbin_extent);
	gx_image_free(&im);
	w.version = 2;
	w.fatbins = list;
	ret = gx_image_parse(&w, SIZE_MAX, &im, err, sizeof(err));
	GX_CHECK(ret == 0 && im.wrapper_version == 2 && im.nr_entries == 3 && !im.entries[0].prelinked &&
		 im.entries[1].prelinked && im.entries[2].container == 2 && im.entries[1].options &&
		 !strcmp(im.entries[1].options, "--compile-only"),
		 "wrapper v2: linked fatbin + 2 prelinked fatbins (%s)", err);
	int sass = 1;
	const struct gx_image_entry *p = gx_image_pick_ptx(&im, 86, &sass);
	GX_CHECK(!p && !sass, "prelinked (relocatable) PTX is never picked to load alone");
	gx_image_free(&im);
	struct gx_image_opts o = { .sz = sizeof(o), .no_prelinked = 1 };
	ret = gx_image_parse_opts(&w, SIZE_MAX, &o, &im, err, sizeof(err));
	GX_CHECK(ret == 0 && im.nr_entries == 1, "no_prelinked skips the list");
	gx_image_free(&im);
	w.version = 3;
	ret = gx_image_parse(&w, SIZE_MAX, &im, err, sizeof(err));
	GX_CHECK(ret == -EINVAL && strstr(err, "version 3 not supported"), "wrapper v3 refused: %s", err);
	w.version = 1;
	w.data = NULL;
	ret = gx_image_parse(&w, SIZE_MAX, &im, err, sizeof(err));
	GX_CHECK(ret == -EINVAL && strstr(err, "points at no fatbin"), "wrapper with NULL data refused");
	w.data = ptx80;
	ret = gx_image_parse(&w, SIZE_MAX, &im, err, sizeof(err));
	GX_CHECK(ret == -EINVAL && strstr(err, "is not a fatbin container"), "wrapper at non-fatbin refused");
	ret = gx_image_parse(&w, 20, &im, err, sizeof(err));
	GX_CHECK(ret == -EINVAL && strstr(err, "wrapper truncated"), "truncated wrapper refused");
	struct gx_image_opts bad = { .sz = sizeof(bad) + 8 };
	uint8_t big[sizeof(bad) + 8] = { 0 };
	memcpy(big, &bad, sizeof(bad));
	big[sizeof(bad) + 3] = 1;
	ret = gx_image_parse_opts(fb.p, fb.len, (void *)big, &im, err, sizeof(err));
	GX_CHECK(ret == -EINVAL, "unknown non-zero option bytes refused");
	free(fb.p);
	free(rel.p);
}

static void test_bare(void)
{
	struct gx_image im;
	char err[256];
	int ret = gx_image_parse(ptx90, SIZE_MAX, &im, err, sizeof(err));
	GX_CHECK(ret == 0 && im.kind == GX_IMAGE_PTX && im.extent == sizeof(ptx90) &&
		 im.entries[0].sm == 90 && im.entries[0].ver_major == 9, "bare PTX (pointer only)");
	gx_image_free(&im);
	ret = gx_image_parse(ptx80, strlen(ptx80), &im, err, sizeof(err));
	GX_CHECK(ret == 0 && im.extent == strlen(ptx80) && im.entries[0].sm == 80 &&
		 entry_is(&im.entries[0], ptx80, strlen(ptx80)), "PTX file without NUL (size known)");
	gx_image_free(&im);
	const char *a = "/* c */ .version 8.7\n.target sm_90a\n";
	ret = gx_image_parse(a, SIZE_MAX, &im, err, sizeof(err));
	GX_CHECK(ret == 0 && im.entries[0].sm == 90 && im.entries[0].arch_specific &&
		 im.entries[0].ver_minor == 7, "PTX .target sm_90a after a block comment");
	gx_image_free(&im);

	uint8_t cub[256];
	size_t n = make_cubin(cub, 100, 190);
	ret = gx_image_parse(cub, SIZE_MAX, &im, err, sizeof(err));
	GX_CHECK(ret == 0 && im.kind == GX_IMAGE_ELF && im.extent == n && im.entries[0].sm == 100,
		 "bare cubin (pointer only): extent %zu from section table, sm_100 (%s)", im.extent, err);
	gx_image_free(&im);
	int bad = 0;
	for (size_t k = 0; k < n; k++) {
		err[0] = 0;
		if (!gx_image_parse(cub, k, &im, err, sizeof(err)) || !err[0])
			bad++;
		gx_image_free(&im);
	}
	GX_CHECK(bad == 0, "all truncations of a cubin are errors");
	n = make_cubin(cub, 90, 62);
	ret = gx_image_parse(cub, n, &im, err, sizeof(err));
	GX_CHECK(ret == -EINVAL && strstr(err, "not a CUDA cubin (e_machine 62"), "x86-64 ELF is not a cubin");
	n = make_cubin(cub, 90, 190);
	uint64_t far = 1ull << 40;
	memcpy(cub + 0x28, &far, 8);
	ret = gx_image_parse(cub, SIZE_MAX, &im, err, sizeof(err));
	GX_CHECK(ret == -EBADMSG && strstr(err, "outside the size limit"), "cubin section table at 1 TiB refused");
	ret = gx_image_parse("\x01\x02\x03\x04", 4, &im, err, sizeof(err));
	GX_CHECK(ret == -EINVAL && !strcmp(err, "unrecognised image: not a fatbin, fatbin wrapper, cubin or PTX (starts with 01 02 03 04)"),
		 "garbage: stable message");
	ret = gx_image_parse(NULL, 0, &im, err, sizeof(err));
	GX_CHECK(ret == -EINVAL && errno == EINVAL, "NULL image: -EINVAL and errno");
}

static void test_pick(void)
{
	struct gx_image_entry es[] = {
		{ .kind = GX_ENTRY_PTX, .sm = 80 },
		{ .kind = GX_ENTRY_PTX, .sm = 90 },
		{ .kind = GX_ENTRY_PTX, .sm = 90, .arch_specific = 1 },
		{ .kind = GX_ENTRY_PTX, .sm = 100, .family_specific = 1 },
		{ .kind = GX_ENTRY_ELF, .sm = 90 },
		{ .kind = GX_ENTRY_ELF, .sm = 80 },
	};
	struct gx_image im = { .kind = GX_IMAGE_FATBIN, .entries = es, .nr_entries = GX_ARRAY_SIZE(es) };
	int sass;
	GX_CHECK(gx_image_pick_ptx(&im, 90, &sass) == &es[2] && sass, "sm_90: compute_90a PTX, SASS present");
	GX_CHECK(gx_image_pick_ptx(&im, 89, &sass) == &es[0] && sass, "sm_89: compute_80 PTX; sm_80 SASS runs");
	GX_CHECK(gx_image_pick_ptx(&im, 103, &sass) == &es[3] && !sass, "sm_103: compute_100f PTX, no SASS");
	GX_CHECK(gx_image_pick_ptx(&im, 120, &sass) == &es[1] && !sass, "sm_120: compute_90 (100f is another family)");
	GX_CHECK(gx_image_pick_ptx(&im, 75, &sass) == NULL && !sass, "sm_75: nothing fits");
	char buf[16];
	GX_CHECK(!strcmp(gx_image_arch_name(&es[3], buf, sizeof(buf)), "sm_100f") &&
		 !strcmp(gx_image_arch_name(&es[2], buf, sizeof(buf)), "sm_90a"), "arch names");
}

/* In .data: test_host_self plants a fatbin container here, in a copy of this file. */
static char hidden[512] = "GX-HIDDEN-CONTAINER-SLOT";

static void test_host_self(const char *self)
{
	int fd = open(self, O_RDONLY);
	struct stat st;
	fstat(fd, &st);
	void *m = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	struct gx_host_fatbin *fb;
	size_t n = 99;
	char err[256];
	int ret = gx_elf_host_fatbins(m, st.st_size, 0, &fb, &n, err, sizeof(err));
	GX_CHECK(ret == 0 && n == 0, "host ELF without device code: no containers");
	free(fb);
	int bad = 0;
	for (size_t k = 0; k < 4096; k += 7) {
		ret = gx_elf_host_fatbins(m, k, GX_HOSTELF_SCAN_DATA, &fb, &n, err, sizeof(err));
		if (ret == 0)
			free(fb);
		else if (!err[0])
			bad++;
	}
	GX_CHECK(bad == 0, "truncated host ELF: errors carry a reason");
	ret = gx_elf_host_fatbins("\177ELF\1\1\1", 7, 0, &fb, &n, err, sizeof(err));
	GX_CHECK(ret == -EINVAL && !strcmp(err, "not an ELF file"), "7 bytes: not an ELF file");
	ret = gx_elf_host_fatbins(m, st.st_size, 0x80, &fb, &n, err, sizeof(err));
	GX_CHECK(ret == -EINVAL, "unknown host scan flags refused");
	/* A container hidden in a data section is found only with SCAN_DATA. */
	static const char ptx[] = ".version 8.0\n.target sm_80\n";
	struct ent e = { GX_ENTRY_PTX, 80, 0x11, ptx, sizeof(ptx), NULL, NULL };
	struct img b = { 0 };
	put_container(&b, &e, 1);
	/* Write it into a copy of this file, inside `hidden` (in .data). */
	uint8_t *copy = malloc(st.st_size);
	memcpy(copy, m, st.st_size);
	uint8_t *slot = memmem(copy, st.st_size, hidden, strlen(hidden));
	slot = slot ? slot + (8 - (size_t)(slot - copy) % 8) % 8 + 8 : NULL;
	if (slot)
		memcpy(slot, b.p, b.len);
	ret = gx_elf_host_fatbins(copy, st.st_size, 0, &fb, &n, err, sizeof(err));
	GX_CHECK(ret == 0 && n == 0, "data sections not scanned by default");
	free(fb);
	ret = gx_elf_host_fatbins(copy, st.st_size, GX_HOSTELF_SCAN_DATA, &fb, &n, err, sizeof(err));
	GX_CHECK(slot && ret == 0 && n == 1 && fb[0].size == b.len && !memcmp(fb[0].data, b.p, b.len) &&
		 !strcmp(fb[0].section, ".data"), "SCAN_DATA finds a container in .data (%zu found)", n);
	free(fb);
	free(b.p);
	free(copy);
	munmap(m, st.st_size);
}

/* FILE mode: parse and decompress everything; one check per file. */
static int check_file(const char *path)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) || !st.st_size) {
		printf("not ok - %s: cannot open\n", path);
		return 1;
	}
	void *m = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	char err[256] = "";
	size_t nent = 0, nbytes = 0, nskip = 0;
	int ret;
	struct gx_host_fatbin one = { .data = m, .size = st.st_size }, *fb = &one;
	size_t nfb = 1;
	bool host = !memcmp(m, "\177ELF", 4) && ((uint8_t *)m)[18] != 190;
	if (host && (ret = gx_elf_host_fatbins(m, st.st_size, GX_HOSTELF_SCAN_DATA, &fb, &nfb, err, sizeof(err)))) {
		printf("# %s: %s\n", path, err);
		nfb = 0, fb = NULL;
	}
	int failed = 0;
	size_t budget = gx_image_budget((size_t)st.st_size); /* as gpuext fatbin extract */
	for (size_t i = 0; i < nfb; i++) {
		struct gx_image im;
		if (gx_image_parse(fb[i].data, fb[i].size, &im, err, sizeof(err))) {
			printf("# %s: container %zu: %s\n", path, i, err);
			failed++;
			continue;
		}
		for (size_t k = 0; k < im.nr_entries; k++) {
			void *d;
			size_t n;
			int r = gx_image_entry_data(&im.entries[k], &budget, &d, &n);
			if (r == 0) {
				nbytes += n;
				free(d);
			} else if (r == -ENOTSUP) {
				nskip++; /* encoded LTO-IR */
			} else {
				failed++;
			}
			nent++;
		}
		gx_image_free(&im);
	}
	if (fb != &one)
		free(fb);
	munmap(m, st.st_size);
	printf("%s - parse %s: %zu entries, %zu bytes decompressed, %zu encoded (skipped), %d errors\n",
	       failed ? "not ok" : "ok", path, nent, nbytes, nskip, failed);
	return failed ? 1 : 0;
}

static int print_reg(void *arg, const char *kernel, unsigned regs)
{
	(void)arg;
	printf("%s %u\n", kernel, regs);
	return 0;
}

static int count_reg(void *arg, const char *kernel, unsigned regs)
{
	(void)kernel, (void)regs;
	++*(int *)arg;
	return 0;
}

/* `regs CUBIN`: each kernel's registers (gx_image_cubin_regs), one line
 * each; then every truncation and a few byte flips of the file read again:
 * errors or fewer kernels, never a crash (ASan in test_image_asan). */
static int regs_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	static uint8_t buf[1 << 20], cp[1 << 20];
	size_t n = f ? fread(buf, 1, sizeof(buf), f) : 0;
	if (f)
		fclose(f);
	if (!n)
		return fprintf(stderr, "regs: cannot read %s\n", path), 2;
	int r = gx_image_cubin_regs(buf, n, print_reg, NULL);
	if (r)
		return fprintf(stderr, "regs: %s: %s\n", path, strerror(-r)), 1;
	int total = 0;
	for (size_t len = 0; len < n; len += len < 4096 ? 1 : 61) {
		uint8_t *t = malloc(len ? len : 1);
		memcpy(t, buf, len);
		int k = 0;
		gx_image_cubin_regs(t, len, count_reg, &k);
		total += k;
		free(t);
	}
	for (size_t i = 0; i < n; i += 7) {
		memcpy(cp, buf, n);
		cp[i] ^= 0x5a;
		int k = 0;
		gx_image_cubin_regs(cp, n, count_reg, &k);
	}
	fprintf(stderr, "regs: %d kernels read from truncations\n", total);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "regs"))
		return regs_file(argv[2]);
	if (argc > 1) {
		/* `-e FILE...`: files expected to fail (malformed): only no crash matters. */
		bool expect_bad = !strcmp(argv[1], "-e");
		int rc = 0;
		for (int i = expect_bad ? 2 : 1; i < argc; i++) {
			if (expect_bad) {
				printf("# ");
				fflush(stdout);
				check_file(argv[i]);
				printf("ok - malformed %s: no crash\n", argv[i]);
			} else {
				rc |= check_file(argv[i]);
			}
		}
		return rc;
	}
	test_fatbin();
	test_wrapper();
	test_ltoir();
	test_budget();
	test_bare();
	test_pick();
	test_host_self(argv[0]);
	return gx_test_done();
}
