// Scans along an axis: cumsum, cummax, cummin. All their rules.
#include <cmath>

#include "graft/prims/rules.h"

namespace graft::prims {

namespace {

enum class CKind { sum, max, min };

Avals cum_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  check_arity(p, in, 1);
  int64_t axis = params.get_int("axis");
  if (axis < 0 || axis >= in[0]->ndim()) shape_error(p, in, "axis " + std::to_string(axis) + " out of range");
  if (&p == &cumsum_p && in[0]->dtype == DType::bool_) type_error(p, in, "requires a numeric operand");
  return {*in[0]};
}

template <CKind K, class T>
void cum_kernel(const T* x, T* o, int64_t outer, int64_t n, int64_t inner, bool reverse) {
  using C = compute_t<T>;
  cpu::parallel_for(outer * inner, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, n)),
                    [&](int64_t b, int64_t e) {
                      for (int64_t oi = b; oi < e; ++oi) {
                        int64_t base = (oi / inner) * n * inner + oi % inner;
                        C acc{}, comp{};  // comp: an f64 sum's compensation (Neumaier)
                        double wide = 0;  // an f32 sum
                        for (int64_t r = 0; r < n; ++r) {
                          int64_t k = reverse ? n - 1 - r : r;
                          C v = static_cast<C>(x[base + k * inner]);
                          if (r == 0) {
                            acc = v;
                            if constexpr (K == CKind::sum && std::is_same_v<C, float>) wide = static_cast<double>(v);
                          } else if constexpr (K == CKind::sum) {
                            if constexpr (std::is_same_v<C, bool>) {
                              acc = acc || v;
                            } else if constexpr (std::is_integral_v<C> && std::is_signed_v<C>) {
                              using U = std::make_unsigned_t<C>;
                              acc = static_cast<C>(static_cast<U>(acc) + static_cast<U>(v));
                            } else if constexpr (std::is_same_v<C, float>) {
                              // f32 (and f16, bf16) running sums are kept in f64: plain f32 was 15% off
                              // after 2^24 terms, and an f32 compensation term drifts as much itself
                              wide += static_cast<double>(v);
                              o[base + k * inner] = static_cast<T>(wide);
                              continue;
                            } else if constexpr (std::is_floating_point_v<C>) {
                              // f64: compensated (Neumaier), within a few ulp of the exact running sum
                              C t = acc + v;
                              comp += std::fabs(acc) >= std::fabs(v) ? (acc - t) + v : (v - t) + acc;
                              acc = t;
                              o[base + k * inner] = static_cast<T>(acc + comp);
                              continue;
                            } else {
                              acc = static_cast<C>(acc + v);
                            }
                          } else {
                            bool take = K == CKind::max ? v > acc : v < acc;
                            if constexpr (std::is_floating_point_v<C>) take = take || (v != v && acc == acc);
                            if (take) acc = v;
                          }
                          o[base + k * inner] = static_cast<T>(acc);
                        }
                      }
                    });
}

Arrays cum_impl(const Primitive& p, std::span<const Array> in, std::span<const Aval> out, const Params& params) {
  const Array& x = in[0];
  int64_t axis = params.get_int("axis");
  bool reverse = params.get_bool("reverse");
  int64_t outer = 1, inner = 1, n = x.shape()[axis];
  for (int64_t i = 0; i < x.ndim(); ++i) {
    if (i < axis) outer *= x.shape()[i];
    if (i > axis) inner *= x.shape()[i];
  }
  Array r = Array::empty(out[0]);
  // a complex cumsum is the cumsums of the parts: the (re, im) pairs read as reals, twice the inner extent
  DType elem = x.dtype();
  if (is_complex(elem)) {
    if (&p != &cumsum_p) fail<TypeError>(p.name, ": complex numbers have no order (operand ", x.aval().str(), ")");
    elem = real_dtype(elem);
    inner *= 2;
  }
  visit_dtype(elem, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xd = static_cast<const T*>(x.raw_data());
    T* od = static_cast<T*>(r.concrete()->data());
    if (&p == &cumsum_p) {
      cum_kernel<CKind::sum>(xd, od, outer, n, inner, reverse);
    } else if (&p == &cummax_p) {
      cum_kernel<CKind::max>(xd, od, outer, n, inner, reverse);
    } else {
      cum_kernel<CKind::min>(xd, od, outer, n, inner, reverse);
    }
  });
  return {r};
}

JvpResult cumsum_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                     const Params& params) {
  return {{bind1(p, primals, params)}, {bind1(p, tangents, params)}};
}

Arrays cumsum_transpose(const Primitive& p, std::span<const Array> cts, std::span<const TArg>, const Params& params) {
  return {bind1(p, {cts[0]}, params.with("reverse", !params.get_bool("reverse")))};
}

// The tangent of a running max at i is the tangent at the last position j <= i (first j >= i when
// reversed) where the running max was attained: found with a cummax/cummin of positions.
JvpResult cumext_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                     const Params& params) {
  Array y = bind1(p, primals, params);
  const Array& x = primals[0];
  int64_t axis = params.get_int("axis");
  bool reverse = params.get_bool("reverse");
  Array pos = lax::iota(DType::i32, x.shape(), axis);
  Array hit = lax::eq(x, y);
  Array k;
  if (!reverse) {
    k = lax::cummax(lax::select(hit, pos, lax::full(x.shape(), -1, DType::i32)), axis, false);
  } else {
    k = lax::cummin(lax::select(hit, pos, lax::full(x.shape(), static_cast<double>(x.shape()[axis]), DType::i32)),
                    axis, true);
  }
  return {{y}, {lax::take_along_axis(tangents[0], k, axis)}};
}

BatchResult cum_batch(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                      const BatchInfo&, const Params& params) {
  int64_t axis = params.get_int("axis");
  int64_t d = dims[0];
  return {{bind1(p, vals, params.with("axis", axis >= d ? axis + 1 : axis))}, {d}};
}

}  // namespace

const Primitive cumsum_p{"cumsum", 0, &cum_shape, &cum_impl, &cumsum_jvp, &cumsum_transpose, &cum_batch};
const Primitive cummax_p{"cummax", 0, &cum_shape, &cum_impl, &cumext_jvp, nullptr, &cum_batch};
const Primitive cummin_p{"cummin", 0, &cum_shape, &cum_impl, &cumext_jvp, nullptr, &cum_batch};

}  // namespace graft::prims

namespace graft::lax {
using namespace graft::prims;
Array cumsum(const Array& x, int64_t axis, bool reverse) {
  return bind1(cumsum_p, {x}, {{"axis", axis}, {"reverse", reverse}});
}
Array cummax(const Array& x, int64_t axis, bool reverse) {
  return bind1(cummax_p, {x}, {{"axis", axis}, {"reverse", reverse}});
}
Array cummin(const Array& x, int64_t axis, bool reverse) {
  return bind1(cummin_p, {x}, {{"axis", axis}, {"reverse", reverse}});
}
Array take_along_axis(const Array& x, const Array& idx, int64_t axis) {
  IntList batch;
  for (int64_t i = 0; i < x.ndim(); ++i)
    if (i != axis) batch.push_back(i);
  Shape is = idx.shape();
  is.push_back(1);
  Array ix = reshape(idx, is);
  GatherDims gd({}, {axis}, {axis}, batch, batch);
  return gather(x, ix, gd, Shape(static_cast<size_t>(x.ndim()), 1), GatherMode::clip);
}
}  // namespace graft::lax
