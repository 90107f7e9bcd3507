"""Arrays from Python: NumPy interop, operators, weak typing, indexing, .at[] updates, printing."""
import numpy as np
import pytest

import graft as gf
import graft.numpy as gnp


def test_from_and_to_numpy():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = gnp.asarray(a)
    assert x.shape == (3, 4) and x.dtype == np.float32 and x.ndim == 2 and x.size == 12
    np.testing.assert_array_equal(np.asarray(x), a)
    # the NumPy view shares graft's storage (read-only: graft's arrays are immutable)
    v = np.asarray(x)
    assert not v.flags.writeable
    assert np.shares_memory(v, np.asarray(x))
    for dt in (np.float64, np.int32, np.int64, np.uint8, np.bool_, np.float16):
        b = np.ones((2, 3), dtype=dt)
        assert gnp.asarray(b).dtype == dt
        np.testing.assert_array_equal(np.asarray(gnp.asarray(b)), b)
    # lists and scalars
    np.testing.assert_array_equal(np.asarray(gnp.array([[1, 2], [3, 4]])), [[1, 2], [3, 4]])
    assert gnp.asarray([1.5, 2.5]).dtype == np.float64
    assert gnp.asarray([1.5], dtype=gnp.float32).dtype == np.float32
    # bfloat16 (NumPy has none): converts to float32 on the way out
    h = gnp.asarray([1.0, 2.0]).astype("bfloat16")
    assert h.dtype == "bfloat16"
    np.testing.assert_array_equal(np.asarray(h), np.array([1.0, 2.0], np.float32))


def test_operators_match_numpy():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((3, 4)).astype(np.float32) + 3
    x, y = gnp.asarray(a), gnp.asarray(b)
    cases = [(x + y, a + b), (x - y, a - b), (x * y, a * b), (x / y, a / b), (x ** 2, a ** 2), (-x, -a),
             (abs(x), np.abs(a)), (x @ y.T, a @ b.T), (2 - x, 2 - a), (1 / y, 1 / b), (x > 0, a > 0),
             (x == x, a == a)]
    for got, want in cases:
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-6)
    i = gnp.arange(10)
    np.testing.assert_array_equal(np.asarray(i // 3), np.arange(10) // 3)
    np.testing.assert_array_equal(np.asarray(i % 3), np.arange(10) % 3)
    np.testing.assert_array_equal(np.asarray((i > 2) & (i < 7)), (np.arange(10) > 2) & (np.arange(10) < 7))


def test_python_scalars_are_weakly_typed():
    with gf.experimental.disable_x64():  # the default mode's types
        _python_scalars_are_weakly_typed()


def _python_scalars_are_weakly_typed():
    x = gnp.ones(3, dtype=gnp.float16)
    assert (x * 2.0).dtype == np.float16
    assert (2 * x).dtype == np.float16
    assert (gnp.arange(3) + 1).dtype == np.int32
    assert (gnp.arange(3) + 1.5).dtype == np.float32  # an int array meets a weak float


def test_indexing_and_updates():
    a = np.arange(24).reshape(2, 3, 4)
    x = gnp.asarray(a)
    for idx in [1, (1, 2), (slice(None), 1), (Ellipsis, 2), (None, 0), (slice(1, None), None),
                (0, slice(None, None, -1)), (1, [0, 2]), (Ellipsis, slice(1, 3))]:
        np.testing.assert_array_equal(np.asarray(x[idx]), a[idx], err_msg=str(idx))
    np.testing.assert_array_equal(np.asarray(x[x > 20]), a[a > 20])
    y = x.at[0, 1].set(-1)
    b = a.copy()
    b[0, 1] = -1
    np.testing.assert_array_equal(np.asarray(y), b)
    np.testing.assert_array_equal(np.asarray(x), a)  # unchanged
    z = gnp.zeros(5).at[gnp.array([0, 0, 3])].add(1.0)
    np.testing.assert_array_equal(np.asarray(z), [2, 0, 0, 1, 0])


def test_methods_and_reductions():
    a = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    x = gnp.asarray(a)
    assert float(x.sum()) == a.sum()
    np.testing.assert_allclose(np.asarray(x.mean(axis=0)), a.mean(axis=0))
    np.testing.assert_allclose(np.asarray(gnp.max(x, axis=1, keepdims=True)), a.max(axis=1, keepdims=True))
    assert int(x.argmax()) == 11
    np.testing.assert_allclose(np.asarray(x.T), a.T)
    np.testing.assert_allclose(np.asarray(x.reshape(4, 3)), a.reshape(4, 3))
    np.testing.assert_allclose(np.asarray(x.reshape((2, 6))), a.reshape(2, 6))
    np.testing.assert_allclose(np.asarray(gnp.concatenate([x, x], axis=1)), np.concatenate([a, a], 1))
    np.testing.assert_allclose(np.asarray(gnp.einsum("ij,kj->ik", x, x)), a @ a.T, rtol=1e-6)
    assert x.tolist() == a.tolist()
    assert len(x) == 3
    assert [float(v) for v in gnp.split(gnp.arange(6.0), 3)[1]] == [2.0, 3.0]


def test_repr_like_jax():
    assert repr(gnp.arange(3, dtype=gnp.int32)) == "Array([0, 1, 2], dtype=int32)"
    assert repr(gnp.asarray([1.0, 2.0], dtype=gnp.float32)) == "Array([1., 2.], dtype=float32)"
    assert "weak_type=True" in repr(gnp.asarray(2.0))


def test_errors_are_python_exceptions():
    with pytest.raises(gf.ShapeError, match="add"):
        gnp.ones(3) + gnp.ones(4)
    with pytest.raises(ValueError):
        gnp.ones(3).reshape(4)
    with pytest.raises(TypeError):
        gnp.asarray(object())
    with pytest.raises(TypeError):
        hash(gnp.ones(2))
