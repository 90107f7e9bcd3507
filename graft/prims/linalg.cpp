// Linear algebra: cholesky, triangular_solve, lu, eigh, qr, svd (JAX's lax.linalg primitives). Each acts
// on the last two dimensions and maps over the leading ones; the CPU kernels are LAPACK's
// (graft/runtime/cpu/lapack.h). Derivative rules follow the ones JAX uses (references at each rule);
// they are written with primitives, so they are differentiable again.
//
// cholesky and eigh read the lower triangle of their operand only (as LAPACK does): their derivatives
// are those of that function, so a tangent's strict upper triangle is ignored and its lower one counts
// for both halves of the symmetric (Hermitian: the upper half conjugated) matrix; on complex operands
// the imaginary part of the diagonal is not read either. graft::linalg symmetrizes the input first, as
// JAX's wrappers do. Every rule takes complex operands: the transposes in the real formulas become
// adjoints (mH), as in JAX's rules.
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <mutex>
#include <numeric>

#include "graft/prims/rules.h"
#include "graft/runtime/cpu/lapack.h"

namespace graft::prims {

namespace {

// ---- helpers on stacks of matrices ([..., m, n]) -----------------------------------------------------
int64_t rows(const Array& x) { return x.shape()[x.ndim() - 2]; }
int64_t cols(const Array& x) { return x.shape()[x.ndim() - 1]; }

Array mT(const Array& x) {
  Axes perm(static_cast<size_t>(x.ndim()));
  std::iota(perm.begin(), perm.end(), int64_t(0));
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return lax::transpose(x, perm);
}

// The adjoint (conjugate transpose) of a stack of matrices; the transpose for real ones.
Array mH(const Array& x) { return is_complex(x.dtype()) ? lax::conj(mT(x)) : mT(x); }

// a @ b over equal leading (batch) dimensions.
Array mm(const Array& a, const Array& b) {
  int64_t nd = a.ndim();
  IntList batch(static_cast<size_t>(nd - 2));
  std::iota(batch.begin(), batch.end(), int64_t(0));
  return lax::dot_general(a, b, lax::DotDims({nd - 1}, {nd - 2}, batch, batch));
}

Array zeros_as(const Array& x) { return lax::full(x.shape(), 0, x.dtype()); }

// The elements on and below (lower) or above (upper) diagonal k kept, the others zero.
Array band(const Array& x, bool lower, int64_t k = 0) {
  int64_t nd = x.ndim();
  Array i = lax::iota(DType::i32, x.shape(), nd - 2), j = lax::iota(DType::i32, x.shape(), nd - 1);
  Array ik = lax::add(i, lax::full({}, static_cast<double>(k), DType::i32));
  Array keep = lower ? lax::le(j, ik) : lax::ge(j, ik);
  return lax::select(keep, x, zeros_as(x));
}

// The identity matrices of x's shape [..., n, n] (or [..., m, n]: ones where i == j).
Array eye_as(const Shape& s, DType d) {
  int64_t nd = static_cast<int64_t>(s.size());
  Array i = lax::iota(DType::i32, s, nd - 2), j = lax::iota(DType::i32, s, nd - 1);
  return lax::convert_element_type(lax::eq(i, j), d);
}

// The diagonals of a stack of square matrices: [..., n, n] -> [..., n].
Array diag(const Array& x) { return lax::reduce_sum(lax::mul(x, eye_as(x.shape(), x.dtype())), {x.ndim() - 1}); }

// v [..., n] as the diagonals of [..., n, n].
Array diag_embed(const Array& v) {
  Shape s = v.shape();
  s.push_back(s.back());
  Axes dims(static_cast<size_t>(v.ndim()));
  std::iota(dims.begin(), dims.end(), int64_t(0));
  return lax::mul(lax::broadcast_in_dim(v, s, dims), eye_as(s, v.dtype()));
}

// v [..., n] broadcast along a new axis at `at` (rows: [..., 1->n, n] when at = ndim - 1 of the result).
Array bcast_row(const Array& v, int64_t n_rows) {  // [..., n] -> [..., n_rows, n], v repeated per row
  Shape s = v.shape();
  s.insert(s.end() - 1, n_rows);
  Axes dims;
  for (int64_t i = 0; i < v.ndim() - 1; ++i) dims.push_back(i);
  dims.push_back(v.ndim());
  return lax::broadcast_in_dim(v, s, dims);
}
Array bcast_col(const Array& v, int64_t n_cols) {  // [..., n] -> [..., n, n_cols], v repeated per column
  Shape s = v.shape();
  s.push_back(n_cols);
  Axes dims(static_cast<size_t>(v.ndim()));
  std::iota(dims.begin(), dims.end(), int64_t(0));
  return lax::broadcast_in_dim(v, s, dims);
}

// The real part of z as z's (complex) dtype; z itself when it is real.
Array re_as(const Array& z) {
  return is_complex(z.dtype()) ? lax::convert_element_type(lax::real(z), z.dtype()) : z;
}

// The Hermitian (symmetric) matrix a function of a's lower triangle sees when a moves by t:
// tril(t, -1) + Re diag(t) + tril(t, -1)^H.
Array sym_from_lower(const Array& t) {
  Array low = band(t, true, -1);
  return lax::add(lax::add(low, mH(low)), re_as(lax::mul(t, eye_as(t.shape(), t.dtype()))));
}

Arrays no_tangents(size_t n) { return Arrays(n); }

// ---- shape checks --------------------------------------------------------------------------------------
void check_float(const Primitive& p, AvalPtrs in) {
  for (auto* a : in)
    if (a->dtype != DType::f32 && a->dtype != DType::f64 && !is_complex(a->dtype))
      type_error(p, in, "takes f32, f64, c64 or c128 operands (bf16 and f16 have too few digits for a factorization)");
}
void check_matrix(const Primitive& p, AvalPtrs in, const Aval& a, bool square) {
  if (a.ndim() < 2) shape_error(p, in, "needs an operand with at least two dimensions");
  if (square && a.shape[a.ndim() - 1] != a.shape[a.ndim() - 2]) shape_error(p, in, "needs square matrices");
}

// The number of matrices in a stack [..., m, n].
int64_t batch_count(const Aval& a) {
  int64_t b = 1;
  for (int64_t i = 0; i + 2 < a.ndim(); ++i) b *= a.shape[i];
  return b;
}
char* out_ptr(Array& a) { return static_cast<char*>(a.concrete()->data()); }

// f(b) for each matrix b of a stack, the matrices spread over the cores (LAPACK factors one at a time, and a
// batch of small ones would otherwise leave all but one core idle). An error is raised after the loop, on
// the calling thread.
template <class F>
void for_each_matrix(int64_t count, const F& f) {
  if (count <= 1) {
    if (count == 1) f(int64_t(0));
    return;
  }
  std::exception_ptr error;
  std::mutex mu;
  cpu::parallel_for(count, 1, [&](int64_t b0, int64_t b1) {
    try {
      for (int64_t b = b0; b < b1; ++b) f(b);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      if (!error) error = std::current_exception();
    }
  });
  if (error) std::rethrow_exception(error);
}

// n elements of dtype d set to NaN (both parts of complex ones).
void nan_fill(DType d, void* p, int64_t n) {
  if (is_complex(d)) {
    d = real_dtype(d);
    n *= 2;
  }
  if (d == DType::f32) {
    std::fill_n(static_cast<float*>(p), n, std::numeric_limits<float>::quiet_NaN());
  } else {
    std::fill_n(static_cast<double*>(p), n, std::numeric_limits<double>::quiet_NaN());
  }
}

// ---- cholesky ------------------------------------------------------------------------------------------
Avals cholesky_shape(const Primitive& p, AvalPtrs in, const Params&) {
  check_arity(p, in, 1);
  check_float(p, in);
  check_matrix(p, in, *in[0], true);
  return {*in[0]};
}

Arrays cholesky_impl(const Primitive&, std::span<const Array> in, std::span<const Aval> out, const Params&) {
  Arrays res = alloc_outputs(out);
  const Aval& a = out[0];
  int64_t n = a.shape.back(), sz = n * n * static_cast<int64_t>(itemsize(a.dtype));
  std::memcpy(out_ptr(res[0]), in[0].raw_data(), static_cast<size_t>(sz * batch_count(a)));
  for_each_matrix(batch_count(a), [&](int64_t b) {
    char* m = out_ptr(res[0]) + b * sz;
    if (cpu::lapack::cholesky(a.dtype, m, n) != 0) nan_fill(a.dtype, m, n * n);  // not positive definite (JAX)
  });
  return res;
}

// L' = L phi(L^-1 S' L^-H), phi: the lower triangle with the diagonal halved (Murray 2016, as JAX).
JvpResult cholesky_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                       const Params& params) {
  Array l = graft::bind(p, primals, params)[0];
  if (is_zero(tangents[0])) return {{l}, no_tangents(1)};
  Array s = sym_from_lower(tangents[0]);
  Array tmp = lax::triangular_solve(l, s, /*left_side=*/false, /*lower=*/true, /*transpose_a=*/true,
                                    /*unit_diagonal=*/false, /*conjugate_a=*/true);
  Array x = lax::triangular_solve(l, tmp, /*left_side=*/true, /*lower=*/true, /*transpose_a=*/false);
  Array half = lax::sub(band(x, true), lax::mul(lax::full({}, 0.5, x.dtype()), lax::mul(x, eye_as(x.shape(), x.dtype()))));
  return {{l}, {mm(l, half)}};
}

BatchResult front_batch(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                        const BatchInfo& axis, const Params& params) {
  Arrays xs;
  for (size_t i = 0; i < vals.size(); ++i) xs.push_back(batch_to_front(vals[i], dims[i], axis.size));
  Arrays out = graft::bind(p, xs, params);
  return {out, BatchDims(out.size(), 0)};
}

// ---- triangular_solve ----------------------------------------------------------------------------------
Avals trsm_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  check_arity(p, in, 2);
  check_float(p, in);
  const Aval &a = *in[0], &b = *in[1];
  check_matrix(p, in, a, true);
  if (b.ndim() != a.ndim()) shape_error(p, in, "a and b must have the same rank");
  for (int64_t i = 0; i + 2 < a.ndim(); ++i)
    if (a.shape[i] != b.shape[i]) shape_error(p, in, "a and b must have the same batch dimensions");
  bool left = params.get_bool("left_side");
  int64_t m = a.shape.back(), k = left ? b.shape[b.ndim() - 2] : b.shape[b.ndim() - 1];
  if (k != m)
    shape_error(p, in, std::string(left ? "b's rows" : "b's columns") + " must match a's size " + std::to_string(m));
  if (a.dtype != b.dtype) type_error(p, in, "a and b must have the same dtype");
  return {b};
}

// conjugate_a (JAX's) arrived after programs were saved without it: absent means false.
bool conjugate_a(const Params& params) { return params.has("conjugate_a") && params.get_bool("conjugate_a"); }

Arrays trsm_impl(const Primitive&, std::span<const Array> in, std::span<const Aval> out, const Params& params) {
  Arrays res = alloc_outputs(out);
  const Aval& b = out[0];
  bool left = params.get_bool("left_side"), lower = params.get_bool("lower");
  bool trans = params.get_bool("transpose_a"), unit = params.get_bool("unit_diagonal"), conj = conjugate_a(params);
  int64_t m = b.shape[b.ndim() - 2], n = b.shape.back(), k = in[0].shape().back();
  int64_t isz = static_cast<int64_t>(itemsize(b.dtype)), bsz = m * n * isz, asz = k * k * isz;
  std::memcpy(out_ptr(res[0]), in[1].raw_data(), static_cast<size_t>(bsz * batch_count(b)));
  const char* a = static_cast<const char*>(in[0].raw_data());
  for_each_matrix(batch_count(b), [&](int64_t i) {
    cpu::lapack::triangular_solve(b.dtype, left, lower, trans, conj, unit, m, n, a + i * asz,
                                  out_ptr(res[0]) + i * bsz);
  });
  return res;
}

// The part of a tangent of a that the solve reads: its triangle, without the diagonal when it is unit.
Array trsm_tri(const Array& t, const Params& params) {
  bool lower = params.get_bool("lower");
  return band(t, lower, params.get_bool("unit_diagonal") ? (lower ? -1 : 1) : 0);
}

// op(A) X = B: X' = op(A)^-1 (B' - op(A') X); X op(A) = B: X' = (B' - X op(A')) op(A)^-1.
JvpResult trsm_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                   const Params& params) {
  Array x = graft::bind(p, primals, params)[0];
  Array rhs;
  if (!is_zero(tangents[1])) rhs = tangents[1];
  if (!is_zero(tangents[0])) {
    Array da = trsm_tri(tangents[0], params);
    if (conjugate_a(params) && is_complex(da.dtype())) da = lax::conj(da);
    if (params.get_bool("transpose_a")) da = mT(da);
    Array prod = params.get_bool("left_side") ? mm(da, x) : mm(x, da);
    rhs = rhs.valid() ? lax::sub(rhs, prod) : lax::neg(prod);
  }
  if (!rhs.valid()) return {{x}, no_tangents(1)};
  return {{x}, {graft::bind(p, {primals[0], rhs}, params)[0]}};
}

// Linear in b: b's cotangent solves with op(A)^T on the same side (the transpose, not the adjoint: JAX's
// transposes are taken with respect to the bilinear pairing, so conjugate_a stays as it is).
Arrays trsm_transpose(const Primitive& p, std::span<const Array> cts, std::span<const TArg> args,
                      const Params& params) {
  if (args[0].linear) fail<ValueError>("triangular_solve: transposed with respect to a (it is linear in b only)");
  if (is_zero(cts[0])) return {Array(), Array()};
  Array ct = graft::bind(p, {args[0].value, cts[0]}, params.with("transpose_a", !params.get_bool("transpose_a")))[0];
  return {Array(), ct};
}

// ---- lu -------------------------------------------------------------------------------------------------
Avals lu_shape(const Primitive& p, AvalPtrs in, const Params&) {
  check_arity(p, in, 1);
  check_float(p, in);
  const Aval& a = *in[0];
  check_matrix(p, in, a, false);
  int64_t m = a.shape[a.ndim() - 2], n = a.shape.back();
  Shape batch(a.shape.begin(), a.shape.end() - 2), piv = batch, perm = batch;
  piv.push_back(std::min(m, n));
  perm.push_back(m);
  return {a, Aval(piv, DType::i32), Aval(perm, DType::i32)};
}

Arrays lu_impl(const Primitive&, std::span<const Array> in, std::span<const Aval> out, const Params&) {
  Arrays res = alloc_outputs(out);
  const Aval& a = out[0];
  int64_t m = a.shape[a.ndim() - 2], n = a.shape.back(), k = std::min(m, n);
  int64_t sz = m * n * static_cast<int64_t>(itemsize(a.dtype));
  std::memcpy(out_ptr(res[0]), in[0].raw_data(), static_cast<size_t>(sz * batch_count(a)));
  auto* piv = reinterpret_cast<int32_t*>(out_ptr(res[1]));
  auto* perm = reinterpret_cast<int32_t*>(out_ptr(res[2]));
  for_each_matrix(batch_count(a), [&](int64_t b) {
    int32_t* pv = piv + b * k;
    cpu::lapack::lu(a.dtype, out_ptr(res[0]) + b * sz, m, n, pv);
    int32_t* pm = perm + b * m;
    std::iota(pm, pm + m, 0);
    for (int64_t i = 0; i < k; ++i) std::swap(pm[i], pm[pv[i]]);
  });
  return res;
}

// The rows of x [..., m, n] in the order perm [..., m] gives.
Array permute_rows(const Array& x, const Array& perm) {
  Shape s = x.shape();
  Axes dims(static_cast<size_t>(perm.ndim()));
  std::iota(dims.begin(), dims.end(), int64_t(0));
  Array idx = lax::broadcast_in_dim(perm, s, dims);
  return lax::take_along_axis(x, idx, x.ndim() - 2);
}

// JAX's rule (after Murray): with P A' permuted, L^-1 P A' U^-1 splits into L' (strictly lower part, through
// L) and U' (upper part, through U); non-square operands pad L and U to square with identity blocks.
JvpResult lu_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                 const Params& params) {
  Arrays outs = graft::bind(p, primals, params);
  if (is_zero(tangents[0])) return {outs, no_tangents(3)};
  const Array& lu = outs[0];
  int64_t nd = lu.ndim(), m = rows(lu), n = cols(lu), k = std::min(m, n);
  DType d = lu.dtype();
  Array x = permute_rows(tangents[0], outs[2]);
  auto cfg = [nd](int64_t lo_r, int64_t hi_r, int64_t lo_c, int64_t hi_c) {
    std::vector<IntList> c(static_cast<size_t>(nd), IntList{0, 0, 0});
    c[static_cast<size_t>(nd - 2)] = {lo_r, hi_r, 0};
    c[static_cast<size_t>(nd - 1)] = {lo_c, hi_c, 0};
    return c;
  };
  Shape s_lk = lu.shape(), s_kn = lu.shape();
  s_lk.back() = k;
  s_kn[static_cast<size_t>(nd - 2)] = k;
  Shape zero(static_cast<size_t>(nd), 0);
  Array lpart = lax::slice(lu, zero, s_lk), upart = lax::slice(lu, zero, s_kn);
  Array z = lax::full({}, 0, d);
  Shape sq_m = lu.shape(), sq_n = lu.shape();
  sq_m.back() = m;
  sq_n[static_cast<size_t>(nd - 2)] = n;
  Array l = lax::add(lax::pad(band(lpart, true, -1), z, cfg(0, 0, 0, m - k)), eye_as(sq_m, d));
  Array u = lax::pad(band(upart, false), z, cfg(0, n - k, 0, 0));
  if (n > k) {  // identity in the trailing block of U
    Array e = eye_as(sq_n, d);
    Array i = lax::iota(DType::i32, sq_n, nd - 2);
    u = lax::add(u, lax::select(lax::ge(i, lax::full({}, static_cast<double>(k), DType::i32)), e, zeros_as(e)));
  }
  Array la = lax::triangular_solve(l, x, true, true, false, true);
  Array lau = lax::triangular_solve(u, la, false, false, false, false);
  Array dl = mm(l, band(lau, true, -1)), du = mm(band(lau, false), u);
  return {outs, {lax::add(dl, du), Array(), Array()}};
}

// ---- lu_pivots_to_permutation ----------------------------------------------------------------------------
Avals pivots_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  check_arity(p, in, 1);
  const Aval& a = *in[0];
  if (a.dtype != DType::i32) type_error(p, in, "takes int32 pivots");
  if (a.ndim() < 1) shape_error(p, in, "needs pivots with at least one dimension");
  int64_t m = params.get_int("permutation_size");
  if (m < a.shape.back()) shape_error(p, in, "permutation_size " + std::to_string(m) + " is below the pivots' count");
  Shape s = a.shape;
  s.back() = m;
  return {Aval(s, DType::i32)};
}

Arrays pivots_impl(const Primitive& p, std::span<const Array> in, std::span<const Aval> out, const Params&) {
  Arrays res = alloc_outputs(out);
  int64_t k = in[0].shape().back(), m = out[0].shape.back(), nb = 1;
  for (int64_t i = 0; i + 1 < out[0].ndim(); ++i) nb *= out[0].shape[i];
  const auto* piv = static_cast<const int32_t*>(in[0].raw_data());
  auto* perm = reinterpret_cast<int32_t*>(out_ptr(res[0]));
  for (int64_t b = 0; b < nb; ++b) {
    int32_t* pm = perm + b * m;
    std::iota(pm, pm + m, 0);
    for (int64_t i = 0; i < k; ++i) {
      int32_t j = piv[b * k + i];
      if (j < 0 || j >= m)
        fail<ValueError>(p.name, ": pivot ", j, " out of range for permutations of size ", m);
      std::swap(pm[i], pm[j]);
    }
  }
  return res;
}

// ---- eigh -----------------------------------------------------------------------------------------------
Avals eigh_shape(const Primitive& p, AvalPtrs in, const Params&) {
  check_arity(p, in, 1);
  check_float(p, in);
  check_matrix(p, in, *in[0], true);
  Shape w(in[0]->shape.begin(), in[0]->shape.end() - 1);
  return {*in[0], Aval(w, real_dtype(in[0]->dtype))};
}

Arrays eigh_impl(const Primitive&, std::span<const Array> in, std::span<const Aval> out, const Params&) {
  Arrays res = alloc_outputs(out);
  const Aval& a = out[0];
  int64_t n = a.shape.back(), isz = static_cast<int64_t>(itemsize(a.dtype)), sz = n * n * isz;
  int64_t wsz = static_cast<int64_t>(itemsize(real_dtype(a.dtype)));
  std::memcpy(out_ptr(res[0]), in[0].raw_data(), static_cast<size_t>(sz * batch_count(a)));
  for_each_matrix(batch_count(a), [&](int64_t b) {
    char *v = out_ptr(res[0]) + b * sz, *w = out_ptr(res[1]) + b * n * wsz;
    if (cpu::lapack::eigh(a.dtype, v, n, w) != 0) {
      nan_fill(a.dtype, v, n * n);
      nan_fill(real_dtype(a.dtype), w, n);
    }
  });
  return res;
}

// With S' the Hermitian tangent: w' = Re diag(V^H S' V), V' = V (F o V^H S' V), F_ij = 1 / (w_j - w_i) off
// the diagonal and 0 on it (repeated eigenvalues make V' infinite: their eigenvectors are not unique). For
// complex V this is the gauge in which V^H V' has a zero diagonal (JAX's).
JvpResult eigh_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                   const Params& params) {
  Arrays outs = graft::bind(p, primals, params);
  if (is_zero(tangents[0])) return {outs, no_tangents(2)};
  const Array &v = outs[0], &w = outs[1];
  Array s = sym_from_lower(tangents[0]);
  Array vsv = mm(mH(v), mm(s, v));
  int64_t n = w.shape().back();
  Array eye = eye_as(v.shape(), w.dtype());
  Array diff = lax::sub(bcast_row(w, n), bcast_col(w, n));  // [i, j] = w_j - w_i
  Array f = lax::sub(lax::div(lax::full({}, 1, w.dtype()), lax::add(eye, diff)), eye);
  if (is_complex(v.dtype())) f = lax::convert_element_type(f, v.dtype());
  Array dw = diag(vsv);
  if (is_complex(dw.dtype())) dw = lax::real(dw);
  return {outs, {mm(v, lax::mul(f, vsv)), dw}};
}

// ---- qr -------------------------------------------------------------------------------------------------
Avals qr_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  check_arity(p, in, 1);
  check_float(p, in);
  const Aval& a = *in[0];
  check_matrix(p, in, a, false);
  int64_t m = a.shape[a.ndim() - 2], n = a.shape.back(), k = std::min(m, n);
  bool full = params.get_bool("full_matrices");
  Shape q = a.shape, r = a.shape;
  q.back() = full ? m : k;
  r[r.size() - 2] = full ? m : k;
  return {Aval(q, a.dtype), Aval(r, a.dtype)};
}

Arrays qr_impl(const Primitive&, std::span<const Array> in, std::span<const Aval> out, const Params& params) {
  Arrays res = alloc_outputs(out);
  const Aval& a = in[0].aval();
  int64_t m = a.shape[a.ndim() - 2], n = a.shape.back(), isz = static_cast<int64_t>(itemsize(a.dtype));
  int64_t qsz = out[0].shape.back() * m * isz, rsz = out[1].shape[out[1].ndim() - 2] * n * isz;
  const char* src = static_cast<const char*>(in[0].raw_data());
  bool full = params.get_bool("full_matrices");
  for_each_matrix(batch_count(a), [&](int64_t b) {
    cpu::lapack::qr(a.dtype, src + b * m * n * isz, m, n, full, out_ptr(res[0]) + b * qsz, out_ptr(res[1]) + b * rsz);
  });
  return res;
}

// JAX's rule: with C = Q^H A' R^-1, Q' = Q (W - C) + A' R^-1 and R' = (C - W) R, W = the skew-Hermitian part
// built from C's strict lower triangle, plus i Im diag(C) for complex C (so that R' keeps R's diagonal real,
// LAPACK's convention). Defined for m >= n with reduced factors, or square ones.
JvpResult qr_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                 const Params& params) {
  Arrays outs = graft::bind(p, primals, params);
  if (is_zero(tangents[0])) return {outs, no_tangents(2)};
  int64_t m = rows(primals[0]), n = cols(primals[0]);
  if (m < n || (params.get_bool("full_matrices") && m != n))
    fail<NotImplementedError>("qr: derivatives are defined for m >= n with reduced factors (or square matrices), got ",
                              primals[0].aval().str(), params.get_bool("full_matrices") ? " with full_matrices" : "");
  const Array &q = outs[0], &r = outs[1];
  Array dx_rinv = lax::triangular_solve(r, tangents[0], false, false, false, false);
  Array c = mm(mH(q), dx_rinv);
  Array low = band(c, true, -1);
  Array w = lax::sub(low, mH(low));
  if (is_complex(c.dtype())) w = lax::add(w, lax::mul(eye_as(c.shape(), c.dtype()), lax::sub(c, re_as(c))));
  Array dq = lax::add(mm(q, lax::sub(w, c)), dx_rinv);
  Array dr = mm(lax::sub(c, w), r);
  return {outs, {dq, dr}};
}

// ---- svd ------------------------------------------------------------------------------------------------
Avals svd_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  check_arity(p, in, 1);
  check_float(p, in);
  const Aval& a = *in[0];
  check_matrix(p, in, a, false);
  int64_t m = a.shape[a.ndim() - 2], n = a.shape.back(), k = std::min(m, n);
  Shape s(a.shape.begin(), a.shape.end() - 2);
  Shape u = s, vt = s;
  s.push_back(k);
  DType sd = real_dtype(a.dtype);
  if (!params.get_bool("compute_uv")) return {Aval(s, sd)};
  bool full = params.get_bool("full_matrices");
  u.push_back(m);
  u.push_back(full ? m : k);
  vt.push_back(full ? n : k);
  vt.push_back(n);
  return {Aval(s, sd), Aval(u, a.dtype), Aval(vt, a.dtype)};
}

Arrays svd_impl(const Primitive&, std::span<const Array> in, std::span<const Aval> out, const Params& params) {
  Arrays res = alloc_outputs(out);
  const Aval& a = in[0].aval();
  bool uv = params.get_bool("compute_uv"), full = params.get_bool("full_matrices");
  int64_t m = a.shape[a.ndim() - 2], n = a.shape.back(), k = std::min(m, n), isz = static_cast<int64_t>(itemsize(a.dtype));
  int64_t ssz = static_cast<int64_t>(itemsize(real_dtype(a.dtype)));
  int64_t usz = uv ? out[1].shape.back() * m * isz : 0, vsz = uv ? out[2].shape[out[2].ndim() - 2] * n * isz : 0;
  const char* src = static_cast<const char*>(in[0].raw_data());
  for_each_matrix(batch_count(a), [&](int64_t b) {
    char* s = out_ptr(res[0]) + b * k * ssz;
    char* u = uv ? out_ptr(res[1]) + b * usz : nullptr;
    char* vt = uv ? out_ptr(res[2]) + b * vsz : nullptr;
    if (cpu::lapack::svd(a.dtype, src + b * m * n * isz, m, n, full, uv, s, u, vt) != 0) {
      nan_fill(real_dtype(a.dtype), s, k);
      if (uv) {
        nan_fill(a.dtype, u, usz / isz);
        nan_fill(a.dtype, vt, vsz / isz);
      }
    }
  });
  return res;
}

// JAX's rule (Townsend's, extended to rectangular matrices). With dS = U^H A' V: s' = Re diag(dS);
// U' = U (F o (dS S + S dS^H) + (dS - dS^H)/2 S^-1) [+ (I - U U^H) A' V S^-1 when m > n];
// V' = V (F o (S dS + dS^H S)) [+ (I - V V^H) A'^H U S^-1 when n > m]; F_ij = 1 / (s_j^2 - s_i^2), 0 where
// that is 0. Needs reduced factors (full ones' extra vectors are not unique). Complex singular vectors
// are unique up to a phase per pair (u_k, v_k): the rule's U' and V' are one choice of it (JAX's).
JvpResult svd_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                  const Params& params) {
  bool uv = params.get_bool("compute_uv");
  if (uv && params.get_bool("full_matrices"))
    fail<NotImplementedError>("svd: derivatives need full_matrices=false (the extra singular vectors of full "
                              "ones are not unique), got ", primals[0].aval().str());
  Arrays outs = graft::bind(p, primals, params.with("compute_uv", true).with("full_matrices", false));
  Arrays prim = uv ? outs : Arrays{outs[0]};
  if (is_zero(tangents[0])) return {prim, no_tangents(prim.size())};
  const Array &s = outs[0], &u = outs[1], &vt = outs[2];
  const Array& da = tangents[0];
  DType cd = u.dtype();  // the operand's dtype (complex or real)
  auto as_c = [cd](const Array& x) { return x.dtype() == cd ? x : lax::convert_element_type(x, cd); };
  Array v = mH(vt);
  Array ds_mat = mm(mH(u), mm(da, v));
  Array ds = diag(ds_mat);
  if (is_complex(cd)) ds = lax::real(ds);
  if (!uv) return {prim, {ds}};
  int64_t k = s.shape().back(), m = rows(primals[0]), n = cols(primals[0]);
  DType d = s.dtype();
  Array one = lax::full({}, 1, d), zero = lax::full({}, 0, d);
  Array srow = bcast_row(s, k), scol = bcast_col(s, k);  // [i, j] = s_j and s_i
  Array diffs = lax::mul(lax::add(srow, scol), lax::sub(srow, scol));
  Array dz = lax::convert_element_type(lax::eq(diffs, zero), d);
  Array f = as_c(lax::sub(lax::div(one, lax::add(diffs, dz)), dz));
  Array dss = lax::mul(as_c(srow), ds_mat), sds = lax::mul(as_c(scol), ds_mat);
  Array sz = lax::convert_element_type(lax::eq(s, zero), d);
  Array s_inv = lax::sub(lax::div(one, lax::add(s, sz)), sz);
  Array dudv_diag =
      lax::mul(lax::mul(lax::full({}, 0.5, cd), lax::sub(ds_mat, mH(ds_mat))), as_c(diag_embed(s_inv)));
  Array du = mm(u, lax::add(lax::mul(f, lax::add(dss, mH(dss))), dudv_diag));
  Array dv = mm(v, lax::mul(f, lax::add(sds, mH(sds))));
  if (m > n) {
    Array dav = mm(da, v);
    du = lax::add(du, lax::div(lax::sub(dav, mm(u, mm(mH(u), dav))), as_c(bcast_row(s, m))));
  }
  if (n > m) {
    Array dahu = mm(mH(da), u);
    dv = lax::add(dv, lax::div(lax::sub(dahu, mm(v, mm(vt, dahu))), as_c(bcast_row(s, n))));
  }
  return {prim, {ds, du, mH(dv)}};
}

// ---- eig ------------------------------------------------------------------------------------------------
bool eig_left(const Params& p) { return p.get_bool("compute_left_eigenvectors"); }
bool eig_right(const Params& p) { return p.get_bool("compute_right_eigenvectors"); }

Avals eig_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  check_arity(p, in, 1);
  check_float(p, in);
  check_matrix(p, in, *in[0], true);
  DType c = complex_dtype(in[0]->dtype);
  Shape w(in[0]->shape.begin(), in[0]->shape.end() - 1);
  Avals out{Aval(w, c)};
  if (eig_left(params)) out.emplace_back(in[0]->shape, c);
  if (eig_right(params)) out.emplace_back(in[0]->shape, c);
  return out;
}

Arrays eig_impl(const Primitive&, std::span<const Array> in, std::span<const Aval> out, const Params& params) {
  Arrays res = alloc_outputs(out);
  const Aval& a = in[0].aval();
  bool left = eig_left(params), right = eig_right(params);
  DType c = complex_dtype(a.dtype);
  int64_t n = a.shape.back(), isz = static_cast<int64_t>(itemsize(a.dtype)), csz = static_cast<int64_t>(itemsize(c));
  const char* src = static_cast<const char*>(in[0].raw_data());
  for_each_matrix(batch_count(a), [&](int64_t b) {
    char* w = out_ptr(res[0]) + b * n * csz;
    char* vl = left ? out_ptr(res[1]) + b * n * n * csz : nullptr;
    char* vr = right ? out_ptr(res[left ? 2 : 1]) + b * n * n * csz : nullptr;
    if (cpu::lapack::eig(a.dtype, src + b * n * n * isz, n, left, right, w, vl, vr) != 0) {
      nan_fill(c, w, n);
      if (vl) nan_fill(c, vl, n * n);
      if (vr) nan_fill(c, vr, n * n);
    }
  });
  return res;
}

// JAX's rule for the eigenvalues: w' = diag(V^-1 A' V) with V the right eigenvectors (Giles 2008, eq. 4.60
// of arXiv:1701.00392). The eigenvectors' derivatives hold only under assumptions the program cannot check
// (distinct eigenvalues, no tie for the largest component), so, as JAX without enable_eigvec_derivs, they
// raise.
JvpResult eig_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                  const Params& params) {
  if (is_zero(tangents[0])) return {graft::bind(p, primals, params), no_tangents(eig_left(params) + eig_right(params) + 1)};
  if (eig_left(params) || eig_right(params))
    fail<NotImplementedError>("eig: derivatives of non-symmetric eigenvectors are not supported (JAX's need "
                              "enable_eigvec_derivs); compute the eigenvalues alone (compute_left_eigenvectors="
                              "false, compute_right_eigenvectors=false) to differentiate them, got ",
                              primals[0].aval().str());
  Arrays outs = graft::bind(p, primals, params.with("compute_right_eigenvectors", true));
  Array w = outs[0];
  const Array& vr = outs[1];
  Array da = tangents[0];
  if (da.dtype() != vr.dtype()) da = lax::convert_element_type(da, vr.dtype());
  // V^-1 (A' V) through V's LU factors: V[perm] = L U
  Arrays f = lax::lu(vr);
  Array rhs = permute_rows(mm(da, vr), f[2]);
  Array y = lax::triangular_solve(f[0], rhs, true, true, false, true);
  Array x = lax::triangular_solve(f[0], y, true, false, false, false);
  return {{w}, {diag(x)}};
}

}  // namespace

const Primitive cholesky_p{"cholesky", 0, &cholesky_shape, &cholesky_impl, &cholesky_jvp, nullptr, &front_batch};
const Primitive triangular_solve_p{"triangular_solve", 0,          &trsm_shape,     &trsm_impl,
                                   &trsm_jvp,          &trsm_transpose, &front_batch};
const Primitive lu_p{"lu", kMultipleResults, &lu_shape, &lu_impl, &lu_jvp, nullptr, &front_batch};
const Primitive lu_pivots_to_permutation_p{"lu_pivots_to_permutation", kNotDifferentiable, &pivots_shape,
                                           &pivots_impl, &zero_jvp, nullptr, &front_batch};
const Primitive eigh_p{"eigh", kMultipleResults, &eigh_shape, &eigh_impl, &eigh_jvp, nullptr, &front_batch};
const Primitive eig_p{"eig", kMultipleResults, &eig_shape, &eig_impl, &eig_jvp, nullptr, &front_batch};
const Primitive qr_p{"qr", kMultipleResults, &qr_shape, &qr_impl, &qr_jvp, nullptr, &front_batch};
const Primitive svd_p{"svd", kMultipleResults, &svd_shape, &svd_impl, &svd_jvp, nullptr, &front_batch};

}  // namespace graft::prims

namespace graft::lax {
Array cholesky(const Array& x) { return graft::bind(prims::cholesky_p, {x}, {})[0]; }
Array triangular_solve(const Array& a, const Array& b, bool left_side, bool lower, bool transpose_a,
                       bool unit_diagonal, bool conjugate_a) {
  return graft::bind(prims::triangular_solve_p, {a, b},
                     {{"left_side", left_side},
                      {"lower", lower},
                      {"transpose_a", transpose_a},
                      {"conjugate_a", conjugate_a},
                      {"unit_diagonal", unit_diagonal}})[0];
}
Arrays lu(const Array& x) { return graft::bind(prims::lu_p, {x}, {}); }
Array lu_pivots_to_permutation(const Array& pivots, int64_t permutation_size) {
  return graft::bind(prims::lu_pivots_to_permutation_p, {pivots}, {{"permutation_size", permutation_size}})[0];
}
Arrays eigh(const Array& x) { return graft::bind(prims::eigh_p, {x}, {}); }
Arrays eig(const Array& x, bool compute_left_eigenvectors, bool compute_right_eigenvectors) {
  return graft::bind(prims::eig_p, {x},
                     {{"compute_left_eigenvectors", compute_left_eigenvectors},
                      {"compute_right_eigenvectors", compute_right_eigenvectors}});
}
Arrays qr(const Array& x, bool full_matrices) {
  return graft::bind(prims::qr_p, {x}, {{"full_matrices", full_matrices}});
}
Arrays svd(const Array& x, bool full_matrices, bool compute_uv) {
  return graft::bind(prims::svd_p, {x}, {{"full_matrices", full_matrices}, {"compute_uv", compute_uv}});
}
}  // namespace graft::lax
