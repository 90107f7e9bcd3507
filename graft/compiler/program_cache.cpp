// The whole-program cache (see program_cache.h). Entries are a small binary layout: the program's
// text, its constants (dtype, shape, bytes), the release lists as variable numbers (constvars, then
// inputs, then each equation's outputs, in order) and the plan's sizes.
#include "graft/compiler/program_cache.h"
#include "graft/runtime/cpu/features.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include "graft/runtime/cpu/llvm_jit.h"
#include "graft/compiler/fusion.h"
#include "graft/compiler/jaxpr_text.h"
#include "graft/core/axis_names.h"

namespace graft::compiler {

namespace {

constexpr const char* kExt = "gkp";
constexpr std::string_view kMagic = "graft-program-2\n";  // 2: with name stacks
// Constants are hashed into the key on every compile and stored in the entry: an exported program's
// weights (a few MiB: optimizing it costs 100 ms or more, hashing them well under that) are worth it,
// larger models are compiled each time.
constexpr size_t kMaxConstBytes = size_t(64) << 20;

// The graft binary this code is linked into: a rebuild changes its size or time.
const std::string& binary_id() {
  static const std::string id = [] {
    Dl_info info{};
    if (!dladdr(reinterpret_cast<void*>(&binary_id), &info) || !info.dli_fname) return std::string("unknown");
    struct stat st{};
    if (::stat(info.dli_fname, &st) != 0) return std::string(info.dli_fname);
    return std::string(info.dli_fname) + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) +
           "." + std::to_string(st.st_mtim.tv_nsec);
  }();
  return id;
}

std::vector<const Var*> numbering(const Jaxpr& j) {
  std::vector<const Var*> vars;
  for (auto& v : j.constvars) vars.push_back(v.get());
  for (auto& v : j.invars) vars.push_back(v.get());
  for (auto& e : j.eqns)
    for (auto& v : e.outputs) vars.push_back(v.get());
  return vars;
}

template <class T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

// Bounds-checked reading: any overrun marks the entry damaged.
struct Reader {
  const std::string& b;
  size_t at = 0;
  bool ok = true;
  template <class T>
  T get() {
    T v{};
    if (at + sizeof v > b.size()) {
      ok = false;
      return v;
    }
    std::memcpy(&v, b.data() + at, sizeof v);
    at += sizeof v;
    return v;
  }
  std::string_view bytes(uint64_t n) {
    if (n > b.size() - at) {
      ok = false;
      return {};
    }
    std::string_view s(b.data() + at, n);
    at += n;
    return s;
  }
};

// A compact, exact description of a program for its key: printing the text (with its line layout)
// costs several times more, and this runs on every compile.
class Fingerprint {
 public:
  explicit Fingerprint(std::string& out) : out_(out) {}

  void jaxpr(const Jaxpr& j) {
    std::unordered_map<const Var*, uint32_t> num;
    auto def = [&](const VarRef& v) {
      num.emplace(v.get(), static_cast<uint32_t>(num.size()));
      aval(v->aval);
    };
    out_ += '{';
    for (auto& v : j.constvars) def(v);
    out_ += ';';
    for (auto& v : j.invars) def(v);
    out_ += '.';
    auto atom = [&](const Atom& a) {
      if (a.is_literal()) {
        out_ += 'L';
        aval(a.literal.aval());
        out_.append(static_cast<const char*>(a.literal.raw_data()), itemsize(a.literal.dtype()));
      } else {
        put<uint32_t>(out_, num.at(a.var.get()));
      }
    };
    for (auto& e : j.eqns) {
      out_ += e.prim->name;
      out_ += '[';
      for (auto& [k, v] : e.params) {
        out_ += k;
        out_ += '=';
        value(v);
      }
      if (e.name_stack) out_ += "@" + *e.name_stack + "|";  // names are part of what a program prints and profiles
      out_ += ']';
      for (auto& a : e.inputs) atom(a);
      out_ += '>';
      for (auto& v : e.outputs) def(v);
      out_ += ';';
    }
    out_ += "in";
    for (auto& a : j.outvars) atom(a);
    out_ += '}';
  }

 private:
  void aval(const Aval& a) {
    out_ += static_cast<char>(a.dtype);
    out_ += static_cast<char>(a.shape.size());
    out_.append(reinterpret_cast<const char*>(a.shape.data()), a.shape.size() * sizeof(int64_t));
    if (a.vma) out_ += axis_set_str(a.vma) + "|";
  }
  void value(const ParamValue& v) {
    out_ += static_cast<char>('0' + v.index());
    if (auto* jp = std::get_if<JaxprPtr>(&v)) {
      if (*jp) jaxpr(*(*jp)->jaxpr);
    } else if (auto* list = std::get_if<JaxprList>(&v)) {
      for (auto& s : *list)
        if (s) jaxpr(*s->jaxpr);
        else out_ += '_';
    } else if (auto* i = std::get_if<int64_t>(&v)) {
      put<int64_t>(out_, *i);
    } else if (auto* l = std::get_if<IntList>(&v)) {
      put<uint64_t>(out_, l->size());
      out_.append(reinterpret_cast<const char*>(l->data()), l->size() * sizeof(int64_t));
    } else {
      std::ostringstream os;
      print_param_value(os, v);
      out_ += os.str();
      out_ += '|';
    }
  }
  std::string& out_;
};

std::mutex salt_mu;
std::string& salt() {
  static std::string s;
  return s;
}

}  // namespace

void set_program_cache_salt(const std::string& s) {
  std::lock_guard<std::mutex> lk(salt_mu);
  salt() = s;
}

std::string program_cache_key(const ClosedJaxpr& original, const std::vector<bool>& donated) {
  std::vector<Array> consts = jaxpr_constants(original);
  size_t bytes = 0;
  for (auto& c : consts) {
    if (!c.is_concrete()) return "";
    bytes += c.nbytes();
  }
  if (bytes > kMaxConstBytes) return "";
  // a user who asks to see or check every pass gets the passes run
  for (const char* v : {"GRAFT_DUMP_IR", "GRAFT_VERIFY_IR"})
    if (const char* e = std::getenv(v); e && *e) return "";
  const char* skip = std::getenv("GRAFT_SKIP_PASSES");
  std::string key = "graft-program|" + binary_id() + "|";
  {
    std::lock_guard<std::mutex> lk(salt_mu);
    key += salt();
  }
  // passes that follow the CPU's features (widen_half_products) make different programs
  key += std::string("|skip:") + (skip ? skip : "") + (cpu::native_bf16() ? "|bf16" : "") +
         (excess_precision() ? "|excess" : "") + "|donated:";
  for (bool d : donated) key += d ? '1' : '0';
  key += '|';
  Fingerprint(key).jaxpr(*original.jaxpr);
  key += "|consts:";
  for (auto& c : consts) {
    Array x = c.concretize("program cache");
    key += x.aval().str() + "#" +
           std::to_string(std::hash<std::string_view>{}(
               std::string_view(static_cast<const char*>(x.raw_data()), x.nbytes()))) + ";";
  }
  return key;
}

std::string program_entry_bytes(const ClosedJaxpr& program, const MemoryPlan& plan) {
  std::string out(kMagic);
  std::string text = program.str();
  put<uint64_t>(out, text.size());
  out += text;
  std::vector<Array> consts = jaxpr_constants(program);
  put<uint64_t>(out, consts.size());
  for (auto& c : consts) {
    Array x = c.concretize("program cache");
    put<uint8_t>(out, static_cast<uint8_t>(x.dtype()));
    put<uint8_t>(out, static_cast<uint8_t>(x.ndim()));
    for (auto d : x.shape()) put<int64_t>(out, d);
    put<uint64_t>(out, x.nbytes());
    out.append(static_cast<const char*>(x.raw_data()), x.nbytes());
  }
  std::unordered_map<const Var*, uint32_t> number;
  auto vars = numbering(*program.jaxpr);
  for (size_t i = 0; i < vars.size(); ++i) number[vars[i]] = static_cast<uint32_t>(i);
  put<uint64_t>(out, plan.release.size());
  for (auto& list : plan.release) {
    put<uint32_t>(out, static_cast<uint32_t>(list.size()));
    for (const Var* v : list) put<uint32_t>(out, number.at(v));
  }
  put<int64_t>(out, plan.peak_bytes);
  put<int64_t>(out, plan.argument_bytes);
  // the top-level equations' name stacks (the text does not carry them)
  put<uint64_t>(out, program.jaxpr->eqns.size());
  for (auto& e : program.jaxpr->eqns) {
    put<uint32_t>(out, e.name_stack ? static_cast<uint32_t>(e.name_stack->size()) + 1 : 0);
    if (e.name_stack) out += *e.name_stack;
  }
  return out;
}

std::optional<CachedProgram> read_program_entry(const std::string& bytes) {
  if (bytes.compare(0, kMagic.size(), kMagic) != 0) return std::nullopt;
  Reader r{bytes, kMagic.size()};
  std::string_view text = r.bytes(r.get<uint64_t>());
  uint64_t n = r.get<uint64_t>();
  std::vector<Array> consts;
  for (uint64_t i = 0; r.ok && i < n; ++i) {
    auto d = r.get<uint8_t>();
    auto ndim = r.get<uint8_t>();
    if (d >= kNumDTypes) return std::nullopt;
    Shape shape;
    for (int k = 0; k < ndim; ++k) shape.push_back(r.get<int64_t>());
    uint64_t nbytes = r.get<uint64_t>();
    std::string_view data = r.bytes(nbytes);
    if (!r.ok) return std::nullopt;
    int64_t count = 1;
    for (auto s : shape) {
      if (s < 0 || (s > 0 && count > INT64_MAX / s)) return std::nullopt;
      count *= s;
    }
    if (static_cast<uint64_t>(count) * itemsize(static_cast<DType>(d)) != nbytes) return std::nullopt;
    consts.push_back(Array::from_data(data.data(), shape, static_cast<DType>(d)));
  }
  if (!r.ok) return std::nullopt;
  CachedProgram c;
  try {
    c.program = parse_jaxpr(text, consts, /*check_types=*/false);  // our own entry, hash-checked
  } catch (const Error&) {
    return std::nullopt;
  }
  auto vars = numbering(*c.program.jaxpr);
  uint64_t neqns = r.get<uint64_t>();
  if (!r.ok || neqns != c.program.jaxpr->eqns.size()) return std::nullopt;
  for (uint64_t i = 0; i < neqns; ++i) {
    uint32_t m = r.get<uint32_t>();
    std::vector<const Var*> list;
    for (uint32_t k = 0; r.ok && k < m; ++k) {
      uint32_t v = r.get<uint32_t>();
      if (v >= vars.size()) return std::nullopt;
      list.push_back(vars[v]);
    }
    if (!r.ok) return std::nullopt;
    c.release.push_back(std::move(list));
  }
  c.peak_bytes = r.get<int64_t>();
  c.argument_bytes = r.get<int64_t>();
  if (r.get<uint64_t>() != neqns || !r.ok) return std::nullopt;
  // the program was parsed just now and is not shared yet: its equations take their names back
  auto& eqns = const_cast<Jaxpr&>(*c.program.jaxpr).eqns;
  for (auto& e : eqns) {
    uint32_t len = r.get<uint32_t>();
    if (!r.ok) return std::nullopt;
    if (len > 0) {
      std::string_view name = r.bytes(len - 1);
      if (!r.ok) return std::nullopt;
      e.name_stack = std::make_shared<const std::string>(name);
    }
  }
  if (!r.ok || r.at != bytes.size()) return std::nullopt;
  return c;
}

std::optional<CachedProgram> load_cached_program(const std::string& key) {
  if (key.empty()) return std::nullopt;
  std::optional<std::string> bytes = cpu::cache_get(key, kExt);
  if (!bytes) return std::nullopt;
  return read_program_entry(*bytes);
}

void store_cached_program(const std::string& key, const ClosedJaxpr& program, const MemoryPlan& plan) {
  if (key.empty()) return;
  // only programs that read back exactly: parameters that are this process's objects (a recursive
  // function's callee, a mesh's communicators) print as names that would read back as strings
  std::string bytes = program_entry_bytes(program, plan);
  std::optional<CachedProgram> back = read_program_entry(bytes);
  if (!back || !same_program(program, back->program)) return;
  cpu::cache_put(key, bytes, kExt);
}

}  // namespace graft::compiler
