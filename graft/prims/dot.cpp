// dot_general: tensor contraction with batch dimensions. All its rules. The CPU kernel lays the
// operands out as [B, M, K] x [B, K, N] (transposing only when no GEMM transpose flag can avoid it)
// and calls GEMM (OpenBLAS for f32/f64).
#include "graft/prims/dot.h"

#include <numeric>

#include "graft/runtime/cpu/gemm.h"
#include "graft/prims/rules.h"

namespace graft::prims {

namespace {

const lax::DotDims& ddims(const Params& p) { return p.get_object<lax::DotDims>("dimension_numbers"); }

std::optional<DType> preferred(const Params& p) {
  const ParamValue* v = p.find("preferred_element_type");
  if (v && std::holds_alternative<DType>(*v)) return std::get<DType>(*v);
  return std::nullopt;
}

bool contains(const IntList& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

IntList remaining(int64_t n, const IntList& a, const IntList& b) {
  IntList out;
  for (int64_t i = 0; i < n; ++i)
    if (!contains(a, i) && !contains(b, i)) out.push_back(i);
  return out;
}

Avals dot_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  check_arity(p, in, 2);
  const Aval &l = *in[0], &r = *in[1];
  const auto& d = ddims(params);
  if (l.dtype != r.dtype) type_error(p, in, "operands must have the same dtype");
  if (d.lhs_contract.size() != d.rhs_contract.size() || d.lhs_batch.size() != d.rhs_batch.size())
    shape_error(p, in, "contracting and batch dimension lists must pair up");
  auto check_dims = [&](const IntList& v, int64_t nd) {
    for (auto x : v)
      if (x < 0 || x >= nd) shape_error(p, in, "dimension " + std::to_string(x) + " out of range");
  };
  check_dims(d.lhs_contract, l.ndim());
  check_dims(d.lhs_batch, l.ndim());
  check_dims(d.rhs_contract, r.ndim());
  check_dims(d.rhs_batch, r.ndim());
  for (size_t i = 0; i < d.lhs_contract.size(); ++i)
    if (l.shape[d.lhs_contract[i]] != r.shape[d.rhs_contract[i]])
      shape_error(p, in, "contracting dimensions have different sizes (" +
                             std::to_string(l.shape[d.lhs_contract[i]]) + " vs " +
                             std::to_string(r.shape[d.rhs_contract[i]]) + ")");
  for (size_t i = 0; i < d.lhs_batch.size(); ++i)
    if (l.shape[d.lhs_batch[i]] != r.shape[d.rhs_batch[i]]) shape_error(p, in, "batch dimensions have different sizes");
  Shape out;
  for (auto b : d.lhs_batch) out.push_back(l.shape[b]);
  for (auto f : remaining(l.ndim(), d.lhs_contract, d.lhs_batch)) out.push_back(l.shape[f]);
  for (auto f : remaining(r.ndim(), d.rhs_contract, d.rhs_batch)) out.push_back(r.shape[f]);
  DType od = preferred(params).value_or(l.dtype);
  return {Aval(out, od, l.weak_type && r.weak_type)};
}

// Puts x into the order `perm`, copying only if needed.
Array permuted(const Array& x, const IntList& perm) {
  bool id = true;
  for (size_t i = 0; i < perm.size(); ++i) id = id && perm[i] == static_cast<int64_t>(i);
  if (id) return x;
  return eval_primitive(transpose_p, {&x, 1}, {{"permutation", perm}})[0];
}

bool is_identity_after(const IntList& a, const IntList& b, const IntList& c) {
  int64_t k = 0;
  for (auto* v : {&a, &b, &c})
    for (auto x : *v)
      if (x != k++) return false;
  return true;
}

IntList row_major_strides(const Shape& s) {
  IntList st(s.size());
  int64_t n = 1;
  for (size_t i = s.size(); i-- > 0;) st[i] = n, n *= s[i];
  return st;
}

// The stride of dims `ds` of an operand (strides `st`) taken as one dimension, in that order: each
// non-unit dim's stride is the next non-unit one's times its size. nullopt where they do not merge.
std::optional<int64_t> merged_stride(const Shape& s, const IntList& st, const IntList& ds) {
  std::optional<int64_t> stride;
  int64_t inner = 0;  // the previous non-unit dim, innermost so far
  for (size_t i = ds.size(); i-- > 0;) {
    int64_t x = ds[i];
    if (s[x] == 1) continue;
    if (!stride) {
      stride = st[x];
    } else if (st[x] != st[inner] * s[inner]) {
      return std::nullopt;
    }
    inner = x;
  }
  return stride.value_or(1);
}

// The product as one strided batched matmul (cpu::strided_matmul): operands read in place, whatever
// the order of their batch, free and contracting dims, provided the free dims and the contracting
// dims each merge into one. False (nothing written) where they do not or the kernel declines.
bool strided_product(const Array& l, const Array& r, const lax::DotDims& d, const IntList& lfree, const IntList& rfree,
                     int64_t M, int64_t N, int64_t K, const Array& out) {
  if (M * N * K <= 512) return false;
  IntList ls = row_major_strides(l.shape()), rs = row_major_strides(r.shape());
  auto m = merged_stride(l.shape(), ls, lfree), lk = merged_stride(l.shape(), ls, d.lhs_contract);
  auto n = merged_stride(r.shape(), rs, rfree), rk = merged_stride(r.shape(), rs, d.rhs_contract);
  if (!m || !lk || !n || !rk) return false;
  IntList batch, as, bs;
  for (size_t i = 0; i < d.lhs_batch.size(); ++i) {
    if (l.shape()[d.lhs_batch[i]] == 1) continue;
    batch.push_back(l.shape()[d.lhs_batch[i]]);
    as.push_back(ls[d.lhs_batch[i]]);
    bs.push_back(rs[d.rhs_batch[i]]);
  }
  as.push_back(*m), as.push_back(*lk);
  bs.push_back(*rk), bs.push_back(*n);
  return cpu::strided_matmul(out.dtype(), batch, M, N, K, l.raw_data(), as, r.raw_data(), bs, out.concrete()->data());
}

}  // namespace

void dot_general_into(const Array& lhs, const Array& rhs, const Params& params, const Array& out, double alpha,
                      double beta) {
  const auto& d = ddims(params);
  Array l = lhs, r = rhs;
  DType cd = out.dtype();
  if (l.dtype() != cd) {
    l = eval_primitive(convert_element_type_p, {&l, 1}, {{"new_dtype", cd}, {"weak_type", false}})[0];
    r = eval_primitive(convert_element_type_p, {&r, 1}, {{"new_dtype", cd}, {"weak_type", false}})[0];
  }
  IntList lfree = remaining(l.ndim(), d.lhs_contract, d.lhs_batch);
  IntList rfree = remaining(r.ndim(), d.rhs_contract, d.rhs_batch);
  int64_t B = 1, M = 1, N = 1, K = 1;
  for (auto x : d.lhs_batch) B *= l.shape()[x];
  for (auto x : lfree) M *= l.shape()[x];
  for (auto x : rfree) N *= r.shape()[x];
  for (auto x : d.lhs_contract) K *= l.shape()[x];
  // batched products, and layouts that no transpose flag covers (which would cost a copy), go to one
  // strided matmul where it applies; a single product with at most a transposed operand is a GEMM call
  // (oneDNN's matmul is slower than its sgemm on a transposed A)
  bool lhs_copy = !is_identity_after(d.lhs_batch, lfree, d.lhs_contract) &&
                  !is_identity_after(d.lhs_batch, d.lhs_contract, lfree);
  bool rhs_copy = !is_identity_after(d.rhs_batch, d.rhs_contract, rfree) &&
                  !is_identity_after(d.rhs_batch, rfree, d.rhs_contract);
  if (alpha == 1.0 && beta == 0.0 && (B > 1 || lhs_copy || rhs_copy) && strided_product(l, r, d, lfree, rfree, M, N, K, out))
    return;
  // lhs as [B, M, K] (or [B, K, M] with ta), rhs as [B, K, N] (or [B, N, K] with tb)
  bool ta = false, tb = false;
  if (!is_identity_after(d.lhs_batch, lfree, d.lhs_contract)) {
    if (is_identity_after(d.lhs_batch, d.lhs_contract, lfree)) {
      ta = true;
    } else {
      IntList perm = d.lhs_batch;
      perm.insert(perm.end(), lfree.begin(), lfree.end());
      perm.insert(perm.end(), d.lhs_contract.begin(), d.lhs_contract.end());
      l = permuted(l, perm);
    }
  }
  if (!is_identity_after(d.rhs_batch, d.rhs_contract, rfree)) {
    if (is_identity_after(d.rhs_batch, rfree, d.rhs_contract)) {
      tb = true;
    } else {
      IntList perm = d.rhs_batch;
      perm.insert(perm.end(), d.rhs_contract.begin(), d.rhs_contract.end());
      perm.insert(perm.end(), rfree.begin(), rfree.end());
      r = permuted(r, perm);
    }
  }
  size_t isz = itemsize(cd);
  const char* lp = static_cast<const char*>(l.raw_data());
  const char* rp = static_cast<const char*>(r.raw_data());
  char* op = static_cast<char*>(out.concrete()->data());
  for (int64_t b = 0; b < B; ++b)
    cpu::gemm(cd, ta, tb, M, N, K, lp + b * M * K * static_cast<int64_t>(isz), ta ? M : K,
              rp + b * K * N * static_cast<int64_t>(isz), tb ? K : N, op + b * M * N * static_cast<int64_t>(isz), N,
              alpha, beta);
}

namespace {

Arrays dot_impl(const Primitive&, std::span<const Array> in, std::span<const Aval> out, const Params& params) {
  Array o = Array::empty(out[0]);
  dot_general_into(in[0], in[1], params, o, 1.0, 0.0);
  return {o};
}

JvpResult dot_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                  const Params& params) {
  Array y = bind1(p, primals, params);
  Array t1 = is_zero(tangents[0]) ? Array() : bind1(p, {tangents[0], primals[1]}, params);
  Array t2 = is_zero(tangents[1]) ? Array() : bind1(p, {primals[0], tangents[1]}, params);
  return {{y}, {add_tangents(t1, t2)}};
}

// Cotangent of x in dot_general(x, y) (JAX's _dot_general_transpose_lhs). With swap_ans the answer's
// free dims are ordered (y, x), which is how the rhs rule reuses this one.
Array transpose_lhs(const Array& g, const Aval& x, const Array& y, const IntList& xc, const IntList& yc,
                    const IntList& xb, const IntList& yb, bool swap_ans) {
  IntList x_kept = remaining(x.ndim(), xc, xb);
  IntList y_kept = remaining(y.ndim(), yc, yb);
  int64_t nb = static_cast<int64_t>(xb.size()), nx = static_cast<int64_t>(x_kept.size()),
          ny = static_cast<int64_t>(y_kept.size());
  IntList ans_batch, ans_y;
  for (int64_t i = 0; i < nb; ++i) ans_batch.push_back(i);
  int64_t y_start = swap_ans ? nb : nb + nx;
  for (int64_t i = 0; i < ny; ++i) ans_y.push_back(y_start + i);
  Array yy = y.dtype() == g.dtype() ? y : lax::convert_element_type(y, g.dtype());
  Array prod = lax::dot_general(g, yy, lax::DotDims(ans_y, y_kept, ans_batch, yb));
  // x_contract sorted by the order of y_contract
  IntList order(yc.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return yc[a] < yc[b]; });
  IntList src = xb;
  src.insert(src.end(), x_kept.begin(), x_kept.end());
  for (auto o : order) src.push_back(xc[o]);
  Axes out_axes(src.size());
  for (size_t i = 0; i < src.size(); ++i) out_axes[src[i]] = static_cast<int64_t>(i);
  Array r = lax::transpose(prod, out_axes);
  return r.dtype() == x.dtype ? r : lax::convert_element_type(r, x.dtype);
}

Arrays dot_transpose(const Primitive&, std::span<const Array> cts, std::span<const TArg> args, const Params& params) {
  const auto& d = ddims(params);
  if (args[0].linear && args[1].linear)
    fail<ValueError>("dot_general: cannot transpose a product of two linear values (the program is not linear)");
  Arrays out(2);
  if (args[0].linear)
    out[0] = transpose_lhs(cts[0], args[0].aval, args[1].value, d.lhs_contract, d.rhs_contract, d.lhs_batch,
                           d.rhs_batch, false);
  if (args[1].linear)
    out[1] = transpose_lhs(cts[0], args[1].aval, args[0].value, d.rhs_contract, d.lhs_contract, d.rhs_batch,
                           d.lhs_batch, true);
  return out;
}

IntList shift(const IntList& v) {
  IntList o;
  for (auto x : v) o.push_back(x + 1);
  return o;
}

BatchResult dot_batch(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                      const BatchInfo&, const Params& params) {
  const auto& d = ddims(params);
  Params np = params;
  if (dims[0] != kNotMapped && dims[1] != kNotMapped) {
    Array l = lax::moveaxis(vals[0], dims[0], 0), r = lax::moveaxis(vals[1], dims[1], 0);
    IntList lb{0}, rb{0};
    for (auto x : d.lhs_batch) lb.push_back(x + 1);
    for (auto x : d.rhs_batch) rb.push_back(x + 1);
    np.set("dimension_numbers", Ref<const ParamObject>(new lax::DotDims(shift(d.lhs_contract), shift(d.rhs_contract), lb, rb)));
    return {{bind1(p, {l, r}, np)}, {0}};
  }
  if (dims[0] != kNotMapped) {
    Array l = lax::moveaxis(vals[0], dims[0], 0);
    np.set("dimension_numbers",
           Ref<const ParamObject>(new lax::DotDims(shift(d.lhs_contract), d.rhs_contract, shift(d.lhs_batch), d.rhs_batch)));
    return {{bind1(p, {l, vals[1]}, np)}, {static_cast<int64_t>(d.lhs_batch.size())}};
  }
  Array r = lax::moveaxis(vals[1], dims[1], 0);
  np.set("dimension_numbers",
         Ref<const ParamObject>(new lax::DotDims(d.lhs_contract, shift(d.rhs_contract), d.lhs_batch, shift(d.rhs_batch))));
  int64_t nlfree = vals[0].ndim() - static_cast<int64_t>(d.lhs_contract.size() + d.lhs_batch.size());
  return {{bind1(p, {vals[0], r}, np)}, {static_cast<int64_t>(d.lhs_batch.size()) + nlfree}};
}

}  // namespace

const Primitive dot_general_p{"dot_general", 0, &dot_shape, &dot_impl, &dot_jvp, &dot_transpose, &dot_batch};

}  // namespace graft::prims

namespace graft::lax {
Array dot_general(const Array& lhs, const Array& rhs, const DotDims& dims, std::optional<DType> preferred_element_type) {
  Params p{{"dimension_numbers", Ref<const ParamObject>(new DotDims(dims))},
           {"precision", ParamValue()},
           {"preferred_element_type", preferred_element_type ? ParamValue(*preferred_element_type) : ParamValue()}};
  return bind1(prims::dot_general_p, {lhs, rhs}, p);
}
}  // namespace graft::lax
