/* Malformed objects for the loader tests, one per VARIANT (-DVARIANT=N);
 * test_loader.c lists the error each must produce. */
#include "gpuext/gdev_helpers.h"

#if VARIANT == 1 /* key_size disagrees with key */
struct {
	__uint(type, GDEV_MAP_HASH);
	__uint(max_entries, 4);
	__type(key, __u64);
	__uint(key_size, 4);
	__type(value, __u64);
} m SEC(".maps");
#elif VARIANT == 2 /* unknown attribute */
struct {
	__uint(type, GDEV_MAP_HASH);
	__uint(max_entries, 4);
	__uint(frobnicate, 1);
	__type(key, __u64);
	__type(value, __u64);
} m SEC(".maps");
#elif VARIANT == 3 /* max_entries 0 */
struct {
	__uint(type, GDEV_MAP_ARRAY);
	__uint(max_entries, 0);
	__type(key, __u32);
	__type(value, __u64);
} m SEC(".maps");
#elif VARIANT == 4 /* huge max_entries */
struct {
	__uint(type, GDEV_MAP_ARRAY);
	__uint(max_entries, 0x7fffffff);
	__type(key, __u32);
	__type(value, __u64);
} m SEC(".maps");
#elif VARIANT == 5 /* ringbuf not a power of two */
struct {
	__uint(type, GDEV_MAP_RINGBUF);
	__uint(max_entries, 5000);
} m SEC(".maps");
#elif VARIANT == 6 /* array with an 8-byte key */
struct {
	__uint(type, GDEV_MAP_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u64);
	__type(value, __u64);
} m SEC(".maps");
#elif VARIANT == 7 /* map type we do not have */
struct {
	__uint(type, 9);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} m SEC(".maps");
#elif VARIANT == 8 /* no type */
struct {
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} m SEC(".maps");
#elif VARIANT == 9 /* value too large */
struct {
	__uint(type, GDEV_MAP_HASH);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, char[2 << 20]);
} m SEC(".maps");
#elif VARIANT == 12 /* a record table that is not an array */
struct {
	__uint(type, GDEV_MAP_HASH);
	__uint(max_entries, 4);
	__uint(map_flags, GDEV_F_RECORDS);
	__type(key, __u32);
	__type(value, __u64);
} m SEC(".maps");
#elif VARIANT == 13 /* a record table over 16 MiB (the drainer copies it whole) */
struct {
	__uint(type, GDEV_MAP_ARRAY);
	__uint(max_entries, 1 << 20);
	__uint(map_flags, GDEV_F_RECORDS);
	__type(key, __u32);
	__type(value, char[32]);
} m SEC(".maps");
#elif VARIANT == 10 /* extern variable */
extern __u32 some_kconfig __attribute__((section(".kconfig")));
__u64 m;
#endif

#if VARIANT == 11 /* unknown program section */
SEC("gdev/mem/acces")
#else
SEC("gdev/probe/x")
#endif
int prog(struct gdev_ctx *ctx)
{
#if VARIANT == 10
	m = some_kconfig;
#elif VARIANT != 11
	__u32 k = 0;
	bpf_map_lookup_elem(&m, &k);
#endif
	return 0;
}
