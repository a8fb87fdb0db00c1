"""limits_pool.py — PyTorch's caching allocator on its cudaMallocAsync backend
(PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync) under `gpuext-run --tenant T
--mem-limit L` (tests/gpu/limits2.sh, docs/limits.md "Pools"): what the pool
keeps after a free stays counted, torch.cuda.empty_cache() (a trim) gives it
back, an allocation past the limit raises PyTorch's ordinary out-of-memory
error. Prints `ok - ...` / `not ok - ...` lines and `# ...` notes. LIMIT
(bytes) comes from GX_LIMIT, the tenant's name from GX_TENANT, the gpuext CLI
from GX_BIN."""
import json
import os
import subprocess

import torch

GiB = 1 << 30
MiB = 1 << 20
LIMIT = int(os.environ["GX_LIMIT"])
TENANT = os.environ["GX_TENANT"]
GX = os.environ["GX_BIN"]


def check(cond, what, why=""):
    print(("ok - " if cond else "not ok - ") + f"pool: {what}" + ("" if cond else f": {why}"), flush=True)


def counted():
    """The tenant's bytes on its GPU, as `gpuext --json tenant list` shows."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUEXT_") or k == "GPUEXT_SHM_DIR"}
    env.pop("LD_LIBRARY_PATH", None)
    out = subprocess.run([GX, "--json", "tenant", "list"], capture_output=True, text=True, env=env, timeout=20)
    for t in json.loads(out.stdout or "[]"):
        if t["name"] == TENANT:
            return t["gpus"][0]["mem_used"] if t.get("gpus") else t["mem_used"]
    return -1


backend = torch.cuda.memory.get_allocator_backend()
check(backend == "cudaMallocAsync", f"PyTorch's allocator backend is {backend}", backend)
free, total = torch.cuda.mem_get_info()
check(total == LIMIT, f"torch.cuda.mem_get_info() total is the limit ({total / GiB:.2f} GiB)", total)
x = torch.ones(3 * GiB // 4, dtype=torch.float32, device="cuda")  # 3 GiB
check(float(x[:1024].sum()) == 1024.0, "3 GiB allocated and written")
c1 = counted()
del x
torch.cuda.synchronize()
c2 = counted()
check(c2 >= 3 * GiB, f"freed into the pool: the pool keeps it, the budget stays ({c2 / GiB:.2f} GiB counted, "
      f"{c1 / GiB:.2f} before the free)", c2)
free2, _ = torch.cuda.mem_get_info()
check(free2 <= LIMIT - 3 * GiB + 64 * MiB, f"mem_get_info free while the pool caches: {free2 / GiB:.2f} GiB", free2)
y = torch.empty(3 * GiB, dtype=torch.uint8, device="cuda")
c3 = counted()
check(c3 <= c2 + 64 * MiB, f"an allocation the pool has cached takes no more ({c3 / GiB:.2f} GiB counted)", c3)
try:
    z = torch.empty(2 * GiB, dtype=torch.uint8, device="cuda")
    check(False, "2 GiB more with 3 GiB in use under 4 GiB raises OutOfMemoryError", "it succeeded")
except torch.cuda.OutOfMemoryError as e:
    check(True, "2 GiB more with 3 GiB in use under 4 GiB raises torch.cuda.OutOfMemoryError")
    print("# " + str(e).splitlines()[0][:200])
del y
torch.cuda.empty_cache()  # cudaDeviceSynchronize + cudaMemPoolTrimTo(pool, 0)
c4 = counted()
check(0 <= c4 < 256 * MiB, f"torch.cuda.empty_cache() trims the pool: the budget is back ({c4 / MiB:.0f} MiB counted)",
      c4)
free4, _ = torch.cuda.mem_get_info()
check(free4 >= LIMIT - 256 * MiB, f"and mem_get_info free is {free4 / GiB:.2f} GiB again", free4)
blocks = []
try:
    while True:
        blocks.append(torch.empty(256 * MiB, dtype=torch.uint8, device="cuda"))
except torch.cuda.OutOfMemoryError:
    pass
got = len(blocks) * 256 * MiB
check(LIMIT - GiB <= got <= LIMIT, f"256 MiB blocks until out of memory: {got / GiB:.2f} GiB, within the limit", got)
del blocks
torch.cuda.empty_cache()
w = torch.ones(GiB // 4, dtype=torch.float32, device="cuda")
check(float(w.sum()) == GiB // 4, "then 1 GiB allocates and computes correctly")
