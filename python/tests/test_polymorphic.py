"""graft.jit(polymorphic=...): one compile serves every batch size of a bucket, with the exact
program's results (means over the batch see only its rows)."""
import numpy as np
import pytest

import graft
import graft.numpy as gnp


def loss_and_grads(params, x, y):
    def loss(p):
        w, b = p
        logits = gnp.dot(x, w) + b
        return graft.nn.cross_entropy(logits, y)

    return graft.value_and_grad(loss)(params)


def test_training_step_compiles_once_for_every_batch_size():
    rng = np.random.default_rng(0)
    params = [gnp.asarray(rng.standard_normal((6, 3)).astype(np.float32)), gnp.asarray(np.zeros(3, np.float32))]
    x = rng.standard_normal((32, 6)).astype(np.float32)
    y = rng.integers(0, 3, 32).astype(np.int32)
    poly = graft.jit(loss_and_grads, polymorphic=["", "b, ...", "b"])
    exact = graft.jit(loss_and_grads)
    for n in [32, 20, 7, 32, 1 + 1]:
        la, (gw, gb) = poly(params, gnp.asarray(x[:n]), gnp.asarray(y[:n]))
        lb, (hw, hb) = exact(params, gnp.asarray(x[:n]), gnp.asarray(y[:n]))
        np.testing.assert_allclose(np.asarray(la), np.asarray(lb), rtol=1e-5)
        np.testing.assert_allclose(np.asarray(gw), np.asarray(hw), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(np.asarray(gb), np.asarray(hb), rtol=1e-5, atol=1e-6)
    assert poly._num_compiles() == 1
    assert exact._num_compiles() == 4


def test_batch_outputs_are_sliced_and_buckets_choose_the_program():
    f = graft.jit(lambda x: (x * 2.0, gnp.sum(x, axis=0)), polymorphic="b, ...", buckets=[4, 16])
    x = np.arange(30, dtype=np.float32).reshape(10, 3)
    for n in [3, 10, 4, 9]:
        a, s = f(gnp.asarray(x[:n]))
        np.testing.assert_array_equal(np.asarray(a), x[:n] * 2)
        np.testing.assert_allclose(np.asarray(s), x[:n].sum(0))
    assert f._num_compiles() == 2


def test_mismatched_batches_are_a_clear_error():
    f = graft.jit(lambda x, y: x + y, polymorphic=["b", "b"])
    with pytest.raises(graft.ShapeError, match="the batch dimension is 4"):
        f(gnp.asarray(np.zeros(4, np.float32)), gnp.asarray(np.zeros(5, np.float32)))
    with pytest.raises(ValueError, match="names no batch dimension"):
        graft.jit(lambda x: x, polymorphic=["3"])(gnp.asarray(np.zeros(3, np.float32)))
