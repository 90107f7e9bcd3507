"""JAX's lax.linalg: the factorization primitives with JAX's signatures, importable as `graft.lax.linalg`."""
from . import _graft


def cholesky(x, *, symmetrize_input=True):
    if symmetrize_input:
        x = _graft.multiply(_graft.add(x, _graft.swapaxes(x, -1, -2)), 0.5)
    return _graft.lax_cholesky(x)


def triangular_solve(a, b, *, left_side=False, lower=False, transpose_a=False, conjugate_a=False,
                     unit_diagonal=False):
    return _graft.lax_triangular_solve(a, b, left_side, lower, transpose_a, unit_diagonal)


def lu(x):
    """(lu, pivots, permutation) with x[permutation] = L U."""
    return _graft.lax_lu(x)


def lu_pivots_to_permutation(pivots, permutation_size):
    return _graft.lax_lu_pivots_to_permutation(pivots, permutation_size)


def eigh(x, *, lower=True, symmetrize_input=True, sort_eigenvalues=True, subset_by_index=None):
    """(v, w): eigenvectors (columns) and ascending eigenvalues."""
    if subset_by_index is not None:
        raise NotImplementedError("eigh: subset_by_index is not supported")
    if symmetrize_input:
        x = _graft.multiply(_graft.add(x, _graft.swapaxes(x, -1, -2)), 0.5)
    elif not lower:
        x = _graft.swapaxes(x, -1, -2)
    return _graft.lax_eigh(x)


def qr(x, *, pivoting=False, full_matrices=True):
    if pivoting:
        raise NotImplementedError("qr: pivoting is not supported")
    return _graft.lax_qr(x, full_matrices)


def svd(x, *, full_matrices=True, compute_uv=True, subset_by_index=None):
    """(u, s, vh), or s without compute_uv."""
    if subset_by_index is not None:
        raise NotImplementedError("svd: subset_by_index is not supported")
    r = _graft.lax_svd(x, full_matrices, compute_uv)
    return r[0] if not compute_uv else (r[1], r[0], r[2])


__all__ = ["cholesky", "eigh", "lu", "lu_pivots_to_permutation", "qr", "svd", "triangular_solve"]
