# The JAX peer of bench/bench_cuda.cpp's jit figures on the same GPU, one line each: a jitted elementwise
# chain and softmax (bytes read + written), and the main job's MLP, CNN and transformer training steps
# (Adam written out, as optax may be absent; f32 and TF32 products), medians of 200 steps.
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


def dense(key, i, o):
    lim = (6.0 / (i + o)) ** 0.5
    return (jax.random.uniform(key, (i, o), jnp.float32, -lim, lim), jnp.zeros((o,), jnp.float32))


def mlp_init(key):
    sizes = [784, 512, 512, 10]
    ks = jax.random.split(key, len(sizes) - 1)
    return [dense(k, i, o) for k, (i, o) in zip(ks, zip(sizes[:-1], sizes[1:]))]


def mlp_apply(params, x):
    h = x
    for i, (w, b) in enumerate(params):
        h = h @ w + b
        if i < len(params) - 1:
            h = jax.nn.relu(h)
    return h


def conv(key, cin, cout):
    std = (2.0 / (cin * 9)) ** 0.5
    return (std * jax.random.normal(key, (cout, cin, 3, 3), jnp.float32), jnp.zeros((cout,), jnp.float32))


def cnn_init(key):
    ks = jax.random.split(key, 4)
    return [conv(ks[0], 1, 32), conv(ks[1], 32, 64), dense(ks[2], 1600, 128), dense(ks[3], 128, 10)]


def cnn_apply(params, x):
    def conv_relu_pool(h, wb):
        h = jax.lax.conv_general_dilated(h, wb[0], (1, 1), "VALID", dimension_numbers=("NCHW", "OIHW", "NCHW"))
        h = jax.nn.relu(h + wb[1][None, :, None, None])
        return jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")

    h = conv_relu_pool(conv_relu_pool(x, params[0]), params[1])
    h = jax.nn.relu(h.reshape(h.shape[0], -1) @ params[2][0] + params[2][1])
    return h @ params[3][0] + params[3][1]


def layer_norm(p, x):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) * jax.lax.rsqrt(v + 1e-5) * p[0] + p[1]


def lm_init(key, vocab=256, d=128, layers=2, t=128):
    ks = jax.random.split(key, 3 + layers)
    ln = lambda: (jnp.ones((d,), jnp.float32), jnp.zeros((d,), jnp.float32))
    blocks = []
    for k in ks[3:]:
        kk = jax.random.split(k, 6)
        blocks.append({"ln1": ln(), "q": dense(kk[0], d, d), "k": dense(kk[1], d, d), "v": dense(kk[2], d, d),
                       "o": dense(kk[3], d, d), "ln2": ln(), "fc1": dense(kk[4], d, 4 * d), "fc2": dense(kk[5], 4 * d, d)})
    return {"tok": 0.02 * jax.random.normal(ks[0], (vocab, d), jnp.float32),
            "pos": 0.02 * jax.random.normal(ks[1], (t, d), jnp.float32),
            "blocks": blocks, "ln": ln(), "head": dense(ks[2], d, vocab)}


def lm_apply(params, ids, heads=4):
    b, t = ids.shape
    lin = lambda p, x: x @ p[0] + p[1]
    x = params["tok"][ids] + params["pos"][:t]
    for blk in params["blocks"]:
        y = layer_norm(blk["ln1"], x)
        split = lambda z: z.reshape(b, t, heads, -1)
        o = jax.nn.dot_product_attention(split(lin(blk["q"], y)), split(lin(blk["k"], y)), split(lin(blk["v"], y)),
                                         is_causal=True)
        x = x + lin(blk["o"], o.reshape(b, t, -1))
        x = x + lin(blk["fc2"], jax.nn.gelu(lin(blk["fc1"], layer_norm(blk["ln2"], x)), approximate=True))
    return lin(params["head"], layer_norm(params["ln"], x)).reshape(b * t, -1)


MODELS = {"mlp": (mlp_init, mlp_apply), "cnn": (cnn_init, cnn_apply), "transformer": (lm_init, lm_apply)}


def batch(name, b):
    kx, ky = jax.random.key(1), jax.random.key(2)
    if name == "mlp":
        return jax.random.normal(kx, (b, 784), jnp.float32), jax.random.randint(ky, (b,), 0, 10)
    if name == "cnn":
        return jax.random.normal(kx, (b, 1, 28, 28), jnp.float32), jax.random.randint(ky, (b,), 0, 10)
    return jax.random.randint(kx, (b, 128), 0, 256), jax.random.randint(ky, (b * 128,), 0, 256)


def make_step(apply):
    def loss(params, x, y):
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(apply(params, x)), y[:, None], 1))

    def step(params, mu, nu, t, x, y):
        l, g = jax.value_and_grad(loss)(params, x, y)
        t = t + 1
        mu = jax.tree.map(lambda m, g: 0.9 * m + 0.1 * g, mu, g)
        nu = jax.tree.map(lambda v, g: 0.999 * v + 0.001 * g * g, nu, g)
        c1, c2 = 1 - 0.9 ** t, 1 - 0.999 ** t
        params = jax.tree.map(lambda p, m, v: p - 1e-3 * (m / c1) / (jnp.sqrt(v / c2) + 1e-8), params, mu, nu)
        return params, mu, nu, t, l

    return jax.jit(step, donate_argnums=(0, 1, 2))


def step_ms(name, b):
    init, apply = MODELS[name]
    jstep = make_step(apply)
    params = init(jax.random.key(0))
    mu = jax.tree.map(jnp.zeros_like, params)
    nu = jax.tree.map(jnp.zeros_like, params)
    t = jnp.zeros((), jnp.float32)
    x, y = batch(name, b)
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
for name, sizes in (("mlp", (128, 4096)), ("cnn", (128,)), ("transformer", (8, 64))):
    for precision, tag in (("highest", ""), ("default", "_tf32")):
        for b in sizes:
            with jax.default_matmul_precision(precision):
                try:
                    print(f"jax_{name}_step_b{b}{tag}_ms {step_ms(name, b):.4f}")
                except Exception as e:  # reported, not fatal
                    print(f"jax_{name}_step_b{b}{tag}_ms failed: {type(e).__name__}: {e}")
