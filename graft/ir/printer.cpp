// The jaxpr printer: JAX's text format (see the grammar in jaxpr.h).
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "graft/core/format.h"
#include "graft/ir/jaxpr.h"

namespace graft {

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
    if (e.params.empty()) return left + right;
    // try the params on one line, then one per line
    std::vector<std::string> flat;
    bool multiline = false;
    int save = counter_;
    auto saved_names = names_;
    for (auto& [k, v] : e.params) {
      flat.push_back(std::string(k) + "=" + param_value(v, indent));
      multiline = multiline || flat.back().find('\n') != std::string::npos;
    }
    std::string one = left + "[" + join(flat, " ") + "]" + right;
    if (!multiline && indent + static_cast<int>(one.size()) <= kWidth) return one;
    counter_ = save;  // re-render the params with their own lines (names must not be consumed twice)
    names_ = std::move(saved_names);
    std::string s = left + "[";
    for (auto& [k, v] : e.params)
      s += "\n" + std::string(static_cast<size_t>(indent + 2), ' ') + k + "=" + param_value(v, indent + 2);
    s += "\n" + std::string(static_cast<size_t>(indent), ' ') + "]" + right;
    return s;
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
