"""Complex arrays from Python: NumPy in and out, JAX's promotion and weak complex scalars, the parts,
grad with JAX's conventions (and holomorphic=True), jit and vmap, DLPack and .npy."""
import numpy as np
import pytest

import graft
import graft.lax as lax
import graft.numpy as jnp


def _mode(on):
    prev = graft.config.jax_enable_x64
    graft.config.update("jax_enable_x64", on)
    yield
    graft.config.update("jax_enable_x64", prev)


@pytest.fixture
def x64():
    yield from _mode(True)


@pytest.fixture
def x32():  # a default session: JAX's 32-bit mode
    yield from _mode(False)


def rand_c(rng, shape, dtype=np.complex64):
    return (rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape)).astype(dtype)


def test_numpy_round_trip_and_dtypes(x32):
    z = np.array([1 + 2j, 3 - 0.5j], np.complex64)
    a = jnp.asarray(z)
    assert str(a.dtype) == "complex64"
    np.testing.assert_array_equal(np.asarray(a), z)
    # without x64, complex128 arrives as complex64 (as float64 arrives as float32)
    assert str(jnp.asarray(z.astype(np.complex128)).dtype) == "complex64"
    assert jnp.complex64 is np.complex64 and jnp.complex128 is np.complex128
    assert "1.+2.j" in repr(a)
    assert jnp.iscomplexobj(a) and not jnp.isrealobj(a) and jnp.isrealobj(jnp.ones(2))


def test_promotion_and_weak_complex_scalars(x32):
    x = jnp.ones(3, jnp.float32)
    assert str((x + 1j).dtype) == "complex64"  # a Python complex is weak
    assert str((jnp.asarray(np.ones(2, np.complex64)) * 2.0).dtype) == "complex64"
    assert str((jnp.arange(3) + 1j).dtype) == "complex64"
    assert jnp.promote_types(jnp.float32, jnp.complex64) == np.complex64
    np.testing.assert_allclose(np.asarray(x * (2 - 1j)), np.full(3, 2 - 1j))


def test_against_numpy():
    rng = np.random.default_rng(0)
    z = rand_c(rng, (3, 4))
    w = rand_c(rng, (4, 5))
    a, b = jnp.asarray(z), jnp.asarray(w)
    for g, n in [(jnp.exp, np.exp), (jnp.log, np.log), (jnp.sqrt, np.sqrt), (jnp.sin, np.sin), (jnp.cos, np.cos),
                 (jnp.tanh, np.tanh), (jnp.abs, np.abs), (jnp.real, np.real), (jnp.imag, np.imag),
                 (jnp.conj, np.conj), (jnp.angle, np.angle), (jnp.square, np.square), (jnp.negative, np.negative)]:
        np.testing.assert_allclose(np.asarray(g(a)), n(z), rtol=2e-6, atol=2e-6, err_msg=g.__name__)
    np.testing.assert_allclose(np.asarray(a @ b), z @ w, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(jnp.sum(a, axis=0)), z.sum(0), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.asarray(jnp.mean(a)), z.mean(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.asarray(a / (a + 2)), z / (z + 2), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.asarray(a ** 3), z ** 3, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(np.asarray(a == a), np.ones((3, 4), bool))
    np.testing.assert_allclose(np.asarray(lax.complex(jnp.ones(2), jnp.full(2, 2.0))), [1 + 2j, 1 + 2j])
    np.testing.assert_allclose(np.asarray(lax.conj(jnp.ones(2))), [1 + 0j, 1 + 0j])
    assert str(lax.real(a).dtype) == "float32"


def test_grad_conventions(x64):
    z0 = 3 + 4j
    np.testing.assert_allclose(complex(np.asarray(graft.grad(lambda z: jnp.abs(z) ** 2)(z0))), 6 - 8j)
    np.testing.assert_allclose(complex(np.asarray(graft.grad(lambda z: jnp.imag(z))(z0))), -1j)
    # holomorphic=True: the complex derivative of z^2 is 2z
    np.testing.assert_allclose(complex(np.asarray(graft.grad(lambda z: z * z, holomorphic=True)(z0))), 6 + 8j)
    with pytest.raises(TypeError, match="holomorphic"):
        graft.grad(lambda z: z * z)(z0)
    with pytest.raises(TypeError, match="complex"):
        graft.grad(lambda x: x * x, holomorphic=True)(2.0)
    # jacrev / jacfwd with holomorphic=True
    z = jnp.asarray(np.array([1 + 1j, 2 - 1j]))
    j = np.asarray(graft.jacrev(lambda v: v * v, holomorphic=True)(z))
    np.testing.assert_allclose(j, np.diag(2 * np.array([1 + 1j, 2 - 1j])), atol=1e-12)
    j = np.asarray(graft.jacfwd(lambda v: jnp.sin(v), holomorphic=True)(z))
    np.testing.assert_allclose(j, np.diag(np.cos(np.array([1 + 1j, 2 - 1j]))), atol=1e-12)


def test_jit_vmap_and_files(tmp_path):
    rng = np.random.default_rng(1)
    z = jnp.asarray(rand_c(rng, (4, 3)))

    def f(v):
        return jnp.exp(v) * jnp.conj(v) + jnp.abs(v)

    np.testing.assert_allclose(np.asarray(graft.jit(f)(z)), np.asarray(f(z)), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.asarray(graft.vmap(f)(z)), np.stack([np.asarray(f(z[i])) for i in range(4)]),
                               rtol=1e-6, atol=1e-6)
    assert "c64[4,3]" in str(graft.make_jaxpr(f)(z))
    p = tmp_path / "z.npy"
    np.save(p, np.asarray(z))
    np.testing.assert_array_equal(np.asarray(graft.io.load_npy(str(p))), np.asarray(z))


def test_errors_name_the_operation():
    a = jnp.asarray(np.array([1 + 1j]))
    with pytest.raises(TypeError, match="lt"):
        lax.lt(a, a)
    with pytest.raises(TypeError, match="floor"):
        lax.floor(a)


def test_inverse_functions_and_log1p_expm1_match_numpy(x64):
    rng = np.random.default_rng(5)
    z = rand_c(rng, (4, 3), np.complex128) * 0.7
    for name in ["arcsin", "arccos", "arctan", "arcsinh", "arctanh", "log1p", "expm1"]:
        np.testing.assert_allclose(np.asarray(getattr(jnp, name)(z)), getattr(np, name)(z), rtol=1e-13, atol=1e-14,
                                   err_msg=name)
    w = z + 1.5
    np.testing.assert_allclose(np.asarray(jnp.arccosh(w)), np.arccosh(w), rtol=1e-13)
    small = np.array([1e-12 - 2e-12j])
    np.testing.assert_allclose(np.asarray(jnp.log1p(small)), small - small ** 2 / 2, rtol=1e-15)
