"""graft.numpy.fft and graft.lax.fft against numpy.fft: every function with n / s, axes and norm, JAX's
promotion, derivatives against finite differences, jit against eager, vmap against a loop, errors."""
import numpy as np
import pytest

import graft
import graft.lax as lax
import graft.numpy as jnp

NORMS = [None, "backward", "ortho", "forward"]


def rand(rng, shape, complex_=False):
    x = rng.standard_normal(shape)
    return x + 1j * rng.standard_normal(shape) if complex_ else x


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"])
def test_one_axis_matches_numpy(name, norm):
    rng = np.random.default_rng(0)
    complex_in = name in ("fft", "ifft", "irfft", "hfft")
    x = rand(rng, (3, 7, 6), complex_in)
    ours, ref = getattr(jnp.fft, name), getattr(np.fft, name)
    for n in (None, 4, 9):
        for axis in (-1, 1, 0):
            if name in ("irfft", "hfft") and n is None and x.shape[axis] == 1:
                continue
            got = np.asarray(ours(x, n=n, axis=axis, norm=norm))
            np.testing.assert_allclose(got, ref(x, n=n, axis=axis, norm=norm), rtol=1e-12, atol=1e-12,
                                       err_msg=f"{name} n={n} axis={axis}")


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", ["fftn", "ifftn", "rfftn", "irfftn", "fft2", "ifft2", "rfft2", "irfft2"])
def test_many_axes_match_numpy(name, norm):
    rng = np.random.default_rng(1)
    x = rand(rng, (4, 5, 6), name not in ("rfftn", "rfft2"))
    ours, ref = getattr(jnp.fft, name), getattr(np.fft, name)
    cases = [dict(), dict(axes=(0, 2)), dict(s=(3, 8), axes=(2, 0)), dict(s=(5, 4))]
    if name.endswith("2"):
        cases = [dict(), dict(axes=(0, 2)), dict(s=(3, 8))]
    for kw in cases:
        np.testing.assert_allclose(np.asarray(ours(x, norm=norm, **kw)), ref(x, norm=norm, **kw), rtol=1e-11,
                                   atol=1e-11, err_msg=f"{name} {kw}")


def test_frequencies_and_shifts():
    for n, d in [(5, 0.5), (6, 1.0), (1, 2.0)]:
        np.testing.assert_allclose(np.asarray(jnp.fft.fftfreq(n, d)), np.fft.fftfreq(n, d), rtol=1e-15)
        np.testing.assert_allclose(np.asarray(jnp.fft.rfftfreq(n, d=d)), np.fft.rfftfreq(n, d), rtol=1e-15)
    assert str(jnp.fft.fftfreq(4, dtype=jnp.float32).dtype) == "float32"
    x = np.arange(30.0).reshape(5, 6)
    for axes in (None, 0, 1, (0, 1)):
        np.testing.assert_array_equal(np.asarray(jnp.fft.fftshift(x, axes)), np.fft.fftshift(x, axes))
        np.testing.assert_array_equal(np.asarray(jnp.fft.ifftshift(x, axes=axes)), np.fft.ifftshift(x, axes))


def test_promotion_follows_jax():
    prev = graft.config.jax_enable_x64
    try:
        graft.config.update("jax_enable_x64", False)
        assert str(jnp.fft.fft(np.arange(4)).dtype) == "complex64"
        assert str(jnp.fft.fft(np.ones(4, np.float64)).dtype) == "complex64"
        assert str(jnp.fft.rfft(jnp.ones(4, jnp.float32)).dtype) == "complex64"
        assert str(jnp.fft.irfft(jnp.ones(3, jnp.complex64)).dtype) == "float32"
        graft.config.update("jax_enable_x64", True)
        assert str(jnp.fft.fft(np.arange(4)).dtype) == "complex128"
        assert str(jnp.fft.fft(jnp.ones(4, jnp.float32)).dtype) == "complex64"
    finally:
        graft.config.update("jax_enable_x64", prev)


def test_lax_fft():
    rng = np.random.default_rng(2)
    z = rand(rng, (2, 3, 4), True)
    np.testing.assert_allclose(np.asarray(lax.fft(z, lax.FftType.FFT, (3, 4))), np.fft.fftn(z, axes=(1, 2)), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(lax.fft(z, "ifft", (4,))), np.fft.ifft(z), rtol=1e-12)
    r = rng.standard_normal((3, 8))
    np.testing.assert_allclose(np.asarray(lax.fft(r, "RFFT", (8,))), np.fft.rfft(r), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(lax.fft(np.fft.rfft(r), lax.FftType.IRFFT, (8,))), r, rtol=1e-12, atol=1e-12)
    assert lax.fft(r, "fft", ()).shape == (3, 8)
    with pytest.raises(ValueError, match="only real valued"):
        lax.fft(z, "rfft", (4,))
    with pytest.raises(ValueError, match="Unknown FFT type"):
        lax.fft(z, "dct", (4,))
    text = str(graft.make_jaxpr(lambda v: lax.fft(v, "fft", (4,)))(z))
    assert "fft[fft_lengths=(4,) fft_type=0]" in text, text


def _fd_grad(f, x, h=1e-6):
    """df/dx - i df/dy per element (JAX's convention for complex inputs) by central differences."""
    g = np.zeros(x.shape, dtype=x.dtype)
    for idx in np.ndindex(*x.shape):
        for step in ([1.0, 1j] if np.iscomplexobj(x) else [1.0]):
            e = np.zeros(x.shape, dtype=x.dtype)
            e[idx] = h * step
            d = (float(f(x + e)) - float(f(x - e))) / (2 * h)
            g[idx] += d if step == 1.0 else -1j * d
    return g


def test_gradients_match_finite_differences():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 6))
    w = rand(rng, (2, 4), True)

    def f(v):
        return jnp.sum(jnp.real(jnp.fft.rfft(v) * w)) + jnp.sum(jnp.abs(jnp.fft.fft2(v, norm="ortho")) ** 2)

    np.testing.assert_allclose(np.asarray(graft.grad(f)(x)), _fd_grad(f, x), rtol=1e-6, atol=1e-6)
    z = rand(rng, (3, 4), True)
    u = rng.standard_normal((3, 5))

    def g(s):
        return jnp.sum(jnp.fft.irfftn(s, s=(3, 5)) * u) + jnp.sum(jnp.fft.hfft(s * s, n=7) ** 2)

    np.testing.assert_allclose(np.asarray(graft.grad(g)(z)), _fd_grad(g, z), rtol=1e-6, atol=1e-6)


def test_jit_and_vmap():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 16)).astype(np.float32)

    def lowpass(v):
        spec = jnp.fft.rfft(v)
        keep = jnp.fft.rfftfreq(16) < 0.25
        return jnp.fft.irfft(jnp.where(keep, spec, 0), n=16)

    np.testing.assert_allclose(np.asarray(graft.jit(lowpass)(x)), np.asarray(lowpass(x)), rtol=1e-6, atol=1e-6)
    z = rand(rng, (3, 4, 5), True)
    batched = graft.vmap(lambda v: jnp.fft.fft2(v), in_axes=2)(z)
    for i in range(5):
        np.testing.assert_allclose(np.asarray(batched[i]), np.fft.fft2(z[:, :, i]), rtol=1e-12, atol=1e-12)


def test_errors():
    with pytest.raises(TypeError, match="real input"):
        jnp.fft.rfft(np.ones(4, np.complex128))
    with pytest.raises(ValueError, match="invalid norm"):
        jnp.fft.fft(np.ones(4), norm="sideways")
    with pytest.raises(ValueError, match="repeated axis"):
        jnp.fft.fftn(np.ones((2, 2)), axes=(0, 0))
    with pytest.raises(ValueError, match="data points"):
        jnp.fft.irfft(np.ones(1, np.complex128))
