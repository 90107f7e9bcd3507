// NumPy's and SciPy's linear algebra on the factorization primitives (graft/ops/linalg.h).
#include "graft/ops/linalg.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>

#include "graft/ops/internal.h"
#include "graft/transforms/control.h"

namespace graft {

using namespace ops_detail;

namespace {

// a as a stack of matrices in an inexact dtype (integers and booleans promote to the default float;
// complex ones stay complex).
Array matrices(const Array& a, const char* op, bool square) {
  checked(a, op);
  if (a.ndim() < 2) fail<ShapeError>("linalg.", op, ": needs an array of at least two dimensions, got ", a.aval().str());
  if (square && a.shape()[a.ndim() - 1] != a.shape()[a.ndim() - 2])
    fail<ShapeError>("linalg.", op, ": needs square matrices in the last two dimensions, got ", a.aval().str());
  return is_inexact(a.dtype()) ? a : convert(a, default_float_dtype());
}

int64_t nrows(const Array& x) { return x.shape()[x.ndim() - 2]; }
int64_t ncols(const Array& x) { return x.shape()[x.ndim() - 1]; }
Array mT(const Array& x) { return swapaxes(x, -1, -2); }
// The adjoint (conjugate transpose); the transpose of real matrices.
Array mH(const Array& x) { return is_complex(x.dtype()) ? conj(mT(x)) : mT(x); }
// |x|^2 elementwise, in x's real dtype.
Array abs2(const Array& x) { return is_complex(x.dtype()) ? real(x * conj(x)) : x * x; }

// The diagonals [..., n] of square matrices [..., n, n].
Array diag_of(const Array& x) {
  Shape s = x.shape();
  Array eye = lax::convert_element_type(
      lax::eq(lax::iota(DType::i32, s, x.ndim() - 2), lax::iota(DType::i32, s, x.ndim() - 1)), x.dtype());
  return sum(x * eye, -1);
}

// Identity matrices shaped like a [..., n, n].
Array eye_like(const Array& a) {
  return broadcast_to(eye(ncols(a), std::nullopt, 0, a.dtype()), a.shape());
}

// a and b with their batch (leading) dimensions broadcast to each other.
std::pair<Array, Array> broadcast_batch(const Array& a, const Array& b, const char* op) {
  Shape ab(a.shape().begin(), a.shape().end() - 2), bb(b.shape().begin(), b.shape().end() - 2);
  Shape batch = broadcast_shapes(ab, bb, op);
  auto full = [&](const Array& x) {
    Shape s = batch;
    s.push_back(nrows(x));
    s.push_back(ncols(x));
    return ops_detail::broadcast_to(x, s, op);
  };
  return {full(a), full(b)};
}

// The rows of x [..., m, k] in the order perm [..., m].
Array take_rows(const Array& x, const Array& perm) {
  Shape s = x.shape();
  Axes dims(static_cast<size_t>(perm.ndim()));
  std::iota(dims.begin(), dims.end(), int64_t(0));
  return lax::take_along_axis(x, lax::broadcast_in_dim(perm, s, dims), x.ndim() - 2);
}

// Promotes a and b to one inexact dtype (floating or complex).
std::pair<Array, Array> promote_float(const Array& a0, const Array& b0, const char* op) {
  checked(a0, op);
  checked(b0, op);
  bool weak;
  DType d = result_type({&a0, &b0}, &weak);
  if (!is_inexact(d)) d = default_float_dtype();
  return {convert(a0, d), convert(b0, d)};
}

// Solves with the LU factors of a (lu, perm) for matrices b: a x = b (trans 0), a^T x = b (1), a^H x = b (2).
Array lu_solve_perm(const Array& lu, const Array& perm, const Array& b, int trans) {
  if (trans == 0) {
    Array x = take_rows(b, perm);
    x = lax::triangular_solve(lu, x, true, true, false, true);
    return lax::triangular_solve(lu, x, true, false, false, false);
  }
  // a^T x = b with a = P^T L U: U^T L^T (P x) = b (conjugated factors for a^H)
  bool conj_ = trans == 2;
  Array y = lax::triangular_solve(lu, b, true, false, true, false, conj_);
  y = lax::triangular_solve(lu, y, true, true, true, true, conj_);
  return take_rows(y, argsort(perm, -1));
}

// (matrices, was it a vector): b [..., m] becomes [..., m, 1] when it is 1-D (NumPy 2's rule).
std::pair<Array, bool> as_matrices(const Array& b) {
  if (b.ndim() == 1) return {expand_dims(b, -1), true};
  return {b, false};
}

double eps_of(DType d) {
  return real_dtype(d) == DType::f64 ? std::numeric_limits<double>::epsilon() : std::numeric_limits<float>::epsilon();
}

Array keep_axes(const Array& r, const Axes& axes, bool keepdims) {
  if (!keepdims) return r;
  Array out = r;
  Axes sorted = axes;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t a : sorted) out = expand_dims(out, a);
  return out;
}

}  // namespace

Array tril(const Array& x, int64_t k) {
  checked(x, "tril");
  if (x.ndim() < 2) fail<ShapeError>("tril: needs an array of at least two dimensions, got ", x.aval().str());
  Array i = lax::iota(DType::i32, x.shape(), x.ndim() - 2), j = lax::iota(DType::i32, x.shape(), x.ndim() - 1);
  return where(j <= i + static_cast<int>(k), x, zeros_like(x));
}

Array triu(const Array& x, int64_t k) {
  checked(x, "triu");
  if (x.ndim() < 2) fail<ShapeError>("triu: needs an array of at least two dimensions, got ", x.aval().str());
  Array i = lax::iota(DType::i32, x.shape(), x.ndim() - 2), j = lax::iota(DType::i32, x.shape(), x.ndim() - 1);
  return where(j >= i + static_cast<int>(k), x, zeros_like(x));
}

namespace linalg {

Array cholesky(const Array& a0, bool symmetrize_input) {
  Array a = matrices(a0, "cholesky", true);
  if (symmetrize_input) a = (a + mH(a)) * 0.5;
  return lax::cholesky(a);
}

Array cho_solve(const Array& c0, const Array& b0, bool lower) {
  auto [c, b] = promote_float(c0, b0, "cho_solve");
  c = matrices(c, "cho_solve", true);
  auto [bm, vec] = as_matrices(b);
  std::tie(c, bm) = broadcast_batch(c, bm, "cho_solve");
  // lower: L L^H x = b; upper: U^H U x = b
  Array y = lax::triangular_solve(c, bm, true, lower, !lower, false, !lower);
  Array x = lax::triangular_solve(c, y, true, lower, lower, false, lower);
  return vec ? squeeze(x, -1) : x;
}

Array solve_triangular(const Array& a0, const Array& b0, bool lower, int trans, bool unit_diagonal) {
  if (trans < 0 || trans > 2) fail<ValueError>("linalg.solve_triangular: trans must be 0, 1 or 2, got ", trans);
  auto [a, b] = promote_float(a0, b0, "solve_triangular");
  a = matrices(a, "solve_triangular", true);
  auto [bm, vec] = as_matrices(b);
  std::tie(a, bm) = broadcast_batch(a, bm, "solve_triangular");
  Array x = lax::triangular_solve(a, bm, true, lower, trans != 0, unit_diagonal, trans == 2);
  return vec ? squeeze(x, -1) : x;
}

std::tuple<Array, Array, Array> lu_factor_full(const Array& a0) {
  Arrays r = lax::lu(matrices(a0, "lu_factor", false));
  return {r[0], r[1], r[2]};
}

std::pair<Array, Array> lu_factor(const Array& a) {
  auto [lu, piv, perm] = lu_factor_full(a);
  return {lu, piv};
}

Array lu_solve(const Array& lu0, const Array& piv, const Array& b0, int trans) {
  if (trans < 0 || trans > 2) fail<ValueError>("linalg.lu_solve: trans must be 0, 1 or 2, got ", trans);
  auto [lu, b] = promote_float(lu0, b0, "lu_solve");
  lu = matrices(lu, "lu_solve", true);
  checked(piv, "lu_solve");
  if (is_floating(piv.dtype()) || piv.ndim() < 1 || piv.shape().back() != ncols(lu))
    fail<ShapeError>("linalg.lu_solve: piv must hold ", ncols(lu), " integer row swaps per matrix, got ",
                     piv.aval().str());
  Array perm = lax::lu_pivots_to_permutation(convert(piv, DType::i32), nrows(lu));
  auto [bm, vec] = as_matrices(b);
  if (nrows(bm) != nrows(lu))
    fail<ShapeError>("linalg.lu_solve: b has ", nrows(bm), " rows for matrices of size ", nrows(lu), " (",
                     lu.aval().str(), ", ", b0.aval().str(), ")");
  Array x = lu_solve_perm(lu, perm, bm, trans);
  return vec ? squeeze(x, -1) : x;
}

std::tuple<Array, Array, Array> lu(const Array& a0) {
  auto [lu_, piv, perm] = lu_factor_full(a0);
  int64_t m = nrows(lu_), n = ncols(lu_), k = std::min(m, n);
  Shape zero(static_cast<size_t>(lu_.ndim()), 0), lk = lu_.shape(), kn = lu_.shape();
  lk.back() = k;
  kn[kn.size() - 2] = k;
  Array lpart = lax::slice(lu_, zero, lk), upart = lax::slice(lu_, zero, kn);
  Array l = tril(lpart, -1) + broadcast_to(eye(m, k, 0, lu_.dtype()), lpart.shape());
  Array u = triu(upart);
  // a[perm] = l u, so a = p l u with p[perm[i], i] = 1
  Shape ps = perm.shape();
  ps.push_back(m);
  Array rows_ = lax::iota(DType::i32, ps, perm.ndim());
  Axes dims(static_cast<size_t>(perm.ndim()));
  std::iota(dims.begin(), dims.end(), int64_t(0));
  Array pt = lax::convert_element_type(lax::eq(lax::broadcast_in_dim(perm, ps, dims), rows_), lu_.dtype());
  return {mT(pt), l, u};
}

Array solve(const Array& a0, const Array& b0) {
  auto [a, b] = promote_float(a0, b0, "solve");
  a = matrices(a, "solve", true);
  auto [bm, vec] = as_matrices(b);
  if (bm.ndim() < 2 || nrows(bm) != nrows(a))
    fail<ShapeError>("linalg.solve: b must have ", nrows(a), " rows (", a0.aval().str(), ", ", b0.aval().str(), ")");
  std::tie(a, bm) = broadcast_batch(a, bm, "solve");
  Arrays f = lax::lu(a);
  Array x = lu_solve_perm(f[0], f[2], bm, 0);
  return vec ? squeeze(x, -1) : x;
}

Array inv(const Array& a0) {
  Array a = matrices(a0, "inv", true);
  return solve(a, eye_like(a));
}

std::pair<Array, Array> slogdet(const Array& a0) {
  Array a = matrices(a0, "slogdet", true);
  Arrays f = lax::lu(a);
  Array d = diag_of(f[0]);
  Array swaps = sum(astype(f[1] != lax::iota(DType::i32, f[1].shape(), f[1].ndim() - 1), DType::i32), -1);
  Array parity = astype(1 - 2 * (swaps % 2), a.dtype());
  Array sign_ = parity * prod(sign(d), -1);
  return {sign_, sum(log(abs(d)), -1)};
}

Array det(const Array& a0) {
  Array a = matrices(a0, "det", true);
  Arrays f = lax::lu(a);
  Array swaps = sum(astype(f[1] != lax::iota(DType::i32, f[1].shape(), f[1].ndim() - 1), DType::i32), -1);
  Array parity = astype(1 - 2 * (swaps % 2), a.dtype());
  return parity * prod(diag_of(f[0]), -1);
}

Array matrix_power(const Array& a0, int64_t n) {
  Array a = matrices(a0, "matrix_power", true);
  if (n == 0) return eye_like(a);
  if (n < 0) {
    a = inv(a);
    n = -n;
  }
  Array result, base = a;
  while (n > 0) {
    if (n & 1) result = result.valid() ? matmul(result, base) : base;
    n >>= 1;
    if (n > 0) base = matmul(base, base);
  }
  return result;
}

// Scaling and squaring with a Padé approximant (Higham, "The scaling and squaring method for the matrix
// exponential revisited", 2005): e^A = (e^(A / 2^s))^(2^s), with s the fewest halvings that bring the 1-norm
// under θ_m, where the [m/m] Padé approximant r_m = q_m(A)^-1 p_m(A) is accurate to the unit roundoff. One
// degree per dtype (13 in f64, 7 in f32: the lower degrees Higham picks for small norms save products, not
// accuracy), so that the program is the same whatever the values and jit, vmap and grad see plain
// primitives. The squarings run in a loop of max_squarings steps whose body is skipped (a cond) once every
// matrix of the batch has its own count; a matrix that needs more than max_squarings gives NaNs, as JAX's.
Array expm(const Array& a0, int64_t max_squarings) {
  Array a = matrices(a0, "expm", true);
  if (max_squarings < 0) fail<ValueError>("linalg.expm: max_squarings must be >= 0, got ", max_squarings);
  bool f64 = real_dtype(a.dtype()) == DType::f64;
  // b_k of p_m(x) = Σ b_k x^k (q_m(x) = p_m(-x)), and θ_m
  static const std::vector<double> b13 = {64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800.,
                                          129060195264000.,   10559470521600.,    670442572800.,     33522128640.,
                                          1323241920.,        40840800.,          960960.,           16380.,
                                          182.,               1.};
  static const std::vector<double> b7 = {17297280., 8648640., 1995840., 277200., 25200., 1512., 56., 1.};
  const std::vector<double>& b = f64 ? b13 : b7;
  double theta = f64 ? 5.371920351148152 : 3.925724783138660;
  Array norm1 = max(sum(abs(a), -2), -1);  // the largest column sum
  Array need = maximum(ceil(log2(norm1 / theta)), 0.0);  // 0 for the zero matrix (log2 0 = -inf)
  Array s = minimum(need, static_cast<double>(max_squarings));
  Array x = a / expand_dims(expand_dims(exp2(s), -1), -1);
  Array id = eye_like(x), x2 = matmul(x, x), x4 = matmul(x2, x2), x6 = matmul(x4, x2);
  // U = x (odd part of p), V = even part: p = V + U, q = V - U
  Array u, v;
  if (f64) {
    u = matmul(x6, b[13] * x6 + b[11] * x4 + b[9] * x2) + b[7] * x6 + b[5] * x4 + b[3] * x2 + b[1] * id;
    v = matmul(x6, b[12] * x6 + b[10] * x4 + b[8] * x2) + b[6] * x6 + b[4] * x4 + b[2] * x2 + b[0] * id;
  } else {
    u = b[7] * x6 + b[5] * x4 + b[3] * x2 + b[1] * id;
    v = b[6] * x6 + b[4] * x4 + b[2] * x2 + b[0] * id;
  }
  u = matmul(x, u);
  Array r = solve(v - u, v + u);
  Array most = max(s);
  Array per_matrix = expand_dims(expand_dims(s, -1), -1);
  r = fori_loop(int64_t(0), max_squarings, [&](const Array& i, const Array& r) {
    Array fi = astype(i, real_dtype(r.dtype()));
    return cond(fi < most, [&](const Array& m) { return where(fi < per_matrix, matmul(m, m), m); },
                [](const Array& m) { return m; }, r);
  }, r);
  return where(expand_dims(expand_dims(need > static_cast<double>(max_squarings), -1), -1), NAN, r);
}

std::pair<Array, Array> eigh(const Array& a0, const std::string& UPLO, bool symmetrize_input) {
  if (UPLO != "L" && UPLO != "U") fail<ValueError>("linalg.eigh: UPLO must be 'L' or 'U', got '", UPLO, "'");
  Array a = matrices(a0, "eigh", true);
  if (symmetrize_input) {
    a = (a + mH(a)) * 0.5;
  } else if (UPLO == "U") {
    a = mH(a);  // the primitive reads the lower triangle
  }
  Arrays r = lax::eigh(a);
  return {r[1], r[0]};
}

Array eigvalsh(const Array& a, const std::string& UPLO) { return eigh(a, UPLO, true).first; }

std::pair<Array, Array> eig(const Array& a0) {
  Arrays r = lax::eig(matrices(a0, "eig", true), false, true);
  return {r[0], r[1]};
}

Array eigvals(const Array& a0) { return lax::eig(matrices(a0, "eigvals", true), false, false)[0]; }

std::pair<Array, Array> qr(const Array& a0, const std::string& mode) {
  if (mode != "reduced" && mode != "complete" && mode != "r")
    fail<ValueError>("linalg.qr: mode must be 'reduced', 'complete' or 'r', got '", mode, "'");
  Arrays r = lax::qr(matrices(a0, "qr", false), mode == "complete");
  if (mode == "r") return {Array(), r[1]};
  return {r[0], r[1]};
}

std::tuple<Array, Array, Array> svd(const Array& a0, bool full_matrices) {
  Arrays r = lax::svd(matrices(a0, "svd", false), full_matrices, true);
  return {r[1], r[0], r[2]};
}

Array svdvals(const Array& a0) { return lax::svd(matrices(a0, "svdvals", false), false, false)[0]; }

Array pinv(const Array& a0, std::optional<double> rtol) {
  Array a = matrices(a0, "pinv", false);
  int64_t m = nrows(a), n = ncols(a);
  if (m == 0 || n == 0) return mT(zeros_like(a));
  double rt = rtol.value_or(10.0 * static_cast<double>(std::max(m, n)) * eps_of(a.dtype()));
  Arrays r = lax::svd(a, false, true);
  const Array &s = r[0], &u = r[1], &vt = r[2];
  Array cutoff = max(s, -1, true) * rt;
  Array keep = s > cutoff;
  Array s_inv = where(keep, 1.0 / where(keep, s, ones_like(s)), zeros_like(s));
  return matmul(mH(vt), expand_dims(s_inv, -1) * mH(u));
}

Array matrix_rank(const Array& a0, std::optional<double> tol) {
  Array a = matrices(a0, "matrix_rank", false);
  Array s = svdvals(a);
  Array t = tol ? full_like(max(s, -1, true), *tol)
                : max(s, -1, true) * (static_cast<double>(std::max(nrows(a), ncols(a))) * eps_of(a.dtype()));
  return sum(astype(s > t, DType::i32), -1);
}

std::tuple<Array, Array, Array, Array> lstsq(const Array& a0, const Array& b0, std::optional<double> rcond) {
  auto [a, b] = promote_float(a0, b0, "lstsq");
  if (a.ndim() != 2) fail<ShapeError>("linalg.lstsq: a must be 2-D, got ", a0.aval().str());
  auto [bm, vec] = as_matrices(b);
  if (bm.ndim() != 2 || nrows(bm) != nrows(a))
    fail<ShapeError>("linalg.lstsq: b must be 1-D or 2-D with ", nrows(a), " rows (", a0.aval().str(), ", ",
                     b0.aval().str(), ")");
  int64_t m = nrows(a), n = ncols(a);
  double rc = rcond.value_or(eps_of(a.dtype()) * static_cast<double>(std::max(m, n)));
  Arrays r = lax::svd(a, false, true);
  const Array &s = r[0], &u = r[1], &vt = r[2];
  Array keep = s >= max(s, {}, true) * rc;
  Array rank = sum(astype(keep, DType::i32));
  Array s_inv = where(keep, 1.0 / where(keep, s, ones_like(s)), zeros_like(s));
  Array x = matmul(mH(vt), expand_dims(s_inv, -1) * matmul(mH(u), bm));
  Array resid = sum(abs2(bm - matmul(a, x)), 0);
  if (vec) {
    x = squeeze(x, -1);
    resid = squeeze(resid, 0);
  }
  return {x, resid, rank, s};
}

namespace {

Array vector_norm(const Array& x, const NormOrd& ord, int64_t axis, bool keepdims) {
  if (!ord.name.empty()) fail<ValueError>("linalg.norm: ord '", ord.name, "' is for matrices, not vectors");
  Array ax = abs(x);
  if (ord.none() || *ord.p == 2) return sqrt(sum(abs2(x), axis, keepdims));
  double p = *ord.p;
  if (std::isinf(p)) return p > 0 ? max(ax, axis, keepdims) : min(ax, axis, keepdims);
  if (p == 0) return sum(astype(x != 0, real_dtype(x.dtype())), axis, keepdims);
  if (p == 1) return sum(ax, axis, keepdims);
  return power(sum(power(ax, p), axis, keepdims), 1.0 / p);
}

Array matrix_norm(const Array& x, const NormOrd& ord, int64_t r, int64_t c, bool keepdims) {
  if (r == c) fail<ValueError>("linalg.norm: the two axes must differ, got ", r, " twice");
  Axes both{r, c};
  if (ord.none() || ord.name == "fro") return sqrt(sum(abs2(x), both, keepdims));
  auto singular = [&](bool largest) {
    Array m = moveaxis(moveaxis(x, r, -1), c > r ? c - 1 : c, -1);
    m = moveaxis(m, -1, -2);  // [..., rows r, cols c]
    Array s = svdvals(m);
    Array v = largest ? max(s, -1) : min(s, -1);
    return keep_axes(v, both, keepdims);
  };
  if (ord.name == "nuc") {
    Array m = moveaxis(moveaxis(x, r, -1), c > r ? c - 1 : c, -1);
    return keep_axes(sum(svdvals(moveaxis(m, -1, -2)), -1), both, keepdims);
  }
  if (!ord.name.empty()) fail<ValueError>("linalg.norm: unknown ord '", ord.name, "' (use 'fro' or 'nuc')");
  double p = *ord.p;
  Array ax = abs(x);
  if (p == 2 || p == -2) return singular(p > 0);
  if (p == 1 || p == -1) {  // the largest (smallest) column sum
    Array s = sum(ax, r, true);
    return keep_axes(squeeze(p > 0 ? max(s, c, true) : min(s, c, true), both), both, keepdims);
  }
  if (std::isinf(p)) {  // the largest (smallest) row sum
    Array s = sum(ax, c, true);
    return keep_axes(squeeze(p > 0 ? max(s, r, true) : min(s, r, true), both), both, keepdims);
  }
  fail<ValueError>("linalg.norm: ord ", p, " is not a matrix norm (use 1, -1, 2, -2, inf, -inf, 'fro' or 'nuc')");
}

}  // namespace

Array norm(const Array& x0, const NormOrd& ord, AxisArg axis, bool keepdims) {
  checked(x0, "norm");
  Array x = is_inexact(x0.dtype()) ? x0 : convert(x0, default_float_dtype());
  if (!axis.axes) {
    if (ord.none()) {
      Axes all(static_cast<size_t>(x.ndim()));
      std::iota(all.begin(), all.end(), int64_t(0));
      return sqrt(sum(abs2(x), all, keepdims));
    }
    if (x.ndim() == 1) return vector_norm(x, ord, 0, keepdims);
    if (x.ndim() == 2) return matrix_norm(x, ord, 0, 1, keepdims);
    fail<ValueError>("linalg.norm: an ord needs a 1-D or 2-D array or explicit axes, got ", x.aval().str());
  }
  Axes ax;
  for (int64_t a : *axis.axes) ax.push_back(normalize_axis(a, x.ndim(), "linalg.norm"));
  if (ax.size() == 1) return vector_norm(x, ord, ax[0], keepdims);
  if (ax.size() == 2) return matrix_norm(x, ord, ax[0], ax[1], keepdims);
  fail<ValueError>("linalg.norm: axis must name one or two axes, got ", ax.size());
}

Array cond(const Array& x0, const NormOrd& p) {
  Array x = matrices(x0, "cond", false);
  if (p.none() || (p.p && std::fabs(*p.p) == 2)) {
    Array s = svdvals(x);
    Array hi = max(s, -1), lo = min(s, -1);
    return (p.none() || *p.p > 0) ? hi / lo : lo / hi;
  }
  int64_t nd = x.ndim();
  return norm(x, p, {nd - 2, nd - 1}) * norm(inv(x), p, {nd - 2, nd - 1});
}

Array multi_dot(const std::vector<Array>& arrays) {
  size_t n = arrays.size();
  if (n < 2) fail<ValueError>("linalg.multi_dot: needs at least two arrays, got ", n);
  if (n == 2) return matmul(arrays[0], arrays[1]);
  std::vector<Array> a = arrays;
  bool first_vec = a[0].ndim() == 1, last_vec = a[n - 1].ndim() == 1;
  if (first_vec) a[0] = expand_dims(a[0], 0);
  if (last_vec) a[n - 1] = expand_dims(a[n - 1], -1);
  for (size_t i = 0; i < n; ++i)
    if (a[i].ndim() != 2) fail<ShapeError>("linalg.multi_dot: array ", i, " must be 2-D, got ", arrays[i].aval().str());
  // dims[i] x dims[i + 1] is a[i]'s shape; cost[i][j] the fewest multiplications for a[i..j]
  std::vector<double> dims;
  for (auto& x : a) dims.push_back(static_cast<double>(x.shape()[0]));
  dims.push_back(static_cast<double>(a[n - 1].shape()[1]));
  std::vector<std::vector<double>> cost(n, std::vector<double>(n, 0));
  std::vector<std::vector<size_t>> split(n, std::vector<size_t>(n, 0));
  for (size_t len = 1; len < n; ++len)
    for (size_t i = 0; i + len < n; ++i) {
      size_t j = i + len;
      cost[i][j] = std::numeric_limits<double>::infinity();
      for (size_t k = i; k < j; ++k) {
        double c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1];
        if (c < cost[i][j]) {
          cost[i][j] = c;
          split[i][j] = k;
        }
      }
    }
  std::function<Array(size_t, size_t)> chain = [&](size_t i, size_t j) -> Array {
    if (i == j) return a[i];
    return matmul(chain(i, split[i][j]), chain(split[i][j] + 1, j));
  };
  Array r = chain(0, n - 1);
  if (first_vec) r = squeeze(r, 0);
  if (last_vec) r = squeeze(r, -1);
  return r;
}

}  // namespace linalg
}  // namespace graft
