"""limits_fw.py STACK — one ML stack under `gpuext-run --tenant T --mem-limit L`
(tests/gpu/limits.sh, docs/limits.md): the stack's own view of the GPU's
memory is the limit; an allocation past it raises the stack's ordinary
out-of-memory error; after freeing, the process goes on allocating.
Prints `ok - ...` / `not ok - ...` lines and `# ...` notes; STACK is torch,
jax or cupy. LIMIT (bytes) comes from GX_LIMIT."""
import os
import sys

GiB = 1 << 30
LIMIT = int(os.environ["GX_LIMIT"])
stack = sys.argv[1]


def check(cond, what, why=""):
    print(("ok - " if cond else "not ok - ") + f"{stack}: {what}" + ("" if cond else f": {why}"), flush=True)


if stack == "torch":
    import torch

    free, total = torch.cuda.mem_get_info()
    check(total == LIMIT, f"torch.cuda.mem_get_info() total is the limit ({total / GiB:.2f} GiB)", total)
    props = torch.cuda.get_device_properties(0).total_memory
    check(props == LIMIT, f"torch.cuda.get_device_properties(0).total_memory is the limit ({props / GiB:.2f} GiB)",
          props)
    try:
        x = torch.empty(LIMIT + GiB, dtype=torch.uint8, device="cuda")
        check(False, "allocating limit + 1 GiB raises OutOfMemoryError", "it succeeded")
    except torch.cuda.OutOfMemoryError as e:
        check(True, "allocating limit + 1 GiB raises torch.cuda.OutOfMemoryError")
        print("# " + str(e).splitlines()[0][:200])
    ys = [torch.ones(GiB // 4, dtype=torch.float32, device="cuda") for _ in range(2)]  # 2 GiB
    s = sum(float(y.sum()) for y in ys)
    check(s == 2 * (GiB // 4), "then 2 GiB allocate and compute correctly")
    del ys
    torch.cuda.empty_cache()
    free2, _ = torch.cuda.mem_get_info()
    check(free2 > LIMIT - GiB // 2, f"freed: mem_get_info free back to {free2 / GiB:.2f} GiB")
    # the caching allocator sizes itself to the limit: fill to ~90 %, no crash
    blocks = []
    try:
        while True:
            blocks.append(torch.empty(256 << 20, dtype=torch.uint8, device="cuda"))
    except torch.cuda.OutOfMemoryError:
        pass
    got = len(blocks) * (256 << 20)
    check(LIMIT - GiB <= got <= LIMIT, f"256 MiB blocks until out of memory: {got / GiB:.2f} GiB, within the limit")
    del blocks
    torch.cuda.empty_cache()
elif stack == "jax":
    import jax
    import jax.numpy as jnp

    d = jax.devices()[0]
    st = d.memory_stats() or {}
    lim = st.get("bytes_limit", 0)
    frac = float(os.environ.get("XLA_PYTHON_CLIENT_MEM_FRACTION", "0.75"))
    check(0 < lim <= LIMIT * frac * 1.01,
          f"preallocation sized by the limit: bytes_limit {lim / GiB:.2f} GiB <= {frac} x limit", lim)
    try:
        x = jnp.ones(((LIMIT + GiB) // 4,), dtype=jnp.float32)
        x.block_until_ready()
        check(False, "allocating limit + 1 GiB fails", "it succeeded")
    except Exception as e:  # XlaRuntimeError / JaxRuntimeError: RESOURCE_EXHAUSTED
        check("RESOURCE_EXHAUSTED" in str(e) or "out of memory" in str(e).lower(),
              "allocating limit + 1 GiB raises RESOURCE_EXHAUSTED", str(e)[:200])
    y = jnp.ones((GiB // 8,), dtype=jnp.float32)  # 512 MiB
    check(float(y.sum()) == GiB // 8, "then 512 MiB allocate and compute correctly")
    del y
elif stack == "cupy":
    import cupy

    free, total = cupy.cuda.Device(0).mem_info
    check(total == LIMIT, f"Device.mem_info total is the limit ({total / GiB:.2f} GiB)", total)
    try:
        x = cupy.empty(LIMIT + GiB, dtype=cupy.uint8)
        check(False, "allocating limit + 1 GiB raises OutOfMemoryError", "it succeeded")
    except cupy.cuda.memory.OutOfMemoryError:
        check(True, "allocating limit + 1 GiB raises cupy.cuda.memory.OutOfMemoryError")
    y = cupy.ones(GiB // 4, dtype=cupy.float32)
    check(float(y.sum()) == GiB // 4, "then 1 GiB allocates and computes correctly")
    del y
    cupy.get_default_memory_pool().free_all_blocks()
    free2, _ = cupy.cuda.Device(0).mem_info
    check(free2 > LIMIT - GiB // 2, f"freed: mem_info free back to {free2 / GiB:.2f} GiB")
