// A backend is one registered thing: a BackendDescriptor names a device type, its runtime, its kernels
// for primitives, its code generator for fused loops, the compiler passes its programs want, and its
// collectives across processes. register_backend hands each part to the layer that uses it (the core's
// device types and kernel table, the runtime's communicators, the compiler's targets).
//
// graft/backends/builtin.cpp registers the backends graft is built with (the CPU's and, in CUDA
// builds, graft/backends/cuda/); a program or a test registers its own the same way:
//
//   static MyRuntime rt;   // a graft::Backend: memory, copies, synchronization
//   int16_t t = graft::register_backend({.name = "mydev", .runtime = &rt, .kernels = &my_kernels,
//                                        .passes = {"gemm_epilogues"}});
//   graft::Array x = graft::device_put(graft::ones({3}), graft::Device::named("mydev"));
//
// What a device lacks a kernel for runs through the device decompositions (graft/prims/decompose.cpp)
// or, last, on the CPU with its operands copied (graft::device_fallbacks counts those).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graft/core/backend.h"
#include "graft/core/primitive.h"
#include "graft/runtime/collectives.h"

namespace graft {

struct Eqn;

struct BackendDescriptor {
  /// The device type's name: devices print as "<name>:<index>" and parse_device reads them.
  std::string name;
  /// Other names parse_device accepts ("gpu" for cuda).
  std::vector<std::string> aliases;
  /// Memory, copies and synchronization; must live as long as the process.
  Backend* runtime = nullptr;
  /// Registers the backend's kernels for primitives (register_device_impl(device_type, prim, fn)), once
  /// its device type id is known.
  void (*kernels)(int16_t device_type) = nullptr;
  /// The code generator for fused loops: the kernel that runs a `fusion` body (graft/compiler/fusion.h)
  /// on the device. Without one, jit runs its programs there op by op.
  ImplRule fusion = nullptr;
  /// Which equations `fusion` compiles (null: all that the fuse pass groups); the fuse pass leaves the
  /// others out of this device's groups (compiler::Target::fusible).
  bool (*fusible)(const Eqn& e) = nullptr;
  /// The per-target compiler passes its programs run (graft/compiler/pipeline.cpp), e.g. "gemm_epilogues".
  std::vector<std::string> passes;
  /// Makes communicators over its memory for collectives across processes (NCCL); without one, such
  /// collectives go through the host.
  DeviceCommunicatorFactory communicator = nullptr;
};

/// Registers a backend and returns its device type id. Registering a name again replaces that backend
/// (same id). Raises ValueError for a descriptor without a name or runtime, a pass that is not a
/// per-target pass, or when no device type id is left.
int16_t register_backend(const BackendDescriptor& b);

namespace backends {
/// register_backend without first making sure the built-in backends are registered: for
/// graft/backends/builtin.cpp, which runs while the core registers them.
int16_t add(const BackendDescriptor& b);
}  // namespace backends

}  // namespace graft
