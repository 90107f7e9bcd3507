// The fusion primitive and the grouping geometry every target shares (see fusion.h).
#include "graft/compiler/fusion.h"

#include <algorithm>
#include <atomic>

#include "graft/compiler/cpu/fused_kernel.h"
#include "graft/core/env.h"
#include "graft/core/error.h"
#include "graft/core/placement.h"
#include "graft/core/trace.h"

namespace graft::compiler {

namespace {
std::atomic<int> g_excess{-1};  // -1: not decided yet
}

bool excess_precision() {
  int v = g_excess.load();
  if (v < 0) {
    v = env::flag("GRAFT_EXCESS_PRECISION", true) ? 1 : 0;
    g_excess.store(v);
  }
  return v == 1;
}

void set_excess_precision(bool on) { g_excess.store(on ? 1 : 0); }

// ---- geometry shared with the fuse pass -------------------------------------------------------------
std::optional<BroadcastPattern> broadcast_pattern(const Shape& operand, const Shape& result, const IntList& dims) {
  std::vector<int64_t> kept;  // result dimensions that carry an operand dimension of size > 1
  for (size_t i = 0; i < dims.size(); ++i)
    if (operand[i] != 1) kept.push_back(dims[i]);
  BroadcastPattern p;
  if (kept.empty()) return p;
  size_t k = 0;
  for (int64_t d = kept.front(); d <= kept.back(); ++d) {
    if (k < kept.size() && kept[k] == d) {
      p.mod *= result[static_cast<size_t>(d)];
      ++k;
    } else if (result[static_cast<size_t>(d)] != 1) {
      return std::nullopt;
    }
  }
  for (size_t d = static_cast<size_t>(kept.back()) + 1; d < result.size(); ++d) p.inner *= result[d];
  return p;
}

int64_t fusible_row_length(const Eqn& e) {
  if (!e.prim->tile || e.inputs.size() != 1 || e.outputs.size() != 1) return 0;
  const Aval& x = e.inputs[0].aval();
  TileKernel k = e.prim->tile(*e.prim, {&x, 1}, e.params);
  if (!k.reduce) return 0;
  IntList axes = e.params.get_ints("axes");
  std::sort(axes.begin(), axes.end());
  int64_t nd = x.ndim(), c = 1;
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] != nd - static_cast<int64_t>(axes.size()) + static_cast<int64_t>(i)) return 0;
    c *= x.shape[static_cast<size_t>(axes[i])];
  }
  if (c < 2 || e.outputs[0]->aval.size() < 1) return 0;
  return c;
}

// ---- the primitive --------------------------------------------------------------------------------------
const ClosedJaxpr& fusion_body(const Params& params) { return params.get_jaxpr("jaxpr"); }

namespace {

Avals fusion_shape(const Primitive&, AvalPtrs in, const Params& params) {
  const ClosedJaxpr& b = fusion_body(params);
  const auto& invars = b.jaxpr->invars;
  if (in.size() != invars.size()) fail<ValueError>("fusion: the body takes ", invars.size(), " operands, got ", in.size());
  for (size_t i = 0; i < in.size(); ++i)
    if (!in[i]->same_type(invars[i]->aval))
      fail<TypeError>("fusion: operand ", i, " has type ", in[i]->str(), ", the body expects ", invars[i]->aval.str());
  Avals out;
  for (auto& a : b.out_avals()) out.push_back(a);
  return out;
}

Arrays fusion_impl(const Primitive& p, std::span<const Array> in, std::span<const Aval> outs, const Params& params) {
  // Placed as eager primitives are (graft/core/placement.h). On the CPU: the tiled executor. Off it, a
  // device whose backend generates fused loops gets the operands it lacks and runs its kernel; on
  // another device the body runs op by op, each primitive placed as eager code would be.
  Placement pl = place(in, "fusion");
  if (pl.device.is_cpu()) {
    if (!pl.moves) return FusedKernel::of(fusion_body(params)).run(in);
    SmallVector<Array, 4> host(in.begin(), in.end());
    for (Array& a : host)
      if (a.is_concrete() && !a.concrete()->device().is_cpu()) a = transfer(a, pl.device);
    return FusedKernel::of(fusion_body(params)).run(std::span<const Array>(host.data(), host.size()));
  }
  ImplRule fn = device_impl(pl.device.type, p);
  if (!fn) return eval_jaxpr(fusion_body(params), in);
  // operands are handed over as they are when all are there: a kernel may take over the buffer of
  // one that nothing else holds (an in-place update)
  SmallVector<Array, 4> here;
  if (pl.moves) {
    here.assign(in.begin(), in.end());
    for (Array& a : here)
      if (a.is_concrete() && a.concrete()->device() != pl.device) a = transfer(a, pl.device);
  }
  Arrays res = fn(p, pl.moves ? std::span<const Array>(here.data(), here.size()) : in, outs, params);
  if (pl.committed)  // results of committed operands are committed, as eager primitives' are
    for (Array& r : res)
      if (auto* c = r.concrete()) c->set_committed(true);
  return res;
}

}  // namespace

// Compiler-internal: fused programs are made after all transformations ran, so there are no rules
// for differentiation or batching (binding it under one raises NotImplementedError).
const Primitive fusion_p{"fusion", kHigherOrder | kMultipleResults, &fusion_shape, &fusion_impl};

}  // namespace graft::compiler
