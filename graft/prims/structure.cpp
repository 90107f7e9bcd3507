// Shape and layout primitives: broadcast_in_dim, reshape, transpose, squeeze, rev, iota.
#include <algorithm>
#include <numeric>

#include "graft/runtime/cpu/copy.h"
#include "graft/prims/rules.h"

namespace graft::prims {

JvpResult linear_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                     const Params& params) {
  Arrays y = graft::bind(p, primals, params);
  Arrays ts;
  for (size_t i = 0; i < tangents.size(); ++i) ts.push_back(instantiate(tangents[i], primals[i].aval()));
  return {std::move(y), graft::bind(p, ts, params)};
}

namespace {

std::string ints_str(const IntList& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + (v.size() == 1 ? ",)" : ")");
}

// ---- broadcast_in_dim ---------------------------------------------------------------------------------
Avals broadcast_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  check_arity(p, in, 1);
  Shape shape = to_shape(params.get_ints("shape"));
  const IntList& bd = params.get_ints("broadcast_dimensions");
  const Aval& x = *in[0];
  if (static_cast<int64_t>(bd.size()) != x.ndim())
    shape_error(p, in, "broadcast_dimensions " + ints_str(bd) + " must have one entry per operand dimension");
  for (size_t i = 0; i < bd.size(); ++i) {
    if (bd[i] < 0 || bd[i] >= static_cast<int64_t>(shape.size()) || (i > 0 && bd[i] <= bd[i - 1]))
      shape_error(p, in, "broadcast_dimensions " + ints_str(bd) + " must be strictly increasing and within shape (" +
                             shape_str(shape) + ")");
    if (x.shape[i] != 1 && x.shape[i] != shape[bd[i]])
      shape_error(p, in, "operand dimension " + std::to_string(i) + " (size " + std::to_string(x.shape[i]) +
                             ") cannot be broadcast to size " + std::to_string(shape[bd[i]]) + " in (" +
                             shape_str(shape) + ")");
  }
  for (auto d : shape)
    if (d < 0) shape_error(p, in, "negative dimension in shape (" + shape_str(shape) + ")");
  return {Aval(shape, x.dtype, x.weak_type)};
}

Arrays broadcast_impl(const Primitive&, std::span<const Array> in, std::span<const Aval> out, const Params& params) {
  const IntList& bd = params.get_ints("broadcast_dimensions");
  const Array& x = in[0];
  Array r = Array::empty(out[0]);
  const Shape& os = out[0].shape;
  Shape xs = strides_of(x.shape());
  Shape src(os.size(), 0), dst = strides_of(os);
  for (size_t i = 0; i < bd.size(); ++i)
    if (x.shape()[i] != 1) src[bd[i]] = xs[i];
  cpu::strided_copy(x.raw_data(), src.data(), r.concrete()->data(), dst.data(), os.data(),
                    static_cast<int>(os.size()), itemsize(x.dtype()));
  return {r};
}

Arrays broadcast_transpose(const Primitive&, std::span<const Array> cts, std::span<const TArg> args,
                           const Params& params) {
  const IntList& bd = params.get_ints("broadcast_dimensions");
  const Aval& x = args[0].aval;
  const Array& ct = cts[0];
  Axes sum_axes;
  for (int64_t d = 0; d < ct.ndim(); ++d) {
    auto it = std::find(bd.begin(), bd.end(), d);
    if (it == bd.end()) {
      sum_axes.push_back(d);
    } else {
      size_t i = static_cast<size_t>(it - bd.begin());
      if (x.shape[i] == 1 && ct.shape()[d] != 1) sum_axes.push_back(d);
    }
  }
  Array r = sum_axes.empty() ? ct : lax::reduce_sum(ct, sum_axes);
  if (r.shape() != x.shape) r = lax::reshape(r, x.shape);
  return {r};
}

BatchResult broadcast_batch(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                            const BatchInfo& axis, const Params& params) {
  Array x = lax::moveaxis(vals[0], dims[0], 0);
  IntList shape{axis.size}, bd{0};
  for (auto d : params.get_ints("shape")) shape.push_back(d);
  for (auto d : params.get_ints("broadcast_dimensions")) bd.push_back(d + 1);
  return {{bind1(p, {x}, {{"shape", shape}, {"broadcast_dimensions", bd}})}, {0}};
}

// ---- reshape ------------------------------------------------------------------------------------------
Avals reshape_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  check_arity(p, in, 1);
  Shape ns = to_shape(params.get_ints("new_sizes"));
  for (auto d : ns)
    if (d < 0) shape_error(p, in, "negative size in new_sizes (" + shape_str(ns) + ")");
  if (numel(ns) != in[0]->size())
    shape_error(p, in, "cannot reshape " + std::to_string(in[0]->size()) + " elements into shape (" + shape_str(ns) +
                           ")");
  return {Aval(ns, in[0]->dtype, in[0]->weak_type)};
}

Arrays reshape_impl(const Primitive&, std::span<const Array> in, std::span<const Aval> out, const Params&) {
  return {alias_as(in[0], out[0])};
}

Arrays reshape_transpose(const Primitive&, std::span<const Array> cts, std::span<const TArg> args, const Params&) {
  return {lax::reshape(cts[0], args[0].aval.shape)};
}

BatchResult reshape_batch(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                          const BatchInfo& axis, const Params& params) {
  Array x = lax::moveaxis(vals[0], dims[0], 0);
  IntList ns{axis.size};
  for (auto d : params.get_ints("new_sizes")) ns.push_back(d);
  return {{bind1(p, {x}, params.with("new_sizes", ns))}, {0}};
}

// ---- transpose ------------------------------------------------------------------------------------------
Avals transpose_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  check_arity(p, in, 1);
  const IntList& perm = params.get_ints("permutation");
  const Aval& x = *in[0];
  std::vector<bool> seen(static_cast<size_t>(x.ndim()), false);
  bool ok = static_cast<int64_t>(perm.size()) == x.ndim();
  for (auto d : perm) {
    if (!ok || d < 0 || d >= x.ndim() || seen[static_cast<size_t>(d)]) {
      ok = false;
      break;
    }
    seen[static_cast<size_t>(d)] = true;
  }
  if (!ok) shape_error(p, in, "permutation " + ints_str(perm) + " is not a permutation of the operand's axes");
  Shape s;
  for (auto d : perm) s.push_back(x.shape[d]);
  return {Aval(s, x.dtype, x.weak_type)};
}

Arrays transpose_impl(const Primitive&, std::span<const Array> in, std::span<const Aval> out, const Params& params) {
  const IntList& perm = params.get_ints("permutation");
  const Array& x = in[0];
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<int64_t>(i);
  if (identity) return {alias_as(x, out[0])};
  Array r = Array::empty(out[0]);
  Shape xs = strides_of(x.shape()), src, dst = strides_of(out[0].shape);
  for (auto d : perm) src.push_back(xs[d]);
  cpu::strided_copy(x.raw_data(), src.data(), r.concrete()->data(), dst.data(), out[0].shape.data(),
                    static_cast<int>(perm.size()), itemsize(x.dtype()));
  return {r};
}

Arrays transpose_transpose(const Primitive&, std::span<const Array> cts, std::span<const TArg>,
                           const Params& params) {
  const IntList& perm = params.get_ints("permutation");
  Axes inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[perm[i]] = static_cast<int64_t>(i);
  return {lax::transpose(cts[0], inv)};
}

BatchResult transpose_batch(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                            const BatchInfo&, const Params& params) {
  int64_t d = dims[0];
  IntList perm{d};
  for (auto q : params.get_ints("permutation")) perm.push_back(q >= d ? q + 1 : q);
  return {{bind1(p, vals, {{"permutation", perm}})}, {0}};
}

// ---- squeeze ----------------------------------------------------------------------------------------------
Avals squeeze_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  check_arity(p, in, 1);
  const Aval& x = *in[0];
  const IntList& dims = params.get_ints("dimensions");
  Shape s;
  for (int64_t i = 0; i < x.ndim(); ++i) {
    if (std::find(dims.begin(), dims.end(), i) == dims.end()) {
      s.push_back(x.shape[i]);
    } else if (x.shape[i] != 1) {
      shape_error(p, in, "cannot squeeze dimension " + std::to_string(i) + " of size " + std::to_string(x.shape[i]));
    }
  }
  for (auto d : dims)
    if (d < 0 || d >= x.ndim()) shape_error(p, in, "dimensions " + ints_str(dims) + " out of range");
  return {Aval(s, x.dtype, x.weak_type)};
}

BatchResult squeeze_batch(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                          const BatchInfo&, const Params& params) {
  int64_t d = dims[0], below = 0;
  IntList nd;
  for (auto a : params.get_ints("dimensions")) {
    nd.push_back(a >= d ? a + 1 : a);
    if (a < d) ++below;
  }
  return {{bind1(p, vals, {{"dimensions", nd}})}, {d - below}};
}

// ---- rev ----------------------------------------------------------------------------------------------------
Avals rev_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  check_arity(p, in, 1);
  for (auto d : params.get_ints("dimensions"))
    if (d < 0 || d >= in[0]->ndim()) shape_error(p, in, "dimension " + std::to_string(d) + " out of range");
  return {*in[0]};
}

Arrays rev_impl(const Primitive&, std::span<const Array> in, std::span<const Aval> out, const Params& params) {
  const Array& x = in[0];
  Array r = Array::empty(out[0]);
  if (x.size() == 0) return {r};
  Shape src = strides_of(x.shape()), dst = strides_of(x.shape());
  int64_t offset = 0;
  for (auto d : params.get_ints("dimensions")) {
    offset += (x.shape()[d] - 1) * src[d];
    src[d] = -src[d];
  }
  const char* base = static_cast<const char*>(x.raw_data()) + offset * static_cast<int64_t>(itemsize(x.dtype()));
  cpu::strided_copy(base, src.data(), r.concrete()->data(), dst.data(), x.shape().data(),
                    static_cast<int>(x.ndim()), itemsize(x.dtype()));
  return {r};
}

Arrays rev_transpose(const Primitive&, std::span<const Array> cts, std::span<const TArg>, const Params& params) {
  return {lax::rev(cts[0], to_shape(params.get_ints("dimensions")))};
}

BatchResult rev_batch(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                      const BatchInfo&, const Params& params) {
  int64_t d = dims[0];
  IntList nd;
  for (auto a : params.get_ints("dimensions")) nd.push_back(a >= d ? a + 1 : a);
  return {{bind1(p, vals, {{"dimensions", nd}})}, {d}};
}

// ---- iota ----------------------------------------------------------------------------------------------------
Avals iota_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  check_arity(p, in, 0);
  Shape s = to_shape(params.get_ints("shape"));
  int64_t dim = params.get_int("dimension");
  DType d = params.get_dtype("dtype");
  if (dim < 0 || dim >= static_cast<int64_t>(s.size()))
    fail<ShapeError>("iota: dimension ", dim, " out of range for shape (", shape_str(s), ")");
  if (d == DType::bool_) fail<TypeError>("iota: dtype must be numeric, got bool");
  return {Aval(s, d, false)};
}

Arrays iota_impl(const Primitive&, std::span<const Array>, std::span<const Aval> out, const Params& params) {
  Array r = Array::empty(out[0]);
  int64_t dim = params.get_int("dimension");
  const Shape& s = out[0].shape;
  int64_t inner = 1;
  for (size_t i = static_cast<size_t>(dim) + 1; i < s.size(); ++i) inner *= s[i];
  int64_t n = s[dim];
  visit_dtype(out[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      // runs of `inner` equal values, counting 0..n-1, repeated for each outer index (no division per
      // element: that made a one-hot's iota of 2^18 elements cost 0.8 ms)
      T* o = static_cast<T*>(r.concrete()->data());
      int64_t outer = n * inner == 0 ? 0 : r.size() / (n * inner);
      for (int64_t j = 0; j < n; ++j) std::fill(o + j * inner, o + (j + 1) * inner, static_cast<T>(static_cast<compute_t<T>>(j)));
      for (int64_t b = 1; b < outer; ++b) std::copy(o, o + n * inner, o + b * n * inner);
    }
  });
  return {r};
}

}  // namespace

const Primitive broadcast_in_dim_p{"broadcast_in_dim",   0, &broadcast_shape, &broadcast_impl, &linear_jvp,
                                   &broadcast_transpose, &broadcast_batch};
const Primitive reshape_p{"reshape", 0, &reshape_shape, &reshape_impl, &linear_jvp, &reshape_transpose,
                          &reshape_batch};
const Primitive transpose_p{"transpose",          0, &transpose_shape, &transpose_impl, &linear_jvp,
                            &transpose_transpose, &transpose_batch};
const Primitive squeeze_p{"squeeze", 0, &squeeze_shape, &reshape_impl, &linear_jvp, &reshape_transpose,
                          &squeeze_batch};
const Primitive rev_p{"rev", 0, &rev_shape, &rev_impl, &linear_jvp, &rev_transpose, &rev_batch};
const Primitive iota_p{"iota", kNotDifferentiable, &iota_shape, &iota_impl, &zero_jvp};

}  // namespace graft::prims

namespace graft::lax {
using namespace graft::prims;

Array broadcast_in_dim(const Array& x, const Shape& shape, const Axes& broadcast_dimensions) {
  if (x.shape() == shape) {
    bool identity = static_cast<int64_t>(broadcast_dimensions.size()) == x.ndim();
    for (size_t i = 0; identity && i < broadcast_dimensions.size(); ++i)
      identity = broadcast_dimensions[i] == static_cast<int64_t>(i);
    if (identity) return x;
  }
  return bind1(broadcast_in_dim_p, {x}, {{"shape", to_ints(shape)}, {"broadcast_dimensions", to_ints(broadcast_dimensions)}});
}
Array reshape(const Array& x, const Shape& new_sizes) {
  if (x.shape() == new_sizes) return x;
  return bind1(reshape_p, {x}, {{"new_sizes", to_ints(new_sizes)}});
}
Array transpose(const Array& x, const Axes& permutation) {
  bool identity = static_cast<int64_t>(permutation.size()) == x.ndim();
  for (size_t i = 0; identity && i < permutation.size(); ++i) identity = permutation[i] == static_cast<int64_t>(i);
  if (identity) return x;
  return bind1(transpose_p, {x}, {{"permutation", to_ints(permutation)}});
}
Array squeeze(const Array& x, const Axes& dimensions) {
  if (dimensions.empty()) return x;
  return bind1(squeeze_p, {x}, {{"dimensions", to_ints(dimensions)}});
}
Array expand_dims(const Array& x, const Axes& dimensions) {
  int64_t nd = x.ndim() + static_cast<int64_t>(dimensions.size());
  Axes dims;
  for (auto d : dimensions) dims.push_back(normalize_axis(d, nd, "expand_dims"));
  std::sort(dims.begin(), dims.end());
  Shape s;
  Axes bd;
  int64_t src = 0;
  for (int64_t i = 0; i < nd; ++i) {
    if (std::find(dims.begin(), dims.end(), i) != dims.end()) {
      s.push_back(1);
    } else {
      s.push_back(x.shape()[src++]);
      bd.push_back(i);
    }
  }
  return broadcast_in_dim(x, s, bd);
}
Array rev(const Array& x, const Axes& dimensions) {
  if (dimensions.empty()) return x;
  return bind1(rev_p, {x}, {{"dimensions", to_ints(dimensions)}});
}
Array iota(DType d, const Shape& shape, int64_t dimension) {
  return bind1(iota_p, {}, {{"dimension", dimension}, {"dtype", d}, {"shape", to_ints(shape)}});
}

Array moveaxis(const Array& x, int64_t from, int64_t to) {
  if (from == to) return x;
  Axes perm;
  for (int64_t i = 0; i < x.ndim(); ++i)
    if (i != from) perm.push_back(i);
  perm.insert(perm.begin() + to, from);
  return transpose(x, perm);
}

Array scalar(double v, DType d) { return Array::scalar(v, d, false); }
Array full(const Shape& shape, double v, DType d) { return broadcast_in_dim(scalar(v, d), shape, {}); }
Array zeros(const Aval& a) { return full(a.shape, 0, a.dtype); }
Array zeros_like(const Array& x) { return full(x.shape(), 0, x.dtype()); }

}  // namespace graft::lax
