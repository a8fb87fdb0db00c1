/* r0 read after a call of a subprogram that sets none (a void function
 * whose caller uses its "result"). */
#include "hx_expect.h"
GX_EXPECT("read of uninitialized register r0");

SEC("struct_ops/ord_void_r0")
__attribute__((naked)) int ord_void_r0(void)
{
	asm volatile("call 1f;"
		     "r0 &= 1;"
		     "exit;"
		     "1: r1 = 1;"
		     "exit;" ::: "memory");
}
GX_MEM_PREFETCH(ord_void_r0);
