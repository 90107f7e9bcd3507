// Params: the static parameters of a primitive application (`reduce_sum[axes=(0,)]`).
//
// A small sorted list of (key, value). Keys are string literals (static storage); values are a closed
// variant. Sub-jaxprs (for jit and control flow) and structured parameters (dimension numbers) are
// held by pointer, so copying Params is cheap.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "graft/core/dtype.h"
#include "graft/core/ref.h"

namespace graft {

struct ClosedJaxpr;  // graft/ir/jaxpr.h

/// A structured parameter (e.g. gather dimension numbers, a custom rule). Printed in jaxprs.
class ParamObject : public RefCounted {
 public:
  virtual void print(std::ostream& os) const = 0;
  virtual size_t hash() const { return reinterpret_cast<size_t>(this); }
  virtual bool equals(const ParamObject& o) const { return this == &o; }
};

using IntList = std::vector<int64_t>;
using JaxprPtr = std::shared_ptr<const ClosedJaxpr>;
/// Several sub-jaxprs (the branches of `cond`).
using JaxprList = std::vector<JaxprPtr>;
using ParamValue = std::variant<std::monostate, bool, int64_t, double, std::string, DType, IntList, JaxprPtr,
                                Ref<const ParamObject>, JaxprList>;

class Params {
 public:
  using Item = std::pair<const char*, ParamValue>;
  Params() = default;
  Params(std::initializer_list<Item> items);

  /// Sets (or replaces) `key`. `key` must have static storage duration.
  Params& set(const char* key, ParamValue v);
  Params with(const char* key, ParamValue v) const {
    Params p(*this);
    p.set(key, std::move(v));
    return p;
  }
  const ParamValue* find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }
  template <class T>
  const T& get(std::string_view key) const {
    const ParamValue* v = find(key);
    if (!v) missing(key);
    if (auto* p = std::get_if<T>(v)) return *p;
    wrong_type(key);
  }
  int64_t get_int(std::string_view key) const { return get<int64_t>(key); }
  bool get_bool(std::string_view key) const { return get<bool>(key); }
  DType get_dtype(std::string_view key) const { return get<DType>(key); }
  const IntList& get_ints(std::string_view key) const { return get<IntList>(key); }
  const ClosedJaxpr& get_jaxpr(std::string_view key) const { return *get<JaxprPtr>(key); }
  const JaxprList& get_jaxprs(std::string_view key) const { return get<JaxprList>(key); }
  /// The structured parameter `key`, which must be a T (a TypeError names it otherwise: a jaxpr built
  /// by hand or read from a file may hold any object there).
  template <class T>
  const T& get_object(std::string_view key) const {
    const auto& o = get<Ref<const ParamObject>>(key);
    const T* t = o ? dynamic_cast<const T*>(o.get()) : nullptr;
    if (!t) wrong_type(key);
    return *t;
  }

  bool empty() const { return items_.empty(); }
  size_t size() const { return items_.size(); }
  const Item* begin() const { return items_.data(); }
  const Item* end() const { return items_.data() + items_.size(); }
  size_t hash() const;
  friend bool operator==(const Params& a, const Params& b);

 private:
  [[noreturn]] void missing(std::string_view key) const;
  [[noreturn]] void wrong_type(std::string_view key) const;
  std::vector<Item> items_;  // sorted by key
};

/// Reads a structured parameter back from its printed text (parse_jaxpr, graft/compiler/jaxpr_text.h).
/// Parameter objects defined in layers above the parser register one for their key; the reader
/// returns nullopt when the text is not one of its values (the parser then reports it).
using ParamReader = std::optional<ParamValue> (*)(std::string_view text);
/// Registers the reader of parameter `key` (static storage); a later registration replaces it.
void register_param_reader(const char* key, ParamReader reader);
/// The reader registered for `key`, or null.
ParamReader find_param_reader(std::string_view key);

/// Prints a value in the jaxpr spelling (None, True, 3, (0, 1), float32, ...). Jaxprs are printed by
/// the IR printer, which passes itself in through `print_jaxpr`.
void print_param_value(std::ostream& os, const ParamValue& v,
                       void (*print_jaxpr)(std::ostream&, const ClosedJaxpr&, void* ctx) = nullptr,
                       void* ctx = nullptr);

}  // namespace graft
