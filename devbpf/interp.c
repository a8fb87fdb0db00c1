/* interp.c — placeholder until the reference interpreter lands. */
#include "devbpf/bpf_internal.h"
#include "gx_util.h"

GX_EXPORT int gx_bpf_interp_run(const struct bpf_insn *insns, size_t cnt, uint64_t ctx,
				const struct gx_bpf_interp_opts *opts, uint64_t *ret)
{
	(void)insns, (void)cnt, (void)ctx, (void)opts, (void)ret;
	return gx_err(-EOPNOTSUPP);
}
