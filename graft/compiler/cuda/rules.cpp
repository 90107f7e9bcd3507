// Fused loops on CUDA devices: the kernel of the `fusion` primitive (registered with the core's
// dispatcher like every GPU kernel). Each fused body becomes one CUDA kernel (graft/compiler/
// cuda_fusion.h), compiled by NVRTC on its first run on a device and cached on disk by the runtime;
// a body the generator refuses runs op by op on the device. Built only with CUDA.
#include <algorithm>
#include <map>
#include <memory>
#include <mutex>

#include "graft/backend/cuda/runtime.h"
#include "graft/compiler/cuda_fusion.h"
#include "graft/compiler/fusion.h"
#include "graft/core/trace.h"

namespace graft::compiler {

namespace {

constexpr int16_t kCuda = 1;

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

}  // namespace

}  // namespace graft::compiler

// Linked into every program that links graft with CUDA (CMake adds --undefined): registers the fused
// loops' GPU kernel.
extern "C" void graft_register_cuda_fusion() {
  static bool done = (graft::register_device_impl(graft::compiler::kCuda, graft::compiler::fusion_p,
                                                  &graft::compiler::fusion_gpu),
                      true);
  (void)done;
}

namespace {
[[maybe_unused]] const bool g_registered = (graft_register_cuda_fusion(), true);
}
