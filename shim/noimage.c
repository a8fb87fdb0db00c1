/* noimage.c — stand-in for the image parser (shim/gx_image.h) while the
 * real one (libgximage.a, shim/image.mk) is not in the tree: it recognises
 * PTX text only, so the shim's load path can be built and tested. It is not
 * linked once shim/image.mk defines IMAGE_LIB. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gx_util.h"
#include "shim/gx_image.h"

static int looks_like_ptx(const char *p, size_t avail)
{
	size_t n = avail < 4096 ? avail : 4096;
	return memmem(p, strnlen(p, n), ".version", 8) != NULL ||
	       memmem(p, strnlen(p, n), ".target", 7) != NULL;
}

int gx_image_parse(const void *img, size_t avail, struct gx_image *out, char *err, size_t errlen)
{
	if (!img || !out)
		return gx_err(-EINVAL);
	memset(out, 0, sizeof(*out));
	const char *p = img;
	if (avail >= 4 && !memcmp(p, "\177ELF", 4)) {
		out->kind = GX_IMAGE_ELF;
		return 0;
	}
	if (!looks_like_ptx(p, avail)) {
		if (err && errlen)
			snprintf(err, errlen, "not PTX text (binary images need the image parser)");
		return gx_err(-ENOTSUP);
	}
	struct gx_image_entry *e = calloc(1, sizeof(*e));
	if (!e)
		return gx_err(-ENOMEM);
	size_t len = strnlen(p, avail == SIZE_MAX ? (size_t)1 << 30 : avail);
	const char *t = memmem(p, len, ".target sm_", 11);
	e->kind = GX_ENTRY_PTX;
	e->sm = t ? (unsigned)strtoul(t + 11, NULL, 10) : 0;
	e->data = p;
	e->size = e->raw_size = len;
	out->kind = GX_IMAGE_PTX;
	out->extent = len + 1;
	out->entries = e;
	out->nr_entries = 1;
	return 0;
}

void gx_image_free(struct gx_image *im)
{
	if (!im)
		return;
	free(im->entries);
	im->entries = NULL;
	im->nr_entries = 0;
}

size_t gx_image_budget(size_t input_size)
{
	return input_size > GX_IMAGE_BUDGET_MIN ? input_size : GX_IMAGE_BUDGET_MIN;
}

int gx_image_entry_data(const struct gx_image_entry *e, size_t *budget, void **out, size_t *len)
{
	if (!e || !budget || !out || e->comp != GX_COMP_NONE)
		return gx_err(-EINVAL);
	if (e->size > *budget)
		return gx_err(-E2BIG);
	*budget -= e->size;
	char *b = malloc(e->size + 1);
	if (!b)
		return gx_err(-ENOMEM);
	memcpy(b, e->data, e->size);
	b[e->size] = 0;
	*out = b;
	if (len)
		*len = e->size;
	return 0;
}

const struct gx_image_entry *gx_image_pick_ptx(const struct gx_image *im, unsigned device_sm, int *has_sass)
{
	if (has_sass)
		*has_sass = im && im->kind == GX_IMAGE_ELF;
	if (!im)
		return NULL;
	for (size_t i = 0; i < im->nr_entries; i++)
		if (im->entries[i].kind == GX_ENTRY_PTX && im->entries[i].sm <= device_sm)
			return &im->entries[i];
	return NULL;
}

const struct gx_image_entry *gx_image_pick_ptx_in(const struct gx_image *im, unsigned container,
						  unsigned device_sm)
{
	(void)im, (void)container, (void)device_sm;
	return NULL; /* no fatbin containers without the image parser */
}

const char *gx_image_kind_name(enum gx_image_kind k)
{
	switch (k) {
	case GX_IMAGE_PTX: return "ptx";
	case GX_IMAGE_ELF: return "elf";
	case GX_IMAGE_FATBIN: return "fatbin";
	case GX_IMAGE_WRAPPER: return "wrapper";
	default: return "unknown";
	}
}
