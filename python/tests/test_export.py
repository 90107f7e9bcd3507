"""graft.export: programs saved, loaded (also in a fresh interpreter) and called under grad and vmap;
parse_jaxpr; bad files."""
import os
import subprocess
import sys

import numpy as np
import pytest

import graft
import graft.numpy as gnp


def mlp(params, x):
    w1, b1, w2, b2 = params
    return gnp.dot(graft.nn.relu(gnp.dot(x, w1) + b1), w2) + b2


def make_params():
    rng = np.random.default_rng(0)
    return [graft.numpy.asarray(rng.standard_normal(s).astype(np.float32) * 0.1)
            for s in [(20, 16), (16,), (16, 3), (3,)]]


def test_export_save_load_call_bit_for_bit(tmp_path):
    params = make_params()
    x = graft.numpy.asarray(np.random.default_rng(1).standard_normal((5, 20)).astype(np.float32))
    exp = graft.export.export(graft.jit(lambda a: mlp(params, a)), name="mlp", in_names=["x"], out_names=["y"])(x)
    assert exp.in_types == ["f32[5,20]"] and exp.out_names == ["y"]
    path = tmp_path / "mlp.graft"
    exp.save(path)
    m = graft.export.load(path)
    want = np.asarray(graft.jit(lambda a: mlp(params, a))(x))
    np.testing.assert_array_equal(np.asarray(m(x)), want)
    # derivatives and batching come from the rules of the loaded program
    g = graft.grad(lambda a: gnp.sum(m(a) ** 2))(x)
    g0 = graft.grad(lambda a: gnp.sum(mlp(params, a) ** 2))(x)
    np.testing.assert_allclose(np.asarray(g), np.asarray(g0), rtol=1e-5, atol=1e-6)
    xs = gnp.stack([x, x * 2.0])
    v = graft.vmap(m)(xs)
    np.testing.assert_allclose(np.asarray(v[1]), np.asarray(mlp(params, x * 2.0)), rtol=1e-5, atol=1e-6)
    # in another interpreter, without mlp's code
    code = ("import sys, numpy as np, graft; m = graft.export.load(sys.argv[1]); "
            "np.save(sys.argv[2], np.asarray(m(graft.numpy.asarray(np.load(sys.argv[3])))))")
    np.save(tmp_path / "x.npy", np.asarray(x))
    subprocess.run([sys.executable, "-c", code, str(path), str(tmp_path / "y.npy"), str(tmp_path / "x.npy")],
                   check=True, env=dict(os.environ))
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), want)


def test_several_outputs_and_serialize():
    exp = graft.export.export(lambda a, b: (a * b, a + b))(gnp.ones(3), gnp.ones(3))
    m = graft.export.deserialize(exp.serialize())
    p, s = m(gnp.arange(3.0), gnp.ones(3))
    np.testing.assert_array_equal(np.asarray(p), [0, 1, 2])
    np.testing.assert_array_equal(np.asarray(s), [1, 2, 3])
    assert "mul" in str(m.jaxpr)
    with pytest.raises(TypeError, match="input 1"):
        m(gnp.ones(3), gnp.ones(4))


def test_parse_jaxpr_round_trip_and_errors():
    j = graft.make_jaxpr(graft.grad(lambda x: gnp.sum(gnp.tanh(x) * 2.0)))(gnp.ones((2, 3)))
    assert str(graft.export.parse_jaxpr(str(j))) == str(j)
    with pytest.raises(ValueError, match="line 1, column"):
        graft.export.parse_jaxpr("{ lambda ; a:f32[3]. let b:f32[3] = nope a in (b,) }")


def test_bad_files(tmp_path):
    (tmp_path / "bad.graft").write_bytes(b"not a file")
    with pytest.raises(OSError, match="bad.graft"):  # graft::IOError
        graft.export.load(tmp_path / "bad.graft")
