"""NumPy's discrete Fourier transforms on graft arrays (jax.numpy.fft), importable as `graft.numpy.fft`.

Every transform is differentiable (JAX's conventions for complex cotangents), works under jit and vmap, and
batches over the axes it does not transform. Inputs promote as in JAX (integers to the default float, real to
complex). `norm` is NumPy's: None or "backward", "ortho", "forward". The CPU kernels are FFTW's. C++:
graft/ops/fft.h."""
from . import _graft

fft, ifft, rfft, irfft, hfft, ihfft = (_graft.fft_fft, _graft.fft_ifft, _graft.fft_rfft, _graft.fft_irfft,
                                       _graft.fft_hfft, _graft.fft_ihfft)
fftn, ifftn, rfftn, irfftn = _graft.fft_fftn, _graft.fft_ifftn, _graft.fft_rfftn, _graft.fft_irfftn
fftshift, ifftshift = _graft.fft_fftshift, _graft.fft_ifftshift

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fftn", "ifftn", "rfftn", "irfftn", "fft2", "ifft2",
           "rfft2", "irfft2", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]


def fft2(a, s=None, axes=(-2, -1), norm=None):
    return fftn(a, s, axes, norm)


def ifft2(a, s=None, axes=(-2, -1), norm=None):
    return ifftn(a, s, axes, norm)


def rfft2(a, s=None, axes=(-2, -1), norm=None):
    return rfftn(a, s, axes, norm)


def irfft2(a, s=None, axes=(-2, -1), norm=None):
    return irfftn(a, s, axes, norm)


def fftfreq(n, d=1.0, *, dtype=None, device=None):
    """[0, 1, ..., -(n // 2), ..., -1] / (d * n): the sample frequencies of an n-point transform."""
    return _placed(_graft.fft_fftfreq(n, d, dtype), device)


def rfftfreq(n, d=1.0, *, dtype=None, device=None):
    """[0, 1, ..., n // 2] / (d * n): the frequencies of rfft's terms."""
    return _placed(_graft.fft_rfftfreq(n, d, dtype), device)


def _placed(x, device):
    if device is None:
        return x
    from . import device_put
    return device_put(x, device)
