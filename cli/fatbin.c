/* gpuext fatbin — list and extract the CUDA code inside a file.
 *
 * Accepts a host executable, shared library or object (fatbins found through
 * gx_hostelf), a fatbin, a cubin or PTX text; the file is mapped, not read,
 * so listing a 1 GiB library only touches its headers. What cuobjdump
 * -lelf -lptx / -xelf -xptx do, without the toolkit. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli_internal.h"
#include "common/gx_util.h"
#include "image/gx_image.h"

/* One entry of the listing, wherever it came from. */
struct item {
	const struct gx_image_entry *e;
	unsigned container;   /* global container index in the file */
	const char *section;  /* host ELF only */
	int relocatable;
	size_t data_offset;   /* file offset of the stored payload */
	int wrapper;          /* host ELF: version of the wrapper registering the container */
};

struct listing {
	const char *path;
	void *map;
	size_t len;
	const char *format;   /* "host-elf", "fatbin", "cubin", "ptx" */
	struct gx_image *ims;
	size_t nr_ims;
	struct item *items;
	size_t nr_items;
	unsigned nr_containers;
	int bad;              /* containers that failed to parse */
};

static void listing_free(struct listing *l)
{
	for (size_t i = 0; i < l->nr_ims; i++)
		gx_image_free(&l->ims[i]);
	free(l->ims);
	free(l->items);
	if (l->map && l->map != MAP_FAILED)
		munmap(l->map, l->len);
	memset(l, 0, sizeof(*l));
}

static int add_image(struct listing *l, const struct gx_image *im, unsigned cont_base,
		     const char *section, int reloc, int wrapper)
{
	struct item *n = realloc(l->items, (l->nr_items + im->nr_entries + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	l->items = n;
	for (size_t i = 0; i < im->nr_entries; i++)
		l->items[l->nr_items++] = (struct item){
			.e = &im->entries[i], .container = cont_base + im->entries[i].container,
			.section = section, .relocatable = reloc || im->entries[i].prelinked,
			.data_offset = (size_t)((const char *)im->entries[i].data - (const char *)l->map),
			.wrapper = wrapper,
		};
	return 0;
}

static int open_listing(const char *path, struct listing *l)
{
	memset(l, 0, sizeof(*l));
	l->path = path;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		p_err("cannot open '%s': %s", path, strerror(errno));
		return -errno;
	}
	struct stat st;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		p_err("'%s' is not a regular file", path);
		return -EINVAL;
	}
	if (!st.st_size) {
		close(fd);
		p_err("'%s' is empty", path);
		return -EINVAL;
	}
	l->len = (size_t)st.st_size;
	l->map = mmap(NULL, l->len, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (l->map == MAP_FAILED) {
		p_err("cannot map '%s': %s", path, strerror(errno));
		return -errno;
	}
	const unsigned char *p = l->map;
	char err[256];
	int ret;
	bool elf = l->len >= 20 && !memcmp(p, "\177ELF", 4);
	if (elf && !(p[18] == 190 && p[19] == 0)) {
		struct gx_host_fatbin *fb;
		size_t nfb;
		ret = gx_elf_host_fatbins(p, l->len, GX_HOSTELF_SCAN_DATA, &fb, &nfb, err, sizeof(err));
		if (ret) {
			p_err("%s: %s", path, err);
			return ret;
		}
		l->format = "host-elf";
		l->ims = calloc(nfb ? nfb : 1, sizeof(*l->ims));
		if (!l->ims) {
			free(fb);
			return -ENOMEM;
		}
		for (size_t i = 0; i < nfb; i++) {
			struct gx_image *im = &l->ims[l->nr_ims];
			ret = gx_image_parse(fb[i].data, fb[i].size, im, err, sizeof(err));
			if (ret) {
				p_err("%s: %s container at file offset 0x%llx: %s", path, fb[i].section,
				      (unsigned long long)fb[i].file_offset, err);
				l->bad++;
				continue;
			}
			l->nr_ims++;
			ret = add_image(l, im, (unsigned)i, fb[i].section, fb[i].prelinked,
					fb[i].wrapper_version);
			if (ret) {
				free(fb);
				return ret;
			}
		}
		l->nr_containers = (unsigned)nfb;
		free(fb);
		return 0;
	}
	if (l->len >= 4 && !memcmp(p, "\xb1\x43\x62\x46", 4)) {
		p_err("%s: a fatbin wrapper holds pointers that only mean something inside a running "
		      "process (try the executable or library that contains it)", path);
		return -EINVAL;
	}
	l->ims = calloc(1, sizeof(*l->ims));
	if (!l->ims)
		return -ENOMEM;
	ret = gx_image_parse(p, l->len, l->ims, err, sizeof(err));
	if (ret) {
		p_err("%s: %s", path, err);
		return ret;
	}
	l->nr_ims = 1;
	l->format = gx_image_kind_name(l->ims->kind);
	l->nr_containers = l->ims->kind == GX_IMAGE_FATBIN ? l->ims->nr_containers : 0;
	return add_image(l, l->ims, 0, NULL, 0, 0);
}

static void json_str(const char *s)
{
	if (!s) {
		fputs("null", stdout);
		return;
	}
	putchar('"');
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

static const char *kind_name(const struct gx_image_entry *e)
{
	return e->kind == GX_ENTRY_PTX ? "ptx" : e->kind == GX_ENTRY_ELF ? "elf" : "lto";
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: gpuext fatbin list FILE\n"
		"       gpuext fatbin extract [-o DIR] [--ptx|--elf] FILE\n\n"
		"FILE: a host executable, shared library or object, a fatbin, a cubin or PTX.\n"
		"list     one line per entry: container, kind, arch, compression, sizes, flags,\n"
		"         host section, code (linked, or reloc: -rdc code awaiting the device\n"
		"         link), name\n"
		"         (--json before 'fatbin' for JSON)\n"
		"extract  write each entry, decompressed, as DIR/NAME.sm_XX.ptx, .cubin or .ltoir\n"
		"         (NAME: the file name up to its first dot; an index is added when\n"
		"         two entries would share a name); a cubin built with -lineinfo also\n"
		"         gives NAME.sm_XX.lineinfo.ptx, the PTX it carries (--ptx: only those)\n");
}

static int do_list(int argc, char **argv)
{
	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		return 0;
	}
	if (argc != 2) {
		p_err("'fatbin list' takes one FILE (try 'gpuext fatbin help')");
		return 2;
	}
	struct listing l;
	int ret = open_listing(argv[1], &l);
	if (ret) {
		listing_free(&l);
		return 1;
	}
	char arch[32];
	if (gx_json) {
		printf("{\"file\":");
		json_str(l.path);
		printf(",\"format\":\"%s\",\"containers\":%u,\"entries\":[", l.format, l.nr_containers);
		for (size_t i = 0; i < l.nr_items; i++) {
			const struct item *it = &l.items[i];
			const struct gx_image_entry *e = it->e;
			printf("%s{\"index\":%zu,\"container\":%u,\"section\":", i ? "," : "", i, it->container);
			json_str(it->section);
			printf(",\"wrapper\":%d,\"kind\":\"%s\",\"arch\":\"%s\",\"sm\":%u,\"version\":\"%u.%u\","
			       "\"compression\":\"%s\",\"size\":%zu,\"raw_size\":%zu,\"data_offset\":%zu,"
			       "\"flags\":\"0x%llx\","
			       "\"relocatable\":%s,\"name\":",
			       it->wrapper, kind_name(e), gx_image_arch_name(e, arch, sizeof(arch)), e->sm, e->ver_major,
			       e->ver_minor, gx_image_comp_name(e->comp), e->size, e->raw_size, it->data_offset,
			       (unsigned long long)e->flags, it->relocatable ? "true" : "false");
			json_str(e->name);
			printf(",\"options\":");
			json_str(e->options);
			printf("}");
		}
		printf("]}\n");
	} else {
		printf("%s: %s", l.path, l.format);
		if (l.nr_containers)
			printf(", %u fatbin container%s", l.nr_containers, l.nr_containers == 1 ? "" : "s");
		printf(", %zu entr%s\n", l.nr_items, l.nr_items == 1 ? "y" : "ies");
		if (l.nr_items)
			printf("%5s %5s %-4s %-8s %-4s %10s %10s %-9s %-14s %-6s %s\n", "#", "CONT", "KIND",
			       "ARCH", "COMP", "STORED", "RAW", "FLAGS", "SECTION", "CODE", "NAME");
		/* SECTION: where the container lies in a host ELF ("-" for a bare
		 * fatbin/cubin/PTX file). CODE: "linked" (loadable as is: what
		 * cuobjdump lists from .nv_fatbin) or "reloc" (-rdc relocatable
		 * code awaiting the device link: __nv_relfatbin, or objects). */
		for (size_t i = 0; i < l.nr_items; i++) {
			const struct item *it = &l.items[i];
			const struct gx_image_entry *e = it->e;
			printf("%5zu %5u %-4s %-8s %-4s %10zu %10zu 0x%-7llx %-14s %-6s %s\n", i, it->container,
			       kind_name(e), gx_image_arch_name(e, arch, sizeof(arch)),
			       gx_image_comp_name(e->comp), e->size, e->raw_size,
			       (unsigned long long)e->flags, it->section ? it->section : "-",
			       it->relocatable ? "reloc" : "linked", e->name ? e->name : "-");
		}
		if (!l.nr_items && !l.bad && !strcmp(l.format, "host-elf"))
			fprintf(stderr, "gpuext: note: %s holds no CUDA device code (no .nv_fatbin section)\n",
				l.path);
	}
	ret = l.bad ? 1 : 0;
	listing_free(&l);
	return ret;
}

/* "libfoo.so.1" -> "libfoo" */
static void base_name(const char *path, char *buf, size_t len)
{
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	snprintf(buf, len, "%s", b);
	char *dot = strchr(buf, '.');
	if (dot && dot != buf)
		*dot = 0;
	if (!buf[0])
		snprintf(buf, len, "image");
}

/* mkdir -p */
static int make_dirs(const char *dir)
{
	char buf[4096];
	if (snprintf(buf, sizeof(buf), "%s", dir) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (char *s = buf + 1;; s++) {
		if (*s != '/' && *s)
			continue;
		char c = *s;
		*s = 0;
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -errno;
		if (!c)
			break;
		*s = c;
	}
	struct stat st;
	if (stat(buf, &st))
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

/* Write one extracted file and list it (text or JSON); 0 or 1. */
static int write_entry(const char *path, const void *data, size_t len, size_t *written)
{
	int r = gx_write_file(path, data, len);
	if (r) {
		p_err("cannot write '%s': %s", path, strerror(-r));
		return 1;
	}
	if (gx_json) {
		printf("%s", *written ? "," : "");
		json_str(path);
	} else {
		printf("%s\n", path);
	}
	(*written)++;
	return 0;
}

static int do_extract(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "ptx", no_argument, NULL, 'p' },
		{ "elf", no_argument, NULL, 'e' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *dir = ".";
	int want = 0;
	optind = 1;
	opterr = 0;
	for (int c; (c = getopt_long(argc, argv, "+o:h", opts, NULL)) != -1;) {
		switch (c) {
		case 'o': dir = optarg; break;
		case 'p': want = GX_ENTRY_PTX; break;
		case 'e': want = GX_ENTRY_ELF; break;
		case 'h': usage(stdout); return 0;
		default:
			p_err("'fatbin extract': bad option '%s' (try 'gpuext fatbin help')", argv[optind - 1]);
			return 2;
		}
	}
	if (optind != argc - 1) {
		p_err("'fatbin extract' takes one FILE (try 'gpuext fatbin help')");
		return 2;
	}
	int dret = make_dirs(dir);
	if (dret) {
		p_err("cannot create directory '%s': %s", dir, strerror(-dret));
		return 1;
	}
	struct listing l;
	if (open_listing(argv[optind], &l)) {
		listing_free(&l);
		return 1;
	}
	char base[256], arch[32], path[4096];
	base_name(argv[optind], base, sizeof(base));
	int ret = l.bad ? 1 : 0;
	size_t written = 0, budget = gx_image_budget(l.len), total = budget, over = 0;
	if (gx_json) {
		printf("{\"file\":");
		json_str(l.path);
		printf(",\"written\":[");
	}
	for (size_t i = 0; i < l.nr_items; i++) {
		const struct gx_image_entry *e = l.items[i].e;
		/* A cubin built with -lineinfo carries its PTX: --ptx extracts that too. */
		bool ptx_of_elf = want == GX_ENTRY_PTX && e->kind == GX_ENTRY_ELF;
		if (want && (int)e->kind != want && !ptx_of_elf)
			continue;
		const char *ext = e->kind == GX_ENTRY_PTX ? "ptx" : e->kind == GX_ENTRY_ELF ? "cubin" : "ltoir";
		if (e->flags & GX_FATBIN_F_ENCODED) {
			if (!gx_json)
				fprintf(stderr, "gpuext: note: %s: entry %zu (LTO-IR) is encoded for nvJitLink; not extracted\n",
					l.path, i);
			continue;
		}
		gx_image_arch_name(e, arch, sizeof(arch));
		/* Unique name unless another extracted entry shares kind and arch. */
		bool dup = false;
		for (size_t j = 0; j < l.nr_items && !dup; j++) {
			const struct gx_image_entry *o = l.items[j].e;
			dup = j != i && o->kind == e->kind && o->sm == e->sm &&
			      o->arch_specific == e->arch_specific && o->family_specific == e->family_specific;
		}
		char stem[3900];
		if (dup)
			snprintf(stem, sizeof(stem), "%.3000s/%.500s.%zu.%s", dir, base, i, arch);
		else
			snprintf(stem, sizeof(stem), "%.3000s/%.500s.%s", dir, base, arch);
		void *data;
		size_t len;
		int r = gx_image_entry_data(e, &budget, &data, &len);
		if (r == -E2BIG) {
			/* one line for the first; a bomb of many entries gets one more */
			if (!over++)
				p_err("%s: entry %zu (%s %s, %s): %zu bytes exceed the decompression budget of this "
				      "file (%zu of %zu MiB left: max(256 MiB, 64 x its size)); not extracted",
				      l.path, i, kind_name(e), arch, gx_image_comp_name(e->comp), e->raw_size,
				      budget >> 20, total >> 20);
			ret = 1;
			continue;
		}
		if (r) {
			p_err("%s: entry %zu (%s %s, %s): cannot decompress: %s", l.path, i, kind_name(e), arch,
			      gx_image_comp_name(e->comp), strerror(-r));
			ret = 1;
			continue;
		}
		if (!ptx_of_elf) {
			snprintf(path, sizeof(path), "%s.%s", stem, ext);
			ret |= write_entry(path, data, len, &written);
		}
		char *ptx = NULL;
		size_t plen = 0;
		if (e->kind == GX_ENTRY_ELF && gx_image_cubin_ptx(data, len, &ptx, &plen) == 0) {
			snprintf(path, sizeof(path), "%s.lineinfo.ptx", stem);
			ret |= write_entry(path, ptx, plen, &written);
			free(ptx);
		}
		free(data);
	}
	if (gx_json)
		printf("]}\n");
	if (over > 1)
		p_err("%s: %zu more entries exceed the decompression budget; not extracted", l.path, over - 1);
	if (!written && !ret) {
		p_err("%s: nothing to extract (no %sentries)", l.path,
		      want == GX_ENTRY_PTX ? "PTX " : want == GX_ENTRY_ELF ? "ELF " : "");
		ret = 1;
	}
	listing_free(&l);
	return ret;
}

static int do_help(int argc, char **argv)
{
	(void)argc, (void)argv;
	usage(stdout);
	return 0;
}

int do_fatbin(int argc, char **argv)
{
	static const struct gx_cmd cmds[] = {
		{ "list", do_list, "list the entries of FILE" },
		{ "extract", do_extract, "write each entry of FILE, decompressed" },
		{ "help", do_help, "describe the commands" },
		{ 0 },
	};
	return gx_cmd_dispatch("fatbin", cmds, argc - 1, argv + 1);
}
