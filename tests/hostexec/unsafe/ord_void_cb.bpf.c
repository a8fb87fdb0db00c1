/* A bpf_loop callback must return 0 or 1: one that sets no r0 is refused
 * (a void subprogram is fine only where nothing reads its r0). */
#include "hx_expect.h"
GX_EXPECT("R0 not set before exit");

SEC("struct_ops/ord_void_cb")
__attribute__((naked)) int ord_void_cb(void)
{
	asm volatile("r1 = 4;"
		     "r2 = 1f ll;"
		     "r3 = 0;"
		     "r4 = 0;"
		     "call 181;"
		     "r0 = 0;"
		     "exit;"
		     "1: r1 = 1;"
		     "exit;" ::: "memory");
}
GX_MEM_PREFETCH(ord_void_cb);
