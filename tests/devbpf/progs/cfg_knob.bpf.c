/* cfg_knob — a device policy whose knob lives in `.rodata.cfg`. The shim
 * fills array maps named "...cfg" of 8-byte values from GPUEXT_CFG, and
 * this section's map is named so; but its bytes are constants the verifier
 * folded (it chose the map slot below at load), so the shim seals it
 * instead and leaves it alone (tests/tools/test_attach.sh). */
#include "gpuext/gdev_helpers.h"

const volatile __u64 slot SEC(".rodata.cfg") = 2;

struct {
	__uint(type, GDEV_MAP_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} hits SEC(".maps");

SEC("gdev/probe/*")
int count_entry(struct gdev_ctx *ctx)
{
	__u32 k = (__u32)slot;
	__u64 *v = bpf_map_lookup_elem(&hits, &k);
	if (v)
		__sync_fetch_and_add(v, 1);
	return 0;
}
GDEV_LICENSE("GPL");
