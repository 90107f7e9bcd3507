// Slicing primitives: slice, pad, concatenate, dynamic_slice, dynamic_update_slice. All their rules.
#include <cstring>
#include <numeric>

#include "graft/runtime/cpu/copy.h"
#include "graft/prims/rules.h"

namespace graft::prims {

namespace {

// ---- slice ------------------------------------------------------------------------------------------
IntList slice_strides(const Params& params, size_t n) {
  const ParamValue* v = params.find("strides");
  if (!v || std::holds_alternative<std::monostate>(*v)) return IntList(n, 1);
  return params.get_ints("strides");  // a TypeError names a parameter of another type
}

Avals slice_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  check_arity(p, in, 1);
  const Aval& x = *in[0];
  const IntList& st = params.get_ints("start_indices");
  const IntList& lim = params.get_ints("limit_indices");
  IntList str = slice_strides(params, st.size());
  size_t n = static_cast<size_t>(x.ndim());
  if (st.size() != n || lim.size() != n || str.size() != n)
    shape_error(p, in, "start_indices, limit_indices and strides need one entry per dimension");
  Shape s;
  for (size_t i = 0; i < n; ++i) {
    if (st[i] < 0 || lim[i] > x.shape[i] || st[i] > lim[i] || str[i] < 1)
      shape_error(p, in, "invalid slice [" + std::to_string(st[i]) + ":" + std::to_string(lim[i]) + ":" +
                             std::to_string(str[i]) + "] of dimension " + std::to_string(i) + " (size " +
                             std::to_string(x.shape[i]) + ")");
    s.push_back((lim[i] - st[i] + str[i] - 1) / str[i]);
  }
  return {Aval(s, x.dtype, x.weak_type)};
}

Arrays slice_impl(const Primitive&, std::span<const Array> in, std::span<const Aval> out, const Params& params) {
  const Array& x = in[0];
  const IntList& st = params.get_ints("start_indices");
  IntList str = slice_strides(params, st.size());
  Array r = Array::empty(out[0]);
  if (r.size() == 0) return {r};
  Shape xs = strides_of(x.shape()), src, dst = strides_of(out[0].shape);
  int64_t off = 0;
  for (size_t i = 0; i < st.size(); ++i) {
    off += st[i] * xs[i];
    src.push_back(xs[i] * str[i]);
  }
  size_t isz = itemsize(x.dtype());
  cpu::strided_copy(static_cast<const char*>(x.raw_data()) + off * static_cast<int64_t>(isz), src.data(),
                    r.concrete()->data(), dst.data(), out[0].shape.data(), static_cast<int>(st.size()), isz);
  return {r};
}

Arrays slice_transpose(const Primitive&, std::span<const Array> cts, std::span<const TArg> args,
                       const Params& params) {
  const IntList& st = params.get_ints("start_indices");
  IntList str = slice_strides(params, st.size());
  const Shape& xs = args[0].aval.shape;
  const Array& ct = cts[0];
  std::vector<IntList> cfg;
  for (size_t i = 0; i < st.size(); ++i) {
    int64_t real_limit = ct.shape()[i] > 0 ? st[i] + (ct.shape()[i] - 1) * str[i] + 1 : st[i];
    cfg.push_back({st[i], xs[i] - real_limit, str[i] - 1});
  }
  return {lax::pad(ct, lax::scalar(0, ct.dtype()), cfg)};
}

BatchResult slice_batch(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                        const BatchInfo& axis, const Params& params) {
  int64_t d = dims[0];
  IntList st = params.get_ints("start_indices"), lim = params.get_ints("limit_indices");
  IntList str = slice_strides(params, st.size());
  st.insert(st.begin() + d, 0);
  lim.insert(lim.begin() + d, axis.size);
  str.insert(str.begin() + d, 1);
  Params np = params.with("start_indices", st).with("limit_indices", lim);
  if (params.has("strides") && !std::holds_alternative<std::monostate>(*params.find("strides")))
    np.set("strides", str);
  return {{bind1(p, vals, np)}, {d}};
}

// ---- pad --------------------------------------------------------------------------------------------------
const std::vector<IntList>& pad_config(const Params& params) {
  return params.get_object<lax::IntTuples>("padding_config").items;
}

Avals pad_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  check_arity(p, in, 2);
  const Aval& x = *in[0];
  if (in[1]->ndim() != 0) shape_error(p, in, "the padding value must be a scalar");
  if (in[1]->dtype != x.dtype) type_error(p, in, "the padding value must have the operand's dtype");
  const auto& cfg = pad_config(params);
  if (static_cast<int64_t>(cfg.size()) != x.ndim()) shape_error(p, in, "padding_config needs one entry per dimension");
  Shape s;
  for (size_t i = 0; i < cfg.size(); ++i) {
    if (cfg[i].size() != 3 || cfg[i][2] < 0) shape_error(p, in, "padding entries are (lo, hi, interior >= 0)");
    int64_t d = x.shape[i];
    int64_t o = cfg[i][0] + cfg[i][1] + d + std::max<int64_t>(0, d - 1) * cfg[i][2];
    if (o < 0) shape_error(p, in, "padding makes dimension " + std::to_string(i) + " negative");
    s.push_back(o);
  }
  return {Aval(s, x.dtype, x.weak_type && in[1]->weak_type)};
}

Arrays pad_impl(const Primitive&, std::span<const Array> in, std::span<const Aval> out, const Params& params) {
  const Array& x = in[0];
  const auto& cfg = pad_config(params);
  Array r = Array::empty(out[0]);
  size_t isz = itemsize(x.dtype());
  cpu::fill(r.concrete()->data(), in[1].raw_data(), r.size(), isz);
  if (r.size() == 0 || x.size() == 0) return {r};
  const Shape& os = out[0].shape;
  Shape ostr = strides_of(os), xstr = strides_of(x.shape());
  Shape cnt, src, dst;
  int64_t soff = 0, doff = 0;
  for (size_t i = 0; i < cfg.size(); ++i) {
    int64_t lo = cfg[i][0], step = cfg[i][2] + 1, d = x.shape()[i];
    // operand indices j with 0 <= lo + j*step < os[i]
    int64_t j0 = lo >= 0 ? 0 : (-lo + step - 1) / step;
    int64_t j1 = d;  // exclusive
    while (j1 > j0 && lo + (j1 - 1) * step >= os[i]) --j1;
    if (j1 <= j0) return {r};
    cnt.push_back(j1 - j0);
    soff += j0 * xstr[i];
    doff += (lo + j0 * step) * ostr[i];
    src.push_back(xstr[i]);
    dst.push_back(ostr[i] * step);
  }
  cpu::strided_copy(static_cast<const char*>(x.raw_data()) + soff * static_cast<int64_t>(isz), src.data(),
                    static_cast<char*>(r.concrete()->data()) + doff * static_cast<int64_t>(isz), dst.data(), cnt.data(),
                    static_cast<int>(cnt.size()), isz);
  return {r};
}

Arrays pad_transpose(const Primitive&, std::span<const Array> cts, std::span<const TArg> args, const Params& params) {
  const Array& ct = cts[0];
  const auto& cfg = pad_config(params);
  Axes all(static_cast<size_t>(ct.ndim()));
  std::iota(all.begin(), all.end(), 0);
  Array t_op;
  if (args[0].linear || args[1].linear) {
    std::vector<IntList> unpad;
    Shape start, step;
    for (auto& c : cfg) {
      unpad.push_back({-c[0], -c[1], 0});
      start.push_back(0);
      step.push_back(c[2] + 1);
    }
    Array unpadded = lax::pad(ct, lax::scalar(0, ct.dtype()), unpad);
    t_op = lax::slice(unpadded, start, unpadded.shape(), step);
  }
  Array t_pv;
  if (args[1].linear) t_pv = lax::sub(lax::reduce_sum(ct, all), lax::reduce_sum(t_op, all));
  return {args[0].linear ? t_op : Array(), t_pv};
}

BatchResult pad_batch(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                      const BatchInfo& axis, const Params& params) {
  std::vector<IntList> cfg = pad_config(params);
  if (dims[1] == kNotMapped) {
    int64_t d = dims[0];
    cfg.insert(cfg.begin() + d, IntList{0, 0, 0});
    return {{bind1(p, vals, {{"padding_config", Ref<const ParamObject>(new lax::IntTuples(cfg))}})}, {d}};
  }
  // a batched padding value: pad with zeros, then select the value where the mask says "padding"
  Array x = batch_to_front(vals[0], dims[0], axis.size);
  cfg.insert(cfg.begin(), IntList{0, 0, 0});
  Params np{{"padding_config", Ref<const ParamObject>(new lax::IntTuples(cfg))}};
  Array padded = bind1(p, {x, lax::scalar(0, x.dtype())}, np);
  Array mask = bind1(p, {lax::full(x.shape(), 1, DType::bool_), lax::scalar(0, DType::bool_)}, np);
  Array pv = lax::broadcast_in_dim(lax::moveaxis(vals[1], dims[1], 0), padded.shape(), {0});
  return {{lax::select(mask, padded, pv)}, {0}};
}

// ---- concatenate ------------------------------------------------------------------------------------------
Avals concat_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  if (in.empty()) fail<ValueError>("concatenate: needs at least one operand");
  int64_t dim = params.get_int("dimension");
  const Aval& a = *in[0];
  if (dim < 0 || dim >= a.ndim()) shape_error(p, in, "dimension " + std::to_string(dim) + " out of range");
  Shape s = a.shape;
  bool weak = a.weak_type;
  for (size_t i = 1; i < in.size(); ++i) {
    const Aval& b = *in[i];
    if (b.dtype != a.dtype) type_error(p, in, "operands must have the same dtype");
    if (b.ndim() != a.ndim()) shape_error(p, in, "operands must have the same rank");
    for (int64_t d = 0; d < a.ndim(); ++d)
      if (d != dim && b.shape[d] != a.shape[d])
        shape_error(p, in, "operands must agree on every dimension except " + std::to_string(dim));
    s[dim] += b.shape[dim];
    weak = weak && b.weak_type;
  }
  return {Aval(s, a.dtype, weak)};
}

Arrays concat_impl(const Primitive&, std::span<const Array> in, std::span<const Aval> out, const Params& params) {
  int64_t dim = params.get_int("dimension");
  Array r = Array::empty(out[0]);
  Shape ostr = strides_of(out[0].shape);
  size_t isz = itemsize(r.dtype());
  int64_t at = 0;
  for (const Array& x : in) {
    if (x.size() > 0) {
      Shape xs = strides_of(x.shape());
      cpu::strided_copy(x.raw_data(), xs.data(),
                        static_cast<char*>(r.concrete()->data()) + at * ostr[dim] * static_cast<int64_t>(isz),
                        ostr.data(), x.shape().data(), static_cast<int>(x.ndim()), isz);
    }
    at += x.shape()[dim];
  }
  return {r};
}

Arrays concat_transpose(const Primitive&, std::span<const Array> cts, std::span<const TArg> args,
                        const Params& params) {
  int64_t dim = params.get_int("dimension");
  Arrays out;
  int64_t at = 0;
  for (auto& a : args) {
    int64_t n = a.aval.shape[dim];
    out.push_back(a.linear ? lax::slice_in_dim(cts[0], at, at + n, 1, dim) : Array());
    at += n;
  }
  return out;
}

BatchResult concat_batch(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                         const BatchInfo& axis, const Params& params) {
  Arrays xs;
  for (size_t i = 0; i < vals.size(); ++i) xs.push_back(batch_to_front(vals[i], dims[i], axis.size));
  return {{bind1(p, xs, {{"dimension", params.get_int("dimension") + 1}})}, {0}};
}

// ---- dynamic_slice --------------------------------------------------------------------------------------
void check_indices(const Primitive& p, AvalPtrs in, size_t first, int64_t rank) {
  if (static_cast<int64_t>(in.size() - first) != rank)
    shape_error(p, in, "needs one start index per operand dimension");
  for (size_t i = first; i < in.size(); ++i)
    if (in[i]->ndim() != 0 || !is_integer(in[i]->dtype)) type_error(p, in, "start indices must be integer scalars");
}

Avals dslice_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  if (in.empty()) fail<ValueError>("dynamic_slice: missing operand");
  const Aval& x = *in[0];
  check_indices(p, in, 1, x.ndim());
  Shape sizes = to_shape(params.get_ints("slice_sizes"));
  if (static_cast<int64_t>(sizes.size()) != x.ndim()) shape_error(p, in, "slice_sizes needs one entry per dimension");
  for (int64_t i = 0; i < x.ndim(); ++i)
    if (sizes[i] < 0 || sizes[i] > x.shape[i])
      shape_error(p, in, "slice size " + std::to_string(sizes[i]) + " does not fit dimension " + std::to_string(i));
  return {Aval(sizes, x.dtype, x.weak_type)};
}

// Start offset (in elements) of a clamped dynamic window.
int64_t clamped_offset(std::span<const Array> idx, const Shape& xshape, const Shape& wshape) {
  Shape st = strides_of(xshape);
  int64_t off = 0;
  for (size_t i = 0; i < idx.size(); ++i) {
    int64_t s = scalar_index(idx[i]);
    s = std::clamp<int64_t>(s, 0, xshape[i] - wshape[i]);
    off += s * st[i];
  }
  return off;
}

Arrays dslice_impl(const Primitive&, std::span<const Array> in, std::span<const Aval> out, const Params&) {
  const Array& x = in[0];
  Array r = Array::empty(out[0]);
  if (r.size() == 0) return {r};
  size_t isz = itemsize(x.dtype());
  int64_t off = clamped_offset(in.subspan(1), x.shape(), out[0].shape);
  Shape xs = strides_of(x.shape()), os = strides_of(out[0].shape);
  cpu::strided_copy(static_cast<const char*>(x.raw_data()) + off * static_cast<int64_t>(isz), xs.data(),
                    r.concrete()->data(), os.data(), out[0].shape.data(), static_cast<int>(x.ndim()), isz);
  return {r};
}

JvpResult dslice_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                     const Params& params) {
  Array y = bind1(p, primals, params);
  if (is_zero(tangents[0])) return {{y}, {Array()}};
  Arrays args{tangents[0]};
  for (size_t i = 1; i < primals.size(); ++i) args.push_back(primals[i]);
  return {{y}, {bind1(p, args, params)}};
}

Arrays dslice_transpose(const Primitive&, std::span<const Array> cts, std::span<const TArg> args, const Params&) {
  Arrays idx;
  for (size_t i = 1; i < args.size(); ++i) idx.push_back(args[i].value);
  Arrays out(args.size());
  out[0] = lax::dynamic_update_slice(lax::zeros(args[0].aval), cts[0], idx);
  return out;
}

// Stacks batched scalar indices into a [B, n] int array.
Array stack_indices(std::span<const Array> idx, std::span<const int64_t> dims, int64_t size) {
  DType d = DType::i32;
  for (auto& i : idx)
    if (i.dtype() == DType::i64 || i.dtype() == DType::u64 || i.dtype() == DType::u32) d = DType::i64;
  Arrays cols;
  for (size_t i = 0; i < idx.size(); ++i) {
    Array c = batch_to_front(lax::convert_element_type(idx[i], d), dims[i], size);  // [B]
    cols.push_back(lax::broadcast_in_dim(c, {size, 1}, {0}));
  }
  return lax::concatenate(cols, 1);
}

BatchResult dslice_batch(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                         const BatchInfo& axis, const Params& params) {
  bool idx_batched = false;
  for (size_t i = 1; i < dims.size(); ++i) idx_batched = idx_batched || dims[i] != kNotMapped;
  IntList sizes = params.get_ints("slice_sizes");
  if (!idx_batched) {
    int64_t d = dims[0];
    DType idt = vals.size() > 1 ? vals[1].dtype() : DType::i32;
    Arrays args{vals[0]};
    for (size_t i = 1; i < vals.size(); ++i) {
      if (static_cast<int64_t>(i - 1) == d) args.push_back(lax::scalar(0, idt));
      args.push_back(vals[i]);
    }
    if (d == static_cast<int64_t>(vals.size() - 1)) args.push_back(lax::scalar(0, idt));
    sizes.insert(sizes.begin() + d, axis.size);
    return {{bind1(p, args, {{"slice_sizes", sizes}})}, {d}};
  }
  Array x = batch_to_front(vals[0], dims[0], axis.size);
  Array idx = stack_indices(vals.subspan(1), dims.subspan(1), axis.size);
  IntList offset, sim, ss{1};
  for (size_t i = 0; i < sizes.size(); ++i) {
    offset.push_back(static_cast<int64_t>(i) + 1);
    sim.push_back(static_cast<int64_t>(i) + 1);
    ss.push_back(sizes[i]);
  }
  lax::GatherDims gd(offset, {}, sim, {0}, {0});
  return {{lax::gather(x, idx, gd, to_shape(ss), lax::GatherMode::clip)}, {0}};
}

// ---- dynamic_update_slice ----------------------------------------------------------------------------------
Avals dus_shape(const Primitive& p, AvalPtrs in, const Params&) {
  if (in.size() < 2) fail<ValueError>("dynamic_update_slice: needs an operand and an update");
  const Aval &x = *in[0], &u = *in[1];
  if (x.dtype != u.dtype) type_error(p, in, "the update must have the operand's dtype");
  if (u.ndim() != x.ndim()) shape_error(p, in, "the update must have the operand's rank");
  for (int64_t i = 0; i < x.ndim(); ++i)
    if (u.shape[i] > x.shape[i]) shape_error(p, in, "the update is larger than the operand");
  check_indices(p, in, 2, x.ndim());
  return {x};
}

Arrays dus_impl(const Primitive&, std::span<const Array> in, std::span<const Aval> out, const Params&) {
  const Array &x = in[0], &u = in[1];
  Array r = Array::empty(out[0]);
  size_t isz = itemsize(x.dtype());
  if (x.nbytes()) std::memcpy(r.concrete()->data(), x.raw_data(), x.nbytes());
  if (u.size() == 0) return {r};
  int64_t off = clamped_offset(in.subspan(2), x.shape(), u.shape());
  Shape xs = strides_of(x.shape()), us = strides_of(u.shape());
  cpu::strided_copy(u.raw_data(), us.data(), static_cast<char*>(r.concrete()->data()) + off * static_cast<int64_t>(isz),
                    xs.data(), u.shape().data(), static_cast<int>(u.ndim()), isz);
  return {r};
}

JvpResult dus_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                  const Params& params) {
  Array y = bind1(p, primals, params);
  if (is_zero(tangents[0]) && is_zero(tangents[1])) return {{y}, {Array()}};
  Arrays args{instantiate(tangents[0], primals[0].aval()), instantiate(tangents[1], primals[1].aval())};
  for (size_t i = 2; i < primals.size(); ++i) args.push_back(primals[i]);
  return {{y}, {bind1(p, args, params)}};
}

Arrays dus_transpose(const Primitive&, std::span<const Array> cts, std::span<const TArg> args, const Params&) {
  Arrays idx;
  for (size_t i = 2; i < args.size(); ++i) idx.push_back(args[i].value);
  Arrays out(args.size());
  const Array& ct = cts[0];
  if (args[0].linear) out[0] = lax::dynamic_update_slice(ct, lax::zeros(args[1].aval), idx);
  if (args[1].linear) out[1] = lax::dynamic_slice(ct, idx, args[1].aval.shape);
  return out;
}

BatchResult dus_batch(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                      const BatchInfo& axis, const Params& params) {
  bool idx_batched = false;
  for (size_t i = 2; i < dims.size(); ++i) idx_batched = idx_batched || dims[i] != kNotMapped;
  Array x = batch_to_front(vals[0], dims[0], axis.size);
  Array u = batch_to_front(vals[1], dims[1], axis.size);
  if (!idx_batched) {
    Arrays args{x, u, lax::scalar(0, vals.size() > 2 ? vals[2].dtype() : DType::i32)};
    for (size_t i = 2; i < vals.size(); ++i) args.push_back(vals[i]);
    return {{bind1(p, args, params)}, {0}};
  }
  Array idx = stack_indices(vals.subspan(2), dims.subspan(2), axis.size);
  IntList uwd, sdod;
  for (int64_t i = 1; i < u.ndim(); ++i) {
    uwd.push_back(i);
    sdod.push_back(i);
  }
  lax::ScatterDims sd(uwd, {}, sdod, {0}, {0});
  return {{lax::scatter(x, idx, u, sd, lax::GatherMode::clip)}, {0}};
}

}  // namespace

const Primitive slice_p{"slice", 0, &slice_shape, &slice_impl, &linear_jvp, &slice_transpose, &slice_batch};
const Primitive pad_p{"pad", 0, &pad_shape, &pad_impl, &linear_jvp, &pad_transpose, &pad_batch};
const Primitive concatenate_p{"concatenate", 0, &concat_shape, &concat_impl, &linear_jvp, &concat_transpose,
                              &concat_batch};
const Primitive dynamic_slice_p{"dynamic_slice",   0, &dslice_shape, &dslice_impl, &dslice_jvp,
                                &dslice_transpose, &dslice_batch};
const Primitive dynamic_update_slice_p{"dynamic_update_slice", 0, &dus_shape, &dus_impl, &dus_jvp, &dus_transpose,
                                       &dus_batch};

}  // namespace graft::prims

namespace graft::lax {
using namespace graft::prims;

Array slice(const Array& x, const Shape& start, const Shape& limit, const Shape& strides) {
  Params p{{"start_indices", to_ints(start)}, {"limit_indices", to_ints(limit)}};
  bool unit = true;
  for (auto s : strides) unit = unit && s == 1;
  p.set("strides", unit ? ParamValue() : ParamValue(to_ints(strides)));
  return bind1(slice_p, {x}, p);
}
Array slice_in_dim(const Array& x, int64_t start, int64_t limit, int64_t stride, int64_t axis) {
  Shape st(static_cast<size_t>(x.ndim()), 0), lim = x.shape(), str(static_cast<size_t>(x.ndim()), 1);
  st[axis] = start;
  lim[axis] = limit;
  str[axis] = stride;
  return slice(x, st, lim, str);
}
Array pad(const Array& x, const Array& padding_value, const std::vector<IntList>& padding_config) {
  return bind1(pad_p, {x, padding_value}, {{"padding_config", Ref<const ParamObject>(new IntTuples(padding_config))}});
}
Array concatenate(std::span<const Array> xs, int64_t dimension) {
  if (xs.size() == 1) return xs[0];
  return bind1(concatenate_p, xs, {{"dimension", dimension}});
}
Array dynamic_slice(const Array& x, std::span<const Array> start, const Shape& sizes) {
  Arrays args{x};
  for (auto& s : start) args.push_back(s);
  return bind1(dynamic_slice_p, args, {{"slice_sizes", to_ints(sizes)}});
}
Array dynamic_update_slice(const Array& x, const Array& update, std::span<const Array> start) {
  Arrays args{x, update};
  for (auto& s : start) args.push_back(s);
  return bind1(dynamic_update_slice_p, args);
}

}  // namespace graft::lax
