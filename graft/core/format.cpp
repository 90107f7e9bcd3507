#include "graft/core/format.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>

namespace graft {

namespace {
// Lays out the shortest scientific digits the way Python's float repr does.
std::string layout(const char* sci, bool neg) {
  // sci looks like "1.2345e+05" or "1e-05"
  std::string s(sci);
  size_t e = s.find('e');
  std::string mant = s.substr(0, e);
  int exp = std::atoi(s.c_str() + e + 1);
  std::string digits;
  for (char c : mant)
    if (c != '.') digits += c;
  std::string out = neg ? "-" : "";
  if (exp >= -4 && exp < 16) {  // fixed notation: Python switches at 1e16 and below 1e-4
    if (exp >= 0) {
      std::string ip, fp;
      if (static_cast<int>(digits.size()) <= exp + 1) {
        ip = digits + std::string(exp + 1 - digits.size(), '0');
        fp = "0";
      } else {
        ip = digits.substr(0, exp + 1);
        fp = digits.substr(exp + 1);
      }
      return out + ip + "." + fp;
    }
    return out + "0." + std::string(-exp - 1, '0') + digits;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  char buf[16];
  std::snprintf(buf, sizeof buf, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
  return out + buf;
}
}  // namespace

std::string format_float_repr(double v, DType d) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == 0) return std::signbit(v) ? "-0.0" : "0.0";
  char buf[64];
  bool neg = v < 0;
  double a = std::fabs(v);
  std::to_chars_result r;
  if (d == DType::f64) {
    r = std::to_chars(buf, buf + sizeof buf - 1, a, std::chars_format::scientific);
  } else {
    r = std::to_chars(buf, buf + sizeof buf - 1, static_cast<float>(a), std::chars_format::scientific);
  }
  *r.ptr = '\0';
  return layout(buf, neg);
}

std::string format_float_numpy(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e16) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.0f.", v);
    return (v == 0 && std::signbit(v)) ? "-0." : buf;
  }
  return format_float_repr(v, std::fabs(v) < 3.4e38 ? DType::f32 : DType::f64);
}

}  // namespace graft
