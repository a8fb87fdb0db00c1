/* site_sample_internal.h — the sample gate's hash (site_sample.c emits it as
 * PTX), and the same in C: tests/tools/test_tool_progs.c runs the tools'
 * programs behind this model of the gate, so the constants live here once. */
#ifndef PTX_SITE_SAMPLE_H
#define PTX_SITE_SAMPLE_H

#define PTX_SAMPLE_WARP_SHIFT 26u	  /* %warpid << 26, xor'ed into %clock */
#define PTX_SAMPLE_SM_SHIFT   16u	  /* %smid << 16, too: the SMs' clocks may agree */
#define PTX_SAMPLE_SITE_MUL   0x9e3779b9u /* site number -> salt */
#define PTX_SAMPLE_MUL1	      0x85ebca6bu /* murmur3's 32-bit finaliser */
#define PTX_SAMPLE_MUL2	      0xc2b2ae35u
#define PTX_LCG_MUL	      1664525u /* Numerical Recipes' 32-bit generator */
#define PTX_LCG_ADD	      1013904223u

/* The salt of site number `site` of a kernel (or .func) with id kid. */
static inline unsigned ptx_sample_salt(unsigned long long kid, unsigned site)
{
	return (unsigned)(kid ^ kid >> 32) ^ site * PTX_SAMPLE_SITE_MUL;
}

/* The limit: sampled iff hash < it (probability 1/n within 2^-32); n > 1. */
static inline unsigned ptx_sample_limit(unsigned n)
{
	return (unsigned)((1ull << 32) / n);
}

/* What a lane computes from %clock, %warpid and %smid. */
static inline unsigned ptx_sample_hash(unsigned clock, unsigned warpid, unsigned smid, unsigned salt)
{
	unsigned x = clock ^ warpid << PTX_SAMPLE_WARP_SHIFT ^ smid << PTX_SAMPLE_SM_SHIFT ^ salt;
	x ^= x >> 16;
	x *= PTX_SAMPLE_MUL1;
	x ^= x >> 13;
	x *= PTX_SAMPLE_MUL2;
	x ^= x >> 16;
	return x;
}

#endif
