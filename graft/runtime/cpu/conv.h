// Direct 2-D convolution on the CPU through oneDNN (no im2col buffer).
#pragma once

#include <cstdint>

#include "graft/core/dtype.h"

namespace graft::cpu {

/// A 2-D convolution described logically: src (N, C, H, W), weights (O, C / groups, KH, KW), dst
/// (N, O, OH, OW), each with arbitrary element strides (so any dimension layout is read and written
/// in place). `dilation` counts like XLA's (1 = none); padding is non-negative. Returns false when
/// oneDNN is not available or does not take the problem (the caller then uses its own kernel).
struct Conv2dDesc {
  int64_t src_dims[4], src_strides[4];
  int64_t wei_dims[4], wei_strides[4];
  int64_t dst_dims[4], dst_strides[4];
  int64_t strides[2], dilation[2], pad_lo[2], pad_hi[2];
  int64_t groups = 1;
};
/// Whether conv2d runs anything at all (graft built with oneDNN).
bool conv2d_available();

/// `dtype` is f32 or bf16 (every operand of that type). bf16 runs on oneDNN's bf16 kernels, which
/// accumulate in f32 and round each result once; only where the CPU has bf16 dot products
/// (native_half_gemm, features.h) and oneDNN has a compiled kernel for the problem (never its
/// reference loops): false otherwise, and the caller computes in f32.
bool conv2d(DType dtype, const Conv2dDesc& d, const void* src, const void* wei, void* dst);

/// The kernel gradient of the convolution `d` describes (groups == 1): diff_wei = the weights
/// gradient given its input `src` and the gradient of its output `diff_dst` (oneDNN's backward-weights
/// kernels, faster than the same sum written as a forward convolution with a huge kernel). dtype and
/// the return value as conv2d's.
bool conv2d_backward_weights(DType dtype, const Conv2dDesc& d, const void* src, const void* diff_dst,
                             void* diff_wei);

}  // namespace graft::cpu
