// What this CPU can do, decided at run time (one binary runs on every x86-64): the instruction sets
// that change which kernels graft picks.
#pragma once

#include "graft/core/dtype.h"

// Functions compiled for AVX-512 in a build for any x86-64 (one binary runs everywhere): callers check
// has_avx512() first, and such a function is never inlined into code built without it.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define GRAFT_HAVE_TARGET_AVX512 1
#define GRAFT_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))
#else
#define GRAFT_HAVE_TARGET_AVX512 0
#endif

namespace graft::cpu {

/// Whether products of bf16 operands run natively here: the CPU has AVX512-BF16 or AMX-BF16 dot
/// products and graft was built with oneDNN, whose bf16 matmul kernels use them (f32 accumulation, one
/// rounding per result). GRAFT_NATIVE_BF16=0 turns it off, to measure or test the fallback (operands
/// widened to f32, the f32 GEMM, the result rounded), which is what a CPU without them runs.
bool native_bf16();

/// Whether GEMMs of dtype `d` (f16 or bf16) run on native half-precision kernels (see native_bf16; f16
/// products always take the f32 route: oneDNN 2.6 has no f16 matmul for the CPUs it is built for).
bool native_half_gemm(DType d);

/// Whether the CPU has AVX-512 (F, BW, VL and DQ), and the OS saves its registers: kernels compiled
/// for it with GRAFT_TARGET_AVX512 (whatever the build's -march) run only where this holds.
bool has_avx512();

/// For tests: makes has_avx512() false (true: the detected value again), so that the kernels that
/// every other CPU runs are tested here too.
void disable_avx512_for_testing(bool off);

/// Whether graft was built with oneDNN (its GEMM, matmul and convolution kernels).
bool have_onednn();

/// For tests: overrides native_bf16() (nullopt-like -1 restores the detected value).
void set_native_bf16_for_testing(int on);

}  // namespace graft::cpu
