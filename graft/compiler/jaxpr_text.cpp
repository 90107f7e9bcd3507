// The jaxpr parser: the printer (graft/ir/printer.cpp) run backwards.
//
// Parsing is in two steps. Parameter values are first read into a small syntax tree (PV) without
// knowing their types, because the text spells several types alike: `(0, 1)` is an IntList, `()`
// may be an IntList, a padding configuration or a tuple of axis names. The second step (param_value)
// gives each value its type from the primitive and key it belongs to. Anything the printer cannot
// write is rejected with the line and column where reading stopped.
#include "graft/compiler/jaxpr_text.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <mutex>
#include <set>
#include <unordered_map>

#include "graft/core/axis_names.h"
#include "graft/compiler/cpu/accumulate.h"
#include "graft/compiler/fusion.h"
#include "graft/ir/print_rules.h"
#include "graft/core/format.h"
#include "graft/prims/lax.h"
#include "graft/prims/primitives.h"

namespace graft {

namespace {

// Params keys must outlive every Params (they are `const char*`): keys read from text are interned.
const char* intern(std::string_view key) {
  static std::mutex mu;
  static std::set<std::string, std::less<>> keys;
  std::lock_guard<std::mutex> lk(mu);
  auto it = keys.find(key);
  if (it == keys.end()) it = keys.emplace(key).first;
  return it->c_str();
}

// Primitives outside primitives.def are found once registered: the compiler's here; those of the
// transformations (jit, cond, ...) register when first used, or all at once by
// register_transform_primitives() (graft/transforms/api.h), which a process loading programs calls.
const Primitive* lookup_primitive(std::string_view name) {
  static const bool registered = [] {
    prims::register_primitive(&compiler::fusion_p);
    prims::register_primitive(&compiler::dot_general_add_p);
    return true;
  }();
  (void)registered;
  return prims::find_primitive(name);
}

/// A parameter value as written, before it has a type.
struct PV {
  enum Kind { kNone, kBool, kInt, kFloat, kName, kStr, kTuple, kList, kCall, kJaxpr, kJaxprs } kind = kNone;
  bool b = false;
  int64_t i = 0;
  double d = 0;
  std::string s;                  ///< a name, a quoted string, or the callee of a call
  std::vector<PV> items;          ///< tuple, list and call arguments
  std::vector<std::string> keys;  ///< call arguments' keywords ("" for positional ones)
  JaxprPtr jaxpr;
  JaxprList jaxprs;

  bool all(Kind k) const {
    for (auto& x : items)
      if (x.kind != k) return false;
    return true;
  }
};

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

class Parser {
 public:
  Parser(std::string_view text, std::span<const Array> consts, bool zero_consts, bool check_types)
      : t_(text), consts_(consts), zero_consts_(zero_consts), check_types_(check_types) {}

  ClosedJaxpr top() {
    skip_ws();
    JaxprPtr j = jaxpr();
    skip_ws();
    if (p_ != t_.size()) error("text after the jaxpr's closing '}'");
    if (!zero_consts_ && next_const_ != consts_.size())
      fail<ValueError>("parse_jaxpr: ", consts_.size(), " constants were given but the text has ", next_const_,
                       " constvars");
    if (!check_types_) return *j;
    try {
      verify(*j->jaxpr);
    } catch (const Error& e) {
      fail<ValueError>("parse_jaxpr: the text is not a well-typed jaxpr: ", e.what());
    } catch (const std::exception& e) {  // a rule that met a parameter of a type it does not expect
      fail<ValueError>("parse_jaxpr: the text is not a well-typed jaxpr: ", e.what());
    }
    return *j;
  }

 private:
  using Scope = std::unordered_map<std::string, VarRef>;

  // ---- characters ------------------------------------------------------------------------------------
  char peek(size_t ahead = 0) const { return p_ + ahead < t_.size() ? t_[p_ + ahead] : '\0'; }
  bool eof() const { return p_ >= t_.size(); }
  void skip_ws() {
    while (!eof() && space(t_[p_])) ++p_;
  }
  void skip_blanks() {  // spaces within a line
    while (!eof() && (t_[p_] == ' ' || t_[p_] == '\t' || t_[p_] == '\r')) ++p_;
  }
  bool starts_with(std::string_view s) const { return t_.substr(p_, s.size()) == s; }
  void expect(std::string_view s) {
    if (!starts_with(s)) error("expected '" + std::string(s) + "'");
    p_ += s.size();
  }
  std::string ident() {
    size_t start = p_;
    while (!eof() && ident_char(t_[p_])) ++p_;
    return std::string(t_.substr(start, p_ - start));
  }
  /// At the keyword `in` that ends the equations (a variable may be called `in` too: the keyword is
  /// followed by the output tuple).
  bool at_in() const {
    if (!starts_with("in") || ident_char(peek(2))) return false;
    size_t q = p_ + 2;
    while (q < t_.size() && space(t_[q])) ++q;
    return q < t_.size() && t_[q] == '(';
  }

  [[noreturn]] void error(const std::string& what) const {
    size_t line = 1, col = 1;
    for (size_t k = 0; k < p_ && k < t_.size(); ++k) {
      if (t_[k] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    std::string near(t_.substr(p_, 24));
    for (char& c : near)
      if (c == '\n') c = ' ';
    fail<ValueError>("parse_jaxpr: line ", line, ", column ", col, ": ", what,
                     eof() ? std::string(" (at the end of the text)") : " (at '" + near + "')");
  }

  // ---- types and atoms -----------------------------------------------------------------------------
  Aval type() {
    std::string dt = ident();
    DType d;
    try {
      d = parse_dtype(dt);
    } catch (const Error&) {
      error("unknown dtype '" + dt + "'");
    }
    if (short_name(d) != dt) error("types are spelled with the short dtype name (" + std::string(short_name(d)) + ")");
    expect("[");
    Shape shape;
    while (peek() != ']') {
      shape.push_back(integer("a dimension"));
      if (peek() == ',') ++p_;
      else if (peek() != ']') error("expected ',' or ']' in a shape");
    }
    ++p_;
    Aval a(std::move(shape), d);
    if (starts_with("{V:")) {
      p_ += 3;
      for (;;) {
        std::string n = ident();
        if (n.empty()) error("expected an axis name");
        a.vma |= axis_bit(n);
        if (peek() == ',') {
          ++p_;
          continue;
        }
        expect("}");
        break;
      }
    }
    return a;
  }

  int64_t integer(const char* what) {
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(t_.data() + p_, t_.data() + t_.size(), v);
    if (ec != std::errc()) error(std::string("expected ") + what);
    p_ = static_cast<size_t>(ptr - t_.data());
    return v;
  }

  VarRef binder(Scope& scope) {
    std::string n = ident();
    if (n.empty()) error("expected a variable name");
    expect(":");
    VarRef v = make_ref<Var>(type());
    if (n != "_" && !scope.emplace(n, v).second) error("variable '" + n + "' is defined twice");
    return v;
  }

  Array literal(std::string_view value, const Aval& a) {
    if (!a.shape.empty()) error("literals are scalars, this one has type " + a.str());
    DType d = a.dtype;
    const char* b = value.data();
    const char* e = b + value.size();
    auto bad = [&]() { error("'" + std::string(value) + "' is not a " + std::string(long_name(d)) + " literal"); };
    if (is_bool(d)) {
      if (value != "True" && value != "False") bad();
      return Array::scalar(value == "True" ? 1.0 : 0.0, d);
    }
    if (is_floating(d)) {
      // f32, f16 and bf16 literals print the shortest float that reads back: read them as float
      // (reading as double and rounding could round twice)
      if (d == DType::f64) {
        double v = 0;
        auto r = std::from_chars(b, e, v);
        if (r.ec != std::errc() || r.ptr != e) bad();
        return Array::scalar(v, d);
      }
      float v = 0;
      auto r = std::from_chars(b, e, v);
      if (r.ec != std::errc() || r.ptr != e) bad();
      return Array::scalar(static_cast<double>(v), d);
    }
    if (is_complex(d)) {
      // Python's repr: (1+2j), (-0.5-1e-08j), 2j (a zero real part), inf and nan spelled out
      // c64's parts print as the shortest float that reads back: read them as float (as f32 literals)
      auto part = [&](std::string_view t) -> double {
        if (!t.empty() && t.front() == '+') t.remove_prefix(1);
        if (d == DType::c64) {
          float v = 0;
          auto r = std::from_chars(t.data(), t.data() + t.size(), v);
          if (t.empty() || r.ec != std::errc() || r.ptr != t.data() + t.size()) bad();
          return v;
        }
        double v = 0;
        auto r = std::from_chars(t.data(), t.data() + t.size(), v);
        if (t.empty() || r.ec != std::errc() || r.ptr != t.data() + t.size()) bad();
        return v;
      };
      complex128 z;
      if (value.size() >= 2 && value.front() != '(' && value.back() == 'j') {
        z = complex128(0, part(value.substr(0, value.size() - 1)));
      } else {
        if (value.size() < 4 || value.front() != '(' || value.back() != ')' || value[value.size() - 2] != 'j') bad();
        std::string_view body = value.substr(1, value.size() - 3);
        size_t cut = std::string_view::npos;
        for (size_t i = 1; i < body.size(); ++i)
          if ((body[i] == '+' || body[i] == '-') && body[i - 1] != 'e' && body[i - 1] != 'E') cut = i;
        if (cut == std::string_view::npos) bad();
        z = complex128(part(body.substr(0, cut)), part(body.substr(cut)));
      }
      Array out = Array::empty(Aval({}, d));
      convert_elements(&z, DType::c128, out.concrete()->data(), d, 1);
      return out;
    }
    if (is_unsigned(d)) {
      uint64_t v = 0;
      auto r = std::from_chars(b, e, v);
      if (r.ec != std::errc() || r.ptr != e) bad();
      return scalar_of(v, d, bad);
    }
    int64_t v = 0;
    auto r = std::from_chars(b, e, v);
    if (r.ec != std::errc() || r.ptr != e) bad();
    return scalar_of(v, d, bad);
  }

  template <class T, class Bad>
  static Array scalar_of(T v, DType d, const Bad& bad) {
    auto make = [&](auto x) {
      if (static_cast<T>(x) != v || (x < 0) != (v < 0)) bad();
      return Array::from_data(&x, {}, d);
    };
    switch (d) {
      case DType::i8: return make(static_cast<int8_t>(v));
      case DType::i16: return make(static_cast<int16_t>(v));
      case DType::i32: return make(static_cast<int32_t>(v));
      case DType::i64: return make(static_cast<int64_t>(v));
      case DType::u8: return make(static_cast<uint8_t>(v));
      case DType::u16: return make(static_cast<uint16_t>(v));
      case DType::u32: return make(static_cast<uint32_t>(v));
      case DType::u64: return make(static_cast<uint64_t>(v));
      default: bad();
    }
    return {};
  }

  Atom atom(const Scope& scope) {
    size_t start = p_;
    if (!eof() && t_[p_] == '(') {  // a complex literal, (1+2j): through its closing parenthesis
      while (!eof() && t_[p_] != ')') ++p_;
      if (!eof()) ++p_;
    }
    while (!eof() && !space(t_[p_]) && t_[p_] != ',' && t_[p_] != ')' && t_[p_] != ';' && t_[p_] != ':') ++p_;
    std::string tok(t_.substr(start, p_ - start));
    if (tok.empty()) error("expected a variable or a literal");
    if (peek() == ':') {
      ++p_;
      return Atom::lit(literal(tok, type()));
    }
    auto it = scope.find(tok);
    if (it == scope.end()) {
      p_ = start;
      error("variable '" + tok + "' is not defined");
    }
    return Atom(it->second);
  }

  // ---- jaxprs ----------------------------------------------------------------------------------------
  // Nesting (sub-jaxprs, tuples) is bounded: a hostile text must not exhaust the stack.
  struct Depth {
    Parser& p;
    explicit Depth(Parser& parser) : p(parser) {
      if (++p.depth_ > kMaxDepth) p.error("nested more than " + std::to_string(kMaxDepth) + " levels deep");
    }
    ~Depth() { --p.depth_; }
  };
  static constexpr int kMaxDepth = 100;

  JaxprPtr jaxpr() {
    Depth guard(*this);
    expect("{");
    skip_ws();
    expect("lambda");
    auto j = std::make_shared<Jaxpr>();
    Scope scope;
    skip_ws();
    while (peek() != ';') {
      if (eof()) error("expected ';' after the constvars");
      j->constvars.push_back(binder(scope));
      skip_ws();
    }
    ++p_;
    skip_ws();
    while (peek() != '.') {
      if (eof()) error("expected '.' after the inputs");
      j->invars.push_back(binder(scope));
      skip_ws();
    }
    ++p_;
    skip_ws();
    expect("let");
    std::vector<Array> consts;
    for (auto& v : j->constvars) consts.push_back(const_value(v->aval));
    for (;;) {
      skip_ws();
      if (eof()) error("expected 'in'");
      if (at_in()) break;
      j->eqns.push_back(eqn(scope));
      skip_blanks();
      if (peek() == ';') ++p_;
    }
    p_ += 2;
    skip_ws();
    expect("(");
    skip_ws();
    while (peek() != ')') {
      j->outvars.push_back(atom(scope));
      skip_ws();
      if (peek() == ',') {
        ++p_;
        skip_ws();
      } else if (peek() != ')') {
        error("expected ',' or ')' in the outputs");
      }
    }
    ++p_;
    skip_ws();
    expect("}");
    return std::make_shared<const ClosedJaxpr>(std::move(j), std::move(consts));
  }

  Array const_value(const Aval& a) {
    if (zero_consts_) return lax::full(a.shape, 0.0, a.dtype);
    if (next_const_ >= consts_.size())
      fail<ValueError>("parse_jaxpr: the text has more constvars than the ", consts_.size(), " constants given");
    const Array& c = consts_[next_const_++];
    if (!c.valid() || !c.aval().same_type(a))
      fail<ValueError>("parse_jaxpr: constant ", next_const_ - 1, " has type ", c.valid() ? c.aval().str() : "<null>",
                       " but its constvar is declared ", a.str());
    return c;
  }

  Eqn eqn(Scope& scope) {
    Eqn e;
    std::vector<VarRef> outs;
    while (peek() != '=') {
      if (eof() || peek() == '\n') error("expected '=' after an equation's results");
      outs.push_back(binder(scope));
      skip_blanks();
    }
    ++p_;
    skip_blanks();
    size_t at = p_;
    std::string name = ident();
    e.prim = lookup_primitive(name);
    if (!e.prim) {
      p_ = at;
      error("unknown primitive '" + name + "'");
    }
    // JAX's spelling of this primitive's parameters, where it has its own (graft/ir/print_rules.h)
    const ParamSpelling* spelling = find_param_spelling(e.prim->name);
    if (peek() == '[') {
      ++p_;
      std::set<std::string> seen;
      for (;;) {
        skip_ws();
        if (peek() == ']') break;
        size_t key_at = p_;
        std::string key = ident();
        if (key.empty()) error("expected a parameter name or ']'");
        expect("=");
        size_t value_at = p_;
        PV v = value(true);
        size_t end = p_;
        p_ = key_at;
        if (!seen.insert(key).second) error("parameter '" + key + "' is given twice");
        bool dropped = false;
        if (spelling) {
          for (auto& d : spelling->dropped) dropped = dropped || d == key;
          for (auto& [printed, own] : spelling->renamed)
            if (printed == key) key = own;
        }
        if (!dropped) {
          if (e.params.has(key)) error("parameter '" + key + "' is given twice");
          e.params.set(intern(key), param_value(*e.prim, key, v, t_.substr(value_at, end - value_at)));
        } else if (spelling->derive) {
          try {
            spelling->derive(key, t_.substr(value_at, end - value_at), e.params);
          } catch (const Error& err) {
            p_ = value_at;
            error(err.what());
          }
        }
        p_ = end;
      }
      ++p_;
    }
    if (spelling)
      for (auto& [k, v] : spelling->defaults)
        if (!e.params.has(k)) e.params.set(k, v);
    for (;;) {
      skip_blanks();
      if (eof() || peek() == ';' || peek() == '\n' || at_in()) break;
      e.inputs.push_back(atom(scope));
    }
    e.outputs = std::move(outs);
    return e;
  }

  // ---- parameter values ------------------------------------------------------------------------------
  /// A value; `top`: directly after `key=` (a bare word runs to the next space or ']').
  PV value(bool top) {
    Depth guard(*this);
    PV v;
    char c = peek();
    if (c == '{') {
      v.kind = PV::kJaxpr;
      v.jaxpr = jaxpr();
      return v;
    }
    if (c == '(' && peek(1) == '\n') {  // a list of jaxprs: one per line (the printer's layout)
      ++p_;
      v.kind = PV::kJaxprs;
      for (;;) {
        skip_ws();
        if (peek() == ')') break;
        // the printer writes None for a missing entry, which no primitive's rules accept
        if (starts_with("None")) error("a list of jaxprs with a missing entry (None)");
        v.jaxprs.push_back(jaxpr());
      }
      ++p_;
      return v;
    }
    if (c == '(' || c == '[') {
      v.kind = c == '(' ? PV::kTuple : PV::kList;
      items(v, c == '(' ? ')' : ']', false);
      return v;
    }
    if (c == '\'') {
      v.kind = PV::kStr;
      v.s = quoted();
      return v;
    }
    size_t start = p_;
    std::string id = ident();
    if (!id.empty() && peek() == '(') {
      v.kind = PV::kCall;
      v.s = id;
      items(v, ')', true);
      return v;
    }
    while (!eof() && !space(t_[p_]) && t_[p_] != ']' && (top || (t_[p_] != ',' && t_[p_] != ')'))) ++p_;
    std::string_view tok = t_.substr(start, p_ - start);
    if (tok.empty()) error("expected a parameter value");
    if (tok == "None") return v;
    if (tok == "True" || tok == "False") {
      v.kind = PV::kBool;
      v.b = tok == "True";
      return v;
    }
    const char* b = tok.data();
    const char* e = b + tok.size();
    auto ri = std::from_chars(b, e, v.i);
    if (ri.ec == std::errc() && ri.ptr == e) {
      v.kind = PV::kInt;
      return v;
    }
    auto rd = std::from_chars(b, e, v.d);
    if (rd.ec == std::errc() && rd.ptr == e && (tok[0] == '-' || std::isdigit(static_cast<unsigned char>(tok[0])) ||
                                                tok == "nan" || tok == "inf")) {
      v.kind = PV::kFloat;
      return v;
    }
    v.kind = PV::kName;
    v.s = std::string(tok);
    return v;
  }

  /// The items of a tuple, list or call (`keywords`: `key=value` items allowed), up to `close`.
  void items(PV& v, char close, bool keywords) {
    ++p_;
    skip_ws();
    while (peek() != close) {
      if (eof()) error(std::string("expected '") + close + "'");
      std::string key;
      if (keywords) {
        size_t at = p_;
        key = ident();
        if (key.empty() || peek() != '=') {
          p_ = at;
          key.clear();
        } else {
          ++p_;
        }
      }
      v.keys.push_back(key);
      v.items.push_back(value(false));
      skip_ws();
      if (peek() == ',') {
        ++p_;
        skip_ws();
      } else if (peek() != close) {
        error(std::string("expected ',' or '") + close + "'");
      }
    }
    ++p_;
  }

  std::string quoted() {
    ++p_;
    std::string s;
    for (;;) {
      if (eof()) error("unterminated string");
      char c = t_[p_++];
      if (c == '\'') break;
      if (c == '\\') {
        if (eof()) error("unterminated string");
        c = t_[p_++];
      }
      s.push_back(c);
    }
    return s;
  }

  // ---- typing parameter values -------------------------------------------------------------------------
  [[noreturn]] void bad_param(const Primitive& prim, const std::string& key, const std::string& why) const {
    error("parameter '" + key + "' of " + prim.name + ": " + why);
  }

  IntList ints(const Primitive& prim, const std::string& key, const PV& v) const {
    if ((v.kind != PV::kTuple && v.kind != PV::kList) || !v.all(PV::kInt))
      bad_param(prim, key, "expected a tuple of integers");
    IntList out;
    for (auto& x : v.items) out.push_back(x.i);
    return out;
  }

  IntList keyword(const Primitive& prim, const std::string& key, const PV& call, size_t k, const char* name) const {
    if (k >= call.items.size() || call.keys[k] != name)
      bad_param(prim, key, std::string("expected ") + name + "= as argument " + std::to_string(k + 1) + " of " + call.s);
    return ints(prim, key, call.items[k]);
  }

  Ref<const ParamObject> int_tuples(const Primitive& prim, const std::string& key, const PV& v) const {
    if (v.kind != PV::kTuple) bad_param(prim, key, "expected a tuple of integer tuples");
    std::vector<IntList> items;
    for (auto& x : v.items) items.push_back(ints(prim, key, x));
    return Ref<const ParamObject>(new lax::IntTuples(std::move(items)));
  }

  Ref<const ParamObject> axis_names(const Primitive& prim, const std::string& key, const PV& v) const {
    if (v.kind != PV::kTuple || !v.all(PV::kStr)) bad_param(prim, key, "expected a tuple of quoted axis names");
    std::vector<std::string> names;
    for (auto& x : v.items) names.push_back(x.s);
    return Ref<const ParamObject>(new AxisNames(std::move(names)));
  }

  ParamValue param_value(const Primitive& prim, const std::string& key, const PV& v, std::string_view text) const {
    if (ParamReader read = find_param_reader(key)) {
      if (std::optional<ParamValue> r = read(text)) return *r;
      bad_param(prim, key, "'" + std::string(text) + "' is not a value of it");
    }
    bool names_axes = (prim.flags & kCollective) && (key == "axes" || key == "axis_name");
    if (names_axes) return axis_names(prim, key, v);
    if (key == "padding_config" || key == "perm" || (key == "padding" && v.kind == PV::kTuple))
      return int_tuples(prim, key, v);
    switch (v.kind) {
      case PV::kNone: return std::monostate{};
      case PV::kBool: return v.b;
      case PV::kInt: return v.i;
      case PV::kFloat: return v.d;
      case PV::kStr: return v.s;
      case PV::kJaxpr: return v.jaxpr;
      case PV::kJaxprs: return v.jaxprs;
      case PV::kName:
        for (int d = 0; d < kNumDTypes; ++d)
          if (long_name(static_cast<DType>(d)) == v.s) return static_cast<DType>(d);
        return v.s;
      case PV::kCall: return dimension_numbers(prim, key, v);
      case PV::kList: bad_param(prim, key, "a list is not a parameter value");
      case PV::kTuple: break;
    }
    if (v.all(PV::kInt)) return ints(prim, key, v);
    if (v.all(PV::kStr)) return axis_names(prim, key, v);
    // dot_general's ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch)), lists inside
    auto pair_of_lists = [](const PV& x) {
      return x.kind == PV::kTuple && x.items.size() == 2 && x.all(PV::kList);
    };
    if (v.items.size() == 2 && pair_of_lists(v.items[0]) && pair_of_lists(v.items[1])) {
      auto l = [&](int a, int b) { return ints(prim, key, v.items[static_cast<size_t>(a)].items[static_cast<size_t>(b)]); };
      return Ref<const ParamObject>(new lax::DotDims(l(0, 0), l(0, 1), l(1, 0), l(1, 1)));
    }
    if (v.all(PV::kTuple)) return int_tuples(prim, key, v);
    bad_param(prim, key, "not a value graft prints");
  }

  ParamValue dimension_numbers(const Primitive& prim, const std::string& key, const PV& v) const {
    auto kw = [&](size_t k, const char* name) { return keyword(prim, key, v, k, name); };
    auto arity = [&](size_t n) {
      if (v.items.size() != n) bad_param(prim, key, v.s + " takes " + std::to_string(n) + " arguments");
    };
    if (v.s == "GatherDimensionNumbers") {
      arity(5);
      return Ref<const ParamObject>(new lax::GatherDims(kw(0, "offset_dims"), kw(1, "collapsed_slice_dims"),
                                                        kw(2, "start_index_map"), kw(3, "operand_batching_dims"),
                                                        kw(4, "start_indices_batching_dims")));
    }
    if (v.s == "ScatterDimensionNumbers") {
      arity(5);
      return Ref<const ParamObject>(new lax::ScatterDims(kw(0, "update_window_dims"), kw(1, "inserted_window_dims"),
                                                         kw(2, "scatter_dims_to_operand_dims"),
                                                         kw(3, "operand_batching_dims"),
                                                         kw(4, "scatter_indices_batching_dims")));
    }
    if (v.s == "ConvDimensionNumbers") {
      arity(3);
      return Ref<const ParamObject>(new lax::ConvDims(kw(0, "lhs_spec"), kw(1, "rhs_spec"), kw(2, "out_spec")));
    }
    bad_param(prim, key, "unknown structured value " + v.s + "(...)");
  }

  std::string_view t_;
  size_t p_ = 0;
  std::span<const Array> consts_;
  bool zero_consts_, check_types_;
  size_t next_const_ = 0;
  int depth_ = 0;
};

void collect_constants(const ClosedJaxpr& j, std::vector<Array>& out) {
  out.insert(out.end(), j.consts.begin(), j.consts.end());
  for (auto& e : j.jaxpr->eqns)
    for (auto& [k, v] : e.params) {
      if (auto* jp = std::get_if<JaxprPtr>(&v)) {
        if (*jp) collect_constants(**jp, out);
      } else if (auto* list = std::get_if<JaxprList>(&v)) {
        for (auto& s : *list)
          if (s) collect_constants(*s, out);
      }
    }
}

// Walks two jaxprs side by side, pairing their variables.
class Comparer {
 public:
  std::string why;

  bool jaxprs(const ClosedJaxpr& a, const ClosedJaxpr& b, const std::string& where) {
    const Jaxpr& x = *a.jaxpr;
    const Jaxpr& y = *b.jaxpr;
    if (a.consts.size() != b.consts.size()) return differ(where, "different numbers of constants");
    if (!binders(x.constvars, y.constvars, where + "constvars") || !binders(x.invars, y.invars, where + "inputs"))
      return false;
    if (x.eqns.size() != y.eqns.size())
      return differ(where, std::to_string(x.eqns.size()) + " vs " + std::to_string(y.eqns.size()) + " equations");
    for (size_t i = 0; i < x.eqns.size(); ++i) {
      const Eqn& e = x.eqns[i];
      const Eqn& f = y.eqns[i];
      std::string at = where + "equation " + std::to_string(i) + " (" + e.prim->name + ")";
      if (e.prim != f.prim) return differ(at, std::string("primitive ") + f.prim->name + " in the other");
      if (!atoms(e.inputs, f.inputs, at) || !params(e.params, f.params, at) || !binders(e.outputs, f.outputs, at))
        return false;
    }
    return atoms(x.outvars, y.outvars, where + "outputs");
  }

 private:
  bool differ(const std::string& where, const std::string& what) {
    why = where + ": " + what;
    return false;
  }

  bool binders(const std::vector<VarRef>& a, const std::vector<VarRef>& b, const std::string& where) {
    if (a.size() != b.size()) return differ(where, "different numbers of variables");
    for (size_t k = 0; k < a.size(); ++k) {
      if (!a[k]->aval.same_type(b[k]->aval) || a[k]->aval.vma != b[k]->aval.vma)
        return differ(where, a[k]->aval.str() + " vs " + b[k]->aval.str());
      map_[a[k].get()] = b[k].get();
    }
    return true;
  }

  bool atoms(const std::vector<Atom>& a, const std::vector<Atom>& b, const std::string& where) {
    if (a.size() != b.size()) return differ(where, "different numbers of operands");
    for (size_t k = 0; k < a.size(); ++k) {
      if (a[k].is_literal() != b[k].is_literal()) return differ(where, "a literal vs a variable");
      if (a[k].is_literal()) {
        const Array& u = a[k].literal;
        const Array& v = b[k].literal;
        bool same = u.aval().same_type(v.aval()) &&
                    std::memcmp(u.raw_data(), v.raw_data(), itemsize(u.dtype())) == 0;
        if (!same) return differ(where, "literal " + std::to_string(k) + " differs");
      } else {
        auto it = map_.find(a[k].var.get());
        if (it == map_.end() || it->second != b[k].var.get())
          return differ(where, "operand " + std::to_string(k) + " is another variable");
      }
    }
    return true;
  }

  bool params(const Params& a, const Params& b, const std::string& where) {
    if (a.size() != b.size()) return differ(where, "different parameters");
    for (auto pa = a.begin(), pb = b.begin(); pa != a.end(); ++pa, ++pb) {
      std::string at = where + " parameter " + pa->first;
      if (std::strcmp(pa->first, pb->first) != 0) return differ(where, std::string("parameter ") + pb->first);
      auto* ja = std::get_if<JaxprPtr>(&pa->second);
      auto* jb = std::get_if<JaxprPtr>(&pb->second);
      auto* la = std::get_if<JaxprList>(&pa->second);
      auto* lb = std::get_if<JaxprList>(&pb->second);
      if (ja && jb && *ja && *jb) {
        if (!jaxprs(**ja, **jb, at + ": ")) return false;
      } else if (la && lb) {
        if (la->size() != lb->size()) return differ(at, "different numbers of jaxprs");
        for (size_t k = 0; k < la->size(); ++k) {
          if (!(*la)[k] != !(*lb)[k]) return differ(at, "None vs a jaxpr");
          if ((*la)[k] && !jaxprs(*(*la)[k], *(*lb)[k], at + "[" + std::to_string(k) + "]: ")) return false;
        }
      } else if (!(Params{{pa->first, pa->second}} == Params{{pb->first, pb->second}})) {
        return differ(at, "differs");
      }
    }
    return true;
  }

  std::unordered_map<const Var*, const Var*> map_;
};

}  // namespace

bool same_program(const ClosedJaxpr& a, const ClosedJaxpr& b, std::string* why) {
  Comparer c;
  bool same = c.jaxprs(a, b, "");
  if (why) *why = c.why;
  return same;
}

ClosedJaxpr parse_jaxpr(std::string_view text, std::span<const Array> consts, bool check_types) {
  return Parser(text, consts, false, check_types).top();
}

ClosedJaxpr parse_jaxpr(std::string_view text) { return Parser(text, {}, true, true).top(); }

std::vector<Array> jaxpr_constants(const ClosedJaxpr& j) {
  std::vector<Array> out;
  collect_constants(j, out);
  return out;
}

}  // namespace graft
