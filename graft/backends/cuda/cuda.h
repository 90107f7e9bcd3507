// The CUDA backend's registration: the descriptor graft/backends/builtin.cpp registers, and the parts
// it gathers from this folder. Built only with CUDA.
#pragma once

#include <cstdint>
#include <memory>

#include "graft/backends/backend.h"

namespace graft::cuda {

/// The CUDA backend: runtime.cpp's runtime, primitives.cpp's and fusion.cpp's kernels, the code
/// generator for fused loops (fusion_codegen.h, through fusion.cpp), cuBLASLt's epilogues
/// (gemm_epilogues) and NCCL (nccl.cpp).
BackendDescriptor backend();

// ---- the parts (one file each) ---------------------------------------------------------------------
/// runtime.cpp: memory, copies and synchronization of CUDA devices.
Backend& runtime();
/// primitives.cpp: the kernels of graft's primitives.
void register_primitive_kernels(int16_t device_type);
/// fusion.cpp: the kernels of the GEMM epilogues (graft/compiler/epilogue.h).
void register_epilogue_kernels(int16_t device_type);
/// fusion.cpp: the kernel of the fusion primitive (a body compiled by fusion_codegen.h with NVRTC).
ImplRule fusion_kernel();
/// nccl.cpp: an NCCL communicator of `host`'s ranks on device d.
std::shared_ptr<Communicator> make_nccl(const std::shared_ptr<Communicator>& host, Device d);

}  // namespace graft::cuda
