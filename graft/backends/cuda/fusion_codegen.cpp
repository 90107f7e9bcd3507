// The CUDA code generator for fused bodies (see cuda_fusion.h for the kernels' shapes).
//
// The body is read once into values: each with how it varies (one value, one per row, one per element),
// its phase (how many levels of reductions it waits for) and a C expression. Full-sized values are
// computed inside the loops over the row; loop p computes what the reductions of phase p and the
// outputs of phase p need, and the row values of phase p + 1 (the reductions' results and what is
// computed from them) are ready after it. Everything is emitted as straight-line code over scalars
// in registers: NVRTC sees one expression DAG per loop and schedules it.
#include "graft/backends/cuda/fusion_codegen.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <set>
#include <unordered_map>

#include "graft/compiler/fusion.h"
#include "graft/core/env.h"
#include "graft/core/error.h"
#include "graft/backends/cuda/kernels.h"
#include "graft/prims/primitives.h"

namespace graft::cuda {

using compiler::broadcast_pattern;
using compiler::fusible_row_length;
using compiler::BroadcastPattern;
using compiler::fusion_body;

namespace {

namespace ck = graft::cuda_kernels;

// Warp reductions, block reductions through shared memory, and vectors for aligned accesses. Every
// lane of a row (or of the block) calls a reduction at the same point, so that shuffles and barriers
// are reached by all threads.
const char* kFusedPrelude = R"(
struct g_add_f { template <class A> __device__ __forceinline__ A operator()(A x, A y) const { return x + y; } };
struct g_mul_f { template <class A> __device__ __forceinline__ A operator()(A x, A y) const { return x * y; } };
struct g_max_f { template <class A> __device__ __forceinline__ A operator()(A x, A y) const { return g_max(x, y); } };
struct g_min_f { template <class A> __device__ __forceinline__ A operator()(A x, A y) const { return g_min(x, y); } };
template <int T, class A, class F> __device__ __forceinline__ A g_lanes_reduce(A v, F f) {
  for (int o = T / 2; o > 0; o >>= 1) v = f(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
template <class A, class F> __device__ __forceinline__ A g_block_reduce(A v, F f, A id, double* sm) {
  v = g_lanes_reduce<32>(v, f);
  A* s = (A*)sm;
  __syncthreads();
  if ((threadIdx.x & 31u) == 0) s[threadIdx.x >> 5] = v;
  __syncthreads();
  unsigned l = threadIdx.x & 31u;
  v = l < (blockDim.x >> 5) ? s[l] : id;
  return g_lanes_reduce<32>(v, f);
}
template <class T, int V> struct alignas(sizeof(T) * V) g_vec { T v[V]; };
)";

enum class Vary : uint8_t { uniform = 0, row = 1, full = 2 };

struct Val {
  enum Kind : uint8_t { literal, operand, pattern, map, reduce } kind;
  Vary vary = Vary::uniform;
  int phase = 0;
  DType dtype = DType::f32;
  std::string name;  // the C variable (a literal: its constant expression)
  std::string expr;  // map/reduce: how it is computed; input/pattern: the load's index
  int input = -1;
  std::vector<int> args;
  int reduction = -1;
};

struct Reduction {
  int value, arg, phase;  // the result, its operand, the loop that folds it (the operand's phase)
  std::string op, acc_type, identity;
};

std::string ctype(DType d) { return ck::compute_type(d); }
bool half(DType d) { return d == DType::f16 || d == DType::bf16; }
// Rounds a value computed in f32 to its 16-bit type, as storing it would.
std::string rounded(const std::string& e, DType d) {
  return half(d) ? "ld(st<" + ck::storage_type(d) + ">(" + e + "))" : e;
}

// A rank-0 literal as an exact C constant of its compute type.
std::string literal_expr(const Array& a) {
  DType d = a.dtype();
  char buf[64];
  if (d == DType::bool_) return a.item<bool>() ? "true" : "false";
  if (is_complex(d)) {  // its parts, each exact in the part type
    complex128 z = a.item<complex128>();
    DType part = d == DType::c64 ? DType::f32 : DType::f64;
    return ck::storage_type(d) + "{" + literal_expr(Array::scalar(z.real(), part)) + ", " +
           literal_expr(Array::scalar(z.imag(), part)) + "}";
  }
  if (is_floating(d) && d != DType::f64) {
    float v = a.item<float>();
    if (std::isfinite(v)) {
      std::snprintf(buf, sizeof buf, "%af", static_cast<double>(v));
      return buf;
    }
    uint32_t u;
    std::memcpy(&u, &v, 4);
    std::snprintf(buf, sizeof buf, "bits_f32(0x%08" PRIx32 "u)", u);
    return buf;
  }
  if (d == DType::f64) {
    double v = a.item<double>();
    if (std::isfinite(v)) {
      std::snprintf(buf, sizeof buf, "%a", v);
      return buf;
    }
    uint64_t u;
    std::memcpy(&u, &v, 8);
    std::snprintf(buf, sizeof buf, "bits_f64(0x%016" PRIx64 "ull)", u);
    return buf;
  }
  if (is_unsigned(d)) {
    std::snprintf(buf, sizeof buf, "(%s)%" PRIu64 "ull", ck::storage_type(d).c_str(), a.item<uint64_t>());
    return buf;
  }
  int64_t v = a.item<int64_t>();
  // the most negative value has no literal of its own
  std::snprintf(buf, sizeof buf, "(%s)(%" PRId64 "ll)", ck::storage_type(d).c_str(), v);
  if (v == INT64_MIN) return "(i64)((u64)1 << 63)";
  return buf;
}

std::string index_expr(const BroadcastPattern& p, int64_t n) {
  std::string f = "f";
  if (p.inner != 1) f = "(f / " + std::to_string(p.inner) + ")";
  if (p.mod * p.inner < n) f = "(" + f + " % " + std::to_string(p.mod) + ")";
  return f;
}

class Generator {
 public:
  Generator(const ClosedJaxpr& body, const CudaFusionOptions& opts) : j_(*body.jaxpr), opts_(opts) {}

  // Empty when the body is compiled; otherwise why not.
  std::string run(CudaFusedKernel& k);

 private:
  int add(Val v) {
    if (v.name.empty()) v.name = "v" + std::to_string(vals_.size());
    vals_.push_back(std::move(v));
    return static_cast<int>(vals_.size() - 1);
  }
  Vary natural(const Aval& a) const {
    if (a.size() == n_ && n_ > 1) return Vary::full;
    if (row_ && a.size() == rows_) return Vary::row;
    return Vary::uniform;
  }
  int value_of(const Atom& a) {
    if (a.is_literal()) return add(Val{Val::literal, Vary::uniform, 0, a.aval().dtype, literal_expr(a.literal)});
    auto it = id_.find(a.var.get());
    if (it == id_.end()) throw std::runtime_error("operand " + a.aval().str() + " is read other than through a broadcast");
    return it->second;
  }
  void inputs();
  void equation(const Eqn& e);
  void broadcast(const Eqn& e);
  void reduce(const Eqn& e, int64_t c);
  void map(const Eqn& e);
  std::string helper(const Eqn& e, const std::string& body_expr, const std::vector<int>& args, DType compute);
  void plan_loops();
  std::string emit(CudaFusedKernel& k);
  std::string loop_body(size_t p, const std::string& indent, bool cached);
  std::string row_section(size_t s, const std::string& indent);

  const Jaxpr& j_;
  CudaFusionOptions opts_;
  int64_t n_ = 0, row_ = 0, rows_ = 0;
  std::vector<Val> vals_;
  std::vector<Reduction> reds_;
  std::unordered_map<const Var*, int> id_;
  std::unordered_map<const Var*, int> pattern_input_;  // inputs read only through broadcasts
  std::vector<const Var*> args_;
  std::vector<int> out_vals_;
  std::string helpers_;
  int lanes_ = 1, rows_per_block_ = 1, k_ = 0;  // rows: threads a row, rows a block, elements a lane
  bool cached_ = false;
  int row_vector_ = 1;  // rows: elements a lane moves as one vector
  bool full_output_of(size_t o, size_t p) const;
  std::string vector_loads(size_t p, int V, const std::string& in) const;
  std::string vector_outputs(size_t p, int V, const std::string& in) const;
  std::string vector_stores(size_t p, int V, const std::string& in) const;
  std::string to_vector_lanes(std::string body) const;
  // loops
  size_t loops_ = 1;
  std::vector<std::vector<int>> computed_, from_cache_;  // per loop: values computed, values read back
  std::vector<bool> cache_;
};

void Generator::inputs() {
  for (auto& v : j_.constvars) args_.push_back(v.get());
  for (auto& v : j_.invars) args_.push_back(v.get());
  for (size_t i = 0; i < args_.size(); ++i) {
    const Aval& a = args_[i]->aval;
    Val v{Val::operand, Vary::uniform, 0, a.dtype};
    v.input = static_cast<int>(i);
    if (a.size() == n_ && n_ > 1) {
      v.vary = Vary::full;
    } else if (row_ && a.size() == rows_ && rows_ > 1) {
      v.vary = Vary::row;
    } else if (a.size() != 1) {
      pattern_input_[args_[i]] = static_cast<int>(i);
      continue;
    }
    id_[args_[i]] = add(std::move(v));
  }
}

void Generator::equation(const Eqn& e) {
  const Primitive* p = e.prim;
  if (e.outputs.size() != 1) throw std::runtime_error(std::string(p->name) + " has several results");
  const Var* out = e.outputs[0].get();
  if (p == &prims::broadcast_in_dim_p) return broadcast(e);
  bool same_dtype = !e.inputs.empty() && e.inputs[0].aval().dtype == out->aval.dtype;
  if (p == &prims::reshape_p || p == &prims::squeeze_p || (p == &prims::convert_element_type_p && same_dtype)) {
    id_[out] = value_of(e.inputs[0]);  // the same elements in the same order
    return;
  }
  if (int64_t c = fusible_row_length(e)) return reduce(e, c);
  map(e);
}

void Generator::broadcast(const Eqn& e) {
  const Atom& a = e.inputs[0];
  const Var* out = e.outputs[0].get();
  auto pat = broadcast_pattern(a.aval().shape, out->aval.shape, e.params.get_ints("broadcast_dimensions"));
  if (!pat) throw std::runtime_error("a broadcast without a contiguous pattern");
  const Var* src = a.is_literal() ? nullptr : a.var.get();
  if (src && pattern_input_.count(src)) {  // an input read through the broadcast
    Val v{Val::pattern, Vary::full, 0, a.aval().dtype};
    v.input = pattern_input_.at(src);
    if (pat->mod == 1) {
      v.kind = Val::operand;
      v.vary = Vary::uniform;
    } else if (row_ && pat->inner == row_ && pat->mod == rows_) {
      v.kind = Val::operand;
      v.vary = Vary::row;
    } else {
      v.expr = index_expr(*pat, n_);
    }
    id_[out] = add(std::move(v));
    return;
  }
  int s = value_of(a);
  Vary vy = vals_[static_cast<size_t>(s)].vary;
  bool row_pattern = row_ && pat->mod == rows_ && (rows_ == 1 || pat->inner == row_);
  if (vy == Vary::uniform || (vy == Vary::row && row_pattern) ||
      (vy == Vary::full && pat->inner == 1 && pat->mod == n_)) {  // the last: only unit dimensions added
    id_[out] = s;
  } else if (vals_[static_cast<size_t>(s)].kind == Val::operand) {  // an operand of a row's size, spread otherwise
    Val v{Val::pattern, Vary::full, 0, a.aval().dtype};
    v.input = vals_[static_cast<size_t>(s)].input;
    v.expr = index_expr(*pat, n_);
    id_[out] = add(std::move(v));
  } else {
    throw std::runtime_error("a broadcast of " + a.aval().str() + " that is not a row value");
  }
}

void Generator::reduce(const Eqn& e, int64_t) {
  int arg = value_of(e.inputs[0]);
  DType d = e.inputs[0].aval().dtype;
  std::string name = e.prim->name;
  Reduction r{0, arg, vals_[static_cast<size_t>(arg)].phase, "", ctype(d), ""};
  bool fl = is_floating(d);
  if (d == DType::bool_) throw std::runtime_error(name + " of booleans");
  if (is_complex(d)) throw std::runtime_error(name + " of complex values");  // (shuffles move one word)
  // 8- and 16-bit integers fold in 32 bits: the same value modulo their width, and shuffles move 32
  if (is_integer(d) && itemsize(d) < 4) r.acc_type = is_unsigned(d) ? "u32" : "i32";
  std::string a = r.acc_type;
  if (name == "reduce_sum") {
    r.op = "g_add_f";
    r.identity = "(" + a + ")0";
  } else if (name == "reduce_prod") {
    r.op = "g_mul_f";
    if (fl && d != DType::f64) r.acc_type = a = "double";  // as the CPU: f32 products in f64
    r.identity = "(" + a + ")1";
  } else if (name == "reduce_max" || name == "reduce_min") {
    bool mx = name == "reduce_max";
    r.op = mx ? "g_max_f" : "g_min_f";
    if (fl) {
      r.identity = std::string("(") + a + ")(" + (mx ? "-1.0 / 0.0" : "1.0 / 0.0") + ")";
    } else {
      std::string t = ck::storage_type(d);
      std::string lo = is_unsigned(d) ? "(" + t + ")0" : "(" + t + ")((u64)1 << (sizeof(" + t + ") * 8 - 1))";
      r.identity = "(" + a + ")" + (mx ? lo : "(" + t + ")~" + lo);
    }
  } else {
    throw std::runtime_error(name + " in a fused loop");
  }
  Val v{Val::reduce, Vary::row, r.phase + 1, e.outputs[0]->aval.dtype};
  v.args = {arg};
  v.reduction = static_cast<int>(reds_.size());
  int id = add(std::move(v));
  r.value = id;
  reds_.push_back(r);
  id_[e.outputs[0].get()] = id;
}

// A device function for one equation: typed parameters a, b, c... and the expression in C (the
// compute type the table's expression is written for), p its integer parameter.
std::string Generator::helper(const Eqn& e, const std::string& body_expr, const std::vector<int>& args, DType compute) {
  std::string name = "op" + std::to_string(vals_.size());
  DType out = e.outputs[0]->aval.dtype;
  int64_t p = 0;
  if (e.params.has("y")) p = e.params.get_int("y");
  if (e.params.has("rounding_method")) p = e.params.get_int("rounding_method");
  std::string s = "__device__ __forceinline__ " + ctype(out) + " " + name + "(";
  for (size_t k = 0; k < args.size(); ++k)
    s += (k ? ", " : "") + ctype(vals_[static_cast<size_t>(args[k])].dtype) + " " + std::string(1, char('a' + k));
  s += ") {\n  typedef " + ctype(compute) + " C; const i64 p = " + std::to_string(p) + "; (void)p;\n";
  s += "  return (" + ctype(out) + ")(" + body_expr + ");\n}\n";
  helpers_ += s;
  return name;
}

void Generator::map(const Eqn& e) {
  const Primitive* p = e.prim;
  DType out = e.outputs[0]->aval.dtype;
  std::vector<int> args;
  Val v{Val::map, Vary::uniform, 0, out};
  for (auto& a : e.inputs) {
    int id = value_of(a);
    args.push_back(id);
    v.vary = std::max(v.vary, vals_[static_cast<size_t>(id)].vary);
    v.phase = std::max(v.phase, vals_[static_cast<size_t>(id)].phase);
  }
  if (args.empty()) throw std::runtime_error(std::string(p->name) + " without operands");
  std::string body_expr;
  DType compute = vals_[static_cast<size_t>(args[0])].dtype;
  if (p == &prims::convert_element_type_p) {
    body_expr = ck::convert_expr("a", compute, out);
  } else if (p == &prims::select_n_p) {
    if (args.size() < 2) throw std::runtime_error("select_n without cases");
    compute = vals_[static_cast<size_t>(args[1])].dtype;
    // case k where the predicate is k (a boolean picks case 1 when true)
    body_expr = "b";
    for (size_t k = args.size() - 1; k >= 2; --k)
      body_expr = "(i64)a == " + std::to_string(k - 1) + " ? " + std::string(1, char('a' + k)) + " : " + body_expr;
    if (args.size() == 3) body_expr = "a ? c : b";
  } else {
    auto ex = ck::elementwise_expr(p->name, compute);
    if (!ex) throw std::runtime_error(std::string(p->name) + " of " + std::string(short_name(compute)) + " has no GPU expression");
    body_expr = *ex;
  }
  if (args.size() > 26) throw std::runtime_error("too many operands");
  std::string fn = helper(e, body_expr, args, compute);
  std::string call = fn + "(";
  for (size_t k = 0; k < args.size(); ++k) call += (k ? ", " : "") + vals_[static_cast<size_t>(args[k])].name;
  // half results stay f32 between operations with excess precision (compiler/fusion.h), as on the CPU
  v.expr = compiler::excess_precision() && p != &prims::convert_element_type_p ? call + ")" : rounded(call + ")", out);
  v.args = std::move(args);
  id_[e.outputs[0].get()] = add(std::move(v));
}

// Which full values each loop computes (in program order), and which it reads back from registers a
// previous loop filled.
void Generator::plan_loops() {
  int last = 0;
  for (auto& r : reds_) last = std::max(last, r.phase);
  for (size_t o = 0; o < out_vals_.size(); ++o)
    if (natural(j_.outvars[o].aval()) == Vary::full) last = std::max(last, vals_[static_cast<size_t>(out_vals_[o])].phase);
  loops_ = static_cast<size_t>(last) + 1;
  std::vector<std::set<int>> in_loop(loops_);
  std::vector<int> first(vals_.size(), -1);
  cache_.assign(vals_.size(), false);
  from_cache_.assign(loops_, {});
  std::function<void(int, size_t)> need = [&](int v, size_t p) {
    const Val& x = vals_[static_cast<size_t>(v)];
    if (x.vary != Vary::full || x.kind == Val::literal || in_loop[p].count(v)) return;
    in_loop[p].insert(v);
    if (first[static_cast<size_t>(v)] >= 0 && cached_) {  // an earlier loop keeps it in registers
      cache_[static_cast<size_t>(v)] = true;
      from_cache_[p].push_back(v);
      return;
    }
    for (int a : x.args) need(a, p);
    if (first[static_cast<size_t>(v)] < 0) first[static_cast<size_t>(v)] = static_cast<int>(p);
  };
  for (size_t p = 0; p < loops_; ++p) {
    for (auto& r : reds_)
      if (static_cast<size_t>(r.phase) == p) need(r.arg, p);
    for (size_t o = 0; o < out_vals_.size(); ++o)
      if (natural(j_.outvars[o].aval()) == Vary::full && static_cast<size_t>(vals_[static_cast<size_t>(out_vals_[o])].phase) == p)
        need(out_vals_[o], p);
  }
  computed_.assign(loops_, {});
  for (size_t p = 0; p < loops_; ++p) {
    for (int v : in_loop[p])
      if (std::find(from_cache_[p].begin(), from_cache_[p].end(), v) == from_cache_[p].end()) computed_[p].push_back(v);
    std::sort(computed_[p].begin(), computed_[p].end());
  }
}

std::string Generator::loop_body(size_t p, const std::string& in, bool cached) {
  std::string s;
  for (int v : from_cache_[p]) {
    const Val& x = vals_[static_cast<size_t>(v)];
    s += in + "const " + ctype(x.dtype) + " " + x.name + " = " + x.name + "_c[j];\n";
  }
  for (int v : computed_[p]) {
    const Val& x = vals_[static_cast<size_t>(v)];
    std::string e = x.expr;
    if (x.kind == Val::operand) e = "ld(in" + std::to_string(x.input) + "[f])";
    if (x.kind == Val::pattern) e = "ld(in" + std::to_string(x.input) + "[" + x.expr + "])";
    s += in + "const " + ctype(x.dtype) + " " + x.name + " = " + e + ";\n";
    if (cached && cache_[static_cast<size_t>(v)]) s += in + x.name + "_c[j] = " + x.name + ";\n";
  }
  for (auto& r : reds_)
    if (static_cast<size_t>(r.phase) == p)
      s += in + "acc" + std::to_string(r.value) + " = " + r.op + "()(acc" + std::to_string(r.value) + ", (" + r.acc_type +
           ")" + vals_[static_cast<size_t>(r.arg)].name + ");\n";
  for (size_t o = 0; o < out_vals_.size(); ++o) {
    const Val& x = vals_[static_cast<size_t>(out_vals_[o])];
    if (natural(j_.outvars[o].aval()) == Vary::full && static_cast<size_t>(x.phase) == p)
      s += in + "out" + std::to_string(o) + "[f] = st<" + ck::storage_type(x.dtype) + ">(" + x.name + ");\n";
  }
  return s;
}

// Vector accesses (V consecutive elements from f0): loads of the full operands loop p reads from memory,
// its full outputs' vectors and their stores, and the loop body rewritten to use their lanes (l).
bool Generator::full_output_of(size_t o, size_t p) const {
  return natural(j_.outvars[o].aval()) == Vary::full && static_cast<size_t>(vals_[static_cast<size_t>(out_vals_[o])].phase) == p;
}

std::string Generator::vector_loads(size_t p, int V, const std::string& in) const {
  std::string s;
  for (int v : computed_[p]) {
    const Val& x = vals_[static_cast<size_t>(v)];
    if (x.kind != Val::operand || x.vary != Vary::full) continue;
    std::string t = "g_vec<" + ck::storage_type(x.dtype) + ", " + std::to_string(V) + ">", i = std::to_string(x.input);
    s += in + "const " + t + " x" + i + " = *(const " + t + "*)(in" + i + " + f0);\n";
  }
  return s;
}

std::string Generator::vector_outputs(size_t p, int V, const std::string& in) const {
  std::string s;
  for (size_t o = 0; o < out_vals_.size(); ++o)
    if (full_output_of(o, p))
      s += in + "g_vec<" + ck::storage_type(j_.outvars[o].aval().dtype) + ", " + std::to_string(V) + "> y" + std::to_string(o) + ";\n";
  return s;
}

std::string Generator::vector_stores(size_t p, int V, const std::string& in) const {
  std::string s;
  for (size_t o = 0; o < out_vals_.size(); ++o)
    if (full_output_of(o, p)) {
      std::string t = "g_vec<" + ck::storage_type(j_.outvars[o].aval().dtype) + ", " + std::to_string(V) + ">", os = std::to_string(o);
      s += in + "*(" + t + "*)(out" + os + " + f0) = y" + os + ";\n";
    }
  return s;
}

std::string Generator::to_vector_lanes(std::string body) const {
  auto replace_all = [&](const std::string& from, const std::string& to) {
    for (size_t at = body.find(from); at != std::string::npos; at = body.find(from, at + to.size()))
      body.replace(at, from.size(), to);
  };
  for (const Val& x : vals_)
    if (x.kind == Val::operand && x.vary == Vary::full) {
      std::string i = std::to_string(x.input);
      replace_all("ld(in" + i + "[f])", "ld(x" + i + ".v[l])");
    }
  for (size_t o = 0; o < out_vals_.size(); ++o) replace_all("out" + std::to_string(o) + "[f] =", "y" + std::to_string(o) + ".v[l] =");
  return body;
}

// Row values of phase s: the reductions that finish there, what is computed from them, and the row
// outputs; section 0 also loads the row operands.
std::string Generator::row_section(size_t s, const std::string& in) {
  std::string out;
  for (size_t i = 0; i < vals_.size(); ++i) {
    const Val& x = vals_[i];
    if (x.vary != Vary::row || static_cast<size_t>(x.phase) != s) continue;
    std::string ct = ctype(x.dtype);
    if (x.kind == Val::operand) {
      // ct{}: zero for every type (a complex struct has no cast from 0 in C++17, NVRTC's language)
      out += in + "const " + ct + " " + x.name + " = active ? (" + ct + ")ld(in" + std::to_string(x.input) +
             "[r]) : " + ct + "{};\n";
    } else if (x.kind == Val::reduce) {
      const Reduction& r = reds_[static_cast<size_t>(x.reduction)];
      std::string acc = "acc" + std::to_string(r.value);
      std::string folded = lanes_ > 32 ? "g_block_reduce(" + acc + ", " + r.op + "(), " + r.identity + ", g_red)"
                                       : "g_lanes_reduce<" + std::to_string(lanes_) + ">(" + acc + ", " + r.op + "())";
      out += in + "const " + ct + " " + x.name + " = " + rounded("(" + ct + ")" + folded, x.dtype) + ";\n";
    } else {
      out += in + "const " + ct + " " + x.name + " = " + x.expr + ";\n";
    }
  }
  for (size_t o = 0; o < out_vals_.size(); ++o) {
    const Val& x = vals_[static_cast<size_t>(out_vals_[o])];
    if (natural(j_.outvars[o].aval()) == Vary::row && x.vary != Vary::full && static_cast<size_t>(x.phase) == s)
      out += in + "if (active && lane == 0) out" + std::to_string(o) + "[r] = st<" + ck::storage_type(x.dtype) + ">(" + x.name + ");\n";
  }
  // the accumulators of the loop that follows
  for (auto& r : reds_)
    if (static_cast<size_t>(r.phase) == s)
      out += in + r.acc_type + " acc" + std::to_string(r.value) + " = " + r.identity + ";\n";
  return out;
}

std::string Generator::emit(CudaFusedKernel& k) {
  std::string s = ck::prelude();
  s += "__device__ __forceinline__ double bits_f64(u64 u) { return __longlong_as_double((long long)u); }\n";
  s += kFusedPrelude;
  s += helpers_;
  s += "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(k.block) + ") " + CudaFusedKernel::kName + "(";
  for (size_t i = 0; i < k.inputs.size(); ++i)
    s += (i ? ", " : "") + std::string("const ") + ck::storage_type(k.inputs[i]) + "* __restrict__ in" + std::to_string(i);
  for (size_t o = 0; o < k.outputs.size(); ++o)
    s += (o || !k.inputs.empty() ? ", " : "") + ck::storage_type(k.outputs[o]) + "* __restrict__ out" + std::to_string(o);
  s += ") {\n";
  // uniform values: computed by every thread; uniform outputs written once
  for (const Val& x : vals_) {
    if (x.vary != Vary::uniform || x.kind == Val::literal) continue;
    std::string e = x.kind == Val::operand ? "ld(in" + std::to_string(x.input) + "[0])" : x.expr;
    s += "  const " + ctype(x.dtype) + " " + x.name + " = " + e + ";\n";
  }
  for (size_t o = 0; o < out_vals_.size(); ++o) {
    const Val& x = vals_[static_cast<size_t>(out_vals_[o])];
    if (natural(j_.outvars[o].aval()) == Vary::uniform)
      s += "  if (blockIdx.x == 0 && threadIdx.x == 0) out" + std::to_string(o) + "[0] = st<" + ck::storage_type(x.dtype) + ">(" +
           x.name + ");\n";
  }
  if (!row_) {
    int V = k.vector;
    s += "  for (i64 q = (i64)blockIdx.x * blockDim.x + threadIdx.x; q < " + std::to_string(k.units) +
         "; q += (i64)gridDim.x * blockDim.x) {\n";
    if (V == 1) {
      s += "    const i64 f = q;\n" + loop_body(0, "    ", false);
    } else {
      std::string vs = std::to_string(V);
      s += "    const i64 f0 = q * " + vs + ";\n";
      s += vector_loads(0, V, "    ");
      s += vector_outputs(0, V, "    ");
      s += "#pragma unroll\n    for (int l = 0; l < " + vs + "; ++l) {\n      const i64 f = f0 + l;\n";
      s += to_vector_lanes(loop_body(0, "      ", false)) + "    }\n";
      s += vector_stores(0, V, "    ");
    }
    s += "  }\n}\n";
    return s;
  }
  std::string T = std::to_string(lanes_), C = std::to_string(row_);
  if (lanes_ > 32) s += "  __shared__ double g_red[32];\n";
  s += "  const int lane = threadIdx.x % " + T + ";\n";
  s += "  for (i64 g = blockIdx.x; g < " + std::to_string(k.units) + "; g += gridDim.x) {\n";
  s += "    const i64 r = g * " + std::to_string(rows_per_block_) + " + threadIdx.x / " + T + ";\n";
  s += "    const bool active = r < " + std::to_string(rows_) + ";\n";
  if (cached_)
    for (size_t i = 0; i < vals_.size(); ++i)
      if (cache_[i]) s += "    " + ctype(vals_[i].dtype) + " " + vals_[i].name + "_c[" + std::to_string(k_) + "];\n";
  for (size_t p = 0; p <= loops_; ++p) {
    s += row_section(p, "    ");
    if (p == loops_) break;
    if (cached_ && row_vector_ > 1) {
      // each lane's elements as vectors of V consecutive ones: chunk j of lane l starts at (l + j T) V
      std::string vs = std::to_string(row_vector_);
      s += "#pragma unroll\n    for (int j = 0; j < " + std::to_string(k_ / row_vector_) + "; ++j) {\n";
      s += "      const i64 c0 = ((i64)lane + (i64)j * " + T + ") * " + vs + ";\n      if (!active || c0 >= " + C + ") continue;\n";
      s += "      const i64 f0 = r * " + C + " + c0;\n";
      s += vector_loads(p, row_vector_, "      ") + vector_outputs(p, row_vector_, "      ");
      s += "#pragma unroll\n      for (int l = 0; l < " + vs + "; ++l) {\n";
      s += "        const i64 c = c0 + l, f = f0 + l;\n        const int jj = j * " + vs + " + l;\n        (void)c; (void)f;\n";
      std::string body = to_vector_lanes(loop_body(p, "        ", true));
      for (size_t at = body.find("_c[j]"); at != std::string::npos; at = body.find("_c[j]", at + 6)) body.replace(at, 5, "_c[jj]");
      s += body + "      }\n" + vector_stores(p, row_vector_, "      ") + "    }\n";
      continue;
    }
    if (cached_) {
      s += "#pragma unroll\n    for (int j = 0; j < " + std::to_string(k_) + "; ++j) {\n";
      s += "      const i64 c = lane + (i64)j * " + T + ";\n      if (!active || c >= " + C + ") continue;\n";
    } else {
      s += "    for (i64 c = lane; active && c < " + C + "; c += " + T + ") {\n";
    }
    s += "      const i64 f = r * " + C + " + c;\n";
    s += loop_body(p, "      ", cached_);
    s += "    }\n";
  }
  s += "  }\n}\n";
  return s;
}

std::string Generator::run(CudaFusedKernel& k) {
  for (auto& v : j_.constvars) n_ = std::max(n_, v->aval.size());
  for (auto& v : j_.invars) n_ = std::max(n_, v->aval.size());
  for (auto& e : j_.eqns) {
    for (auto& v : e.outputs) n_ = std::max(n_, v->aval.size());
    if (int64_t c = fusible_row_length(e)) {
      if (row_ && row_ != c) return "reductions over rows of different lengths";
      row_ = c;
    }
  }
  if (n_ < 1) return "an empty domain";
  if (row_) rows_ = n_ / row_;
  try {
    inputs();
    for (const Eqn& e : j_.eqns) equation(e);
    for (auto& a : j_.outvars) out_vals_.push_back(value_of(a));
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  k.n = n_;
  k.row = row_;
  k.rows = rows_;
  for (const Var* v : args_) k.inputs.push_back(v->aval.dtype);
  for (auto& a : j_.outvars) k.outputs.push_back(a.aval().dtype);
  k.reusable.resize(k.outputs.size());
  // vectors when every full-sized operand and output has one element size
  int64_t size = 0;
  bool same = true;
  auto see = [&](DType d) {
    int64_t b = static_cast<int64_t>(itemsize(d));
    same = same && (size == 0 || size == b);
    size = b;
  };
  for (const Val& x : vals_)
    if (x.kind == Val::operand && x.vary == Vary::full) see(x.dtype);
  for (size_t o = 0; o < out_vals_.size(); ++o)
    if (natural(j_.outvars[o].aval()) == Vary::full) see(k.outputs[o]);
  int V = size && same ? static_cast<int>(std::min<int64_t>(opts_.max_vector, 16 / size)) : 1;
  if (row_) {
    // a lane holds at most 8 elements of a row where the row allows it
    auto pow2 = [](int64_t x) {
      int64_t p = 1;
      while (p < x) p <<= 1;
      return p;
    };
    int64_t e = opts_.row_elements > 0 ? opts_.row_elements : env::integer("GRAFT_CUDA_ROW_ELEMS", 8, 1, 64);
    lanes_ = static_cast<int>(row_ <= 32 ? pow2(row_) : std::clamp<int64_t>(pow2((row_ + e - 1) / e), 32, 1024));
    rows_per_block_ = lanes_ <= 32 ? 256 / lanes_ : 1;
    k_ = static_cast<int>((row_ + lanes_ - 1) / lanes_);
    cached_ = k_ <= std::max<int64_t>(16, e);
    bool vectors = opts_.row_vectors >= 0 ? opts_.row_vectors > 0 : env::flag("GRAFT_CUDA_ROW_VECTORS", false);
    if (vectors && cached_ && lanes_ >= 32 && V > 1 && row_ % V == 0 && k_ % V == 0) row_vector_ = V;
    k.vector = row_vector_;
    k.threads_per_row = lanes_;
    k.rows_per_block = rows_per_block_;
    k.block = lanes_ * rows_per_block_;
    k.units = (rows_ + rows_per_block_ - 1) / rows_per_block_;
    k.cached = cached_;
  } else {
    while (V > 1 && n_ % V) V /= 2;
    k.vector = std::max(V, 1);
    k.units = n_ / k.vector;
    k.block = 256;
    k.reusable.resize(k.outputs.size());
    for (size_t o = 0; o < k.outputs.size(); ++o) {
      if (natural(j_.outvars[o].aval()) != Vary::full) continue;
      for (const Val& x : vals_)
        if (x.kind == Val::operand && x.vary == Vary::full && itemsize(x.dtype) == itemsize(k.outputs[o]))
          k.reusable[o].push_back(x.input);
    }
  }
  plan_loops();
  k.loops = static_cast<int>(loops_);
  k.source = emit(k);
  return "";
}

}  // namespace

std::string CudaFusedKernel::describe() const {
  if (!row) return "elementwise " + std::to_string(n) + (vector > 1 ? " (vector " + std::to_string(vector) + ")" : "");
  return "rows " + std::to_string(rows) + "x" + std::to_string(row) + ", " + std::to_string(threads_per_row) +
         " lanes a row, " + std::to_string(loops) + (loops == 1 ? " loop" : " loops") + (cached ? ", cached" : "") +
         (vector > 1 ? ", vector " + std::to_string(vector) : "");
}

bool cuda_fusible(const Eqn& e) {
  bool cx = false;
  for (const Atom& a : e.inputs) cx = cx || is_complex(a.aval().dtype);
  for (const auto& o : e.outputs) cx = cx || is_complex(o->aval.dtype);
  if (!cx) return true;
  const Primitive* p = e.prim;
  if (p == &prims::convert_element_type_p || p == &prims::select_n_p || p == &prims::broadcast_in_dim_p ||
      p == &prims::reshape_p || p == &prims::squeeze_p)
    return true;
  if (!p->has(kElementwise) || e.inputs.empty())
    return false;  // complex reductions: no shuffles of two words
  return ck::elementwise_expr(p->name, e.inputs[0].aval().dtype).has_value();
}

std::optional<CudaFusedKernel> cuda_fused_kernel(const ClosedJaxpr& body, const CudaFusionOptions& opts, std::string* why) {
  CudaFusedKernel k;
  std::string err = Generator(body, opts).run(k);
  if (err.empty()) return k;
  if (why) *why = err;
  return std::nullopt;
}

Arrays fused_outputs(const CudaFusedKernel& k, size_t nconsts, std::span<const Array> in, std::span<const Aval> outs,
                     Device dev) {
  Arrays res;
  std::vector<size_t> taken;
  for (size_t o = 0; o < outs.size(); ++o) {
    ConcreteNode* reuse = nullptr;
    for (int r : o < k.reusable.size() ? k.reusable[o] : std::vector<int>{}) {
      if (static_cast<size_t>(r) < nconsts) continue;
      size_t i = static_cast<size_t>(r) - nconsts;
      ConcreteNode* c = i < in.size() ? in[i].concrete() : nullptr;
      if (!c || std::find(taken.begin(), taken.end(), i) != taken.end() || c->use_count() != 1 || !c->owns_storage() ||
          c->device() != dev || c->buffer()->nbytes() < outs[o].nbytes())
        continue;
      reuse = c;
      taken.push_back(i);
      break;
    }
    res.push_back(reuse ? Array(Ref<ArrayNode>(new ConcreteNode(outs[o], reuse->buffer(), 0))) : Array::empty_on(outs[o], dev));
  }
  return res;
}

}  // namespace graft::cuda
