/* gx_test_bpf.h — annotations for the verifier corpus (like the kernel's
 * bpf_misc.h). Each program carries BTF decl tags that the generic loader
 * (tests/devbpf/test_verifier.c) reads back from the object's BTF:
 *   __description("...")  what the program checks
 *   __success / __failure expected verdict
 *   __msg("...")          a substring the rejection message must contain
 *   __max_insns(N)        override the hook's path budget for this program
 *   __no_simt             verify without the warp-uniformity rules
 *   __exploit             a refused program that, run unverified in the
 *                         interpreter, does harm (a wild access, a forged
 *                         map handle, an address stored into a map): the
 *                         loader checks that it does, so the refusal is
 *                         what keeps it out of the back ends */
#ifndef GX_TEST_BPF_H
#define GX_TEST_BPF_H

#include "gpuext/gdev_helpers.h"

#define __gx_tag(x) __attribute__((btf_decl_tag(x)))
#define __description(d) __gx_tag("gx_desc=" d)
#define __success __gx_tag("gx_result=success")
#define __failure __gx_tag("gx_result=failure")
#define __msg(m) __gx_tag("gx_msg=" m)
#define __max_insns(n) __gx_tag("gx_max_insns=" #n)
#define __no_simt __gx_tag("gx_flag=no_simt")
#define __exploit __gx_tag("gx_flag=exploit")
#define __naked __attribute__((naked))
#define __imm(name) [name] "i"(name)
#define __imm_addr(name) [name] "i"(&name)
#define __clobber_all "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "memory"

GDEV_LICENSE("GPL");

#endif
