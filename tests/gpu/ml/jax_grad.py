"""JAX: jit(grad) of an MLP loss: checksum of the gradients, then time.
XLA's autotuner picks GEMM algorithms by timing them, so two runs may
differ in the last bits: autotuning off makes the checksum deterministic."""
import hashlib, os, time
os.environ['XLA_FLAGS'] = (os.environ.get('XLA_FLAGS', '') + ' --xla_gpu_autotune_level=0').strip()
import jax, jax.numpy as jnp
import numpy as np
from steady import steady
k = jax.random.PRNGKey(0)
k1, k2, k3 = jax.random.split(k, 3)
params = [jax.random.normal(k1, (512, 1024)) * 0.02, jax.random.normal(k2, (1024, 256)) * 0.02]
x = jax.random.normal(k3, (128, 512))
def loss(p, x):
    h = jax.nn.gelu(x @ p[0])
    return jnp.mean((h @ p[1]) ** 2)
g = jax.jit(jax.grad(loss))
out = g(params, x)
h = hashlib.sha256()
for t in out:
    h.update(np.asarray(t).tobytes())
print('checksum', h.hexdigest()[:16])
iters = int(os.environ.get('ITERS', '200'))
last = [g(params, x)]
def one_round():
    last[0] = g(params, x)
steady(one_round, lambda: jax.block_until_ready(last[0]), iters)
