// jax.numpy's statistics, searching, polynomial, signal and window functions (graft/ops/numpy_stats.h).
#include "graft/ops/numpy_stats.h"

#include <cmath>
#include <limits>
#include <numbers>

#include "graft/core/error.h"
#include "graft/ops/internal.h"
#include "graft/ops/special.h"

namespace graft {

using ops_detail::as_float;
using ops_detail::checked;
using ops_detail::convert;
using ops_detail::float_dtype;
using ops_detail::scalar_like;

namespace {

// ---- quantiles ---------------------------------------------------------------------------------------------
// x with the reduced axes moved last and flattened into one, and the keepdims shape (1 where reduced).
std::pair<Array, Shape> collapse(const Array& x, const AxisArg& axis, const char* op) {
  Axes red = axis.resolve(x.ndim(), op);
  Axes perm;
  Shape rest, kept;
  int64_t n = 1;
  for (int64_t d = 0; d < x.ndim(); ++d) {
    bool r = std::find(red.begin(), red.end(), d) != red.end();
    if (!r) {
      perm.push_back(d);
      rest.push_back(x.shape()[d]);
    } else {
      n *= x.shape()[d];
    }
    kept.push_back(r ? 1 : x.shape()[d]);
  }
  perm.insert(perm.end(), red.begin(), red.end());
  rest.push_back(n);
  return {reshape(transpose(x, perm), rest), kept};
}

// The quantiles of each row of x2 ([rest..., n]) over its first `count` sorted entries (count: the row
// length, or its non-NaN entries): [rest..., q].
Array row_quantiles(const Array& sorted, const Array& count, const std::vector<double>& q, QuantileMethod m) {
  DType d = sorted.dtype();
  Shape qs = count.shape();
  qs.push_back(static_cast<int64_t>(q.size()));
  Array qa = broadcast_to(array(q).astype(d), qs);
  Array cnt = broadcast_to(expand_dims(count.astype(d), -1), qs);
  Array last = maximum(cnt - 1.0, scalar_like(0, cnt));
  Array pos = qa * last;
  Array lo = floor(pos), hi = minimum(lo + 1.0, last), frac = pos - lo;
  switch (m) {
    case QuantileMethod::kLinear: break;
    case QuantileMethod::kLower: hi = lo; break;
    case QuantileMethod::kHigher: lo = hi = ceil(pos); break;
    case QuantileMethod::kNearest: lo = hi = round(pos); break;  // halves to even, as NumPy
    case QuantileMethod::kMidpoint:
      hi = ceil(pos);
      frac = where(hi > lo, full_like(frac, 0.5), zeros_like(frac));
      break;
  }
  if (m != QuantileMethod::kLinear && m != QuantileMethod::kMidpoint) frac = zeros_like(frac);
  Array vlo = take_along_axis(sorted, lo.astype(DType::i32), -1);
  Array vhi = take_along_axis(sorted, hi.astype(DType::i32), -1);
  Array r = vlo + (vhi - vlo) * stop_gradient(frac);
  return where(cnt == 0.0, full_like(r, std::numeric_limits<double>::quiet_NaN()), r);
}

Array quantiles(const Array& x, const std::vector<double>& q, const AxisArg& axis, QuantileMethod m, bool keepdims,
                bool scalar_q, bool skip_nans, const char* op) {
  checked(x, op);
  for (double v : q)
    if (!(v >= 0 && v <= 1)) fail<ValueError>(op, ": quantiles must lie in [0, 1], got ", v);
  auto [x2, kept] = collapse(as_float(x), axis, op);
  int64_t n = x2.shape().back();
  Array nan = isnan(x2);
  Array r;
  if (skip_nans) {
    // NaNs sorted as +inf land after every number; the row's count of numbers bounds the positions
    Array s = sort(where(nan, full_like(x2, std::numeric_limits<double>::infinity()), x2), -1);
    r = row_quantiles(s, sum(logical_not(nan), {-1}), q, m);
  } else {
    Array s = sort(x2, -1);
    r = row_quantiles(s, full(Shape(x2.shape().begin(), x2.shape().end() - 1), static_cast<double>(n), DType::i32), q, m);
    r = where(expand_dims(any(nan, {-1}), -1), full_like(r, std::numeric_limits<double>::quiet_NaN()), r);
  }
  // q's dimension first, then the kept dimensions
  r = moveaxis(r, -1, 0);
  Shape out{static_cast<int64_t>(q.size())};
  if (keepdims) {
    out.insert(out.end(), kept.begin(), kept.end());
    r = reshape(r, out);
  }
  return scalar_q ? squeeze(r, {0}) : r;
}

std::vector<double> percent(std::vector<double> q) {
  for (double& v : q) v /= 100;
  return q;
}

}  // namespace

QuantileMethod quantile_method(const std::string& name, const char* op) {
  if (name == "linear") return QuantileMethod::kLinear;
  if (name == "lower") return QuantileMethod::kLower;
  if (name == "higher") return QuantileMethod::kHigher;
  if (name == "nearest") return QuantileMethod::kNearest;
  if (name == "midpoint") return QuantileMethod::kMidpoint;
  fail<ValueError>(op, ": method '", name, "' is not one of linear, lower, higher, nearest, midpoint");
}

Array quantile(const Array& x, const std::vector<double>& q, AxisArg axis, QuantileMethod m, bool keepdims) {
  return quantiles(x, q, axis, m, keepdims, false, false, "quantile");
}
Array quantile(const Array& x, double q, AxisArg axis, QuantileMethod m, bool keepdims) {
  return quantiles(x, {q}, axis, m, keepdims, true, false, "quantile");
}
Array percentile(const Array& x, const std::vector<double>& q, AxisArg axis, QuantileMethod m, bool keepdims) {
  return quantiles(x, percent(q), axis, m, keepdims, false, false, "percentile");
}
Array percentile(const Array& x, double q, AxisArg axis, QuantileMethod m, bool keepdims) {
  return quantiles(x, {q / 100}, axis, m, keepdims, true, false, "percentile");
}
Array median(const Array& x, AxisArg axis, bool keepdims) {
  return quantiles(x, {0.5}, axis, QuantileMethod::kLinear, keepdims, true, false, "median");
}
Array nanquantile(const Array& x, const std::vector<double>& q, AxisArg axis, QuantileMethod m, bool keepdims) {
  return quantiles(x, q, axis, m, keepdims, false, true, "nanquantile");
}
Array nanquantile(const Array& x, double q, AxisArg axis, QuantileMethod m, bool keepdims) {
  return quantiles(x, {q}, axis, m, keepdims, true, true, "nanquantile");
}
Array nanpercentile(const Array& x, double q, AxisArg axis, QuantileMethod m, bool keepdims) {
  return quantiles(x, {q / 100}, axis, m, keepdims, true, true, "nanpercentile");
}
Array nanmedian(const Array& x, AxisArg axis, bool keepdims) {
  return quantiles(x, {0.5}, axis, QuantileMethod::kLinear, keepdims, true, true, "nanmedian");
}

// ---- searching and counting ---------------------------------------------------------------------------------
// By comparison counts (O(len(a) len(v)) work, one fused pass): the sorted array is usually short (bin
// edges, knots); a binary search would be a loop of gathers.
Array searchsorted(const Array& a, const Array& v, const std::string& side) {
  checked(a, "searchsorted");
  if (a.ndim() != 1) fail<ValueError>("searchsorted: the sorted array must be 1-D, got ", a.aval().str());
  if (side != "left" && side != "right")
    fail<ValueError>("searchsorted: side must be 'left' or 'right', got '", side, "'");
  int64_t m = a.shape()[0];
  if (m <= 64) {  // short: count the entries below each value (one pass, vectorized)
    Array ve = expand_dims(v, -1);
    Array hits = side == "left" ? a < ve : a <= ve;
    return sum(hits.astype(DType::i32), {-1}).astype(DType::i32);
  }
  // a binary search per value, ceil(log2(m + 1)) halvings of [lo, hi): O(size(v)) memory where counting
  // would compare every pair (JAX's method='scan')
  Array lo = zeros(v.shape(), DType::i32), hi = full(v.shape(), static_cast<double>(m), DType::i32);
  Array one = Array::scalar(1, DType::i32), last = Array::scalar(static_cast<double>(m - 1), DType::i32);
  for (int64_t span = m; span > 0; span /= 2) {
    Array mid = floor_divide(lo + hi, Array::scalar(2, DType::i32));
    Array at = take(a, minimum(mid, last));
    Array active = lo < hi, below = side == "left" ? at < v : at <= v;
    Array new_lo = where(below & active, mid + one, lo);
    hi = where((!below) & active, mid, hi);
    lo = new_lo;
  }
  return lo;
}

Array digitize(const Array& x, const Array& bins, bool right) {
  checked(bins, "digitize");
  if (bins.ndim() != 1) fail<ValueError>("digitize: bins must be 1-D, got ", bins.aval().str());
  int64_t n = bins.shape()[0];
  // increasing or decreasing: read from the first and last edge (concrete, as NumPy does)
  bool increasing = n < 2 || (bins[{n - 1}] >= bins[{0}]).item<bool>();
  if (increasing) return searchsorted(bins, x, right ? "left" : "right");
  return (Array::scalar(static_cast<double>(n), DType::i32) - searchsorted(flip(bins, {0}), x, right ? "left" : "right"))
      .astype(DType::i32);
}

Array bincount(const Array& x, const std::optional<Array>& weights, int64_t minlength, std::optional<int64_t> length) {
  checked(x, "bincount");
  if (is_floating(x.dtype()) || x.dtype() == DType::bool_)
    fail<TypeError>("bincount: x must hold integers, got ", x.aval().str());
  if (x.ndim() != 1) fail<ValueError>("bincount: x must be 1-D, got ", x.aval().str());
  int64_t len = length ? *length : std::max<int64_t>(x.size() ? max(x).item<int64_t>() + 1 : 0, minlength);
  if (len < 0) fail<ValueError>("bincount: length must be non-negative, got ", len);
  Array oh = one_hot(x, len, weights ? float_dtype(*weights) : DType::i32);
  if (!weights) return sum(oh, {0}).astype(DType::i32);
  if (weights->shape() != x.shape())
    fail<ValueError>("bincount: weights ", weights->aval().str(), " must have x's shape ", x.aval().str());
  return sum(oh * expand_dims(as_float(*weights), -1), {0});
}

Array interp(const Array& x, const Array& xp, const Array& fp, std::optional<double> left, std::optional<double> right) {
  checked(xp, "interp");
  if (xp.ndim() != 1 || fp.ndim() != 1 || xp.shape() != fp.shape() || xp.shape()[0] == 0)
    fail<ValueError>("interp: xp and fp must be non-empty 1-D arrays of one length, got ", xp.aval().str(), " and ",
                     fp.aval().str());
  int64_t n = xp.shape()[0];
  Array xf = as_float(x);
  Array yp = as_float(fp).astype(xf.dtype()), xq = as_float(xp).astype(xf.dtype());
  if (n == 1) return where(xf == xf, broadcast_to(yp[{0}], xf.shape()), xf);
  Array i = clip(searchsorted(xq, xf, "right"), Array::scalar(1, DType::i32), Array::scalar(static_cast<double>(n - 1), DType::i32));
  Array i0 = i - Array::scalar(1, DType::i32);
  Array x0 = take(xq, i0), x1 = take(xq, i), y0 = take(yp, i0), y1 = take(yp, i);
  Array dx = x1 - x0;
  Array t = (xf - x0) / where(dx == 0.0, ones_like(dx), dx);
  Array y = y0 + t * (y1 - y0);
  y = where(xf < xq[{0}], left ? full_like(y, *left) : broadcast_to(yp[{0}], y.shape()), y);
  return where(xf > xq[{n - 1}], right ? full_like(y, *right) : broadcast_to(yp[{n - 1}], y.shape()), y);
}

Array select(const std::vector<Array>& conditions, const std::vector<Array>& choices, double default_value) {
  if (conditions.size() != choices.size())
    fail<ValueError>("select: ", conditions.size(), " conditions for ", choices.size(), " choices");
  if (conditions.empty()) fail<ValueError>("select: no conditions");
  Array out = choices.back();
  out = where(conditions.back(), out, full_like(out, default_value));
  for (size_t k = conditions.size() - 1; k-- > 0;) {
    if (conditions[k].dtype() != DType::bool_)
      fail<TypeError>("select: condition ", k, " must be bool, got ", conditions[k].aval().str());
    out = where(conditions[k], choices[k], out);
  }
  return out;
}

// ---- polynomials ------------------------------------------------------------------------------------------------
namespace {
const Array& poly1(const Array& p, const char* op) {
  checked(p, op);
  if (p.ndim() != 1) fail<ValueError>(op, ": coefficients must be a 1-D array, got ", p.aval().str());
  return p;
}
// a and b padded on the left to one length (the highest powers first).
std::pair<Array, Array> aligned(const Array& a, const Array& b) {
  int64_t n = std::max(a.shape()[0], b.shape()[0]);
  return {pad(a, {{n - a.shape()[0], 0}}), pad(b, {{n - b.shape()[0], 0}})};
}
}  // namespace

Array polyval(const Array& p, const Array& x) {
  poly1(p, "polyval");
  Array y = zeros_like(x) + zeros_like(p[{0}]);
  for (int64_t i = 0; i < p.shape()[0]; ++i) y = y * x + p[{i}];  // Horner
  return y;
}

Array polyadd(const Array& a, const Array& b) {
  auto [x, y] = aligned(poly1(a, "polyadd"), poly1(b, "polyadd"));
  return x + y;
}

Array polysub(const Array& a, const Array& b) {
  auto [x, y] = aligned(poly1(a, "polysub"), poly1(b, "polysub"));
  return x - y;
}

Array polymul(const Array& a, const Array& b) { return convolve(poly1(a, "polymul"), poly1(b, "polymul"), "full"); }

Array polyder(const Array& p, int64_t m) {
  poly1(p, "polyder");
  if (m < 0) fail<ValueError>("polyder: the order must be non-negative, got ", m);
  Array r = p;
  for (int64_t k = 0; k < m; ++k) {
    int64_t n = r.shape()[0];
    if (n <= 1) return zeros({0}, r.dtype());
    // coefficient i (power n-1-i) times its power
    Array pw = arange(static_cast<double>(n - 1), 0.0, -1.0, r.dtype());
    r = r[{slice(0, n - 1)}] * pw;
  }
  return r;
}

Array polyint(const Array& p, int64_t m) {
  poly1(p, "polyint");
  if (m < 0) fail<ValueError>("polyint: the order must be non-negative, got ", m);
  Array r = as_float(p);
  for (int64_t k = 0; k < m; ++k) {
    int64_t n = r.shape()[0];
    Array pw = arange(static_cast<double>(n), 0.0, -1.0, r.dtype());
    r = concatenate({r / pw, zeros({1}, r.dtype())}, 0);
  }
  return r;
}

Array vander(const Array& x, std::optional<int64_t> n, bool increasing) {
  checked(x, "vander");
  if (x.ndim() != 1) fail<ValueError>("vander: x must be 1-D, got ", x.aval().str());
  int64_t cols = n.value_or(x.shape()[0]);
  if (cols < 0) fail<ValueError>("vander: N must be non-negative, got ", cols);
  Array pw = arange(0.0, static_cast<double>(cols), 1.0, is_floating(x.dtype()) ? x.dtype() : DType::i32);
  if (!increasing) pw = flip(pw, {0});
  return power(expand_dims(x, -1), pw.astype(is_floating(x.dtype()) ? x.dtype() : x.dtype()));
}

// ---- signals and statistics ---------------------------------------------------------------------------------
// As one gather and a masked sum: out[k] = sum_j a[k - j] v[j] over the j where k - j is in range.
Array convolve(const Array& a0, const Array& v0, const std::string& mode) {
  checked(a0, "convolve");
  if (a0.ndim() != 1 || v0.ndim() != 1 || a0.size() == 0 || v0.size() == 0)
    fail<ValueError>("convolve: both operands must be non-empty 1-D arrays, got ", a0.aval().str(), " and ", v0.aval().str());
  if (mode != "full" && mode != "same" && mode != "valid")
    fail<ValueError>("convolve: mode must be 'full', 'same' or 'valid', got '", mode, "'");
  Array a = a0, v = v0;
  if (a.shape()[0] < v.shape()[0]) std::swap(a, v);
  int64_t n = a.shape()[0], m = v.shape()[0];
  std::vector<int32_t> src(static_cast<size_t>((n + m - 1) * m));
  for (int64_t k = 0; k < n + m - 1; ++k)
    for (int64_t j = 0; j < m; ++j) src[static_cast<size_t>(k * m + j)] = static_cast<int32_t>(k - j);
  Array raw = array(src, {n + m - 1, m});
  Array mask = (raw >= Array::scalar(0, DType::i32)) & (raw < Array::scalar(static_cast<double>(n), DType::i32));
  Array idx = clip(raw, Array::scalar(0, DType::i32), Array::scalar(static_cast<double>(n - 1), DType::i32));
  Array g = take(a, idx);
  Array prod = g * v;
  Array out = sum(where(mask, prod, zeros_like(prod)), {1});
  if (mode == "same") {
    int64_t start = (m - 1) / 2;
    return out[{slice(start, start + n)}];
  }
  if (mode == "valid") return out[{slice(m - 1, n)}];
  return out;
}

Array correlate(const Array& a, const Array& v, const std::string& mode) {
  checked(a, "correlate");
  if (a.ndim() != 1 || v.ndim() != 1) fail<ValueError>("correlate: both operands must be 1-D, got ", a.aval().str(), " and ", v.aval().str());
  if (a.shape()[0] >= v.shape()[0]) return convolve(a, flip(v, {0}), mode);
  return flip(convolve(flip(a, {0}), v, mode), {0});
}

Array cov(const Array& m, bool rowvar, bool bias, std::optional<int64_t> ddof) {
  checked(m, "cov");
  if (m.ndim() > 2) fail<ValueError>("cov: m must have at most 2 dimensions, got ", m.aval().str());
  Array x = as_float(atleast_2d(m));
  if (!rowvar && x.shape()[0] != 1) x = transpose(x);
  int64_t dd = ddof.value_or(bias ? 0 : 1);
  int64_t n = x.shape()[1];
  Array xc = x - mean(x, {1}, true);
  Array c = matmul(xc, transpose(xc)) / static_cast<double>(n - dd);
  return c.shape() == Shape{1, 1} ? reshape(c, {}) : c;
}

Array corrcoef(const Array& m, bool rowvar) {
  Array c = cov(m, rowvar);
  if (c.ndim() == 0) return c / c;
  Array d = sqrt(diagonal(c));
  return clip(c / outer(d, d), scalar_like(-1, c), scalar_like(1, c));
}

// ---- windows ----------------------------------------------------------------------------------------------------
namespace {
// n = 0 .. M-1 as `d`, and M - 1 (at least 1, so that M = 1 gives the window's centre value).
std::pair<Array, double> window_points(int64_t m, DType d) {
  return {arange(0.0, static_cast<double>(std::max<int64_t>(m, 0)), 1.0, d), static_cast<double>(std::max<int64_t>(m - 1, 1))};
}
Array cosine_window(int64_t m, DType d, double a0, double a1, double a2) {
  if (m == 1) return ones({1}, d);
  auto [n, den] = window_points(m, d);
  constexpr double pi = std::numbers::pi;
  return a0 - a1 * cos(n * (2 * pi / den)) + a2 * cos(n * (4 * pi / den));
}
}  // namespace

Array bartlett(int64_t m, DType d) {
  if (m == 1) return ones({1}, d);
  auto [n, den] = window_points(m, d);
  return 1.0 - abs(n * (2.0 / den) - 1.0);
}
Array hanning(int64_t m, DType d) { return cosine_window(m, d, 0.5, 0.5, 0); }
Array hamming(int64_t m, DType d) { return cosine_window(m, d, 0.54, 0.46, 0); }
Array blackman(int64_t m, DType d) { return cosine_window(m, d, 0.42, 0.5, 0.08); }
Array kaiser(int64_t m, double beta, DType d) {
  if (m == 1) return ones({1}, d);
  auto [n, den] = window_points(m, d);
  Array r = n * (2.0 / den) - 1.0;
  Array arg = sqrt(maximum(1.0 - r * r, zeros_like(r))) * beta;
  return special::i0(arg) / special::i0(Array::scalar(beta, d));
}

Array i0(const Array& x) { return special::i0(x); }

}  // namespace graft
