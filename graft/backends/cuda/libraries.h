// The CUDA libraries graft calls — the runtime (cudart), NVRTC, cuBLAS and cuBLASLt — opened with
// dlopen on first use instead of linked. Linked, their constructors ran in every process that linked
// graft, GPU or not: about 0.35 s at each start (cuBLASLt's above all), paid by every CPU program, every
// test process and `import graft`. Opened on demand, a CUDA build also starts on a machine without the
// toolkit's libraries: device_count() is then 0 and unavailable_reason() says which library is missing.
//
// The backend's files call the libraries through lib:: (lib::cudaMalloc(&p, n)); each function is
// looked up once, on its first call. Private to graft/backends/cuda: it includes CUDA's headers.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nvrtc.h>

#include <string>

namespace graft::cuda::lib {

enum class Library { cudart, nvrtc, cublas, cublasLt };

/// Why `l` cannot be opened ("" when it can); opens it on first use.
std::string unavailable(Library l);
/// The address of `name` in `l`; raises graft::Error naming the library and the symbol when either is
/// missing.
void* symbol(Library l, const char* name);

// Every function graft calls, by library (missing_library_functions() in runtime.h checks them). Names that CUDA's headers define as macros (cublasCreate is
// cublasCreate_v2) are looked up under the name the macro gives.
#define GRAFT_CUDA_FUNCTIONS(X)                                                                           \
  X(cudart, cudaDeviceGetAttribute) X(cudart, cudaFree) X(cudart, cudaGetDeviceCount)                      \
  X(cudart, cudaGetErrorName) X(cudart, cudaGetErrorString) X(cudart, cudaGetLastError)                    \
  X(cudart, cudaLibraryGetKernel) X(cudart, cudaLibraryLoadData) X(cudart, cudaMemcpyAsync)                \
  X(cudart, cudaSetDevice)                                                                                 \
  X(cudart, cudaStreamCreateWithFlags) X(cudart, cudaStreamSynchronize)                                    \
  X(nvrtc, nvrtcCompileProgram) X(nvrtc, nvrtcCreateProgram) X(nvrtc, nvrtcDestroyProgram)                 \
  X(nvrtc, nvrtcGetCUBIN) X(nvrtc, nvrtcGetCUBINSize) X(nvrtc, nvrtcGetErrorString)                        \
  X(nvrtc, nvrtcGetProgramLog) X(nvrtc, nvrtcGetProgramLogSize) X(nvrtc, nvrtcVersion)                     \
  X(cublas, cublasCreate) X(cublas, cublasGetStatusString) X(cublas, cublasSetStream)                      \
  X(cublas, cublasSetWorkspace)                                                                            \
  X(cublasLt, cublasLtCreate) X(cublasLt, cublasLtMatmul) X(cublasLt, cublasLtMatmulAlgoGetHeuristic)      \
  X(cublasLt, cublasLtMatmulDescCreate) X(cublasLt, cublasLtMatmulDescSetAttribute)                        \
  X(cublasLt, cublasLtMatmulPreferenceCreate) X(cublasLt, cublasLtMatmulPreferenceDestroy)                 \
  X(cublasLt, cublasLtMatmulPreferenceSetAttribute) X(cublasLt, cublasLtMatrixLayoutCreate)

// Functions that C++ overloads in CUDA's headers, with the C function's type.
using CublasGemmStridedBatchedEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                                      int, const void*, const void*, cudaDataType, int, long long,
                                                      const void*, cudaDataType, int, long long, const void*, void*,
                                                      cudaDataType, int, long long, int, cublasComputeType_t,
                                                      cublasGemmAlgo_t);
using CudaMalloc = cudaError_t (*)(void**, size_t);
using CudaLaunchKernel = cudaError_t (*)(const void*, dim3, dim3, void**, size_t, cudaStream_t);
#define GRAFT_CUDA_TYPED_FUNCTIONS(X)                                                                \
  X(cudart, cudaMalloc, CudaMalloc) X(cudart, cudaLaunchKernel, CudaLaunchKernel)                    \
  X(cublas, cublasGemmStridedBatchedEx, CublasGemmStridedBatchedEx)

#define GRAFT_CUDA_NAME2(x) #x
#define GRAFT_CUDA_NAME(x) GRAFT_CUDA_NAME2(x)
// lib::fn(args...) calls the library's fn, looked up on the first call (thread-safe: a static local).
#define GRAFT_CUDA_TYPED_WRAPPER(library, fn, Type)                                           \
  template <class... A>                                                                       \
  auto fn(A... a) {                                                                           \
    static const Type f = reinterpret_cast<Type>(symbol(Library::library, GRAFT_CUDA_NAME(fn))); \
    return f(a...);                                                                           \
  }
#define GRAFT_CUDA_WRAPPER(library, fn) GRAFT_CUDA_TYPED_WRAPPER(library, fn, decltype(&::fn))
GRAFT_CUDA_FUNCTIONS(GRAFT_CUDA_WRAPPER)
GRAFT_CUDA_TYPED_FUNCTIONS(GRAFT_CUDA_TYPED_WRAPPER)
#undef GRAFT_CUDA_WRAPPER
#undef GRAFT_CUDA_TYPED_WRAPPER

}  // namespace graft::cuda::lib
