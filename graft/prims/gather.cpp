// gather, scatter and scatter_add (XLA semantics, index vector in the last dimension of the indices,
// with batching dimensions so that vmap needs no reshuffling). All their rules.
#include <cmath>
#include <cstring>

#include "graft/prims/rules.h"

namespace graft::prims {

namespace {

constexpr const char* kClip = "GatherScatterMode.CLIP";
constexpr const char* kFill = "GatherScatterMode.FILL_OR_DROP";

lax::GatherMode mode_of(const Params& params) {
  return params.get<std::string>("mode") == kClip ? lax::GatherMode::clip : lax::GatherMode::fill;
}
ParamValue mode_value(lax::GatherMode m) { return std::string(m == lax::GatherMode::clip ? kClip : kFill); }

bool contains(const IntList& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

IntList shifted(const IntList& v, int64_t by = 1) {
  IntList o;
  for (auto x : v) o.push_back(x + by);
  return o;
}
IntList prepend(int64_t x, const IntList& v) {
  IntList o{x};
  o.insert(o.end(), v.begin(), v.end());
  return o;
}

// ---- the shared index machinery ------------------------------------------------------------------------
// Operand dims that form the window (not collapsed/inserted, not batching), in order.
IntList window_dims(int64_t rank, const IntList& collapsed, const IntList& batching) {
  IntList w;
  for (int64_t d = 0; d < rank; ++d)
    if (!contains(collapsed, d) && !contains(batching, d)) w.push_back(d);
  return w;
}

void check_indices_aval(const Primitive& p, AvalPtrs in, const Aval& idx, size_t nvec) {
  if (!is_integer(idx.dtype)) type_error(p, in, "indices must be integers");
  if (idx.ndim() < 1 || idx.shape.back() != static_cast<int64_t>(nvec))
    shape_error(p, in, "the last dimension of the indices must have size " + std::to_string(nvec) +
                           " (one entry per indexed operand dimension)");
}

// Per element of the window: offsets into the operand and into the output/updates.
struct Window {
  std::vector<int64_t> op_off, other_off;
  // both offset lists count up by one from 0 (an embedding's rows): loops over the window then run
  // over plain runs of memory, vectorized
  bool contiguous() const {
    for (size_t e = 0; e < op_off.size(); ++e)
      if (op_off[e] != static_cast<int64_t>(e) || other_off[e] != static_cast<int64_t>(e)) return false;
    return true;
  }
};
Window make_window(const Shape& sizes, const IntList& op_dims, const Shape& op_strides, const IntList& other_dims,
                   const Shape& other_strides) {
  Window w;
  int64_t n = 1;
  for (auto s : sizes) n *= s;
  w.op_off.reserve(static_cast<size_t>(n));
  w.other_off.reserve(static_cast<size_t>(n));
  std::vector<int64_t> idx(sizes.size(), 0);
  for (int64_t e = 0; e < n; ++e) {
    int64_t a = 0, b = 0;
    for (size_t k = 0; k < sizes.size(); ++k) {
      a += idx[k] * op_strides[op_dims[k]];
      b += idx[k] * other_strides[other_dims[k]];
    }
    w.op_off.push_back(a);
    w.other_off.push_back(b);
    for (size_t k = sizes.size(); k-- > 0;) {
      if (++idx[k] < sizes[k]) break;
      idx[k] = 0;
    }
  }
  return w;
}

// For every batch position (multi-index over `bshape`), the start of the window in the operand.
// Returns false in `ok[b]` when a start index is out of range (fill/drop mode).
void window_starts(const Array& indices, const Shape& bshape, const IntList& index_map, const IntList& op_batching,
                   const IntList& idx_batching, const Shape& op_shape, const Shape& win_sizes, bool clip,
                   std::vector<int64_t>& start_off, std::vector<char>& ok) {
  int64_t nb = numel(bshape);
  size_t nvec = index_map.size();
  std::vector<int64_t> iv(static_cast<size_t>(nb) * nvec);
  convert_elements(indices.raw_data(), indices.dtype(), iv.data(), DType::i64, static_cast<int64_t>(iv.size()));
  Shape ost = strides_of(op_shape);
  start_off.assign(static_cast<size_t>(nb), 0);
  ok.assign(static_cast<size_t>(nb), 1);
  std::vector<int64_t> bidx(bshape.size(), 0);
  for (int64_t b = 0; b < nb; ++b) {
    int64_t off = 0;
    bool good = true;
    for (size_t k = 0; k < nvec; ++k) {
      int64_t d = index_map[k];
      int64_t s = iv[static_cast<size_t>(b) * nvec + k];
      int64_t hi = op_shape[d] - win_sizes[d];
      if (s < 0 || s > hi) {
        if (clip) {
          s = std::clamp<int64_t>(s, 0, std::max<int64_t>(hi, 0));
        } else {
          good = false;
        }
      }
      off += s * ost[d];
    }
    for (size_t i = 0; i < op_batching.size(); ++i) off += bidx[idx_batching[i]] * ost[op_batching[i]];
    start_off[static_cast<size_t>(b)] = off;
    ok[static_cast<size_t>(b)] = good;
    for (size_t k = bshape.size(); k-- > 0;) {
      if (++bidx[k] < bshape[k]) break;
      bidx[k] = 0;
    }
  }
}

// ---- gather ------------------------------------------------------------------------------------------------
const lax::GatherDims& gdims(const Params& p) { return p.get_object<lax::GatherDims>("dimension_numbers"); }
const lax::ScatterDims& sdims(const Params& p) { return p.get_object<lax::ScatterDims>("dimension_numbers"); }

Avals gather_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  check_arity(p, in, 2);
  const Aval &op = *in[0], &idx = *in[1];
  const auto& g = gdims(params);
  Shape ss = to_shape(params.get_ints("slice_sizes"));
  check_indices_aval(p, in, idx, g.start_index_map.size());
  if (static_cast<int64_t>(ss.size()) != op.ndim()) shape_error(p, in, "slice_sizes needs one entry per dimension");
  for (int64_t d = 0; d < op.ndim(); ++d)
    if (ss[d] < 0 || ss[d] > op.shape[d]) shape_error(p, in, "slice size out of range in dimension " + std::to_string(d));
  for (auto d : g.collapsed_slice_dims)
    if (d < 0 || d >= op.ndim() || ss[d] > 1) shape_error(p, in, "collapsed dimensions must have slice size <= 1");
  for (auto d : g.start_index_map)
    if (d < 0 || d >= op.ndim()) shape_error(p, in, "start_index_map entry out of range");
  if (g.operand_batching_dims.size() != g.start_indices_batching_dims.size())
    shape_error(p, in, "operand and indices batching dims must pair up");
  for (size_t i = 0; i < g.operand_batching_dims.size(); ++i) {
    int64_t od = g.operand_batching_dims[i], id = g.start_indices_batching_dims[i];
    if (od < 0 || od >= op.ndim() || id < 0 || id >= idx.ndim() - 1 || op.shape[od] != idx.shape[id] || ss[od] != 1)
      shape_error(p, in, "batching dims must match in size and have slice size 1");
  }
  IntList win = window_dims(op.ndim(), g.collapsed_slice_dims, g.operand_batching_dims);
  if (win.size() != g.offset_dims.size())
    shape_error(p, in, "offset_dims must have one entry per window (non-collapsed, non-batching) dimension");
  int64_t out_rank = idx.ndim() - 1 + static_cast<int64_t>(win.size());
  Shape out;
  size_t wi = 0, bi = 0;
  for (int64_t k = 0; k < out_rank; ++k) {
    if (contains(g.offset_dims, k)) {
      if (wi >= win.size()) shape_error(p, in, "offset_dims out of range");
      out.push_back(ss[win[wi++]]);
    } else {
      if (bi >= static_cast<size_t>(idx.ndim() - 1)) shape_error(p, in, "offset_dims out of range");
      out.push_back(idx.shape[bi++]);
    }
  }
  return {Aval(out, op.dtype, op.weak_type)};
}

Arrays gather_impl(const Primitive&, std::span<const Array> in, std::span<const Aval> outv, const Params& params) {
  const Array &op = in[0], &idx = in[1];
  const auto& g = gdims(params);
  Shape ss = to_shape(params.get_ints("slice_sizes"));
  bool clip = mode_of(params) == lax::GatherMode::clip;
  Array r = Array::empty(outv[0]);
  if (r.size() == 0) return {r};
  size_t isz = itemsize(op.dtype());
  const Shape& os = outv[0].shape;
  Shape ost = strides_of(os), opst = strides_of(op.shape());
  // batch dims of the output = the non-offset positions, matching the indices' leading dims
  IntList out_batch;
  for (int64_t k = 0; k < static_cast<int64_t>(os.size()); ++k)
    if (!contains(g.offset_dims, k)) out_batch.push_back(k);
  Shape bshape(idx.shape().begin(), idx.shape().end() - 1);
  IntList win = window_dims(op.ndim(), g.collapsed_slice_dims, g.operand_batching_dims);
  Shape wsizes;
  for (auto d : win) wsizes.push_back(ss[d]);
  Window w = make_window(wsizes, win, opst, g.offset_dims, ost);
  std::vector<int64_t> starts;
  std::vector<char> ok;
  window_starts(idx, bshape, g.start_index_map, g.operand_batching_dims, g.start_indices_batching_dims, op.shape(), ss,
                clip, starts, ok);
  // fill value for out-of-range windows
  std::vector<char> fillv(isz, 0);
  {
    const ParamValue* fv = params.find("fill_value");
    double f = (fv && std::holds_alternative<double>(*fv)) ? std::get<double>(*fv)
                                                             : (is_inexact(op.dtype()) ? std::nan("") : 0.0);
    if (!clip) convert_elements(&f, DType::f64, fillv.data(), op.dtype(), 1);
  }
  const char* src = static_cast<const char*>(op.raw_data());
  char* dst = static_cast<char*>(r.concrete()->data());
  int64_t nb = numel(bshape);
  // windows that are one contiguous run in both operand and output (rows of a matrix, say) are
  // copied with one memcpy
  bool contiguous = true;
  for (size_t e = 1; e < w.op_off.size() && contiguous; ++e)
    contiguous = w.op_off[e] == w.op_off[0] + static_cast<int64_t>(e) &&
                 w.other_off[e] == w.other_off[0] + static_cast<int64_t>(e);
  size_t run = contiguous ? w.op_off.size() * isz : 0;
  cpu::parallel_for(nb, std::max<int64_t>(1, 4096 / std::max<size_t>(1, w.op_off.size())), [&](int64_t b0, int64_t b1) {
    std::vector<int64_t> bidx(bshape.size(), 0);
    int64_t rem = b0;
    for (size_t k = bshape.size(); k-- > 0;) {
      bidx[k] = rem % bshape[k];
      rem /= bshape[k];
    }
    for (int64_t b = b0; b < b1; ++b) {
      int64_t obase = 0;
      for (size_t k = 0; k < bshape.size(); ++k) obase += bidx[k] * ost[out_batch[k]];
      const char* s = src + starts[static_cast<size_t>(b)] * static_cast<int64_t>(isz);
      bool good = ok[static_cast<size_t>(b)];
      if (good && run > 0) {
        std::memcpy(dst + (obase + w.other_off[0]) * static_cast<int64_t>(isz), s + w.op_off[0] * static_cast<int64_t>(isz),
                    run);
      } else {
        for (size_t e = 0; e < w.op_off.size(); ++e)
        std::memcpy(dst + (obase + w.other_off[e]) * static_cast<int64_t>(isz),
                      good ? s + w.op_off[e] * static_cast<int64_t>(isz) : fillv.data(), isz);
      }
      for (size_t k = bshape.size(); k-- > 0;) {
        if (++bidx[k] < bshape[k]) break;
        bidx[k] = 0;
      }
    }
  });
  return {r};
}

JvpResult gather_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                     const Params& params) {
  Array y = bind1(p, primals, params);
  if (is_zero(tangents[0])) return {{y}, {Array()}};
  // the fill value of out-of-range windows has no derivative: use 0 for the tangent
  Params tp = params;
  if (mode_of(params) == lax::GatherMode::fill) tp.set("fill_value", 0.0);
  return {{y}, {bind1(p, {tangents[0], primals[1]}, tp)}};
}

Ref<const ParamObject> scatter_dims_from(const lax::GatherDims& g) {
  return Ref<const ParamObject>(new lax::ScatterDims(g.offset_dims, g.collapsed_slice_dims, g.start_index_map,
                                                     g.operand_batching_dims, g.start_indices_batching_dims));
}
Ref<const ParamObject> gather_dims_from(const lax::ScatterDims& s) {
  return Ref<const ParamObject>(new lax::GatherDims(s.update_window_dims, s.inserted_window_dims,
                                                    s.scatter_dims_to_operand_dims, s.operand_batching_dims,
                                                    s.scatter_indices_batching_dims));
}

Arrays gather_transpose(const Primitive&, std::span<const Array> cts, std::span<const TArg> args,
                        const Params& params) {
  if (args[1].linear) fail<ValueError>("gather: indices cannot be linear");
  Array z = lax::zeros(args[0].aval);
  Params sp{{"dimension_numbers", scatter_dims_from(gdims(params))}, {"mode", *params.find("mode")}};
  return {bind1(scatter_add_p, {z, args[1].value, cts[0]}, sp), Array()};
}

BatchResult gather_batch(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                         const BatchInfo& axis, const Params& params) {
  const auto& g = gdims(params);
  IntList ss = params.get_ints("slice_sizes");
  Params np = params;
  if (dims[1] == kNotMapped) {  // only the operand is batched: the batch dim becomes a window dim
    Array op = lax::moveaxis(vals[0], dims[0], 0);
    np.set("dimension_numbers",
           Ref<const ParamObject>(new lax::GatherDims(prepend(0, shifted(g.offset_dims)), shifted(g.collapsed_slice_dims),
                                                      shifted(g.start_index_map), shifted(g.operand_batching_dims),
                                                      g.start_indices_batching_dims)));
    np.set("slice_sizes", prepend(axis.size, ss));
    return {{bind1(p, {op, vals[1]}, np)}, {0}};
  }
  Array idx = lax::moveaxis(vals[1], dims[1], 0);
  if (dims[0] == kNotMapped) {  // only the indices: a new leading batch dim of the output
    np.set("dimension_numbers",
           Ref<const ParamObject>(new lax::GatherDims(shifted(g.offset_dims), g.collapsed_slice_dims, g.start_index_map,
                                                      g.operand_batching_dims, shifted(g.start_indices_batching_dims))));
    return {{bind1(p, {vals[0], idx}, np)}, {0}};
  }
  Array op = lax::moveaxis(vals[0], dims[0], 0);
  np.set("dimension_numbers",
         Ref<const ParamObject>(new lax::GatherDims(shifted(g.offset_dims), shifted(g.collapsed_slice_dims),
                                                    shifted(g.start_index_map), prepend(0, shifted(g.operand_batching_dims)),
                                                    prepend(0, shifted(g.start_indices_batching_dims)))));
  np.set("slice_sizes", prepend(1, ss));
  return {{bind1(p, {op, idx}, np)}, {0}};
}

// ---- scatter / scatter_add ----------------------------------------------------------------------------------
Avals scatter_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  check_arity(p, in, 3);
  const Aval &op = *in[0], &idx = *in[1], &upd = *in[2];
  const auto& s = sdims(params);
  if (upd.dtype != op.dtype) type_error(p, in, "updates must have the operand's dtype");
  check_indices_aval(p, in, idx, s.scatter_dims_to_operand_dims.size());
  IntList win = window_dims(op.ndim(), s.inserted_window_dims, s.operand_batching_dims);
  if (win.size() != s.update_window_dims.size())
    shape_error(p, in, "update_window_dims must have one entry per operand window dimension");
  size_t sd = 0, wd = 0;
  for (int64_t k = 0; k < upd.ndim(); ++k) {
    if (contains(s.update_window_dims, k)) {
      if (upd.shape[k] > op.shape[win[wd++]]) shape_error(p, in, "update window larger than the operand");
    } else {
      if (sd >= static_cast<size_t>(idx.ndim() - 1) || upd.shape[k] != idx.shape[sd])
        shape_error(p, in, "update scatter dims must match the indices' batch dims");
      ++sd;
    }
  }
  if (sd != static_cast<size_t>(idx.ndim() - 1)) shape_error(p, in, "updates are missing scatter dims");
  for (auto d : s.scatter_dims_to_operand_dims)
    if (d < 0 || d >= op.ndim()) shape_error(p, in, "scatter_dims_to_operand_dims entry out of range");
  return {op};
}

enum class Combine { set, add, mul, min, max };

template <Combine K>
Arrays scatter_run(std::span<const Array> in, std::span<const Aval> outv, const Params& params) {
  const Array &op = in[0], &idx = in[1], &upd = in[2];
  const auto& s = sdims(params);
  bool clip = mode_of(params) == lax::GatherMode::clip;
  Array r = Array::empty(outv[0]);
  if (op.nbytes()) std::memcpy(r.concrete()->data(), op.raw_data(), op.nbytes());
  if (upd.size() == 0) return {r};
  Shape opst = strides_of(op.shape()), ust = strides_of(upd.shape());
  IntList upd_scatter;
  for (int64_t k = 0; k < upd.ndim(); ++k)
    if (!contains(s.update_window_dims, k)) upd_scatter.push_back(k);
  Shape bshape(idx.shape().begin(), idx.shape().end() - 1);
  IntList win = window_dims(op.ndim(), s.inserted_window_dims, s.operand_batching_dims);
  Shape wsizes, full_sizes(static_cast<size_t>(op.ndim()), 1);
  for (size_t k = 0; k < win.size(); ++k) {
    wsizes.push_back(upd.shape()[s.update_window_dims[k]]);
    full_sizes[win[k]] = wsizes.back();
  }
  Window w = make_window(wsizes, win, opst, s.update_window_dims, ust);
  std::vector<int64_t> starts;
  std::vector<char> ok;
  window_starts(idx, bshape, s.scatter_dims_to_operand_dims, s.operand_batching_dims, s.scatter_indices_batching_dims,
                op.shape(), full_sizes, clip, starts, ok);
  char* dst = static_cast<char*>(r.concrete()->data());
  const char* src = static_cast<const char*>(upd.raw_data());
  int64_t nb = numel(bshape);
  std::vector<int64_t> bidx(bshape.size(), 0);
  if (is_complex(op.dtype()) && (K == Combine::min || K == Combine::max))
    fail<TypeError>("scatter_min / scatter_max: complex numbers have no order (operand ", op.aval().str(), ")");
  const bool contiguous = w.contiguous();
  const int64_t wn = static_cast<int64_t>(w.op_off.size());
  visit_any_dtype(op.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    for (int64_t b = 0; b < nb; ++b) {
      int64_t ubase = 0;
      for (size_t k = 0; k < bshape.size(); ++k) ubase += bidx[k] * ust[upd_scatter[k]];
      if (ok[static_cast<size_t>(b)]) {
        T* o = reinterpret_cast<T*>(dst) + starts[static_cast<size_t>(b)];
        const T* u = reinterpret_cast<const T*>(src) + ubase;
        bool done = false;
        if constexpr (K == Combine::add && !std::is_same_v<T, bool>) {
          if (contiguous) {
            // the same sums as the loop below, element by element, as one vector loop
            if constexpr (std::is_same_v<T, bfloat16> || std::is_same_v<T, float16>) {
              // through the bits: GCC does not vectorize a loop that assigns the half structs
#pragma omp simd
              for (int64_t e = 0; e < wn; ++e) o[e].bits = T::from_float(static_cast<C>(o[e]) + static_cast<C>(u[e]));
            } else {
#pragma omp simd
              for (int64_t e = 0; e < wn; ++e) o[e] = static_cast<T>(static_cast<C>(o[e]) + static_cast<C>(u[e]));
            }
            done = true;
          }
        }
        for (size_t e = 0; !done && e < w.op_off.size(); ++e) {
          T& dst_e = o[w.op_off[e]];
          const T& src_e = u[w.other_off[e]];
          if constexpr (K == Combine::set) {
            dst_e = src_e;
          } else if constexpr (std::is_same_v<T, bool>) {
            dst_e = (K == Combine::add || K == Combine::max) ? (dst_e || src_e) : (dst_e && src_e);
          } else {
            C a = static_cast<C>(dst_e), b = static_cast<C>(src_e);
            if constexpr (K == Combine::add) {
              dst_e = static_cast<T>(a + b);
            } else if constexpr (K == Combine::mul) {
              dst_e = static_cast<T>(a * b);
            } else if constexpr (is_complex_v<C>) {
              // min / max refused above
            } else if constexpr (K == Combine::min) {
              dst_e = static_cast<T>((b < a || b != b) ? b : a);
            } else {
              dst_e = static_cast<T>((b > a || b != b) ? b : a);
            }
          }
        }
      }
      for (size_t k = bshape.size(); k-- > 0;) {
        if (++bidx[k] < bshape[k]) break;
        bidx[k] = 0;
      }
    }
  });
  return {r};
}

Arrays scatter_impl(const Primitive& p, std::span<const Array> in, std::span<const Aval> out, const Params& params) {
  if (&p == &scatter_add_p) return scatter_run<Combine::add>(in, out, params);
  if (&p == &scatter_mul_p) return scatter_run<Combine::mul>(in, out, params);
  if (&p == &scatter_min_p) return scatter_run<Combine::min>(in, out, params);
  if (&p == &scatter_max_p) return scatter_run<Combine::max>(in, out, params);
  return scatter_run<Combine::set>(in, out, params);
}

JvpResult scatter_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                      const Params& params) {
  Array y = bind1(p, primals, params);
  if (is_zero(tangents[0]) && is_zero(tangents[2])) return {{y}, {Array()}};
  Array t = bind1(p,
                  {instantiate(tangents[0], primals[0].aval()), primals[1], instantiate(tangents[2], primals[2].aval())},
                  params);
  return {{y}, {t}};
}

Params gather_params_for(const Params& scatter_params, const TArg& op, const TArg& upd) {
  const auto& s = sdims(scatter_params);
  IntList win = window_dims(op.aval.ndim(), s.inserted_window_dims, s.operand_batching_dims);
  IntList ss(static_cast<size_t>(op.aval.ndim()), 1);
  for (size_t k = 0; k < win.size(); ++k) ss[win[k]] = upd.aval.shape[s.update_window_dims[k]];
  return Params{{"dimension_numbers", gather_dims_from(s)},
                {"slice_sizes", ss},
                {"mode", *scatter_params.find("mode")},
                {"fill_value", 0.0}};
}

Arrays scatter_add_transpose(const Primitive&, std::span<const Array> cts, std::span<const TArg> args,
                             const Params& params) {
  if (args[1].linear) fail<ValueError>("scatter_add: indices cannot be linear");
  Arrays out(3);
  if (args[0].linear) out[0] = cts[0];
  if (args[2].linear) out[2] = bind1(gather_p, {cts[0], args[1].value}, gather_params_for(params, args[0], args[2]));
  return out;
}

Arrays scatter_transpose(const Primitive& p, std::span<const Array> cts, std::span<const TArg> args,
                         const Params& params) {
  if (args[1].linear) fail<ValueError>("scatter: indices cannot be linear");
  Arrays out(3);
  if (args[0].linear) out[0] = bind1(p, {cts[0], args[1].value, lax::zeros(args[2].aval)}, params);
  if (args[2].linear) out[2] = bind1(gather_p, {cts[0], args[1].value}, gather_params_for(params, args[0], args[2]));
  return out;
}

// d(x * prod u) = dx * prod u + out * sum(du / u): exact where no update is zero.
JvpResult scatter_mul_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                          const Params& params) {
  Array y = bind1(p, primals, params);
  Array t;
  if (!is_zero(tangents[0])) t = bind1(p, {tangents[0], primals[1], primals[2]}, params);
  if (!is_zero(tangents[2])) {
    Array ratio = lax::div(tangents[2], primals[2]);
    Array summed = bind1(scatter_add_p, {lax::zeros_like(primals[0]), primals[1], ratio}, params);
    t = add_tangents(t, lax::mul(y, summed));
  }
  return {{y}, {t}};
}

Arrays scatter_mul_transpose(const Primitive& p, std::span<const Array> cts, std::span<const TArg> args,
                             const Params& params) {
  if (args[1].linear || args[2].linear)
    fail<ValueError>("scatter_mul: can only be transposed with respect to the operand");
  Arrays out(3);
  out[0] = bind1(p, {cts[0], args[1].value, args[2].value}, params);
  return out;
}

// min/max: the derivative goes to the values that attain the extremum, split evenly among ties (the
// operand's own value counts as one of them), as JAX's rule for scatter_min/scatter_max.
JvpResult scatter_extremal_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                               const Params& params) {
  const Array &x = primals[0], &idx = primals[1], &u = primals[2];
  Array y = bind1(p, primals, params);
  Params gp = gather_params_for(params, TArg{x, x.aval(), false}, TArg{u, u.aval(), false});
  Array u_wins = lax::eq(u, bind1(gather_p, {y, idx}, gp));
  Array x_wins = lax::eq(x, y);
  DType d = x.dtype();
  Array n_u = bind1(scatter_add_p, {lax::zeros_like(x), idx, lax::convert_element_type(u_wins, d)}, params);
  Array n = lax::add(n_u, lax::convert_element_type(x_wins, d));
  Array t;
  if (!is_zero(tangents[0])) t = lax::select(x_wins, lax::div(tangents[0], n), lax::zeros_like(x));
  if (!is_zero(tangents[2])) {
    Array share = lax::select(u_wins, lax::div(tangents[2], bind1(gather_p, {n, idx}, gp)), lax::zeros_like(u));
    t = add_tangents(t, bind1(scatter_add_p, {lax::zeros_like(x), idx, share}, params));
  }
  return {{y}, {t}};
}

BatchResult scatter_batch(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                          const BatchInfo& axis, const Params& params) {
  const auto& s = sdims(params);
  Array op = batch_to_front(vals[0], dims[0], axis.size);
  Array idx = batch_to_front(vals[1], dims[1], axis.size);
  Array upd = batch_to_front(vals[2], dims[2], axis.size);
  Params np = params.with(
      "dimension_numbers",
      Ref<const ParamObject>(new lax::ScatterDims(shifted(s.update_window_dims), shifted(s.inserted_window_dims),
                                                  shifted(s.scatter_dims_to_operand_dims),
                                                  prepend(0, shifted(s.operand_batching_dims)),
                                                  prepend(0, shifted(s.scatter_indices_batching_dims)))));
  return {{bind1(p, {op, idx, upd}, np)}, {0}};
}

}  // namespace

const Primitive gather_p{"gather", 0, &gather_shape, &gather_impl, &gather_jvp, &gather_transpose, &gather_batch};
const Primitive scatter_p{"scatter", 0, &scatter_shape, &scatter_impl, &scatter_jvp, &scatter_transpose,
                          &scatter_batch};
const Primitive scatter_add_p{"scatter_add",          0, &scatter_shape, &scatter_impl, &scatter_jvp,
                              &scatter_add_transpose, &scatter_batch};
const Primitive scatter_mul_p{"scatter_mul",          0, &scatter_shape, &scatter_impl, &scatter_mul_jvp,
                              &scatter_mul_transpose, &scatter_batch};
const Primitive scatter_min_p{"scatter_min", 0, &scatter_shape, &scatter_impl, &scatter_extremal_jvp, nullptr,
                              &scatter_batch};
const Primitive scatter_max_p{"scatter_max", 0, &scatter_shape, &scatter_impl, &scatter_extremal_jvp, nullptr,
                              &scatter_batch};

}  // namespace graft::prims

namespace graft::lax {
using namespace graft::prims;

Array gather(const Array& operand, const Array& indices, const GatherDims& dims, const Shape& slice_sizes,
             GatherMode mode, double fill_value) {
  Params p{{"dimension_numbers", Ref<const ParamObject>(new GatherDims(dims))},
           {"slice_sizes", to_ints(slice_sizes)},
           {"mode", mode_value(mode)},
           {"fill_value", mode == GatherMode::fill ? ParamValue(fill_value) : ParamValue()}};
  return bind1(gather_p, {operand, indices}, p);
}
Array scatter(const Array& operand, const Array& indices, const Array& updates, const ScatterDims& dims,
              GatherMode mode) {
  return bind1(scatter_p, {operand, indices, updates},
               {{"dimension_numbers", Ref<const ParamObject>(new ScatterDims(dims))}, {"mode", mode_value(mode)}});
}
#define LAX_SCATTER(name)                                                                        \
  Array name(const Array& operand, const Array& indices, const Array& updates, const ScatterDims& dims, \
             GatherMode mode) {                                                                   \
    return bind1(name##_p, {operand, indices, updates},                                           \
                 {{"dimension_numbers", Ref<const ParamObject>(new ScatterDims(dims))},            \
                  {"mode", mode_value(mode)}});                                                    \
  }
LAX_SCATTER(scatter_add)
LAX_SCATTER(scatter_mul)
LAX_SCATTER(scatter_min)
LAX_SCATTER(scatter_max)
#undef LAX_SCATTER

}  // namespace graft::lax
