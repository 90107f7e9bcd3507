// The CUDA runtime under graft's GPU arrays: devices, one stream per device, the caching allocator,
// kernels compiled with NVRTC (and cached on disk), cuBLAS handles, and the Backend that the core
// moves arrays through. Built only with -DGRAFT_WITH_CUDA=ON; nothing here includes CUDA's headers, so
// the layers above use it without them.
//
// Work is asynchronous: kernels and copies to the device are queued on the device's stream and the
// host returns at once. The host waits only to read a value (to_vector, item, printing: a copy back),
// on block_until_ready(), or on synchronize(); an error raised by a queued kernel is reported there
// as a graft::Error naming the device.
//
// graft opens libcudart, NVRTC, cuBLAS and cuBLASLt on first use (libraries.h) and never the driver
// library (kernels are loaded through the runtime's cudaLibraryLoadData), so a CUDA build starts on
// machines without a driver or without the toolkit: device_count() is then 0 and GPU arrays raise an
// error that says why.
#pragma once

#include <memory>
#include <string>

#include "graft/runtime/collectives.h"
#include "graft/backends/cuda/allocator.h"

namespace graft::cuda {

/// How many GPUs the driver shows (0 without a driver or GPU).
int device_count();
/// Why there is no GPU ("" when there is one): the driver's own error message.
std::string unavailable_reason();

/// The allocator's counters for device `device` (PyTorch's torch.cuda.memory_stats).
MemoryStats memory_stats(int device = 0);
/// Returns the allocator's cached blocks to the device.
void empty_cache(int device = 0);
/// Waits for all work queued on the device; raises errors it produced.
void synchronize(int device = 0);

// ---- for kernels (graft/backends/cuda) ---------------------------------------------------------------------
/// The device's stream, as a cudaStream_t.
void* stream(int device);
/// Raises graft::Error for a failed CUDA runtime call (`err` is a cudaError_t); `what` names the call.
void check(int err, const char* what);
/// The compute capability as one number (90 for sm_90).
int arch(int device);
int multiprocessor_count(int device);
/// The kernel `name` compiled from `source` for the device (compiled with NVRTC on first use, then
/// from memory or the disk cache, see kernel_cache.h); a pointer to launch with launch().
const void* kernel(const std::string& source, const std::string& name, int device);
/// Queues a kernel on the device's stream; launch errors are raised here.
void launch(const void* fn, unsigned grid, unsigned block, void** args, size_t shared_bytes, int device);
/// The cubin NVRTC makes of `source` for `arch` (needs no GPU: tests compile every kernel). Raises
/// graft::Error with the compiler's log on failure.
std::string compile_cubin(const std::string& source, const std::string& name, int arch);
/// NVRTC's version (major * 100 + minor).
int nvrtc_version();
/// The device's cuBLAS handle (a cublasHandle_t bound to its stream).
void* blas_handle(int device);
/// Scratch memory for cuBLAS on the device.
void* blas_workspace(int device, size_t* nbytes);
/// Whether f32 matrix products may use TF32 tensor cores (GRAFT_ALLOW_TF32=1 or allow_tf32(true);
/// off by default, as PyTorch's torch.backends.cuda.matmul.allow_tf32).
bool tf32_allowed();
void allow_tf32(bool on);

// ---- collectives on device memory (graft/backends/cuda/nccl.cpp) ------------------------------------------
/// An NCCL communicator of host's ranks on `device` (rank 0's unique id sent through host); raises
/// graft::Error when NCCL cannot be loaded or the GPU cannot join. device_communicator (graft/runtime/
/// collectives.h) makes these for GPU arrays: NCCL is the backend's communicator factory.
std::shared_ptr<Communicator> nccl_communicator(const std::shared_ptr<Communicator>& host, int device);
/// Why NCCL cannot be loaded ("" when it can).
std::string nccl_unavailable_reason();

/// The functions of CUDA's libraries that graft calls and the installed ones lack, as
/// "library:function" separated by spaces ("" when every one is there). graft opens the libraries on
/// first use rather than linking them (graft/backends/cuda/libraries.h).
std::string missing_library_functions();

/// Counters for tests and benchmarks: kernels compiled by NVRTC in this process, kernels found in the
/// disk cache, and graft's own kernel launches (launch(); cuBLAS's are not counted).
struct KernelStats {
  int64_t compiled = 0, disk_hits = 0, launches = 0;
};
KernelStats kernel_stats();

}  // namespace graft::cuda
