// Exported programs: the jaxpr's text and constants in a safetensors container.
//
// The text format is the one the printer writes and parse_jaxpr reads, so a saved program is readable
// by eye (`graft-run --print model.graft`) and there is one reader to keep correct (it is fuzzed and
// golden-tested). Before a program is accepted for export it is printed and parsed back and the two
// are compared equation by equation: what cannot be written exactly is refused at export time, never
// discovered when the file is loaded.
#include "graft/io/export.h"

#include <nlohmann/json.hpp>

#include "graft/io/nesting.h"

#include "graft/compiler/jaxpr_text.h"
#include "graft/io/safetensors.h"
#include "graft/nn/nn.h"
#include "graft/transforms/control.h"
#include "graft/transforms/custom.h"
#include "graft/transforms/jit.h"

namespace graft {

namespace {

constexpr const char* kFormat = "graft.format";
constexpr const char* kFormatName = "exported program";
constexpr const char* kVersion = "graft.format_version";

std::string printed(const ParamValue& v) {
  std::ostringstream os;
  print_param_value(os, v);
  return os.str();
}

// The program without what only this process has: a custom_jvp / custom_vjp call becomes a jit call
// of its primal function (the rules are C++ closures); recursive calls and custom backward passes
// cannot be written at all.
JaxprPtr portable(const ClosedJaxpr& j, const std::string& program);

ParamValue portable_value(const ParamValue& v, const std::string& program) {
  if (auto* jp = std::get_if<JaxprPtr>(&v)) return *jp ? portable(**jp, program) : *jp;
  if (auto* list = std::get_if<JaxprList>(&v)) {
    JaxprList out;
    for (auto& s : *list) out.push_back(s ? portable(*s, program) : s);
    return out;
  }
  return v;
}

JaxprPtr portable(const ClosedJaxpr& j, const std::string& program) {
  auto out = std::make_shared<Jaxpr>(*j.jaxpr);
  for (Eqn& e : out->eqns) {
    if (e.prim == &custom_jvp_call_p || e.prim == &custom_vjp_call_p) {
      bool jvp = e.prim == &custom_jvp_call_p;
      const ParamValue* rule = e.params.find(jvp ? "jvp_jaxpr_fun" : "rule");
      std::string name = std::string(jvp ? "custom_jvp:" : "custom_vjp:") + (rule ? printed(*rule) : "");
      e.params = Params{{"jaxpr", portable(e.params.get_jaxpr("call_jaxpr"), program)}, {"name", name}};
      e.prim = &jit_p;
      continue;
    }
    if (e.prim == &custom_lin_p)
      fail<NotImplementedError>("export(", program, "): the program runs the backward rule of a custom_vjp function (",
                                printed(*e.params.find("rule")), "), a C++ function that cannot be saved; export the "
                                "function itself and differentiate the loaded program");
    if (e.prim == &call_p)
      fail<NotImplementedError>("export(", program, "): the program calls the recursive function ",
                                printed(*e.params.find("callee")), "; recursive functions cannot be exported");
    Params p;
    for (auto& [k, v] : e.params) p.set(k, portable_value(v, program));
    e.params = std::move(p);
  }
  return std::make_shared<const ClosedJaxpr>(std::move(out), j.consts);
}

std::string types_json(const std::vector<Aval>& avals) {
  nlohmann::json a = nlohmann::json::array();
  for (auto& v : avals) a.push_back(v.str() + (v.weak_type ? "~" : ""));
  return a.dump();
}

std::vector<std::string> default_names(const char* stem, size_t n) {
  std::vector<std::string> names;
  for (size_t i = 0; i < n; ++i) names.push_back(stem + std::to_string(i));
  return names;
}

void check_names(const std::string& program, const char* what, const std::vector<std::string>& names, size_t n) {
  if (names.size() != n)
    fail<ValueError>("export(", program, "): ", names.size(), " ", what, " names for ", n, " ", what, "s");
  for (size_t i = 0; i < names.size(); ++i)
    for (size_t k = 0; k < i; ++k)
      if (names[i] == names[k]) fail<ValueError>("export(", program, "): the ", what, " name '", names[i], "' is used twice");
}

[[noreturn]] void corrupt(const std::string& path, const std::string& why) {
  fail<IOError>("load_exported: ", path, ": ", why);
}

std::vector<std::string> string_list(const std::string& path, const io::Metadata& meta, const char* key) {
  auto it = meta.find(key);
  if (it == meta.end()) corrupt(path, std::string("the metadata has no '") + key + "'");
  if (io::nesting_depth(it->second, 1) > 1) corrupt(path, std::string("'") + key + "' is not a list of strings (it nests)");
  try {
    auto j = nlohmann::json::parse(it->second);
    std::vector<std::string> out;
    for (auto& s : j) out.push_back(s.get<std::string>());
    return out;
  } catch (const nlohmann::json::exception&) {
    corrupt(path, std::string("'") + key + "' is not a list of strings");
  }
}

}  // namespace

Exported Exported::from_jaxpr(const ClosedJaxpr& program, const ExportOptions& options) {
  return make(program, options, true);
}

Exported Exported::make(const ClosedJaxpr& program, const ExportOptions& options, bool check) {
  register_transform_primitives();  // the text names them; custom calls become jit calls here
  Exported e;
  e.name_ = options.name;
  e.program_ = portable(program, options.name);
  e.in_avals_ = program.in_avals();
  e.out_avals_ = program.out_avals();
  for (size_t i = 0; i < e.in_avals_.size(); ++i) e.in_avals_[i].weak_type = program.jaxpr->invars[i]->aval.weak_type;
  for (auto& c : jaxpr_constants(*e.program_))
    if (!c.is_concrete())
      fail<ValueError>("export(", options.name, "): the function captured a traced value (", c.aval().str(),
                       "); export it outside of transformations");
  e.in_names_ = options.in_names.empty() ? default_names("input", e.in_avals_.size()) : options.in_names;
  e.out_names_ = options.out_names.empty() ? default_names("output", e.out_avals_.size()) : options.out_names;
  check_names(e.name_, "input", e.in_names_, e.in_avals_.size());
  check_names(e.name_, "output", e.out_names_, e.out_avals_.size());
  if (!check) return e;
  // the program must survive its text exactly (see the file comment)
  std::string text = e.program_->str();
  try {
    ClosedJaxpr back = parse_jaxpr(text, jaxpr_constants(*e.program_));
    std::string why;
    if (!same_program(*e.program_, back, &why))
      fail<NotImplementedError>("export(", options.name, "): the program does not read back from its text (", why, ")");
  } catch (const ValueError& err) {
    fail<NotImplementedError>("export(", options.name, "): the program cannot be written as text: ", err.what());
  }
  return e;
}

std::vector<Array> Exported::call(std::span<const Array> args) const {
  if (args.size() != in_avals_.size())
    fail<ValueError>("exported program '", name_, "' takes ", in_avals_.size(), " arrays, got ", args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].valid()) fail<ValueError>("exported program '", name_, "': input ", i, " (", in_names_[i], ") is null");
    if (!args[i].aval().same_type(in_avals_[i]))
      fail<TypeError>("exported program '", name_, "': input ", i, " (", in_names_[i], ") has type ",
                      args[i].aval().str(), ", the program was exported for ", in_avals_[i].str());
  }
  Arrays out = jit_call(program_, args, name_);
  return std::vector<Array>(out.begin(), out.end());
}

std::string Exported::serialize() const {
  io::TensorMap tensors;
  std::vector<Array> consts = jaxpr_constants(*program_);
  for (size_t i = 0; i < consts.size(); ++i) tensors["const." + std::to_string(i)] = consts[i];
  nlohmann::json in_names(in_names_), out_names(out_names_);
  io::Metadata meta{{kFormat, kFormatName},
                    {kVersion, std::to_string(kExportFormatVersion)},
                    {"graft.name", name_},
                    {"graft.jaxpr", program_->str()},
                    {"graft.in_types", types_json(in_avals_)},
                    {"graft.out_types", types_json(out_avals_)},
                    {"graft.in_names", in_names.dump()},
                    {"graft.out_names", out_names.dump()},
                    {"graft.num_consts", std::to_string(consts.size())}};
  // safetensors wants a file; write to memory through the same writer the checkpoints use
  return io::tensors_to_bytes(tensors, meta);
}

void Exported::save(const std::string& path) const { io::write_file_atomic(path, serialize()); }

Exported deserialize_exported(const std::string& bytes, const std::string& path) {
  io::Metadata meta;
  io::TensorMap tensors = io::load_tensors_from_bytes(bytes, &meta, path);
  auto get = [&](const char* key) -> const std::string& {
    auto it = meta.find(key);
    if (it == meta.end()) corrupt(path, std::string("the metadata has no '") + key + "'");
    return it->second;
  };
  auto fmt = meta.find(kFormat);
  if (fmt == meta.end() || fmt->second != kFormatName)
    corrupt(path, "not an exported graft program (a safetensors file without graft.format = 'exported program' in "
                  "its metadata)");
  const std::string& vs = get(kVersion);
  int version = 0;
  try {
    size_t used = 0;
    version = std::stoi(vs, &used);
    if (used != vs.size()) throw std::invalid_argument(vs);
  } catch (const std::exception&) {
    corrupt(path, "the format version '" + vs + "' is not a number");
  }
  if (version > kExportFormatVersion)
    corrupt(path, "written in format version " + std::to_string(version) + " by a newer graft; this graft reads version " +
                      std::to_string(kExportFormatVersion) + " (upgrade graft, or export the program again with this one)");
  if (version < kExportFormatVersion)
    corrupt(path, "written in format version " + std::to_string(version) + " by an older graft; this graft reads version " +
                      std::to_string(kExportFormatVersion) + " (export the program again)");
  size_t n = 0;
  try {
    n = std::stoul(get("graft.num_consts"));
  } catch (const std::exception&) {
    corrupt(path, "graft.num_consts is not a number");
  }
  if (n != tensors.size())
    corrupt(path, "the metadata lists " + std::to_string(n) + " constants, the file holds " + std::to_string(tensors.size()));
  std::vector<Array> consts;
  for (size_t i = 0; i < n; ++i) {
    auto it = tensors.find("const." + std::to_string(i));
    if (it == tensors.end()) corrupt(path, "constant " + std::to_string(i) + " is missing");
    consts.push_back(it->second);
  }
  ExportOptions opts;
  opts.name = get("graft.name");
  opts.in_names = string_list(path, meta, "graft.in_names");
  opts.out_names = string_list(path, meta, "graft.out_names");
  ClosedJaxpr program;
  register_transform_primitives();  // a fresh process may not have used them yet
  nn::register_nn_primitives();
  try {
    program = parse_jaxpr(get("graft.jaxpr"), consts);
  } catch (const ValueError& e) {
    corrupt(path, std::string("its program does not read: ") + e.what());
  }
  if (opts.in_names.size() != program.jaxpr->invars.size() || opts.out_names.size() != program.jaxpr->outvars.size())
    corrupt(path, "the input and output names do not match the program");
  // read from its own text: no need to check that it reads back
  Exported e = Exported::make(program, opts, false);
  // weak types are not part of the text: the header has them
  auto types = string_list(path, meta, "graft.in_types");
  for (size_t i = 0; i < types.size() && i < e.in_avals_.size(); ++i)
    if (!types[i].empty() && types[i].back() == '~') e.in_avals_[i].weak_type = true;
  return e;
}

Exported load_exported(const std::string& path) { return deserialize_exported(io::read_file(path), path); }

}  // namespace graft
