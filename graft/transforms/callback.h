// Host callbacks (JAX's pure_callback, io_callback and debug.callback): a function of concrete arrays
// called from inside traced programs, jit included, as the primitives pure_callback, io_callback and
// debug_callback. Under vmap the callback is called once per example; under grad pure_callback and
// io_callback raise (wrap them in custom_jvp to give them a derivative) and debug_callback sees the primal
// values.
//
//   auto f = jit([](const Array& x) {
//     auto r = pure_callback([](const std::vector<Array>& a) { return std::vector<Array>{a[0] * 2.0}; },
//                            {x.aval()}, {x});
//     debug_callback([](const std::vector<Array>& a) { std::cout << a[0] << "\n"; }, {r[0]});
//     return r[0];
//   });
#pragma once

#include <functional>
#include <vector>

#include "graft/core/array.h"

namespace graft {

/// A function on the host from concrete arrays to concrete arrays.
using HostFn = std::function<std::vector<Array>(const std::vector<Array>&)>;

/// Calls f on the concrete values of args and returns its results, which must have `result_avals`
/// (a TypeError names the mismatch). f must be pure: a compiled program may drop a call whose results
/// are unused, or merge two equal calls.
std::vector<Array> pure_callback(HostFn f, const std::vector<Aval>& result_avals, const std::vector<Array>& args);
/// The same for a function with side effects: never dropped or merged, called in program order.
std::vector<Array> io_callback(HostFn f, const std::vector<Aval>& result_avals, const std::vector<Array>& args);
/// f(args) for its side effects only (printing, logging); kept under jit, called with the primal values
/// under differentiation.
void debug_callback(std::function<void(const std::vector<Array>&)> f, const std::vector<Array>& args);

}  // namespace graft
