/* image_decompress.c — an entry's bytes as the driver would see them.
 *
 * nvcc 13 stores PTX (and large or -G cubins) as one zstd frame (flag 0x8000,
 * default/size/balance modes) or one raw LZ4 block (0x2000, speed mode). The
 * header records the compressed and uncompressed sizes; both are checked
 * against what the decompressor produces, so a corrupt entry is an error,
 * never a short or overlong buffer. */
#include <errno.h>
#include <limits.h>
#include <lz4.h>
#include <stdlib.h>
#include <zstd.h>

#include "common/gx_util.h"
#include "image/image_internal.h"

static int unzstd(const struct gx_image_entry *e, char *dst)
{
	unsigned long long fcs = ZSTD_getFrameContentSize(e->data, e->size);
	if (fcs == ZSTD_CONTENTSIZE_ERROR)
		return -EBADMSG;
	if (fcs != ZSTD_CONTENTSIZE_UNKNOWN && fcs != e->raw_size)
		return -EBADMSG;
	size_t n = ZSTD_decompress(dst, e->raw_size, e->data, e->size);
	if (ZSTD_isError(n) || n != e->raw_size)
		return -EBADMSG;
	return 0;
}

static int unlz4(const struct gx_image_entry *e, char *dst)
{
	if (e->size > INT_MAX || e->raw_size > INT_MAX)
		return -EBADMSG;
	int n = LZ4_decompress_safe(e->data, dst, (int)e->size, (int)e->raw_size);
	return n >= 0 && (size_t)n == e->raw_size ? 0 : -EBADMSG;
}

/* Real images need far less than this (docs/images.md, "Budgets"): the
 * largest container of CUDA 13's libraries decompresses to 164 MiB (cuDNN's
 * engines, 24x its 6.7 MiB), small ones to 134x their size, and whole files
 * to at most 11x theirs (libcudnn_ops: 424 MiB from 38 MiB). A bomb of a few
 * KiB that declares gigabytes is refused before anything is allocated. */
GX_EXPORT size_t gx_image_budget(size_t input_size)
{
	if (input_size > SIZE_MAX / GX_IMAGE_BUDGET_RATIO)
		return SIZE_MAX;
	size_t b = input_size * GX_IMAGE_BUDGET_RATIO;
	return b > GX_IMAGE_BUDGET_MIN ? b : GX_IMAGE_BUDGET_MIN;
}

GX_EXPORT int gx_image_entry_data(const struct gx_image_entry *e, size_t *budget, void **out, size_t *len)
{
	if (!e || !budget || !out || !len || !e->data)
		return gx_err(-EINVAL);
	*out = NULL;
	*len = 0;
	if (e->raw_size > GX_IMAGE_MAX_SIZE)
		return gx_err(-EBADMSG);
	if (e->flags & GX_FATBIN_F_ENCODED)
		return gx_err(-ENOTSUP);
	/* Refuse sizes no valid payload could produce before allocating: LZ4
	 * expands at most ~255x; a zstd block (<= 128 KiB out) costs >= 4 bytes. */
	if ((e->comp == GX_COMP_NONE && e->raw_size > e->size) ||
	    (e->comp == GX_COMP_LZ4 && e->raw_size / 255 > e->size + 16) ||
	    (e->comp == GX_COMP_ZSTD && e->raw_size / 131072 > e->size / 4 + 1))
		return gx_err(-EBADMSG);
	/* Charged before the attempt: corrupt entries cost the budget too, so
	 * many of them cannot make us decompress without end either. */
	if (e->raw_size > *budget)
		return gx_err(-E2BIG);
	*budget -= e->raw_size;
	char *buf = malloc(e->raw_size + 1);
	if (!buf)
		return gx_err(-ENOMEM);
	int ret = 0;
	switch (e->comp) {
	case GX_COMP_NONE:
		memcpy(buf, e->data, e->raw_size);
		break;
	case GX_COMP_ZSTD:
		ret = unzstd(e, buf);
		break;
	case GX_COMP_LZ4:
		ret = unlz4(e, buf);
		break;
	default:
		ret = -EINVAL;
	}
	if (ret) {
		free(buf);
		return gx_err(ret);
	}
	size_t n = e->raw_size;
	/* Decompressed PTX carries its NUL in raw_size; report the text length. */
	if (e->kind == GX_ENTRY_PTX)
		n = strnlen(buf, n);
	buf[n] = 0;
	*out = buf;
	*len = n;
	return 0;
}
