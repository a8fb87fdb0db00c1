/* gx_bpf_isa.h — the eBPF instruction set as gpuext decodes it.
 *
 * Every user-space file that reads BPF instructions includes this header, not
 * <linux/bpf.h> directly. <linux/bpf.h> comes from whatever linux-libc-dev the
 * machine has: Debian 12's own is 6.1, older than sign-extending loads
 * (BPF_MEMSX, Linux 6.6) and conditional pseudo jumps (BPF_JCOND, may_goto,
 * Linux 6.9), which clang 19 emits. Those encodings are fixed by the ISA
 * (RFC 9669), so they are defined here when the installed header lacks them
 * and the build never depends on which UAPI headers happen to be installed.
 * tests/common/test_bpf_isa_headers.sh builds the users of this header
 * against a copy of the installed <linux/bpf.h> with these names removed. */
#ifndef GX_BPF_ISA_H
#define GX_BPF_ISA_H

#include <linux/bpf.h>

/* GX_BPF_ISA_NO_COMPAT: only for the header test, to prove it can fail. */
#ifndef GX_BPF_ISA_NO_COMPAT
#ifndef BPF_MEMSX
#define BPF_MEMSX 0x80 /* load with sign extension (mode) */
#endif
#ifndef BPF_JCOND
#define BPF_JCOND 0xe0 /* conditional pseudo jump: may_goto (op) */
#endif
#endif

#endif /* GX_BPF_ISA_H */
