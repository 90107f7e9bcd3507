// Programs as artifacts: a traced function saved to a file and called in another process (JAX's
// jax.export, TensorFlow's SavedModel) without the C++ source that traced it.
//
//   auto predict = [&](const Array& x) { return model(params, x); };
//   Exported e = export_fn(jit(predict), {.name = "predict", .in_names = {"images"}})(x);
//   e.save("model.graft");
//   ...                                                  // another process:
//   Exported m = load_exported("model.graft");
//   Array y = m({x})[0];                                 // runs compiled, like a jit call
//   auto g = grad([&](const Array& x) { return sum(m({x})[0]); })(x);  // derivatives from the rules
//
// A .graft file is a safetensors file (any safetensors reader lists its constants): the program's
// jaxpr in graft's text format (graft/compiler/jaxpr_text.h) and the format version in its metadata, and
// the jaxpr's constants (the values the function captured: a model's weights) as tensors. Calling an
// Exported binds the jit primitive on the program, so it composes with jit, vmap, grad, jvp and
// vjp like a jitted function. Inputs and outputs are flat lists of arrays.
//
// Custom derivative rules (custom_jvp / custom_vjp) are C++ functions and cannot be saved: their
// primal functions are, and the reloaded program is differentiated through them. Recursive functions
// (graft::Recursive) and shard_map over processes cannot be exported (NotImplementedError).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "graft/ir/jaxpr.h"
#include "graft/transforms/api.h"

namespace graft {

/// The version of the .graft format this build writes, and the only one it reads.
inline constexpr int kExportFormatVersion = 1;

struct ExportOptions {
  /// The program's name (in jaxprs, errors and GRAFT_LOG_COMPILES).
  std::string name = "exported";
  /// Names of the flat inputs and outputs (graft-run matches safetensors tensors by them); default
  /// "input0", "input1", ... and "output0", ...
  std::vector<std::string> in_names, out_names;
};

/// A program with its constants, its input and output types and names.
class Exported {
 public:
  /// Wraps a traced program (make_jaxpr's result) for saving: custom derivative rules are replaced
  /// by their primal functions, and the program is checked to read back from its text.
  static Exported from_jaxpr(const ClosedJaxpr& program, const ExportOptions& options = {});

  const ClosedJaxpr& jaxpr() const { return *program_; }
  const std::string& name() const { return name_; }
  const std::vector<Aval>& in_avals() const { return in_avals_; }
  const std::vector<Aval>& out_avals() const { return out_avals_; }
  const std::vector<std::string>& in_names() const { return in_names_; }
  const std::vector<std::string>& out_names() const { return out_names_; }

  /// Calls the program on arrays of its input types (a TypeError names the input that differs).
  /// Works under every transformation, as a jit call does.
  std::vector<Array> call(std::span<const Array> args) const;
  std::vector<Array> operator()(const std::vector<Array>& args) const { return call(args); }

  /// The bytes of a .graft file.
  std::string serialize() const;
  /// Writes a .graft file atomically.
  void save(const std::string& path) const;

 private:
  friend Exported deserialize_exported(const std::string& bytes, const std::string& path);
  static Exported make(const ClosedJaxpr& program, const ExportOptions& options, bool check);
  JaxprPtr program_;
  std::string name_;
  std::vector<Aval> in_avals_, out_avals_;
  std::vector<std::string> in_names_, out_names_;
};

/// export_fn(f, options)(args...): traces f at the types of `args` (pytrees are flattened, leaf by
/// leaf) into an Exported program. f may be jitted or not; it is traced either way.
template <class F>
auto export_fn(F f, ExportOptions options = {}) {
  return [f, options](const auto&... args) { return Exported::from_jaxpr(make_jaxpr(f)(args...), options); };
}

/// Reads a .graft file's bytes (`path` names it in errors). IOError for a file that is not an
/// exported program, is corrupt, or has another format version (named, with the one this graft reads).
Exported deserialize_exported(const std::string& bytes, const std::string& path = "<memory>");
/// Reads a .graft file.
Exported load_exported(const std::string& path);

}  // namespace graft
