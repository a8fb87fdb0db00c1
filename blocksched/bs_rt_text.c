/* bs_rt_text.c — gx_bs_rt_ptx(): the device runtime's PTX, generated from
 * bs_rt.c by gen-rt.sh, on its own so that users of the text alone (the
 * CLI, benchmarks) do not pull in the launch side. */
#include "blocksched/gx_blocksched.h"

extern const char gx_bs_rt_text[];
extern const unsigned long gx_bs_rt_text_len;

const char *gx_bs_rt_ptx(size_t *len)
{
	*len = gx_bs_rt_text_len;
	return gx_bs_rt_text;
}
