// Array creation.
#include <cmath>

#include "graft/ops/internal.h"

namespace graft {

using namespace ops_detail;

Array asarray(const Array& x, std::optional<DType> d) {
  checked(x, "asarray");
  return d ? astype(x, *d) : x;
}

Array full(const Shape& shape, double value, DType d) {
  for (auto s : shape)
    if (s < 0) fail<ValueError>("full: negative dimension in shape (", shape_str(shape), ")");
  return lax::full(shape, value, d);
}
Array zeros(const Shape& shape, DType d) { return full(shape, 0, d); }
Array ones(const Shape& shape, DType d) { return full(shape, 1, d); }
Array full_like(const Array& x, double value, std::optional<DType> d) {
  return full(checked(x, "full_like").shape(), value, d.value_or(x.dtype()));
}
Array zeros_like(const Array& x, std::optional<DType> d) { return full_like(x, 0, d); }
Array ones_like(const Array& x, std::optional<DType> d) { return full_like(x, 1, d); }

Array iota(DType d, const Shape& shape, int64_t dimension) { return lax::iota(d, shape, dimension); }

Array arange(double stop, std::optional<DType> d) { return arange(0, stop, 1, d); }

Array arange(double start, double stop, double step, std::optional<DType> d) {
  if (step == 0) fail<ValueError>("arange: step must not be zero");
  if (!std::isfinite(start) || !std::isfinite(stop) || !std::isfinite(step))
    fail<ValueError>("arange: start, stop and step must be finite, got (", start, ", ", stop, ", ", step, ")");
  bool ints = start == std::floor(start) && stop == std::floor(stop) && step == std::floor(step);
  DType dt = d.value_or(ints ? default_int_dtype() : default_float_dtype());
  double count = std::ceil((stop - start) / step);  // may be huge: checked before the cast
  if (!(count <= static_cast<double>(kMaxElements)))
    fail<ValueError>("arange: (", start, ", ", stop, ", ", step, ") has ", count, " elements, more than 2^48");
  int64_t n = std::max<int64_t>(0, static_cast<int64_t>(count));
  Array i = lax::iota(is_floating(dt) ? dt : DType::i64, {n}, 0);
  if (start == 0 && step == 1) return convert(i, dt);
  Array v = lax::add(lax::mul(i, Array::scalar(step, i.dtype())), Array::scalar(start, i.dtype()));
  return convert(v, dt);
}

Array linspace(double start, double stop, int64_t num, DType d, bool endpoint) {
  if (num < 0) fail<ValueError>("linspace: num must be non-negative, got ", num);
  if (num == 0) return zeros({0}, d);
  int64_t div = endpoint ? num - 1 : num;
  double step = div > 0 ? (stop - start) / static_cast<double>(div) : 0.0;
  DType cd = is_floating(d) ? (d == DType::f64 ? DType::f64 : DType::f32) : DType::f64;
  Array i = lax::iota(cd, {num}, 0);
  Array v = lax::add(lax::mul(i, Array::scalar(step, cd)), Array::scalar(start, cd));
  if (endpoint && num > 1) {
    // exact endpoint, as NumPy
    Array last = lax::eq(lax::iota(DType::i32, {num}, 0), Array::scalar(static_cast<double>(num - 1), DType::i32));
    v = lax::select(last, lax::full({num}, stop, cd), v);
  }
  return convert(v, d);
}

Array eye(int64_t n, std::optional<int64_t> m, int64_t k, DType d) {
  int64_t cols = m.value_or(n);
  if (n < 0 || cols < 0) fail<ValueError>("eye: the number of rows and columns must be non-negative, got ", n, " and ", cols);
  Array r = lax::iota(DType::i64, {n, cols}, 0);
  Array c = lax::iota(DType::i64, {n, cols}, 1);
  return convert(lax::eq(lax::add(r, Array::scalar(static_cast<double>(k), DType::i64)), c), d);
}

Array astype(const Array& x, DType d) { return convert(checked(x, "astype"), d, false); }

}  // namespace graft
