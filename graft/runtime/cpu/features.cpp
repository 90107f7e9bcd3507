#include "graft/runtime/cpu/features.h"

#include <atomic>

#include "graft/core/env.h"

#ifdef GRAFT_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif

namespace graft::cpu {

namespace {

bool detected_bf16() {
#ifdef GRAFT_HAVE_DNNL
  // oneDNN's own view (its ISA bits are cumulative: avx512_core_amx includes avx512_core_bf16): the
  // CPU's features, the OS's support for their registers, and DNNL_MAX_CPU_ISA if set
  unsigned isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
  unsigned bf16 = static_cast<unsigned>(dnnl_cpu_isa_avx512_core_bf16);
  return (isa & bf16) == bf16 && env::flag("GRAFT_NATIVE_BF16", true);
#else
  return false;
#endif
}

std::atomic<int> g_override{-1};

}  // namespace

bool native_bf16() {
  static const bool detected = detected_bf16();
  int o = g_override.load(std::memory_order_relaxed);
  return o < 0 ? detected : o == 1;
}

static std::atomic<bool> g_avx512_off{false};

bool has_avx512() {
#if GRAFT_HAVE_TARGET_AVX512
  static const bool yes = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  return yes && !g_avx512_off.load(std::memory_order_relaxed);
#else
  return false;
#endif
}

void disable_avx512_for_testing(bool off) { g_avx512_off.store(off); }

bool have_onednn() {
#ifdef GRAFT_HAVE_DNNL
  return true;
#else
  return false;
#endif
}

bool native_half_gemm(DType d) { return d == DType::bf16 && native_bf16(); }

void set_native_bf16_for_testing(int on) { g_override.store(on < 0 ? -1 : (on ? 1 : 0)); }

}  // namespace graft::cpu
