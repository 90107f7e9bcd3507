// What this CPU can do, decided at run time (one binary runs on every x86-64): the instruction sets
// that change which kernels graft picks.
#pragma once

#include "graft/core/dtype.h"

namespace graft::cpu {

/// Whether products of bf16 operands run natively here: the CPU has AVX512-BF16 or AMX-BF16 dot
/// products and graft was built with oneDNN, whose bf16 matmul kernels use them (f32 accumulation, one
/// rounding per result). GRAFT_NATIVE_BF16=0 turns it off, to measure or test the fallback (operands
/// widened to f32, the f32 GEMM, the result rounded), which is what a CPU without them runs.
bool native_bf16();

/// Whether GEMMs of dtype `d` (f16 or bf16) run on native half-precision kernels (see native_bf16; f16
/// products always take the f32 route: oneDNN 2.6 has no f16 matmul for the CPUs it is built for).
bool native_half_gemm(DType d);

/// Whether graft was built with oneDNN (its GEMM, matmul and convolution kernels).
bool have_onednn();

/// For tests: overrides native_bf16() (nullopt-like -1 restores the detected value).
void set_native_bf16_for_testing(int on);

}  // namespace graft::cpu
