/* gx_common.bpf.h — includes and small helpers shared by the host policies
 * (BPF side). Policies use only gpu_ext.h types and kfuncs plus plain BPF
 * maps, so the shim's user-space executor can run the same objects. */
#ifndef GX_COMMON_BPF_H
#define GX_COMMON_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "gpuext/gpu_ext.h"

char _license[] SEC("license") = "GPL";

#define GX_STAT(x) __sync_fetch_and_add(&(x), 1)

#endif
