// Windowed reductions (pooling): reduce_window_sum, reduce_window_max, reduce_window_min. All their
// rules. Windows have per-dimension size, stride, padding (filled with the reduction's identity),
// base (input) dilation and window dilation, as XLA's ReduceWindow.
#include <cmath>
#include <limits>
#include <memory>
#include <optional>

#include "graft/prims/rules.h"

namespace graft::prims {

namespace {

using Pairs = std::vector<std::pair<int64_t, int64_t>>;

struct WinP {
  IntList window, strides, base_dil, win_dil;
  Pairs padding;
};

WinP read(const Params& p) {
  WinP w{p.get_ints("window_dimensions"), p.get_ints("window_strides"), p.get_ints("base_dilation"),
         p.get_ints("window_dilation"), {}};
  for (auto& t : p.get_object<lax::IntTuples>("padding").items) w.padding.emplace_back(t.at(0), t.at(1));
  return w;
}

enum class WKind { sum, max, min };
WKind kind_of(const Primitive& p) {
  return &p == &reduce_window_sum_p ? WKind::sum : (&p == &reduce_window_max_p ? WKind::max : WKind::min);
}

Avals window_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  check_arity(p, in, 1);
  const Aval& x = *in[0];
  WinP w = read(params);
  size_t n = static_cast<size_t>(x.ndim());
  if (w.window.size() != n || w.strides.size() != n || w.base_dil.size() != n || w.win_dil.size() != n ||
      w.padding.size() != n)
    shape_error(p, in, "window dimensions, strides, padding and dilations need one entry per operand dimension");
  if (kind_of(p) == WKind::sum && is_bool(x.dtype)) type_error(p, in, "requires a numeric operand");
  Shape out;
  for (size_t i = 0; i < n; ++i) {
    if (w.window[i] < 1 || w.strides[i] < 1 || w.base_dil[i] < 1 || w.win_dil[i] < 1)
      shape_error(p, in, "window sizes, strides and dilations must be >= 1");
    int64_t padded = dilate_dim(x.shape[i], w.base_dil[i]) + w.padding[i].first + w.padding[i].second;
    int64_t span = dilate_dim(w.window[i], w.win_dil[i]);
    out.push_back(padded < span ? 0 : (padded - span) / w.strides[i] + 1);
  }
  return {Aval(out, x.dtype, x.weak_type)};
}

// For each dimension, the input index of (window offset k, output position o), or -1 for padding and
// points between the elements of a dilated input.
std::vector<std::vector<int64_t>> window_tables(const Shape& in, const Shape& out, const WinP& w) {
  std::vector<std::vector<int64_t>> t(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    t[d].resize(static_cast<size_t>(w.window[d] * out[d]));
    for (int64_t k = 0; k < w.window[d]; ++k)
      for (int64_t o = 0; o < out[d]; ++o) {
        int64_t pos = o * w.strides[d] + k * w.win_dil[d] - w.padding[d].first;
        int64_t q = -1;
        if (pos >= 0 && pos % w.base_dil[d] == 0 && pos / w.base_dil[d] < in[d]) q = pos / w.base_dil[d];
        t[d][static_cast<size_t>(k * out[d] + o)] = q;
      }
  }
  return t;
}

// Calls f(out_flat, window_flat, in_flat or -1) for every (output element, window element) pair,
// in window order for each output. Windows that lie inside the input (the common case) use offsets
// precomputed relative to the window's first element instead of per-dimension lookups.
template <class F>
void for_each_window(const Shape& in, const Shape& out, const WinP& w, F&& f) {
  auto t = window_tables(in, out, w);
  size_t nd = in.size();
  Shape istr = strides_of(in);
  int64_t nout = numel(out), nwin = 1;
  for (auto k : w.window) nwin *= k;
  bool undilated = true;
  for (auto b : w.base_dil) undilated = undilated && b == 1;
  // per dim and output position: is every window offset inside the input?
  std::vector<std::vector<char>> inside(nd);
  for (size_t d = 0; d < nd; ++d) {
    inside[d].assign(static_cast<size_t>(out[d]), 1);
    for (int64_t o = 0; o < out[d]; ++o)
      for (int64_t k = 0; k < w.window[d]; ++k)
        if (t[d][static_cast<size_t>(k * out[d] + o)] < 0) inside[d][static_cast<size_t>(o)] = 0;
  }
  std::vector<int64_t> woff(static_cast<size_t>(nwin), 0);
  {
    std::vector<int64_t> ki(nd, 0);
    for (int64_t k = 0; k < nwin; ++k) {
      for (size_t d = 0; d < nd; ++d) woff[static_cast<size_t>(k)] += ki[d] * w.win_dil[d] * istr[d];
      for (size_t d = nd; d-- > 0;) {
        if (++ki[d] < w.window[d]) break;
        ki[d] = 0;
      }
    }
  }
  cpu::parallel_for(nout, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, nwin)), [&](int64_t b, int64_t e) {
    std::vector<int64_t> oi(nd), ki(nd);
    int64_t rem = b;  // decode the first output index once, then count like an odometer
    for (size_t d = nd; d-- > 0;) {
      oi[d] = rem % out[d];
      rem /= out[d];
    }
    for (int64_t o = b; o < e; ++o) {
      if (o > b)
        for (size_t d = nd; d-- > 0;) {
          if (++oi[d] < out[d]) break;
          oi[d] = 0;
        }
      bool fast = undilated;
      int64_t base = 0;
      for (size_t d = 0; d < nd && fast; ++d) {
        fast = inside[d][static_cast<size_t>(oi[d])] != 0;
        base += t[d][static_cast<size_t>(oi[d])] * istr[d];
      }
      if (fast) {
        for (int64_t k = 0; k < nwin; ++k) f(o, k, base + woff[static_cast<size_t>(k)]);
        continue;
      }
      std::fill(ki.begin(), ki.end(), 0);
      for (int64_t k = 0; k < nwin; ++k) {
        int64_t off = 0;
        for (size_t d = 0; d < nd && off >= 0; ++d) {
          int64_t q = t[d][static_cast<size_t>(ki[d] * out[d] + oi[d])];
          off = q < 0 ? -1 : off + q * istr[d];
        }
        f(o, k, off);
        for (size_t d = nd; d-- > 0;) {
          if (++ki[d] < w.window[d]) break;
          ki[d] = 0;
        }
      }
    }
  });
}

// Pooling over the last two dimensions only (no padding or dilation; the CNN case): windows are
// (kh, kw) blocks of planes, visited by f(out_flat, first_element_offset, row_stride) in output
// order. Returns false (and does nothing) when the window is not of that form.
struct PlaneWindows {
  int64_t planes, H, W, OH, OW, kh, kw, sh, sw;
};
std::optional<PlaneWindows> plane_windows(const Shape& in, const Shape& out, const WinP& w) {
  size_t nd = in.size();
  if (nd < 2) return std::nullopt;
  for (size_t d = 0; d < nd; ++d) {
    if (w.base_dil[d] != 1 || w.win_dil[d] != 1 || w.padding[d].first != 0 || w.padding[d].second != 0)
      return std::nullopt;
    if (d + 2 < nd && (w.window[d] != 1 || w.strides[d] != 1)) return std::nullopt;
  }
  int64_t planes = 1;
  for (size_t d = 0; d + 2 < nd; ++d) planes *= in[d];
  return PlaneWindows{planes, in[nd - 2], in[nd - 1], out[nd - 2], out[nd - 1],
                      w.window[nd - 2], w.window[nd - 1], w.strides[nd - 2], w.strides[nd - 1]};
}

// f(std::integral_constant<int64_t, v>) when 1 <= v <= 16, else f(v): loops whose trip count is a
// small constant get unrolled and vectorized without remainder handling.
template <class F>
void with_small_constant(int64_t v, F&& f) {
  bool done = [&]<int64_t... K>(std::integer_sequence<int64_t, K...>) {
    return ((v == K + 1 ? (f(std::integral_constant<int64_t, K + 1>{}), true) : false) || ...);
  }(std::make_integer_sequence<int64_t, 16>{});
  if (!done) f(v);
}

// Rows [r0, r1) of 2x2 windows with stride 2 over planes of width W: the two input rows are
// combined first (contiguous), then neighbouring columns. With OW a compile-time constant (rows are
// short) the compiler unrolls and vectorizes both without remainder loops.
template <class T, class C, class OWT, class Op>
__attribute__((noinline)) void pool_rows_2x2(const T* xd, T* od, int64_t r0, int64_t r1, int64_t OH, int64_t H,
                                             int64_t W, OWT ow_count, Op op) {
  const int64_t OW = ow_count;
  ScratchBuffer<C> scratch(static_cast<size_t>(2 * OW));
  C* t = scratch.data();
  for (int64_t r = r0; r < r1; ++r) {
    const T* a = xd + (r / OH) * H * W + (r % OH) * 2 * W;
    const T* b = a + W;
    T* out = od + r * OW;
    for (int64_t j = 0; j < 2 * OW; ++j) t[j] = op(static_cast<C>(a[j]), static_cast<C>(b[j]));
    for (int64_t ow = 0; ow < OW; ++ow) out[ow] = static_cast<T>(op(t[2 * ow], t[2 * ow + 1]));
  }
}

template <class F>
void for_each_plane_window(const PlaneWindows& q, F&& f) {
  cpu::parallel_for(q.planes * q.OH, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, q.OW * q.kh * q.kw)),
                    [&](int64_t r0, int64_t r1) {
                      for (int64_t r = r0; r < r1; ++r) {
                        int64_t p = r / q.OH, oh = r % q.OH;
                        int64_t row = p * q.H * q.W + oh * q.sh * q.W;
                        for (int64_t ow = 0; ow < q.OW; ++ow) f(r * q.OW + ow, row + ow * q.sw);
                      }
                    });
}

Arrays window_impl(const Primitive& p, std::span<const Array> in, std::span<const Aval> outv, const Params& params) {
  WinP w = read(params);
  const Array& x = in[0];
  Array r = Array::empty(outv[0]);
  if (r.size() == 0) return {r};
  WKind kind = kind_of(p);
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const T* xd = static_cast<const T*>(x.raw_data());
    T* od = static_cast<T*>(r.concrete()->data());
    C init;
    if constexpr (std::is_same_v<C, bool>) {
      init = kind == WKind::min;
    } else if (kind == WKind::sum) {
      init = C(0);
    } else if constexpr (std::is_floating_point_v<C>) {
      init = kind == WKind::max ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::infinity();
    } else {
      init = kind == WKind::max ? std::numeric_limits<C>::lowest() : std::numeric_limits<C>::max();
    }
    auto fold = [&](C& a, C v) {
      if constexpr (std::is_same_v<C, bool>) {
        a = kind == WKind::min ? (a && v) : (a || v);
      } else if (kind == WKind::sum) {
        a = static_cast<C>(a + v);
      } else if (kind == WKind::max) {
        a = ((v > a) | (v != v)) ? v : a;  // branch-free: on real data the comparison is a coin toss
      } else {
        a = ((v < a) | (v != v)) ? v : a;
      }
    };
    auto q = plane_windows(x.shape(), outv[0].shape, w);
    if constexpr (std::is_floating_point_v<C>) {
      if (q && q->kh == 2 && q->kw == 2 && q->sh == 2 && q->sw == 2) {
        // 2x2 pooling, stride 2: the operation fixed per loop so that the compiler vectorizes it
        auto pool = [&](auto op) {
          with_small_constant(q->OW, [&](auto ow) {
            cpu::parallel_for(q->planes * q->OH, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, q->W)),
                              [&](int64_t r0, int64_t r1) { pool_rows_2x2<T, C>(xd, od, r0, r1, q->OH, q->H, q->W, ow, op); });
          });
        };
        // max/min propagate NaN like fold below; written as a select of a max (or min) so that the
        // compiler emits vmaxps/blends rather than branches (a coin toss on real data)
        if (kind == WKind::max) {
          pool([](C u, C v) {
            C m = v > u ? v : u;
            return v != v ? v : m;
          });
        } else if (kind == WKind::min) {
          pool([](C u, C v) {
            C m = v < u ? v : u;
            return v != v ? v : m;
          });
        } else {
          pool([](C u, C v) { return u + v; });
        }
        return;
      }
    }
    if (q) {
      for_each_plane_window(*q, [&](int64_t o, int64_t base) {
        C a = init;
        for (int64_t i = 0; i < q->kh; ++i)
          for (int64_t j = 0; j < q->kw; ++j) fold(a, static_cast<C>(xd[base + i * q->W + j]));
        od[o] = static_cast<T>(a);
      });
      return;
    }
    ScratchBuffer<C> acc(static_cast<size_t>(r.size()), init);  // not vector<bool>: needs C&
    for_each_window(x.shape(), outv[0].shape, w, [&](int64_t o, int64_t, int64_t off) {
      if (off < 0) return;
      fold(acc[static_cast<size_t>(o)], static_cast<C>(xd[off]));
    });
    for (int64_t i = 0; i < r.size(); ++i) od[i] = static_cast<T>(acc[static_cast<size_t>(i)]);
  });
  return {r};
}

Params window_params(const WinP& w) {
  std::vector<IntList> pad;
  for (auto& [lo, hi] : w.padding) pad.push_back({lo, hi});
  return {{"base_dilation", w.base_dil},
          {"padding", Ref<const ParamObject>(new lax::IntTuples(pad))},
          {"window_dilation", w.win_dil},
          {"window_dimensions", w.window},
          {"window_strides", w.strides}};
}

Arrays sum_transpose(const Primitive& p, std::span<const Array> cts, std::span<const TArg> args, const Params& params) {
  WinP w = read(params);
  const Array& ct = cts[0];
  IntList in(args[0].aval.shape.begin(), args[0].aval.shape.end()), out(ct.shape().begin(), ct.shape().end());
  Pairs pads = window_grad_padding(in, w.window, w.strides, out, w.padding, w.base_dil, w.win_dil);
  std::vector<IntList> cfg;
  for (size_t i = 0; i < pads.size(); ++i) cfg.push_back({pads[i].first, pads[i].second, w.strides[i] - 1});
  Array padded = lax::pad(ct, lax::scalar(0, ct.dtype()), cfg);
  WinP back{w.window, w.base_dil, IntList(in.size(), 1), w.win_dil, Pairs(in.size(), {0, 0})};
  return {bind1(p, {padded}, window_params(back))};
}

// For every window, the flat offset of the element it selects (first maximum or minimum), or -1
// when the window holds only padding.
template <class T>
ScratchBuffer<int64_t> selected_offsets(const T* x, const Shape& in, const Shape& out, const WinP& w, bool is_max) {
  using C = compute_t<T>;
  ScratchBuffer<int64_t> sel(static_cast<size_t>(numel(out)), -1);
  if (auto q = plane_windows(in, out, w)) {
    for_each_plane_window(*q, [&](int64_t o, int64_t base) {
      int64_t s = base;
      C b = static_cast<C>(x[base]);
      for (int64_t i = 0; i < q->kh; ++i)
        for (int64_t j = 0; j < q->kw; ++j) {
          int64_t off = base + i * q->W + j;
          C v = static_cast<C>(x[off]);
          bool take = is_max ? v > b : v < b;  // branch-free, as in window_impl
          s = take ? off : s;
          b = take ? v : b;
        }
      sel[static_cast<size_t>(o)] = s;
    });
    return sel;
  }
  ScratchBuffer<C> best(sel.size());
  for_each_window(in, out, w, [&](int64_t o, int64_t, int64_t off) {
    if (off < 0) return;
    C v = static_cast<C>(x[off]);
    int64_t& s = sel[static_cast<size_t>(o)];
    C& b = best[static_cast<size_t>(o)];
    if (s < 0 || (is_max ? v > b : v < b)) {
      s = off;
      b = v;
    }
  });
  return sel;
}

// The window parameters with the select primitive (max or min) of the select_and_* primitives.
Params select_params(const WinP& w, bool is_max) { return window_params(w).with("select_prim", std::string(is_max ? "max" : "min")); }
bool selects_max(const Params& p) { return p.get<std::string>("select_prim") == "max"; }

// d max-pool: the tangent of the element each window picked (the first maximum, as XLA's
// select-and-scatter).
JvpResult chooser_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                      const Params& params) {
  Array y = bind1(p, primals, params);
  Array t = bind1(select_and_gather_add_p, {tangents[0], primals[0]},
                  select_params(read(params), kind_of(p) == WKind::max));
  return {{y}, {t}};
}

// ---- select_and_gather_add(tangents, operand) -> per window, the tangent at the operand's selected
// element; select_and_scatter_add(source, operand) -> its transpose: each window's value added at
// the element it selects. Both are linear in their first argument.
Avals select_gather_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  check_arity(p, in, 2);
  if (in[0]->shape != in[1]->shape || in[0]->dtype != in[1]->dtype)
    shape_error(p, in, "tangents and operand must have the same shape and dtype");
  const Aval* x = in[1];
  Avals out = window_shape(reduce_window_max_p, AvalPtrs(&x, 1), params);
  return {Aval(out[0].shape, in[0]->dtype, in[0]->weak_type)};
}

Avals select_scatter_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  check_arity(p, in, 2);
  const Aval* x = in[1];
  Avals win = window_shape(reduce_window_max_p, AvalPtrs(&x, 1), params);
  if (in[0]->shape != win[0].shape || in[0]->dtype != in[1]->dtype)
    shape_error(p, in, "source must have the window output's shape and the operand's dtype");
  return {*in[1]};
}

Arrays select_gather_impl(const Primitive&, std::span<const Array> in, std::span<const Aval> out,
                          const Params& params) {
  WinP w = read(params);
  Array r = Array::empty(out[0]);
  visit_dtype(in[1].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      auto sel = selected_offsets(static_cast<const T*>(in[1].raw_data()), in[1].shape(), out[0].shape, w,
                                  selects_max(params));
      const T* t = static_cast<const T*>(in[0].raw_data());
      T* o = static_cast<T*>(r.concrete()->data());
      for (size_t i = 0; i < sel.size(); ++i) o[i] = sel[i] < 0 ? T(0) : t[sel[i]];
    }
  });
  return {r};
}

// Disjoint plane windows (strides at least the window, max pooling's usual case): every input
// element lies in one window at most, so each row of windows owns a band of input rows, zeroes it and
// writes its windows' sources at their selected elements (in parallel, with no scatter accumulator).
// The last row of windows also owns the rows below it that no window covers.
template <class T, bool IsMax>
void scatter_disjoint(const T* src, const T* x, T* o, const PlaneWindows& q) {
  using C = compute_t<T>;
  cpu::parallel_for(q.planes * q.OH, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, q.sh * q.W)),
                    [&](int64_t r0, int64_t r1) {
                      for (int64_t r = r0; r < r1; ++r) {
                        int64_t p = r / q.OH, oh = r % q.OH;
                        int64_t h0 = oh * q.sh, h1 = oh + 1 == q.OH ? q.H : h0 + q.sh;
                        int64_t band = p * q.H * q.W + h0 * q.W;
                        std::fill(o + band, o + band + (h1 - h0) * q.W, T(0));
                        for (int64_t ow = 0; ow < q.OW; ++ow) {
                          int64_t base = band + ow * q.sw, s = base;
                          C b = static_cast<C>(x[base]);
                          for (int64_t i = 0; i < q.kh; ++i)
                            for (int64_t j = 0; j < q.kw; ++j) {
                              int64_t off = base + i * q.W + j;
                              C v = static_cast<C>(x[off]);
                              bool take = IsMax ? v > b : v < b;  // the choice selected_offsets makes
                              s = take ? off : s;
                              b = take ? v : b;
                            }
                          o[s] = src[r * q.OW + ow];
                        }
                      }
                    });
}

// 2x2 windows with stride 2 (max pooling's usual case): each row of windows owns its two input rows
// (and the rows below the last one), and every window's choice is made without branches across the
// row, the stores selecting the source's bits or zero's, so that the compiler vectorizes the row.
// Chooses as scatter_disjoint does.
template <class T, bool IsMax, class OWT>
__attribute__((noinline)) void scatter_rows_2x2(const T* src, const T* x, T* o, int64_t r0, int64_t r1,
                                                const PlaneWindows& q, OWT ow_count) {
  using C = compute_t<T>;
  using U = std::conditional_t<
      sizeof(T) == 1, uint8_t,
      std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;
  static_assert(sizeof(U) == sizeof(T));
  using UA __attribute__((may_alias)) = U;  // T's bytes read and written as U
  const int64_t OW = ow_count, W = q.W;
  for (int64_t r = r0; r < r1; ++r) {
    int64_t p = r / q.OH, oh = r % q.OH;
    int64_t h1 = oh + 1 == q.OH ? q.H : 2 * oh + 2;
    int64_t band = p * q.H * W + 2 * oh * W;
    const T *a = x + band, *b = a + W;
    UA* oa = reinterpret_cast<UA*>(o + band);
    UA* ob = oa + W;
    const UA* s = reinterpret_cast<const UA*>(src) + r * OW;
    for (int64_t j = 0; j < OW; ++j) {
      C v0 = static_cast<C>(a[2 * j]), v1 = static_cast<C>(a[2 * j + 1]), v2 = static_cast<C>(b[2 * j]),
        v3 = static_cast<C>(b[2 * j + 1]);
      // masks rather than selects: GCC turns selects into branches here (a coin toss on real data)
      U t1 = U(0) - U(IsMax ? v1 > v0 : v1 < v0);
      C b1 = IsMax ? (v1 > v0 ? v1 : v0) : (v1 < v0 ? v1 : v0);
      U t2 = U(0) - U(IsMax ? v2 > b1 : v2 < b1);
      C b2 = IsMax ? (v2 > b1 ? v2 : b1) : (v2 < b1 ? v2 : b1);
      U t3 = U(0) - U(IsMax ? v3 > b2 : v3 < b2);
      // the element chosen: the last of the taken ones
      U m3 = t3, m2 = t2 & ~t3, m1 = t1 & ~t2 & ~t3, m0 = ~(t1 | t2 | t3);
      U sv = s[j];
      oa[2 * j] = sv & m0;  // all-zero bits: +0 of every floating type
      oa[2 * j + 1] = sv & m1;
      ob[2 * j] = sv & m2;
      ob[2 * j + 1] = sv & m3;
    }
    for (int64_t c = 2 * OW; c < W; ++c) oa[c] = ob[c] = U(0);  // a column no window covers
    std::fill(oa + 2 * W, oa + (h1 - 2 * oh) * W, U(0));        // rows below the last row of windows
  }
}

Arrays select_scatter_impl(const Primitive&, std::span<const Array> in, std::span<const Aval> out,
                           const Params& params) {
  WinP w = read(params);
  Array r = Array::empty(out[0]);
  visit_dtype(in[1].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    if constexpr (!std::is_same_v<T, bool>) {
      auto q = plane_windows(in[1].shape(), in[0].shape(), w);
      if (q && q->OH > 0 && q->OW > 0 && q->kh == 2 && q->kw == 2 && q->sh == 2 && q->sw == 2) {
        const T* src = static_cast<const T*>(in[0].raw_data());
        const T* x = static_cast<const T*>(in[1].raw_data());
        T* o = static_cast<T*>(r.concrete()->data());
        const bool is_max = selects_max(params);
        with_small_constant(q->OW, [&](auto ow) {
          cpu::parallel_for(q->planes * q->OH, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, 2 * q->W)),
                            [&](int64_t r0, int64_t r1) {
                              if (is_max)
                                scatter_rows_2x2<T, true>(src, x, o, r0, r1, *q, ow);
                              else
                                scatter_rows_2x2<T, false>(src, x, o, r0, r1, *q, ow);
                            });
        });
        return;
      }
      if (q && q->OH > 0 && q->OW > 0 && q->sh >= q->kh && q->sw >= q->kw) {
        auto run = selects_max(params) ? &scatter_disjoint<T, true> : &scatter_disjoint<T, false>;
        run(static_cast<const T*>(in[0].raw_data()), static_cast<const T*>(in[1].raw_data()),
            static_cast<T*>(r.concrete()->data()), *q);
        return;
      }
      auto sel = selected_offsets(static_cast<const T*>(in[1].raw_data()), in[1].shape(), in[0].shape(), w,
                                  selects_max(params));
      ScratchBuffer<C> acc(static_cast<size_t>(r.size()), C(0));
      const T* s = static_cast<const T*>(in[0].raw_data());
      for (size_t i = 0; i < sel.size(); ++i)
        if (sel[i] >= 0) acc[static_cast<size_t>(sel[i])] += static_cast<C>(s[i]);
      T* o = static_cast<T*>(r.concrete()->data());
      for (size_t i = 0; i < acc.size(); ++i) o[i] = static_cast<T>(acc[i]);
    }
  });
  return {r};
}

JvpResult select_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                     const Params& params) {
  Array y = bind1(p, primals, params);
  if (is_zero(tangents[0])) return {{y}, {Array()}};  // the operand only selects: no derivative
  return {{y}, {bind1(p, {tangents[0], primals[1]}, params)}};
}

Arrays select_gather_transpose(const Primitive&, std::span<const Array> cts, std::span<const TArg> args,
                               const Params& params) {
  if (args[1].linear) fail<ValueError>("select_and_gather_add: the operand cannot be linear");
  return {bind1(select_and_scatter_add_p, {cts[0], args[1].value}, params), Array()};
}

Arrays select_scatter_transpose(const Primitive&, std::span<const Array> cts, std::span<const TArg> args,
                                const Params& params) {
  if (args[1].linear) fail<ValueError>("select_and_scatter_add: the operand cannot be linear");
  return {bind1(select_and_gather_add_p, {cts[0], args[1].value}, params), Array()};
}

// Both arguments batched at axis 0 (an unbatched one is broadcast), the batch dim a window of 1.
BatchResult select_batch(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                         const BatchInfo& axis, const Params& params) {
  Array a = batch_to_front(vals[0], dims[0], axis.size), b = batch_to_front(vals[1], dims[1], axis.size);
  WinP w = read(params);
  w.window.insert(w.window.begin(), 1);
  w.strides.insert(w.strides.begin(), 1);
  w.base_dil.insert(w.base_dil.begin(), 1);
  w.win_dil.insert(w.win_dil.begin(), 1);
  w.padding.insert(w.padding.begin(), {0, 0});
  return {{bind1(p, {a, b}, select_params(w, selects_max(params)))}, {0}};
}

BatchResult window_batch(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                         const BatchInfo&, const Params& params) {
  WinP w = read(params);
  int64_t d = dims[0];
  w.window.insert(w.window.begin() + d, 1);
  w.strides.insert(w.strides.begin() + d, 1);
  w.base_dil.insert(w.base_dil.begin() + d, 1);
  w.win_dil.insert(w.win_dil.begin() + d, 1);
  w.padding.insert(w.padding.begin() + d, {0, 0});
  return {{bind1(p, vals, window_params(w))}, {d}};
}

}  // namespace

const Primitive reduce_window_sum_p{"reduce_window_sum", 0, &window_shape, &window_impl, &linear_jvp, &sum_transpose,
                                    &window_batch};
const Primitive reduce_window_max_p{"reduce_window_max", 0, &window_shape, &window_impl, &chooser_jvp, nullptr,
                                    &window_batch};
const Primitive reduce_window_min_p{"reduce_window_min", 0, &window_shape, &window_impl, &chooser_jvp, nullptr,
                                    &window_batch};
const Primitive select_and_gather_add_p{"select_and_gather_add",  0, &select_gather_shape, &select_gather_impl,
                                        &select_jvp,              &select_gather_transpose, &select_batch};
const Primitive select_and_scatter_add_p{"select_and_scatter_add",  0, &select_scatter_shape, &select_scatter_impl,
                                         &select_jvp,               &select_scatter_transpose, &select_batch};

}  // namespace graft::prims

namespace graft::lax {
namespace {
Array window_op(const Primitive& p, const Array& x, const Shape& window, const Shape& strides,
                const std::vector<std::pair<int64_t, int64_t>>& padding, const Shape& base_dilation,
                const Shape& window_dilation) {
  size_t n = static_cast<size_t>(x.ndim());
  auto ones_if_empty = [n](const Shape& s) { return s.empty() ? IntList(n, 1) : prims::to_ints(s); };
  std::vector<IntList> pad;
  for (auto& [lo, hi] : padding) pad.push_back({lo, hi});
  if (pad.empty()) pad.assign(n, {0, 0});
  return bind1(p, {x},
               {{"base_dilation", ones_if_empty(base_dilation)},
                {"padding", Ref<const ParamObject>(new IntTuples(pad))},
                {"window_dilation", ones_if_empty(window_dilation)},
                {"window_dimensions", prims::to_ints(window)},
                {"window_strides", ones_if_empty(strides)}});
}
}  // namespace
Array reduce_window_sum(const Array& x, const Shape& window, const Shape& strides,
                        const std::vector<std::pair<int64_t, int64_t>>& padding, const Shape& base_dilation,
                        const Shape& window_dilation) {
  return window_op(prims::reduce_window_sum_p, x, window, strides, padding, base_dilation, window_dilation);
}
Array reduce_window_max(const Array& x, const Shape& window, const Shape& strides,
                        const std::vector<std::pair<int64_t, int64_t>>& padding, const Shape& base_dilation,
                        const Shape& window_dilation) {
  return window_op(prims::reduce_window_max_p, x, window, strides, padding, base_dilation, window_dilation);
}
Array reduce_window_min(const Array& x, const Shape& window, const Shape& strides,
                        const std::vector<std::pair<int64_t, int64_t>>& padding, const Shape& base_dilation,
                        const Shape& window_dilation) {
  return window_op(prims::reduce_window_min_p, x, window, strides, padding, base_dilation, window_dilation);
}
}  // namespace graft::lax
