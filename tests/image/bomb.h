/* bomb.h — decompression bombs for the tests (gen_bomb, test_shim): a
 * fatbin container whose PTX entries are zstd frames that declare and really
 * decompress to SIZE bytes each, from 4 bytes per 128 KiB (one RLE block:
 * RFC 8878, 3.1.1.2). One entry of 2 GiB is the 64 KiB file of issue 20 that
 * made `gpuext fatbin extract` allocate and write 2 GiB; 16 of them the one
 * that wrote past 30 GB. Built by the tests, so no multi-megabyte input is
 * committed. */
#ifndef GX_TEST_BOMB_H
#define GX_TEST_BOMB_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image/gx_image.h"

#define BOMB_BLOCK (128u << 10) /* a zstd block regenerates at most 128 KiB */

struct bomb_out {
	uint8_t *p;
	size_t len, cap;
};

static void bomb_put(struct bomb_out *o, const void *d, size_t n)
{
	if (o->len + n > o->cap) {
		o->cap = (o->len + n) * 2;
		o->p = realloc(o->p, o->cap);
		if (!o->p) {
			perror("bomb");
			exit(1);
		}
	}
	memcpy(o->p + o->len, d, n);
	o->len += n;
}

static void bomb_le(struct bomb_out *o, uint64_t v, unsigned bytes)
{
	uint8_t b[8];
	for (unsigned i = 0; i < bytes; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	bomb_put(o, b, bytes);
}

/* One zstd frame of `size` bytes of 'A': header with an 8-byte content size
 * and a 128 KiB window, then RLE blocks. */
static void bomb_frame(struct bomb_out *o, uint64_t size)
{
	bomb_le(o, 0xFD2FB528u, 4);
	bomb_le(o, 0xC0, 1); /* descriptor: 8-byte content size, no checksum */
	bomb_le(o, 7u << 3, 1); /* window 2^(10+7) = 128 KiB */
	bomb_le(o, size, 8);
	for (uint64_t left = size; left;) {
		uint32_t n = left > BOMB_BLOCK ? BOMB_BLOCK : (uint32_t)left;
		left -= n;
		bomb_le(o, (uint64_t)n << 3 | 1u << 1 | (left == 0), 3); /* RLE block */
		bomb_le(o, 'A', 1);
	}
}

/* A fatbin PTX entry (layout: docs/images.md) holding one such frame. */
static void bomb_entry(struct bomb_out *o, uint64_t size)
{
	struct bomb_out f = { 0 };
	bomb_frame(&f, size);
	size_t padded = (f.len + 7) & ~(size_t)7;
	bomb_le(o, GX_ENTRY_PTX, 2);
	bomb_le(o, 0x0101, 2);
	bomb_le(o, 64, 4); /* header size */
	bomb_le(o, padded, 8); /* payload size */
	bomb_le(o, f.len, 4); /* compressed size */
	bomb_le(o, 0, 4); /* no options */
	bomb_le(o, 0, 2); /* PTX ISA 8.0 */
	bomb_le(o, 8, 2);
	bomb_le(o, 80, 4); /* sm_80: picked on every device */
	bomb_le(o, 0, 8); /* no identifier */
	bomb_le(o, GX_FATBIN_F_64BIT | GX_FATBIN_F_LINUX | GX_FATBIN_F_ZSTD, 8);
	bomb_le(o, 0, 8);
	bomb_le(o, size, 8); /* uncompressed size */
	bomb_put(o, f.p, f.len);
	bomb_put(o, "\0\0\0\0\0\0\0", padded - f.len);
	free(f.p);
}

/* A container of `n` such entries of `size` bytes each (malloc'd). */
static uint8_t *bomb_fatbin(unsigned n, uint64_t size, size_t *len)
{
	struct bomb_out o = { 0 }, body = { 0 };
	for (unsigned i = 0; i < n; i++)
		bomb_entry(&body, size);
	bomb_le(&o, 0xBA55ED50u, 4);
	bomb_le(&o, 1, 2);
	bomb_le(&o, 16, 2);
	bomb_le(&o, body.len, 8);
	bomb_put(&o, body.p, body.len);
	free(body.p);
	*len = o.len;
	return o.p;
}

#endif
