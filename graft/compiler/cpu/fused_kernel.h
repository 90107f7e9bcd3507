// The CPU's code generator for fused loops: the tiled executor and its LLVM-generated loops
// (graft/compiler/cpu/codegen.h) run the `fusion` primitive's bodies (graft/compiler/fusion.h).
//
// FusedKernel runs the body as a program over tiles of the domain: blocks of whole rows (so a
// softmax row is read from memory once and its intermediates never leave the cache), or fixed-size
// tiles when the body has no reductions. Intermediates live in small per-thread scratch registers;
// the kernels are the primitives' own tile kernels (TileKernel), vectorized by the C++ compiler.
// Rows longer than kMaxRowElements are processed in chunks, which the pass allows only when no
// full-sized value depends on a reduction of the group. A body without reductions that became
// generated loops only (no tile kernel, no scratch) runs each thread's share as one range per loop.
// Blocks of several short rows (a layer norm's rows of 128) run their generated loops row by row
// inside one call: a loop reads its rows' values (a mean) and one-row operands (a scale) in place,
// and folds each row's reductions into that row's accumulator, where the tile kernels would expand
// the row values to every element, load the operands into every row, and reduce in separate passes.
// Blocks of one row whose program ends in two generated loops are pipelined: the last loop of row r
// runs inside the loop before it of row r + 1 (one generated loop), so that row r's stores stream
// out during row r + 1's arithmetic.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "graft/compiler/fusion.h"

namespace graft::compiler {

/// Elements a tile of a loop without reductions holds (small enough that a few registers of them
/// stay in L1).
inline constexpr int64_t kTileElements = 2048;

/// Chooses, call by call, between two interchangeable variants of a kernel from their measured run
/// times. Fused loops whose outputs exceed the caches come in two: non-temporal stores (half the
/// memory traffic of a store, no read for ownership) and ordinary stores. Which one is faster depends
/// on the moment: with memory busy the saved traffic wins, with compute-heavy bodies and free memory
/// the ordinary stores (non-temporal stores hold a core's store pipeline and cost a compute-bound
/// chain up to a fifth; measured either way within minutes on the same virtual machine). The tuner
/// alternates the variants for its first calls, then runs the one whose best time among its last
/// kWindow calls is lower and re-measures the other every kExplore-th call (every 4 kExplore-th while
/// it is more than 10% behind). The best of recent times rather than an average: a shared machine only
/// ever slows a call down, so one disturbed call (often the first after another program flushed the
/// caches) must not hand the choice to the slower variant until a slow average recovers. Thread-safe.
class VariantTuner {
 public:
  static constexpr int kExplore = 16;
  static constexpr int kWindow = 4;
  /// The variant (0 or 1) to run next.
  int pick();
  /// Reports the run time of a call of variant v (the first call of each is ignored: it faults in
  /// fresh pages).
  void record(int v, double seconds);
  /// The best of variant v's last kWindow recorded times (0 before any).
  double score(int v) const;

 private:
  double score_locked(int v) const;
  mutable std::mutex mu_;
  int64_t calls_ = 0;
  int64_t seen_[2] = {0, 0};
  double recent_[2][kWindow] = {};
};

/// A fused body compiled for the tiled executor.
class FusedKernel {
 public:
  /// Compiles `body`; with defer_codegen its generated loops get machine code later (compile_all).
  explicit FusedKernel(const ClosedJaxpr& body, bool defer_codegen = false);
  ~FusedKernel();
  /// Runs on concrete CPU arrays of the body's input types; returns its outputs.
  Arrays run(std::span<const Array> args) const;
  /// The same, with operand i taken from dead[i] where that is not null: operands the caller will not
  /// read again, moved out of its hands. An output may take over such an operand's buffer when no
  /// other handle to it exists (an in-place update).
  Arrays run(std::span<const Array> args, std::span<Array> dead) const;
  /// The operands whose buffer output `o` may take over when the operand dies at this loop, in order
  /// of preference (each operand serves one output at most: the first output to claim it).
  std::span<const int32_t> reusable_operands(size_t o) const;
  /// The program it runs, one word per instruction: the domain's shape ("tiles", "ranges" for
  /// generated loops over whole shares of the domain, "rows RxC", "chunked rows RxC"; "pipelined"
  /// when rows overlap as described above), then primitives run by tile kernels and generated loops with the
  /// primitives they compute (a reduction folded into a loop after "; "), e.g.
  /// "rows 4096x4096: loop(reduce_max) loop(sub exp; reduce_sum) loop(div)".
  std::string program() const;
  /// Whether its loops come with and without non-temporal stores, chosen per call by a VariantTuner
  /// (outputs of kStreamingBytes or more); GRAFT_STREAMING_STORES=on / off forces one.
  bool tunes_stores() const;
  /// The kernel cached on `body` (compiled on first use).
  static const FusedKernel& of(const ClosedJaxpr& body);
  /// Compiles the kernels of several bodies (a program's fused loops) at once: all their generated
  /// loops go to LLVM as one module, which is one compilation and one object in the disk cache.
  static void compile_all(std::span<const ClosedJaxpr* const> bodies);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace graft::compiler
