// The eager tape: reverse mode in the PyTorch / TF2 style, on the same linearize machinery as grad.
//
//   GradientTape tape;                       // records while it is alive (a scope)
//   Array w = tape.watch(w0);                // compute with the watched array
//   Array loss = sum(tanh(matmul(x, w)));
//   Array gw = tape.gradient(loss, w);        // d loss / d w
//
// or, without a scope:
//
//   Array w = w0;  w.requires_grad_();       // a leaf of this thread's default tape
//   loss(w).backward();  loss(w).backward(); // gradients accumulate
//   w.grad();  w.zero_grad_();
//
// Each operation on a watched value runs its primitive's linearize rule at once: the primal result is
// computed now and the operation's small linear program (its tangent equations, with the residuals it
// needs) is kept in a node that the result refers to. Nothing else is recorded, and a node lives only
// as long as some value computed from it: what is no longer reachable is freed. gradient() walks the
// nodes reachable from its target backward, transposing each linear program (backward_pass), with the
// tape's parent interpreter current — so an enclosing tape records the backward pass and a gradient
// taken on a tape inside a tape can be differentiated again.
#pragma once

#include <vector>

#include "graft/core/array.h"
#include "graft/core/trace.h"

namespace graft {

class TapeTrace;

class GradientTape {
 public:
  GradientTape();
  ~GradientTape();
  GradientTape(const GradientTape&) = delete;
  GradientTape& operator=(const GradientTape&) = delete;

  /// A version of x whose uses this tape records (x itself is unchanged).
  Array watch(const Array& x);
  /// Ends the recording scope now (TF2's `with` block ending) while gradient() stays available.
  /// Tapes stop in the reverse order of their creation on a thread.
  void stop_recording();
  /// d target / d source for each source (zeros for sources the target does not depend on). A
  /// non-scalar target is differentiated as the sum of its elements.
  std::vector<Array> gradient(const Array& target, const std::vector<Array>& sources) const;
  Array gradient(const Array& target, const Array& source) const { return gradient(target, std::vector<Array>{source})[0]; }
  /// Recorded operations alive in this process (all tapes): a node lives as long as a value uses it.
  static int64_t live_nodes();

 private:
  Ref<TapeTrace> trace_;
  TraceScope* scope_;
};

/// The PyTorch-style entry points (x.requires_grad_(), loss.backward(), x.grad(), x.zero_grad_() call
/// these): make x a leaf of this thread's default tape; add d loss / d leaf to every leaf's gradient;
/// the gradient accumulated on leaf x; clear it.
Array& requires_grad(Array& x);
void backward(const Array& loss);
Array tape_grad(const Array& x);
void zero_grad(const Array& x);

template <>
struct ArrayTape<void> {
  static Array& requires_grad(Array& x) { return graft::requires_grad(x); }
  static void backward(const Array& loss) { graft::backward(loss); }
  static Array grad(const Array& x) { return tape_grad(x); }
  static void zero_grad(const Array& x) { graft::zero_grad(x); }
};

}  // namespace graft
