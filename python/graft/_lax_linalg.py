"""JAX's lax.linalg: the factorization primitives with JAX's signatures, importable as `graft.lax.linalg`."""
from . import _graft


def _adjoint(x):
    return _graft.conj(_graft.swapaxes(x, -1, -2))


def cholesky(x, *, symmetrize_input=True):
    """The lower factor L of x = L L^H (Hermitian or symmetric positive definite x)."""
    if symmetrize_input:
        x = _graft.multiply(_graft.add(x, _adjoint(x)), 0.5)
    return _graft.lax_cholesky(x)


def triangular_solve(a, b, *, left_side=False, lower=False, transpose_a=False, conjugate_a=False,
                     unit_diagonal=False):
    return _graft.lax_triangular_solve(a, b, left_side, lower, transpose_a, unit_diagonal, conjugate_a)


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
        x = _graft.multiply(_graft.add(x, _adjoint(x)), 0.5)
    elif not lower:
        x = _adjoint(x)
    return _graft.lax_eigh(x)


def eig(x, *, compute_left_eigenvectors=True, compute_right_eigenvectors=True, enable_eigvec_derivs=False,
        implementation=None, use_magma=None):
    """[w, vl?, vr?]: eigenvalues and left / right eigenvectors (columns) of general square matrices, complex,
    in LAPACK's order and normalization. Differentiable in the eigenvalues only."""
    if enable_eigvec_derivs:
        raise NotImplementedError("eig: enable_eigvec_derivs (derivatives of non-symmetric eigenvectors) is not "
                                  "supported")
    return list(_graft.lax_eig(x, compute_left_eigenvectors, compute_right_eigenvectors))


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


__all__ = ["cholesky", "eig", "eigh", "lu", "lu_pivots_to_permutation", "qr", "svd", "triangular_solve"]
