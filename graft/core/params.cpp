#include "graft/core/params.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstring>
#include <functional>
#include <mutex>

#include "graft/core/error.h"
#include "graft/core/format.h"

namespace graft {

Params::Params(std::initializer_list<Item> items) {
  items_.reserve(items.size());
  for (auto& it : items) set(it.first, it.second);
}

Params& Params::set(const char* key, ParamValue v) {
  auto pos = std::lower_bound(items_.begin(), items_.end(), key,
                              [](const Item& a, const char* k) { return std::strcmp(a.first, k) < 0; });
  if (pos != items_.end() && std::strcmp(pos->first, key) == 0) {
    pos->second = std::move(v);
  } else {
    items_.insert(pos, Item(key, std::move(v)));
  }
  return *this;
}

const ParamValue* Params::find(std::string_view key) const {
  for (auto& it : items_)
    if (key == it.first) return &it.second;
  return nullptr;
}

void Params::missing(std::string_view key) const { fail<ValueError>("missing primitive parameter '", key, "'"); }
void Params::wrong_type(std::string_view key) const {
  fail<TypeError>("primitive parameter '", key, "' has an unexpected type");
}

namespace {
size_t mix(size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2)); }
size_t hash_value(const ParamValue& v) {
  return std::visit(
      [](const auto& x) -> size_t {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return 0;
        } else if constexpr (std::is_same_v<T, IntList>) {
          size_t h = x.size();
          for (auto e : x) h = mix(h, std::hash<int64_t>()(e));
          return h;
        } else if constexpr (std::is_same_v<T, JaxprPtr>) {
          return std::hash<const void*>()(x.get());
        } else if constexpr (std::is_same_v<T, JaxprList>) {
          size_t h = x.size();
          for (auto& e : x) h = mix(h, std::hash<const void*>()(e.get()));
          return h;
        } else if constexpr (std::is_same_v<T, Ref<const ParamObject>>) {
          return x ? x->hash() : 0;
        } else if constexpr (std::is_same_v<T, DType>) {
          return static_cast<size_t>(x);
        } else if constexpr (std::is_same_v<T, double>) {
          return std::hash<uint64_t>()(std::bit_cast<uint64_t>(x));  // as equal_value compares
        } else {
          return std::hash<T>()(x);
        }
      },
      v);
}
bool equal_value(const ParamValue& a, const ParamValue& b) {
  if (a.index() != b.index()) return false;
  if (auto* x = std::get_if<Ref<const ParamObject>>(&a)) {
    auto& y = std::get<Ref<const ParamObject>>(b);
    return x->get() == y.get() || (*x && y && (*x)->equals(*y));
  }
  // doubles by their bits: 0.0 and -0.0 are different parameters (CSE must not merge them), and a NaN
  // parameter equals itself
  if (auto* x = std::get_if<double>(&a)) return std::bit_cast<uint64_t>(*x) == std::bit_cast<uint64_t>(std::get<double>(b));
  return a == b;
}
}  // namespace

size_t Params::hash() const {
  size_t h = items_.size();
  for (auto& it : items_) h = mix(mix(h, std::hash<std::string_view>()(it.first)), hash_value(it.second));
  return h;
}

bool operator==(const Params& a, const Params& b) {
  if (a.items_.size() != b.items_.size()) return false;
  for (size_t i = 0; i < a.items_.size(); ++i)
    if (std::strcmp(a.items_[i].first, b.items_[i].first) != 0 || !equal_value(a.items_[i].second, b.items_[i].second))
      return false;
  return true;
}

namespace {
// Strings print bare, as JAX prints names (`name=f`), when they read back as strings; others (empty,
// with spaces, or spelled like a number, a dtype or None) are quoted, so that the text parses back.
bool bare_string(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_' || s[0] == '<')) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && !std::strchr("_<>.:-", c)) return false;
  if (s == "None" || s == "True" || s == "False" || s == "nan" || s == "inf") return false;
  for (int d = 0; d < kNumDTypes; ++d)
    if (long_name(static_cast<DType>(d)) == s) return false;
  return true;
}

void print_string(std::ostream& os, const std::string& s) {
  if (bare_string(s)) {
    os << s;
    return;
  }
  os << '\'';
  for (char c : s) {
    if (c == '\'' || c == '\\') os << '\\';
    os << c;
  }
  os << '\'';
}
}  // namespace

void print_param_value(std::ostream& os, const ParamValue& v,
                       void (*print_jaxpr)(std::ostream&, const ClosedJaxpr&, void*), void* ctx) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          os << "None";
        } else if constexpr (std::is_same_v<T, bool>) {
          os << (x ? "True" : "False");
        } else if constexpr (std::is_same_v<T, int64_t>) {
          os << x;
        } else if constexpr (std::is_same_v<T, double>) {
          os << format_float_repr(x, DType::f64);
        } else if constexpr (std::is_same_v<T, std::string>) {
          print_string(os, x);
        } else if constexpr (std::is_same_v<T, DType>) {
          os << long_name(x);
        } else if constexpr (std::is_same_v<T, IntList>) {
          os << '(';
          for (size_t i = 0; i < x.size(); ++i) os << (i ? ", " : "") << x[i];
          os << (x.size() == 1 ? ",)" : ")");
        } else if constexpr (std::is_same_v<T, JaxprPtr>) {
          if (print_jaxpr && x) {
            print_jaxpr(os, *x, ctx);
          } else {
            os << "<jaxpr>";
          }
        } else if constexpr (std::is_same_v<T, JaxprList>) {
          os << '(';
          for (size_t i = 0; i < x.size(); ++i) {
            os << (i ? " " : "");
            if (print_jaxpr && x[i]) {
              print_jaxpr(os, *x[i], ctx);
            } else {
              os << "<jaxpr>";
            }
          }
          os << ')';
        } else {
          if (x) {
            x->print(os);
          } else {
            os << "None";
          }
        }
      },
      v);
}

namespace {
struct Readers {
  std::mutex mu;
  std::vector<std::pair<const char*, ParamReader>> list;
};
Readers& readers() {
  static Readers r;
  return r;
}
}  // namespace

void register_param_reader(const char* key, ParamReader reader) {
  Readers& r = readers();
  std::lock_guard<std::mutex> lk(r.mu);
  for (auto& [k, f] : r.list)
    if (std::string_view(k) == key) {
      f = reader;
      return;
    }
  r.list.emplace_back(key, reader);
}

ParamReader find_param_reader(std::string_view key) {
  Readers& r = readers();
  std::lock_guard<std::mutex> lk(r.mu);
  for (auto& [k, f] : r.list)
    if (key == k) return f;
  return nullptr;
}

}  // namespace graft
