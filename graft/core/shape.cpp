#include "graft/core/shape.h"

#include <cstdint>
#include <sstream>

#include "graft/core/axis_names.h"
#include "graft/core/error.h"

namespace graft {

int64_t numel(const Shape& s) {
  // a zero anywhere makes it 0, even after a product that would overflow (checked_numel rejects the
  // shapes whose count does not fit); the product saturates rather than overflowing
  int64_t n = 1;
  for (auto d : s)
    if (d == 0) return 0;
  for (auto d : s)
    if (__builtin_mul_overflow(n, d, &n)) return INT64_MAX;
  return n;
}

int64_t checked_numel(const Shape& s, const char* op) {
  int64_t n = 1;
  bool big = false;
  for (auto d : s) {
    if (d < 0) fail<ValueError>(op, ": negative dimension ", d, " in shape (", shape_str(s), ")");
    // keep checking every dimension for a negative one even once the product is too large
    if (!big && (__builtin_mul_overflow(n, d, &n) || n > kMaxElements)) big = true;
  }
  for (auto d : s)
    if (d == 0) return 0;
  if (big)
    fail<ValueError>(op, ": shape (", shape_str(s), ") has more than 2^48 elements (", kMaxElements,
                     "), more than graft can address");
  return n;
}

Shape strides_of(const Shape& s) {
  Shape st(s.size());
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    // an empty array may have huge other dimensions: its strides saturate (nothing is addressed)
    if (__builtin_mul_overflow(acc, s[i], &acc)) acc = INT64_MAX;
  }
  return st;
}

std::string shape_str(const Shape& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(s[i]);
  }
  return out;
}

int64_t normalize_axis(int64_t axis, int64_t ndim, const char* op) {
  if (axis < -ndim || axis >= ndim || (ndim == 0 && axis != 0))
    fail<ValueError>(op, ": axis ", axis, " is out of bounds for an array of rank ", ndim);
  return axis < 0 ? axis + ndim : axis;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      fail<ShapeError>(op, ": shapes (", shape_str(a), ") and (", shape_str(b), ") cannot be broadcast together");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::string Aval::str() const {
  std::string s(short_name(dtype));
  s += '[';
  s += shape_str(shape);
  s += ']';
  if (vma) s += "{V:" + axis_set_str(vma) + "}";  // as JAX prints varying manual axes
  return s;
}

std::ostream& operator<<(std::ostream& os, const Aval& a) { return os << a.str(); }
std::ostream& operator<<(std::ostream& os, const Shape& s) { return os << '(' << shape_str(s) << ')'; }

}  // namespace graft
