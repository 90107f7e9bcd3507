#include "graft/compiler/pipeline.h"
#include "graft/core/env.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "graft/compiler/passes/passes.h"
#include "graft/compiler/target.h"
#include "graft/core/error.h"

namespace graft::compiler {

const std::vector<Pass>& pipeline() {
  static const std::vector<Pass> passes = {
      {"inline", "flatten nested calls into one program", &passes::inline_calls},
      {"simplify", "algebraic identities and chains of layout operations", &passes::simplify},
      {"fold_constants", "evaluate what is known before the program runs", &passes::fold_constants},
      {"cse", "compute repeated subexpressions once", &passes::eliminate_common_subexpressions},
      {"dce", "drop results nothing reads", &passes::eliminate_dead_code},
      {"widen_half_products", "half-precision products in f32 where the CPU has no bf16 dot products",
       &passes::widen_half_products, true},
      {"accumulate_dots", "add scaled products into values of their type in one GEMM", &passes::accumulate_dots,
       true},
      {"gemm_epilogues", "fold bias adds into their products, pair weight and bias gradients", &passes::gemm_epilogues,
       true},
      {"fuse", "group elementwise chains and row reductions into fused loops", &passes::fuse},
      {"dce", "drop what fusion left unused", &passes::eliminate_dead_code},
  };
  return passes;
}

const Pass& pass_named(const std::string& name) {
  std::string known;
  for (auto& p : pipeline()) {
    if (name == p.name) return p;
    known += std::string(known.empty() ? "" : ", ") + p.name;
  }
  fail<ValueError>("compiler: no pass named '", name, "' (passes: ", known, ")");
}

namespace {

bool default_verify() {
#ifdef NDEBUG
  return env::flag("GRAFT_VERIFY_IR");
#else
  return true;
#endif
}

void check(const ClosedJaxpr& j, const char* pass) {
  try {
    verify(*j.jaxpr);
  } catch (const Error& e) {
    fail<ValueError>("compiler: the IR is invalid after pass '", pass, "': ", e.what());
  }
}

// Written to a temporary name and renamed, so that a reader never sees half a file.
void dump(const std::string& dir, const std::string& program, int index, const char* pass, const ClosedJaxpr& j) {
  static std::atomic<int> serial{0};
  std::filesystem::create_directories(dir);
  char idx[16];
  std::snprintf(idx, sizeof idx, "%02d", index);
  std::string base = dir + "/" + program + "." + idx + "." + pass + ".txt";
  std::string tmp = base + ".tmp" + std::to_string(serial++);
  {
    std::ofstream f(tmp);
    f << j << "\n";
  }
  std::filesystem::rename(tmp, base);
}

std::string dump_name(const std::string& name) {
  // one file set per compiled program: name.<n>
  static std::atomic<int> programs{0};
  std::string safe;
  for (char ch : name) safe += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_') ? ch : '_';
  return safe + "." + std::to_string(programs++);
}

}  // namespace

namespace {

// GRAFT_SKIP_PASSES=accumulate_dots,cse: passes left out (to measure what one buys, or to work
// around one); every name must be a pass's.
std::vector<std::string> skipped_passes() {
  std::vector<std::string> names;
  const char* e = std::getenv("GRAFT_SKIP_PASSES");
  std::stringstream ss(e ? e : "");
  for (std::string name; std::getline(ss, name, ',');)
    if (!name.empty()) names.push_back(pass_named(name).name);
  return names;
}

}  // namespace

ClosedJaxpr optimize(const ClosedJaxpr& j, const OptimizeOptions& opts) {
  bool verify_each = opts.verify || default_verify();
  std::vector<std::string> skip = skipped_passes();
  const char* dir = std::getenv("GRAFT_DUMP_IR");
  std::string program = dir && *dir ? dump_name(opts.name) : "";
  if (!program.empty()) dump(dir, program, 0, "input", j);
  ClosedJaxpr cur = j;
  int index = 1;
  const std::vector<std::string> wanted = opts.passes ? *opts.passes : target_of(opts.device_type).passes;
  TargetScope for_target(opts.device_type);  // the fuse pass asks it what the generator compiles
  for (const std::string& name : wanted)
    if (!pass_named(name).per_target) fail<ValueError>("compiler: pass '", name, "' is not a per-target pass");
  for (const Pass& p : pipeline()) {
    if (std::find(skip.begin(), skip.end(), p.name) != skip.end() ||
        (p.per_target && std::find(wanted.begin(), wanted.end(), p.name) == wanted.end())) {
      ++index;
      continue;
    }
    cur = p.run(cur);
    if (verify_each) check(cur, p.name);
    if (!program.empty()) dump(dir, program, index, p.name, cur);
    ++index;
  }
  return cur;
}

ClosedJaxpr run_pass(const std::string& name, const ClosedJaxpr& j) {
  const Pass& p = pass_named(name);
  ClosedJaxpr out = p.run(j);
  check(out, p.name);
  return out;
}

}  // namespace graft::compiler
