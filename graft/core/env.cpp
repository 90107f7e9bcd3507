#include "graft/core/env.h"

#include <cctype>
#include <cstdlib>
#include <limits>

#include "graft/core/error.h"

namespace graft::env {

std::optional<std::string> get(const char* name) {
  const char* e = std::getenv(name);
  if (!e || !*e) return std::nullopt;
  return std::string(e);
}

int64_t integer(const char* name, int64_t fallback, int64_t lo, int64_t hi) {
  auto v = get(name);
  if (!v) return fallback;
  auto bad = [&]() {
    fail<ValueError>("environment variable ", name, "='", *v, "' is not an integer in [", lo, ", ", hi, "]");
  };
  const std::string& s = *v;
  size_t i = 0;
  bool neg = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
  if (i == s.size() || !std::isdigit(static_cast<unsigned char>(s[i]))) bad();
  // accumulate as a negative number so that the most negative int64 is representable
  int64_t acc = 0;
  for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i) {
    int d = s[i] - '0';
    if (acc < (std::numeric_limits<int64_t>::min() + d) / 10) bad();
    acc = acc * 10 - d;
  }
  int shift = 0;
  if (i < s.size()) {
    switch (s[i]) {
      case 'k': case 'K': shift = 10; break;
      case 'm': case 'M': shift = 20; break;
      case 'g': case 'G': shift = 30; break;
      default: bad();
    }
    if (++i != s.size()) bad();
  }
  if (!neg && acc == std::numeric_limits<int64_t>::min()) bad();
  int64_t x = neg ? acc : -acc;
  if (shift) {
    if (x > (std::numeric_limits<int64_t>::max() >> shift) || x < (std::numeric_limits<int64_t>::min() >> shift)) bad();
    x *= int64_t(1) << shift;
  }
  if (x < lo || x > hi) bad();
  return x;
}

bool flag(const char* name, bool fallback) {
  auto v = get(name);
  if (!v) return fallback;
  std::string s;
  for (char c : *v) s.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  if (s == "1" || s == "true" || s == "on" || s == "yes") return true;
  if (s == "0" || s == "false" || s == "off" || s == "no") return false;
  fail<ValueError>("environment variable ", name, "='", *v, "' is not a switch (1/0, true/false, on/off, yes/no)");
}

std::string choice(const char* name, std::initializer_list<const char*> choices, const std::string& fallback) {
  auto v = get(name);
  if (!v) return fallback;
  std::string list;
  for (const char* c : choices) {
    if (*v == c) return *v;
    list += std::string(list.empty() ? "" : ", ") + c;
  }
  fail<ValueError>("environment variable ", name, "='", *v, "' is not one of: ", list);
}

}  // namespace graft::env
