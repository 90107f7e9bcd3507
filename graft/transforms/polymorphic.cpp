// jit's batch polymorphism: bucket choice, padding, the masked programs and their checks per size.
#include "graft/transforms/polymorphic.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <iostream>

#include "graft/core/trace.h"
#include "graft/prims/lax.h"
#include "graft/transforms/flat.h"

namespace graft::detail {

namespace {

std::string trim(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(a, b - a);
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// x padded along `axis` from n to b rows by repeating its last row: the padded rows then compute what a
// real row computes (no division by a zero that the data does not hold), and masking keeps them out
// of everything that combines rows.
Array pad_rows(const Array& x, int64_t axis, int64_t n, int64_t b) {
  Array last = lax::slice_in_dim(x, n - 1, n, 1, axis);
  Shape s = x.shape();
  s[static_cast<size_t>(axis)] = b - n;
  Axes all;
  for (int64_t i = 0; i < x.ndim(); ++i) all.push_back(i);
  Array parts[] = {x, lax::broadcast_in_dim(last, s, all)};
  return lax::concatenate(parts, axis);
}

}  // namespace

BatchSpec BatchSpec::parse(const std::string& text, const std::string& fn, size_t arg, std::string& symbol) {
  BatchSpec s;
  std::string t = trim(text);
  if (t.empty()) return s;
  auto bad = [&](const std::string& why) {
    fail<ValueError>("jit(", fn, "): polymorphic spec \"", text, "\" of argument ", arg, ": ", why,
                     " (write e.g. \"b, ...\" for axis 0 of arrays of any rank, \"(b, 784)\", \"_, b\")");
  };
  if (t.front() == '(') {
    if (t.back() != ')') bad("unbalanced parentheses");
    t = trim(t.substr(1, t.size() - 2));
  }
  size_t pos = 0;
  int batch = 0;
  while (pos <= t.size()) {
    size_t comma = t.find(',', pos);
    std::string d = trim(t.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
    pos = comma == std::string::npos ? t.size() + 1 : comma + 1;
    if (d.empty() && pos > t.size()) break;  // a trailing comma
    if (s.ellipsis) bad("\"...\" must come last");
    if (d == "...") {
      s.ellipsis = true;
    } else if (d == "_") {
      s.dims.push_back(-1);
    } else if (!d.empty() && std::all_of(d.begin(), d.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
      s.dims.push_back(std::stoll(d));
    } else if (!d.empty() && (std::isalpha(static_cast<unsigned char>(d[0])) || d[0] == '_') &&
               std::all_of(d.begin(), d.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; })) {
      if (symbol.empty()) symbol = d;
      if (d != symbol) bad("one batch dimension is supported, and \"" + symbol + "\" is it; \"" + d + "\" is another");
      s.dims.push_back(-2);
      ++batch;
    } else {
      bad("\"" + d + "\" is not a dimension");
    }
  }
  if (batch != 1) bad(batch == 0 ? "it names no batch dimension" : "it names the batch dimension twice");
  return s;
}

int64_t BatchSpec::axis_of(const Aval& a, const std::string& fn, size_t arg) const {
  size_t r = a.shape.size();
  bool fits = ellipsis ? r >= dims.size() : r == dims.size();
  int64_t axis = -1;
  for (size_t i = 0; fits && i < dims.size(); ++i) {
    if (dims[i] == -2) axis = static_cast<int64_t>(i);
    if (dims[i] >= 0 && a.shape[i] != dims[i]) fits = false;
  }
  if (!fits) {
    std::string spec;
    for (size_t i = 0; i < dims.size(); ++i)
      spec += (i ? ", " : "") + (dims[i] == -2 ? std::string("b") : dims[i] == -1 ? "_" : std::to_string(dims[i]));
    if (ellipsis) spec += dims.empty() ? "..." : ", ...";
    fail<ShapeError>("jit(", fn, "): argument ", arg, " has an array ", a.str(), " that does not fit its polymorphic spec (",
                     spec, ")");
  }
  return axis;
}

struct PolyState::Program {
  MaskedProgram masked;
  TreeDef out_def;
  JaxprPtr call;
  std::vector<Array> consts;
  std::shared_ptr<const Executable> exe;
  std::set<int64_t> served, refused;  ///< batch sizes checked, either way
};

PolyState::PolyState(const JitOptions& o) : opts_(o) {
  std::string symbol;
  for (size_t i = 0; i < o.polymorphic.size(); ++i) specs_.push_back(BatchSpec::parse(o.polymorphic[i], o.name, i, symbol));
  for (int64_t b : o.buckets)
    if (b <= 0) fail<ValueError>("jit(", o.name, "): bucket sizes must be positive, got ", b);
  std::sort(opts_.buckets.begin(), opts_.buckets.end());
}

std::vector<int64_t> PolyState::leaf_axes(const std::vector<Array>& leaves, const size_t* offset, const bool* selected,
                                          size_t nargs) const {
  if (specs_.size() > nargs)
    fail<ValueError>("jit(", opts_.name, "): ", specs_.size(), " polymorphic specs for a call with ", nargs, " arguments");
  std::vector<int64_t> axes(leaves.size(), -1);
  for (size_t a = 0; a < specs_.size(); ++a) {
    if (!specs_[a].active()) continue;
    if (!selected[a]) fail<TypeError>("jit(", opts_.name, "): argument ", a, " has a polymorphic spec but holds no arrays");
    for (size_t k = offset[a]; k < offset[a + 1]; ++k) axes[k] = specs_[a].axis_of(leaves[k].aval(), opts_.name, a);
  }
  return axes;
}

bool PolyState::eager_here() {
  Trace* t = current_trace();
  return t == eval_trace() || (t->kind() == "tape" && t->parent() == eval_trace());
}

int64_t PolyState::bucket_for(int64_t n) const {
  for (int64_t b : opts_.buckets)
    if (b >= n) return b;
  return -1;
}

size_t PolyState::num_compiles() const {
  std::lock_guard<std::mutex> lk(mu_);
  return compiles_;
}

std::shared_ptr<PolyState::Program> PolyState::build(const std::vector<Array>& leaves, const std::vector<int64_t>& axes,
                                                     int64_t n, int64_t b, const TraceAt& trace,
                                                     const std::vector<bool>& donated) {
  auto t0 = std::chrono::steady_clock::now();
  int64_t p = n != b ? n : b - 1;  // the second size that shows which dimensions are the batch
  auto avals_at = [&](int64_t size) {
    std::vector<Aval> av;
    for (size_t i = 0; i < leaves.size(); ++i) {
      av.push_back(leaves[i].aval());
      if (axes[i] >= 0) av.back().shape[static_cast<size_t>(axes[i])] = size;
    }
    return av;
  };
  auto prog = std::make_shared<Program>();
  // a size other than the call's that the function does not accept (it reshapes the batch into
  // pairs, say) means it cannot be masked; an error at the call's own size is the caller's
  auto trace_at = [&](int64_t size, TreeDef& def) {
    if (size == n) return trace(avals_at(size), def);
    try {
      return trace(avals_at(size), def);
    } catch (const NotImplementedError&) {
      throw;
    } catch (const Error& e) {
      fail<NotImplementedError>("batch polymorphism: the function does not trace at batch size ", size, ": ", e.what());
    }
  };
  TreeDef def_p;
  ClosedJaxpr jb = trace_at(b, prog->out_def);
  ClosedJaxpr jp = trace_at(p, def_p);
  if (def_p.repr != prog->out_def.repr)
    fail<NotImplementedError>("batch polymorphism: the function returns another structure at batch size ", p);
  for (auto& c : jb.consts)
    if (!c.is_concrete()) fail<NotImplementedError>("batch polymorphism: the function closes over a traced value");
  prog->masked = mask_batch(jb, b, jp, p);
  double trace_ms = ms_since(t0);
  const ClosedJaxpr& mj = prog->masked.jaxpr;
  prog->call = std::make_shared<const ClosedJaxpr>(hoist_consts(*mj.jaxpr), std::vector<Array>{});
  prog->consts = mj.consts;
  std::string name = opts_.name + "@" + std::to_string(b);
  if (std::find(donated.begin(), donated.end(), true) != donated.end()) {
    std::vector<bool> d(prog->consts.size(), false);
    d.insert(d.end(), donated.begin(), donated.end());
    d.push_back(false);  // n
    prog->exe = std::make_shared<const Executable>(*prog->call, name, std::move(d));
  } else {
    prog->exe = std::shared_ptr<const Executable>(prog->call, &Executable::of(*prog->call, name));
  }
  prog->served = {b, p};
  if (log_compiles()) {
    const auto& st = prog->exe->stats();
    std::cerr << "graft: jit(" << opts_.name << "): batch " << n << " compiles the program of bucket " << b
              << ", masked for every batch up to " << b << " [traces at " << b << " and " << p << ", masking "
              << trace_ms << " ms; " << (st.cached_program ? "cached program " : "optimize ") << st.optimize_ms
              << " ms, kernels " << st.kernels_ms << " ms]\n";
  }
  return prog;
}

std::optional<PolyState::Result> PolyState::call(const std::string& key, const std::vector<Array>& leaves,
                                                 const std::vector<int64_t>& axes, const TraceAt& trace,
                                                 const std::vector<bool>& donated) {
  int64_t n = -1;
  size_t first = 0;
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (axes[i] < 0) continue;
    int64_t d = leaves[i].shape()[static_cast<size_t>(axes[i])];
    if (n < 0) {
      n = d;
      first = i;
    } else if (d != n) {
      fail<ShapeError>("jit(", opts_.name, "): the batch dimension is ", n, " in array ", first, " of the call (",
                       leaves[first].aval().str(), ") but ", d, " in array ", i, " (", leaves[i].aval().str(), ")");
    }
  }
  if (n <= 0) return std::nullopt;  // no batch, or an empty one: jit's exact path
  int64_t cfg = bucket_for(n);  // the configured bucket that holds n, or -1
  // the family: the call's structure and types with the batch dimension left out
  std::string fkey = key;
  fkey.push_back(detail::config_key_byte());  // x64 and the threefry mode change what a trace makes
  for (size_t i = 0; i < leaves.size(); ++i) {
    Shape s = leaves[i].shape();
    if (axes[i] >= 0) s[static_cast<size_t>(axes[i])] = -1;
    fkey += std::to_string(static_cast<int>(leaves[i].dtype())) + (leaves[i].weak_type() ? "~" : "") + "[";
    for (auto d : s) fkey += std::to_string(d) + ",";
    fkey += "]";
  }
  std::shared_ptr<Program> prog;
  {
    std::lock_guard<std::mutex> lk(mu_);
    Family& fam = families_[fkey];
    if (!fam.refused.empty()) return std::nullopt;
    // a batch runs in the smallest compiled bucket that holds it (up to the configured one)
    for (auto& [size, pr] : fam.buckets)
      if (size >= n && (cfg < 0 || size <= cfg)) {
        prog = pr;
        break;
      }
  }
  int64_t b = cfg > 0 ? cfg : n;
  if (!prog) {
    if (b == 1) return std::nullopt;  // one row: nothing to mask
    try {
      prog = build(leaves, axes, n, b, trace, donated);
    } catch (const NotImplementedError& e) {
      if (log_compiles())
        std::cerr << "graft: jit(" << opts_.name << "): cannot serve several batch sizes with one program, so each size "
                  << "compiles: " << e.what() << "\n";
      std::lock_guard<std::mutex> lk(mu_);
      families_[fkey].refused = e.what();
      return std::nullopt;
    }
    std::lock_guard<std::mutex> lk(mu_);
    families_[fkey].buckets[b] = prog;
    ++compiles_;
  }
  b = prog->masked.bucket;
  bool served, refused;
  {
    std::lock_guard<std::mutex> lk(mu_);
    served = prog->served.count(n) > 0;
    refused = prog->refused.count(n) > 0;
  }
  if (refused) return std::nullopt;
  if (!served) {
    auto t0 = std::chrono::steady_clock::now();
    std::vector<Aval> av;
    for (size_t i = 0; i < leaves.size(); ++i) av.push_back(leaves[i].aval());
    try {
      TreeDef def;
      ClosedJaxpr jn = trace(av, def);
      if (def.repr != prog->out_def.repr)
        fail<NotImplementedError>("batch polymorphism: the function returns another structure at batch size ", n);
      check_batch_size(prog->masked, jn, n);
    } catch (const NotImplementedError& e) {
      if (log_compiles())
        std::cerr << "graft: jit(" << opts_.name << "): batch " << n << " cannot run in the program of bucket " << b
                  << ", so it compiles: " << e.what() << "\n";
      std::lock_guard<std::mutex> lk(mu_);
      prog->refused.insert(n);
      return std::nullopt;
    }
    if (log_compiles())
      std::cerr << "graft: jit(" << opts_.name << "): batch " << n << " runs in the program of bucket " << b
                << " (checked by a trace at " << n << ", " << ms_since(t0) << " ms; no compile)\n";
    std::lock_guard<std::mutex> lk(mu_);
    prog->served.insert(n);
  }
  std::vector<Array> args = prog->consts;
  for (size_t i = 0; i < leaves.size(); ++i)
    args.push_back(axes[i] >= 0 && n < b ? pad_rows(leaves[i], axes[i], n, b) : leaves[i]);
  args.push_back(Array::scalar(static_cast<double>(n), DType::i32));
  Arrays out = prog->exe->run(args);
  Result r{prog->out_def, {}};
  for (size_t i = 0; i < out.size(); ++i) {
    const BatchAxis& ax = prog->masked.out_axes[i];
    r.outs.push_back(ax.batched() && n < b ? lax::slice_in_dim(out[i], 0, n * ax.factor, 1, ax.axis) : out[i]);
  }
  return r;
}

}  // namespace graft::detail
