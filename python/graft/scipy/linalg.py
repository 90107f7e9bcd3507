"""SciPy's linear algebra on graft arrays (jax.scipy.linalg): Cholesky, LU and triangular solves with
SciPy's signatures and defaults (cholesky and solve_triangular default to the upper triangle, as SciPy).
C++: graft/ops/linalg.h."""
from .. import _graft
from .. import _numpy_linalg as _nl

det, inv = _graft.linalg_det, _graft.linalg_inv


def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    l_factor = _graft.linalg_cholesky(a, True)
    return l_factor if lower else _graft.conj(_graft.swapaxes(l_factor, -1, -2))


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    return cholesky(a, lower=lower), lower


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    c, lower = c_and_lower
    return _graft.linalg_cho_solve(c, b, lower)


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False, debug=None,
                     check_finite=True):
    trans = {"N": 0, "T": 1, "C": 2}.get(trans, trans)
    return _graft.linalg_solve_triangular(a, b, lower, trans, unit_diagonal)


def lu_factor(a, overwrite_a=False, check_finite=True):
    return _graft.linalg_lu_factor(a)


def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    lu, piv = lu_and_piv
    return _graft.linalg_lu_solve(lu, piv, b, trans)


def lu(a, permute_l=False, overwrite_a=False, check_finite=True):
    p, l_factor, u = _graft.linalg_lu(a)
    if permute_l:
        return _graft.matmul(p, l_factor), u
    return p, l_factor, u


def solve(a, b, lower=False, overwrite_a=False, overwrite_b=False, debug=False, check_finite=True, assume_a="gen"):
    if assume_a == "pos":
        return _graft.linalg_cho_solve(_graft.linalg_cholesky(a, True), b, True)
    return _graft.linalg_solve(a, b)


def qr(a, overwrite_a=False, lwork=None, mode="full", pivoting=False, check_finite=True):
    if pivoting:
        raise NotImplementedError("qr: pivoting is not supported")
    numpy_mode = {"full": "complete", "economic": "reduced", "r": "r"}.get(mode)
    if numpy_mode is None:
        raise ValueError(f"qr: mode must be 'full', 'economic' or 'r', got {mode!r}")
    q, r = _graft.linalg_qr(a, numpy_mode)
    return (r,) if mode == "r" else (q, r)


def svd(a, full_matrices=True, compute_uv=True, overwrite_a=False, check_finite=True, lapack_driver="gesdd"):
    return _nl.svd(a, full_matrices, compute_uv)


def eigh(a, b=None, lower=True, eigvals_only=False, overwrite_a=False, overwrite_b=False, type=1,
         check_finite=True, subset_by_index=None, subset_by_value=None, driver=None):
    if b is not None:
        raise NotImplementedError("eigh: the generalized problem (b) is not supported")
    w, v = _graft.linalg_eigh(a, "L" if lower else "U", False)
    return w if eigvals_only else (w, v)


def expm(A, *, upper_triangular=False, max_squarings=16):
    """e^A by scaling and squaring with a Padé approximant (JAX's signature; upper_triangular changes nothing
    here: the result is the same)."""
    return _graft.linalg_expm(A, max_squarings)


def pinv(a, *, atol=0.0, rtol=None, return_rank=False, check_finite=True):
    return _graft.linalg_pinv(a, rtol)


__all__ = ["cho_factor", "cho_solve", "cholesky", "det", "eigh", "expm", "inv", "lu", "lu_factor", "lu_solve", "pinv", "qr",
           "solve", "solve_triangular", "svd"]
