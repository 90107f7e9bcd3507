// Every conformance row (tests/prims) as an exported program, reloaded in a fresh process:
//   export_rows write DIR   traces each row in each of its value dtypes, saves DIR/<row>.<dtype>.graft and
//                           the inputs with the eager and the jitted outputs (DIR/<row>.<dtype>.io.safetensors)
//   export_rows check DIR   loads every program without the code that traced it and compares, bit for bit,
//                           its op-by-op evaluation with the eager outputs and its compiled call with the
//                           jitted ones
// The ctest entry export_rows runs both, as two processes.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>

#include "graft/io/export.h"
#include "prims/conformance.h"

namespace graft::testing {
std::vector<Case> elementwise_cases();
std::vector<Case> structural_cases();
std::vector<Case> collective_cases();
std::vector<Case>
complex_cases();  // (structural_cases holds the linear-algebra rows, complex_cases their complex ones)
}  // namespace graft::testing

namespace {
using namespace graft;
using namespace graft::testing;
namespace fs = std::filesystem;

bool same_bits(const Array& a, const Array& b) {
  if (!a.aval().same_type(b.aval())) return false;
  Array x = a.concretize("export_rows"), y = b.concretize("export_rows");
  return std::memcmp(x.raw_data(), y.raw_data(), x.nbytes()) == 0;
}

// safetensors has no complex128: complex arrays are stored as their parts ("<key>.re", "<key>.im"),
// which round trip bit for bit.
void put(io::TensorMap& t, const std::string& key, const Array& x) {
  if (!is_complex(x.dtype())) {
    t[key] = x;
    return;
  }
  t[key + ".re"] = lax::real(x);
  t[key + ".im"] = lax::imag(x);
}
bool has(const io::TensorMap& t, const std::string& key) { return t.count(key) || t.count(key + ".re"); }
Array get(const io::TensorMap& t, const std::string& key) {
  if (t.count(key)) return t.at(key);
  return lax::complex(t.at(key + ".re"), t.at(key + ".im"));
}

int write(const fs::path& dir) {
  fs::create_directories(dir);
  std::vector<Case> cases = elementwise_cases();
  for (auto& more : {structural_cases(), collective_cases(), complex_cases()})
    cases.insert(cases.end(), more.begin(), more.end());
  size_t n = 0;
  std::set<std::string> seen;
  for (const Case& c : cases) {
    for (DType d : c.value_dtypes) {
      if (!seen.insert(c.name + "." + std::string(short_name(d))).second) {  // one would overwrite the other
        std::cerr << "export_rows: two rows named " << c.name << " in " << short_name(d) << "\n";
        return 1;
      }
      Rng rng(1);
      Inputs in = c.inputs(rng, d);
      FlatFn f = [&c](const Inputs& x) { return run_case(c, x); };
      std::vector<Aval> avals;
      for (auto& x : in) avals.push_back(x.aval());
      std::string name = c.name + "." + std::string(short_name(d));
      Exported e = Exported::from_jaxpr(make_jaxpr_flat(f, avals), {.name = name});
      e.save((dir / (name + ".graft")).string());
      Inputs eager = f(in);
      Inputs jitted = jit(f)(in);
      io::TensorMap t;
      for (size_t i = 0; i < in.size(); ++i) put(t, "in." + std::to_string(i), in[i]);
      for (size_t i = 0; i < eager.size(); ++i) put(t, "eager." + std::to_string(i), eager[i]);
      for (size_t i = 0; i < jitted.size(); ++i) put(t, "jit." + std::to_string(i), jitted[i]);
      io::save_tensors((dir / (name + ".io.safetensors")).string(), t);
      ++n;
    }
  }
  std::ofstream(dir / "count") << n << "\n";
  std::cout << "exported " << n << " programs (" << cases.size() << " rows) to " << dir << "\n";
  return 0;
}

int check(const fs::path& dir) {
  size_t expected = 0;
  std::ifstream(dir / "count") >> expected;
  size_t n = 0, bad = 0;
  for (auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".graft") continue;
    std::string name = entry.path().stem().string();
    auto fail = [&](const std::string& why) {
      std::cerr << name << ": " << why << "\n";
      ++bad;
    };
    try {
      Exported m = load_exported(entry.path().string());
      io::TensorMap t = io::load_tensors((dir / (name + ".io.safetensors")).string());
      auto list = [&](const std::string& stem) {
        std::vector<Array> v;
        for (size_t i = 0; has(t, stem + std::to_string(i)); ++i)
          v.push_back(get(t, stem + std::to_string(i)));
        return v;
      };
      Inputs in = list("in."), eager = list("eager."), jitted = list("jit.");
      Arrays op_by_op = eval_jaxpr(m.jaxpr(), in);
      std::vector<Array> compiled = m(in);
      if (op_by_op.size() != eager.size() || compiled.size() != jitted.size()) {
        fail("the loaded program has another number of outputs");
      } else {
        for (size_t k = 0; k < eager.size(); ++k) {
          if (!same_bits(op_by_op[k], eager[k])) fail("op by op, output " + std::to_string(k) + " differs");
          if (!same_bits(compiled[k], jitted[k])) fail("compiled, output " + std::to_string(k) + " differs");
        }
      }
    } catch (const std::exception& e) {
      fail(e.what());
    }
    ++n;
  }
  std::cout << "checked " << n << " programs, " << bad << " differences\n";
  if (n != expected || n == 0) {
    std::cerr << "expected " << expected << " programs\n";
    return 1;
  }
  return bad ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || (std::string(argv[1]) != "write" && std::string(argv[1]) != "check")) {
    std::cerr << "usage: export_rows write|check DIR\n";
    return 2;
  }
  try {
    return std::string(argv[1]) == "write" ? write(argv[2]) : check(argv[2]);
  } catch (const std::exception& e) {
    std::cerr << "export_rows: " << e.what() << "\n";
    return 1;
  }
}
