# The JAX peer of bench/bench_cuda.cpp's issue-18 figures on the same GPU, one line each: a jitted
# elementwise chain and softmax (bytes read + written), and the main job's MLP training step (Adam written
# out, as optax may be absent), median of 200 steps.
import time

import jax
import jax.numpy as jnp


def time_it(f, reps):
    f().block_until_ready()
    t = time.perf_counter()
    for _ in range(reps):
        out = f()
    out.block_until_ready()
    return (time.perf_counter() - t) / reps


n = 1 << 28
x = jax.random.normal(jax.random.key(4), (n,), jnp.float32)
chain = jax.jit(lambda x: jnp.tanh(x) * 0.5 + x * x - 1)
print(f"jax_chain_gbs {2.0 * n * 4 / time_it(lambda: chain(x), 20) / 1e9:.0f}")
del x
R = 8192
m = jax.random.normal(jax.random.key(5), (R, R), jnp.float32)
sm = jax.jit(lambda m: jax.nn.softmax(m, -1))
print(f"jax_softmax_gbs {2.0 * R * R * 4 / time_it(lambda: sm(m), 20) / 1e9:.0f}")
del m


def init(key):
    sizes = [784, 512, 512, 10]
    ks = jax.random.split(key, len(sizes) - 1)
    params = []
    for k, (i, o) in zip(ks, zip(sizes[:-1], sizes[1:])):
        lim = (6.0 / (i + o)) ** 0.5
        params.append((jax.random.uniform(k, (i, o), jnp.float32, -lim, lim), jnp.zeros((o,), jnp.float32)))
    return params


def loss(params, x, y):
    h = x
    for i, (w, b) in enumerate(params):
        h = h @ w + b
        if i < len(params) - 1:
            h = jax.nn.relu(h)
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(h), y[:, None], 1))


def step(params, mu, nu, t, x, y):
    l, g = jax.value_and_grad(loss)(params, x, y)
    t = t + 1
    mu = jax.tree.map(lambda m, g: 0.9 * m + 0.1 * g, mu, g)
    nu = jax.tree.map(lambda v, g: 0.999 * v + 0.001 * g * g, nu, g)
    c1, c2 = 1 - 0.9 ** t, 1 - 0.999 ** t
    params = jax.tree.map(lambda p, m, v: p - 1e-3 * (m / c1) / (jnp.sqrt(v / c2) + 1e-8), params, mu, nu)
    return params, mu, nu, t, l


jstep = jax.jit(step, donate_argnums=(0, 1, 2))


def step_ms(b):
    params = init(jax.random.key(0))
    mu = jax.tree.map(jnp.zeros_like, params)
    nu = jax.tree.map(jnp.zeros_like, params)
    t = jnp.zeros((), jnp.float32)
    x = jax.random.normal(jax.random.key(1), (b, 784), jnp.float32)
    y = jax.random.randint(jax.random.key(2), (b,), 0, 10)
    times = []
    for i in range(220):
        t0 = time.perf_counter()
        params, mu, nu, t, l = jstep(params, mu, nu, t, x, y)
        l.block_until_ready()
        if i >= 20:
            times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    return times[len(times) // 2]


# JAX's default precision for f32 products on GPUs is TF32; "highest" is f32 (graft's default, as PyTorch's)
for b in (128, 4096):
    for precision, tag in (("highest", ""), ("default", "_tf32")):
        with jax.default_matmul_precision(precision):
            print(f"jax_mlp_step_b{b}{tag}_ms {step_ms(b):.4f}")
