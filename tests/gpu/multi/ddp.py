# ddp.py OUTDIR MIX.ptx [WORLD] — torch.distributed on every GPU of the host,
# one process per GPU (mp.spawn), NCCL, for tests/gpu/multi.sh. Each rank
# writes OUTDIR/rank<R>.txt with results that must be identical without the
# shim, with it, and with a tool attached:
#   - all-reduce (float32 and int64) results, as SHA-256 of the bytes;
#   - five DDP training steps of a small MLP: the loss of each step (exact,
#     float.hex) and a SHA-256 of every parameter after training;
#   - a PTX kernel loaded through the driver API (ctypes: cuModuleLoadData,
#     cuLaunchKernel on torch's stream), so the shim rewrites it and a tool
#     sees it: 50*(rank+1) blocks of 128 threads on GPU <rank>.
# Keep NCCL's NVLink multicast off (NCCL_NVLS_ENABLE=0): the caller sets it.
import ctypes
import hashlib
import os
import socket
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def sha(t):
    return hashlib.sha256(t.detach().cpu().contiguous().numpy().tobytes()).hexdigest()[:32]


def ptx_kernel(rank, ptx_path):
    cu = ctypes.CDLL("libcuda.so.1")
    for n in ("cuCtxGetCurrent", "cuModuleLoadData", "cuModuleGetFunction", "cuLaunchKernel", "cuModuleUnload"):
        getattr(cu, n).restype = ctypes.c_int
    cu.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
    ctx = ctypes.c_void_p()
    assert cu.cuCtxGetCurrent(ctypes.byref(ctx)) == 0 and ctx.value, "no current context"
    img = open(ptx_path, "rb").read() + b"\0"
    mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
    rc = cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(img))
    assert rc == 0, "cuModuleLoadData: %d" % rc
    rc = cu.cuModuleGetFunction(ctypes.byref(fn), mod, b"mix")
    assert rc == 0, "cuModuleGetFunction: %d" % rc
    n = 1 << 16
    out = torch.empty(n, dtype=torch.int32, device="cuda")
    p_out = ctypes.c_uint64(out.data_ptr())
    p_in = ctypes.c_uint64(0)
    c_n = ctypes.c_uint32(n)
    salt = ctypes.c_uint32(0x4242 + rank)
    args = (ctypes.c_void_p * 4)(*[ctypes.addressof(a) for a in (p_out, p_in, c_n, salt)])
    grid = 50 * (rank + 1)
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    rc = cu.cuLaunchKernel(fn, grid, 1, 1, 128, 1, 1, 0, stream, args, None)
    assert rc == 0, "cuLaunchKernel: %d" % rc
    torch.cuda.synchronize()
    h = sha(out)
    cu.cuModuleUnload(mod)
    return grid, h


def run(rank, world, port, outdir, ptx_path):
    torch.use_deterministic_algorithms(True)
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:%d" % port, rank=rank, world_size=world,
                            device_id=torch.device("cuda", rank))
    lines = []
    # all-reduce
    t = torch.arange(4096, dtype=torch.float32, device="cuda") * (rank + 1) * 0.37 + rank
    dist.all_reduce(t)
    lines.append("allreduce f32 %s" % sha(t))
    i = torch.arange(4096, dtype=torch.int64, device="cuda") * (rank + 3)
    dist.all_reduce(i)
    lines.append("allreduce i64 %s" % sha(i))
    g = [torch.zeros(8, device="cuda") for _ in range(world)]
    dist.all_gather(g, torch.full((8,), float(rank), device="cuda"))
    lines.append("allgather %s" % sha(torch.cat(g)))
    # DDP
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)).cuda()
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[rank])
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    gen = torch.Generator(device="cpu").manual_seed(1000 + rank)
    for step in range(5):
        x = torch.randn(32, 64, generator=gen).cuda()
        y = torch.randint(0, 10, (32,), generator=gen).cuda()
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(ddp(x), y)
        loss.backward()
        opt.step()
        lines.append("step %d loss %s" % (step, float(loss.item()).hex()))
    lines.append("params %s" % sha(torch.cat([p.detach().flatten() for p in model.parameters()])))
    blocks, h = ptx_kernel(rank, ptx_path)
    lines.append("ptx kernel blocks %d %s" % (blocks, h))
    dist.barrier()
    dist.destroy_process_group()
    with open(os.path.join(outdir, "rank%d.txt" % rank), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    outdir, ptx_path = sys.argv[1], sys.argv[2]
    world = int(sys.argv[3]) if len(sys.argv) > 3 else torch.cuda.device_count()
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    mp.spawn(run, args=(world, port, outdir, ptx_path), nprocs=world, join=True)
    print("world %d done" % world)


if __name__ == "__main__":
    main()
