// Decompositions for devices: primitives a device has no kernel for, expressed through primitives it
// has (register_device_decomposition in graft/core/primitive.h). The dispatcher runs them eagerly
// with the device as the default device, so every primitive they bind is dispatched again on it.
//
//   select_n with more cases   a chain of two-case selects
//   pad with negative padding  pad with the positive part, then slice
//   reduce_window_*            pad with the reduction's identity, then one strided slice per window
//                              offset, combined (the window is small: pooling)
//   select_and_gather_add,     the same slices: a running "first maximum" per window, and for the
//   select_and_scatter_add     scatter one interior-padded contribution per window offset
//   conv_general_dilated       im2col: pad (input dilation in the interior padding), one strided slice
//                              per kernel offset, concatenated, and one batched dot_general per group
//
// They follow the CPU kernels' semantics (window order, the first maximum, padding never selected), so
// the conformance rows hold on a device through them; the simulated device's tests
// (tests/cuda/test_sim_device.cpp) run them everywhere. Cases they do not cover go through the host.
#include "graft/prims/rules.h"

namespace graft::prims {

namespace {

using Pairs = std::vector<std::pair<int64_t, int64_t>>;

// Windows with more elements than this (global pooling over large planes, scans written as windows)
// go through the host: a slice per offset would be slower than the copy.
constexpr int64_t kMaxWindowElements = 256;

Device where(std::span<const Array> in) { return in.empty() ? default_device() : in[0].device(); }

// ---- select_n, pad -------------------------------------------------------------------------------------------
Arrays select_n_decomposed(const Primitive& p, std::span<const Array> in, std::span<const Aval> outs,
                           const Params& params) {
  if (in.size() <= 3) return host_fallback(p, in, outs, params, where(in));
  const Array& which = in[0];
  Array out = in[1];
  for (size_t k = 2; k < in.size(); ++k)
    out = lax::select(lax::eq(which, lax::scalar(static_cast<double>(k - 1), which.dtype())), in[k], out);
  return {out};
}

Arrays pad_decomposed(const Primitive& p, std::span<const Array> in, std::span<const Aval> outs, const Params& params) {
  const auto& cfg = params.get_object<lax::IntTuples>("padding_config").items;
  bool negative = false;
  for (auto& c : cfg) negative = negative || c[0] < 0 || c[1] < 0;
  if (!negative) return host_fallback(p, in, outs, params, where(in));
  std::vector<IntList> positive;
  for (auto& c : cfg) positive.push_back({std::max<int64_t>(c[0], 0), std::max<int64_t>(c[1], 0), c[2]});
  Array r = lax::pad(in[0], in[1], positive);
  Shape start, limit;
  for (size_t d = 0; d < cfg.size(); ++d) {
    start.push_back(std::max<int64_t>(-cfg[d][0], 0));
    limit.push_back(r.shape()[d] - std::max<int64_t>(-cfg[d][1], 0));
  }
  return {lax::slice(r, start, limit)};
}

// ---- windows -------------------------------------------------------------------------------------------------
struct Win {
  IntList window, strides, base_dil, win_dil;
  Pairs padding;
  int64_t elements = 1;
};

Win read_window(const Params& p) {
  Win w{p.get_ints("window_dimensions"), p.get_ints("window_strides"), p.get_ints("base_dilation"),
        p.get_ints("window_dilation"), {}};
  for (auto& t : p.get_object<lax::IntTuples>("padding").items) w.padding.emplace_back(t.at(0), t.at(1));
  for (int64_t k : w.window) w.elements *= k;
  return w;
}

// The operand padded with `fill`, its base dilation as interior padding: windows index it directly.
Array padded(const Array& x, const Array& fill, const Win& w) {
  std::vector<IntList> cfg;
  for (size_t d = 0; d < w.window.size(); ++d) cfg.push_back({w.padding[d].first, w.padding[d].second, w.base_dil[d] - 1});
  return lax::pad(x, fill, cfg);
}

// Every window offset (a multi-index into the window), in row-major order: the CPU's window order.
std::vector<IntList> window_offsets(const IntList& window) {
  std::vector<IntList> all;
  IntList k(window.size(), 0);
  int64_t n = 1;
  for (int64_t s : window) n *= s;
  for (int64_t i = 0; i < n; ++i) {
    all.push_back(k);
    for (size_t d = k.size(); d-- > 0;) {
      if (++k[d] < window[d]) break;
      k[d] = 0;
    }
  }
  return all;
}

// For every output position, the element at window offset k of its window (a strided slice of the
// padded operand xp).
Array at_offset(const Array& xp, const IntList& k, const IntList& win_dil, const IntList& strides, const Shape& out) {
  Shape start, limit, step;
  for (size_t d = 0; d < k.size(); ++d) {
    int64_t s = k[d] * win_dil[d];
    start.push_back(s);
    limit.push_back(s + (out[d] - 1) * strides[d] + 1);
    step.push_back(strides[d]);
  }
  return lax::slice(xp, start, limit, step);
}

// The identity of a reduction as a rank-0 array: 0 for sums, the reduction of nothing otherwise
// (-inf or the type's lowest value for max, false for a boolean max).
Array identity(const Primitive& p, DType d) {
  if (&p == &reduce_window_sum_p) return lax::scalar(0, d);
  Array none = lax::full({0}, 0, d);
  return &p == &reduce_window_max_p ? lax::reduce_max(none, {0}) : lax::reduce_min(none, {0});
}

bool decomposable(const Win& w, const Aval& out) { return w.elements <= kMaxWindowElements && numel(out.shape) > 0; }

Arrays window_decomposed(const Primitive& p, std::span<const Array> in, std::span<const Aval> outs, const Params& params) {
  Win w = read_window(params);
  if (!decomposable(w, outs[0])) return host_fallback(p, in, outs, params, where(in));
  Array xp = padded(in[0], identity(p, in[0].dtype()), w);
  Array acc;
  for (const IntList& k : window_offsets(w.window)) {
    Array v = at_offset(xp, k, w.win_dil, w.strides, outs[0].shape);
    if (!acc.valid()) {
      acc = v;
    } else if (&p == &reduce_window_sum_p) {
      acc = lax::add(acc, v);
    } else {
      acc = &p == &reduce_window_max_p ? lax::max(acc, v) : lax::min(acc, v);
    }
  }
  return {acc};
}

// The selection of select_and_*: per window, which offset holds its first maximum (minimum) among the
// elements that are not padding, as the CPU's selected_offsets; -1 for a window of padding only.
// Calls visit(k, take) for every offset k with the mask of windows whose selection moves to k.
template <class F>
void select_in_windows(const Array& x, const Win& w, const Shape& out, bool is_max, F&& visit) {
  Array xp = padded(x, lax::scalar(0, x.dtype()), w);
  Array real = padded(lax::full(x.shape(), 1, DType::bool_), lax::scalar(0, DType::bool_), w);
  Array best, have;
  auto offsets = window_offsets(w.window);
  for (size_t i = 0; i < offsets.size(); ++i) {
    Array v = at_offset(xp, offsets[i], w.win_dil, w.strides, out);
    Array ok = at_offset(real, offsets[i], w.win_dil, w.strides, out);
    Array take = ok;
    if (i > 0) {
      Array better = is_max ? lax::gt(v, best) : lax::lt(v, best);
      take = lax::bitwise_and(ok, lax::bitwise_or(lax::bitwise_not(have), better));
      best = lax::select(take, v, best);
      have = lax::bitwise_or(have, ok);
    } else {
      best = v;
      have = ok;
    }
    visit(static_cast<int64_t>(i), offsets[i], take);
  }
}

bool selects_max(const Params& p) { return p.get<std::string>("select_prim") == "max"; }

// select_and_gather_add(tangents, operand): per window, the tangent at the operand's selected element.
Arrays select_gather_decomposed(const Primitive& p, std::span<const Array> in, std::span<const Aval> outs,
                                const Params& params) {
  Win w = read_window(params);
  if (!decomposable(w, outs[0]) || in[1].dtype() == DType::bool_) return host_fallback(p, in, outs, params, where(in));
  Array tp = padded(in[0], lax::scalar(0, in[0].dtype()), w);
  Array out;
  select_in_windows(in[1], w, outs[0].shape, selects_max(params), [&](int64_t i, const IntList& k, const Array& take) {
    Array t = at_offset(tp, k, w.win_dil, w.strides, outs[0].shape);
    out = i == 0 ? lax::select(take, t, lax::zeros_like(t)) : lax::select(take, t, out);
  });
  return {out};
}

// select_and_scatter_add(source, operand): each window's source value added at its selected element.
// Per window offset, the sources of the windows that selected it are spread back onto the padded
// operand's grid by interior padding (the transpose of the strided slice), summed, and the padding
// and base dilation are then removed.
Arrays select_scatter_decomposed(const Primitive& p, std::span<const Array> in, std::span<const Aval> outs,
                                 const Params& params) {
  Win w = read_window(params);
  const Array &src = in[0], &x = in[1];
  const Shape& wout = src.shape();
  if (!decomposable(w, Aval(wout, src.dtype())) || x.dtype() == DType::bool_)
    return host_fallback(p, in, outs, params, where(in));
  Array chosen = lax::full(wout, -1, DType::i32);
  select_in_windows(x, w, wout, selects_max(params), [&](int64_t i, const IntList&, const Array& take) {
    chosen = lax::select(take, lax::full(wout, static_cast<double>(i), DType::i32), chosen);
  });
  size_t nd = w.window.size();
  Shape full_padded;
  for (size_t d = 0; d < nd; ++d)
    full_padded.push_back(dilate_dim(x.shape()[d], w.base_dil[d]) + w.padding[d].first + w.padding[d].second);
  Array zero = lax::scalar(0, src.dtype());
  Array acc;
  auto offsets = window_offsets(w.window);
  for (size_t i = 0; i < offsets.size(); ++i) {
    Array mine = lax::select(lax::eq(chosen, lax::scalar(static_cast<double>(i), DType::i32)), src, lax::zeros_like(src));
    std::vector<IntList> cfg;
    for (size_t d = 0; d < nd; ++d) {
      int64_t lo = offsets[i][d] * w.win_dil[d];
      cfg.push_back({lo, full_padded[d] - lo - dilate_dim(wout[d], w.strides[d]), w.strides[d] - 1});
    }
    Array spread = lax::pad(mine, zero, cfg);
    acc = acc.valid() ? lax::add(acc, spread) : spread;
  }
  std::vector<IntList> unpad;
  Shape start(nd, 0), limit, step;
  for (size_t d = 0; d < nd; ++d) {
    unpad.push_back({-w.padding[d].first, -w.padding[d].second, 0});
    limit.push_back(dilate_dim(x.shape()[d], w.base_dil[d]));
    step.push_back(w.base_dil[d]);
  }
  return {lax::slice(lax::pad(acc, zero, unpad), start, limit, step)};
}

// ---- convolution -------------------------------------------------------------------------------------------
Arrays conv_decomposed(const Primitive& p, std::span<const Array> in, std::span<const Aval> outs, const Params& params) {
  const auto& dn = params.get_object<lax::ConvDims>("dimension_numbers");
  IntList strides = params.get_ints("window_strides"), lhs_dil = params.get_ints("lhs_dilation"),
          rhs_dil = params.get_ints("rhs_dilation");
  const auto& pads = params.get_object<lax::IntTuples>("padding").items;
  int64_t fgc = params.get_int("feature_group_count"), bgc = params.get_int("batch_group_count");
  // canonical layouts: lhs [N, C, S...], rhs [O, I, K...], out [N', O, OS...]
  auto axes = [](const IntList& v) { return Axes(v.begin(), v.end()); };
  Array lhs = lax::transpose(in[0], axes(dn.lhs_spec)), rhs = lax::transpose(in[1], axes(dn.rhs_spec));
  size_t nsp = static_cast<size_t>(lhs.ndim()) - 2;
  int64_t N = lhs.shape()[0], C = lhs.shape()[1], O = rhs.shape()[0], I = rhs.shape()[1];
  IntList ksize;
  Shape os;
  int64_t KK = 1, P = 1;
  for (size_t i = 0; i < nsp; ++i) {
    ksize.push_back(rhs.shape()[2 + i]);
    os.push_back(outs[0].shape[static_cast<size_t>(dn.out_spec[2 + i])]);
    KK *= ksize.back();
    P *= os.back();
  }
  if (numel(outs[0].shape) == 0 || KK == 0 || C == 0 || KK > kMaxWindowElements)
    return host_fallback(p, in, outs, params, where(in));
  std::vector<IntList> cfg{{0, 0, 0}, {0, 0, 0}};
  for (size_t i = 0; i < nsp; ++i) cfg.push_back({pads[i].at(0), pads[i].at(1), lhs_dil[i] - 1});
  Array xp = lax::pad(lhs, lax::scalar(0, lhs.dtype()), cfg);
  // the columns: [N, C, KK, P], kernel offsets in row-major order (the kernel's own layout)
  Arrays cols;
  IntList dil{1, 1}, step{1, 1};
  dil.insert(dil.end(), rhs_dil.begin(), rhs_dil.end());
  step.insert(step.end(), strides.begin(), strides.end());
  Shape sliced{N, C};
  sliced.insert(sliced.end(), os.begin(), os.end());
  for (IntList k : window_offsets(ksize)) {
    k.insert(k.begin(), {0, 0});
    cols.push_back(lax::reshape(at_offset(xp, k, dil, step, sliced), {N, C, 1, P}));
  }
  Array col = cols.size() == 1 ? cols[0] : lax::concatenate(cols, 2);
  Array prod;
  int64_t nout = N / bgc;
  if (bgc == 1) {
    // feature groups: input channels g*I.., output features g*(O/G)..
    Array l = lax::reshape(col, {N, fgc, I * KK, P});
    Array r = lax::reshape(rhs, {fgc, O / fgc, I * KK});
    prod = lax::dot_general(l, r, lax::DotDims({2}, {2}, {1}, {0}));  // [G, N, P, O/G]
  } else {
    // batch groups: batch elements b*N'.., output features b*(O/B)..
    Array l = lax::reshape(col, {bgc, nout, C * KK, P});
    Array r = lax::reshape(rhs, {bgc, O / bgc, C * KK});
    prod = lax::dot_general(l, r, lax::DotDims({2}, {2}, {0}, {0}));  // [B, N', P, O/B]
  }
  Shape canon{nout, O};
  canon.insert(canon.end(), os.begin(), os.end());
  Array res = lax::reshape(lax::transpose(prod, {1, 0, 3, 2}), canon);
  IntList back(canon.size());
  for (size_t j = 0; j < canon.size(); ++j) back[static_cast<size_t>(dn.out_spec[j])] = static_cast<int64_t>(j);
  return {lax::transpose(res, axes(back))};
}

}  // namespace

void register_device_decompositions() {
  register_device_decomposition(select_n_p, &select_n_decomposed);
  register_device_decomposition(pad_p, &pad_decomposed);
  for (const Primitive* p : {&reduce_window_sum_p, &reduce_window_max_p, &reduce_window_min_p})
    register_device_decomposition(*p, &window_decomposed);
  register_device_decomposition(select_and_gather_add_p, &select_gather_decomposed);
  register_device_decomposition(select_and_scatter_add_p, &select_scatter_decomposed);
  register_device_decomposition(conv_general_dilated_p, &conv_decomposed);
}

}  // namespace graft::prims
