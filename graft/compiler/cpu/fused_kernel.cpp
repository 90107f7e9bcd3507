// The CPU's tiled executor for fused loops (see fused_kernel.h for the model).
#include "graft/compiler/cpu/fused_kernel.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>
#include <string>
#include <unordered_map>

#include "graft/compiler/cpu/codegen.h"
#include "graft/core/env.h"
#include "graft/core/error.h"
#include "graft/prims/primitives.h"
#include "graft/runtime/cpu/parallel.h"

namespace graft::compiler {

// ---- the compiled program -----------------------------------------------------------------------------
namespace {

// How a register's values vary inside a block: one value, one per row, or one per element; column:
// an input of one row's length read at every row's elements (generated loops over several rows only,
// see Impl::elide_broadcasts).
enum class Vary : uint8_t { uniform = 0, row = 1, full = 2, column = 3 };

struct Reg {
  enum Kind : uint8_t { input, output, scratch, constant } kind;
  Vary vary;
  DType dtype;
  int32_t index;  // input/output/constant index, or scratch slot
};

enum class Op : uint8_t { map, load, expand, reduce, store, loop };

struct Instr {
  Op op = Op::map;
  uint8_t stage = 1;  // chunked rows: 0 once before the chunks, 1 per chunk, 2 once after
  int32_t out;        // loop: the first of `outs`
  SmallVector<int32_t, 3> in;
  SmallVector<uint8_t, 3> step;
  TileKernel k;
  BroadcastPattern pattern;
  int32_t input = -1;  // load: the input read
  // map: the equation, kept for code generation
  const Primitive* prim = nullptr;
  Params params;
  // loop: generated machine code for a run of maps (and a reduction of one of its values); reads
  // `in`, writes `outs` (stored values, then the reduction's accumulator)
  LoopFn fn[2] = {nullptr, nullptr};  // with non-temporal stores, with ordinary ones (the same when none stream)
  std::vector<int32_t> outs;
  bool loop_reduces = false;  // the last of `outs` is a reduction's accumulator
  Vary loop_vary = Vary::full;
  std::string label;  // loop: its primitives, for FusedKernel::program
  bool needs_loop = false;  // a map reading a row or column register in place: only a generated loop can
};

std::span<const int32_t> outputs_of(const Instr& ins) {
  if (ins.op == Op::loop) return ins.outs;
  return {&ins.out, 1};
}

constexpr size_t kMaxMapOperands = 8;
constexpr size_t kMaxLoopPointers = 64;
// Inputs at least this large (beyond a core's L2) are read with software prefetches in plain loops.
constexpr int64_t kPrefetchBytes = int64_t(1) << 20;

[[noreturn]] void internal(const std::string& why) {
  fail<ValueError>("fusion: cannot compile this fused body (", why, "); this is a graft compiler bug");
}

void fill(char* dst, const char* value, int64_t count, size_t size) {
  switch (size) {
    case 1: std::memset(dst, *value, static_cast<size_t>(count)); return;
    case 2: {
      uint16_t v;
      std::memcpy(&v, value, 2);
      std::fill_n(reinterpret_cast<uint16_t*>(dst), count, v);
      return;
    }
    case 4: {
      uint32_t v;
      std::memcpy(&v, value, 4);
      std::fill_n(reinterpret_cast<uint32_t*>(dst), count, v);
      return;
    }
    case 8: {
      uint64_t v;
      std::memcpy(&v, value, 8);
      std::fill_n(reinterpret_cast<uint64_t*>(dst), count, v);
      return;
    }
    default:  // complex128: two words
      for (int64_t i = 0; i < count; ++i) std::memcpy(dst + i * static_cast<int64_t>(size), value, size);
  }
}

// Per-thread scratch memory, grown on demand and kept (a fused loop runs many times).
char* thread_scratch(size_t bytes) {
  struct Arena {
    char* p = nullptr;
    size_t size = 0;
    ~Arena() { std::free(p); }
  };
  thread_local Arena a;
  bytes = std::max<size_t>(bytes, 64);
  if (a.size < bytes) {
    std::free(a.p);
    size_t n = (bytes + 63) / 64 * 64;
    a.p = static_cast<char*>(std::aligned_alloc(64, n));
    if (!a.p) throw std::bad_alloc();
    a.size = n;
  }
  return a.p;
}

// GRAFT_STREAMING_STORES: "on" (non-temporal stores wherever outputs exceed the caches), "off"
// (ordinary stores), anything else or unset: chosen per call by the kernel's VariantTuner
int forced_store_variant() {
  std::string v = env::choice("GRAFT_STREAMING_STORES", {"on", "off", "auto"}, "auto");
  return v == "on" ? 0 : v == "off" ? 1 : -1;
}

int store_variant(VariantTuner& t) {
  const int forced = forced_store_variant();
  return forced >= 0 ? forced : t.pick();
}

}  // namespace

int VariantTuner::pick() {
  std::lock_guard<std::mutex> lk(mu_);
  int64_t c = calls_++;
  // each variant's first call is a warm-up (not recorded); then two recorded calls each
  if (seen_[0] < 3 || seen_[1] < 3) return static_cast<int>(c % 2);
  double s0 = score_locked(0), s1 = score_locked(1);
  int best = s1 < s0 ? 1 : 0;
  // a variant far behind is re-measured less often: exploring costs its lag
  int64_t period = std::max(s0, s1) > 1.1 * std::min(s0, s1) ? 4 * kExplore : kExplore;
  return c % period == 0 ? 1 - best : best;
}

void VariantTuner::record(int v, double seconds) {
  std::lock_guard<std::mutex> lk(mu_);
  int64_t n = seen_[v]++;
  if (n == 0) return;
  recent_[v][(n - 1) % kWindow] = seconds;
}

double VariantTuner::score_locked(int v) const {
  int64_t n = std::min<int64_t>(seen_[v] - 1, kWindow);
  if (n <= 0) return 0;
  return *std::min_element(recent_[v], recent_[v] + n);
}

double VariantTuner::score(int v) const {
  std::lock_guard<std::mutex> lk(mu_);
  return score_locked(v);
}

struct FusedKernel::Impl {
  enum class Mode { loop, rows, chunked } mode = Mode::loop;
  int64_t n = 0, row = 0, rows = 0;  // domain, row length, number of rows
  int64_t block_rows = 1;            // rows per block (Mode::rows)
  std::vector<Reg> regs;
  std::vector<Instr> prog;
  std::vector<Array> constants;
  std::vector<Aval> in_avals, out_avals;
  std::vector<Array> body_consts;
  std::vector<size_t> slot_offset;  // per scratch slot
  size_t scratch_bytes = 0;

  // every instruction is a generated loop and no value lives in scratch: a block may be any length
  bool generated_only = false;
  int64_t full_block() const {
    return mode == Mode::rows ? block_rows * row : kTileElements;
  }
  int64_t count(Vary v, int64_t nfull, int64_t nrows) const {
    return v == Vary::full ? nfull : (v == Vary::row ? nrows : 1);
  }

  explicit Impl(const ClosedJaxpr& body);
  class BodyCompiler;
  void compile(const Jaxpr& j);
  // Replaces runs of maps by loops whose machine code is made by install_loops (in one batch for all
  // the fused loops of a program; see FusedKernel::compile_all).
  void plan_loops();
  void form_loops();
  bool elide_broadcasts();
  bool rows_loops() const { return mode == Mode::rows && block_rows > 1; }
  bool generable(const Instr& ins) const;
  bool plan_loop(size_t begin, size_t end, bool absorb_reduce, Instr& loop, LoopSpec& spec) const;
  void install_loops(std::span<const LoopFn> fns) {
    for (size_t k = 0; k < pending_at.size(); ++k)
      (pending_at[k] == kPipelined ? pipelined : prog[pending_at[k]].fn)[pending_variant[k]] = fns[k];
    for (Instr& ins : prog)
      if (!ins.fn[1]) ins.fn[1] = ins.fn[0];
    if (!pipelined[1]) pipelined[1] = pipelined[0];
    pending_at.clear();
    pending_variant.clear();
    pending.clear();
  }
  // Loops with non-temporal stores get a twin with ordinary stores; `tuner` picks one per call.
  bool two_variants = false;
  mutable VariantTuner tuner;
  void add_ordinary_store_variants();
  std::vector<LoopSpec> pending;  // loops awaiting machine code
  // Per output: the operands whose buffer it may take over when the caller no longer needs them
  std::vector<std::vector<int32_t>> reuse_inputs;
  void find_reusable_inputs();
  std::vector<size_t> pending_at;  // their instructions (kPipelined: the loop below)
  std::vector<uint8_t> pending_variant;  // and which of the instruction's two variants
  static constexpr size_t kPipelined = ~size_t(0);
  // Blocks of one row whose program ends in two generated loops (softmax: exp and sum, then the
  // division): the last loop of row r runs inside the one before it of row r + 1, as one generated
  // loop over both, so that row r's stores stream out while row r + 1's arithmetic runs instead of
  // after it. Scratch is double-buffered by row parity. Null when the program does not qualify.
  LoopFn pipelined[2] = {nullptr, nullptr};
  void plan_pipeline();
  void run_pipelined(int64_t b0, int64_t b1, const std::vector<const char*>& in, const std::vector<char*>& out,
                     int v) const;
  // Outputs far larger than the caches are written with non-temporal stores (no read for ownership)
  // when every block starts 64-byte aligned, in the first of the loops' two variants (the second
  // stores them as usual: add_ordinary_store_variants).
  bool streams(int32_t reg) const {
    const Reg& r = regs[static_cast<size_t>(reg)];
    if (r.kind != Reg::output || r.vary != Vary::full) return false;
    int64_t sz = static_cast<int64_t>(itemsize(r.dtype));
    if (n * sz < kStreamingBytes) return false;
    // every block must start on a 64-byte boundary: blocks are whole tiles, whole row blocks, or
    // chunks of rows (which then need rows of a multiple of 64 bytes too)
    int64_t block = mode == Mode::rows ? block_rows * row : kTileElements;
    if (mode == Mode::chunked && row * sz % 64 != 0) return false;
    // loops over several rows per block store each row from its own start
    if (rows_loops() && row * sz % 64 != 0) return false;
    return block * sz % 64 == 0;
  }
  void allocate_slots();
  // Chunked rows: the reductions' accumulators, each with the fold that combines two partial results
  struct ChunkAcc {
    int32_t reg;
    ReduceTileFn fold;
    size_t size;
  };
  std::vector<ChunkAcc> chunk_accs;
  void find_chunk_accumulators();
  void run_chunked_row(char** base, const std::vector<const char*>& in, const std::vector<char*>& out, int64_t r0,
                       int v) const;
  void run_block(char** base, const std::vector<const char*>& in, const std::vector<char*>& out, int64_t f0,
                 int64_t r0, int64_t nfull, int64_t nrows, int stage, bool first_chunk, int v) const;
  void run_one(const Instr& ins, char** base, const std::vector<const char*>& in, int64_t f0, int64_t nfull,
               int64_t nrows, bool first_chunk, int v) const;
  // the base pointers of every register for a thread's scratch arena (at `arena`) and the constants
  void scratch_bases(char** base, char* arena) const;
  void bind(char** base, const std::vector<const char*>& in, const std::vector<char*>& out, int64_t f0,
            int64_t r0) const;
};

FusedKernel::Impl::Impl(const ClosedJaxpr& body) {
  const Jaxpr& j = *body.jaxpr;
  body_consts = body.consts;
  for (auto& v : j.constvars) in_avals.push_back(v->aval);
  for (auto& v : j.invars) in_avals.push_back(v->aval);
  for (auto& a : j.outvars) out_avals.push_back(a.aval());
  for (auto& a : in_avals) n = std::max(n, a.size());
  for (auto& e : j.eqns) {
    for (auto& v : e.outputs) n = std::max(n, v->aval.size());
    if (int64_t c = fusible_row_length(e)) {
      if (row && row != c) internal("reductions over rows of different lengths");
      row = c;
    }
  }
  if (!row && codegen_enabled()) {
    // A body without reductions that reads an input of one row's length broadcast over leading axes
    // (a layer's bias before its GELU) goes by blocks of such rows: its generated loops then read the
    // input in place (a per-column operand) instead of a copy of it loaded into every tile.
    std::unordered_map<const Var*, bool> is_input;
    for (auto& v : j.invars) is_input[v.get()] = true;
    for (auto& v : j.constvars) is_input[v.get()] = true;
    for (auto& e : j.eqns) {
      if (e.prim != &prims::broadcast_in_dim_p || e.inputs[0].is_literal() || !is_input.count(e.inputs[0].var.get()))
        continue;
      const Shape& out = e.outputs[0]->aval.shape;
      auto pat = broadcast_pattern(e.inputs[0].aval().shape, out, e.params.get_ints("broadcast_dimensions"));
      int64_t c = e.inputs[0].aval().size();
      // rows of a multiple of 32 elements from 64 up: each row's vector loop has no remainder and a
      // row of any dtype starts on a 64-byte boundary (non-temporal stores stay possible); blocks of
      // at least two rows, and more than one row in all
      if (pat && pat->inner == 1 && pat->mod == c && c >= 64 && c % 32 == 0 && c <= kTileElements / 2 && n > c &&
          n % c == 0 && e.outputs[0]->aval.size() == n) {
        row = c;
        break;
      }
    }
  }
  if (row) {
    rows = n / row;
    mode = row <= kMaxRowElements ? Mode::rows : Mode::chunked;
    block_rows = mode == Mode::rows ? std::max<int64_t>(1, kTileElements / row) : 1;
  }
  compile(j);
  plan_loops();
  allocate_slots();
  if (mode == Mode::chunked) find_chunk_accumulators();
  generated_only = generated_only && scratch_bytes == 0;
  find_reusable_inputs();
}

// An output may be written into the buffer of a dead input when each block reads that input only at
// its own positions (a full-sized input register, no broadcast loads) and never after the output is
// written: blocks are disjoint, so every element is read before it is overwritten.
void FusedKernel::Impl::find_reusable_inputs() {
  reuse_inputs.assign(out_avals.size(), {});
  if (mode == Mode::chunked) return;  // stages run out of program order
  std::vector<int64_t> last_read(in_avals.size(), -1);
  std::vector<bool> plain(in_avals.size(), true);
  for (auto& ins : prog)
    if (ins.op == Op::load) plain[static_cast<size_t>(ins.input)] = false;
  for (size_t r = 0; r < regs.size(); ++r)
    if (regs[r].kind == Reg::input && regs[r].vary != Vary::full) plain[static_cast<size_t>(regs[r].index)] = false;
  for (size_t i = 0; i < prog.size(); ++i)
    for (auto r : prog[i].in)
      if (regs[static_cast<size_t>(r)].kind == Reg::input)
        last_read[static_cast<size_t>(regs[static_cast<size_t>(r)].index)] = static_cast<int64_t>(i);
  // every qualifying operand is a candidate: which ones die here is known only to the caller
  std::vector<bool> written(out_avals.size(), false);
  for (size_t i = 0; i < prog.size(); ++i)
    for (int32_t r : outputs_of(prog[i])) {
      const Reg& o = regs[static_cast<size_t>(r)];
      auto oi = static_cast<size_t>(o.index);
      if (o.kind != Reg::output || o.vary != Vary::full || written[oi]) continue;
      written[oi] = true;
      for (size_t k = body_consts.size(); k < in_avals.size(); ++k)
        if (plain[k] && last_read[k] <= static_cast<int64_t>(i) && in_avals[k].nbytes() == out_avals[oi].nbytes() &&
            in_avals[k].size() == n)
          reuse_inputs[oi].push_back(static_cast<int32_t>(k - body_consts.size()));
    }
}

// Turns a fused body into the tile program: one register per value (aliases share), one instruction
// per computing equation, stores for outputs not written in place, stages for chunked rows.
class FusedKernel::Impl::BodyCompiler {
 public:
  BodyCompiler(Impl& m, const Jaxpr& j) : m_(m), j_(j), out_claimed_(j.outvars.size(), false) {}

  void run() {
    inputs();
    for (const Eqn& e : j_.eqns) equation(e);
    outputs();
    if (m_.mode == Mode::chunked) stages();
  }

 private:
  int32_t add_reg(Reg r, bool dep) {
    m_.regs.push_back(r);
    after_reduce_.push_back(dep);
    return static_cast<int32_t>(m_.regs.size() - 1);
  }
  const Reg& reg(int32_t r) const { return m_.regs[static_cast<size_t>(r)]; }
  // How a value of this type varies in a block, written out whole.
  Vary natural(const Aval& a) const {
    if (a.size() == m_.n) return Vary::full;
    if (m_.row && a.size() == m_.rows) return Vary::row;
    return Vary::uniform;
  }
  // All arguments (consts first) are inputs; those of no register's size are read through broadcasts.
  void inputs() {
    std::vector<const Var*> args;
    for (auto& v : j_.constvars) args.push_back(v.get());
    for (auto& v : j_.invars) args.push_back(v.get());
    for (size_t i = 0; i < args.size(); ++i) {
      const Aval& a = args[i]->aval;
      int32_t idx = static_cast<int32_t>(i);
      if (a.size() == m_.n && m_.n > 1) {
        reg_of_[args[i]] = add_reg({Reg::input, Vary::full, a.dtype, idx}, false);
      } else if (m_.row && a.size() == m_.rows && m_.rows > 1) {
        reg_of_[args[i]] = add_reg({Reg::input, Vary::row, a.dtype, idx}, false);
      } else if (a.size() == 1) {
        reg_of_[args[i]] = add_reg({Reg::input, Vary::uniform, a.dtype, idx}, false);
      } else {
        input_index_[args[i]] = idx;
      }
    }
  }
  int32_t reg_for(const Atom& a) {
    if (a.is_literal()) {
      m_.constants.push_back(a.literal);
      return add_reg({Reg::constant, Vary::uniform, a.literal.dtype(), static_cast<int32_t>(m_.constants.size() - 1)},
                     false);
    }
    auto it = reg_of_.find(a.var.get());
    if (it == reg_of_.end()) internal("operand " + a.aval().str() + " is read other than through a broadcast");
    return it->second;
  }
  // A new register for v: written straight into v's output buffer when v is an output of the loop
  // with the same granularity.
  int32_t def_reg(const Var* v, Vary vary, bool dep) {
    for (size_t oi = 0; oi < j_.outvars.size(); ++oi)
      if (!out_claimed_[oi] && !j_.outvars[oi].is_literal() && j_.outvars[oi].var.get() == v &&
          natural(v->aval) == vary) {
        out_claimed_[oi] = true;
        return add_reg({Reg::output, vary, v->aval.dtype, static_cast<int32_t>(oi)}, dep);
      }
    return add_reg({Reg::scratch, vary, v->aval.dtype, -1}, dep);
  }
  void emit(Instr ins) {
    // steps: operands that vary less than the result repeat their value
    ins.step.clear();
    for (auto r : ins.in) ins.step.push_back(reg(r).vary == reg(ins.out).vary);
    m_.prog.push_back(std::move(ins));
  }
  // A full-granularity copy of a row or uniform register (several rows per block, or a reduction's
  // operand).
  int32_t expanded(int32_t src, DType d) {
    int32_t r = add_reg({Reg::scratch, Vary::full, d, -1}, after_reduce_[static_cast<size_t>(src)]);
    emit(Instr{Op::expand, 1, r, {src}, {}, {}, {}, -1});
    return r;
  }

  void equation(const Eqn& e) {
    const Primitive* p = e.prim;
    const Var* out = e.outputs[0].get();
    if (p == &prims::broadcast_in_dim_p) return broadcast(e);
    bool same_dtype = !e.inputs.empty() && e.inputs[0].aval().dtype == out->aval.dtype;
    if (p == &prims::reshape_p || p == &prims::squeeze_p || (p == &prims::convert_element_type_p && same_dtype)) {
      reg_of_[out] = reg_for(e.inputs[0]);  // an alias: same elements in the same order
      return;
    }
    if (fusible_row_length(e)) return reduce(e);
    if (p->tile && map(e)) return;
    internal(std::string("primitive ") + p->name + " in a fused loop");
  }

  void broadcast(const Eqn& e) {
    const Atom& a = e.inputs[0];
    const Var* out = e.outputs[0].get();
    auto pat = broadcast_pattern(a.aval().shape, out->aval.shape, e.params.get_ints("broadcast_dimensions"));
    if (!pat) internal("a broadcast without a contiguous pattern");
    if (!a.is_literal() && input_index_.count(a.var.get())) {  // an input read through the broadcast
      int32_t in = input_index_.at(a.var.get());
      if (pat->mod == 1) {
        reg_of_[out] = add_reg({Reg::input, Vary::uniform, a.aval().dtype, in}, false);
      } else if (m_.row && pat->inner == m_.row && pat->mod == m_.rows) {
        int32_t r = add_reg({Reg::input, Vary::row, a.aval().dtype, in}, false);
        reg_of_[out] = m_.block_rows == 1 ? r : expanded(r, a.aval().dtype);
      } else {
        int32_t r = def_reg(out, Vary::full, false);
        emit(Instr{Op::load, 1, r, {}, {}, {}, *pat, in});
        reg_of_[out] = r;
      }
      return;
    }
    int32_t src = reg_for(a);
    Vary v = reg(src).vary;
    if (v == Vary::uniform || (v == Vary::row && m_.block_rows == 1) ||
        (v == Vary::full && pat->inner == 1 && pat->mod == m_.n)) {  // the last: only unit dimensions added
      reg_of_[out] = src;
    } else if (v == Vary::row && pat->mod == m_.rows && (m_.rows == 1 || pat->inner == m_.row)) {
      reg_of_[out] = expanded(src, a.aval().dtype);
    } else if (reg(src).kind == Reg::input) {
      // an operand that only has a row's size by coincidence (a [T, S] mask spread over [B, H, T, S]
      // with B * H = S): read through its own pattern
      int32_t r = def_reg(out, Vary::full, false);
      emit(Instr{Op::load, 1, r, {}, {}, {}, *pat, reg(src).index});
      reg_of_[out] = r;
    } else {
      internal("a broadcast of " + a.aval().str() + " that is not a row value");
    }
  }

  void reduce(const Eqn& e) {
    int32_t src = reg_for(e.inputs[0]);
    if (reg(src).vary != Vary::full) src = expanded(src, e.inputs[0].aval().dtype);
    Avals ia{e.inputs[0].aval()};
    TileKernel k = e.prim->tile(*e.prim, {ia.data(), ia.size()}, e.params);
    int32_t r = def_reg(e.outputs[0].get(), Vary::row, true);
    emit(Instr{Op::reduce, 1, r, {src}, {}, k, {}, -1, e.prim, e.params, nullptr, {}});
    reg_of_[e.outputs[0].get()] = r;
  }

  bool map(const Eqn& e) {
    std::vector<Aval> ia;
    for (auto& a : e.inputs) ia.push_back(a.aval());
    TileKernel k = e.prim->tile(*e.prim, ia, e.params);
    if (!k.map) return false;
    Instr ins{Op::map, 1, -1, {}, {}, k, {}, -1, e.prim, e.params, nullptr, {}};
    Vary v = Vary::uniform;
    bool dep = false;
    for (auto& a : e.inputs) {
      int32_t r = reg_for(a);
      ins.in.push_back(r);
      v = std::max(v, reg(r).vary);
      dep = dep || after_reduce_[static_cast<size_t>(r)];
    }
    // a row value meeting full ones needs a full copy when a block holds several rows
    if (v == Vary::full && m_.block_rows > 1)
      for (auto& r : ins.in)
        if (reg(r).vary == Vary::row) r = expanded(r, reg(r).dtype);
    if (ins.in.size() > kMaxMapOperands) internal("too many operands");
    int32_t r = def_reg(e.outputs[0].get(), v, dep);
    ins.out = r;
    emit(std::move(ins));
    reg_of_[e.outputs[0].get()] = r;
    return true;
  }

  // outputs not written in place are stored at the end
  void outputs() {
    for (size_t oi = 0; oi < j_.outvars.size(); ++oi) {
      if (out_claimed_[oi]) continue;
      int32_t src = reg_for(j_.outvars[oi]);
      const Aval& a = m_.out_avals[oi];
      int32_t dst = add_reg({Reg::output, natural(a), a.dtype, static_cast<int32_t>(oi)}, after_reduce_[static_cast<size_t>(src)]);
      emit(Instr{Op::store, 1, dst, {src}, {}, {}, {}, -1});
    }
  }

  // Chunked rows: full values and reductions run per chunk; row values before all chunks (if they
  // need no reduction) or after them.
  void stages() {
    for (auto& ins : m_.prog) {
      bool dep = after_reduce_[static_cast<size_t>(ins.out)];
      if (ins.op == Op::reduce || reg(ins.out).vary == Vary::full) {
        ins.stage = 1;
        for (auto r : ins.in)
          if (after_reduce_[static_cast<size_t>(r)] && ins.op != Op::reduce)
            internal("a full-sized value depends on a reduction in a chunked loop");
      } else {
        ins.stage = dep || ins.op == Op::store ? 2 : 0;
      }
    }
    std::stable_sort(m_.prog.begin(), m_.prog.end(), [](const Instr& a, const Instr& b) { return a.stage < b.stage; });
  }

  Impl& m_;
  const Jaxpr& j_;
  std::unordered_map<const Var*, int32_t> reg_of_;
  std::unordered_map<const Var*, int32_t> input_index_;  // inputs read only through broadcasts
  std::vector<bool> out_claimed_;
  std::vector<bool> after_reduce_;  // per register: depends on a reduction of this loop
};

void FusedKernel::Impl::compile(const Jaxpr& j) { BodyCompiler(*this, j).run(); }

// Scratch registers share slots when their lifetimes do not overlap (program order). Chunked loops
// keep every register in its own slot: accumulators and pre-chunk values live across the chunks.
void FusedKernel::Impl::allocate_slots() {
  std::vector<int64_t> last_use(regs.size(), -1);
  for (size_t i = 0; i < prog.size(); ++i)
    for (auto r : prog[i].in) last_use[static_cast<size_t>(r)] = static_cast<int64_t>(i);
  // every slot holds a block of the widest type (8 bytes, 16 with complex128 values)
  size_t widest = 8;
  for (const Reg& r : regs) widest = std::max(widest, itemsize(r.dtype));
  auto slot_bytes = [&](Vary v) -> size_t {
    int64_t elems = v == Vary::full ? full_block() : (v == Vary::row ? block_rows : 1);
    return (static_cast<size_t>(elems) * widest + 63) / 64 * 64;
  };
  struct Slot {
    Vary vary;
    int64_t free_at;  // program index after which it is free
  };
  std::vector<Slot> slots;
  for (size_t i = 0; i < prog.size(); ++i) {
    for (int32_t out : outputs_of(prog[i])) {
      Reg& r = regs[static_cast<size_t>(out)];
      if (r.kind != Reg::scratch || r.index >= 0) continue;
      int64_t end = std::max<int64_t>(last_use[static_cast<size_t>(out)], static_cast<int64_t>(i));
      int32_t chosen = -1;
      if (mode != Mode::chunked)
        for (size_t s = 0; s < slots.size() && chosen < 0; ++s)
          if (slots[s].vary == r.vary && slots[s].free_at < static_cast<int64_t>(i)) chosen = static_cast<int32_t>(s);
      if (chosen < 0) {
        slots.push_back({r.vary, end});
        slot_offset.push_back(scratch_bytes);
        scratch_bytes += slot_bytes(r.vary);
        chosen = static_cast<int32_t>(slots.size() - 1);
      }
      slots[static_cast<size_t>(chosen)].free_at = end;
      r.index = chosen;
    }
  }
}

bool FusedKernel::Impl::generable(const Instr& ins) const {
  if (ins.op != Op::map || !ins.prim) return false;
  std::vector<DType> in;
  for (auto r : ins.in) in.push_back(regs[static_cast<size_t>(r)].dtype);
  return can_generate(*ins.prim, in, regs[static_cast<size_t>(ins.out)].dtype, ins.params);
}

// Blocks of several short rows (a layer norm's rows of 128): a row value expanded to every element of
// its row, or an input of one row's length loaded into every row (the norm's scale), that only
// generated maps read, is read in place instead (per_row and per_column operands): no copy per
// element, and the maps on either side of it become one loop. Those maps must then become generated
// loops (needs_loop; form_loops checks). Whether anything changed.
bool FusedKernel::Impl::elide_broadcasts() {
  std::unordered_map<int32_t, std::vector<size_t>> readers;
  for (size_t i = 0; i < prog.size(); ++i)
    for (auto r : prog[i].in) readers[r].push_back(i);
  std::vector<bool> drop(prog.size(), false);
  bool any = false;
  for (size_t i = 0; i < prog.size(); ++i) {
    const Instr& ins = prog[i];
    const Reg& o = regs[static_cast<size_t>(ins.out)];
    if (o.kind != Reg::scratch || o.vary != Vary::full) continue;
    int32_t sub = -1;
    if (ins.op == Op::expand && regs[static_cast<size_t>(ins.in[0])].vary == Vary::row) {
      sub = ins.in[0];
    } else if (ins.op != Op::load || ins.pattern.inner != 1 || ins.pattern.mod != row) {
      continue;
    }
    auto it = readers.find(ins.out);
    if (it == readers.end()) continue;
    bool ok = true;
    for (size_t q : it->second) ok = ok && generable(prog[q]) && prog[q].stage == ins.stage;
    if (!ok) continue;
    if (sub < 0) {
      regs.push_back({Reg::input, Vary::column, o.dtype, ins.input});
      sub = static_cast<int32_t>(regs.size() - 1);
    }
    for (size_t q : it->second) {
      for (auto& r : prog[q].in)
        if (r == ins.out) r = sub;
      prog[q].needs_loop = true;
    }
    drop[i] = any = true;
  }
  if (!any) return false;
  std::vector<Instr> kept;
  for (size_t i = 0; i < prog.size(); ++i)
    if (!drop[i]) kept.push_back(std::move(prog[i]));
  prog = std::move(kept);
  return true;
}

// Runs of maps with the same granularity become one generated loop: their intermediates never leave
// vector registers. Runs the generator cannot handle stay tile calls.
void FusedKernel::Impl::plan_loops() {
  if (!codegen_enabled()) return;
  if (rows_loops()) {
    std::vector<Instr> before = prog;
    if (elide_broadcasts()) {
      form_loops();
      bool covered = true;
      for (const Instr& ins : prog) covered = covered && !ins.needs_loop;
      if (covered) return;
      // a map that reads a value in place did not become a loop (too many pointers): as it was
      prog = std::move(before);
      pending.clear();
      pending_at.clear();
      two_variants = false;
    }
  }
  form_loops();
}

void FusedKernel::Impl::form_loops() {
  auto foldable = [&](const Instr& r, uint8_t stage) {
    return r.op == Op::reduce && r.prim && r.stage == stage && regs[static_cast<size_t>(r.in[0])].vary == Vary::full &&
           can_generate_reduction(*r.prim, regs[static_cast<size_t>(r.out)].dtype);
  };
  auto generable = [&](const Instr& ins) { return this->generable(ins); };
  std::vector<Instr> out;
  for (size_t i = 0; i < prog.size();) {
    size_t j = i;
    if (generable(prog[i])) {
      Vary v = regs[static_cast<size_t>(prog[i].out)].vary;
      while (j < prog.size() && generable(prog[j]) && regs[static_cast<size_t>(prog[j].out)].vary == v &&
             prog[j].stage == prog[i].stage)
        ++j;
    }
    // A reduction folds into a loop (each row of a block into its own accumulator): right after a
    // run of maps that computes its operand, or alone when no run computes it (a kernel input, as
    // softmax's max): a loop of no maps, with the generated loops' accumulators and prefetching.
    bool absorb = false;
    if (j < prog.size() && foldable(prog[j], prog[i].stage)) {
      absorb = j == i;
      for (size_t q = i; q < j; ++q) absorb = absorb || prog[q].out == prog[j].in[0];
    }
    if (j > i || absorb) {
      Instr loop;
      LoopSpec spec;
      if (plan_loop(i, j, absorb, loop, spec)) {
        pending_at.push_back(out.size());
        pending.push_back(std::move(spec));
        out.push_back(std::move(loop));
        i = j + (absorb ? 1 : 0);
        continue;
      }
    }
    out.push_back(prog[i]);
    ++i;
  }
  prog = std::move(out);
  generated_only = mode == Mode::loop;
  for (const Instr& ins : prog) generated_only = generated_only && ins.op == Op::loop && ins.loop_vary == Vary::full;
  for (const LoopSpec& sp : pending) generated_only = generated_only && sp.reductions.empty();
  pending_variant.assign(pending.size(), 0);
  plan_pipeline();
  add_ordinary_store_variants();
}

void FusedKernel::Impl::add_ordinary_store_variants() {
  for (size_t k = 0, n0 = pending.size(); k < n0; ++k) {
    if (std::find(pending[k].streaming.begin(), pending[k].streaming.end(), true) == pending[k].streaming.end())
      continue;
    LoopSpec twin = pending[k];
    twin.streaming.assign(twin.streaming.size(), false);
    pending.push_back(std::move(twin));
    pending_at.push_back(pending_at[k]);
    pending_variant.push_back(1);
    two_variants = true;
  }
}

namespace {
// One loop computing both a's and b's values at each index: b's operands after a's, b's operations
// after a's. Pointers: a's operands, b's operands, a's outputs, b's outputs, a's accumulators.
LoopSpec concat(const LoopSpec& a, const LoopSpec& b) {
  int ka = static_cast<int>(a.operands.size()), kb = static_cast<int>(b.operands.size());
  int na = static_cast<int>(a.ops.size());
  auto in_a = [&](int v) { return v < ka ? v : v + kb; };
  auto in_b = [&](int v) { return v < kb ? ka + v : ka + kb + na + (v - kb); };
  LoopSpec c;
  c.operands = a.operands;
  c.operands.insert(c.operands.end(), b.operands.begin(), b.operands.end());
  for (auto* part : {&a, &b})
    for (LoopSpec::Op op : part->ops) {
      for (int& x : op.args) x = part == &a ? in_a(x) : in_b(x);
      c.ops.push_back(std::move(op));
    }
  for (int o : a.outputs) c.outputs.push_back(in_a(o));
  for (int o : b.outputs) c.outputs.push_back(in_b(o));
  c.streaming = a.streaming;
  c.streaming.insert(c.streaming.end(), b.streaming.begin(), b.streaming.end());
  for (auto r : a.reductions) c.reductions.push_back({r.prim, in_a(r.value)});
  for (auto r : b.reductions) c.reductions.push_back({r.prim, in_b(r.value)});
  return c;
}
}  // namespace

void FusedKernel::Impl::plan_pipeline() {
  if (mode != Mode::rows || block_rows != 1 || prog.size() < 2 || pending.size() < 2) return;
  size_t ia = prog.size() - 2, ib = prog.size() - 1;
  const Instr &a = prog[ia], &b = prog[ib];
  if (a.op != Op::loop || b.op != Op::loop || a.loop_vary != Vary::full || b.loop_vary != Vary::full) return;
  if (b.loop_reduces || pending_at[pending.size() - 2] != ia || pending_at.back() != ib) return;
  if (a.in.size() + a.outs.size() + b.in.size() + b.outs.size() > kMaxLoopPointers) return;
  // the last loop writes the kernel's outputs only (values of row r that row r + 1 never reads)
  for (int32_t r : b.outs)
    if (regs[static_cast<size_t>(r)].kind != Reg::output) return;
  pending.push_back(concat(pending[pending.size() - 2], pending.back()));
  pending_at.push_back(kPipelined);
  pending_variant.push_back(0);
}

bool FusedKernel::Impl::plan_loop(size_t begin, size_t end, bool absorb_reduce, Instr& loop, LoopSpec& spec) const {
  // an empty run is a lone reduction, over values of its operand's granularity
  Vary v = regs[static_cast<size_t>(begin == end ? prog[end].in[0] : prog[begin].out)].vary;
  loop = Instr{Op::loop, prog[begin].stage, -1, {}, {}, {}, {}, -1, nullptr, {}, {nullptr, nullptr}, {}, false, v};
  size_t after = end + (absorb_reduce ? 1 : 0);  // the first instruction after the loop
  std::unordered_map<int32_t, int> defined;  // register -> index of the op defining it
  for (size_t i = begin; i < end; ++i) defined[prog[i].out] = static_cast<int>(i - begin);
  // operands: registers read but not defined by the run, in order of first use
  spec = LoopSpec();
  // a loop over the full values of a block of several rows goes row by row (LoopSpec::row)
  const bool by_rows = rows_loops() && v == Vary::full;
  if (by_rows) spec.row = row;
  std::unordered_map<int32_t, int> operand_of;
  for (size_t i = begin; i < after; ++i)
    for (auto r : prog[i].in) {
      if (defined.count(r) || operand_of.count(r)) continue;
      const Reg& reg = regs[static_cast<size_t>(r)];
      LoopSpec::Operand o{reg.dtype, reg.vary == Vary::uniform || (reg.vary == Vary::row && v == Vary::full && !by_rows),
                          Array(), false};
      o.per_row = by_rows && reg.vary == Vary::row;
      o.per_column = reg.vary == Vary::column;
      if (o.per_column && !by_rows) internal("a column operand outside a loop over rows");
      // Blocks of whole rows prefetch the next block's row in the last loop that reads the input
      // (softmax's exp loop, not its max loop: spread over the longest arithmetic rather than in a
      // burst during a short loop; +10-30% of bandwidth). A plain loop over an input beyond the
      // caches prefetches 4 KiB ahead in the first loop that reads it (the tanh chain: +25%).
      auto read_in = [&](size_t q0, size_t q1) {
        for (size_t q = q0; q < q1; ++q)
          for (auto x : prog[q].in)
            if (x == r) return true;
        return false;
      };
      bool streamed = reg.kind == Reg::input && reg.vary == Vary::full && v == Vary::full;
      o.prefetch_next = streamed && mode == Mode::rows && !read_in(after, prog.size());
      o.prefetch_ahead = streamed && mode == Mode::loop && !read_in(0, begin) &&
                         in_avals[static_cast<size_t>(reg.index)].nbytes() >= static_cast<size_t>(kPrefetchBytes);
      if (reg.kind == Reg::constant) {
        o.literal = constants[static_cast<size_t>(reg.index)];
      } else {
        loop.in.push_back(r);
      }
      operand_of[r] = static_cast<int>(spec.operands.size());
      spec.operands.push_back(std::move(o));
    }
  int k = static_cast<int>(spec.operands.size());
  auto value = [&](int32_t r) { return defined.count(r) ? k + defined.at(r) : operand_of.at(r); };
  for (size_t i = begin; i < end; ++i) {
    LoopSpec::Op op{prog[i].prim, prog[i].params, {}, regs[static_cast<size_t>(prog[i].out)].dtype};
    for (auto r : prog[i].in) op.args.push_back(value(r));
    spec.ops.push_back(std::move(op));
  }
  // stored: results that are outputs of the fused loop or read after the run
  for (size_t i = begin; i < end; ++i) {
    int32_t r = prog[i].out;
    bool keep = regs[static_cast<size_t>(r)].kind == Reg::output;
    for (size_t q = after; q < prog.size() && !keep; ++q)
      for (auto x : prog[q].in) keep = keep || x == r;
    if (keep) {
      spec.outputs.push_back(value(r));
      loop.outs.push_back(r);
      spec.streaming.push_back(streams(r));
    }
  }
  if (absorb_reduce) {
    spec.reductions.push_back({prog[end].prim, value(prog[end].in[0])});
    loop.outs.push_back(prog[end].out);
    loop.loop_reduces = true;
    loop.k.reduce = prog[end].k.reduce;  // folds the chunks' partial results (ChunkFold)
  }
  for (size_t i = begin; i < after; ++i)
    loop.label += std::string(loop.label.empty() ? "" : (i == end ? "; " : " ")) + prog[i].prim->name;
  if (loop.outs.empty() || loop.in.size() + loop.outs.size() > kMaxLoopPointers) return false;
  loop.out = loop.outs[0];
  return true;
}

void FusedKernel::Impl::bind(char** base, const std::vector<const char*>& in, const std::vector<char*>& out,
                             int64_t f0, int64_t r0) const {
  for (size_t i = 0; i < regs.size(); ++i) {
    const Reg& r = regs[i];
    int64_t off = r.vary == Vary::full ? f0 : (r.vary == Vary::row ? r0 : 0);
    off *= static_cast<int64_t>(itemsize(r.dtype));
    if (r.kind == Reg::input) {
      base[i] = const_cast<char*>(in[static_cast<size_t>(r.index)]) + off;
    } else if (r.kind == Reg::output) {
      base[i] = out[static_cast<size_t>(r.index)] + off;
    }
  }
}

void FusedKernel::Impl::find_chunk_accumulators() {
  for (const Instr& ins : prog) {
    if (ins.stage != 1) continue;
    int32_t r = ins.op == Op::reduce ? ins.out : ins.op == Op::loop && ins.loop_reduces ? ins.outs.back() : -1;
    if (r < 0) continue;
    if (!ins.k.reduce) internal("a chunked reduction without a fold");
    chunk_accs.push_back({r, ins.k.reduce, itemsize(regs[static_cast<size_t>(r)].dtype)});
  }
}

namespace {

// The partial results of a chunked row's reductions, folded pairwise over the chunks (each chunk's
// reductions start from their identity): a binary counter as in graft/runtime/cpu/pairwise.h, over
// raw values of the accumulators' dtypes. A row of 2^24 elements is 8192 chunks whose partial sums,
// added one after the other, made a jitted f32 sum 6.5e-5 off; pairwise, the error grows with log2.
class ChunkFold {
 public:
  using Acc = FusedKernel::Impl::ChunkAcc;
  explicit ChunkFold(const std::vector<Acc>& accs) : accs_(accs), carry_(accs.size()), slots_(64 * accs.size()) {}
  // Folds in the accumulators' values (after a chunk).
  void add(char* const* base) {
    size_t n = accs_.size();
    for (size_t a = 0; a < n; ++a) std::memcpy(&carry_[a], base[accs_[a].reg], accs_[a].size);
    int l = 0;
    for (; full_ >> l & 1; ++l) {
      for (size_t a = 0; a < n; ++a) {
        Word& left = slots_[static_cast<size_t>(l) * n + a];
        accs_[a].fold(&left, &carry_[a], 1, false);  // left = left (+) carry: the older partial first
        carry_[a] = left;
      }
      full_ &= ~(uint64_t(1) << l);
    }
    for (size_t a = 0; a < n; ++a) slots_[static_cast<size_t>(l) * n + a] = carry_[a];
    full_ |= uint64_t(1) << l;
  }
  // Writes the fold of every chunk's partial results into the accumulators.
  void finish(char* const* base) {
    size_t n = accs_.size();
    bool first = true;
    for (int l = 63; l >= 0; --l) {
      if (!(full_ >> l & 1)) continue;
      for (size_t a = 0; a < n; ++a) {
        Word& part = slots_[static_cast<size_t>(l) * n + a];
        if (first) {
          carry_[a] = part;
        } else {
          accs_[a].fold(&carry_[a], &part, 1, false);
        }
      }
      first = false;
    }
    if (!first)
      for (size_t a = 0; a < n; ++a) std::memcpy(base[accs_[a].reg], &carry_[a], accs_[a].size);
  }

 private:
  struct Word {  // an accumulator's value: up to 16 bytes (complex128)
    alignas(16) uint64_t w[2];
  };
  const std::vector<Acc>& accs_;
  std::vector<Word> carry_, slots_;  // one value per accumulator (and per tree level)
  uint64_t full_ = 0;
};

}  // namespace

void FusedKernel::Impl::run_chunked_row(char** base, const std::vector<const char*>& in, const std::vector<char*>& out,
                                        int64_t r0, int v) const {
  const int64_t T = kTileElements;
  bind(base, in, out, r0 * row, r0);
  run_block(base, in, out, r0 * row, r0, 0, 1, 0, true, v);
  ChunkFold fold(chunk_accs);
  for (int64_t c0 = 0; c0 < row; c0 += T) {
    int64_t f0 = r0 * row + c0, nf = std::min(T, row - c0);
    bind(base, in, out, f0, r0);
    run_block(base, in, out, f0, r0, nf, 1, 1, /*first_chunk=*/true, v);
    fold.add(base);
  }
  bind(base, in, out, r0 * row, r0);
  fold.finish(base);
  run_block(base, in, out, r0 * row, r0, 0, 1, 2, true, v);
}

void FusedKernel::Impl::run_block(char** base, const std::vector<const char*>& in, const std::vector<char*>&,
                                  int64_t f0, int64_t, int64_t nfull, int64_t nrows, int stage,
                                  bool first_chunk, int v) const {
  for (const Instr& ins : prog)
    if (stage < 0 || ins.stage == stage) run_one(ins, base, in, f0, nfull, nrows, first_chunk, v);
}

void FusedKernel::Impl::run_one(const Instr& ins, char** base, const std::vector<const char*>& in, int64_t f0,
                                int64_t nfull, int64_t nrows, bool first_chunk, int v) const {
  const void* ptrs[kMaxMapOperands];
  const Reg& o = regs[static_cast<size_t>(ins.out)];
  char* dst = base[ins.out];
  size_t osz = itemsize(o.dtype);
  switch (ins.op) {
    case Op::map: {
      size_t k = 0;
      for (auto r : ins.in) ptrs[k++] = base[r];
      ins.k.map(ins.k, dst, ptrs, ins.step.data(), count(o.vary, nfull, nrows));
      break;
    }
    case Op::loop: {
      char* ptrs_all[kMaxLoopPointers];
      size_t k = 0;
      for (auto r : ins.in) ptrs_all[k++] = base[r];
      for (auto r : ins.outs) ptrs_all[k++] = base[r];
      ins.fn[v](ptrs_all, count(ins.loop_vary, nfull, nrows), first_chunk ? 1 : 0);
      break;
    }
    case Op::load: {
      const char* src = in[static_cast<size_t>(ins.input)];
      int64_t inner = ins.pattern.inner, mod = ins.pattern.mod;
      int64_t f = f0, end = f0 + nfull;
      while (f < end) {
        int64_t q = f / inner, idx = q % mod;
        if (inner == 1) {
          int64_t run = std::min(mod - idx, end - f);
          std::memcpy(dst + (f - f0) * static_cast<int64_t>(osz), src + idx * static_cast<int64_t>(osz),
                      static_cast<size_t>(run) * osz);
          f += run;
        } else {
          int64_t run = std::min((q + 1) * inner, end) - f;
          fill(dst + (f - f0) * static_cast<int64_t>(osz), src + idx * static_cast<int64_t>(osz), run, osz);
          f += run;
        }
      }
      break;
    }
    case Op::expand: {
      const Reg& s = regs[static_cast<size_t>(ins.in[0])];
      const char* src = base[ins.in[0]];
      if (s.vary == Vary::uniform) {
        fill(dst, src, nfull, osz);
      } else {
        for (int64_t b = 0; b < nrows; ++b) fill(dst + b * row * static_cast<int64_t>(osz), src + b * static_cast<int64_t>(osz), row, osz);
      }
      break;
    }
    case Op::reduce: {
      const char* src = base[ins.in[0]];
      if (mode == Mode::chunked) {
        ins.k.reduce(dst, src, nfull, first_chunk);
      } else {
        for (int64_t b = 0; b < nrows; ++b)
          ins.k.reduce(dst + b * static_cast<int64_t>(osz), src + b * row * static_cast<int64_t>(osz), row, true);
      }
      break;
    }
    case Op::store: {
      const Reg& s = regs[static_cast<size_t>(ins.in[0])];
      const char* src = base[ins.in[0]];
      int64_t cnt = count(o.vary, nfull, nrows);
      if (s.vary == o.vary) {
        std::memcpy(dst, src, static_cast<size_t>(cnt) * osz);
      } else if (s.vary == Vary::uniform) {
        fill(dst, src, cnt, osz);
      } else {  // a row value stored as a full one
        int64_t per = o.vary == Vary::full && mode != Mode::chunked ? row : cnt;
        for (int64_t b = 0; b < std::max<int64_t>(1, cnt / std::max<int64_t>(1, per)); ++b)
          fill(dst + b * per * static_cast<int64_t>(osz), src + b * static_cast<int64_t>(osz), per, osz);
      }
      break;
    }
  }
}

void FusedKernel::Impl::scratch_bases(char** base, char* arena) const {
  for (size_t i = 0; i < regs.size(); ++i) {
    const Reg& r = regs[i];
    // scratch registers that only live inside a generated loop have no slot
    if (r.kind == Reg::scratch && r.index >= 0) base[i] = arena + slot_offset[static_cast<size_t>(r.index)];
    if (r.kind == Reg::constant) base[i] = static_cast<char*>(const_cast<void*>(constants[static_cast<size_t>(r.index)].raw_data()));
  }
}

void FusedKernel::Impl::run_pipelined(int64_t b0, int64_t b1, const std::vector<const char*>& in,
                                      const std::vector<char*>& out, int v) const {
  char* arena = thread_scratch(2 * scratch_bytes);
  SmallVector<char*, 32> base[2] = {SmallVector<char*, 32>(regs.size(), nullptr), SmallVector<char*, 32>(regs.size(), nullptr)};
  scratch_bases(base[0].data(), arena);
  scratch_bases(base[1].data(), arena + scratch_bytes);
  const Instr &a = prog[prog.size() - 2], &b = prog.back();
  size_t a_stored = a.outs.size() - (a.loop_reduces ? 1 : 0);
  for (int64_t r = b0; r < b1; ++r) {
    char** cur = base[r & 1].data();
    bind(cur, in, out, r * row, r);
    for (size_t i = 0; i + 2 < prog.size(); ++i) run_one(prog[i], cur, in, r * row, row, 1, true, v);
    if (r == b0) {
      run_one(a, cur, in, r * row, row, 1, true, v);
      continue;
    }
    char** prev = base[(r - 1) & 1].data();  // row r - 1, bound in the previous iteration
    char* ptrs[kMaxLoopPointers];
    size_t k = 0;
    for (auto x : a.in) ptrs[k++] = cur[x];
    for (auto x : b.in) ptrs[k++] = prev[x];
    for (size_t j = 0; j < a_stored; ++j) ptrs[k++] = cur[a.outs[j]];
    for (auto x : b.outs) ptrs[k++] = prev[x];
    if (a.loop_reduces) ptrs[k++] = cur[a.outs.back()];
    pipelined[v](ptrs, row, 1);
  }
  run_one(b, base[(b1 - 1) & 1].data(), in, (b1 - 1) * row, row, 1, true, v);
}

FusedKernel::FusedKernel(const ClosedJaxpr& body, bool defer_codegen) : impl_(std::make_unique<Impl>(body)) {
  if (defer_codegen) return;
  std::vector<const LoopSpec*> specs;
  for (auto& sp : impl_->pending) specs.push_back(&sp);
  impl_->install_loops(generate_loops(specs));
}
FusedKernel::~FusedKernel() = default;

std::string FusedKernel::program() const {
  const Impl& m = *impl_;
  std::ostringstream s;
  s << (m.mode == Impl::Mode::loop ? (m.generated_only ? "ranges" : "tiles")
                                   : (m.mode == Impl::Mode::rows ? "rows" : "chunked rows"));
  if (m.row) s << " " << m.rows << "x" << m.row;
  if (m.pipelined[0]) s << " pipelined";
  s << ":";
  for (const Instr& ins : m.prog) {
    switch (ins.op) {
      case Op::map: s << " " << (ins.prim ? ins.prim->name : "map"); break;
      case Op::reduce: s << " " << (ins.prim ? ins.prim->name : "reduce"); break;
      case Op::loop: s << " loop(" << ins.label << ")"; break;
      case Op::load: s << " load"; break;
      case Op::expand: s << " expand"; break;
      case Op::store: s << " store"; break;
    }
  }
  return s.str();
}

bool FusedKernel::tunes_stores() const { return impl_->two_variants; }

std::span<const int32_t> FusedKernel::reusable_operands(size_t o) const {
  if (o >= impl_->reuse_inputs.size()) return {};
  return impl_->reuse_inputs[o];
}

Arrays FusedKernel::run(std::span<const Array> args0) const { return run(args0, {}); }

Arrays FusedKernel::run(std::span<const Array> args, std::span<Array> dead) const {
  const Impl& m = *impl_;
  size_t nc = m.body_consts.size();
  if (nc + args.size() != m.in_avals.size())
    fail<ValueError>("fusion: expected ", m.in_avals.size() - nc, " operands, got ", args.size());
  // no copies of the handles: a dead operand's only handle stays the caller's
  std::vector<const char*> in;
  for (size_t i = 0; i < m.in_avals.size(); ++i) {
    size_t k = i - nc;
    const Array& a = i < nc ? m.body_consts[i] : (k < dead.size() && dead[k].valid() ? dead[k] : args[k]);
    if (!a.is_concrete() || !a.aval().same_type(m.in_avals[i]))
      fail<TypeError>("fusion: operand ", i, " should be a concrete ", m.in_avals[i].str());
    in.push_back(static_cast<const char*>(a.raw_data()));
  }
  Arrays outs;
  std::vector<char*> out;
  SmallVector<int32_t, 4> taken;
  for (size_t o = 0; o < m.out_avals.size(); ++o) {
    const Aval& a = m.out_avals[o];
    // the first dead operand nobody else holds (one handle, a buffer of its own) becomes the
    // output's storage (memory_plan.cpp makes the same choice)
    ConcreteNode* c = nullptr;
    for (int32_t k : m.reuse_inputs[o]) {
      if (static_cast<size_t>(k) >= dead.size() || !dead[static_cast<size_t>(k)].valid() ||
          std::find(taken.begin(), taken.end(), k) != taken.end())
        continue;
      ConcreteNode* d = dead[static_cast<size_t>(k)].concrete();
      if (d && d->use_count() == 1 && d->owns_storage() && d->buffer()->nbytes() >= a.nbytes()) {
        c = d;
        taken.push_back(k);
        break;
      }
    }
    outs.push_back(c ? Array(Ref<ArrayNode>(new ConcreteNode(a, c->buffer(), 0))) : Array::empty(a));
    out.push_back(static_cast<char*>(outs.back().concrete()->data()));
  }
  if (m.n == 0) return outs;
  using Mode = Impl::Mode;
  int64_t T = kTileElements;
  int64_t nblocks = m.mode == Mode::loop ? (m.n + T - 1) / T
                                         : (m.mode == Mode::rows ? (m.rows + m.block_rows - 1) / m.block_rows : m.rows);
  int64_t per_block = m.mode == Mode::chunked ? m.row : m.full_block();
  int64_t grain = std::max<int64_t>(1, (int64_t(1) << 15) / std::max<int64_t>(1, per_block));
  int v = m.two_variants ? store_variant(m.tuner) : 0;
  auto start = std::chrono::steady_clock::now();
  cpu::parallel_for(nblocks, grain, [&](int64_t b0, int64_t b1) {
    if (m.pipelined[0]) {
      m.run_pipelined(b0, b1, in, out, v);
      return;
    }
    SmallVector<char*, 32> base(m.regs.size(), nullptr);
    m.scratch_bases(base.data(), thread_scratch(m.scratch_bytes));
    if (m.mode == Mode::loop) {
      // generated loops alone take the whole piece in one call: a call per tile (its prologue,
      // remainder and fence) cost a fifth of the bandwidth of a compute-heavy chain
      int64_t step = m.generated_only ? b1 - b0 : 1;
      for (int64_t blk = b0; blk < b1; blk += step) {
        int64_t f0 = blk * T, nf = std::min((blk + step) * T, m.n) - f0;
        m.bind(base.data(), in, out, f0, 0);
        m.run_block(base.data(), in, out, f0, 0, nf, 0, -1, true, v);
      }
      return;
    }
    for (int64_t blk = b0; blk < b1; ++blk) {
      if (m.mode == Mode::rows) {
        int64_t r0 = blk * m.block_rows, nr = std::min(m.block_rows, m.rows - r0);
        m.bind(base.data(), in, out, r0 * m.row, r0);
        m.run_block(base.data(), in, out, r0 * m.row, r0, nr * m.row, nr, -1, true, v);
      } else {
        m.run_chunked_row(base.data(), in, out, blk, v);
      }
    }
  });
  if (m.two_variants) m.tuner.record(v, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return outs;
}

const FusedKernel& FusedKernel::of(const ClosedJaxpr& body) {
  static std::mutex mu;
  std::lock_guard<std::mutex> lk(mu);
  if (!body.compiled) body.compiled = std::make_shared<FusedKernel>(body);
  return *static_cast<const FusedKernel*>(body.compiled.get());
}

void FusedKernel::compile_all(std::span<const ClosedJaxpr* const> bodies) {
  // plan every body's loops, generate all of them as one module, then publish the kernels
  std::vector<std::shared_ptr<FusedKernel>> made;
  std::vector<const ClosedJaxpr*> owners;
  std::vector<const LoopSpec*> specs;
  for (const ClosedJaxpr* b : bodies) {
    if (b->compiled) continue;
    made.push_back(std::make_shared<FusedKernel>(*b, true));
    owners.push_back(b);
    for (auto& sp : made.back()->impl_->pending) specs.push_back(&sp);
  }
  std::vector<LoopFn> fns = generate_loops(specs);
  size_t k = 0;
  static std::mutex mu;
  std::lock_guard<std::mutex> lk(mu);
  for (size_t i = 0; i < made.size(); ++i) {
    size_t cnt = made[i]->impl_->pending.size();
    made[i]->impl_->install_loops(std::span<const LoopFn>(fns.data() + k, cnt));
    k += cnt;
    if (!owners[i]->compiled) owners[i]->compiled = made[i];
  }
}

}  // namespace graft::compiler
