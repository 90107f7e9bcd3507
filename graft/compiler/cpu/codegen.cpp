// The elemental emitter: LLVM IR for each primitive a generated loop supports, and the loop itself.
#include "graft/compiler/cpu/codegen.h"
#include "graft/compiler/fusion.h"
#include "graft/core/env.h"

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <string>

#include "graft/runtime/cpu/llvm_jit.h"
#include "graft/runtime/cpu/vmath.h"
#include "graft/core/error.h"
#include "graft/prims/primitives.h"

#ifdef GRAFT_HAVE_LLVM
#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/Metadata.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/Pass.h>
#include <llvm/IR/Module.h>
#include <llvm/Transforms/Utils.h>
#endif

namespace graft::compiler {

namespace {

using namespace prims;

bool is_half(DType d) { return d == DType::f16 || d == DType::bf16; }

// f16 values are widened and rounded by the F16C instructions (every AVX2 CPU has them); bf16 by
// integer operations, which any vector unit has
bool supported_dtype(DType d) {
  if (d != DType::f16) return true;
  static const bool f16c = cpu::have_llvm_jit() && cpu::jit_target().find("+f16c") != std::string::npos;
  return f16c;
}

bool is_one_of(const Primitive& p, std::initializer_list<const Primitive*> ps) {
  for (auto* q : ps)
    if (&p == q) return true;
  return false;
}

}  // namespace

namespace {
std::atomic<int> g_codegen{-1};  // -1: not decided yet
}

bool codegen_enabled() {
  int v = g_codegen.load();
  if (v < 0) {
    v = cpu::have_llvm_jit() && env::flag("GRAFT_CODEGEN", true) ? 1 : 0;
    g_codegen.store(v);
  }
  return v == 1;
}

void set_codegen_enabled(bool on) { g_codegen.store(on && cpu::have_llvm_jit() ? 1 : 0); }

namespace {

// Complex values: the operations whose tile kernels are exact sequences of part arithmetic (sums,
// the textbook product, conversions), so a generated loop reproduces them bit for bit. Division and
// the transcendental functions are library calls there (std::complex's), and stay tile calls.
bool can_generate_complex(const Primitive& p, std::span<const DType> in, DType out, const Params& params) {
  if (is_one_of(p, {&add_p, &sub_p, &add_any_p, &mul_p, &neg_p, &conj_p, &square_p, &copy_p, &stop_gradient_p,
                    &real_p, &imag_p, &eq_p, &ne_p}))
    return true;
  if (&p == &integer_pow_p) return params.get_int("y") >= 0;  // a negative power divides
  if (&p == &complex_p) return is_complex(out);
  if (&p == &select_n_p) return in.size() == 3 && is_bool(in[0]);
  if (&p == &convert_element_type_p) return !in.empty() && (is_complex(in[0]) || is_complex(out));
  return false;
}

}  // namespace

bool can_generate(const Primitive& p, std::span<const DType> in, DType out, const Params& params) {
  if (!supported_dtype(out)) return false;
  for (DType d : in)
    if (!supported_dtype(d)) return false;
  bool cx = is_complex(out);
  for (DType d : in) cx = cx || is_complex(d);
  if (cx) return can_generate_complex(p, in, out, params);
  DType a = in.empty() ? out : in[0];
  // the transcendental polynomials are f32 ones (vmath's), which the tile kernels use for halves too
  bool fl = is_floating(a), f32 = a == DType::f32 || is_half(a);
  if (is_one_of(p, {&exp_p, &log_p, &tanh_p, &logistic_p})) return f32;
  if (is_one_of(p, {&sqrt_p, &rsqrt_p, &floor_p, &ceil_p, &is_finite_p})) return fl;
  if (is_one_of(p, {&neg_p, &abs_p, &sign_p, &square_p, &copy_p, &stop_gradient_p})) return !is_bool(a);
  if (&p == &integer_pow_p) return !is_bool(a);
  if (&p == &not__p) return is_bool(a) || is_integer(a);
  if (is_one_of(p, {&add_p, &sub_p, &mul_p, &add_any_p, &max_p, &min_p})) return !is_bool(a);
  if (&p == &div_p) return fl;
  if (is_one_of(p, {&and__p, &or__p, &xor__p})) return !fl;
  if (is_one_of(p, {&eq_p, &ne_p, &lt_p, &le_p, &gt_p, &ge_p})) return true;
  if (&p == &select_n_p) return in.size() == 3 && is_bool(in[0]);
  if (&p == &clamp_p) return !is_bool(out);
  if (&p == &convert_element_type_p) return true;
  (void)params;
  return false;
}

bool can_generate_reduction(const Primitive& p, DType d) {
  // float products stay with the tile kernel, which accumulates f32 products in f64 (a generated
  // loop's f32 accumulators lost 7e-5 over rows of 4096 factors)
  if (&p == &reduce_prod_p && is_floating(d)) return false;
  // half-precision sums accumulate in f32 and round once when stored, as the tile kernels do (under
  // excess precision only: without it fused loops keep eager's bits, and the tile kernels' order)
  return supported_dtype(d) && !is_bool(d) && !is_complex(d) && (!is_half(d) || excess_precision()) &&
         is_one_of(p, {&reduce_sum_p, &reduce_max_p, &reduce_min_p, &reduce_prod_p});
}

#ifndef GRAFT_HAVE_LLVM

std::vector<LoopFn> generate_loops(std::span<const LoopSpec* const> specs) {
  return std::vector<LoopFn>(specs.size(), nullptr);
}

#else

namespace {

// Whether the JIT's target has AVX-512 (the features it compiles for: the host's).
bool has_avx512() {
  static const bool yes = cpu::jit_target().find("+avx512f") != std::string::npos;
  return yes;
}

// Emits IR for values of one width: `lanes` elements per value (the vector body), or 1 (the tail).
class Emitter {
 public:
  Emitter(llvm::IRBuilder<>& b, llvm::Module& m, unsigned lanes) : b_(b), m_(m), lanes_(lanes) {}

  llvm::Type* scalar(DType d) const {
    switch (d) {
      case DType::bool_: return b_.getInt1Ty();
      case DType::i8: case DType::u8: return b_.getInt8Ty();
      case DType::i16: case DType::u16: return b_.getInt16Ty();
      case DType::i32: case DType::u32: return b_.getInt32Ty();
      case DType::i64: case DType::u64: return b_.getInt64Ty();
      case DType::f64:
      case DType::c128:
        return b_.getDoubleTy();
      default:
        return b_.getFloatTy();  // halves, f32 and complex64's parts
    }
  }
  // In memory, bools are bytes, bf16 values 16-bit integers (their bits) and f16 values halves; in
  // registers both half types are f32 (scalar's default). A complex value is two parts in memory
  // (stored is its part's type) and in registers (a vector of real parts and one of imaginary parts).
  llvm::Type* stored(DType d) const {
    if (d == DType::bool_) return b_.getInt8Ty();
    if (d == DType::bf16) return b_.getInt16Ty();
    if (d == DType::f16) return b_.getHalfTy();
    return scalar(d);
  }

  // A loaded value of dtype d (`stored` elements) in registers: bools as i1, halves widened to f32
  // (exactly: a bf16 value is the high half of its f32).
  llvm::Value* from_memory(llvm::Value* x, DType d) {
    if (d == DType::bool_) return b_.CreateICmpNE(x, llvm::Constant::getNullValue(x->getType()));
    if (d == DType::f16) return b_.CreateFPExt(x, type(d));
    if (d == DType::bf16) {
      llvm::Value* w = b_.CreateShl(b_.CreateZExt(x, widen(b_.getInt32Ty())), splat(b_.getInt32(16)));
      return b_.CreateBitCast(w, type(d));
    }
    return x;
  }
  // A value of dtype d in registers as stored in memory: halves rounded to nearest even.
  llvm::Value* to_memory(llvm::Value* x, DType d) {
    if (d == DType::bool_) return b_.CreateZExt(x, widen(b_.getInt8Ty()));
    if (d == DType::f16) return b_.CreateFPTrunc(x, widen(b_.getHalfTy()));
    if (d == DType::bf16) return b_.CreateTrunc(bf16_bits(x), widen(b_.getInt16Ty()));
    return x;
  }
  // An f32 value rounded to dtype d (a half type) and widened back: what storing and reloading it gives.
  llvm::Value* round_to(llvm::Value* x, DType d) {
    if (d == DType::f16) return b_.CreateFPExt(b_.CreateFPTrunc(x, widen(b_.getHalfTy())), x->getType());
    llvm::Value* hi = b_.CreateAnd(bf16_bits(x), splat(b_.getInt32(0xffff)));
    return b_.CreateBitCast(b_.CreateShl(hi, splat(b_.getInt32(16))), x->getType());
  }
  llvm::Type* type(DType d) const { return widen(scalar(d)); }
  llvm::Type* widen(llvm::Type* t) const { return lanes_ == 1 ? t : llvm::FixedVectorType::get(t, lanes_); }

  // bfloat16::from_float on f32 lanes, in the low 16 bits of i32 lanes: round to nearest even, NaNs
  // made quiet
  llvm::Value* bf16_bits(llvm::Value* x) {
    llvm::Type* i32 = widen(b_.getInt32Ty());
    llvm::Value* u = b_.CreateBitCast(x, i32);
    llvm::Value* odd = b_.CreateAnd(b_.CreateLShr(u, splat(b_.getInt32(16))), splat(b_.getInt32(1)));
    llvm::Value* rounded = b_.CreateLShr(b_.CreateAdd(u, b_.CreateAdd(odd, splat(b_.getInt32(0x7fff)))), splat(b_.getInt32(16)));
    llvm::Value* quiet = b_.CreateOr(b_.CreateLShr(u, splat(b_.getInt32(16))), splat(b_.getInt32(0x40)));
    return sel(b_.CreateFCmpUNO(x, x), quiet, rounded);
  }

  llvm::Value* splat(llvm::Value* s) const { return lanes_ == 1 ? s : b_.CreateVectorSplat(lanes_, s); }
  llvm::Value* cf(double v) const { return llvm::ConstantFP::get(widen(b_.getFloatTy()), v); }
  llvm::Value* cst(DType d, double v) const {
    if (is_floating(d)) return llvm::ConstantFP::get(type(d), v);
    return llvm::ConstantInt::get(type(d), static_cast<uint64_t>(static_cast<int64_t>(v)), true);
  }
  llvm::Value* ci(int32_t v) const { return llvm::ConstantInt::get(widen(b_.getInt32Ty()), static_cast<uint64_t>(v), true); }

  llvm::Value* intrinsic(llvm::Intrinsic::ID id, std::initializer_list<llvm::Value*> args) {
    llvm::Function* f = llvm::Intrinsic::getDeclaration(&m_, id, {(*args.begin())->getType()});
    return b_.CreateCall(f, llvm::ArrayRef<llvm::Value*>(args.begin(), args.end()));
  }
  llvm::Value* fma(llvm::Value* a, llvm::Value* x, llvm::Value* c) { return intrinsic(llvm::Intrinsic::fma, {a, x, c}); }
  llvm::Value* fma(llvm::Value* a, double x, double c) { return fma(a, cf(x), cf(c)); }
  llvm::Value* fma(llvm::Value* a, llvm::Value* x, double c) { return fma(a, x, cf(c)); }
  llvm::Value* i32_of(llvm::Value* f) { return b_.CreateBitCast(f, widen(b_.getInt32Ty())); }
  llvm::Value* f32_of(llvm::Value* i) { return b_.CreateBitCast(i, widen(b_.getFloatTy())); }
  llvm::Value* sel(llvm::Value* c, llvm::Value* t, llvm::Value* f) { return b_.CreateSelect(c, t, f); }
  llvm::Value* pow2i(llvm::Value* k) { return f32_of(b_.CreateShl(b_.CreateAdd(k, ci(127)), ci(23))); }

  // ---- graft::vmath, operation for operation -------------------------------------------------------
  // vmath::detail::exp_reduced<K, SplitLn2>: 2^K q(r) for 2^K x = n ln2 + r; sets r / 2^K, t = n +
  // shift (and n as a float)
  llvm::Value* exp_reduced(int k, bool split_ln2, llvm::Value* x, double shift, llvm::Value*& t,
                           llvm::Value*& r, llvm::Value** n_float = nullptr) {
    const double s = std::ldexp(1.0, k);
    t = fma(x, static_cast<double>(1.44269504088896341f) * s, shift);
    llvm::Value* nf = b_.CreateFSub(t, cf(shift));
    if (n_float) *n_float = nf;
    if (split_ln2) {
      r = fma(nf, cf(-0.693145751953125 / s), x);
      r = fma(nf, cf(static_cast<double>(-1.4286068203094172e-06f) / s), r);
    } else {
      r = fma(nf, cf(static_cast<double>(-0.693147180559945309f) / s), x);
    }
    auto c = [&](int j) { return static_cast<double>(vmath::detail::kExpm1[j]) * std::ldexp(1.0, k * (j + 1)); };
    llvm::Value* q = fma(r, c(4), c(3));
    for (int j = 2; j >= 0; --j) q = fma(q, r, c(j));
    return q;
  }

  // AVX-512's vscalefps (x * 2^floor(y)) on each 16 lanes of a wider vector
  llvm::Value* scalef(llvm::Value* x, llvm::Value* y) {
    llvm::Function* f = llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::x86_avx512_mask_scalef_ps_512);
    auto* v16 = llvm::FixedVectorType::get(b_.getFloatTy(), 16);
    std::vector<llvm::Value*> parts;
    for (unsigned at = 0; at < lanes_; at += 16) {
      std::vector<int> idx(16);
      for (int l = 0; l < 16; ++l) idx[static_cast<size_t>(l)] = static_cast<int>(at) + l;
      llvm::Value* xs = lanes_ == 16 ? x : b_.CreateShuffleVector(x, idx);
      llvm::Value* ys = lanes_ == 16 ? y : b_.CreateShuffleVector(y, idx);
      parts.push_back(b_.CreateCall(f, {xs, ys, llvm::UndefValue::get(v16), b_.getInt16(0xffff), b_.getInt32(4)}));
    }
    // concatenate pairwise until one vector is left
    while (parts.size() > 1) {
      std::vector<llvm::Value*> next;
      for (size_t k = 0; k < parts.size(); k += 2) {
        unsigned w = llvm::cast<llvm::FixedVectorType>(parts[k]->getType())->getNumElements();
        std::vector<int> idx(2 * w);
        for (unsigned l = 0; l < 2 * w; ++l) idx[l] = static_cast<int>(l);
        next.push_back(b_.CreateShuffleVector(parts[k], parts[k + 1], idx));
      }
      parts = std::move(next);
    }
    return parts[0];
  }

  llvm::Value* exp(llvm::Value* x) {
    x = sel(b_.CreateFCmpOGT(x, cf(89.0)), cf(89.0), x);
    x = sel(b_.CreateFCmpOLT(x, cf(-104.0)), cf(-104.0), x);
    const double shift = vmath::detail::kShift;
    llvm::Value *t, *r, *nf;
    llvm::Value* q = exp_reduced(0, true, x, shift, t, r, &nf);
    llvm::Value* p = fma(fma(q, r, 1.0), r, 1.0);
    if (lanes_ % 16 == 0 && has_avx512()) {
      // p * 2^n in one instruction per 16 lanes, rounded once, overflowing to inf and gradually
      // underflowing exactly as the two multiplications below do
      return scalef(p, nf);
    }
    llvm::Value* n = b_.CreateSub(i32_of(t), i32_of(cf(shift)));
    llvm::Value* n1 = b_.CreateAShr(n, ci(1));
    return b_.CreateFMul(b_.CreateFMul(p, pow2i(n1)), pow2i(b_.CreateSub(n, n1)));
  }

  llvm::Value* log(llvm::Value* x) {
    llvm::Value* sub = b_.CreateFCmpOLT(x, cf(1.17549435e-38));
    llvm::Value* xs = sel(sub, b_.CreateFMul(x, cf(8388608.0)), x);
    llvm::Value* bits = i32_of(xs);
    llvm::Value* e = b_.CreateAShr(b_.CreateSub(bits, ci(0x3f3504f3)), ci(23));
    llvm::Value* m = f32_of(b_.CreateSub(bits, b_.CreateShl(e, ci(23))));
    llvm::Value* ef = b_.CreateFSub(b_.CreateSIToFP(e, widen(b_.getFloatTy())), sel(sub, cf(23.0), cf(0.0)));
    llvm::Value* f = b_.CreateFSub(m, cf(1.0));
    llvm::Value* p = fma(f, -0.07362867873115896, 0.12620327490446476);
    for (double c : {-0.13202104209122942, 0.14227114035720187, -0.16621369910190242, 0.1999982657295576,
                     -0.2500085194354479, 0.33333354047279407})
      p = fma(p, f, c);
    llvm::Value* f2 = b_.CreateFMul(f, f);
    llvm::Value* r = fma(b_.CreateFMul(p, f2), f, fma(cf(-0.5), f2, f));
    r = fma(ef, cf(-2.12194440e-4), r);
    r = fma(ef, cf(0.693359375), r);
    r = sel(b_.CreateFCmpOEQ(x, cf(0.0)), cf(-INFINITY), r);
    r = sel(b_.CreateFCmpOLT(x, cf(0.0)), cf(NAN), r);
    r = sel(b_.CreateFCmpOEQ(x, cf(INFINITY)), cf(INFINITY), r);
    return sel(b_.CreateFCmpUNO(x, x), x, r);
  }

  llvm::Value* tanh(llvm::Value* x) {
    llvm::Value* a = intrinsic(llvm::Intrinsic::fabs, {x});
    llvm::Value* c = sel(b_.CreateFCmpOGT(a, cf(10.0)), cf(10.0), a);
    llvm::Value *t2n, *r;
    llvm::Value* q = exp_reduced(1, false, c, vmath::detail::kShift + 127.0, t2n, r);
    llvm::Value* half_em1_r = fma(b_.CreateFMul(q, r), r, r);  // (e^r - 1) / 2 for e^{2c} = 2^n e^r
    llvm::Value* s2 = f32_of(b_.CreateShl(i32_of(t2n), ci(23)));  // 2^n
    llvm::Value* h = fma(s2, half_em1_r, fma(s2, 0.5, -0.5));
    llvm::Value* t = b_.CreateFDiv(h, b_.CreateFAdd(h, cf(1.0)));
    llvm::Value* small = fma(b_.CreateFNeg(h), t, h);
    return intrinsic(llvm::Intrinsic::copysign, {sel(b_.CreateFCmpOLT(a, cf(0.3)), small, t), x});
  }

  llvm::Value* logistic(llvm::Value* x) {
    llvm::Value* e = exp(b_.CreateFNeg(intrinsic(llvm::Intrinsic::fabs, {x})));
    llvm::Value* num = sel(b_.CreateFCmpOGE(x, cf(0.0)), cf(1.0), e);
    return b_.CreateFDiv(num, b_.CreateFAdd(cf(1.0), e));
  }

  // ---- reductions (the interpreter's combine rules, graft/prims/reduce.cpp) ----------------------------
  llvm::Value* identity(const Primitive& p, DType d) {
    if (&p == &reduce_sum_p) return cst(d, 0);
    if (&p == &reduce_prod_p) return cst(d, 1);
    bool mx = &p == &reduce_max_p;
    if (is_floating(d)) return cst(d, mx ? -INFINITY : INFINITY);
    unsigned bits = scalar(d)->getIntegerBitWidth();
    llvm::APInt v = is_unsigned(d) ? (mx ? llvm::APInt::getMinValue(bits) : llvm::APInt::getMaxValue(bits))
                                   : (mx ? llvm::APInt::getSignedMinValue(bits) : llvm::APInt::getSignedMaxValue(bits));
    return llvm::ConstantInt::get(type(d), v);
  }
  llvm::Value* combine(const Primitive& p, DType d, llvm::Value* acc, llvm::Value* v) {
    bool fl = is_floating(d);
    if (&p == &reduce_sum_p) return fl ? b_.CreateFAdd(acc, v) : b_.CreateAdd(acc, v);
    if (&p == &reduce_prod_p) return fl ? b_.CreateFMul(acc, v) : b_.CreateMul(acc, v);
    bool mx = &p == &reduce_max_p;
    if (fl) {  // a NaN value is taken; a NaN accumulator is never replaced
      llvm::Value* better = mx ? b_.CreateFCmpOGT(v, acc) : b_.CreateFCmpOLT(v, acc);
      return sel(b_.CreateOr(better, b_.CreateFCmpUNO(v, v)), v, acc);
    }
    bool u = is_unsigned(d);
    llvm::Value* better = mx ? (u ? b_.CreateICmpUGT(v, acc) : b_.CreateICmpSGT(v, acc))
                             : (u ? b_.CreateICmpULT(v, acc) : b_.CreateICmpSLT(v, acc));
    return sel(better, v, acc);
  }

  // ---- one primitive -------------------------------------------------------------------------------
  llvm::Value* emit(const LoopSpec::Op& op, const std::vector<llvm::Value*>& v, const std::vector<DType>& vd) {
    const Primitive& p = *op.prim;
    DType d = vd.empty() ? op.dtype : vd[0];
    bool fl = is_floating(d), uns = is_unsigned(d);
    llvm::Value* a = v.empty() ? nullptr : v[0];
    llvm::Value* c = v.size() > 1 ? v[1] : nullptr;
    if (&p == &exp_p) return exp(a);
    if (&p == &log_p) return log(a);
    if (&p == &tanh_p) return tanh(a);
    if (&p == &logistic_p) return logistic(a);
    if (&p == &sqrt_p) return intrinsic(llvm::Intrinsic::sqrt, {a});
    if (&p == &rsqrt_p) return b_.CreateFDiv(cst(d, 1.0), intrinsic(llvm::Intrinsic::sqrt, {a}));
    if (&p == &floor_p) return intrinsic(llvm::Intrinsic::floor, {a});
    if (&p == &ceil_p) return intrinsic(llvm::Intrinsic::ceil, {a});
    if (&p == &is_finite_p) return b_.CreateFCmpOLT(intrinsic(llvm::Intrinsic::fabs, {a}), cst(d, INFINITY));
    if (&p == &copy_p || &p == &stop_gradient_p) return a;
    if (&p == &neg_p) return fl ? b_.CreateFNeg(a) : b_.CreateSub(cst(d, 0), a);
    if (&p == &abs_p) {
      if (fl) return intrinsic(llvm::Intrinsic::fabs, {a});
      if (uns) return a;
      return sel(b_.CreateICmpSLT(a, cst(d, 0)), b_.CreateSub(cst(d, 0), a), a);
    }
    if (&p == &sign_p) {
      if (fl) {
        llvm::Value* r = sel(b_.CreateFCmpOGT(a, cst(d, 0)), cst(d, 1), sel(b_.CreateFCmpOLT(a, cst(d, 0)), cst(d, -1), cst(d, 0)));
        return sel(b_.CreateFCmpUNO(a, a), a, r);
      }
      if (uns) return b_.CreateZExt(b_.CreateICmpUGT(a, cst(d, 0)), type(d));
      return b_.CreateSub(b_.CreateZExt(b_.CreateICmpSGT(a, cst(d, 0)), type(d)),
                          b_.CreateZExt(b_.CreateICmpSLT(a, cst(d, 0)), type(d)));
    }
    if (&p == &square_p) return fl ? b_.CreateFMul(a, a) : b_.CreateMul(a, a);
    if (&p == &integer_pow_p) return integer_pow(a, d, op.params.get_int("y"));
    if (&p == &not__p) return b_.CreateNot(a);
    if (&p == &add_p || &p == &add_any_p) return fl ? b_.CreateFAdd(a, c) : b_.CreateAdd(a, c);
    if (&p == &sub_p) return fl ? b_.CreateFSub(a, c) : b_.CreateSub(a, c);
    if (&p == &mul_p) return fl ? b_.CreateFMul(a, c) : b_.CreateMul(a, c);
    if (&p == &div_p) return b_.CreateFDiv(a, c);
    if (&p == &max_p || &p == &min_p) {
      bool mx = &p == &max_p;
      if (fl) {
        llvm::Value* r = sel(mx ? b_.CreateFCmpOGT(a, c) : b_.CreateFCmpOLT(a, c), a, c);
        r = sel(b_.CreateFCmpUNO(c, c), c, r);
        return sel(b_.CreateFCmpUNO(a, a), a, r);
      }
      llvm::Value* cmp = mx ? (uns ? b_.CreateICmpUGT(a, c) : b_.CreateICmpSGT(a, c))
                            : (uns ? b_.CreateICmpULT(a, c) : b_.CreateICmpSLT(a, c));
      return sel(cmp, a, c);
    }
    if (&p == &and__p) return b_.CreateAnd(a, c);
    if (&p == &or__p) return b_.CreateOr(a, c);
    if (&p == &xor__p) return b_.CreateXor(a, c);
    if (&p == &eq_p) return fl ? b_.CreateFCmpOEQ(a, c) : b_.CreateICmpEQ(a, c);
    if (&p == &ne_p) return fl ? b_.CreateFCmpUNE(a, c) : b_.CreateICmpNE(a, c);
    if (&p == &lt_p) return fl ? b_.CreateFCmpOLT(a, c) : (uns || is_bool(d) ? b_.CreateICmpULT(a, c) : b_.CreateICmpSLT(a, c));
    if (&p == &le_p) return fl ? b_.CreateFCmpOLE(a, c) : (uns || is_bool(d) ? b_.CreateICmpULE(a, c) : b_.CreateICmpSLE(a, c));
    if (&p == &gt_p) return fl ? b_.CreateFCmpOGT(a, c) : (uns || is_bool(d) ? b_.CreateICmpUGT(a, c) : b_.CreateICmpSGT(a, c));
    if (&p == &ge_p) return fl ? b_.CreateFCmpOGE(a, c) : (uns || is_bool(d) ? b_.CreateICmpUGE(a, c) : b_.CreateICmpSGE(a, c));
    if (&p == &select_n_p) return sel(a, v[2], c);
    if (&p == &clamp_p) {
      DType xd = vd[1];
      llvm::Value *lo = v[0], *x = v[1], *hi = v[2];
      bool f = is_floating(xd), u = is_unsigned(xd);
      // min(max(x, lo), hi) as the tile kernel (crossed bounds give hi)
      llvm::Value* below = f ? b_.CreateFCmpOLT(x, lo) : (u ? b_.CreateICmpULT(x, lo) : b_.CreateICmpSLT(x, lo));
      llvm::Value* m = sel(below, lo, x);
      llvm::Value* above = f ? b_.CreateFCmpOGT(m, hi) : (u ? b_.CreateICmpUGT(m, hi) : b_.CreateICmpSGT(m, hi));
      llvm::Value* r = sel(above, hi, m);
      return f ? sel(b_.CreateFCmpUNO(x, x), x, r) : r;
    }
    if (&p == &convert_element_type_p) return convert(a, d, op.dtype);
    fail<ValueError>("codegen: no emitter for ", p.name, "; this is a graft compiler bug");
  }

  // ---- complex values: (real, imaginary) pairs of part values ---------------------------------------
  using Pair = std::pair<llvm::Value*, llvm::Value*>;

  // One primitive on complex operands or with a complex result (can_generate_complex's list). Real
  // operands and results are pairs with a null imaginary part.
  Pair emit_complex(const LoopSpec::Op& op, const std::vector<Pair>& v, const std::vector<DType>& vd) {
    const Primitive& p = *op.prim;
    DType d = vd[0];
    Pair a = v[0];
    if (&p == &add_p || &p == &add_any_p)
      return {b_.CreateFAdd(a.first, v[1].first), b_.CreateFAdd(a.second, v[1].second)};
    if (&p == &sub_p) return {b_.CreateFSub(a.first, v[1].first), b_.CreateFSub(a.second, v[1].second)};
    if (&p == &mul_p) return cmul(a, v[1], d);
    if (&p == &square_p) return cmul(a, a, d);
    if (&p == &neg_p) return {b_.CreateFNeg(a.first), b_.CreateFNeg(a.second)};
    if (&p == &conj_p) return {a.first, b_.CreateFNeg(a.second)};
    if (&p == &copy_p || &p == &stop_gradient_p) return a;
    if (&p == &real_p) return {a.first, nullptr};
    if (&p == &imag_p) return {a.second, nullptr};
    if (&p == &complex_p) return {a.first, v[1].first};
    if (&p == &eq_p)
      return {b_.CreateAnd(b_.CreateFCmpOEQ(a.first, v[1].first), b_.CreateFCmpOEQ(a.second, v[1].second)),
              nullptr};
    if (&p == &ne_p)
      return {b_.CreateOr(b_.CreateFCmpUNE(a.first, v[1].first), b_.CreateFCmpUNE(a.second, v[1].second)),
              nullptr};
    if (&p == &select_n_p)
      return {sel(a.first, v[2].first, v[1].first), sel(a.first, v[2].second, v[1].second)};
    if (&p == &integer_pow_p) {
      // square-and-multiply from 1 + 0i, as the tile kernel (1 * x is not x for infinite parts)
      uint64_t e = static_cast<uint64_t>(op.params.get_int("y"));
      Pair acc{cst(part(d), 1), cst(part(d), 0)}, base = a;
      while (e) {
        if (e & 1) acc = cmul(acc, base, d);
        e >>= 1;
        if (e) base = cmul(base, base, d);
      }
      return acc;
    }
    if (&p == &convert_element_type_p) {
      DType to = op.dtype;
      if (is_complex(d) && is_complex(to))
        return {convert(a.first, part(d), part(to)), convert(a.second, part(d), part(to))};
      if (is_complex(d) && is_bool(to))  // either part nonzero (or NaN)
        return {b_.CreateOr(b_.CreateFCmpUNE(a.first, cst(part(d), 0)),
                            b_.CreateFCmpUNE(a.second, cst(part(d), 0))),
                nullptr};
      if (is_complex(d)) return {convert(a.first, part(d), to), nullptr};  // the real part, as NumPy's cast
      return {convert(a.first, d, part(to)), cst(part(to), 0)};
    }
    fail<ValueError>("codegen: no complex emitter for ", p.name, "; this is a graft compiler bug");
  }

  static DType part(DType d) { return d == DType::c128 ? DType::f64 : d == DType::c64 ? DType::f32 : d; }

 private:
  // The textbook product, as wrap_mul (graft/prims/elementwise.h): complex64's products exact in
  // double and rounded once; complex128's through one fma per part.
  Pair cmul(Pair a, Pair c, DType d) {
    if (d == DType::c64) {
      llvm::Type* f64 = type(DType::f64);
      auto up = [&](llvm::Value* x) { return b_.CreateFPExt(x, f64); };
      llvm::Value *ar = up(a.first), *ai = up(a.second), *br = up(c.first), *bi = up(c.second);
      llvm::Type* f32 = type(DType::f32);
      return {b_.CreateFPTrunc(b_.CreateFSub(b_.CreateFMul(ar, br), b_.CreateFMul(ai, bi)), f32),
              b_.CreateFPTrunc(b_.CreateFAdd(b_.CreateFMul(ar, bi), b_.CreateFMul(ai, br)), f32)};
    }
    return {fma(a.first, c.first, b_.CreateFNeg(b_.CreateFMul(a.second, c.second))),
            fma(a.first, c.second, b_.CreateFMul(a.second, c.first))};
  }

  llvm::Value* integer_pow(llvm::Value* x, DType d, int64_t y) {
    bool fl = is_floating(d);
    uint64_t e = static_cast<uint64_t>(y < 0 ? -y : y);
    llvm::Value* acc = cst(d, 1);
    llvm::Value* base = x;
    auto mul = [&](llvm::Value* p, llvm::Value* q) { return fl ? b_.CreateFMul(p, q) : b_.CreateMul(p, q); };
    // the same order of multiplications as the interpreter's kernel (square-and-multiply)
    while (e) {
      if (e & 1) acc = mul(acc, base);
      e >>= 1;
      if (e) base = mul(base, base);
    }
    return fl && y < 0 ? b_.CreateFDiv(cst(d, 1), acc) : acc;
  }

  llvm::Value* convert(llvm::Value* x, DType from, DType to) {
    if (from == to) return x;
    // halves are f32 in registers: convert as f32 (f64 and integers as the interpreter does, through
    // f32), then round to the narrower type
    if (is_half(from)) from = DType::f32;
    if (is_half(to)) return round_to(convert(x, from, DType::f32), to);
    llvm::Type* t = type(to);
    if (from == to) return x;
    if (is_bool(to)) {
      if (is_floating(from)) return b_.CreateFCmpUNE(x, cst(from, 0));
      return b_.CreateICmpNE(x, cst(from, 0));
    }
    if (is_bool(from)) return is_floating(to) ? b_.CreateUIToFP(x, t) : b_.CreateZExt(x, t);
    if (is_floating(from) && is_floating(to))
      return itemsize(to) > itemsize(from) ? b_.CreateFPExt(x, t) : b_.CreateFPTrunc(x, t);
    if (is_floating(to)) return is_unsigned(from) ? b_.CreateUIToFP(x, t) : b_.CreateSIToFP(x, t);
    if (is_floating(from)) {  // NaN -> 0, out of range saturates (the interpreter's rule)
      auto id = is_unsigned(to) ? llvm::Intrinsic::fptoui_sat : llvm::Intrinsic::fptosi_sat;
      llvm::Function* f = llvm::Intrinsic::getDeclaration(&m_, id, {t, x->getType()});
      return b_.CreateCall(f, {x});
    }
    if (itemsize(to) < itemsize(from)) return b_.CreateTrunc(x, t);
    if (itemsize(to) == itemsize(from)) return x;
    return is_unsigned(from) ? b_.CreateZExt(x, t) : b_.CreateSExt(x, t);
  }

  llvm::IRBuilder<>& b_;
  llvm::Module& m_;
  unsigned lanes_;
};

// Lanes of the vector body: 64 bytes of the widest type in registers (LLVM splits them on narrower
// CPUs; halves are f32 there).
unsigned lanes_for(const LoopSpec& s) {
  size_t widest = 1;
  // (complex values: a vector of each part)
  auto width = [](DType d) { return is_half(d) ? size_t(4) : is_complex(d) ? itemsize(d) / 2 : itemsize(d); };
  for (auto& o : s.operands) widest = std::max(widest, width(o.dtype));
  for (auto& o : s.ops) widest = std::max(widest, width(o.dtype));
  return static_cast<unsigned>(64 / widest);
}

}  // namespace

namespace {

// Emits `void name(char* const* ptrs, int64_t n, int64_t init)` for one loop into `mod`.
void emit_loop(llvm::Module* mod, const LoopSpec& spec, const std::string& name) {
  llvm::LLVMContext* ctx = &mod->getContext();
  llvm::IRBuilder<> b(*ctx);
  llvm::Type* i8p = b.getInt8PtrTy();
  auto* fty = llvm::FunctionType::get(b.getVoidTy(), {i8p->getPointerTo(), b.getInt64Ty(), b.getInt64Ty()}, false);
  auto* fn = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, name, *mod);
  fn->addFnAttr(llvm::Attribute::NoUnwind);
  llvm::Value* ptrs = fn->getArg(0);
  llvm::Value* n = fn->getArg(1);
  llvm::Value* init = fn->getArg(2);
  auto* entry = llvm::BasicBlock::Create(*ctx, "entry", fn);
  b.SetInsertPoint(entry);

  unsigned lanes = lanes_for(spec);
  const bool excess = excess_precision();
  Emitter scalar_em(b, *mod, 1);
  using Pair = Emitter::Pair;
  // The address of element `index` of an array of dtype d (a complex element is two parts).
  auto elem = [&](DType d, llvm::Value* at_ptr, llvm::Value* index) {
    if (is_complex(d)) index = b.CreateShl(index, 1);
    return b.CreateGEP(scalar_em.stored(d), at_ptr, index);
  };
  // w elements of dtype d at p, in registers (from_memory's form; complex parts de-interleaved)
  auto load = [&](Emitter& em, DType d, llvm::Value* p, unsigned w) -> Pair {
    llvm::Type* st = em.widen(em.stored(d));
    if (!is_complex(d)) {
      llvm::Value* x =
          b.CreateAlignedLoad(st, b.CreateBitCast(p, st->getPointerTo()), llvm::Align(itemsize(d)));
      return {em.from_memory(x, d), nullptr};
    }
    llvm::Type* pt = scalar_em.stored(d);
    llvm::Align align(itemsize(d) / 2);
    if (w == 1)
      return {b.CreateAlignedLoad(pt, p, align),
              b.CreateAlignedLoad(pt, b.CreateConstGEP1_64(pt, p, 1), align)};
    auto* both = llvm::FixedVectorType::get(pt, 2 * w);
    llvm::Value* x = b.CreateAlignedLoad(both, b.CreateBitCast(p, both->getPointerTo()), align);
    std::vector<int> re(w), im(w);
    for (unsigned l = 0; l < w; ++l) re[l] = static_cast<int>(2 * l), im[l] = static_cast<int>(2 * l + 1);
    return {b.CreateShuffleVector(x, re), b.CreateShuffleVector(x, im)};
  };
  // stores w elements of dtype d at p (non-temporally with nt, p then 64-byte aligned)
  auto store = [&](Emitter& em, DType d, Pair x, llvm::Value* p, unsigned w, bool nt) {
    llvm::Value* v = x.first;
    llvm::Type* t = em.widen(em.stored(d));
    size_t align = itemsize(d);
    if (is_complex(d)) {
      align /= 2;
      llvm::Type* pt = scalar_em.stored(d);
      if (w == 1) {
        b.CreateAlignedStore(x.first, p, llvm::Align(align));
        b.CreateAlignedStore(x.second, b.CreateConstGEP1_64(pt, p, 1), llvm::Align(align));
        return;
      }
      std::vector<int> idx(2 * w);
      for (unsigned l = 0; l < w; ++l)
        idx[2 * l] = static_cast<int>(l), idx[2 * l + 1] = static_cast<int>(w + l);
      v = b.CreateShuffleVector(x.first, x.second, idx);
      t = llvm::FixedVectorType::get(pt, 2 * w);
    } else {
      v = em.to_memory(v, d);
    }
    llvm::StoreInst* st =
        b.CreateAlignedStore(v, b.CreateBitCast(p, t->getPointerTo()), llvm::Align(nt ? 64 : align));
    if (nt) {
      llvm::Metadata* one = llvm::ConstantAsMetadata::get(b.getInt32(1));
      st->setMetadata(llvm::LLVMContext::MD_nontemporal, llvm::MDNode::get(*ctx, one));
    }
  };
  // operand pointers, in order (literals have none)
  std::vector<llvm::Value*> base(spec.operands.size(), nullptr);
  int slot = 0;
  auto load_ptr = [&](DType d) {
    llvm::Value* p = b.CreateLoad(i8p, b.CreateConstGEP1_64(i8p, ptrs, static_cast<uint64_t>(slot++)));
    return b.CreateBitCast(p, scalar_em.stored(d)->getPointerTo());
  };
  std::vector<Pair> uniform(spec.operands.size(), Pair{nullptr, nullptr});  // scalar values read once
  for (size_t i = 0; i < spec.operands.size(); ++i) {
    const auto& o = spec.operands[i];
    if (o.literal.valid() && is_complex(o.dtype)) {
      complex128 z = o.literal.item<complex128>();
      llvm::Type* pt = scalar_em.scalar(o.dtype);
      uniform[i] = {llvm::ConstantFP::get(pt, z.real()), llvm::ConstantFP::get(pt, z.imag())};
      continue;
    }
    if (o.literal.valid()) {
      // integers by their own value: through a double, 64-bit ones beyond 2^53 changed
      uniform[i].first = is_floating(o.dtype)
                             ? llvm::ConstantFP::get(scalar_em.scalar(o.dtype), o.literal.item<double>())
                             : llvm::ConstantInt::get(scalar_em.scalar(o.dtype),
                                                      is_unsigned(o.dtype)
                                                          ? o.literal.item<uint64_t>()
                                                          : static_cast<uint64_t>(o.literal.item<int64_t>()),
                                                      !is_unsigned(o.dtype));
      continue;
    }
    base[i] = load_ptr(o.dtype);
    if (o.uniform) uniform[i] = load(scalar_em, o.dtype, base[i], 1);
  }
  const int64_t row = spec.row;
  std::vector<DType> value_dtype;
  for (auto& o : spec.operands) value_dtype.push_back(o.dtype);
  for (auto& op : spec.ops) value_dtype.push_back(op.dtype);
  std::vector<llvm::Value*> out_base;
  for (int id : spec.outputs) out_base.push_back(load_ptr(value_dtype[static_cast<size_t>(id)]));
  // The main loop's step: `unroll` bodies, each on `wide` lanes (several machine vectors). A long
  // dependent chain per vector (a polynomial, say) fills the out-of-order window with operations that
  // wait; LLVM splits each wide operation into one per machine vector, side by side, so that the
  // chains of neighbouring vectors interleave instruction by instruction. A loop that only reduces
  // its operands has short chains: it takes more bodies instead, each with its own accumulator.
  const unsigned interleave = spec.ops.empty() ? 1 : 4;
  const unsigned unroll = spec.ops.empty() ? 4 : 1;
  const unsigned wide = lanes * interleave;
  // reductions: an accumulator per body of the main loop, one for the single vectors after it and
  // one for the scalar tail, on the stack (promoted to registers below)
  std::vector<llvm::Value*> acc_ptr;
  std::vector<std::vector<llvm::Value*>> acc_wide, acc_vec, acc_one;  // [reduction][body]
  Emitter vec_em(b, *mod, lanes), wide_em(b, *mod, wide);
  for (auto& r : spec.reductions) {
    DType d = value_dtype[static_cast<size_t>(r.value)];
    acc_ptr.push_back(load_ptr(d));
    auto make = [&](Emitter& em, unsigned count) {
      std::vector<llvm::Value*> slots;
      for (unsigned u = 0; u < count; ++u) {
        slots.push_back(b.CreateAlloca(em.type(d)));
        b.CreateStore(em.identity(*r.prim, d), slots.back());
      }
      return slots;
    };
    acc_wide.push_back(make(wide_em, unroll));
    acc_vec.push_back(make(vec_em, 1));
    acc_one.push_back(make(scalar_em, 1));
  }

  // Where the body reads and writes: the operands' and outputs' pointers, moved to the current row's
  // start in a loop over rows (per-column operands stay at their start), and the per-row values.
  std::vector<llvm::Value*> at = base, out_at = out_base;
  // body(i, w, acc, u): computes elements [i, i + w) with w lanes, reducing into accumulators acc[.][u]
  auto body = [&](llvm::Value* i, unsigned w, const std::vector<std::vector<llvm::Value*>>& accs, unsigned u) {
    Emitter em(b, *mod, w);
    std::vector<Pair> val(value_dtype.size(), Pair{nullptr, nullptr});
    for (size_t k = 0; k < spec.operands.size(); ++k) {
      DType d = spec.operands[k].dtype;
      if (uniform[k].first) {
        val[k] = {em.splat(uniform[k].first), uniform[k].second ? em.splat(uniform[k].second) : nullptr};
        continue;
      }
      const auto& opnd = spec.operands[k];
      if ((opnd.prefetch_next || opnd.prefetch_ahead) && w > 1) {
        // one prefetch per cache line the body reads: the next block's, or the stream's 4 KiB ahead
        // (measured: 1-2 KiB is too close to hide DRAM latency behind a long body, 16 KiB no better)
        int64_t size = static_cast<int64_t>(itemsize(d));
        llvm::Value* dist = opnd.prefetch_next ? n : b.getInt64(4096 / size);
        for (int64_t l = 0; l < w; l += std::max<int64_t>(1, 64 / size)) {
          llvm::Value* pos = b.CreateAdd(b.CreateAdd(i, dist), b.getInt64(l));
          llvm::Value* ahead = b.CreateBitCast(elem(d, at[k], pos), i8p);
          b.CreateCall(llvm::Intrinsic::getDeclaration(mod, llvm::Intrinsic::prefetch, {i8p}),
                       {ahead, b.getInt32(0), b.getInt32(2), b.getInt32(1)});
        }
      }
      val[k] = load(em, d, elem(d, at[k], i), w);
    }
    size_t k0 = spec.operands.size();
    for (size_t j = 0; j < spec.ops.size(); ++j) {
      std::vector<Pair> args;
      std::vector<DType> arg_d;
      bool cx = is_complex(spec.ops[j].dtype);
      for (int a : spec.ops[j].args) {
        args.push_back(val[static_cast<size_t>(a)]);
        arg_d.push_back(value_dtype[static_cast<size_t>(a)]);
        cx = cx || is_complex(arg_d.back());
      }
      if (cx) {
        val[k0 + j] = em.emit_complex(spec.ops[j], args, arg_d);
      } else {
        std::vector<llvm::Value*> real;
        for (auto& a : args) real.push_back(a.first);
        val[k0 + j].first = em.emit(spec.ops[j], real, arg_d);
      }
      // half-precision results stay f32 in registers (excess precision, as XLA's and Inductor's
      // fused loops keep them), or are rounded after every operation as eager evaluation rounds them
      DType od = spec.ops[j].dtype;
      if (is_half(od) && !excess && spec.ops[j].prim != &convert_element_type_p)
        val[k0 + j].first = em.round_to(val[k0 + j].first, od);
    }
    for (size_t k = 0; k < spec.reductions.size(); ++k) {
      const auto& r = spec.reductions[k];
      DType d = value_dtype[static_cast<size_t>(r.value)];
      llvm::Value* slot = accs[k][u];
      llvm::Value* acc = b.CreateLoad(em.type(d), slot);
      b.CreateStore(em.combine(*r.prim, d, acc, val[static_cast<size_t>(r.value)].first), slot);
    }
    for (size_t o = 0; o < spec.outputs.size(); ++o) {
      int id = spec.outputs[o];
      DType d = value_dtype[static_cast<size_t>(id)];
      bool nt = w > 1 && o < spec.streaming.size() && spec.streaming[o];
      store(em, d, val[static_cast<size_t>(id)], elem(d, out_at[o], i), w, nt);
    }
  };

  // for (i = start; i < limit; i += step) emit(i); returns i after the loop
  auto counted = [&](llvm::Value* start, llvm::Value* limit, unsigned step, const std::function<void(llvm::Value*)>& emit) {
    llvm::BasicBlock* pre = b.GetInsertBlock();
    auto* head = llvm::BasicBlock::Create(*ctx, "head", fn);
    auto* loop = llvm::BasicBlock::Create(*ctx, "loop", fn);
    auto* exit = llvm::BasicBlock::Create(*ctx, "exit", fn);
    b.CreateBr(head);
    b.SetInsertPoint(head);
    llvm::PHINode* i = b.CreatePHI(b.getInt64Ty(), 2);
    i->addIncoming(start, pre);
    b.CreateCondBr(b.CreateICmpSLT(i, limit), loop, exit);
    b.SetInsertPoint(loop);
    emit(i);
    i->addIncoming(b.CreateAdd(i, b.getInt64(step)), b.GetInsertBlock());
    b.CreateBr(head);
    b.SetInsertPoint(exit);
    return static_cast<llvm::Value*>(i);
  };
  // `unroll` wide bodies a step, then single vectors, then scalars: elements [0, len)
  auto elements = [&](llvm::Value* len) {
    llvm::Value* nu = b.CreateAnd(len, b.getInt64(~static_cast<uint64_t>(unroll * wide - 1)));
    llvm::Value* n1 = b.CreateAnd(len, b.getInt64(~static_cast<uint64_t>(lanes - 1)));
    llvm::Value* i = counted(b.getInt64(0), nu, unroll * wide, [&](llvm::Value* x) {
      for (unsigned u = 0; u < unroll; ++u) body(b.CreateAdd(x, b.getInt64(u * wide)), wide, acc_wide, u);
    });
    i = counted(i, n1, lanes, [&](llvm::Value* x) { body(x, lanes, acc_vec, 0); });
    counted(i, len, 1, [&](llvm::Value* x) { body(x, 1, acc_one, 0); });
  };
  // fold the wide accumulators together (in order), their machine vectors into the single vectors'
  // accumulator, its lanes (in order), then the tail's, into the result at acc_ptr[k][index]
  auto finish = [&](llvm::Value* index, llvm::Value* fresh) {
    for (size_t k = 0; k < spec.reductions.size(); ++k) {
      const auto& r = spec.reductions[k];
      DType d = value_dtype[static_cast<size_t>(r.value)];
      llvm::Value* w = b.CreateLoad(wide_em.type(d), acc_wide[k][0]);
      for (unsigned u = 1; u < unroll; ++u) w = wide_em.combine(*r.prim, d, w, b.CreateLoad(wide_em.type(d), acc_wide[k][u]));
      llvm::Value* v = b.CreateLoad(vec_em.type(d), acc_vec[k][0]);
      for (unsigned part = 0; part < interleave; ++part) {
        std::vector<int> idx(lanes);
        for (unsigned l = 0; l < lanes; ++l) idx[l] = static_cast<int>(part * lanes + l);
        v = vec_em.combine(*r.prim, d, v, interleave == 1 ? w : b.CreateShuffleVector(w, idx));
      }
      llvm::Value* total = scalar_em.identity(*r.prim, d);
      for (unsigned l = 0; l < lanes; ++l) total = scalar_em.combine(*r.prim, d, total, b.CreateExtractElement(v, l));
      total = scalar_em.combine(*r.prim, d, total, b.CreateLoad(scalar_em.type(d), acc_one[k][0]));
      llvm::Type* st = scalar_em.stored(d);
      llvm::Value* dst = b.CreateGEP(st, acc_ptr[k], index);
      llvm::Value* old = scalar_em.from_memory(b.CreateLoad(st, dst), d);
      llvm::Value* merged = scalar_em.combine(*r.prim, d, old, total);
      b.CreateStore(scalar_em.to_memory(b.CreateSelect(fresh, total, merged), d), dst);
    }
  };
  if (row == 0) {
    elements(n);
    finish(b.getInt64(0), b.CreateICmpNE(init, b.getInt64(0)));
  } else {
    // rows: each starts its accumulators afresh, reads its per-row operands once, and folds its
    // reductions into its own accumulator element
    counted(b.getInt64(0), b.CreateSDiv(n, b.getInt64(row)), 1, [&](llvm::Value* r) {
      llvm::Value* first = b.CreateMul(r, b.getInt64(row));
      for (size_t k = 0; k < spec.operands.size(); ++k) {
        const auto& o = spec.operands[k];
        if (!base[k] || o.uniform || o.per_column) continue;
        if (o.per_row) {
          uniform[k] = load(scalar_em, o.dtype, elem(o.dtype, base[k], r), 1);
        } else {
          at[k] = elem(o.dtype, base[k], first);
        }
      }
      for (size_t o = 0; o < spec.outputs.size(); ++o)
        out_at[o] = elem(value_dtype[static_cast<size_t>(spec.outputs[o])], out_base[o], first);
      for (size_t k = 0; k < spec.reductions.size(); ++k) {
        DType d = value_dtype[static_cast<size_t>(spec.reductions[k].value)];
        for (auto* accs : {&acc_wide, &acc_vec})
          for (llvm::Value* slot : (*accs)[k])
            b.CreateStore((accs == &acc_wide ? wide_em : vec_em).identity(*spec.reductions[k].prim, d), slot);
        b.CreateStore(scalar_em.identity(*spec.reductions[k].prim, d), acc_one[k][0]);
      }
      elements(b.getInt64(row));
      finish(r, b.getTrue());
    });
  }
  bool any_nt = false;
  for (bool nt : spec.streaming) any_nt = any_nt || nt;
  // non-temporal stores are weakly ordered: fence them before other threads read the results
  if (any_nt) b.CreateCall(llvm::Intrinsic::getDeclaration(mod, llvm::Intrinsic::x86_sse_sfence));
  b.CreateRetVoid();
  if (!spec.reductions.empty()) {  // the accumulators live on the stack until mem2reg lifts them
    llvm::legacy::FunctionPassManager fpm(mod);
    fpm.add(llvm::createPromoteMemoryToRegisterPass());
    fpm.doInitialization();
    fpm.run(*fn);
    fpm.doFinalization();
  }
}

}  // namespace

namespace {

// A description of the loops that determines their code: the disk cache's key. It includes this
// file's build time, so a rebuilt code generator never reuses objects made by an older one.
std::string cache_key(std::span<const LoopSpec* const> specs) {
  std::ostringstream k;
  k << "graft-codegen " << __DATE__ << " " << __TIME__ << (excess_precision() ? " excess" : "") << "\n";
  for (const LoopSpec* sp : specs) {
    k << "loop";
    for (auto& o : sp->operands) {
      k << " o" << static_cast<int>(o.dtype) << (o.uniform ? "u" : "") << (o.prefetch_next ? "p" : "") << (o.prefetch_ahead ? "a" : "")
        << (o.per_row ? "r" : "") << (o.per_column ? "c" : "");
      if (o.literal.valid()) {  // the exact value: hex for floats, the integer itself for integers
        if (is_complex(o.literal.dtype())) {
          complex128 z = o.literal.item<complex128>();
          k << "=" << std::hexfloat << z.real() << "," << z.imag() << std::defaultfloat;
        } else if (is_floating(o.literal.dtype())) {
          k << "=" << std::hexfloat << o.literal.item<double>() << std::defaultfloat;
        } else if (is_unsigned(o.literal.dtype())) {
          k << "=u" << o.literal.item<uint64_t>();
        } else {
          k << "=i" << o.literal.item<int64_t>();
        }
      }
    }
    for (auto& op : sp->ops) {
      k << " " << op.prim->name << ":" << static_cast<int>(op.dtype) << "(";
      for (int a : op.args) k << a << ",";
      k << ")[";
      for (auto& [name, v] : op.params) {
        k << name << "=";
        print_param_value(k, v);
        k << ";";
      }
      k << "]";
    }
    k << " ->";
    for (size_t i = 0; i < sp->outputs.size(); ++i)
      k << " " << sp->outputs[i] << (i < sp->streaming.size() && sp->streaming[i] ? "s" : "");
    for (auto& r : sp->reductions) k << " " << r.prim->name << "(" << r.value << ")";
    if (sp->row) k << " rows of " << sp->row;
    k << "\n";
  }
  return k.str();
}

}  // namespace

std::vector<LoopFn> generate_loops(std::span<const LoopSpec* const> specs) {
  std::vector<LoopFn> fns(specs.size(), nullptr);
  if (!codegen_enabled() || specs.empty()) return fns;
  std::vector<std::string> names;
  for (size_t i = 0; i < specs.size(); ++i) names.push_back("loop" + std::to_string(i));
  std::string key = cache_key(specs);
  std::vector<void*> addrs = cpu::jit_load_cached(key, names);
  if (addrs.empty()) {
    auto ctx = std::make_unique<llvm::LLVMContext>();
    auto mod = std::make_unique<llvm::Module>("graft", *ctx);
    for (size_t i = 0; i < specs.size(); ++i) emit_loop(mod.get(), *specs[i], names[i]);
    addrs = cpu::jit_compile(std::move(ctx), std::move(mod), names, key);
  }
  for (size_t i = 0; i < specs.size(); ++i) fns[i] = reinterpret_cast<LoopFn>(addrs[i]);
  return fns;
}


#endif

}  // namespace graft::compiler
