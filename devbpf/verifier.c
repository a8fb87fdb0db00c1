/* verifier.c — placeholder until the SIMT verifier lands. */
#include "devbpf/bpf_internal.h"
#include "gx_util.h"

void gx_vfacts_free(struct gx_vfacts *f, size_t cnt)
{
	(void)f, (void)cnt;
}

GX_EXPORT int gx_bpf_prog__verify(struct gx_bpf_prog *prog, const struct gx_bpf_verify_opts *opts)
{
	(void)prog, (void)opts;
	return gx_err(-EOPNOTSUPP);
}

GX_EXPORT int gx_bpf_object__verify(struct gx_bpf_object *obj, const struct gx_bpf_verify_opts *opts)
{
	for (size_t i = 0; i < obj->prog_cnt; i++) {
		int err = gx_bpf_prog__verify(&obj->progs[i], opts);
		if (err)
			return err;
	}
	return 0;
}

GX_EXPORT int gx_bpf_prog__dump(const struct gx_bpf_prog *prog, FILE *f)
{
	(void)prog, (void)f;
	return gx_err(-EOPNOTSUPP);
}

GX_EXPORT int gx_bpf_insn_str(const struct bpf_insn *insns, size_t cnt, size_t idx, char *buf, size_t len)
{
	(void)insns, (void)cnt, (void)idx, (void)buf, (void)len;
	return gx_err(-EOPNOTSUPP);
}
