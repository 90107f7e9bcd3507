// Conformance rows: the linear-algebra primitives on complex64 / complex128 operands, and eig (general
// matrices, real and complex). References are textbook algorithms in complex double written here
// (Cholesky-Banachiewicz, Gaussian elimination, Doolittle with LAPACK's |re| + |im| pivoting, cyclic
// Jacobi with a phase rotation, modified Gram-Schmidt, one-sided Jacobi, Faddeev-LeVerrier with
// Durand-Kerner), none sharing code with LAPACK.
//
// Complex eigenvectors and singular vectors are unique only up to a phase each, and LAPACK's choice of
// phase is not the one the derivative rules pick (JAX's), so those rows check the phase-free quantities
// (`post`): the projectors v_k v_k^H of eigh and the rank-one terms u_k v_k^H of svd, in values,
// derivatives, vmap and jit alike. QR's factors are unique once R's diagonal is real, LAPACK's convention
// and the rule's; their values are compared with that diagonal made positive (`canonical`).
#include <algorithm>
#include <cmath>
#include <complex>
#include <numeric>

#include "graft/runtime/cpu/lapack.h"
#include "prims/conformance.h"

namespace graft::testing {

namespace {
using namespace graft::prims;
using Z = complex128;
using ZMat = std::vector<std::vector<Z>>;

ZMat zzeros(size_t r, size_t c) { return ZMat(r, std::vector<Z>(c, Z(0))); }

std::vector<ZMat> to_zmats(const Array& a) {
  std::vector<Z> v = a.to_vector<Z>();
  int64_t r = a.shape()[a.ndim() - 2], c = a.shape().back(), nb = (r * c != 0) ? a.size() / (r * c) : 0;
  std::vector<ZMat> out;
  for (int64_t b = 0; b < nb; ++b) {
    ZMat m = zzeros(static_cast<size_t>(r), static_cast<size_t>(c));
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < c; ++j) m[i][j] = v[static_cast<size_t>(b * r * c + i * c + j)];
    out.push_back(m);
  }
  return out;
}
Array pack(const std::vector<Z>& v, const Shape& s, DType d) {
  Array r = Array::empty(Aval(s, d));
  if (is_complex(d)) {
    convert_elements(v.data(), DType::c128, r.concrete()->data(), d, static_cast<int64_t>(v.size()));
  } else {
    std::vector<double> re;
    for (auto z : v) re.push_back(z.real());
    convert_elements(re.data(), DType::f64, r.concrete()->data(), d, static_cast<int64_t>(re.size()));
  }
  return r;
}
Shape batch_of(const Array& a) { return Shape(a.shape().begin(), a.shape().end() - 2); }
Array zstack(const std::vector<ZMat>& ms, Shape batch, DType d) {
  std::vector<Z> v;
  for (auto& m : ms)
    for (auto& row : m) v.insert(v.end(), row.begin(), row.end());
  batch.push_back(static_cast<int64_t>(ms[0].size()));
  batch.push_back(static_cast<int64_t>(ms[0][0].size()));
  return pack(v, batch, d);
}
Array zstack_vec(const std::vector<std::vector<Z>>& vs, Shape batch, DType d) {
  std::vector<Z> v;
  for (auto& x : vs) v.insert(v.end(), x.begin(), x.end());
  batch.push_back(static_cast<int64_t>(vs[0].size()));
  return pack(v, batch, d);
}
std::string dims(const Shape& s) {
  std::string r;
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "x" : "") + std::to_string(s[i]);
  return r;
}
ZMat adjoint(const ZMat& a) {
  ZMat t = zzeros(a[0].size(), a.size());
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t j = 0; j < a[0].size(); ++j) t[j][i] = std::conj(a[i][j]);
  return t;
}
ZMat transpose_z(const ZMat& a) {
  ZMat t = zzeros(a[0].size(), a.size());
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t j = 0; j < a[0].size(); ++j) t[j][i] = a[i][j];
  return t;
}
ZMat matmul_z(const ZMat& a, const ZMat& b) {
  ZMat c = zzeros(a.size(), b[0].size());
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t k = 0; k < b.size(); ++k)
      for (size_t j = 0; j < b[0].size(); ++j) c[i][j] += a[i][k] * b[k][j];
  return c;
}

// ---- references ---------------------------------------------------------------------------------------
ZMat ref_cholesky(const ZMat& a) {  // reads the lower triangle and the real part of the diagonal
  size_t n = a.size();
  ZMat l = zzeros(n, n);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j <= i; ++j) {
      Z s = i == j ? Z(a[i][i].real()) : a[i][j];
      for (size_t k = 0; k < j; ++k) s -= l[i][k] * std::conj(l[j][k]);
      l[i][j] = i == j ? Z(std::sqrt(s.real())) : s / l[j][j];
    }
  return l;
}

// a^-1 b by Gaussian elimination with partial pivoting.
ZMat ref_solve(ZMat a, ZMat b) {
  size_t n = a.size(), c = b[0].size();
  for (size_t j = 0; j < n; ++j) {
    size_t p = j;
    for (size_t i = j + 1; i < n; ++i)
      if (std::abs(a[i][j]) > std::abs(a[p][j])) p = i;
    std::swap(a[j], a[p]);
    std::swap(b[j], b[p]);
    for (size_t i = j + 1; i < n; ++i) {
      Z f = a[i][j] / a[j][j];
      for (size_t k = j; k < n; ++k) a[i][k] -= f * a[j][k];
      for (size_t k = 0; k < c; ++k) b[i][k] -= f * b[j][k];
    }
  }
  ZMat x = zzeros(n, c);
  for (size_t s = n; s-- > 0;)
    for (size_t k = 0; k < c; ++k) {
      Z v = b[s][k];
      for (size_t t = s + 1; t < n; ++t) v -= a[s][t] * x[t][k];
      x[s][k] = v / a[s][s];
    }
  return x;
}

// op(A) X = B or X op(A) = B with op(A) built explicitly from A's triangle (then solved densely).
ZMat ref_trsm(ZMat a, const ZMat& b, bool left, bool lower, bool trans, bool conj, bool unit) {
  size_t n = a.size();
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j) {
      if (!(lower ? j <= i : j >= i)) a[i][j] = 0;
      if (i == j && unit) a[i][j] = 1;
      if (conj) a[i][j] = std::conj(a[i][j]);
    }
  if (trans) a = transpose_z(a);
  if (left) return ref_solve(a, b);
  return transpose_z(ref_solve(transpose_z(a), transpose_z(b)));  // op(A)^T X^T = B^T
}

double cabs1(Z z) { return std::fabs(z.real()) + std::fabs(z.imag()); }  // LAPACK's izamax measure

struct RefLu {
  ZMat lu;
  std::vector<Z> piv, perm;
};
RefLu ref_lu(ZMat a) {
  size_t m = a.size(), n = a[0].size(), k = std::min(m, n);
  RefLu r;
  std::vector<size_t> perm(m);
  std::iota(perm.begin(), perm.end(), size_t(0));
  for (size_t j = 0; j < k; ++j) {
    size_t p = j;
    for (size_t i = j + 1; i < m; ++i)
      if (cabs1(a[i][j]) > cabs1(a[p][j])) p = i;
    std::swap(a[j], a[p]);
    std::swap(perm[j], perm[p]);
    r.piv.push_back(Z(static_cast<double>(p)));
    for (size_t i = j + 1; i < m; ++i) {
      a[i][j] /= a[j][j];
      for (size_t c = j + 1; c < n; ++c) a[i][c] -= a[i][j] * a[j][c];
    }
  }
  for (size_t i : perm) r.perm.push_back(Z(static_cast<double>(i)));
  r.lu = a;
  return r;
}

// Cyclic Jacobi on the Hermitian matrix from a's lower triangle: each rotation first turns a_pq real by a
// phase on column / row q, then applies the real rotation. Ascending eigenvalues, eigenvector columns.
std::pair<std::vector<double>, ZMat> ref_eigh(ZMat a) {
  size_t n = a.size();
  for (size_t i = 0; i < n; ++i) {
    a[i][i] = a[i][i].real();
    for (size_t j = i + 1; j < n; ++j) a[i][j] = std::conj(a[j][i]);
  }
  ZMat v = zzeros(n, n);
  for (size_t i = 0; i < n; ++i) v[i][i] = 1;
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0;
    for (size_t i = 0; i < n; ++i)
      for (size_t j = i + 1; j < n; ++j) off += std::norm(a[i][j]);
    if (off < 1e-60) break;
    for (size_t p = 0; p < n; ++p)
      for (size_t q = p + 1; q < n; ++q) {
        if (std::abs(a[p][q]) == 0) continue;
        Z ph = std::polar(1.0, -std::arg(a[p][q]));  // A <- D^H A D, D = diag(.., ph at q, ..)
        for (size_t k = 0; k < n; ++k) a[k][q] *= ph;
        for (size_t k = 0; k < n; ++k) a[q][k] *= std::conj(ph);
        for (size_t k = 0; k < n; ++k) v[k][q] *= ph;
        double apq = a[p][q].real();
        double theta = (a[q][q].real() - a[p][p].real()) / (2 * apq);
        double t = (theta >= 0 ? 1 : -1) / (std::fabs(theta) + std::sqrt(theta * theta + 1));
        double c = 1 / std::sqrt(t * t + 1), s = t * c;
        for (size_t k = 0; k < n; ++k) {
          Z akp = a[k][p], akq = a[k][q];
          a[k][p] = c * akp - s * akq;
          a[k][q] = s * akp + c * akq;
        }
        for (size_t k = 0; k < n; ++k) {
          Z apk = a[p][k], aqk = a[q][k];
          a[p][k] = c * apk - s * aqk;
          a[q][k] = s * apk + c * aqk;
        }
        for (size_t k = 0; k < n; ++k) {
          Z vkp = v[k][p], vkq = v[k][q];
          v[k][p] = c * vkp - s * vkq;
          v[k][q] = s * vkp + c * vkq;
        }
      }
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t(0));
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return a[x][x].real() < a[y][y].real(); });
  std::vector<double> w;
  ZMat vs = zzeros(n, n);
  for (size_t c = 0; c < n; ++c) {
    w.push_back(a[order[c]][order[c]].real());
    for (size_t k = 0; k < n; ++k) vs[k][c] = v[k][order[c]];
  }
  return {w, vs};
}

// Modified Gram-Schmidt (m >= n, or square for complete): Q with orthonormal columns, R upper triangular
// with a positive real diagonal.
std::pair<ZMat, ZMat> ref_qr(const ZMat& a) {
  size_t m = a.size(), n = a[0].size(), k = std::min(m, n);
  ZMat q = zzeros(m, k), r = zzeros(k, n);
  std::vector<std::vector<Z>> cols(n, std::vector<Z>(m));
  for (size_t j = 0; j < n; ++j)
    for (size_t i = 0; i < m; ++i) cols[j][i] = a[i][j];
  for (size_t j = 0; j < k; ++j) {
    double norm = 0;
    for (auto z : cols[j]) norm += std::norm(z);
    norm = std::sqrt(norm);
    r[j][j] = norm;
    for (size_t i = 0; i < m; ++i) q[i][j] = cols[j][i] / norm;
    for (size_t c = j + 1; c < n; ++c) {
      Z d = 0;
      for (size_t i = 0; i < m; ++i) d += std::conj(q[i][j]) * cols[c][i];
      r[j][c] = d;
      for (size_t i = 0; i < m; ++i) cols[c][i] -= d * q[i][j];
    }
  }
  return {q, r};
}

// One-sided Jacobi SVD (reduced): {s descending, u [m, k], vt [k, n]} with a = u diag(s) vt.
struct RefSvd {
  std::vector<double> s;
  ZMat u, vt;
};
RefSvd ref_svd(const ZMat& a0) {
  size_t m = a0.size(), n = a0[0].size();
  if (m < n) {  // a^H = v s u^H
    RefSvd t = ref_svd(adjoint(a0));
    return {t.s, adjoint(t.vt), adjoint(t.u)};
  }
  ZMat a = a0, v = zzeros(n, n);
  for (size_t i = 0; i < n; ++i) v[i][i] = 1;
  for (int sweep = 0; sweep < 100; ++sweep) {
    double worst = 0;
    for (size_t p = 0; p < n; ++p)
      for (size_t q = p + 1; q < n; ++q) {
        double alpha = 0, beta = 0;
        Z gamma = 0;
        for (size_t i = 0; i < m; ++i) {
          alpha += std::norm(a[i][p]);
          beta += std::norm(a[i][q]);
          gamma += std::conj(a[i][p]) * a[i][q];
        }
        if (std::abs(gamma) == 0) continue;
        worst = std::max(worst, std::abs(gamma) / std::sqrt(alpha * beta));
        Z ph = std::polar(1.0, -std::arg(gamma));  // column q turned so that gamma is real
        for (size_t i = 0; i < m; ++i) a[i][q] *= ph;
        for (size_t i = 0; i < n; ++i) v[i][q] *= ph;
        double g = std::abs(gamma);
        double zeta = (beta - alpha) / (2 * g);
        double t = (zeta >= 0 ? 1 : -1) / (std::fabs(zeta) + std::sqrt(1 + zeta * zeta));
        double c = 1 / std::sqrt(1 + t * t), s = c * t;
        for (size_t i = 0; i < m; ++i) {
          Z x = a[i][p], y = a[i][q];
          a[i][p] = c * x - s * y;
          a[i][q] = s * x + c * y;
        }
        for (size_t i = 0; i < n; ++i) {
          Z x = v[i][p], y = v[i][q];
          v[i][p] = c * x - s * y;
          v[i][q] = s * x + c * y;
        }
      }
    if (worst < 1e-16) break;
  }
  std::vector<double> s(n);
  for (size_t c = 0; c < n; ++c) {
    double norm = 0;
    for (size_t i = 0; i < m; ++i) norm += std::norm(a[i][c]);
    s[c] = std::sqrt(norm);
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t(0));
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return s[x] > s[y]; });
  RefSvd r;
  r.u = zzeros(m, n);
  r.vt = zzeros(n, n);
  for (size_t c = 0; c < n; ++c) {
    size_t o = order[c];
    r.s.push_back(s[o]);
    for (size_t i = 0; i < m; ++i) r.u[i][c] = a[i][o] / s[o];
    for (size_t i = 0; i < n; ++i) r.vt[c][i] = std::conj(v[i][o]);
  }
  return r;
}

// The eigenvalues of a general matrix: the characteristic polynomial's coefficients by Faddeev-LeVerrier,
// its roots by Durand-Kerner iteration, polished by Newton's method on the polynomial.
std::vector<Z> ref_eigvals(const ZMat& a) {
  size_t n = a.size();
  std::vector<Z> c(n + 1);  // det(x I - A) = sum c[k] x^(n - k), c[0] = 1
  c[0] = 1;
  ZMat m = zzeros(n, n);  // M_0 = 0
  for (size_t k = 1; k <= n; ++k) {
    ZMat am = matmul_z(a, m);
    for (size_t i = 0; i < n; ++i) am[i][i] += c[k - 1];  // M_k = A M_{k-1} + c_{k-1} I
    m = am;
    ZMat amk = matmul_z(a, m);
    Z tr = 0;
    for (size_t i = 0; i < n; ++i) tr += amk[i][i];
    c[k] = -tr / static_cast<double>(k);
  }
  auto poly = [&](Z x) {
    Z p = 0;
    for (auto ck : c) p = p * x + ck;
    return p;
  };
  auto dpoly = [&](Z x) {
    Z p = 0;
    for (size_t k = 0; k < n; ++k) p = p * x + c[k] * static_cast<double>(n - k);
    return p;
  };
  std::vector<Z> r(n);
  for (size_t i = 0; i < n; ++i) r[i] = std::pow(Z(0.4, 0.9), static_cast<double>(i)) * 3.0;
  for (int it = 0; it < 2000; ++it)
    for (size_t i = 0; i < n; ++i) {
      Z d = 1;
      for (size_t j = 0; j < n; ++j)
        if (j != i) d *= r[i] - r[j];
      r[i] -= poly(r[i]) / d;
    }
  for (auto& x : r)
    for (int it = 0; it < 5; ++it) {
      Z dp = dpoly(x);
      if (std::abs(dp) > 0) x -= poly(x) / dp;
    }
  return r;
}

// ---- inputs ----------------------------------------------------------------------------------------------
DType cdt(DType d) { return complex_dtype(d); }

// Hermitian positive definite: B B^H + n I.
std::function<Inputs(Rng&, DType)> hpd(Shape s) {
  return [s](Rng& r, DType d) {
    std::vector<ZMat> ms = to_zmats(r.uniform(s, DType::c128));
    for (auto& b : ms) {
      ZMat p = matmul_z(b, adjoint(b));
      for (size_t i = 0; i < p.size(); ++i) p[i][i] += static_cast<double>(p.size());
      b = p;
    }
    return Inputs{zstack(ms, Shape(s.begin(), s.end() - 2), cdt(d))};
  };
}
// Random with the diagonal pushed away from zero.
Array zdominant(Rng& r, Shape s, DType d) {
  std::vector<ZMat> ms = to_zmats(r.uniform(s, DType::c128));
  for (auto& m : ms)
    for (size_t i = 0; i < std::min(m.size(), m[0].size()); ++i) m[i][i] += m[i][i].real() < 0 ? -2.5 : 2.5;
  return zstack(ms, Shape(s.begin(), s.end() - 2), d);
}
// Hermitian with separated eigenvalues: B + B^H + diag(0, 3, 6, ...).
std::function<Inputs(Rng&, DType)> hseparated(Shape s) {
  return [s](Rng& r, DType d) {
    std::vector<ZMat> ms = to_zmats(r.uniform(s, DType::c128));
    for (auto& m : ms) {
      ZMat t = adjoint(m);
      for (size_t i = 0; i < m.size(); ++i)
        for (size_t j = 0; j < m.size(); ++j) m[i][j] += t[i][j] + (i == j ? 3.0 * static_cast<double>(i) : 0);
    }
    return Inputs{zstack(ms, Shape(s.begin(), s.end() - 2), cdt(d))};
  };
}

Case zrow(std::string name, const Primitive& p, Params params, std::function<Inputs(Rng&, DType)> inputs,
          std::function<Inputs(const Inputs&)> ref, std::vector<bool> diff) {
  Case c = make_case(std::move(name), p, std::move(params), std::move(inputs), std::move(ref), std::move(diff));
  c.rtol32 = 2e-4;
  c.atol32 = 2e-5;
  return c;
}

// proj[..., i, j, k] = v[..., i, k] conj(v[..., j, k]): each eigenvector's projector, free of its phase.
Array projectors(const Array& v) { return expand_dims(v, -2) * expand_dims(conj(v), -3); }
// terms[..., i, j, k] = u[..., i, k] vt[..., k, j]: each singular triple's rank-one term without s.
Array rank_one_terms(const Array& u, const Array& vt) { return expand_dims(u, -2) * expand_dims(swapaxes(vt, -1, -2), -3); }


// QR with R's diagonal made positive real (Q's columns take the phases): the factorization's unique form.
Inputs positive_diagonal(const Inputs& out) {
  std::vector<ZMat> qs = to_zmats(out[0]), rs = to_zmats(out[1]);
  for (size_t b = 0; b < qs.size(); ++b)
    for (size_t i = 0; i < std::min(rs[b].size(), rs[b][0].size()); ++i) {
      Z d = rs[b][i][i];
      Z ph = std::abs(d) > 0 ? d / std::abs(d) : Z(1);
      for (auto& x : rs[b][i]) x *= std::conj(ph);
      for (auto& row : qs[b]) row[i] *= ph;
    }
  return {zstack(qs, batch_of(out[0]), out[0].dtype()), zstack(rs, batch_of(out[1]), out[1].dtype())};
}

// Eigenvalues in one order: by real part, then imaginary part (rounded, so that a conjugate pair's real
// parts that differ in the last bits still sort by imaginary part).
Inputs sorted_eigenvalues(const Inputs& out) {
  Shape s = out[0].shape();
  int64_t n = s.back(), nb = n ? out[0].size() / n : 0;
  std::vector<Z> v = out[0].to_vector<Z>();
  auto key = [](Z z) { return std::make_pair(std::round(z.real() * 1e4), z.imag()); };
  for (int64_t b = 0; b < nb; ++b)
    std::sort(v.begin() + b * n, v.begin() + (b + 1) * n, [&](Z x, Z y) { return key(x) < key(y); });
  return {pack(v, s, out[0].dtype())};
}

Params trsm_params(bool left, bool lower, bool trans, bool conj, bool unit) {
  return {{"left_side", left}, {"lower", lower}, {"transpose_a", trans}, {"conjugate_a", conj}, {"unit_diagonal", unit}};
}

}  // namespace

std::vector<Case> linalg_complex_cases() {
  std::vector<Case> v;
  if (!cpu::lapack::available()) return v;

  for (Shape s : {Shape{4, 4}, Shape{2, 3, 3}}) {
    v.push_back(zrow("cholesky_complex_" + dims(s), cholesky_p, {}, hpd(s), [](const Inputs& in) {
      std::vector<ZMat> ms = to_zmats(in[0]);
      for (auto& m : ms) m = ref_cholesky(m);
      return Inputs{zstack(ms, batch_of(in[0]), in[0].dtype())};
    }, {true}));
  }

  struct TrsmRow {
    const char* name;
    bool left, lower, trans, conj, unit;
    Shape a, b;
  };
  for (const TrsmRow& t : {TrsmRow{"left_lower", true, true, false, false, false, {4, 4}, {4, 3}},
                           TrsmRow{"left_lower_adjoint", true, true, true, true, false, {4, 4}, {4, 2}},
                           TrsmRow{"left_upper_conj_unit", true, false, false, true, true, {3, 3}, {3, 2}},
                           TrsmRow{"right_upper_trans", false, false, true, false, false, {3, 3}, {2, 3}},
                           TrsmRow{"right_lower_adjoint_batched", false, true, true, true, false, {2, 3, 3}, {2, 4, 3}}}) {
    v.push_back(zrow(std::string("triangular_solve_complex_") + t.name, triangular_solve_p,
                     trsm_params(t.left, t.lower, t.trans, t.conj, t.unit),
                     [t](Rng& r, DType d) { return Inputs{zdominant(r, t.a, cdt(d)), r.uniform(t.b, cdt(d))}; },
                     [t](const Inputs& in) {
                       std::vector<ZMat> as = to_zmats(in[0]), bs = to_zmats(in[1]), xs;
                       for (size_t b = 0; b < as.size(); ++b)
                         xs.push_back(ref_trsm(as[b], bs[b], t.left, t.lower, t.trans, t.conj, t.unit));
                       return Inputs{zstack(xs, batch_of(in[1]), in[1].dtype())};
                     },
                     {true, true}));
  }

  for (Shape s : {Shape{4, 4}, Shape{2, 3, 3}, Shape{3, 5}, Shape{5, 3}}) {
    v.push_back(zrow("lu_complex_" + dims(s), lu_p, {}, [s](Rng& r, DType d) { return Inputs{r.uniform(s, cdt(d))}; },
                     [](const Inputs& in) {
                       std::vector<ZMat> ms = to_zmats(in[0]);
                       std::vector<std::vector<Z>> piv, perm;
                       for (auto& m : ms) {
                         RefLu f = ref_lu(m);
                         m = f.lu;
                         piv.push_back(f.piv);
                         perm.push_back(f.perm);
                       }
                       Shape b = batch_of(in[0]);
                       return Inputs{zstack(ms, b, in[0].dtype()), zstack_vec(piv, b, DType::i32),
                                     zstack_vec(perm, b, DType::i32)};
                     },
                     {true}));
  }

  for (Shape s : {Shape{4, 4}, Shape{2, 3, 3}}) {
    Case c = zrow("eigh_complex_" + dims(s), eigh_p, {}, hseparated(s), [](const Inputs& in) {
      std::vector<ZMat> ms = to_zmats(in[0]);
      std::vector<std::vector<Z>> ws;
      for (auto& m : ms) {
        auto [w, vecs] = ref_eigh(m);
        ws.emplace_back(w.begin(), w.end());
        m = vecs;
      }
      Shape b = batch_of(in[0]);
      Array vecs = zstack(ms, b, in[0].dtype());
      return Inputs{projectors(vecs), zstack_vec(ws, b, real_dtype(in[0].dtype()))};
    }, {true});
    c.post = [](const Inputs& out) { return Inputs{projectors(out[0]), out[1]}; };
    v.push_back(c);
  }

  struct QrRow {
    Shape s;
    bool full;
  };
  for (const QrRow& q : {QrRow{{5, 3}, false}, QrRow{{4, 4}, true}, QrRow{{2, 4, 3}, false}}) {
    Case c = zrow("qr_complex_" + dims(q.s) + (q.full ? "_full" : ""), qr_p, {{"full_matrices", q.full}},
                  [q](Rng& r, DType d) { return Inputs{r.uniform(q.s, cdt(d))}; },
                  [](const Inputs& in) {
                    std::vector<ZMat> ms = to_zmats(in[0]), qs, rs;
                    for (auto& m : ms) {
                      auto [qm, rm] = ref_qr(m);
                      qs.push_back(qm);
                      rs.push_back(rm);
                    }
                    Shape b = batch_of(in[0]);
                    return Inputs{zstack(qs, b, in[0].dtype()), zstack(rs, b, in[0].dtype())};
                  },
                  {true});
    c.canonical = positive_diagonal;
    v.push_back(c);
  }

  struct SvdRow {
    Shape s;
    bool uv;
  };
  for (const SvdRow& q : {SvdRow{{5, 3}, true}, SvdRow{{3, 5}, true}, SvdRow{{2, 4, 4}, true}, SvdRow{{4, 3}, false}}) {
    Case c = zrow("svd_complex_" + dims(q.s) + (q.uv ? "" : "_values"), svd_p,
                  {{"full_matrices", false}, {"compute_uv", q.uv}},
                  [q](Rng& r, DType d) {
                    std::vector<ZMat> ms = to_zmats(r.uniform(q.s, DType::c128));
                    for (auto& m : ms)
                      for (size_t i = 0; i < std::min(m.size(), m[0].size()); ++i)
                        m[i][i] += 2.0 * static_cast<double>(i + 1);
                    return Inputs{zstack(ms, Shape(q.s.begin(), q.s.end() - 2), cdt(d))};
                  },
                  [q](const Inputs& in) {
                    std::vector<ZMat> ms = to_zmats(in[0]), us, vts;
                    std::vector<std::vector<Z>> ss;
                    for (auto& m : ms) {
                      RefSvd f = ref_svd(m);
                      ss.emplace_back(f.s.begin(), f.s.end());
                      us.push_back(f.u);
                      vts.push_back(f.vt);
                    }
                    Shape b = batch_of(in[0]);
                    DType d = in[0].dtype();
                    Array s = zstack_vec(ss, b, real_dtype(d));
                    if (!q.uv) return Inputs{s};
                    return Inputs{s, rank_one_terms(zstack(us, b, d), zstack(vts, b, d))};
                  },
                  {true});
    if (q.uv) c.post = [](const Inputs& out) { return Inputs{out[0], rank_one_terms(out[1], out[2])}; };
    v.push_back(c);
  }

  // eig: the eigenvalues of general real and complex matrices (a dominant, spread diagonal keeps them
  // apart, so that LAPACK's order holds under a small perturbation)
  struct EigRow {
    Shape s;
    bool complex_input;
  };
  for (const EigRow& e : {EigRow{{4, 4}, false}, EigRow{{2, 3, 3}, false}, EigRow{{4, 4}, true}}) {
    Case c = zrow(std::string("eig_values_") + (e.complex_input ? "complex_" : "") + dims(e.s), eig_p,
                  {{"compute_left_eigenvectors", false}, {"compute_right_eigenvectors", false}},
                  [e](Rng& r, DType d) {
                    std::vector<ZMat> ms = to_zmats(r.uniform(e.s, e.complex_input ? DType::c128 : DType::f64));
                    for (auto& m : ms)
                      for (size_t i = 0; i < m.size(); ++i) m[i][i] += 3.0 * static_cast<double>(i);
                    return Inputs{zstack(ms, Shape(e.s.begin(), e.s.end() - 2), e.complex_input ? cdt(d) : d)};
                  },
                  [](const Inputs& in) {
                    std::vector<ZMat> ms = to_zmats(in[0]);
                    std::vector<std::vector<Z>> ws;
                    for (auto& m : ms) ws.push_back(ref_eigvals(m));
                    return Inputs{zstack_vec(ws, batch_of(in[0]), complex_dtype(in[0].dtype()))};
                  },
                  {true});
    c.canonical = sorted_eigenvalues;
    c.second_order = false;  // w' uses the eigenvectors, whose derivatives raise (as in JAX)
    c.rtol32 = 1e-4;
    c.atol32 = 1e-4;
    v.push_back(c);
  }
  return v;
}

}  // namespace graft::testing
