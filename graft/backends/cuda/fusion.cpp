// The compiler's primitives on CUDA devices: the fusion primitive's kernel (the backend's code
// generator for fused loops, handed to register_backend) and the GEMM epilogues' kernels. Fused loops: each fused body becomes one CUDA kernel (graft/backends/cuda/fusion_codegen.h),
// compiled by NVRTC on its first run on a device and cached on disk by the runtime; a body the
// generator refuses runs op by op on the device. GEMM epilogues (graft/compiler/epilogue.h): one
// cuBLASLt matmul each (BIAS / RELU_BIAS, BGRADA); where cuBLASLt declines a case, or with
// GRAFT_CUDA_EPILOGUES=0, the primitives they stand for. Built only with CUDA.

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "graft/backends/cuda/cuda.h"
#include "graft/backends/cuda/fusion_codegen.h"
#include "graft/backends/cuda/libraries.h"
#include "graft/backends/cuda/runtime.h"
#include "graft/compiler/epilogue.h"
#include "graft/compiler/fusion.h"
#include "graft/core/env.h"
#include "graft/core/trace.h"
#include "graft/prims/lax.h"

namespace graft::cuda {

namespace {

using namespace graft::compiler;

// One body's kernels: with vector accesses and without (for operands that are views at offsets not
// aligned to the vectors), each compiled per device on first use, and the body's constants per device.
// Kept on the body (ClosedJaxpr::derived), so they live as long as the program that holds it.
struct BodyKernels {
  std::optional<CudaFusedKernel> vec, scalar;
  std::string why;  // the generator's refusal (then the body runs op by op)
  // per device, filled on first use (under g_mu)
  mutable std::map<int, const void*> vec_fn, scalar_fn;
  mutable std::map<int, std::vector<Array>> consts;
};

std::mutex g_mu;

const BodyKernels& kernels_of(const ClosedJaxpr& body) {
  return *body.derived<BodyKernels>("cuda_fused_kernel", [&] {
    BodyKernels b;
    b.vec = cuda_fused_kernel(body, {}, &b.why);
    if (b.vec && b.vec->vector > 1) b.scalar = cuda_fused_kernel(body, {.max_vector = 1});
    return b;
  });
}

bool aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

Arrays fusion_gpu(const Primitive&, std::span<const Array> in, std::span<const Aval> outs, const Params& params) {
  const ClosedJaxpr& body = fusion_body(params);
  const BodyKernels& b = kernels_of(body);
  Device dev = in.empty() ? default_device() : in[0].device();
  if (!b.vec) {  // op by op, each primitive on the device
    DefaultDevice here(dev);
    TraceScope eager(eval_trace());
    return eval_jaxpr(body, in);
  }
  int d = dev.index;
  size_t nc = body.consts.size();
  std::vector<void*> ptrs;
  {
    std::lock_guard<std::mutex> lk(g_mu);
    auto& cs = b.consts[d];
    if (cs.size() != nc)
      for (const Array& c : body.consts) cs.push_back(transfer(c, dev));
    for (const Array& c : cs) ptrs.push_back(c.concrete()->data());
  }
  for (const Array& x : in) ptrs.push_back(x.concrete()->data());
  Arrays res = fused_outputs(*b.vec, nc, in, outs, dev);
  for (const Array& r : res) ptrs.push_back(r.concrete()->data());
  if (b.vec->n == 0) return res;
  bool vec_ok = b.vec->vector > 1;
  size_t vbytes = 16;
  for (size_t k = 0; k < ptrs.size() && vec_ok; ++k) {
    DType t = k < b.vec->inputs.size() ? b.vec->inputs[k] : b.vec->outputs[k - b.vec->inputs.size()];
    vbytes = itemsize(t) * static_cast<size_t>(b.vec->vector);
    vec_ok = aligned(ptrs[k], std::min<size_t>(vbytes, 16));
  }
  const CudaFusedKernel& k = vec_ok || !b.scalar ? *b.vec : *b.scalar;
  const void* fn;
  {
    std::lock_guard<std::mutex> lk(g_mu);
    auto& fns = &k == &*b.vec ? b.vec_fn : b.scalar_fn;
    auto it = fns.find(d);
    fn = it != fns.end() ? it->second : nullptr;
  }
  if (!fn) {
    fn = cuda::kernel(k.source, CudaFusedKernel::kName, d);
    std::lock_guard<std::mutex> lk(g_mu);
    (&k == &*b.vec ? b.vec_fn : b.scalar_fn)[d] = fn;
  }
  std::vector<void*> args;
  for (void*& p : ptrs) args.push_back(&p);
  // enough blocks to fill every multiprocessor (2048 threads each), never more than the work
  int64_t waves = int64_t(cuda::multiprocessor_count(d)) * std::max(1, 2048 / k.block);
  auto grid = static_cast<unsigned>(std::max<int64_t>(1, std::min(k.units, waves)));
  cuda::launch(fn, grid, static_cast<unsigned>(k.block), args.data(), 0, d);
  return res;
}

// ---- GEMM epilogues on cuBLASLt ------------------------------------------------------------------------
// Row-major C[M, N] = op(lhs) op(rhs) is column-major C^T[N, M] = op(rhs)^T op(lhs)^T: cuBLASLt's A is
// our rhs and its B our lhs, and a bias over C's columns is a bias over C^T's rows (cuBLASLt's m).
cublasLtHandle_t lt_handle(int d) {
  static std::mutex mu;
  static std::map<int, cublasLtHandle_t> handles;
  std::lock_guard<std::mutex> lk(mu);
  auto& h = handles[d];
  if (!h && lib::cublasLtCreate(&h) != CUBLAS_STATUS_SUCCESS) fail<Error>("cuBLASLt: cublasLtCreate failed on cuda:", d);
  return h;
}

cudaDataType lt_type(DType t) { return t == DType::f16 ? CUDA_R_16F : t == DType::bf16 ? CUDA_R_16BF : CUDA_R_32F; }

struct LtMatrix {
  const Array* x;
  bool trans;      // the row-major operand read transposed
  int64_t rows, cols, ld;  // its column-major layout
};

// A cuBLASLt matmul's descriptors and the algorithm its heuristic chose, made once per problem (shapes,
// transposes, type, compute type, epilogue, device): the heuristic query and the descriptors cost the
// host more than the launch, once per GEMM of every step. `ok` is false when cuBLASLt declined.
struct LtPlan {
  bool ok = false;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulAlgo_t algo{};
  std::mutex mu;  // the bias pointer is set on the shared descriptor just before each matmul
};

std::shared_ptr<LtPlan> lt_plan(int d, const LtMatrix& a, const LtMatrix& b, int64_t m, int64_t n, DType t,
                                cublasComputeType_t ct, cublasLtEpilogue_t epilogue) {
  using Key = std::tuple<int, int64_t, int64_t, int64_t, bool, int64_t, int64_t, int64_t, bool, int64_t, int64_t, int, int, int>;
  static std::mutex mu;
  static std::map<Key, std::shared_ptr<LtPlan>> plans;  // kept for the process, as cuBLAS handles are
  Key key{d, a.rows, a.cols, a.ld, a.trans, b.rows, b.cols, b.ld, b.trans, m, n, static_cast<int>(t), static_cast<int>(ct),
          static_cast<int>(epilogue)};
  std::lock_guard<std::mutex> lk(mu);
  auto& slot = plans[key];
  if (slot) return slot;
  auto plan = std::make_shared<LtPlan>();
  cublasLtHandle_t h = lt_handle(d);
  bool ok = lib::cublasLtMatmulDescCreate(&plan->desc, ct, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS;
  cublasOperation_t ta = a.trans ? CUBLAS_OP_T : CUBLAS_OP_N, tb = b.trans ? CUBLAS_OP_T : CUBLAS_OP_N;
  ok = ok && lib::cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta) == CUBLAS_STATUS_SUCCESS;
  ok = ok && lib::cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb) == CUBLAS_STATUS_SUCCESS;
  ok = ok && lib::cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue) ==
                 CUBLAS_STATUS_SUCCESS;
  ok = ok && lib::cublasLtMatrixLayoutCreate(&plan->la, lt_type(t), static_cast<uint64_t>(a.rows), static_cast<uint64_t>(a.cols),
                                        a.ld) == CUBLAS_STATUS_SUCCESS;
  ok = ok && lib::cublasLtMatrixLayoutCreate(&plan->lb, lt_type(t), static_cast<uint64_t>(b.rows), static_cast<uint64_t>(b.cols),
                                        b.ld) == CUBLAS_STATUS_SUCCESS;
  ok = ok && lib::cublasLtMatrixLayoutCreate(&plan->lc, lt_type(t), static_cast<uint64_t>(m), static_cast<uint64_t>(n), m) ==
                 CUBLAS_STATUS_SUCCESS;
  if (ok) {
    size_t ws_bytes = 0;
    (void)cuda::blas_workspace(d, &ws_bytes);
    cublasLtMatmulPreference_t pref = nullptr;
    cublasLtMatmulHeuristicResult_t heur{};
    int found = 0;
    ok = lib::cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS &&
         lib::cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes) ==
             CUBLAS_STATUS_SUCCESS &&
         lib::cublasLtMatmulAlgoGetHeuristic(h, plan->desc, plan->la, plan->lb, plan->lc, plan->lc, pref, 1, &heur, &found) ==
             CUBLAS_STATUS_SUCCESS &&
         found > 0;
    if (pref) lib::cublasLtMatmulPreferenceDestroy(pref);
    plan->algo = heur.algo;
  }
  plan->ok = ok;
  slot = plan;
  return slot;
}

// One cuBLASLt matmul D (m x n, ld m) = A (m x k) B (k x n) with `epilogue`, `vec` its bias or bias
// gradient vector. False when cuBLASLt declines (the caller then computes it otherwise).
bool lt_matmul(int d, const LtMatrix& a, const LtMatrix& b, void* out, int64_t m, int64_t n, DType t,
               cublasLtEpilogue_t epilogue, void* vec) {
  cublasComputeType_t ct = t == DType::f32 && cuda::tf32_allowed() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  std::shared_ptr<LtPlan> plan = lt_plan(d, a, b, m, n, t, ct, epilogue);
  if (!plan->ok) return false;
  size_t ws_bytes = 0;
  void* ws = cuda::blas_workspace(d, &ws_bytes);
  float alpha = 1, beta = 0;
  std::lock_guard<std::mutex> lk(plan->mu);
  return lib::cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &vec, sizeof vec) ==
             CUBLAS_STATUS_SUCCESS &&
         lib::cublasLtMatmul(lt_handle(d), plan->desc, &alpha, a.x->concrete()->data(), plan->la, b.x->concrete()->data(), plan->lb,
                        &beta, out, plan->lc, out, plan->lc, &plan->algo, ws, ws_bytes,
                        static_cast<cudaStream_t>(cuda::stream(d))) == CUBLAS_STATUS_SUCCESS;
}

bool epilogues_on() {
  static const bool on = env::flag("GRAFT_CUDA_EPILOGUES", true);
  return on;
}

Arrays dot_bias_gpu(const Primitive& p, std::span<const Array> in, std::span<const Aval> outs, const Params& params) {
  const Array &lhs = in[0], &rhs = in[1];
  Device dev = lhs.device();
  if (!epilogues_on()) return decompose_on_device(p, in, outs, params, dev);
  const auto& dn = params.get_object<lax::DotDims>("dimension_numbers");
  int64_t M = outs[0].shape[0], N = outs[0].shape[1], K = lhs.shape()[static_cast<size_t>(dn.lhs_contract[0])];
  Array out = Array::empty_on(outs[0], dev);
  if (M == 0 || N == 0 || K == 0) return decompose_on_device(p, in, outs, params, dev);
  // cuBLASLt's A = rhs: [K, N] row-major is N x K column-major (op N); [N, K] is K x N (op T)
  bool rt = dn.rhs_contract[0] == 1;
  LtMatrix a{&rhs, rt, rt ? K : N, rt ? N : K, rt ? K : N};
  // its B = lhs: [M, K] row-major is K x M column-major (op N); [K, M] is M x K (op T)
  bool lt = dn.lhs_contract[0] == 0;
  LtMatrix b{&lhs, lt, lt ? M : K, lt ? K : M, lt ? M : K};
  cublasLtEpilogue_t ep = params.get_bool("relu") ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
  if (!lt_matmul(dev.index, a, b, out.concrete()->data(), N, M, outs[0].dtype, ep, in[2].concrete()->data()))
    return decompose_on_device(p, in, outs, params, dev);
  return {out};
}

Arrays dot_bias_grad_gpu(const Primitive& p, std::span<const Array> in, std::span<const Aval> outs, const Params& params) {
  // w[Kin, N] = x^T g with x [M, Kin], g [M, N]: column-major w^T (N x Kin) = g^T (N x M) x (M x Kin);
  // the bias gradient sums g over M, the k of cuBLASLt's A: BGRADA
  const Array &x = in[0], &g = in[1];
  Device dev = x.device();
  if (!epilogues_on()) return decompose_on_device(p, in, outs, params, dev);
  int64_t M = g.shape()[0], N = g.shape()[1], Kin = x.shape()[1];
  Array w = Array::empty_on(outs[0], dev), db = Array::empty_on(outs[1], dev);
  if (M == 0 || N == 0 || Kin == 0) return decompose_on_device(p, in, outs, params, dev);
  LtMatrix a{&g, false, N, M, N};    // g [M, N] row-major: N x M column-major
  LtMatrix b{&x, true, Kin, M, Kin};  // x [M, Kin] row-major: Kin x M column-major, read transposed (M x Kin)
  if (!lt_matmul(dev.index, a, b, w.concrete()->data(), N, Kin, outs[0].dtype, CUBLASLT_EPILOGUE_BGRADA,
                 db.concrete()->data()))
    return decompose_on_device(p, in, outs, params, dev);
  return {w, db};
}

}  // namespace

ImplRule fusion_kernel() { return &fusion_gpu; }

void register_epilogue_kernels(int16_t device_type) {
  register_device_impl(device_type, dot_bias_p, &dot_bias_gpu);
  register_device_impl(device_type, dot_bias_grad_p, &dot_bias_grad_gpu);
}

}  // namespace graft::cuda
