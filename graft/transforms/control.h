// Structured control flow: cond / switch_, while_loop, fori_loop, scan.
//
// Each is a primitive whose bodies are closed sub-jaxprs, with every rule (eager evaluation, staging
// under jit, printing, jvp, reverse mode, vmap), so control flow composes with every transformation:
//
//   Array y = cond(x.sum() > 0, [](const Array& x) { return sin(x); }, [](const Array& x) { return cos(x); }, x);
//   Array r = while_loop([](const Array& v) { return v < 10.0; }, [](const Array& v) { return v * 2.0; }, x);
//   auto [h, hs] = scan([&](const Array& h, const Array& x) { return std::pair{tanh(h + x), h}; }, h0, xs);
//
// Branch and loop functions are traced once into jaxprs (both branches of a cond, as in JAX); the
// arrays they capture become explicit operands. Beyond JAX, reverse-mode differentiation works through
// while_loop (and fori_loop with traced bounds): the loop runs forward recording its trip count and the
// residuals of each iteration, and the backward pass is a reverse scan over them (memory linear in the
// number of iterations). Inside jit, where the trip count is unknown while tracing, it needs a bound:
// WhileOptions::max_steps.
#pragma once

#include <functional>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "graft/core/primitive.h"
#include "graft/prims/lax.h"
#include "graft/transforms/flat.h"
#include "graft/transforms/pytree.h"

namespace graft {

/// cond[branches=(...)] index operands...: runs branches[clamp(index, 0, n - 1)] on the operands.
extern const Primitive cond_p;
/// while[body_jaxpr= body_nconsts= cond_jaxpr= cond_nconsts= (max_steps=)] cond_consts body_consts init
extern const Primitive while_p;
/// scan[jaxpr= length= num_carry= num_consts= reverse=] consts init xs -> (carry..., ys...)
extern const Primitive scan_p;
/// call[callee=f] args...: a call of a Recursive function (by reference, so that it can call itself).
extern const Primitive call_p;

struct WhileOptions {
  /// The loop stops after at most this many iterations (-1: no bound). Reverse-mode differentiation
  /// of a while_loop inside jit needs it (the residual buffers are allocated for max_steps iterations).
  int64_t max_steps = -1;
};

struct ScanOptions {
  /// The number of iterations; required when there are no xs, else checked against them.
  std::optional<int64_t> length;
  /// Iterate from the last element of xs to the first (ys are still stored at their index).
  bool reverse = false;
};

// ---- flat forms (lists of arrays) ---------------------------------------------------------------------
/// Runs branches[index] (index clamped into range; a bool index picks branches[1] for true) on operands.
std::vector<Array> cond_flat(const Array& index, const std::vector<FlatFn>& branches,
                             const std::vector<Array>& operands);
/// cond_fn: carry -> bool scalar; body: carry -> carry.
std::vector<Array> while_flat(const FlatFn& cond_fn, const FlatFn& body, const std::vector<Array>& init,
                              const WhileOptions& opts = {});
/// f: (carry..., x slices...) -> (carry..., y slices...); returns (final carry..., stacked ys...).
std::vector<Array> scan_flat(const FlatFn& f, const std::vector<Array>& init, const std::vector<Array>& xs,
                             const ScanOptions& opts = {});

// ---- typed forms (pytrees) ----------------------------------------------------------------------------
namespace detail {

/// Traces `fn` over pytree operands, recording the output structure of every call in *defs.
template <class R, class Fn, class... Ops>
FlatFn tree_fn(const Fn& fn, const TreeDef& in_def, std::vector<TreeDef>* defs) {
  return [&fn, &in_def, defs](const std::vector<Array>& leaves) {
    auto ops = tree_unflatten<std::tuple<Ops...>>(in_def, leaves);
    R r = std::apply(fn, ops);
    defs->emplace_back();
    return tree_flatten(r, &defs->back());
  };
}

void check_same_structure(const char* what, const std::vector<TreeDef>& defs);

}  // namespace detail

/// cond(pred, true_fn, false_fn, operands...): true_fn(operands...) if pred else false_fn(operands...).
/// Both branches are traced and must return the same structure and types.
template <class TF, class FF, class... Ops>
auto cond(const Array& pred, const TF& true_fn, const FF& false_fn, const Ops&... operands) {
  using R = std::decay_t<std::invoke_result_t<const TF&, const Ops&...>>;
  std::tuple<Ops...> ops(operands...);
  TreeDef in_def;
  std::vector<Array> leaves = tree_flatten(ops, &in_def);
  std::vector<TreeDef> defs;
  std::vector<FlatFn> branches{detail::tree_fn<R, FF, Ops...>(false_fn, in_def, &defs),
                               detail::tree_fn<R, TF, Ops...>(true_fn, in_def, &defs)};
  std::vector<Array> out = cond_flat(pred, branches, leaves);
  detail::check_same_structure("cond", defs);
  return tree_unflatten<R>(defs.front(), out);
}

/// switch_(index, {f0, f1, ...}, operands...): branches[clamp(index, 0, n - 1)](operands...).
template <class B, class... Ops>
auto switch_(const Array& index, const std::vector<B>& branch_fns, const Ops&... operands) {
  using R = std::decay_t<std::invoke_result_t<const B&, const Ops&...>>;
  std::tuple<Ops...> ops(operands...);
  TreeDef in_def;
  std::vector<Array> leaves = tree_flatten(ops, &in_def);
  std::vector<TreeDef> defs;
  std::vector<FlatFn> branches;
  for (const B& b : branch_fns) branches.push_back(detail::tree_fn<R, B, Ops...>(b, in_def, &defs));
  std::vector<Array> out = cond_flat(index, branches, leaves);
  detail::check_same_structure("switch", defs);
  return tree_unflatten<R>(defs.front(), out);
}

/// while_loop(cond_fn, body_fn, init): while cond_fn(carry): carry = body_fn(carry). The carry is a
/// pytree whose types the body must preserve.
template <class C, class CF, class BF>
C while_loop(const CF& cond_fn, const BF& body_fn, const C& init, const WhileOptions& opts = {}) {
  TreeDef def;
  std::vector<Array> leaves = tree_flatten(init, &def);
  FlatFn c = [&](const std::vector<Array>& xs) { return std::vector<Array>{cond_fn(tree_unflatten<C>(def, xs))}; };
  FlatFn b = [&](const std::vector<Array>& xs) {
    TreeDef out_def;
    std::vector<Array> out = tree_flatten(C(body_fn(tree_unflatten<C>(def, xs))), &out_def);
    if (out_def.repr != def.repr)
      fail<TypeError>("while_loop: the body returns a carry of structure ", out_def.repr, ", the initial carry has ",
                      def.repr);
    return out;
  };
  return tree_unflatten<C>(def, while_flat(c, b, leaves, opts));
}

/// scan(f, init, xs): carry = init; for each slice x of xs (along axis 0): (carry, y) = f(carry, x);
/// returns (carry, ys stacked along a new axis 0). f returns std::pair<C, Y>.
template <class C, class X, class F>
auto scan(const F& f, const C& init, const X& xs, const ScanOptions& opts = {}) {
  using Out = std::decay_t<std::invoke_result_t<const F&, const C&, const X&>>;
  using Y = std::decay_t<typename Out::second_type>;
  TreeDef cdef, xdef;
  std::vector<Array> carry = tree_flatten(init, &cdef), xl = tree_flatten(xs, &xdef);
  size_t nc = carry.size();
  TreeDef ydef;
  FlatFn body = [&](const std::vector<Array>& a) {
    std::vector<Array> cl(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(nc)),
        xsl(a.begin() + static_cast<std::ptrdiff_t>(nc), a.end());
    Out o = f(tree_unflatten<C>(cdef, cl), tree_unflatten<X>(xdef, xsl));
    TreeDef od;
    std::vector<Array> r = tree_flatten(C(o.first), &od);
    if (od.repr != cdef.repr)
      fail<TypeError>("scan: the body returns a carry of structure ", od.repr, ", the initial carry has ", cdef.repr);
    std::vector<Array> y = tree_flatten(o.second, &ydef);
    r.insert(r.end(), y.begin(), y.end());
    return r;
  };
  std::vector<Array> out = scan_flat(body, carry, xl, opts);
  std::vector<Array> co(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(nc)),
      yo(out.begin() + static_cast<std::ptrdiff_t>(nc), out.end());
  return std::pair<C, Y>(tree_unflatten<C>(cdef, co), tree_unflatten<Y>(ydef, yo));
}

/// fori_loop(lower, upper, body_fn, init): for i in [lower, upper): carry = body_fn(i, carry), with i
/// an int32 scalar. Integer bounds make it a scan (static trip count); array bounds a while_loop.
template <class C, class F>
C fori_loop(int64_t lower, int64_t upper, const F& body_fn, const C& init) {
  int64_t n = upper > lower ? upper - lower : 0;
  Array is = lax::add(lax::iota(DType::i32, {n}), lax::scalar(static_cast<double>(lower), DType::i32));
  auto step = [&](const C& c, const Array& i) { return std::pair<C, std::vector<Array>>(C(body_fn(i, c)), {}); };
  return scan(step, init, is, ScanOptions{n, false}).first;
}
template <class C, class F>
C fori_loop(const Array& lower, const Array& upper, const F& body_fn, const C& init, const WhileOptions& opts = {}) {
  using State = std::tuple<Array, Array, C>;
  State s(lax::convert_element_type(lower, DType::i32), lax::convert_element_type(upper, DType::i32), init);
  auto c = [](const State& st) { return lax::lt(std::get<0>(st), std::get<1>(st)); };
  auto b = [&](const State& st) {
    Array i = std::get<0>(st);
    return State(lax::add(i, lax::scalar(1, DType::i32)), std::get<1>(st), C(body_fn(i, std::get<2>(st))));
  };
  return std::get<2>(while_loop(c, b, s, opts));
}

/// A function that may call itself, under every transformation: a recursive call made while the
/// function is being traced becomes a `call` equation referring to the function being traced (not an
/// infinite trace). The seeds' example:
///
///   Recursive factorial("factorial", [](const Recursive& self, const std::vector<Array>& a) {
///     const Array &r = a[0], &x = a[1];
///     return std::vector<Array>{cond(x <= 1.0, [&] { return r; }, [&] { return self(r * x, x - 1.0); })};
///   });
///   factorial(array(1.0), array(3.0));                               // 6, eagerly, under jit, jvp and grad
///
/// A recursive call's result types are needed before the body is traced: `out_types` gives them for the
/// argument types (default: one result with the first argument's type). The body must not capture
/// traced values (pass them as arguments). Under vmap it is not supported yet (a batched predicate
/// would evaluate both branches, so the recursion would not end).
class Recursive {
 public:
  using Body = std::function<std::vector<Array>(const Recursive& self, const std::vector<Array>& args)>;
  using OutTypes = std::function<std::vector<Aval>(const std::vector<Aval>& in)>;
  Recursive(std::string name, Body body, OutTypes out_types = {});
  /// All results.
  std::vector<Array> call(const std::vector<Array>& args) const;
  /// The first result: `self(r * x, x - 1.0)`.
  template <class... A>
  Array operator()(const A&... args) const {
    return call(std::vector<Array>{Array(args)...})[0];
  }
  const std::string& name() const;

 private:
  struct State;
  std::shared_ptr<State> st_;
};

}  // namespace graft
