; Hand-written LLVM IR through llc-19 -march=nvptx64: the path the devbpf JIT
; takes (policy .funcs), plus a kernel using NVVM intrinsics.
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

@llc_counter = addrspace(1) global i32 0, align 4
@llc_lut = internal addrspace(4) constant [4 x i32] [i32 3, i32 1, i32 4, i32 1], align 4

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare void @llvm.nvvm.barrier0()

define i32 @llc_policy(ptr %ctx) {
entry:
  %p = getelementptr inbounds i8, ptr %ctx, i64 16
  %addr = load i64, ptr %p, align 8
  %lo = trunc i64 %addr to i32
  %k = and i32 %lo, 3
  %q = getelementptr inbounds [4 x i32], ptr addrspace(4) @llc_lut, i32 0, i32 %k
  %v = load i32, ptr addrspace(4) %q, align 4
  %old = atomicrmw add ptr addrspace(1) @llc_counter, i32 %v monotonic
  %c = icmp ugt i32 %old, 1000
  %r = select i1 %c, i32 1, i32 0
  ret i32 %r
}

define ptx_kernel void @llc_kernel(ptr addrspace(1) %out, ptr %ctx) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %bid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %nt = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %m = mul i32 %bid, %nt
  %i = add i32 %m, %tid
  %d = call i32 @llc_policy(ptr %ctx)
  call void @llvm.nvvm.barrier0()
  %idx = sext i32 %i to i64
  %p = getelementptr inbounds i32, ptr addrspace(1) %out, i64 %idx
  %s = add i32 %d, %i
  store i32 %s, ptr addrspace(1) %p, align 4
  ret void
}

!nvvm.annotations = !{!0}
!0 = !{ptr @llc_kernel, !"kernel", i32 1}
