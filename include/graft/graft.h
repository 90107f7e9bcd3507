// graft: a deep learning toolkit in C++ with composable function transformations.
//
//   #include <graft/graft.h>
//   namespace g = graft;
//   g::Array x = g::array({1.0f, 2.0f, 3.0f});
//   auto f = [](const g::Array& x) { return g::sum(g::sin(g::cos(x))); };
//   g::Array dx = g::grad(f)(x);
//   std::cout << g::make_jaxpr(g::grad(f))(x) << "\n";
//
// Layers (each includes only the ones before it; docs/architecture.md has the map): core, runtime, ir,
// prims, interp, compiler, backends, transforms, ops, parallel, random, nn, optim, data, io.
#pragma once

#include "graft/core/array.h"
#include "graft/core/config.h"
#include "graft/core/dtype.h"
#include "graft/core/error.h"
#include "graft/core/shape.h"
#include "graft/core/trace.h"
#include "graft/core/version.h"
#include "graft/ir/jaxpr.h"
#include "graft/ops/fft.h"
#include "graft/ops/linalg.h"
#include "graft/ops/numpy_dtypes.h"
#include "graft/ops/numpy_more.h"
#include "graft/ops/numpy_sets.h"
#include "graft/ops/lax_more.h"
#include "graft/ops/numpy_shape.h"
#include "graft/ops/numpy_stats.h"
#include "graft/ops/ops.h"
#include "graft/ops/special.h"
#include "graft/prims/lax.h"
#include "graft/prims/primitives.h"
#include "graft/data/data.h"
#include "graft/io/export.h"
#include "graft/compiler/jaxpr_text.h"
#include "graft/io/npy.h"
#include "graft/io/onnx.h"
#include "graft/io/safetensors.h"
#include "graft/nn/nn.h"
#include "graft/nn/sharding.h"
#include "graft/optim/optim.h"
#include "graft/parallel/auto_shard.h"
#include "graft/parallel/device.h"
#include "graft/parallel/mesh.h"
#include "graft/parallel/pjit.h"
#include "graft/parallel/shard_map.h"
#include "graft/parallel/sharded.h"
#include "graft/random/random.h"
#include "graft/transforms/api.h"
#include "graft/transforms/callback.h"
#include "graft/transforms/control.h"
#include "graft/transforms/tape.h"
#include "graft/transforms/graph.h"
#include "graft/transforms/remat.h"
#include "graft/transforms/pytree.h"
#include "graft/transforms/tree_util.h"
