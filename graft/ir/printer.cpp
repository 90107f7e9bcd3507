// The jaxpr printer: JAX's text format (see the grammar in jaxpr.h).
#include <cmath>
#include <deque>
#include <mutex>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "graft/core/format.h"
#include "graft/ir/jaxpr.h"
#include "graft/ir/print_rules.h"

namespace graft {

namespace {
struct Spellings {
  std::mutex mu;
  std::deque<std::pair<std::string, ParamSpelling>> list;  // a deque: found entries never move
};
Spellings& spellings() {
  static Spellings s;
  return s;
}
}  // namespace

void register_param_spelling(std::string_view prim, ParamSpelling spelling) {
  Spellings& s = spellings();
  std::lock_guard<std::mutex> lk(s.mu);
  for (auto& [k, v] : s.list)
    if (k == prim) {
      v = std::move(spelling);
      return;
    }
  s.list.emplace_back(std::string(prim), std::move(spelling));
}

const ParamSpelling* find_param_spelling(std::string_view prim) {
  Spellings& s = spellings();
  std::lock_guard<std::mutex> lk(s.mu);
  for (auto& [k, v] : s.list)
    if (k == prim) return &v;
  return nullptr;
}

namespace {
constexpr int kWidth = 80;

std::string encode_name(int n) {
  std::string s;
  do {
    s.insert(s.begin(), static_cast<char>('a' + n % 26));
    n /= 26;
  } while (n);
  return s;
}

std::string literal_str(const Array& v) {
  std::string s;
  DType d = v.dtype();
  if (is_floating(d)) {
    s = format_float_repr(v.item<double>(), d);
  } else if (is_complex(d)) {
    // Python's repr of a complex (JAX prints NumPy's complex scalars): (1.5-2j), 2j; whole parts lose ".0"
    auto z = v.item<complex128>();
    DType r = real_dtype(d);
    auto part = [&](double x) {
      std::string p = format_float_repr(x, r);
      if (p.size() > 2 && p.compare(p.size() - 2, 2, ".0") == 0) p.resize(p.size() - 2);
      return p;
    };
    if (z.real() == 0 && !std::signbit(z.real())) {
      s = part(z.imag()) + "j";
    } else {
      s = "(" + part(z.real()) + (std::signbit(z.imag()) ? "-" : "+") + part(std::abs(z.imag())) + "j)";
    }
  } else if (is_bool(d)) {
    s = v.item<bool>() ? "True" : "False";
  } else if (is_unsigned(d)) {
    s = std::to_string(v.item<uint64_t>());
  } else {
    s = std::to_string(v.item<int64_t>());
  }
  return s + ":" + v.aval().str();
}

class Printer {
 public:
  explicit Printer(PrintOptions o = {}) : opts_(o) {}
  std::string jaxpr(const Jaxpr& j, int indent) {
    // names are assigned in printing order: binders first
    std::vector<std::string> consts, ins;
    for (auto& v : j.constvars) consts.push_back(binder(v.get(), true));
    for (auto& v : j.invars) ins.push_back(binder(v.get(), true));
    std::unordered_set<const Var*> used;
    for (auto& e : j.eqns)
      for (auto& a : e.inputs)
        if (!a.is_literal()) used.insert(a.var.get());
    for (auto& a : j.outvars)
      if (!a.is_literal()) used.insert(a.var.get());
    std::string head = "{ lambda " + join(consts, " ") + "; " + join(ins, " ") + ". let";
    // render equations flat first; fall back to one per line
    std::vector<std::string> eqns;
    bool any_multiline = false;
    for (auto& e : j.eqns) {
      eqns.push_back(eqn(e, indent + 4, used));
      any_multiline = any_multiline || eqns.back().find('\n') != std::string::npos;
    }
    std::vector<std::string> outs;
    for (auto& a : j.outvars) outs.push_back(atom(a));
    std::string out_tuple = "(" + join(outs, ", ") + (outs.size() == 1 ? ",)" : ")");
    std::string flat = head + " " + join(eqns, "; ") + " in " + out_tuple + " }";
    if (!any_multiline && indent + static_cast<int>(flat.size()) <= kWidth) return flat;
    std::string s = head;
    for (auto& e : eqns) s += "\n" + std::string(static_cast<size_t>(indent + 4), ' ') + e;
    s += "\n" + std::string(static_cast<size_t>(indent + 2), ' ') + "in " + out_tuple + " }";
    return s;
  }

 private:
  static std::string join(const std::vector<std::string>& v, const char* sep) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
    return s;
  }

  const std::string& name(const Var* v) {
    auto it = names_.find(v);
    if (it != names_.end()) return it->second;
    return names_.emplace(v, encode_name(counter_++)).first->second;
  }
  std::string binder(const Var* v, bool used) { return (used ? name(v) : std::string("_")) + ":" + v->aval.str(); }
  std::string atom(const Atom& a) { return a.is_literal() ? literal_str(a.literal) : name(a.var.get()); }

  std::string param_value(const ParamValue& v, int indent) {
    if (auto* jp = std::get_if<JaxprPtr>(&v)) {
      if (*jp) return jaxpr(*(*jp)->jaxpr, indent);
    }
    if (auto* list = std::get_if<JaxprList>(&v)) {
      // JAX's layout: one branch per line inside the parentheses
      std::string s = "(";
      for (auto& sub : *list)
        s += "\n" + std::string(static_cast<size_t>(indent + 2), ' ') + (sub ? jaxpr(*sub->jaxpr, indent + 2) : "None");
      return s + "\n" + std::string(static_cast<size_t>(indent), ' ') + ")";
    }
    std::ostringstream os;
    print_param_value(os, v);
    return os.str();
  }

  std::string eqn(const Eqn& e, int indent, const std::unordered_set<const Var*>& used) {
    std::vector<std::string> lhs;
    for (auto& v : e.outputs) lhs.push_back(binder(v.get(), used.count(v.get()) > 0));
    std::vector<std::string> args;
    for (auto& a : e.inputs) args.push_back(atom(a));
    std::string left = join(lhs, " ") + " = " + e.prim->name;
    std::string right = args.empty() ? "" : " " + join(args, " ");
    if (opts_.name_stack && e.name_stack) right += "  # [" + *e.name_stack + "]";
    std::vector<PrintedParam> params;
    if (const ParamSpelling* sp = find_param_spelling(e.prim->name); sp && sp->print) {
      params = sp->print(e);
    } else {
      for (auto& [k, v] : e.params) params.push_back({std::string(k), v});
    }
    if (params.empty()) return left + right;
    for (auto& p : params)
      if (p.same_names) suggest_names(e, p.value);
    // try the params on one line, then one per line
    std::vector<std::string> flat;
    bool multiline = false;
    int save = counter_;
    auto saved_names = names_;
    for (auto& p : params) {
      flat.push_back(p.key + "=" + param_value(p.value, indent));
      multiline = multiline || flat.back().find('\n') != std::string::npos;
    }
    std::string one = left + "[" + join(flat, " ") + "]" + right;
    if (!multiline && indent + static_cast<int>(one.size()) <= kWidth) return one;
    counter_ = save;  // re-render the params with their own lines (names must not be consumed twice)
    names_ = std::move(saved_names);
    std::string s = left + "[";
    for (auto& p : params)
      s += "\n" + std::string(static_cast<size_t>(indent + 2), ' ') + p.key + "=" + param_value(p.value, indent + 2);
    s += "\n" + std::string(static_cast<size_t>(indent), ' ') + "]" + right;
    return s;
  }

  // JAX's suggest_same_var_names: the sub-jaxpr's invars take the names of the equation's operands and
  // its outvars those of the results, where those are named variables and no other binder of the
  // sub-jaxpr has the name yet (a jaxpr cannot bind one name twice).
  void suggest_names(const Eqn& e, const ParamValue& v) {
    auto* jp = std::get_if<JaxprPtr>(&v);
    if (!jp || !*jp) return;
    const Jaxpr& j = *(*jp)->jaxpr;
    std::unordered_set<std::string> taken;
    auto suggest = [&](const Var* inner, const Var* outer) {
      auto it = names_.find(outer);
      if (it == names_.end() || names_.count(inner) || taken.count(it->second)) return;
      taken.insert(it->second);
      names_.emplace(inner, it->second);
    };
    if (j.invars.size() == e.inputs.size())
      for (size_t i = 0; i < j.invars.size(); ++i)
        if (!e.inputs[i].is_literal()) suggest(j.invars[i].get(), e.inputs[i].var.get());
    if (j.outvars.size() == e.outputs.size())
      for (size_t i = 0; i < j.outvars.size(); ++i)
        if (!j.outvars[i].is_literal()) suggest(j.outvars[i].var.get(), e.outputs[i].get());
  }

  PrintOptions opts_;
  std::unordered_map<const Var*, std::string> names_;
  int counter_ = 0;
};
}  // namespace

std::ostream& operator<<(std::ostream& os, const Jaxpr& j) {
  Printer p;
  return os << p.jaxpr(j, 0);
}

std::ostream& operator<<(std::ostream& os, const ClosedJaxpr& j) { return os << *j.jaxpr; }

std::string to_string(const ClosedJaxpr& j, const PrintOptions& options) {
  Printer p(options);
  return p.jaxpr(*j.jaxpr, 0);
}

std::string to_string(const Jaxpr& j) {
  std::ostringstream os;
  os << j;
  return os.str();
}

}  // namespace graft
