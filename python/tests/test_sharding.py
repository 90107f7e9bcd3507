"""shard_map and pmap from Python over this process's devices (ctest runs with GRAFT_CPU_DEVICES=4;
the checks hold for any number of devices)."""
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
