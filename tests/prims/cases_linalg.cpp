// Conformance rows: the linear-algebra primitives (cholesky, triangular_solve, lu, lu_pivots_to_permutation,
// eigh, qr, svd), against textbook algorithms in double written here (Cholesky-Banachiewicz, substitution,
// Doolittle with partial pivoting, cyclic Jacobi, Householder, one-sided Jacobi): none shares code with
// LAPACK. Inputs are built well conditioned (dominant diagonals, separated eigenvalues) so that finite
// differences are accurate and pivots and orderings do not change under a small perturbation.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "graft/runtime/cpu/lapack.h"
#include "prims/conformance.h"

namespace graft::testing {

namespace {
using namespace graft::prims;
using Mat = std::vector<std::vector<double>>;

Mat zeros_m(int64_t r, int64_t c) { return Mat(static_cast<size_t>(r), std::vector<double>(static_cast<size_t>(c), 0)); }

// The matrices of a stack [..., r, c].
std::vector<Mat> to_mats(const Array& a) {
  std::vector<double> v = values(a);
  int64_t r = a.shape()[a.ndim() - 2], c = a.shape().back(), nb = (r * c != 0) ? a.size() / (r * c) : 0;
  std::vector<Mat> out;
  for (int64_t b = 0; b < nb; ++b) {
    Mat m = zeros_m(r, c);
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < c; ++j) m[i][j] = v[static_cast<size_t>(b * r * c + i * c + j)];
    out.push_back(m);
  }
  return out;
}
Array stack_of(const std::vector<Mat>& ms, Shape batch, DType d) {
  std::vector<double> v;
  for (auto& m : ms)
    for (auto& row : m) v.insert(v.end(), row.begin(), row.end());
  batch.push_back(static_cast<int64_t>(ms[0].size()));
  batch.push_back(static_cast<int64_t>(ms[0][0].size()));
  return Rng::from_doubles(v, batch, d);
}
Array stack_vec(const std::vector<std::vector<double>>& vs, Shape batch, DType d) {
  std::vector<double> v;
  for (auto& x : vs) v.insert(v.end(), x.begin(), x.end());
  batch.push_back(static_cast<int64_t>(vs[0].size()));
  return Rng::from_doubles(v, batch, d);
}
// "2x3x3" for row names.
std::string dims(const Shape& s) {
  std::string r;
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "x" : "") + std::to_string(s[i]);
  return r;
}
Shape batch_of(const Array& a) { return Shape(a.shape().begin(), a.shape().end() - 2); }

Mat transpose_m(const Mat& a) {
  Mat t = zeros_m(static_cast<int64_t>(a[0].size()), static_cast<int64_t>(a.size()));
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t j = 0; j < a[0].size(); ++j) t[j][i] = a[i][j];
  return t;
}

// ---- references ---------------------------------------------------------------------------------------
Mat ref_cholesky(const Mat& a) {  // reads the lower triangle
  size_t n = a.size();
  Mat l = zeros_m(static_cast<int64_t>(n), static_cast<int64_t>(n));
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j <= i; ++j) {
      double s = a[i][j];
      for (size_t k = 0; k < j; ++k) s -= l[i][k] * l[j][k];
      l[i][j] = i == j ? std::sqrt(s) : s / l[j][j];
    }
  return l;
}

// op(A) X = B (left) or X op(A) = B by substitution, reading only A's triangle.
Mat ref_trsm(Mat a, const Mat& b, bool left, bool lower, bool trans, bool unit) {
  size_t n = a.size();
  for (size_t i = 0; i < n; ++i)  // the effective triangular matrix
    for (size_t j = 0; j < n; ++j) {
      bool keep = lower ? j <= i : j >= i;
      if (!keep) a[i][j] = 0;
      if (i == j && unit) a[i][j] = 1;
    }
  if (trans) a = transpose_m(a);
  bool low = lower != trans;  // op(A) is lower triangular
  if (!left) {  // X op(A) = B  <=>  op(A)^T X^T = B^T
    Mat xt = ref_trsm(transpose_m(a), transpose_m(b), true, !low, false, false);
    return transpose_m(xt);
  }
  Mat x = b;
  size_t cols = b[0].size();
  for (size_t c = 0; c < cols; ++c)
    for (size_t s = 0; s < n; ++s) {
      size_t i = low ? s : n - 1 - s;
      double v = b[i][c];
      for (size_t k = 0; k < n; ++k)
        if (k != i && (low ? k < i : k > i)) v -= a[i][k] * x[k][c];
      x[i][c] = v / a[i][i];
    }
  return x;
}

struct RefLu {
  Mat lu;
  std::vector<double> piv, perm;
};
RefLu ref_lu(Mat a) {
  size_t m = a.size(), n = a[0].size(), k = std::min(m, n);
  RefLu r;
  for (size_t i = 0; i < m; ++i) r.perm.push_back(static_cast<double>(i));
  for (size_t j = 0; j < k; ++j) {
    size_t p = j;
    for (size_t i = j + 1; i < m; ++i)
      if (std::fabs(a[i][j]) > std::fabs(a[p][j])) p = i;
    std::swap(a[j], a[p]);
    std::swap(r.perm[j], r.perm[p]);
    r.piv.push_back(static_cast<double>(p));
    for (size_t i = j + 1; i < m; ++i) {
      a[i][j] /= a[j][j];
      for (size_t c = j + 1; c < n; ++c) a[i][c] -= a[i][j] * a[j][c];
    }
  }
  r.lu = a;
  return r;
}

// Cyclic Jacobi on the symmetric matrix from a's lower triangle: ascending eigenvalues, eigenvector columns.
std::pair<std::vector<double>, Mat> ref_eigh(Mat a) {
  size_t n = a.size();
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + 1; j < n; ++j) a[i][j] = a[j][i];
  Mat v = zeros_m(static_cast<int64_t>(n), static_cast<int64_t>(n));
  for (size_t i = 0; i < n; ++i) v[i][i] = 1;
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0;
    for (size_t i = 0; i < n; ++i)
      for (size_t j = i + 1; j < n; ++j) off += a[i][j] * a[i][j];
    if (off < 1e-60) break;
    for (size_t p = 0; p < n; ++p)
      for (size_t q = p + 1; q < n; ++q) {
        if (a[p][q] == 0) continue;
        double theta = (a[q][q] - a[p][p]) / (2 * a[p][q]);
        double t = (theta >= 0 ? 1 : -1) / (std::fabs(theta) + std::sqrt(theta * theta + 1));
        double c = 1 / std::sqrt(t * t + 1), s = t * c;
        for (size_t k = 0; k < n; ++k) {  // A <- J^T A J
          double akp = a[k][p], akq = a[k][q];
          a[k][p] = c * akp - s * akq;
          a[k][q] = s * akp + c * akq;
        }
        for (size_t k = 0; k < n; ++k) {
          double apk = a[p][k], aqk = a[q][k];
          a[p][k] = c * apk - s * aqk;
          a[q][k] = s * apk + c * aqk;
        }
        for (size_t k = 0; k < n; ++k) {
          double vkp = v[k][p], vkq = v[k][q];
          v[k][p] = c * vkp - s * vkq;
          v[k][q] = s * vkp + c * vkq;
        }
      }
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t(0));
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return a[x][x] < a[y][y]; });
  std::vector<double> w;
  Mat vs = zeros_m(static_cast<int64_t>(n), static_cast<int64_t>(n));
  for (size_t c = 0; c < n; ++c) {
    w.push_back(a[order[c]][order[c]]);
    for (size_t k = 0; k < n; ++k) vs[k][c] = v[k][order[c]];
  }
  return {w, vs};
}

// Householder QR with LAPACK's sign convention (R's diagonal -sign(alpha) |x|), so the factors agree.
std::pair<Mat, Mat> ref_qr(const Mat& a0, bool full) {
  size_t m = a0.size(), n = a0[0].size(), k = std::min(m, n);
  Mat a = a0;
  Mat q = zeros_m(static_cast<int64_t>(m), static_cast<int64_t>(m));
  for (size_t i = 0; i < m; ++i) q[i][i] = 1;
  for (size_t j = 0; j < k; ++j) {
    double norm = 0;
    for (size_t i = j; i < m; ++i) norm += a[i][j] * a[i][j];
    norm = std::sqrt(norm);
    double below = 0;
    for (size_t i = j + 1; i < m; ++i) below += a[i][j] * a[i][j];
    if (below == 0) continue;  // nothing below the diagonal: H = I (LAPACK's tau = 0)
    double beta = -std::copysign(norm, a[j][j]);
    std::vector<double> v(m, 0);
    v[j] = a[j][j] - beta;
    for (size_t i = j + 1; i < m; ++i) v[i] = a[i][j];
    double vv = 0;
    for (double x : v) vv += x * x;
    if (vv == 0) continue;
    for (size_t c = 0; c < n; ++c) {  // A <- H A, H = I - 2 v v^T / v^T v
      double d = 0;
      for (size_t i = j; i < m; ++i) d += v[i] * a[i][c];
      for (size_t i = j; i < m; ++i) a[i][c] -= 2 * d / vv * v[i];
    }
    for (size_t r = 0; r < m; ++r) {  // Q <- Q H
      double d = 0;
      for (size_t i = j; i < m; ++i) d += q[r][i] * v[i];
      for (size_t i = j; i < m; ++i) q[r][i] -= 2 * d / vv * v[i];
    }
  }
  size_t qc = full ? m : k, rr = full ? m : k;
  Mat qo = zeros_m(static_cast<int64_t>(m), static_cast<int64_t>(qc)), ro = zeros_m(static_cast<int64_t>(rr), static_cast<int64_t>(n));
  for (size_t i = 0; i < m; ++i)
    for (size_t c = 0; c < qc; ++c) qo[i][c] = q[i][c];
  for (size_t i = 0; i < rr; ++i)
    for (size_t c = i; c < n; ++c) ro[i][c] = a[i][c];
  return {qo, ro};
}

// One-sided Jacobi SVD (reduced): {s descending, u [m, k], vt [k, n]}.
struct RefSvd {
  std::vector<double> s;
  Mat u, vt;
};
RefSvd ref_svd(const Mat& a0) {
  size_t m = a0.size(), n = a0[0].size();
  if (m < n) {
    RefSvd t = ref_svd(transpose_m(a0));
    return {t.s, transpose_m(t.vt), transpose_m(t.u)};
  }
  Mat a = a0, v = zeros_m(static_cast<int64_t>(n), static_cast<int64_t>(n));
  for (size_t i = 0; i < n; ++i) v[i][i] = 1;
  for (int sweep = 0; sweep < 100; ++sweep) {
    double worst = 0;
    for (size_t p = 0; p < n; ++p)
      for (size_t q = p + 1; q < n; ++q) {
        double alpha = 0, beta = 0, gamma = 0;
        for (size_t i = 0; i < m; ++i) {
          alpha += a[i][p] * a[i][p];
          beta += a[i][q] * a[i][q];
          gamma += a[i][p] * a[i][q];
        }
        if (gamma == 0) continue;
        worst = std::max(worst, std::fabs(gamma) / std::sqrt(alpha * beta));
        double zeta = (beta - alpha) / (2 * gamma);
        double t = (zeta >= 0 ? 1 : -1) / (std::fabs(zeta) + std::sqrt(1 + zeta * zeta));
        double c = 1 / std::sqrt(1 + t * t), s = c * t;
        for (size_t i = 0; i < m; ++i) {
          double x = a[i][p], y = a[i][q];
          a[i][p] = c * x - s * y;
          a[i][q] = s * x + c * y;
        }
        for (size_t i = 0; i < n; ++i) {
          double x = v[i][p], y = v[i][q];
          v[i][p] = c * x - s * y;
          v[i][q] = s * x + c * y;
        }
      }
    if (worst < 1e-16) break;
  }
  std::vector<double> s(n);
  for (size_t c = 0; c < n; ++c) {
    double norm = 0;
    for (size_t i = 0; i < m; ++i) norm += a[i][c] * a[i][c];
    s[c] = std::sqrt(norm);
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t(0));
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return s[x] > s[y]; });
  RefSvd r;
  r.u = zeros_m(static_cast<int64_t>(m), static_cast<int64_t>(n));
  r.vt = zeros_m(static_cast<int64_t>(n), static_cast<int64_t>(n));
  for (size_t c = 0; c < n; ++c) {
    size_t o = order[c];
    r.s.push_back(s[o]);
    for (size_t i = 0; i < m; ++i) r.u[i][c] = a[i][o] / s[o];
    for (size_t i = 0; i < n; ++i) r.vt[c][i] = v[i][o];
  }
  return r;
}

// ---- sign conventions -----------------------------------------------------------------------------------
// Eigenvectors and singular vectors are defined up to sign: both the primitive's and the reference's are
// flipped so that each vector's largest entry is positive before comparing (u's columns with vt's rows).
double sign_of_largest(const std::vector<double>& v) {
  size_t best = 0;
  for (size_t i = 1; i < v.size(); ++i)
    if (std::fabs(v[i]) > std::fabs(v[best]) + 1e-9) best = i;
  return v[best] < 0 ? -1 : 1;
}
Inputs canonical_columns(const Inputs& out, size_t col_out, std::optional<size_t> row_out) {
  Inputs r = out;
  std::vector<Mat> cs = to_mats(out[col_out]);
  std::vector<Mat> rs;
  if (row_out) rs = to_mats(out[*row_out]);
  for (size_t b = 0; b < cs.size(); ++b) {
    Mat& m = cs[b];
    for (size_t c = 0; c < m[0].size(); ++c) {
      std::vector<double> col;
      for (auto& row : m) col.push_back(row[c]);
      double s = sign_of_largest(col);
      for (auto& row : m) row[c] *= s;
      if (row_out && c < rs[b].size())
        for (auto& x : rs[b][c]) x *= s;
    }
  }
  r[col_out] = stack_of(cs, batch_of(out[col_out]), out[col_out].dtype());
  if (row_out) r[*row_out] = stack_of(rs, batch_of(out[*row_out]), out[*row_out].dtype());
  return r;
}

// ---- inputs ----------------------------------------------------------------------------------------------
// Symmetric positive definite: B B^T + n I.
std::function<Inputs(Rng&, DType)> spd(Shape s) {
  return [s](Rng& r, DType d) {
    Array b = r.uniform(s, DType::f64);
    std::vector<Mat> ms = to_mats(b);
    for (auto& m : ms) {
      Mat p = zeros_m(static_cast<int64_t>(m.size()), static_cast<int64_t>(m.size()));
      for (size_t i = 0; i < m.size(); ++i)
        for (size_t j = 0; j < m.size(); ++j) {
          for (size_t k = 0; k < m.size(); ++k) p[i][j] += m[i][k] * m[j][k];
          if (i == j) p[i][j] += static_cast<double>(m.size());
        }
      m = p;
    }
    return Inputs{stack_of(ms, batch_of(b), d)};
  };
}
// Random with the diagonal pushed away from zero (well conditioned as a triangular matrix).
Array dominant(Rng& r, Shape s, DType d) {
  std::vector<Mat> ms = to_mats(r.uniform(s, DType::f64));
  for (auto& m : ms)
    for (size_t i = 0; i < std::min(m.size(), m[0].size()); ++i) m[i][i] += m[i][i] < 0 ? -2.5 : 2.5;
  return stack_of(ms, Shape(s.begin(), s.end() - 2), d);
}
// Symmetric with separated eigenvalues: B + B^T + diag(0, 3, 6, ...).
std::function<Inputs(Rng&, DType)> separated(Shape s) {
  return [s](Rng& r, DType d) {
    std::vector<Mat> ms = to_mats(r.uniform(s, DType::f64));
    for (auto& m : ms) {
      Mat t = transpose_m(m);
      for (size_t i = 0; i < m.size(); ++i)
        for (size_t j = 0; j < m.size(); ++j) m[i][j] += t[i][j] + (i == j ? 3.0 * static_cast<double>(i) : 0);
    }
    return Inputs{stack_of(ms, Shape(s.begin(), s.end() - 2), d)};
  };
}

Case row(std::string name, const Primitive& p, Params params, std::function<Inputs(Rng&, DType)> inputs,
         std::function<Inputs(const Inputs&)> ref, std::vector<bool> diff) {
  Case c = make_case(std::move(name), p, std::move(params), std::move(inputs), std::move(ref), std::move(diff));
  c.rtol32 = 2e-4;  // a factorization's f32 rounding grows with the condition number
  c.atol32 = 2e-5;
  return c;
}

Params trsm_params(bool left, bool lower, bool trans, bool unit) {
  return {{"left_side", left}, {"lower", lower}, {"transpose_a", trans}, {"unit_diagonal", unit}};
}

}  // namespace

std::vector<Case> linalg_cases() {
  std::vector<Case> v;
  if (!cpu::lapack::available()) return v;  // built without LAPACK: the primitives raise (test_linalg checks it)

  for (Shape s : {Shape{4, 4}, Shape{2, 3, 3}}) {
    v.push_back(row("cholesky_" + dims(s), cholesky_p, {}, spd(s), [](const Inputs& in) {
      std::vector<Mat> ms = to_mats(in[0]);
      for (auto& m : ms) m = ref_cholesky(m);
      return Inputs{stack_of(ms, batch_of(in[0]), in[0].dtype())};
    }, {true}));
  }

  struct TrsmRow {
    const char* name;
    bool left, lower, trans, unit;
    Shape a, b;
  };
  for (const TrsmRow& t : {TrsmRow{"left_lower", true, true, false, false, {4, 4}, {4, 3}},
                           TrsmRow{"left_upper_trans_unit", true, false, true, true, {4, 4}, {4, 2}},
                           TrsmRow{"right_upper", false, false, false, false, {3, 3}, {2, 3}},
                           TrsmRow{"right_lower_trans_batched", false, true, true, false, {2, 3, 3}, {2, 4, 3}}}) {
    v.push_back(row(std::string("triangular_solve_") + t.name, triangular_solve_p,
                    trsm_params(t.left, t.lower, t.trans, t.unit),
                    [t](Rng& r, DType d) { return Inputs{dominant(r, t.a, d), r.uniform(t.b, d)}; },
                    [t](const Inputs& in) {
                      std::vector<Mat> as = to_mats(in[0]), bs = to_mats(in[1]), xs;
                      for (size_t b = 0; b < as.size(); ++b)
                        xs.push_back(ref_trsm(as[b], bs[b], t.left, t.lower, t.trans, t.unit));
                      return Inputs{stack_of(xs, batch_of(in[1]), in[1].dtype())};
                    },
                    {true, true}));
  }

  for (Shape s : {Shape{4, 4}, Shape{2, 3, 3}, Shape{3, 5}, Shape{5, 3}}) {
    v.push_back(row("lu_" + dims(s), lu_p, {}, [s](Rng& r, DType d) { return Inputs{r.uniform(s, d)}; },
                    [](const Inputs& in) {
                      std::vector<Mat> ms = to_mats(in[0]);
                      std::vector<std::vector<double>> piv, perm;
                      for (auto& m : ms) {
                        RefLu f = ref_lu(m);
                        m = f.lu;
                        piv.push_back(f.piv);
                        perm.push_back(f.perm);
                      }
                      Shape b = batch_of(in[0]);
                      return Inputs{stack_of(ms, b, in[0].dtype()), stack_vec(piv, b, DType::i32),
                                    stack_vec(perm, b, DType::i32)};
                    },
                    {true}));
  }

  {
    Case c = row("lu_pivots_to_permutation", lu_pivots_to_permutation_p, {{"permutation_size", int64_t(5)}},
                 [](Rng& r, DType) {
                   // LAPACK's pivots: step i swaps row i with a row at or below it
                   std::vector<double> p;
                   for (int b = 0; b < 2; ++b)
                     for (int i = 0; i < 3; ++i) p.push_back(static_cast<double>(i + static_cast<int>(r.real(0, 5 - i - 1e-9))));
                   return Inputs{Rng::from_doubles(p, {2, 3}, DType::i32)};
                 },
                 [](const Inputs& in) {
                   std::vector<double> piv = values(in[0]), out;
                   for (int b = 0; b < 2; ++b) {
                     std::vector<double> perm{0, 1, 2, 3, 4};
                     for (int i = 0; i < 3; ++i) std::swap(perm[i], perm[static_cast<size_t>(piv[b * 3 + i])]);
                     out.insert(out.end(), perm.begin(), perm.end());
                   }
                   return Inputs{Rng::from_doubles(out, {2, 5}, DType::i32)};
                 },
                 {false});
    c.smooth = false;
    c.value_dtypes = {DType::f32};
    v.push_back(c);
  }

  for (Shape s : {Shape{4, 4}, Shape{2, 3, 3}}) {
    Case c = row("eigh_" + dims(s), eigh_p, {}, separated(s), [](const Inputs& in) {
      std::vector<Mat> ms = to_mats(in[0]);
      std::vector<std::vector<double>> ws;
      for (auto& m : ms) {
        auto [w, vecs] = ref_eigh(m);
        ws.push_back(w);
        m = vecs;
      }
      Shape b = batch_of(in[0]);
      return Inputs{stack_of(ms, b, in[0].dtype()), stack_vec(ws, b, in[0].dtype())};
    }, {true});
    c.canonical = [](const Inputs& out) { return canonical_columns(out, 0, std::nullopt); };
    v.push_back(c);
  }

  struct QrRow {
    Shape s;
    bool full;
  };
  for (const QrRow& q : {QrRow{{5, 3}, false}, QrRow{{4, 4}, true}, QrRow{{2, 4, 3}, false}}) {
    v.push_back(row("qr_" + dims(q.s) + (q.full ? "_full" : ""), qr_p, {{"full_matrices", q.full}},
                    [q](Rng& r, DType d) { return Inputs{r.uniform(q.s, d)}; },
                    [q](const Inputs& in) {
                      std::vector<Mat> ms = to_mats(in[0]), qs, rs;
                      for (auto& m : ms) {
                        auto [qm, rm] = ref_qr(m, q.full);
                        qs.push_back(qm);
                        rs.push_back(rm);
                      }
                      Shape b = batch_of(in[0]);
                      return Inputs{stack_of(qs, b, in[0].dtype()), stack_of(rs, b, in[0].dtype())};
                    },
                    {true}));
  }

  struct SvdRow {
    Shape s;
    bool uv;
  };
  for (const SvdRow& q : {SvdRow{{5, 3}, true}, SvdRow{{3, 5}, true}, SvdRow{{2, 4, 4}, true}, SvdRow{{4, 3}, false}}) {
    Case c = row("svd_" + dims(q.s) + (q.uv ? "" : "_values"), svd_p,
                 {{"full_matrices", false}, {"compute_uv", q.uv}},
                 [q](Rng& r, DType d) {
                   // distinct singular values: a dominant diagonal of different sizes
                   std::vector<Mat> ms = to_mats(r.uniform(q.s, DType::f64));
                   for (auto& m : ms)
                     for (size_t i = 0; i < std::min(m.size(), m[0].size()); ++i) m[i][i] += 2.0 * static_cast<double>(i + 1);
                   return Inputs{stack_of(ms, Shape(q.s.begin(), q.s.end() - 2), d)};
                 },
                 [q](const Inputs& in) {
                   std::vector<Mat> ms = to_mats(in[0]), us, vts;
                   std::vector<std::vector<double>> ss;
                   for (auto& m : ms) {
                     RefSvd f = ref_svd(m);
                     ss.push_back(f.s);
                     us.push_back(f.u);
                     vts.push_back(f.vt);
                   }
                   Shape b = batch_of(in[0]);
                   DType d = in[0].dtype();
                   if (!q.uv) return Inputs{stack_vec(ss, b, d)};
                   return Inputs{stack_vec(ss, b, d), stack_of(us, b, d), stack_of(vts, b, d)};
                 },
                 {true});
    if (q.uv) c.canonical = [](const Inputs& out) { return canonical_columns(out, 1, size_t(2)); };
    v.push_back(c);
  }
  return v;
}

}  // namespace graft::testing
