#include "graft/backends/cuda/cuda.h"

#include "graft/backends/cuda/fusion_codegen.h"

namespace graft::cuda {

namespace {
void register_kernels(int16_t device_type) {
  register_primitive_kernels(device_type);
  register_epilogue_kernels(device_type);
}
}  // namespace

BackendDescriptor backend() {
  BackendDescriptor b;
  b.name = "cuda";
  b.aliases = {"gpu"};
  b.runtime = &runtime();
  b.kernels = &register_kernels;
  b.fusion = fusion_kernel();
  b.fusible = &cuda_fusible;
  b.passes = {"gemm_epilogues"};
  b.communicator = &make_nccl;
  return b;
}

}  // namespace graft::cuda
