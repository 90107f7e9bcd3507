"""DLPack both ways with NumPy and PyTorch: the memory is shared, never copied (tested by writing
through one side and reading through the other)."""
import numpy as np
import pytest
import torch

import graft as gf
import graft.numpy as gnp


def test_graft_to_torch_and_numpy_shares_memory():
    x = gnp.asarray(np.arange(64, dtype=np.float32))
    t = torch.from_dlpack(x)
    t[3] = 100.0  # write through PyTorch's view ...
    assert float(x[3]) == 100.0  # ... and read it through graft's
    n = np.from_dlpack(x)
    assert n[3] == 100.0 and np.shares_memory(n, np.asarray(x))
    assert x.__dlpack_device__() == (1, 0)


def test_torch_and_numpy_to_graft_share_memory():
    tt = torch.arange(32, dtype=torch.float32)
    g = gf.from_dlpack(tt)
    tt[5] = -7.0
    assert float(g[5]) == -7.0 and g.dtype == np.float32
    a = np.arange(40.0)
    ga = gnp.from_dlpack(a)
    a[1] = 55.0
    assert float(ga[1]) == 55.0 and ga.dtype == np.float64
    # graft never writes into lent memory: a donated import is computed into new storage
    r = gf.jit(lambda p: p * 2, donate_argnums=0)(ga)
    assert float(r[1]) == 110.0 and a[1] == 55.0 and float(ga[1]) == 55.0


def test_dtypes_and_strided_tensors():
    for dt in (torch.float64, torch.int32, torch.int64, torch.uint8, torch.bfloat16, torch.float16):
        t = (torch.arange(6) % 3).to(dt)
        g = gf.from_dlpack(t)
        np.testing.assert_array_equal(np.asarray(g.astype("float32")), t.to(torch.float32).numpy())
    tr = torch.arange(12.0).reshape(3, 4).T  # not row-major: copied in the right order
    np.testing.assert_array_equal(np.asarray(gf.from_dlpack(tr)), tr.numpy())
    back = torch.from_dlpack(gnp.asarray([1.0, 2.0]).astype("bfloat16"))
    assert back.dtype == torch.bfloat16 and back.tolist() == [1.0, 2.0]


def test_complex_arrays_both_ways():
    z = np.array([1 + 2j, -3.5 + 0.25j, 0 - 1j], np.complex128)
    for dt in (np.complex64, np.complex128):
        g = gnp.asarray(z.astype(dt))
        t = torch.from_dlpack(g)
        assert t.dtype == (torch.complex64 if dt == np.complex64 else torch.complex128)
        np.testing.assert_array_equal(t.numpy(), z.astype(dt))
        np.testing.assert_array_equal(np.from_dlpack(g), z.astype(dt))
        back = gf.from_dlpack(torch.from_numpy(z.astype(dt)))
        assert str(back.dtype) == np.dtype(dt).name
        np.testing.assert_array_equal(np.asarray(back), z.astype(dt))


def test_errors():
    with pytest.raises(TypeError):
        gf.from_dlpack(object())
    with pytest.raises(gf.ConcretizationError):
        gf.jit(lambda v: torch.from_dlpack(v))(gnp.ones(3))
