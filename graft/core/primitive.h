// Primitive: a named operation together with ALL of its rules.
//
// Every computation in graft is a sequence of primitive applications. A primitive's rules give it its
// meaning under each interpreter:
//   shape      avals in -> avals out (shape/dtype inference; used by tracing and the verifier)
//   impl       the eager CPU evaluation
//   jvp        forward-mode derivative, written with primitives (so it can be differentiated again)
//   transpose  for primitives linear in some inputs: cotangents out -> cotangents in
//   batch      the vmap rule: (values, batch dims) -> (values, batch dims)
// The rules for one primitive family live in one file under graft/prims/; the list of all primitives
// is graft/prims/primitives.def.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "graft/core/array.h"
#include "graft/core/params.h"
#include "graft/core/small_vector.h"

namespace graft {

/// Results and argument lists of primitives (inline for up to two arrays).
using Arrays = SmallVector<Array, 2>;
using Avals = SmallVector<Aval, 1>;
using AvalPtrs = std::span<const Aval* const>;
/// Batch dimension of each value under vmap; kNotMapped for values without one.
using BatchDims = SmallVector<int64_t, 2>;
inline constexpr int64_t kNotMapped = -1;

struct Primitive;

/// Forward derivative: primal and tangent outputs. A null tangent is a symbolic zero.
struct JvpResult {
  Arrays primals, tangents;
};

/// An argument of a primitive being transposed: either a known value (a residual) or a linear input,
/// whose value is undefined (only its aval is known) and whose cotangent the rule must return.
struct TArg {
  Array value;  ///< null for linear inputs
  Aval aval;
  bool linear = false;
};

/// What a batching rule knows about the mapped axis.
struct BatchInfo {
  int64_t size = 0;
  std::string name;  ///< the axis name (for collectives), may be empty
};

struct BatchResult {
  Arrays values;
  BatchDims dims;
};

using ShapeRule = Avals (*)(const Primitive& p, AvalPtrs in, const Params& params);
using ImplRule = Arrays (*)(const Primitive& p, std::span<const Array> in, std::span<const Aval> out_avals,
                            const Params& params);
using JvpRule = JvpResult (*)(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                              const Params& params);
/// Returns one cotangent per argument: null for non-linear arguments and for zero cotangents.
/// `cts` has one entry per output; null entries are zero cotangents.
using TransposeRule = Arrays (*)(const Primitive& p, std::span<const Array> cts, std::span<const TArg> args,
                                 const Params& params);
using BatchRule = BatchResult (*)(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                                  const BatchInfo& axis, const Params& params);

/// A kernel that the fusion compiler chains over tiles of a fused loop (graft/compiler/fused_kernel.h).
/// Map (elementwise primitives): out[i] = f(in_0[i * step_0], in_1[i * step_1], ...) for i < n, where a
/// step of 0 repeats an operand's first element. Reduce: folds n contiguous elements into *acc (of the
/// output dtype), starting from the reduction's identity when `init` is set.
struct TileKernel;
using MapTileFn = void (*)(const TileKernel& k, void* out, const void* const* in, const uint8_t* step, int64_t n);
using ReduceTileFn = void (*)(void* acc, const void* in, int64_t n, bool init);
struct TileKernel {
  MapTileFn map = nullptr;
  ReduceTileFn reduce = nullptr;
  int64_t iparam = 0;                         ///< an integer parameter (integer_pow's y, round's method)
  DType in_dtype = DType::f32, out_dtype = DType::f32;  ///< for conversions
  int32_t num_inputs = 0;
  explicit operator bool() const { return map || reduce; }
};
/// The tile kernel of `prim` applied to operands of the given types; an empty TileKernel when the
/// primitive cannot run inside a fused loop for these types.
using TileRule = TileKernel (*)(const Primitive& p, std::span<const Aval> in, const Params& params);

/// Which results of an application depend on its linear inputs (`linear_in`), for higher-order
/// primitives whose results mix primal and tangent values (a call of a jvp'd function, a cond over
/// jvp'd branches). Without the rule, every result of an application with a linear input is linear.
using LinearOutputsRule = std::vector<bool> (*)(const Primitive& p, const std::vector<bool>& linear_in,
                                                const Params& params);

/// Properties the interpreters and the compiler use.
enum PrimFlags : uint32_t {
  kElementwise = 1u << 0,    ///< same-shape elementwise op (fusible)
  kMultipleResults = 1u << 1,
  kHigherOrder = 1u << 2,    ///< carries sub-jaxprs in its params
  kNotDifferentiable = 1u << 3,  ///< integer/boolean outputs: tangents are always zero
  kEffectful = 1u << 4,      ///< must not be removed or duplicated by the compiler
  kCall = 1u << 5,           ///< evaluates the closed jaxpr in its `jaxpr` (or `call_jaxpr`) parameter on
                             ///< its operands, nothing else: the compiler may inline it
  kVmaRule = 1u << 7,        ///< its shape rule sets its outputs' varying named axes (from its body's
                             ///< types: a scan accumulating psums is invariant though its xs vary)
  kPlacement = 1u << 8,      ///< decides where it runs itself (device_put): the eager dispatcher
                             ///< passes its operands as they are, wherever they live
  kCollective = 1u << 6,     ///< communicates over named axes (prims/collective.cpp): its shape rule sets
                             ///< its outputs' varying axes, and its transpose rule places the reductions
};

struct Primitive {
  const char* name;
  uint32_t flags = 0;
  ShapeRule shape = nullptr;
  ImplRule impl = nullptr;
  JvpRule jvp = nullptr;
  TransposeRule transpose = nullptr;
  BatchRule batch = nullptr;
  /// Optional reverse-mode variant of `jvp`, used while linearizing (grad/vjp). It runs with the
  /// tangent-staging trace current and must keep primal work out of the staged linear program
  /// (higher-order primitives such as jit split their body into a known and a linear part).
  JvpRule linearize = nullptr;
  /// Family-specific data (e.g. the elementwise functor table); opaque to the interpreters.
  const void* data = nullptr;
  /// Optional: the kernel the fusion compiler uses for this primitive inside fused loops.
  TileRule tile = nullptr;
  /// Optional (see LinearOutputsRule); used by the backward pass.
  LinearOutputsRule linear_outputs = nullptr;

  bool has(PrimFlags f) const { return (flags & f) != 0; }
};

/// The kernel of primitive `p` on devices of type `device_type`, registered by that
/// backend's rules (graft/backends/cuda/). The rule receives operands on that device and returns outputs
/// there. A primitive without one runs its decomposition (below) when it has one, else through the
/// host: its operands are copied to the
/// CPU, the CPU impl runs, and the results are copied back (counted by device_fallbacks()).
void register_device_impl(int16_t device_type, const Primitive& p, ImplRule fn);
ImplRule device_impl(int16_t device_type, const Primitive& p);
/// A rule that expresses p through other primitives, for devices with no kernel of their own for p
/// (graft/prims/decompose.cpp: windows and convolution through pad, slice and dot_general, ...). Any
/// device type uses it; each primitive it binds is placed and dispatched again. It may itself send a
/// case it does not cover to host_fallback.
void register_device_decomposition(const Primitive& p, ImplRule fn);
ImplRule device_decomposition(const Primitive& p);
/// Runs p on device `dev` through its decomposition (eagerly, `dev` the default device), or through the
/// host when it has none. For device rules that meet a case their kernels do not cover.
Arrays decompose_on_device(const Primitive& p, std::span<const Array> in, std::span<const Aval> outs,
                           const Params& params, Device dev);
/// Runs p on device `dev` through the host: operands copied to the CPU, the CPU impl, results copied
/// back to `dev` (and counted). For device rules that meet a case their kernels do not cover.
Arrays host_fallback(const Primitive& p, std::span<const Array> in, std::span<const Aval> outs, const Params& params,
                     Device dev);
/// Runs p on device `dev` with operands already there and its result types known (a compiled
/// program's step): the device's kernel, else its decomposition, else through the host — what eager
/// dispatch does after its type inference and placement, which a compiled program has done once.
/// Results are committed when an operand is.
Arrays run_step_on_device(const Primitive& p, std::span<const Array> in, std::span<const Aval> outs, const Params& params,
                          Device dev);
/// How many times each primitive ran through the host on another device type (name, count).
std::vector<std::pair<std::string, int64_t>> device_fallbacks(int16_t device_type);

}  // namespace graft
