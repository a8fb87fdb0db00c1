"""A JAX training loop in phases, for tests/gpu/graphmetrics.sh: a small
MLP trained with SGD under jit (XLA runs each step's thunks as CUDA graphs
when its command buffers are on, the default). WARM steps, then "PHASE 1"
and a pause of PAUSE_S seconds (the shim publishes its stats file and the
tool's map meanwhile, the test scrapes the exporter), STEPS steps, "PHASE 2"
with the loss and the time per step, another pause, exit. Autotuning off:
the same kernels every run."""
import os
import time
os.environ['XLA_FLAGS'] = (os.environ.get('XLA_FLAGS', '') + ' --xla_gpu_autotune_level=0').strip()
import jax
import jax.numpy as jnp

warm = int(os.environ.get('WARM', '20'))
steps = int(os.environ.get('STEPS', '300'))
pause = float(os.environ.get('PAUSE_S', '3'))
k1, k2, k3, k4 = jax.random.split(jax.random.PRNGKey(0), 4)
params = [jax.random.normal(k1, (512, 1024)) * 0.02, jnp.zeros(1024),
          jax.random.normal(k2, (1024, 256)) * 0.02, jnp.zeros(256)]
x = jax.random.normal(k3, (128, 512))
y = jax.random.normal(k4, (128, 256))


def loss(p, x, y):
    h = jax.nn.gelu(x @ p[0] + p[1])
    return jnp.mean((h @ p[2] + p[3] - y) ** 2)


@jax.jit
def step(p, x, y):
    l, g = jax.value_and_grad(loss)(p, x, y)
    return [a - 0.01 * b for a, b in zip(p, g)], l


def run(n):
    global params
    l = None
    for _ in range(n):
        params, l = step(params, x, y)
    return float(jax.block_until_ready(l))


run(warm)
print('PHASE 1', flush=True)
time.sleep(pause)
t = time.time()
l = run(steps)
dt = time.time() - t
print('PHASE 2 loss %.6f steps %d ms_per_step %.4f' % (l, steps, dt * 1e3 / steps), flush=True)
time.sleep(pause)
