// graft-run: runs an exported program (a .graft file, see graft/io/export.h) on arrays from a file.
//
//   graft-run model.graft --input x.safetensors --output y.safetensors
//   graft-run model.graft --input x.npz --output y.npz          (NumPy's files work too)
//   graft-run model.graft --input x.safetensors --expect y.safetensors   (exit status 1 on a difference)
//   graft-run model.graft --print                                (the program's signature and jaxpr)
//   graft-run model.graft --onnx model.onnx                       (the program as an ONNX model)
//   graft-run model.graft --input many.npy --split-batch          (any number of rows, in calls of the
//                                                                  program's batch size)
//
// Inputs are matched to the program's inputs by name; a file holding a single array may feed a
// program with a single input whatever its name. Outputs are written under the program's output names.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "graft/graft.h"

namespace {
namespace g = graft;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

g::io::TensorMap read_arrays(const std::string& path) {
  if (ends_with(path, ".npz")) return g::io::load_npz(path);
  if (ends_with(path, ".npy")) return {{"", g::io::load_npy(path)}};
  return g::io::load_tensors(path);
}

void write_arrays(const std::string& path, const g::io::TensorMap& arrays) {
  if (ends_with(path, ".npz")) {
    g::io::save_npz(path, arrays);
  } else if (ends_with(path, ".npy")) {
    if (arrays.size() != 1) throw g::ValueError("--output " + path + ": a .npy file holds one array, the program has " +
                                                std::to_string(arrays.size()) + " outputs (write .npz or .safetensors)");
    g::io::save_npy(path, arrays.begin()->second);
  } else {
    g::io::save_tensors(path, arrays);
  }
}

std::string signature(const g::Exported& m) {
  std::string s = m.name() + "(";
  for (size_t i = 0; i < m.in_avals().size(); ++i)
    s += (i ? ", " : "") + m.in_names()[i] + ": " + m.in_avals()[i].str();
  s += ") -> (";
  for (size_t i = 0; i < m.out_avals().size(); ++i)
    s += (i ? ", " : "") + m.out_names()[i] + ": " + m.out_avals()[i].str();
  return s + ")";
}

// Bit-for-bit unless a tolerance is given; returns a description of the first difference.
std::string compare(const g::Array& got, const g::Array& want, double rtol, double atol) {
  if (got.shape() != want.shape() || got.dtype() != want.dtype())
    return "has type " + got.aval().str() + ", expected " + want.aval().str();
  if (rtol == 0 && atol == 0) {
    if (std::memcmp(got.raw_data(), want.raw_data(), got.nbytes()) == 0) return "";
  }
  auto a = got.to_vector<double>(), b = want.to_vector<double>();
  size_t bad = 0, first = 0;
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    bool same_nan = std::isnan(a[i]) && std::isnan(b[i]);
    bool ok = same_nan || (rtol == 0 && atol == 0 ? a[i] == b[i] : std::fabs(a[i] - b[i]) <= atol + rtol * std::fabs(b[i]));
    if (!ok) {
      if (!bad) first = i;
      ++bad;
      worst = std::max(worst, std::fabs(a[i] - b[i]));
    }
  }
  if (!bad && rtol == 0 && atol == 0) return "differs in its bits (e.g. -0.0 vs 0.0 or NaN payloads)";
  if (!bad) return "";
  return std::to_string(bad) + " of " + std::to_string(a.size()) + " elements differ (first at flat index " +
         std::to_string(first) + ": " + std::to_string(a[first]) + " vs " + std::to_string(b[first]) +
         "; largest difference " + std::to_string(worst) + ")";
}

// Calls of the program on consecutive blocks of rows (see --split-batch).
std::vector<g::Array> split_batch(const g::Exported& m, const std::vector<g::Array>& args) {
  if (args.empty() || m.in_avals()[0].shape.empty())
    throw g::ValueError("--split-batch: the program's first input has no rows (" + signature(m) + ")");
  int64_t b = m.in_avals()[0].shape[0], n = args[0].ndim() ? args[0].shape(0) : -1;
  std::vector<bool> rows(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const g::Aval& want = m.in_avals()[i];
    rows[i] = !want.shape.empty() && want.shape[0] == b && args[i].ndim() == static_cast<int64_t>(want.shape.size()) &&
              args[i].shape(0) == n;
    g::Shape rest_a(args[i].shape().begin() + (rows[i] ? 1 : 0), args[i].shape().end());
    g::Shape rest_w(want.shape.begin() + (rows[i] ? 1 : 0), want.shape.end());
    if (rest_a != rest_w || args[i].dtype() != want.dtype)
      throw g::TypeError("--split-batch: input '" + m.in_names()[i] + "' has type " + args[i].aval().str() +
                         ", the program takes " + want.str() + " (any number of rows)");
  }
  std::vector<std::vector<g::Array>> parts;
  for (int64_t start = 0; start < n; start += b) {
    int64_t len = std::min(b, n - start);
    std::vector<g::Array> call;
    for (size_t i = 0; i < args.size(); ++i) {
      if (!rows[i]) {
        call.push_back(args[i]);
        continue;
      }
      g::Array block = args[i][{g::slice(start, start + len)}];
      if (len < b) {
        std::vector<std::pair<int64_t, int64_t>> widths(static_cast<size_t>(block.ndim()), {0, 0});
        widths[0] = {0, b - len};
        block = g::pad(block, widths);
      }
      call.push_back(block);
    }
    std::vector<g::Array> out = m(call);
    for (auto& o : out)
      if (o.ndim() && o.shape(0) == b) o = o[{g::slice(0, len)}];
    parts.push_back(out);
  }
  if (parts.empty()) throw g::ValueError("--split-batch: the inputs have no rows");
  std::vector<g::Array> joined;
  for (size_t k = 0; k < parts[0].size(); ++k) {
    std::vector<g::Array> pieces;
    for (auto& p : parts) pieces.push_back(p[k]);
    bool per_row = m.out_avals()[k].shape.size() > 0 && m.out_avals()[k].shape[0] == b;
    if (!per_row)
      throw g::ValueError("--split-batch: output '" + m.out_names()[k] + "' (" + m.out_avals()[k].str() +
                          ") has no row per input row; only programs whose outputs are per row can be split");
    joined.push_back(g::concatenate(pieces, 0));
  }
  return joined;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Run an exported graft program (.graft) on arrays from a safetensors, .npz or .npy file"};
  std::string model, input, output, expect;
  bool print = false;
  double rtol = 0, atol = 0;
  app.add_option("model", model, "the exported program (graft::export_fn(...).save)")->required();
  app.add_option("--input,-i", input, "the inputs: .safetensors, .npz or .npy, arrays named as the program's inputs");
  app.add_option("--output,-o", output, "where to write the outputs (.safetensors, .npz or .npy)");
  app.add_option("--expect", expect, "compare the outputs with this file's arrays (exit status 1 on a difference)");
  app.add_option("--rtol", rtol, "relative tolerance of --expect (default: bit for bit)")->check(CLI::NonNegativeNumber);
  app.add_option("--atol", atol, "absolute tolerance of --expect")->check(CLI::NonNegativeNumber);
  app.add_flag("--print", print, "print the program's signature and jaxpr");
  std::string onnx;
  app.add_option("--onnx", onnx, "write the program as an ONNX model (opset 17) to this file");
  bool split = false;
  app.add_flag("--split-batch", split,
               "run inputs with any number of rows in calls of the program's batch size (the leading dimension "
               "of its first input), the last one padded with zeros, and join the outputs' rows: for programs "
               "whose rows are independent, such as a classifier");
  CLI11_PARSE(app, argc, argv);
  try {
    g::Exported m = g::load_exported(model);
    if (print) std::printf("%s\n%s\n", signature(m).c_str(), m.jaxpr().str().c_str());
    if (!onnx.empty()) {
      g::io::save_onnx(onnx, m);
      std::printf("wrote %s\n", onnx.c_str());
    }
    if (input.empty() && !m.in_avals().empty()) {
      if (print || !onnx.empty()) return 0;
      throw g::ValueError("the program takes inputs " + signature(m) + "; give them with --input");
    }
    g::io::TensorMap given = input.empty() ? g::io::TensorMap{} : read_arrays(input);
    std::vector<g::Array> args;
    for (size_t i = 0; i < m.in_names().size(); ++i) {
      auto it = given.find(m.in_names()[i]);
      if (it == given.end() && given.size() == 1 && m.in_names().size() == 1) it = given.begin();
      if (it == given.end()) {
        std::string names;
        for (auto& [k, v] : given) names += (names.empty() ? "" : ", ") + (k.empty() ? "<unnamed>" : k);
        throw g::ValueError("--input " + input + " has no array '" + m.in_names()[i] + "' (it has " +
                            (names.empty() ? "none" : names) + "); the program is " + signature(m));
      }
      args.push_back(it->second);
    }
    std::vector<g::Array> outs = split ? split_batch(m, args) : m(args);
    g::io::TensorMap results;
    for (size_t i = 0; i < outs.size(); ++i) results[m.out_names()[i]] = outs[i].concretize("graft-run");
    if (!output.empty()) write_arrays(output, results);
    if (output.empty() && expect.empty())
      for (auto& [k, v] : results) std::cout << k << " = " << v << "\n";
    if (!expect.empty()) {
      g::io::TensorMap want = read_arrays(expect);
      int bad = 0;
      for (auto& [k, v] : results) {
        auto it = want.find(k);
        if (it == want.end()) continue;
        std::string diff = compare(v, it->second, rtol, atol);
        if (!diff.empty()) {
          std::fprintf(stderr, "output '%s' %s\n", k.c_str(), diff.c_str());
          ++bad;
        }
      }
      size_t matched = 0;
      for (auto& [k, v] : results) matched += want.count(k);
      if (matched == 0) throw g::ValueError("--expect " + expect + " has none of the program's outputs");
      if (bad) return 1;
      std::printf("%zu output(s) match %s\n", matched, expect.c_str());
    }
    return 0;
  } catch (const g::Error& e) {
    std::fprintf(stderr, "graft-run: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "graft-run: %s\n", e.what());
    return 1;
  }
}
