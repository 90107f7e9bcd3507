// NumPy's and SciPy's linear algebra (jax.numpy.linalg, jax.scipy.linalg) as composites of the
// factorization primitives (lax::cholesky, triangular_solve, lu, eigh, qr, svd: graft/prims/lax.h), so all
// of it is differentiable, batchable and compilable. Matrices are the last two dimensions of an operand;
// the leading ones are a batch. f32, f64, c64 and c128 (integers promote to f32); on complex matrices
// "symmetric" reads Hermitian and the transposes of the formulas are adjoints, as in NumPy.
//
//   Array l = linalg::cholesky(a);                 // a = l l^H
//   Array x = linalg::solve(a, b);                 // a x = b
//   auto [sign, logdet] = linalg::slogdet(a);
//   auto [w, v] = linalg::eigh(a);                 // a v = v diag(w)
//
// Derivatives follow JAX's: eigh's and svd's are undefined (infinite) where eigenvalues or singular values
// repeat, since the vectors are not unique there; svd with full_matrices and qr of a wide matrix have none
// (NotImplementedError, as JAX).
#pragma once

#include <optional>
#include <string>
#include <tuple>
#include <variant>

#include "graft/ops/ops.h"

namespace graft {

/// The lower (or upper, k > 0 above the diagonal) triangle of the last two dimensions; zeros elsewhere.
Array tril(const Array& x, int64_t k = 0);
Array triu(const Array& x, int64_t k = 0);

namespace linalg {

/// The lower Cholesky factor L (a = L L^H) of Hermitian (symmetric) positive definite matrices; NaNs where
/// a is not positive definite. With symmetrize_input (the default) a is first replaced by (a + a^H) / 2,
/// so that the derivative is the symmetric one; without it only a's lower triangle is read.
Array cholesky(const Array& a, bool symmetrize_input = true);
/// SciPy's cho_solve: x with (c c^H) x = b for the lower factor c (or c^H c = a for an upper one).
Array cho_solve(const Array& c, const Array& b, bool lower = true);
/// SciPy's solve_triangular: x with op(a) x = b, a lower or upper triangular; trans 0, 1 ('T') or 2 ('C').
/// b may be a vector ([..., m]) or matrices ([..., m, k]).
Array solve_triangular(const Array& a, const Array& b, bool lower = false, int trans = 0, bool unit_diagonal = false);

/// LU factorization with partial pivoting: {lu, pivots, permutation} as lax::lu.
std::tuple<Array, Array, Array> lu_factor_full(const Array& a);
/// SciPy's lu_factor: {lu, piv} (piv: LAPACK's 0-based row swaps).
std::pair<Array, Array> lu_factor(const Array& a);
/// SciPy's lu_solve with lu_factor's result: x with a x = b (trans 1: a^T x = b; 2: a^H x = b).
Array lu_solve(const Array& lu, const Array& piv, const Array& b, int trans = 0);
/// SciPy's lu: {p, l, u} with a = p l u (p a permutation matrix, l unit lower [m, k], u upper [k, n]).
std::tuple<Array, Array, Array> lu(const Array& a);

/// x with a x = b for square a: b a vector [..., m] (only when it is 1-D, as NumPy 2) or matrices [..., m, k];
/// leading dimensions broadcast.
Array solve(const Array& a, const Array& b);
Array inv(const Array& a);
Array det(const Array& a);
/// {sign, log|det|} (sign 0 and log -inf for singular matrices).
std::pair<Array, Array> slogdet(const Array& a);
/// The matrix exponential e^a of square matrices (jax.scipy.linalg.expm), by scaling and squaring with a
/// Padé approximant of degree 13 (f64) or 7 (f32); NaNs where the 1-norm needs more than max_squarings
/// halvings. Differentiable, batchable and compilable (its squarings are a loop of max_squarings steps).
Array expm(const Array& a, int64_t max_squarings = 16);
/// a^n for an integer n (negative: powers of the inverse), by repeated squaring.
Array matrix_power(const Array& a, int64_t n);

/// {w, v}: ascending (real) eigenvalues and eigenvectors (columns) of symmetric or Hermitian matrices. UPLO
/// "L" or "U" names the triangle read without symmetrize_input; with it (the default), (a + a^H) / 2 is
/// decomposed.
std::pair<Array, Array> eigh(const Array& a, const std::string& UPLO = "L", bool symmetrize_input = true);
Array eigvalsh(const Array& a, const std::string& UPLO = "L");
/// NumPy's eig: {w, v} with a v = v diag(w) for general square matrices, complex (c64 for f32 input), each
/// eigenvector of unit norm with its largest component real (LAPACK's normalization). Differentiable in
/// the eigenvalues only (eigvals); the eigenvectors' derivative raises NotImplementedError, as JAX's.
std::pair<Array, Array> eig(const Array& a);
/// The eigenvalues of general square matrices (complex, LAPACK's order).
Array eigvals(const Array& a);

/// NumPy's qr: mode "reduced" (q [m, k], r [k, n]), "complete" (q [m, m], r [m, n]) or "r" (r only: the
/// first element is then null).
std::pair<Array, Array> qr(const Array& a, const std::string& mode = "reduced");
/// NumPy's svd: {u, s, vh} with a = u diag(s) vh (s real; vh = V^H) (full_matrices: u [m, m] and vh [n, n], NumPy's default).
std::tuple<Array, Array, Array> svd(const Array& a, bool full_matrices = true);
/// The singular values alone (descending).
Array svdvals(const Array& a);
/// Moore-Penrose pseudo-inverse through the SVD: singular values at or below rtol * max(s) count as zero
/// (rtol default: 10 * max(m, n) * eps, NumPy's).
Array pinv(const Array& a, std::optional<double> rtol = std::nullopt);
/// The number of singular values above tol (default: max(s) * max(m, n) * eps).
Array matrix_rank(const Array& a, std::optional<double> tol = std::nullopt);

/// NumPy's lstsq: {x, residuals, rank, s} minimizing |a x - b|; residuals are the squared norms of the
/// columns of b - a x when a has full column rank and more rows than columns (else an empty array).
/// rcond default: eps * max(m, n).
std::tuple<Array, Array, Array, Array> lstsq(const Array& a, const Array& b, std::optional<double> rcond = std::nullopt);

/// The `ord` of norm: nothing (2-norm of vectors, Frobenius of matrices), a number (p-norm; inf, -inf,
/// 0, and for matrices 1, -1, 2, -2) or a name ("fro", "nuc").
struct NormOrd {
  std::optional<double> p;
  std::string name;
  NormOrd() = default;
  NormOrd(double v) : p(v) {}                  // NOLINT
  NormOrd(int v) : p(static_cast<double>(v)) {}  // NOLINT
  NormOrd(const char* n) : name(n) {}         // NOLINT
  NormOrd(std::string n) : name(std::move(n)) {}  // NOLINT
  bool none() const { return !p && name.empty(); }
};
/// NumPy's norm: a vector norm over one axis, a matrix norm over two (axis unset: the whole array's
/// 2-norm with the default ord, else a vector norm of 1-D and a matrix norm of 2-D input).
Array norm(const Array& x, const NormOrd& ord = {}, AxisArg axis = {}, bool keepdims = false);
/// The condition number in norm p (default 2: the ratio of the extreme singular values).
Array cond(const Array& x, const NormOrd& p = {});
/// a[0] @ a[1] @ ... in the order of fewest multiplications (dynamic programming over the chain).
Array multi_dot(const std::vector<Array>& arrays);

}  // namespace linalg
}  // namespace graft
