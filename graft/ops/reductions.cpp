// Reductions, normalizations (softmax, logsumexp), scans and sorting.
#include <algorithm>
#include <limits>
#include <numeric>

#include "graft/ops/internal.h"

namespace graft {

using namespace ops_detail;

Axes AxisArg::resolve(int64_t ndim, const char* op) const {
  Axes out;
  if (!axes) {
    for (int64_t i = 0; i < ndim; ++i) out.push_back(i);
    return out;
  }
  for (auto a : *axes) {
    int64_t n = normalize_axis(a, ndim, op);
    if (std::find(out.begin(), out.end(), n) != out.end()) fail<ValueError>(op, ": repeated axis ", a);
    out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

namespace {
// Re-inserts the reduced axes as size 1 when keepdims is set.
Array keep(const Array& r, const Shape& in_shape, const Axes& axes, bool keepdims) {
  if (!keepdims) return r;
  Shape s = in_shape;
  for (auto a : axes) s[a] = 1;
  return lax::reshape(r, s);
}

// sum/prod of bool and small ints accumulate in the default int, as NumPy/JAX do
Array for_sum(const Array& x) {
  if (is_bool(x.dtype())) return convert(x, default_int_dtype());
  // narrower than the default int (i32 too with x64): to the default int; unsigned to its unsigned twin
  if (is_signed_int(x.dtype()) && itemsize(x.dtype()) < itemsize(default_int_dtype()))
    return convert(x, default_int_dtype());
  if (is_unsigned(x.dtype()) && itemsize(x.dtype()) < itemsize(default_int_dtype()))
    return convert(x, default_int_dtype() == DType::i64 ? DType::u64 : DType::u32);
  return x;
}
Array as_bool(const Array& x) { return is_bool(x.dtype()) ? x : lax::ne(x, Array::scalar(0, x.dtype())); }
}  // namespace

namespace {
// Complex values are ordered lexicographically (real part, then imaginary part), as NumPy and JAX order
// them; a NaN (in either part) is the extremum, as in NumPy. x's reduced axes are moved last and
// flattened: [kept..., R]. Returns where the extremum is along R ([kept..., R]: every element equal to it,
// or every NaN).
Array complex_extrema(const Array& x, bool is_max) {
  int64_t last = x.ndim() - 1;
  Axes along{last};
  auto spread = [&](const Array& r) {  // [kept...] -> [kept..., R]
    Shape s1 = x.shape();
    s1[static_cast<size_t>(last)] = 1;
    return broadcast_to(lax::reshape(r, s1), x.shape(), "max");
  };
  Array re = lax::real(x), im = lax::imag(x);
  Array best_re = spread(is_max ? lax::reduce_max(re, along) : lax::reduce_min(re, along));
  Array on = lax::eq(re, best_re);
  double worst = is_max ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  Array im_on = lax::select(on, im, lax::full(im.shape(), worst, im.dtype()));
  Array best_im = spread(is_max ? lax::reduce_max(im_on, along) : lax::reduce_min(im_on, along));
  Array hit = lax::bitwise_and(on, lax::eq(im, best_im));
  Array nan = lax::bitwise_or(lax::ne(re, re), lax::ne(im, im));
  return lax::select(spread(lax::reduce_or(nan, along)), nan, hit);
}
// The index along R of the first extremum (default int, [kept...]).
Array complex_extremum_index(const Array& x, bool is_max) {
  return lax::argmax(convert(complex_extrema(x, is_max), DType::i32), x.ndim() - 1, default_int_dtype());
}
// x with `axes` moved last and flattened into one.
Array reduced_last(const Array& x, const Axes& axes) {
  Axes perm;
  Shape kept;
  int64_t r = 1;
  for (int64_t i = 0; i < x.ndim(); ++i)
    if (std::find(axes.begin(), axes.end(), i) == axes.end()) {
      perm.push_back(i);
      kept.push_back(x.shape()[i]);
    }
  for (auto a : axes) {
    perm.push_back(a);
    r *= x.shape()[a];
  }
  kept.push_back(r);
  return lax::reshape(lax::transpose(x, perm), kept);
}
// max / min of a complex array over `axes`: the first extremum itself (gathered, so -0.0 stays -0.0), with
// the derivative split evenly between equal extrema as the real reductions' (JAX's chooser rule): the
// value is first - (d - d) for the differentiable mean d of the (finite) extrema.
Array complex_extremum(const Array& x, const Axes& axes, bool is_max) {
  Array flat = reduced_last(x, axes);
  int64_t last = flat.ndim() - 1;
  Shape s1 = flat.shape();
  s1[static_cast<size_t>(last)] = 1;
  Array chosen = complex_extrema(flat, is_max);
  Array idx = lax::argmax(convert(chosen, DType::i32), last, default_int_dtype());
  Array first = lax::reshape(take_along_axis(flat, lax::reshape(idx, s1), last), idx.shape());
  Array re = lax::real(flat), im = lax::imag(flat);
  Array ok = lax::bitwise_and(chosen, lax::bitwise_and(lax::is_finite(re), lax::is_finite(im)));
  Array count = lax::reduce_sum(convert(chosen, re.dtype()), {last});
  Array weight =
      lax::div(convert(ok, re.dtype()), broadcast_to(lax::reshape(count, s1), flat.shape(), "max"));
  Array share =
      lax::mul(lax::select(ok, flat, lax::zeros_like(flat)), lax::complex(weight, lax::zeros_like(weight)));
  Array d = lax::reduce_sum(share, {last});
  return lax::sub(lax::stop_gradient(first), lax::sub(lax::stop_gradient(d), d));
}
}  // namespace

Array sum(const Array& x, AxisArg axis, bool keepdims) {
  Axes ax = axis.resolve(checked(x, "sum").ndim(), "sum");
  return keep(lax::reduce_sum(for_sum(x), ax), x.shape(), ax, keepdims);
}
Array prod(const Array& x, AxisArg axis, bool keepdims) {
  Axes ax = axis.resolve(checked(x, "prod").ndim(), "prod");
  return keep(lax::reduce_prod(for_sum(x), ax), x.shape(), ax, keepdims);
}
Array max(const Array& x, AxisArg axis, bool keepdims) {
  Axes ax = axis.resolve(checked(x, "max").ndim(), "max");
  for (auto a : ax)
    if (x.shape()[a] == 0) fail<ValueError>("max: zero-size reduction along axis ", a, " has no identity");
  if (is_complex(x.dtype())) return keep(complex_extremum(x, ax, true), x.shape(), ax, keepdims);
  return keep(lax::reduce_max(x, ax), x.shape(), ax, keepdims);
}
Array min(const Array& x, AxisArg axis, bool keepdims) {
  Axes ax = axis.resolve(checked(x, "min").ndim(), "min");
  for (auto a : ax)
    if (x.shape()[a] == 0) fail<ValueError>("min: zero-size reduction along axis ", a, " has no identity");
  if (is_complex(x.dtype())) return keep(complex_extremum(x, ax, false), x.shape(), ax, keepdims);
  return keep(lax::reduce_min(x, ax), x.shape(), ax, keepdims);
}
Array all(const Array& x, AxisArg axis, bool keepdims) {
  Axes ax = axis.resolve(checked(x, "all").ndim(), "all");
  return keep(lax::reduce_and(as_bool(x), ax), x.shape(), ax, keepdims);
}
Array any(const Array& x, AxisArg axis, bool keepdims) {
  Axes ax = axis.resolve(checked(x, "any").ndim(), "any");
  return keep(lax::reduce_or(as_bool(x), ax), x.shape(), ax, keepdims);
}

Array mean(const Array& x, AxisArg axis, bool keepdims) {
  Axes ax = axis.resolve(checked(x, "mean").ndim(), "mean");
  int64_t n = 1;
  for (auto a : ax) n *= x.shape()[a];
  Array xf = is_inexact(x.dtype()) ? x : convert(x, default_float_dtype());
  Array s = keep(lax::reduce_sum(xf, ax), x.shape(), ax, keepdims);
  return lax::div(s, Array::scalar(static_cast<double>(n), s.dtype()));
}

Array var(const Array& x, AxisArg axis, bool keepdims, int64_t ddof) {
  Axes ax = axis.resolve(checked(x, "var").ndim(), "var");
  int64_t n = 1;
  for (auto a : ax) n *= x.shape()[a];
  Array xf = is_inexact(x.dtype()) ? x : convert(x, default_float_dtype());
  Array m = mean(xf, Axes(ax), true);
  Array d = lax::sub(xf, ops_detail::broadcast_to(m, xf.shape(), "var"));
  // complex: the mean of |x - mean|^2, a real value (NumPy's and JAX's)
  Array d2 = is_complex(d.dtype()) ? lax::real(lax::mul(d, lax::conj(d))) : lax::mul(d, d);
  Array s = keep(lax::reduce_sum(d2, ax), x.shape(), ax, keepdims);
  return lax::div(s, Array::scalar(static_cast<double>(std::max<int64_t>(n - ddof, 0)), s.dtype()));
}
Array std(const Array& x, AxisArg axis, bool keepdims, int64_t ddof) { return sqrt(var(x, axis, keepdims, ddof)); }

namespace {
Array arg_reduce(const Array& x, std::optional<int64_t> axis, bool keepdims, bool is_max, const char* op) {
  checked(x, op);
  auto extremum = [&](const Array& v, int64_t a) {
    if (is_complex(v.dtype())) return complex_extremum_index(reduced_last(v, {a}), is_max);
    return is_max ? lax::argmax(v, a, default_int_dtype()) : lax::argmin(v, a, default_int_dtype());
  };
  if (!axis) {
    Array flat = lax::reshape(x, {x.size()});
    if (flat.size() == 0) fail<ValueError>(op, ": attempt to get the arg-extremum of an empty sequence");
    Array r = extremum(flat, 0);
    if (keepdims) r = lax::reshape(r, Shape(static_cast<size_t>(x.ndim()), 1));
    return r;
  }
  int64_t a = normalize_axis(*axis, x.ndim(), op);
  if (x.shape()[a] == 0) fail<ValueError>(op, ": attempt to get the arg-extremum of an empty axis");
  return keep(extremum(x, a), x.shape(), {a}, keepdims);
}
}  // namespace

Array argmax(const Array& x, std::optional<int64_t> axis, bool keepdims) {
  return arg_reduce(x, axis, keepdims, true, "argmax");
}
Array argmin(const Array& x, std::optional<int64_t> axis, bool keepdims) {
  return arg_reduce(x, axis, keepdims, false, "argmin");
}

Array logsumexp(const Array& x0, AxisArg axis, bool keepdims) {
  Array x = is_floating(ops_detail::real_only(checked(x0, "logsumexp"), "logsumexp").dtype()) ? x0 : convert(x0, default_float_dtype());
  Axes ax = axis.resolve(x.ndim(), "logsumexp");
  Array m = lax::stop_gradient(lax::reduce_max(x, ax));
  // an all -inf slice would give inf - inf: shift by 0 there instead
  m = lax::select(lax::is_finite(m), m, lax::zeros_like(m));
  Array mk = keep(m, x.shape(), ax, true);
  Array s = lax::reduce_sum(lax::exp(lax::sub(x, ops_detail::broadcast_to(mk, x.shape(), "logsumexp"))), ax);
  Array r = lax::add(lax::log(s), m);
  return keep(r, x.shape(), ax, keepdims);
}

Array softmax(const Array& x0, int64_t axis) {
  Array x = is_floating(ops_detail::real_only(checked(x0, "softmax"), "softmax").dtype()) ? x0 : convert(x0, default_float_dtype());
  int64_t a = normalize_axis(axis, x.ndim(), "softmax");
  Array m = keep(lax::stop_gradient(lax::reduce_max(x, {a})), x.shape(), {a}, true);
  Array e = lax::exp(lax::sub(x, ops_detail::broadcast_to(m, x.shape(), "softmax")));
  Array s = keep(lax::reduce_sum(e, {a}), x.shape(), {a}, true);
  return lax::div(e, ops_detail::broadcast_to(s, x.shape(), "softmax"));
}

Array log_softmax(const Array& x0, int64_t axis) {
  Array x = is_floating(ops_detail::real_only(checked(x0, "log_softmax"), "log_softmax").dtype()) ? x0 : convert(x0, default_float_dtype());
  int64_t a = normalize_axis(axis, x.ndim(), "log_softmax");
  Array m = keep(lax::stop_gradient(lax::reduce_max(x, {a})), x.shape(), {a}, true);
  Array shifted = lax::sub(x, ops_detail::broadcast_to(m, x.shape(), "log_softmax"));
  Array lse = keep(lax::log(lax::reduce_sum(lax::exp(shifted), {a})), x.shape(), {a}, true);
  return lax::sub(shifted, ops_detail::broadcast_to(lse, x.shape(), "log_softmax"));
}

Array cumsum(const Array& x, std::optional<int64_t> axis, bool reverse) {
  checked(x, "cumsum");
  if (!axis) return lax::cumsum(for_sum(lax::reshape(x, {x.size()})), 0, reverse);
  return lax::cumsum(for_sum(x), normalize_axis(*axis, x.ndim(), "cumsum"), reverse);
}

Array cumprod(const Array& x0, std::optional<int64_t> axis) {
  // products through logs are inexact at zeros and signs: scan with an associative doubling
  // (Hillis-Steele) of shifted products instead; log2(n) multiplications, differentiable
  Array x = checked(x0, "cumprod");
  int64_t a = 0;
  if (!axis) {
    x = lax::reshape(x, {x.size()});
  } else {
    a = normalize_axis(*axis, x.ndim(), "cumprod");
  }
  x = for_sum(x);
  int64_t n = x.shape()[a];
  Array acc = x;
  for (int64_t shift = 1; shift < n; shift *= 2) {
    std::vector<IntList> cfg(static_cast<size_t>(x.ndim()), IntList{0, 0, 0});
    cfg[a] = {shift, -shift, 0};
    Array shifted = lax::pad(acc, Array::scalar(1, acc.dtype()), cfg);
    acc = lax::mul(acc, shifted);
  }
  return acc;
}

Array cummax(const Array& x, int64_t axis) {
  return lax::cummax(checked(x, "cummax"), normalize_axis(axis, x.ndim(), "cummax"));
}
Array cummin(const Array& x, int64_t axis) {
  return lax::cummin(checked(x, "cummin"), normalize_axis(axis, x.ndim(), "cummin"));
}

Array norm(const Array& x, AxisArg axis, bool keepdims) { return sqrt(sum(square(x), axis, keepdims)); }

Array sort(const Array& x, int64_t axis) {
  checked(x, "sort");
  if (x.ndim() == 0) return x;
  int64_t a = normalize_axis(axis, x.ndim(), "sort");
  // complex: JAX's order, by real part and then imaginary part, a NaN part after every number
  if (is_complex(x.dtype())) {
    Array ops[] = {lax::real(x), lax::imag(x), x};
    return lax::sort(ops, a, true, 2)[2];
  }
  Array ops[] = {x};
  return lax::sort(ops, a)[0];
}

Array argsort(const Array& x, int64_t axis) {
  checked(x, "argsort");
  if (x.ndim() == 0) return Array::scalar(0, default_int_dtype());
  int64_t a = normalize_axis(axis, x.ndim(), "argsort");
  Array index = lax::iota(default_int_dtype(), x.shape(), a);
  if (is_complex(x.dtype())) {
    Array ops[] = {lax::real(x), lax::imag(x), index};
    return lax::sort(ops, a, true, 2)[2];
  }
  Array ops[] = {x, index};
  return lax::sort(ops, a, true, 1)[1];
}

}  // namespace graft
