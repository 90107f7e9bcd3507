// The public transformations: grad, value_and_grad, jvp, vjp, vmap, jit, make_jaxpr, jacfwd,
// jacrev, hessian, custom_jvp, custom_vjp. They take ordinary C++ callables whose arguments and
// results are arrays or pytrees of arrays (see pytree.h), and they compose in any order and depth.
//
//   auto f = [](const Array& x) { return sum(sin(cos(x))); };
//   Array dx = grad(f)(x);
//   auto [v, d] = value_and_grad(f)(x);
//   auto [y, t] = jvp(f, {x}, {ones_like(x)});
//   auto [out, pullback] = vjp(f, x);  auto [ct_x] = pullback(ones_like(out));
//   Array b = vmap(f)(ones({4, 3}));
//   auto jf = jit(f);  jf(x);           // traced once per (shape, dtype), then cached
//   std::cout << make_jaxpr(grad(f))(x);
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "graft/ir/jaxpr.h"
#include "graft/prims/lax.h"
#include "graft/transforms/custom.h"
#include "graft/transforms/flat.h"
#include "graft/transforms/jit.h"
#include "graft/transforms/polymorphic.h"
#include "graft/transforms/pytree.h"

namespace graft {

namespace detail {

template <class T>
using D = std::decay_t<T>;
template <class F, class... Args>
using result_t = D<std::invoke_result_t<const F&, const Args&...>>;

/// The arguments of a call, flattened: the leaves of the selected (differentiated / mapped / traced)
/// arguments, and everything needed to rebuild the call from new leaves.
template <class... Args>
struct FlatArgs {
  std::vector<Array> leaves;
  std::array<TreeDef, sizeof...(Args)> defs;
  std::array<size_t, sizeof...(Args) + 1> offset{};  ///< leaves of arg i: [offset[i], offset[i+1])
  std::array<bool, sizeof...(Args)> selected{};
  std::string key;  ///< structure + static values (jit's cache key, without the avals)
};

template <size_t I, class... Args>
void flatten_one(FlatArgs<Args...>& fa, const std::tuple<const Args&...>& args, const std::vector<bool>& sel) {
  using T = D<std::tuple_element_t<I, std::tuple<Args...>>>;
  fa.offset[I] = fa.leaves.size();
  if constexpr (PyTree<T>::is_static) {
    static_assert(is_known_static_v<T>,
                  "graft: an argument type is neither a pytree nor a static value. Register a struct of arrays "
                  "with GRAFT_PYTREE_NODE(T, &T::member, ...), or mark a static type with GRAFT_STATIC_TYPE(T) "
                  "(graft/transforms/pytree.h)");
    append_static_key(fa.key, std::get<I>(args));
  } else {
    bool s = sel.empty() || sel[I];
    fa.selected[I] = s;
    if (s) {
      PyTree<T>::flatten(std::get<I>(args), fa.leaves, fa.defs[I]);
      fa.key += fa.defs[I].repr;
    } else {
      fa.key += '-';
    }
  }
  fa.key += '|';
}

/// Flattens the arguments selected by `sel` (all non-static ones when sel is empty).
template <class... Args>
FlatArgs<Args...> flatten_args(const std::tuple<const Args&...>& args, const std::vector<bool>& sel = {}) {
  FlatArgs<Args...> fa;
  [&]<size_t... I>(std::index_sequence<I...>) { (flatten_one<I>(fa, args, sel), ...); }(std::index_sequence_for<Args...>());
  fa.offset[sizeof...(Args)] = fa.leaves.size();
  return fa;
}

/// Argument I rebuilt from `leaves` when it is selected, else as given.
template <size_t I, class... Args>
D<std::tuple_element_t<I, std::tuple<Args...>>> pick(const FlatArgs<Args...>& fa, const std::tuple<const Args&...>& args,
                                                      const std::vector<Array>& leaves) {
  using T = D<std::tuple_element_t<I, std::tuple<Args...>>>;
  if constexpr (PyTree<T>::is_static) {
    return std::get<I>(args);
  } else {
    if (!fa.selected[I]) return std::get<I>(args);
    TreeCursor c{leaves.data() + fa.offset[I]};
    return PyTree<T>::unflatten(fa.defs[I], c);
  }
}

template <class F, class... Args>
auto call_rebuilt(const F& f, const FlatArgs<Args...>& fa, const std::tuple<const Args&...>& args,
                  const std::vector<Array>& leaves) {
  return [&]<size_t... I>(std::index_sequence<I...>) {
    std::tuple<D<Args>...> rebuilt{pick<I>(fa, args, leaves)...};  // braces: evaluated in order
    return std::apply(f, rebuilt);
  }(std::index_sequence_for<Args...>());
}

/// A FlatFn that calls f with the selected arguments rebuilt from its leaves and flattens the result
/// (recording the result's TreeDef in *out_def).
template <class F, class... Args>
FlatFn flat_fn(const F& f, const FlatArgs<Args...>& fa, const std::tuple<const Args&...>& args,
               std::shared_ptr<TreeDef> out_def) {
  return [&f, &fa, &args, out_def](const std::vector<Array>& leaves) {
    auto out = call_rebuilt(f, fa, args, leaves);
    return tree_flatten<D<decltype(out)>>(out, out_def.get());
  };
}

/// The preamble every typed wrapper shares: flattens the call f(args...) (the arguments `sel` marks, all
/// non-static ones when empty) into a FlatCall and returns what run(call) returns. The call's fn is
/// valid while run runs.
template <class F, class Run, class... Args>
decltype(auto) with_flat_call(const F& f, const std::vector<bool>& sel, Run&& run, const Args&... args) {
  std::tuple<const Args&...> targs(args...);
  auto fa = flatten_args(targs, sel);
  FlatCall c;
  c.out_def = std::make_shared<TreeDef>();
  c.fn = flat_fn(f, fa, targs, c.out_def);  // reads fa's structure, not its leaves
  c.leaves = std::move(fa.leaves);
  c.offset.assign(fa.offset.begin(), fa.offset.end());
  c.traced.assign(fa.selected.begin(), fa.selected.end());
  c.key = std::move(fa.key);
  return run(c);
}

/// with_flat_call for a run that returns the flat outputs: they come back as f's output type.
template <class F, class Run, class... Args>
auto flat_call(const F& f, Run&& run, const Args&... args) {
  using Out = result_t<F, Args...>;
  return with_flat_call(
      f, {},
      [&](FlatCall& c) {
        std::vector<Array> outs = run(c);
        return tree_unflatten<Out>(*c.out_def, outs);
      },
      args...);
}

/// Argument I of the call rebuilt from a list of leaves laid out like fa.leaves.
template <size_t I, class... Args>
auto unflatten_arg(const FlatArgs<Args...>& fa, const std::vector<Array>& leaves) {
  using T = D<std::tuple_element_t<I, std::tuple<Args...>>>;
  TreeCursor c{leaves.data() + fa.offset[I]};
  return PyTree<T>::unflatten(fa.defs[I], c);
}

/// The common type of several gradients: the arguments' type if they all share one, else Tree.
template <class... Args>
struct common_grad {
  using First = D<std::tuple_element_t<0, std::tuple<Args...>>>;
  static constexpr bool same = (std::is_same_v<D<Args>, First> && ...);
  using type = std::conditional_t<same && !PyTree<First>::is_static, First, Tree>;
};

template <class T, class A>
T convert_grad(const A& a) {
  if constexpr (std::is_same_v<T, A>) {
    return a;
  } else {
    return to_tree(a);
  }
}

template <class F, size_t N, class = std::make_index_sequence<N>>
struct invocable_n;
template <class F, size_t N, size_t... I>
struct invocable_n<F, N, std::index_sequence<I...>> {
  template <size_t>
  using A = const Array&;
  static constexpr bool value = std::is_invocable_v<const F&, A<I>...>;
};

/// The result type of calling f with arrays: f(std::vector<Array>) or f(Array, ...) (first that works).
template <class F>
auto call_result() {
  if constexpr (std::is_invocable_v<const F&, const std::vector<Array>&>) {
    return TypeTag<D<std::invoke_result_t<const F&, const std::vector<Array>&>>>{};
  } else if constexpr (invocable_n<F, 1>::value) {
    return TypeTag<D<std::invoke_result_t<const F&, const Array&>>>{};
  } else if constexpr (invocable_n<F, 2>::value) {
    return TypeTag<D<std::invoke_result_t<const F&, const Array&, const Array&>>>{};
  } else if constexpr (invocable_n<F, 3>::value) {
    return TypeTag<D<std::invoke_result_t<const F&, const Array&, const Array&, const Array&>>>{};
  } else {
    static_assert(invocable_n<F, 4>::value, "the function must take std::vector<Array> or up to four Arrays");
    return TypeTag<D<std::invoke_result_t<const F&, const Array&, const Array&, const Array&, const Array&>>>{};
  }
}
template <class F>
using call_result_t = typename decltype(call_result<F>())::type;

/// Calls f(std::vector<Array>) or f(Array, ...) with the arrays of `v` (by their number).
template <class F>
call_result_t<F> call_with(const F& f, const std::vector<Array>& v) {
  using Out = call_result_t<F>;
  if constexpr (std::is_invocable_v<const F&, const std::vector<Array>&>) {
    return f(v);
  } else {
    auto arity = [&]<size_t N>(std::integral_constant<size_t, N>) -> std::optional<Out> {
      if constexpr (invocable_n<F, N>::value) {
        if (v.size() == N) {
          return [&]<size_t... I>(std::index_sequence<I...>) -> Out { return f(v[I]...); }(std::make_index_sequence<N>());
        }
      }
      return std::nullopt;
    };
    std::optional<Out> r;
    if (!r) r = arity(std::integral_constant<size_t, 1>());
    if (!r) r = arity(std::integral_constant<size_t, 2>());
    if (!r) r = arity(std::integral_constant<size_t, 3>());
    if (!r) r = arity(std::integral_constant<size_t, 4>());
    if (!r) fail<ValueError>("the function cannot be called with ", v.size(), " arrays");
    return std::move(*r);
  }
}

/// Checks that the first output is a floating scalar (what grad differentiates).
void check_grad_output(const std::vector<Array>& outs, bool has_aux);

/// f's value and the cotangents of every argument (nullopt for unselected ones).
template <class F, class... Args>
struct GradCore {
  result_t<F, Args...> value;
  std::tuple<std::optional<D<Args>>...> grads;
};

template <class F, class... Args>
GradCore<F, Args...> grad_core(const F& f, const std::vector<int>& argnums, bool has_aux, const Args&... args) {
  std::tuple<const Args&...> targs(args...);
  std::vector<bool> sel(sizeof...(Args), false);
  if (argnums.empty()) fail<ValueError>("grad: argnums is empty; name at least one argument to differentiate");
  for (int a : argnums) {
    if (a < 0 || a >= static_cast<int>(sizeof...(Args)))
      fail<ValueError>("grad: argnum ", a, " is out of range for a function of ", sizeof...(Args), " arguments");
    sel[static_cast<size_t>(a)] = true;
  }
  auto fa = flatten_args(targs, sel);
  for (int a : argnums)
    if (!fa.selected[static_cast<size_t>(a)])
      fail<TypeError>("grad: argument ", a, " is not an array or a pytree of arrays, so it cannot be differentiated");
  for (auto& x : fa.leaves)
    if (!is_inexact(x.dtype()))
      fail<TypeError>("grad requires floating-point or complex inputs, but an input has dtype ", x.dtype(),
                      "; differentiate with respect to float arrays only");
  auto out_def = std::make_shared<TreeDef>();
  VjpResult r = vjp_flat(flat_fn(f, fa, targs, out_def), fa.leaves);
  check_grad_output(r.outs, has_aux);
  std::vector<Array> cts(r.outs.size());
  cts[0] = lax::full({}, 1.0, r.outs[0].dtype());
  std::vector<Array> g = r.pullback(cts);
  GradCore<F, Args...> core{tree_unflatten<result_t<F, Args...>>(*out_def, r.outs), {}};
  [&]<size_t... I>(std::index_sequence<I...>) {
    ((fa.selected[I] ? void(std::get<I>(core.grads) = [&] {
      if constexpr (PyTree<D<Args>>::is_static) {
        return std::get<I>(targs);
      } else {
        return unflatten_arg<I>(fa, g);
      }
    }()) : void()), ...);
  }(std::index_sequence_for<Args...>());
  return core;
}

}  // namespace detail

// ---- grad / value_and_grad -----------------------------------------------------------------------------
struct GradOptions {
  /// f returns std::pair<Array, Aux>: differentiate the Array and pass Aux through.
  bool has_aux = false;
};

/// How the differentiated arguments were named: default (argument 0, result of its exact type), a
/// single argnum, or a list (one gradient per listed argument).
enum class Argnums { first, single, multi };

template <class F, Argnums M>
class GradFn {
 public:
  GradFn(F f, std::vector<int> argnums, GradOptions opts)
      : f_(std::move(f)), argnums_(std::move(argnums)), opts_(opts) {}

  template <class... Args>
    requires std::is_invocable_v<const F&, const Args&...>
  auto operator()(const Args&... args) const {
    static_assert(sizeof...(Args) > 0, "grad: the function needs at least one argument");
    auto core = detail::grad_core(f_, argnums_, opts_.has_aux, args...);
    auto g = gradient<Args...>(core);
    return std::make_pair(std::move(core.value), std::move(g));  // (value (or (value, aux)), gradient)
  }

  template <class... Args>
  auto gradient(detail::GradCore<F, Args...>& core) const {
    if constexpr (M == Argnums::first) {
      return std::move(*std::get<0>(core.grads));
    } else {
      using T = typename detail::common_grad<Args...>::type;
      std::vector<T> out;
      for (int a : argnums_) {
        [&]<size_t... I>(std::index_sequence<I...>) {
          ((static_cast<int>(I) == a ? void(out.push_back(detail::convert_grad<T>(*std::get<I>(core.grads)))) : void()),
           ...);
        }(std::index_sequence_for<Args...>());
      }
      if constexpr (M == Argnums::single) {
        return std::move(out[0]);
      } else {
        return out;
      }
    }
  }

 private:
  F f_;
  std::vector<int> argnums_;
  GradOptions opts_;
};

namespace detail {
/// Wraps a GradFn so that it returns the gradient only ((gradient, aux) with has_aux).
template <class G>
auto gradient_only(G g) {
  return [g](const auto&... args)
             requires std::is_invocable_v<const G&, decltype(args)...>
  {
    auto [v, d] = g(args...);
    if constexpr (std::is_same_v<D<decltype(v)>, Array>) {
      return d;
    } else {
      return std::make_pair(std::move(d), std::move(v.second));
    }
  };
}
}  // namespace detail

/// grad(f)(args...): the gradient of a scalar-valued f with respect to argument 0, of its type.
template <class F>
auto grad(F f, GradOptions opts = {}) {
  return detail::gradient_only(GradFn<F, Argnums::first>(std::move(f), {0}, opts));
}
/// grad(f, argnum): with respect to one argument (the result is a Tree unless all arguments share a type).
template <class F>
auto grad(F f, int argnum, GradOptions opts = {}) {
  return detail::gradient_only(GradFn<F, Argnums::single>(std::move(f), {argnum}, opts));
}
/// grad(f, {0, 1}): one gradient per listed argument (std::vector<Array> when all arguments are arrays).
template <class F>
auto grad(F f, std::vector<int> argnums, GradOptions opts = {}) {
  return detail::gradient_only(GradFn<F, Argnums::multi>(std::move(f), std::move(argnums), opts));
}
/// grad(f, {0}) is a list of one gradient, as grad(f, {0, 1}) is a list of two (a braced list would
/// otherwise pick the single-argnum overload).
template <class F>
auto grad(F f, std::initializer_list<int> argnums, GradOptions opts = {}) {
  return grad(std::move(f), std::vector<int>(argnums), opts);
}
/// value_and_grad(f)(args...) -> (f(args...), grad): `auto [loss, g] = value_and_grad(f)(x);`
template <class F>
auto value_and_grad(F f, GradOptions opts = {}) {
  return GradFn<F, Argnums::first>(std::move(f), {0}, opts);
}
template <class F>
auto value_and_grad(F f, int argnum, GradOptions opts = {}) {
  return GradFn<F, Argnums::single>(std::move(f), {argnum}, opts);
}
template <class F>
auto value_and_grad(F f, std::vector<int> argnums, GradOptions opts = {}) {
  return GradFn<F, Argnums::multi>(std::move(f), std::move(argnums), opts);
}
template <class F>
auto value_and_grad(F f, std::initializer_list<int> argnums, GradOptions opts = {}) {
  return value_and_grad(std::move(f), std::vector<int>(argnums), opts);
}

// ---- jvp / vjp ----------------------------------------------------------------------------------------
/// Forward mode: (f(primals...), J·tangents). f takes the primals as Arrays (or one std::vector<Array>).
template <class F>
auto jvp(const F& f, const std::vector<Array>& primals, const std::vector<Array>& tangents) {
  using Out = detail::call_result_t<F>;
  auto out_def = std::make_shared<TreeDef>();
  FlatFn g = [&](const std::vector<Array>& xs) { return tree_flatten<Out>(detail::call_with(f, xs), out_def.get()); };
  auto [po, to] = jvp_flat(g, primals, tangents);
  return std::make_pair(tree_unflatten<Out>(*out_def, po), tree_unflatten<Out>(*out_def, to));
}

/// Reverse mode: (f(args...), pullback) where pullback(cotangent) returns one cotangent per argument
/// as a std::tuple: `auto [out, pb] = vjp(f, x, y); auto [ct_x, ct_y] = pb(ct);`
template <class F, class... Args>
auto vjp(const F& f, const Args&... args) {
  static_assert((!is_static_v<Args> && ...), "vjp: every argument must be an array or a pytree of arrays");
  using Out = detail::result_t<F, Args...>;
  std::tuple<const Args&...> targs(args...);
  auto fa = std::make_shared<detail::FlatArgs<Args...>>(detail::flatten_args(targs));
  auto out_def = std::make_shared<TreeDef>();
  VjpResult r = vjp_flat(detail::flat_fn(f, *fa, targs, out_def), fa->leaves);
  Out out = tree_unflatten<Out>(*out_def, r.outs);
  auto pullback = [fa, out_def, pb = r.pullback](const Out& ct) {
    TreeDef d;
    std::vector<Array> cts = tree_flatten<Out>(ct, &d);
    if (d.repr != out_def->repr)
      fail<ValueError>("vjp: the cotangent has structure ", d.repr, ", the output has ", out_def->repr);
    std::vector<Array> in = pb(cts);
    return [&]<size_t... I>(std::index_sequence<I...>) {
      return std::tuple<detail::D<Args>...>{detail::unflatten_arg<I>(*fa, in)...};
    }(std::index_sequence_for<Args...>());
  };
  return std::make_pair(std::move(out), std::move(pullback));
}

/// JAX's linearize: (f(args...), f_jvp) where f_jvp(tangents...) is f's JVP at args, one tangent per
/// argument (same structure), evaluated on the residuals one linearization stored (f does not run again):
/// `auto [y, f_jvp] = linearize(f, x); Array dy = f_jvp(dx);`
template <class F, class... Args>
auto linearize(const F& f, const Args&... args) {
  static_assert((!is_static_v<Args> && ...), "linearize: every argument must be an array or a pytree of arrays");
  using Out = detail::result_t<F, Args...>;
  std::tuple<const Args&...> targs(args...);
  auto fa = std::make_shared<detail::FlatArgs<Args...>>(detail::flatten_args(targs));
  auto out_def = std::make_shared<TreeDef>();
  auto [outs, jvp_fn] = linearize_fn(detail::flat_fn(f, *fa, targs, out_def), fa->leaves);
  Out out = tree_unflatten<Out>(*out_def, outs);
  auto f_jvp = [fa, out_def, jvp_fn = jvp_fn](const Args&... tangents) {
    std::tuple<const Args&...> tt(tangents...);
    detail::FlatArgs<Args...> ft = detail::flatten_args(tt);
    if (ft.leaves.size() != fa->leaves.size())
      fail<ValueError>("linearize: the tangents have ", ft.leaves.size(), " leaves, the primals ", fa->leaves.size());
    return tree_unflatten<Out>(*out_def, jvp_fn(ft.leaves));
  };
  return std::make_pair(std::move(out), std::move(f_jvp));
}

/// JAX's linear_transpose: the transpose of f, linear in its arguments, traced at the types of `args`
/// (their values are not used): f_t(cotangent of f's output) returns one cotangent per argument as a
/// std::tuple. A function that is not linear raises the transposition's error naming the primitive.
template <class F, class... Args>
auto linear_transpose(const F& f, const Args&... args) {
  static_assert((!is_static_v<Args> && ...), "linear_transpose: every argument must be an array or a pytree of arrays");
  using Out = detail::result_t<F, Args...>;
  std::tuple<const Args&...> targs(args...);
  auto fa = std::make_shared<detail::FlatArgs<Args...>>(detail::flatten_args(targs));
  auto out_def = std::make_shared<TreeDef>();
  std::vector<Aval> avals;
  for (auto& x : fa->leaves) avals.push_back(x.aval());
  FlatFn t = linear_transpose_fn(detail::flat_fn(f, *fa, targs, out_def), avals);
  return [fa, out_def, t](const Out& ct) {
    TreeDef d;
    std::vector<Array> cts = tree_flatten<Out>(ct, &d);
    if (d.repr != out_def->repr)
      fail<ValueError>("linear_transpose: the cotangent has structure ", d.repr, ", the output has ", out_def->repr);
    std::vector<Array> in = t(cts);
    return [&]<size_t... I>(std::index_sequence<I...>) {
      return std::tuple<detail::D<Args>...>{detail::unflatten_arg<I>(*fa, in)...};
    }(std::index_sequence_for<Args...>());
  };
}

// ---- vmap ---------------------------------------------------------------------------------------------
struct VmapOptions {
  /// Mapped axis per positional argument (std::nullopt: not mapped); empty: axis 0 for all.
  std::vector<std::optional<int64_t>> in_axes;
  /// Where the mapped axis goes in each output leaf (one entry: all outputs); empty: 0. std::nullopt:
  /// the output is invariant along the axis (e.g. a psum) and is returned once, without it.
  std::vector<std::optional<int64_t>> out_axes;
  /// Name of the mapped axis, for collectives: vmap(f, {.axis_name = "i"}) runs psum(x, {"i"}),
  /// all_gather, ppermute, axis_index ... over the lanes (the reference of shard_map and pmap).
  std::string axis_name;
  /// Size of the mapped axis when no argument is mapped.
  std::optional<int64_t> axis_size;
};

template <class F>
class VmapFn {
 public:
  VmapFn(F f, VmapOptions o) : f_(std::move(f)), o_(std::move(o)) {}
  template <class... Args>
    requires std::is_invocable_v<const F&, const Args&...>
  auto operator()(const Args&... args) const {
    return detail::flat_call(
        f_,
        [&](FlatCall& c) {
          auto axes = o_.in_axes.empty() ? std::vector<std::optional<int64_t>>(c.leaves.size(), 0)
                                         : c.per_leaf(o_.in_axes, "vmap: in_axes");
          return vmap_flat(c.fn, c.leaves, axes, o_.out_axes, o_.axis_name, o_.axis_size);
        },
        args...);
  }

 private:
  F f_;
  VmapOptions o_;
};

/// vmap(f)(xs...): f mapped over axis 0 of every argument (see VmapOptions).
template <class F>
VmapFn<F> vmap(F f, VmapOptions o = {}) {
  return VmapFn<F>(std::move(f), std::move(o));
}

// ---- jit ----------------------------------------------------------------------------------------------
/// A typed Compiled (graft/transforms/jit.h): called with the arguments it was lowered for, it returns
/// what the function returns.
template <class Out>
class CompiledFn {
 public:
  explicit CompiledFn(Compiled c) : c_(std::move(c)) {}
  template <class... Args>
  Out operator()(const Args&... args) const {
    std::tuple<const Args&...> targs(args...);
    auto fa = detail::flatten_args(targs, {});
    if (fa.key != c_.key().substr(0, fa.key.size()))
      fail<TypeError>("compiled function: called with arguments of another structure or other static values ",
                      "than it was lowered for");
    return tree_unflatten<Out>(c_.out_def(), c_(fa.leaves));
  }
  std::string as_text() const { return c_.as_text(); }
  compiler::CostAnalysis cost_analysis() const { return c_.cost_analysis(); }
  MemoryAnalysis memory_analysis() const { return c_.memory_analysis(); }
  const Compiled& flat() const { return c_; }

 private:
  Compiled c_;
};

/// A typed Lowered: `jit(f).lower(args...)` (JAX's ahead-of-time stage), then `.compile()`.
template <class Out>
class LoweredFn {
 public:
  explicit LoweredFn(Lowered l) : l_(std::move(l)) {}
  std::string as_text() const { return l_.as_text(); }
  const ClosedJaxpr& jaxpr() const { return l_.jaxpr(); }
  compiler::CostAnalysis cost_analysis() const { return l_.cost_analysis(); }
  CompiledFn<Out> compile() const { return CompiledFn<Out>(l_.compile()); }
  const Lowered& flat() const { return l_; }

 private:
  Lowered l_;
};

template <class F>
class Jitted {
 public:
  Jitted(F f, JitOptions o) : f_(std::move(f)), jit_(std::move(o)) {}
  template <class... Args>
    requires std::is_invocable_v<const F&, const Args&...>
  auto operator()(const Args&... args) const {
    return detail::flat_call(f_, [&](FlatCall& c) { return jit_(c); }, args...);
  }
  /// Traces and compiles f for these arguments' types without running it (JAX's
  /// `jit(f).lower(*args)`): `.as_text()`, `.cost_analysis()`, `.compile()` -> a callable for them.
  template <class... Args>
    requires std::is_invocable_v<const F&, const Args&...>
  auto lower(const Args&... args) const {
    using Out = detail::result_t<F, Args...>;
    return LoweredFn<Out>(detail::with_flat_call(f_, {}, [&](FlatCall& c) { return jit_.lower(c); }, args...));
  }
  /// Number of times the function was traced (cache misses) for an exact signature.
  size_t num_traces() const { return jit_.num_traces(); }
  /// Number of programs compiled: one per exact signature, and with `polymorphic` one per bucket.
  size_t num_compiles() const { return jit_.num_compiles(); }

 private:
  F f_;
  JitFunction jit_;  // the front end shared with Python (graft/transforms/jit.h)
};

/// jit(f): stage f into a jaxpr once per argument signature (avals + static argument values) and run
/// the compiled program on later calls. Non-array arguments are static.
template <class F>
Jitted<F> jit(F f, JitOptions o = {}) {
  return Jitted<F>(std::move(f), std::move(o));
}

/// named_call(f, name): f whose equations carry `name` on their name stack when traced (JAX's
/// jax.named_call; see NameScope in graft/core/trace.h).
template <class F>
auto named_call(F f, std::string name) {
  return [f = std::move(f), name = std::move(name)](const auto&... args) {
    NameScope scope(name);
    return f(args...);
  };
}

// ---- make_jaxpr ---------------------------------------------------------------------------------------
/// make_jaxpr(f)(args...): the jaxpr of f at these argument types (print it with <<).
template <class F>
auto make_jaxpr(F f) {
  return [f](const auto&... args)
             requires std::is_invocable_v<const F&, decltype(args)...>
  {
    return detail::with_flat_call(
        f, {},
        [](FlatCall& c) {
          std::vector<Aval> avals;
          for (auto& x : c.leaves) avals.push_back(x.aval());
          return make_jaxpr_flat(c.fn, avals);
        },
        args...);
  };
}

// ---- JAX's names for the C++ spellings ------------------------------------------------------------------
/// jax.ShapeDtypeStruct: an array's type without its data.
using ShapeDtypeStruct = Aval;
/// eval_shape(f, args...): the types of f's output leaves for these arguments (arrays; nothing is computed).
template <class F, class... Args>
std::vector<ShapeDtypeStruct> eval_shape(F f, const Args&... args) {
  return detail::with_flat_call(
      f, {},
      [](FlatCall& c) {
        std::vector<Aval> avals;
        for (auto& x : c.leaves) avals.push_back(x.aval());
        return eval_shape_flat(c.fn, avals);
      },
      args...);
}
/// jax.named_scope: `graft::named_scope s("encoder");` (NameScope, graft/core/trace.h).
using named_scope = NameScope;
/// jax.ensure_compile_time_eval: `graft::ensure_compile_time_eval now;` (CompileTimeEvalScope).
using ensure_compile_time_eval = CompileTimeEvalScope;

// ---- jacobians ----------------------------------------------------------------------------------------
namespace detail {
/// [n, *shape] stack of the n unit basis vectors of an array of `shape` (dtype d).
Array basis(const Shape& shape, DType d);
/// The flat function x -> f(x, rest...) for an Array-valued f of an Array first argument.
template <class F, class... Rest>
FlatFn first_arg_fn(const F& f, const std::tuple<const Rest&...>& rest) {
  return [&f, &rest](const std::vector<Array>& xs) {
    Array y = std::apply([&](const Rest&... r) { return Array(f(xs[0], r...)); }, rest);
    return std::vector<Array>{y};
  };
}
Shape concat_shapes(const Shape& a, const Shape& b);
}  // namespace detail

/// Forward-mode Jacobian with respect to the first argument: shape out.shape + x.shape.
template <class F>
auto jacfwd(F f) {
  return [f](const Array& x, const auto&... rest)
             requires std::is_invocable_v<const F&, const Array&, decltype(rest)...>
  {
    auto trest = std::tuple<const detail::D<decltype(rest)>&...>(rest...);
    FlatFn g = detail::first_arg_fn(f, trest);
    Array e = detail::basis(x.shape(), x.dtype());
    Shape out_shape;
    FlatFn push = [&](const std::vector<Array>& t) {
      auto [po, to] = jvp_flat(g, {x}, {t[0]});
      out_shape = po[0].shape();
      return to;
    };
    Array cols = vmap_flat(push, {e}, {0}, {-1})[0];  // [*out, n]
    return lax::reshape(cols, detail::concat_shapes(out_shape, x.shape()));
  };
}

/// Reverse-mode Jacobian with respect to the first argument: shape out.shape + x.shape.
template <class F>
auto jacrev(F f) {
  return [f](const Array& x, const auto&... rest)
             requires std::is_invocable_v<const F&, const Array&, decltype(rest)...>
  {
    auto trest = std::tuple<const detail::D<decltype(rest)>&...>(rest...);
    FlatFn g = detail::first_arg_fn(f, trest);
    VjpResult r = vjp_flat(g, {x});
    Shape out_shape = r.outs[0].shape();
    Array e = detail::basis(out_shape, r.outs[0].dtype());
    FlatFn pull = [&](const std::vector<Array>& ct) { return r.pullback(ct); };
    Array rows = vmap_flat(pull, {e}, {0}, {0})[0];  // [m, *x]
    return lax::reshape(rows, detail::concat_shapes(out_shape, x.shape()));
  };
}

/// The Hessian of a scalar function of its first argument: jacfwd(jacrev(f)).
template <class F>
auto hessian(F f) {
  return jacfwd(jacrev(std::move(f)));
}

// ---- custom derivatives ------------------------------------------------------------------------------
/// f with a user-supplied JVP rule:
///   auto f = custom_jvp([](const Array& x) { return log1p(exp(x)); },
///                       [](const std::vector<Array>& p, const std::vector<Array>& t) {
///                         Array y = log1p(exp(p[0]));
///                         return std::make_pair(y, t[0] * logistic(p[0]));
///                       });
/// The rule gets the flattened array arguments and their tangents (zeros, never null) and returns
/// (output, output tangent) in f's output structure. It must be linear in the tangents (reverse mode
/// is derived from it). Arrays the function closes over are treated as constants.
template <class F, class R>
class CustomJvpFn {
 public:
  CustomJvpFn(F f, R rule, std::string name) : f_(std::move(f)), rule_(std::move(rule)), name_(std::move(name)) {}
  template <class... Args>
    requires std::is_invocable_v<const F&, const Args&...>
  auto operator()(const Args&... args) const {
    using Out = detail::result_t<F, Args...>;
    R rule = rule_;
    CustomJvpRule flat_rule = [rule](const std::vector<Array>& ps, const std::vector<Array>& ts) {
      auto [o, t] = rule(ps, ts);
      return std::make_pair(tree_flatten<Out>(o), tree_flatten<Out>(t));
    };
    return detail::flat_call(
        f_, [&](FlatCall& c) { return custom_jvp_apply(c.fn, flat_rule, c.leaves, name_); }, args...);
  }

 private:
  F f_;
  R rule_;
  std::string name_;
};
template <class F, class R>
CustomJvpFn<F, R> custom_jvp(F f, R rule, std::string name = "custom_jvp") {
  return CustomJvpFn<F, R>(std::move(f), std::move(rule), std::move(name));
}

/// f with a user-supplied VJP:
///   fwd(primals)            -> std::pair<Out, std::vector<Array>>   (output, residuals)
///   bwd(residuals, ct: Out) -> std::vector<Array>                   (one cotangent per array argument)
/// Forward mode (jvp) of such a function raises TypeError, as in JAX.
template <class F, class Fwd, class Bwd>
class CustomVjpFn {
 public:
  CustomVjpFn(F f, Fwd fwd, Bwd bwd, std::string name)
      : f_(std::move(f)), fwd_(std::move(fwd)), bwd_(std::move(bwd)), name_(std::move(name)) {}
  template <class... Args>
    requires std::is_invocable_v<const F&, const Args&...>
  auto operator()(const Args&... args) const {
    using Out = detail::result_t<F, Args...>;
    Fwd fwd = fwd_;
    Bwd bwd = bwd_;
    auto def = std::make_shared<TreeDef>();
    CustomFwd flat_fwd = [fwd, def](const std::vector<Array>& ps) {
      auto [o, res] = fwd(ps);
      return std::make_pair(tree_flatten<Out>(o, def.get()), std::vector<Array>(res.begin(), res.end()));
    };
    CustomBwd flat_bwd = [bwd, def](const std::vector<Array>& res, const std::vector<Array>& cts) {
      return bwd(res, tree_unflatten<Out>(*def, cts));
    };
    return detail::flat_call(
        f_, [&](FlatCall& c) { return custom_vjp_apply(c.fn, flat_fwd, flat_bwd, c.leaves, name_); }, args...);
  }

 private:
  F f_;
  Fwd fwd_;
  Bwd bwd_;
  std::string name_;
};
template <class F, class Fwd, class Bwd>
CustomVjpFn<F, Fwd, Bwd> custom_vjp(F f, Fwd fwd, Bwd bwd, std::string name = "custom_vjp") {
  return CustomVjpFn<F, Fwd, Bwd>(std::move(f), std::move(fwd), std::move(bwd), std::move(name));
}

}  // namespace graft
