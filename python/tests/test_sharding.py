"""shard_map and pmap from Python over this process's devices (ctest runs with GRAFT_CPU_DEVICES=4;
the checks hold for any number of devices)."""
import os
import subprocess
import sys

import numpy as np

import graft as gf
import graft.numpy as gnp
from graft import lax
from graft.sharding import Mesh, P


def test_devices_and_mesh():
    n = len(gf.devices())
    assert n >= 1 and gf.process_count() == 1 and gf.process_index() == 0
    m = Mesh(gf.devices(), ["data"])
    assert m.shape == (n,) and m.axis_names == ["data"] and "data" in repr(m)


def test_shard_map_blocks_and_collectives():
    n = len(gf.devices())
    mesh = Mesh(gf.devices(), ["data"])
    x = gnp.arange(2.0 * n)
    got = gf.shard_map(lambda b: b - lax.pmean(b, "data"), mesh, P("data"), P("data"))(x)
    blocks = np.asarray(x).reshape(n, 2)
    np.testing.assert_allclose(np.asarray(got), (blocks - blocks.mean(0)).reshape(-1))
    # a data-parallel loss: its gradient w.r.t. the replicated weights is the whole batch's
    w = gnp.asarray([1.0, -0.5, 2.0])
    data = gnp.arange(3.0 * 2 * n).reshape(2 * n, 3) / 10
    loss = gf.shard_map(lambda w, x: lax.pmean(gnp.mean((x @ w) ** 2), "data"), mesh, (P(), P("data")), P())
    want = gf.grad(lambda w: gnp.mean((data @ w) ** 2))(w)
    np.testing.assert_allclose(np.asarray(gf.grad(lambda w: loss(w, data))(w)), np.asarray(want), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(gf.jit(gf.grad(lambda w: loss(w, data)))(w)), np.asarray(want), rtol=1e-6)


def test_pmap():
    n = len(gf.devices())
    got = gf.pmap(lambda v: v * 2 + lax.axis_index("i"), "i")(gnp.ones((n, 2)))
    np.testing.assert_allclose(np.asarray(got), 2 + np.arange(n)[:, None] * np.ones((1, 2)))
    total = gf.pmap(lambda v: lax.psum(v, "i"), "i")(gnp.arange(float(n)))
    np.testing.assert_allclose(np.asarray(total), np.full(n, n * (n - 1) / 2))


def test_sharded_jit():
    """jit(in_shardings=, out_shardings=): a program for one device partitioned over the mesh."""
    from graft.sharding import NamedSharding, ShardedArray
    n = len(gf.devices())
    mesh = Mesh(gf.devices(), ["data"])
    batch, rep = NamedSharding(mesh, P("data")), NamedSharding(mesh, P())
    rng = np.random.RandomState(0)
    w, x = gnp.asarray(rng.randn(3, 2)), gnp.asarray(rng.randn(2 * n, 3))

    def loss(w, x):
        return gnp.mean(gnp.tanh(x @ w) ** 2)

    l, g = gf.jit(gf.value_and_grad(loss), in_shardings=(rep, batch), out_shardings=rep)(w, x)
    lr, gr = gf.value_and_grad(loss)(w, x)
    np.testing.assert_allclose(np.asarray(l), np.asarray(lr), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(g), np.asarray(gr), rtol=1e-12, atol=1e-14)
    # sharded arrays in, sharded arrays out (their shardings the default in-shardings)
    xs = gf.device_put(x, batch)
    assert isinstance(xs, ShardedArray) and xs.sharding.spec == ("data",) and len(xs.addressable_shards) == n
    y = gf.jit(lambda v: v * 2.0, in_shardings=None, out_shardings=batch)(xs)
    assert isinstance(y, ShardedArray) and y.sharding.spec == ("data",) and y.shape == (2 * n, 3)
    np.testing.assert_allclose(np.asarray(y), 2 * np.asarray(x))
    # a pytree of out_shardings, and a pinned intermediate
    f = gf.jit(lambda d: {"a": lax.with_sharding_constraint(d["a"] + 1.0, rep), "b": d["b"] * 3.0},
               in_shardings=batch, out_shardings={"a": rep, "b": batch})
    out = f({"a": x, "b": x})
    np.testing.assert_allclose(np.asarray(out["a"]), np.asarray(x) + 1)
    np.testing.assert_allclose(np.asarray(out["b"]), 3 * np.asarray(x))
    f({"a": x, "b": x})
    assert f._num_traces() == 1
    # the identity outside sharded jit
    np.testing.assert_allclose(np.asarray(lax.with_sharding_constraint(x, batch)), np.asarray(x))


def test_dimension_over_several_axes():
    """P(("data", "model")): one dimension over both axes of a 2-D mesh, the first named the major."""
    from graft.sharding import NamedSharding
    if len(gf.devices()) < 4:
        return  # needs a 2 x 2 mesh (ctest runs with GRAFT_CPU_DEVICES=4)
    mesh = Mesh(gf.devices()[:4], ["data", "model"], (2, 2))
    both = NamedSharding(mesh, P(("data", "model")))
    assert both.spec == (("data", "model"),) and "('data', 'model')" in repr(both)
    x = gnp.arange(16.0).reshape(8, 2)
    xs = gf.device_put(x, both)
    _, index, block = xs.addressable_shards[1]  # device (0, 1): block 1
    assert index == (slice(2, 4, 1), slice(0, 2, 1))
    np.testing.assert_allclose(np.asarray(block), np.asarray(x)[2:4])
    tag = gf.shard_map(lambda b: b * 0 + lax.axis_index("data") * 2 + lax.axis_index("model"), mesh,
                       P(("model", "data")), P(("model", "data")))(x)
    np.testing.assert_allclose(np.asarray(tag)[::2, 0], [0, 2, 1, 3])  # block m * 2 + d holds d * 2 + m
    w = gnp.asarray(np.random.RandomState(1).randn(2, 3))
    loss = lambda w, x: gnp.mean(gnp.tanh(x @ w) ** 2)
    g = gf.jit(gf.grad(loss), in_shardings=(NamedSharding(mesh, P()), both))(w, xs)
    np.testing.assert_allclose(np.asarray(g), np.asarray(gf.grad(loss)(w, x)), rtol=1e-6)


def test_sharded_jit_donation():
    # a fresh interpreter, as test_transforms.test_jit_donation (an earlier requires_grad_() would stage it)
    code = """
import numpy as np, graft as gf, graft.numpy as gnp
from graft.sharding import Mesh, NamedSharding, P
mesh = Mesh(gf.devices(), ["data"])
rows = NamedSharding(mesh, P("data"))
n = len(gf.devices())
step = gf.jit(lambda p, g: (p - 0.1 * g, gnp.sum(g)), in_shardings=rows, donate_argnums=0)
p = gnp.ones((8 * n, 32)) * 1.0
p2, s = step(p, gnp.ones((8 * n, 32)))
p3, _ = step(p2, gnp.ones((8 * n, 32)))
np.testing.assert_allclose(np.asarray(p3), 0.8)
assert float(s) == 8 * n * 32
for name, q in (("p", p), ("p2", p2)):
    try:
        np.asarray(q)
    except ValueError as e:
        print(name, "deleted:", e)
"""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "p deleted:" in r.stdout and "p2 deleted:" in r.stdout and "donat" in r.stdout, r.stdout


def test_sharded_jit_errors():
    from graft.sharding import NamedSharding
    n = len(gf.devices())
    mesh = Mesh(gf.devices(), ["data"])
    bad = gnp.ones((2 * n + 1, 3))
    if n > 1:
        try:
            gf.jit(lambda v: v, in_shardings=NamedSharding(mesh, P("data")))(bad)
            raise AssertionError("no error")
        except ValueError as e:
            assert "does not divide" in str(e) or "do not divide" in str(e), str(e)
    try:
        gf.jit(lambda v: v, in_shardings=(NamedSharding(mesh, P()),) * 2)(bad)
        raise AssertionError("no error")
    except ValueError as e:
        assert "2 entries for 1 arguments" in str(e), str(e)
