"""NumPy's linear algebra on graft arrays (jax.numpy.linalg), importable as `graft.numpy.linalg`.

Every function is differentiable where JAX's is (eigh's and svd's vectors where the values are distinct;
svd with full_matrices and qr of a wide matrix have no derivative, as in JAX), works under jit and vmap, and
maps over leading (batch) dimensions. C++: graft/ops/linalg.h."""
from collections import namedtuple as _namedtuple

from . import _graft

EigResult = _namedtuple("EigResult", ["eigenvalues", "eigenvectors"])
EighResult = _namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
QRResult = _namedtuple("QRResult", ["Q", "R"])
SlogdetResult = _namedtuple("SlogdetResult", ["sign", "logabsdet"])
SVDResult = _namedtuple("SVDResult", ["U", "S", "Vh"])

matmul, outer = _graft.matmul, _graft.outer
det, inv, solve, svdvals, multi_dot = (_graft.linalg_det, _graft.linalg_inv, _graft.linalg_solve,
                                       _graft.linalg_svdvals, _graft.linalg_multi_dot)


def matrix_transpose(x):
    return _graft.swapaxes(x, -1, -2)


def cholesky(a, *, upper=False, symmetrize_input=True):
    """The lower factor L of a = L L^H (upper: L^H); NaNs where a is not positive definite."""
    l_factor = _graft.linalg_cholesky(a, symmetrize_input)
    return _graft.conj(matrix_transpose(l_factor)) if upper else l_factor


def slogdet(a, *, method=None):
    return SlogdetResult(*_graft.linalg_slogdet(a))


def eigh(a, UPLO=None, symmetrize_input=True):
    return EighResult(*_graft.linalg_eigh(a, UPLO or "L", symmetrize_input))


def eig(a):
    """(eigenvalues, eigenvectors) of general square matrices, complex; differentiable in the eigenvalues only."""
    return EigResult(*_graft.linalg_eig(a))


def eigvals(a):
    return _graft.linalg_eigvals(a)


def eigvalsh(a, UPLO="L", *, symmetrize_input=True):
    return _graft.linalg_eigh(a, UPLO, symmetrize_input)[0]


def qr(a, mode="reduced"):
    q, r = _graft.linalg_qr(a, mode)
    return r if mode == "r" else QRResult(q, r)


def svd(a, full_matrices=True, compute_uv=True, hermitian=False, subset_by_index=None):
    if subset_by_index is not None:
        raise NotImplementedError("svd: subset_by_index is not supported")
    if not compute_uv:
        return _graft.linalg_svdvals(a)
    return SVDResult(*_graft.linalg_svd(a, full_matrices))


def pinv(a, rtol=None, hermitian=False, *, rcond=None):
    return _graft.linalg_pinv(a, rtol if rtol is not None else rcond)


def matrix_rank(M, rtol=None, *, tol=None):
    if rtol is not None and tol is None:
        s = _graft.linalg_svdvals(M)
        return _graft.sum(_graft.greater(s, _graft.max(s, -1, True) * rtol).astype("int32"), -1)
    return _graft.linalg_matrix_rank(M, tol)


def lstsq(a, b, rcond=None, *, numpy_resid=False):
    """(x, residuals, rank, s); residuals are always |b - a x|^2 per column (JAX's default, numpy_resid=False)."""
    if numpy_resid:
        raise NotImplementedError("lstsq: numpy_resid=True (a data-dependent shape) is not supported")
    return _graft.linalg_lstsq(a, b, rcond)


def norm(x, ord=None, axis=None, keepdims=False):
    return _graft.linalg_norm(x, ord, axis, keepdims)


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    if axis is None:
        flat = _graft.ravel(x)
        r = _graft.linalg_norm(flat, ord, 0, False)
        return _graft.reshape(r, (1,) * x.ndim) if keepdims else r
    return _graft.linalg_norm(x, ord, axis, keepdims)


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    return _graft.linalg_norm(x, ord, (-2, -1), keepdims)


def cond(x, p=None):
    return _graft.linalg_cond(x, p)


def matrix_power(a, n):
    return _graft.linalg_matrix_power(a, n)


def _eye_like(x):
    return _graft.eye(x.shape[-2], x.shape[-1], 0, x.dtype)


def trace(x, /, *, offset=0, dtype=None):
    if offset != 0:
        raise NotImplementedError("linalg.trace: offset != 0 is not supported")
    r = _graft.sum(_graft.multiply(x, _eye_like(x)), (-2, -1), False)
    return r.astype(dtype) if dtype is not None else r


def diagonal(x, /, *, offset=0):
    if offset != 0:
        raise NotImplementedError("linalg.diagonal: offset != 0 is not supported")
    r = _graft.sum(_graft.multiply(x, _eye_like(x)), -1, False)
    return r[..., :min(x.shape[-2], x.shape[-1])]


__all__ = ["EigResult", "EighResult", "QRResult", "SVDResult", "SlogdetResult", "cholesky", "cond", "det", "diagonal", "eig", "eigh",
           "eigvals", "eigvalsh", "inv", "lstsq", "matmul", "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose",
           "multi_dot", "norm", "outer", "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "trace",
           "vector_norm"]
