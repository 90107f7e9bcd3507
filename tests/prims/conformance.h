// The conformance harness: every primitive is declared once as one or more rows, and each row is run
// through the same checks:
//   Values      eager result vs a reference (NumPy-style loops in double), in every listed dtype
//   JvpFD       forward derivative vs central finite differences (f64)
//   VjpFD       reverse derivative: <J^T ct, t> vs the finite difference of <ct, f(x + eps t)> (f64)
//   SecondOrder the derivative of the JVP (so JVP rules are themselves differentiable), vs FD (f64)
//   Vmap        vmap over batched inputs (mixed batch axes, unbatched inputs) vs a loop
//   Jit         jit vs eager
// A coverage test fails when a primitive has no row (tests/prims/test_conformance.cpp).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "testing.h"

namespace graft::testing {

using Inputs = std::vector<Array>;

struct Case {
  std::string name;
  const Primitive* prim = nullptr;
  Params params;
  /// Random valid inputs; `d` is the floating dtype to use (f32 for value/vmap checks, f64 for FD).
  std::function<Inputs(Rng&, DType d)> inputs;
  /// Expected outputs computed from the inputs in double (dtype of each output given by the reference).
  std::function<Inputs(const Inputs&)> reference;
  /// Inputs that are differentiated (others are held fixed: indices, predicates).
  std::vector<bool> diff;
  /// The derivative exists and is checked by finite differences (false: it must be zero).
  bool smooth = true;
  /// Other dtypes to check values in besides f32/f64 (inputs() is called with them).
  std::vector<DType> value_dtypes = {DType::f32, DType::f64};
  /// Relative tolerance of f32 value checks.
  double rtol32 = 2e-6;
  double atol32 = 1e-6;
  /// Skip the vmap/jit checks (never used by a row that can support them).
  bool second_order = true;
  /// Collectives: the row runs once per member of these named axes, as shard_map would on a mesh of
  /// them: nested vmap(axis_name) over the inputs' leading dimensions, outermost first (the reference
  /// semantics of collectives). Inputs and outputs carry the members as leading dimensions.
  std::vector<std::pair<std::string, int64_t>> named_axes;
  /// Outputs defined up to a choice (eigenvectors' and singular vectors' signs): the Values check passes
  /// both the primitive's and the reference's outputs through it before comparing.
  std::function<Inputs(const Inputs&)> canonical;
  /// Outputs defined up to a continuous choice (complex eigenvectors' phases): a differentiable function
  /// of the primitive's outputs that is free of the choice, applied in every check (the reference returns
  /// its outputs in that form too).
  std::function<Inputs(const Inputs&)> post;
};

inline void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

/// Runs body once per member of the row's named axes (from axis `level` on): nested vmaps with the
/// axis names; in_axes / out_axes apply at every level (nullopt: not mapped / invariant).
inline Inputs map_named(const Case& c, const Inputs& in, const std::function<Inputs(const Inputs&)>& body,
                        const std::vector<std::optional<int64_t>>& in_axes,
                        const std::vector<std::optional<int64_t>>& out_axes, size_t level = 0) {
  if (level == c.named_axes.size()) return body(in);
  auto& [name, size] = c.named_axes[level];
  return vmap_flat([&](const Inputs& x) { return map_named(c, x, body, in_axes, out_axes, level + 1); }, in, in_axes,
                   out_axes, name, size);
}

/// Reverse mode over the differentiated inputs only: the others are constants to it, as a caller holds an
/// index, a predicate or an order fixed (polygamma's order and zeta's exponent have no derivative, as in
/// JAX). The pullback gives a cotangent per input, null for the fixed ones.
inline VjpResult vjp_of_diff(const Case& c, const FlatFn& f, const Inputs& x) {
  Inputs xd;
  for (size_t i = 0; i < x.size(); ++i)
    if (c.diff[i]) xd.push_back(x[i]);
  FlatFn fd = [&c, f, x](const Inputs& d) {
    Inputs all = x;
    for (size_t i = 0, k = 0; i < x.size(); ++i)
      if (c.diff[i]) all[i] = d[k++];
    return f(all);
  };
  VjpResult r = vjp_flat(fd, xd);
  auto pullback = r.pullback;
  r.pullback = [pullback, &c, n = x.size()](const Inputs& cts) {
    Inputs gd = pullback(cts), g(n);
    for (size_t i = 0, k = 0; i < n; ++i)
      if (c.diff[i]) g[i] = gd[k++];
    return g;
  };
  return r;
}

/// Evaluates the row's primitive on inputs under the current trace (per member of its named axes).
inline Inputs run_case(const Case& c, const Inputs& in) {
  auto prim = [&c](const Inputs& x) {
    Arrays out = graft::bind(*c.prim, x, c.params);
    Inputs outs(out.begin(), out.end());
    return c.post ? c.post(outs) : outs;
  };
  if (c.named_axes.empty()) return prim(in);
  return map_named(c, in, prim, std::vector<std::optional<int64_t>>(in.size(), 0), {0});
}

/// A row from its parts (the other fields keep their defaults).
inline Case make_case(std::string name, const Primitive& p, Params params, std::function<Inputs(Rng&, DType)> inputs,
                      std::function<Inputs(const Inputs&)> ref, std::vector<bool> diff) {
  Case c;
  c.name = std::move(name);
  c.prim = &p;
  c.params = std::move(params);
  c.inputs = std::move(inputs);
  c.reference = std::move(ref);
  c.diff = std::move(diff);
  return c;
}

// ---- reference helpers --------------------------------------------------------------------------------
/// A dense double tensor for writing references.
struct T {
  std::vector<double> v;
  Shape s;
  explicit T(const Array& a) : v(values(a)), s(a.shape()) {}
  T(Shape shape, double fill = 0) : v(static_cast<size_t>(numel(shape)), fill), s(std::move(shape)) {}
  int64_t off(const std::vector<int64_t>& idx) const {
    int64_t o = 0;
    for (size_t k = 0; k < s.size(); ++k) o = o * s[k] + idx[k];
    return o;
  }
  double& at(const std::vector<int64_t>& idx) { return v[static_cast<size_t>(off(idx))]; }
  double at(const std::vector<int64_t>& idx) const { return v[static_cast<size_t>(off(idx))]; }
  Array array(DType d) const { return Rng::from_doubles(v, s, d); }
};

/// Calls f(idx) for every multi-index of `shape` in row-major order.
inline void for_each_index(const Shape& shape, const std::function<void(const std::vector<int64_t>&)>& f) {
  int64_t n = numel(shape);
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t e = 0; e < n; ++e) {
    f(idx);
    for (size_t k = shape.size(); k-- > 0;) {
      if (++idx[k] < shape[k]) break;
      idx[k] = 0;
    }
  }
}

/// Elementwise reference of n inputs (rank-0 inputs broadcast); output dtype = out_dtype or input 0's.
inline std::function<Inputs(const Inputs&)> ref_map(std::function<double(const std::vector<double>&)> f,
                                                    std::optional<DType> out_dtype = std::nullopt) {
  return [f, out_dtype](const Inputs& in) {
    Shape s;
    for (auto& a : in)
      if (a.ndim() > 0) s = a.shape();
    std::vector<std::vector<double>> vals;
    for (auto& a : in) vals.push_back(values(a));
    T out(s);
    std::vector<double> args(in.size());
    for (size_t e = 0; e < out.v.size(); ++e) {
      for (size_t k = 0; k < in.size(); ++k) args[k] = vals[k][in[k].ndim() == 0 ? 0 : e];
      out.v[e] = f(args);
    }
    return Inputs{out.array(out_dtype.value_or(in[0].dtype()))};
  };
}

std::vector<Case> elementwise_cases();
std::vector<Case> structural_cases();
/// The linear-algebra rows (cases_linalg.cpp; part of structural_cases()); empty without LAPACK.
std::vector<Case> linalg_cases();
/// The linear-algebra rows on complex operands, and eig's (cases_linalg_complex.cpp; part of
/// complex_cases()); empty without LAPACK.
std::vector<Case> linalg_complex_cases();
std::vector<Case> collective_cases();
/// Rows over complex64 / complex128 (cases_complex.cpp): inputs(rng, d) draws the complex dtype of d.
std::vector<Case> complex_cases();

}  // namespace graft::testing
