/* The handler returns what a void subprogram left in r0: nothing. */
#include "hx_expect.h"
GX_EXPECT("R0 not set before exit");

SEC("struct_ops/ord_void_ret")
__attribute__((naked)) int ord_void_ret(void)
{
	asm volatile("call 1f;"
		     "exit;"
		     "1: r1 = 1;"
		     "exit;" ::: "memory");
}
GX_MEM_PREFETCH(ord_void_ret);
