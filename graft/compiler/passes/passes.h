// The compiler's passes, one per file in this folder. Each takes a closed jaxpr and returns an
// equivalent one; graft/compiler/pipeline.cpp lists them in the order they run.
#pragma once

#include "graft/ir/jaxpr.h"

namespace graft::compiler::passes {

/// inline: replaces calls (nested jit, custom_jvp_call, custom_vjp_call) by the equations of their
/// bodies, so that the other passes see one flat program.
ClosedJaxpr inline_calls(const ClosedJaxpr& j);
/// dce: removes equations whose results nothing reads, and constants nothing uses.
ClosedJaxpr eliminate_dead_code(const ClosedJaxpr& j);
/// cse: equations that apply the same primitive with the same parameters to the same operands are
/// computed once.
ClosedJaxpr eliminate_common_subexpressions(const ClosedJaxpr& j);
/// fold_constants: evaluates equations whose operands are all known (literals, constants) and whose
/// results are small, replacing them by literals or constants.
ClosedJaxpr fold_constants(const ClosedJaxpr& j);
/// simplify: algebraic identities (x*1, x+0, neg(neg x), transpose∘transpose, reshape chains,
/// broadcast chains, identity conversions, stop_gradient at run time, transposed products).
ClosedJaxpr simplify(const ClosedJaxpr& j);
/// widen_half_products: on a CPU without bf16 dot products, a product of bf16 or f16 operands runs in
/// f32 between conversions, which fuse into the neighbouring loops (a speed rewrite: results round
/// where they did). With excess precision (fusion.h, the default), bf16 arithmetic as a whole moves to
/// f32 there and rounds only where a bf16 value is read (the program's outputs, other primitives).
ClosedJaxpr widen_half_products(const ClosedJaxpr& j);
/// Declares that bf16 equations of `p` compute in f32 and round their bf16 results (an f32 equation
/// with the same parameters gives those results unrounded, its other results unchanged), so that
/// widen_half_products may move them to f32 with the elementwise and structural primitives it knows.
/// For primitives of the layers above (nn's fused attention); thread-safe.
void register_bf16_in_f32(const Primitive& p);
/// accumulate_dots: a product scaled and added to a value of its type (w - 0.01 * dot(x, dy)) becomes
/// one dot_general_add, a GEMM that accumulates into that value (graft/compiler/cpu/accumulate.h).
ClosedJaxpr accumulate_dots(const ClosedJaxpr& j);
/// gemm_epilogues: a bias add (and ReLU) folded into its matrix product, a weight gradient paired with
/// its bias gradient (graft/compiler/epilogue.h); programs for devices.
ClosedJaxpr gemm_epilogues(const ClosedJaxpr& j);
/// fuse: groups elementwise chains, their broadcasts and row reductions into `fusion` equations
/// that run as one loop over tiles (graft/compiler/fusion.h).
ClosedJaxpr fuse(const ClosedJaxpr& j);

}  // namespace graft::compiler::passes
