"""JAX's 64-bit mode (graft.config's jax_enable_x64): off by default, Python numbers are weakly typed
float32 / int32 and no 64-bit value is made; on, the defaults are 64-bit. The rest of the suite runs with
it on (conftest.py), so each test here sets the mode it checks and restores the suite's after."""
import os
import subprocess
import sys

import numpy as np
import pytest

import graft
import graft.lax as lax
import graft.numpy as jnp
from graft.experimental import enable_x64, disable_x64


@pytest.fixture
def x32():
    with disable_x64():
        yield


@pytest.fixture
def x64():
    with enable_x64():
        yield


def test_seed_jaxpr_prints_f32(x32):
    assert str(graft.make_jaxpr(lax.mul)(2.0, 3.0)) == "{ lambda ; a:f32[] b:f32[]. let c:f32[] = mul a b in (c,) }"


def test_seed_jaxpr_prints_f64_with_x64(x64):
    assert str(graft.make_jaxpr(lax.mul)(2.0, 3.0)) == "{ lambda ; a:f64[] b:f64[]. let c:f64[] = mul a b in (c,) }"


def test_python_scalars_are_weak_32_bit(x32):
    f, i = jnp.asarray(2.5), jnp.asarray(3)
    assert (str(f.dtype), f.weak_type, float(f)) == ("float32", True, 2.5)
    assert (str(i.dtype), i.weak_type, int(i)) == ("int32", True, 3)
    assert str(jnp.asarray(True).dtype) == "bool"
    # weak: the array's type wins
    assert str((jnp.ones(2, "bfloat16") * 2.0).dtype) == "bfloat16"
    assert str((jnp.ones(2, "float16") + 1).dtype) == "float16"
    assert str((jnp.ones(2, "int8") + 3).dtype) == "int8"
    assert str((jnp.ones(2, "int32") * 1.5).dtype) == "float32"
    # a Python int beyond int32 still means its value
    assert float(jnp.ones((), "float32") * 2**40) == 2.0**40
    # gradients of functions of Python floats
    g = graft.grad(lambda x: x * x)(3.0)
    assert (str(g.dtype), float(g)) == ("float32", 6.0)


@pytest.mark.parametrize("src,want", [(np.float64, "float32"), (np.int64, "int32"), (np.uint64, "uint32"),
                                      (np.float32, "float32"), (np.float16, "float16"), (np.int8, "int8"),
                                      (np.uint16, "uint16"), (np.bool_, "bool")])
def test_numpy_arrays_arrive_canonical(x32, src, want):
    a = np.arange(6).reshape(2, 3).astype(src)
    x = jnp.asarray(a)
    assert str(x.dtype) == want
    np.testing.assert_array_equal(np.asarray(x), a.astype(want))
    assert str(jnp.asarray(src(1)).dtype) == want  # NumPy scalars too
    assert str(jnp.asarray([[1, 2]], dtype=src).dtype) == want


@pytest.mark.parametrize("src,want32,want64", [(np.float64, "float32", "float64"), (np.int64, "int32", "int64"),
                                               (np.uint64, "uint32", "uint64")])
def test_numpy_arrays_keep_64_bits_with_x64(x64, src, want32, want64):
    assert str(jnp.asarray(np.ones(3, src)).dtype) == want64


def test_requested_64_bit_dtypes_are_32_bit(x32):
    x = jnp.arange(3)
    for d in (jnp.float64, "float64", "f64", float, np.dtype("float64")):
        assert str(x.astype(d).dtype) == "float32", d
        assert str(jnp.zeros(2, dtype=d).dtype) == "float32", d
    for d in (jnp.int64, "int64", int):
        assert str(jnp.ones(2, dtype=d).dtype) == "int32", d
    assert str(jnp.asarray([1, 2], dtype=jnp.uint64).dtype) == "uint32"
    assert str(graft.random.normal(graft.random.PRNGKey(0), (2,), jnp.float64).dtype) == "float32"


def _defaults():
    key = graft.random.PRNGKey(0)
    return {
        "array(float)": jnp.array([1.0, 2.0]).dtype, "array(int)": jnp.array([1, 2]).dtype,
        "zeros": jnp.zeros(3).dtype, "ones": jnp.ones(3).dtype, "eye": jnp.eye(2).dtype,
        "linspace": jnp.linspace(0, 1, 3).dtype, "identity": jnp.identity(2).dtype,
        "arange(int)": jnp.arange(4).dtype, "arange(float)": jnp.arange(0.0, 1.0, 0.5).dtype,
        "full(int)": jnp.full((2,), 1).dtype, "full(float)": jnp.full((2,), 1.5).dtype,
        "normal": graft.random.normal(key, (2,)).dtype, "uniform": graft.random.uniform(key, (2,)).dtype,
        "randint": graft.random.randint(key, (2,), 0, 5).dtype, "gamma": graft.random.gamma(key, 2.0, (2,)).dtype,
        "poisson": graft.random.poisson(key, 3.0, (2,)).dtype,
        "one_hot": graft.nn.one_hot(jnp.array([0, 1]), 3).dtype,
        "glorot": graft.nn.initializers.glorot_normal()(key, (3, 4)).dtype,
    }


def test_default_dtypes_are_32_bit(x32):
    d = {k: str(v) for k, v in _defaults().items()}
    assert d == {k: "int32" if k in ("array(int)", "arange(int)", "full(int)", "randint", "poisson") else "float32"
                 for k in d}


def test_default_dtypes_are_64_bit_with_x64(x64):
    d = {k: str(v) for k, v in _defaults().items()}
    assert d == {k: "int64" if k in ("array(int)", "arange(int)", "full(int)", "randint", "poisson") else "float64"
                 for k in d}


def test_explicit_32_bit_stays_32_bit_with_x64(x64):
    assert str(jnp.zeros(2, jnp.float32).dtype) == "float32"
    assert str((jnp.ones(2, jnp.float32) * 2.0).dtype) == "float32"  # the scalar is weak
    assert str((jnp.ones(2, jnp.int32) + 2).dtype) == "int32"


def _promotions():
    i = jnp.array([1, 2], jnp.int32)
    return {"sin(i32)": jnp.sin(i), "i32 / i32": i / i, "mean(i32)": jnp.mean(i), "i32 * 1.5": i * 1.5,
            "sum(i32)": jnp.sum(i), "argmax": jnp.argmax(i), "sqrt(i32)": jnp.sqrt(i), "log1p(i32)": jnp.log1p(i)}


@pytest.mark.parametrize("mode,fl,it", [("x32", "float32", "int32"), ("x64", "float64", "int64")])
def test_integers_promote_to_the_modes_default_dtypes(mode, fl, it, request):
    # JAX's result_type: an int meeting a weak float, or an op that needs floating point, takes the default
    # float of the mode; integer sums and argmax the default int
    request.getfixturevalue(mode)
    d = {k: str(v.dtype) for k, v in _promotions().items()}
    assert d == {k: it if k in ("sum(i32)", "argmax") else fl for k in d}
    # and jit traces them the same way, in either mode
    assert str(graft.jit(lambda v: jnp.sin(v))(jnp.array([1, 2], jnp.int32)).dtype) == fl


def test_switching_retraces_jitted_functions():
    # the same argument types, two modes: the constant made inside differs, so the trace must too
    f = graft.jit(lambda x: x + jnp.zeros(2))
    g = graft.jit(lambda x, *, k=1: x + jnp.zeros(2) * k)  # the general (keyword) path
    x = jnp.ones(2, jnp.float32)
    for _ in range(2):
        with disable_x64():
            assert str(f(x).dtype) == "float32"
            assert str(g(x, k=2).dtype) == "float32"
        with enable_x64():
            assert str(f(x).dtype) == "float64"
            assert str(g(x, k=2).dtype) == "float64"


def test_config_update_and_read():
    prev = graft.config.jax_enable_x64
    try:
        graft.config.update("jax_enable_x64", False)
        assert graft.config.read("jax_enable_x64") is False and graft.config.x64_enabled is False
        assert str(jnp.asarray(1.0).dtype) == "float32"
        graft.config.update("jax_enable_x64", True)
        assert graft.config.jax_enable_x64 is True
        assert str(jnp.asarray(1.0).dtype) == "float64"
    finally:
        graft.config.update("jax_enable_x64", prev)
    assert set(graft.config.values()) == {"jax_enable_x64", "jax_debug_nans", "jax_debug_infs", "jax_disable_jit",
                                          "jax_threefry_partitionable"}
    with pytest.raises(AttributeError, match="jax_enable_x64"):
        graft.config.update("jax_enable_x46", True)
    with pytest.raises(AttributeError):
        graft.config.jax_no_such_option


def test_config_debug_nans_and_disable_jit():
    graft.config.update("jax_debug_nans", True)
    try:
        with pytest.raises(FloatingPointError):
            jnp.log(jnp.asarray(-1.0))
    finally:
        graft.config.update("jax_debug_nans", False)
    assert np.isnan(float(jnp.log(jnp.asarray(-1.0))))
    seen = []
    f = graft.jit(lambda x: seen.append(type(x).__name__) or x * 2)
    graft.config.update("jax_disable_jit", True)
    try:
        assert float(f(jnp.asarray(2.0))) == 4.0
        assert graft.config.jax_disable_jit
    finally:
        graft.config.update("jax_disable_jit", False)
    assert float(f(jnp.asarray(2.0))) == 4.0


@pytest.mark.parametrize("env,want", [({}, "float32"), ({"GRAFT_ENABLE_X64": "1"}, "float64"),
                                      ({"JAX_ENABLE_X64": "1"}, "float64"), ({"JAX_ENABLE_X64": "0"}, "float32")])
def test_environment_variables(env, want):
    base = {k: v for k, v in os.environ.items() if k not in ("GRAFT_ENABLE_X64", "JAX_ENABLE_X64")}
    base.setdefault("PYTHONPATH", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "build",
                                                               "python")))
    out = subprocess.run([sys.executable, "-c", "import graft, graft.numpy as jnp; print(jnp.asarray(1.0).dtype, "
                          "graft.config.jax_enable_x64)"], env={**base, **env}, capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == [want, str(want == "float64")]
