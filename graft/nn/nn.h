// Neural-network building blocks as pure functions on parameter trees.
//
// A module is a small struct of hyperparameters with `init(key)` (its parameters, a graft::Tree)
// and `operator()(params, x)` (the forward pass). Nothing is hidden in objects, so a whole training
// step — forward, grad, update — is one function of (params, state, batch) that jit compiles:
//
//   nn::MLP mlp{{784, 512, 512, 10}};
//   Tree params = mlp.init(random::key(0));
//   Array logits = mlp(params, x);
//   Array loss = nn::cross_entropy(logits, labels);
//
// Layouts follow PyTorch for images (NCHW, kernels OIHW) and JAX for dense layers (w: [in, out]).
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graft/core/array.h"
#include "graft/ops/ops.h"  // AxisArg
#include "graft/transforms/pytree.h"

namespace graft::nn {

// ---- initializers ----------------------------------------------------------------------------------
/// An initializer draws an array of `shape` from a key.
using Initializer = std::function<Array(const Array& key, const Shape& shape, DType d)>;

/// JAX's variance_scaling: mode "fan_in" | "fan_out" | "fan_avg"; distribution "truncated_normal" |
/// "normal" | "uniform". in_axis/out_axis locate the fan dimensions (the rest is the receptive field).
Initializer variance_scaling(double scale, std::string mode, std::string distribution, int64_t in_axis = -2,
                             int64_t out_axis = -1);
Initializer glorot_uniform(int64_t in_axis = -2, int64_t out_axis = -1);
Initializer glorot_normal(int64_t in_axis = -2, int64_t out_axis = -1);
Initializer he_uniform(int64_t in_axis = -2, int64_t out_axis = -1);
Initializer he_normal(int64_t in_axis = -2, int64_t out_axis = -1);
Initializer lecun_uniform(int64_t in_axis = -2, int64_t out_axis = -1);
Initializer lecun_normal(int64_t in_axis = -2, int64_t out_axis = -1);
Initializer normal_init(double stddev = 1.0);
Initializer uniform_init(double scale = 1.0);
Initializer constant_init(double value);

/// jax.nn.initializers under JAX's names and defaults (normal's stddev and uniform's scale are 1e-2).
namespace initializers {
using nn::glorot_normal;
using nn::glorot_uniform;
using nn::he_normal;
using nn::he_uniform;
using nn::lecun_normal;
using nn::lecun_uniform;
using nn::variance_scaling;
Initializer zeros();
Initializer ones();
Initializer constant(double value);
Initializer normal(double stddev = 1e-2);
Initializer uniform(double scale = 1e-2);
/// stddev times a standard normal truncated to [lower, upper].
Initializer truncated_normal(double stddev = 1e-2, double lower = -2.0, double upper = 2.0);
/// Orthonormal rows or columns of the matrix the array is with every axis but column_axis flattened (from
/// the QR factors of a normal matrix, R's diagonal made positive), times scale.
Initializer orthogonal(double scale = 1.0, int64_t column_axis = -1);
/// Convolution kernels [*spatial, in, out] (1 to 3 spatial dimensions, in <= out): zero but at the
/// spatial center, which holds an orthogonal [in, out] matrix.
Initializer delta_orthogonal(double scale = 1.0, int64_t column_axis = -1);
Initializer xavier_uniform(int64_t in_axis = -2, int64_t out_axis = -1);  ///< glorot_uniform
Initializer xavier_normal(int64_t in_axis = -2, int64_t out_axis = -1);   ///< glorot_normal
Initializer kaiming_uniform(int64_t in_axis = -2, int64_t out_axis = -1);  ///< he_uniform
Initializer kaiming_normal(int64_t in_axis = -2, int64_t out_axis = -1);   ///< he_normal
}  // namespace initializers

// ---- layers ---------------------------------------------------------------------------------------------
/// y = x @ w + b, w: [in, out].
struct Linear {
  int64_t in = 0, out = 0;
  bool bias = true;
  Initializer w_init = glorot_uniform();
  Tree init(const Array& key, DType d = DType::f32) const;
  Array operator()(const Tree& params, const Array& x) const;
};

/// Dense layers with an activation between them (none after the last).
struct MLP {
  std::vector<int64_t> sizes;  ///< {in, hidden..., out}
  std::function<Array(const Array&)> activation = nullptr;  ///< default: relu
  Initializer w_init = glorot_uniform();
  Tree init(const Array& key, DType d = DType::f32) const;
  Array operator()(const Tree& params, const Array& x) const;
};

/// Padding of a convolution or pooling window: "VALID", "SAME", or explicit (lo, hi) per spatial dim.
struct Padding {
  std::string mode = "VALID";
  std::vector<std::pair<int64_t, int64_t>> explicit_pads;
  Padding() = default;
  Padding(const char* m) : mode(m) {}  // NOLINT
  Padding(std::string m) : mode(std::move(m)) {}  // NOLINT
  Padding(std::vector<std::pair<int64_t, int64_t>> p) : mode("EXPLICIT"), explicit_pads(std::move(p)) {}  // NOLINT
  /// (lo, hi) per spatial dim for inputs of `in` with windows `win` and `strides`.
  std::vector<std::pair<int64_t, int64_t>> resolve(const Shape& in, const Shape& win, const Shape& strides) const;
};

/// 2-D convolution, x: [N, C, H, W], weights [O, C / groups, KH, KW].
struct Conv2d {
  int64_t in_channels = 0, out_channels = 0;
  std::array<int64_t, 2> kernel{3, 3};
  std::array<int64_t, 2> stride{1, 1};
  Padding padding = "VALID";
  std::array<int64_t, 2> dilation{1, 1};
  int64_t groups = 1;
  bool bias = true;
  Initializer w_init = he_normal(1, 0);
  Tree init(const Array& key, DType d = DType::f32) const;
  Array operator()(const Tree& params, const Array& x) const;
};

/// Pooling over the two trailing (spatial) axes of [N, C, H, W] inputs; stride defaults to the window.
Array max_pool2d(const Array& x, std::array<int64_t, 2> window, std::optional<std::array<int64_t, 2>> stride = {},
                 const Padding& padding = "VALID");
Array avg_pool2d(const Array& x, std::array<int64_t, 2> window, std::optional<std::array<int64_t, 2>> stride = {},
                 const Padding& padding = "VALID");

/// Inverted dropout: zeroes a fraction `rate` of x and scales the rest by 1 / (1 - rate) when
/// training; the identity otherwise. The key decides which elements drop.
Array dropout(const Array& key, const Array& x, double rate, bool train = true);

/// Layer normalization over the last axis, with a learned scale and bias.
struct LayerNorm {
  int64_t features = 0;
  double eps = 1e-5;
  Tree init(DType d = DType::f32) const;
  Array operator()(const Tree& params, const Array& x) const;
};

/// Batch normalization over every axis but `axis` (1 for NCHW images, -1 for [batch, features]).
/// Training uses the batch statistics and updates the running ones:
/// running = momentum * running + (1 - momentum) * batch.
struct BatchNorm {
  int64_t features = 0;
  int64_t axis = 1;
  double momentum = 0.9;
  double eps = 1e-5;
  Tree init(DType d = DType::f32) const;        ///< {"scale", "bias"}
  Tree init_state(DType d = DType::f32) const;  ///< {"mean", "var"}
  /// (y, new state); in evaluation mode the state is returned unchanged.
  std::pair<Array, Tree> operator()(const Tree& params, const Tree& state, const Array& x, bool train) const;
};

/// A lookup table: ids (integers) -> rows of a [num, dim] table.
struct Embedding {
  int64_t num = 0, dim = 0;
  Initializer init_fn = normal_init(1.0);
  Tree init(const Array& key, DType d = DType::f32) const;
  Array operator()(const Tree& params, const Array& ids) const;
};

// ---- attention and transformers ---------------------------------------------------------------------
/// Scaled dot-product attention in JAX's layout (jax.nn.dot_product_attention): q [B, T, H, D], k
/// [B, S, H, D], v [B, S, H, Dv] -> [B, T, H, Dv], softmax(q k^T / sqrt(D)) v per head. With `causal`
/// (T == S) position t attends to positions <= t only; `mask` (bool, broadcastable to [B, H, T, S])
/// removes the pairs where it is false. A row with nothing to attend to gets zero weights.
/// `impl` chooses how it is computed (JAX's `implementation=`): written out as primitives (the default,
/// as JAX's "xla"), or fused (fused_attention).
enum class AttentionImpl {
  composite,  ///< einsum, softmax of the T x S logits, einsum: every transformation applies (jvp too)
  fused,      ///< fused_attention: blockwise, no T x S matrix stored; reverse mode only
};
Array dot_product_attention(const Array& q, const Array& k, const Array& v, bool causal = false,
                            const std::optional<Array>& mask = std::nullopt,
                            AttentionImpl impl = AttentionImpl::composite);

/// The same attention computed blockwise on the CPU (FlashAttention): blocks of queries against
/// blocks of keys, an online softmax, causal blocks above the diagonal skipped, the backward pass
/// recomputing each block's weights from the rows' saved log-sum-exp; halves compute in f32. Equal to
/// the composite to rounding; grad, vmap and jit apply, forward mode (jvp) is a TypeError (a custom_vjp,
/// as JAX's cuDNN attention). Inputs as dot_product_attention's, already checked.
Array fused_attention(const Array& q, const Array& k, const Array& v, bool causal = false,
                      const std::optional<Array>& mask = std::nullopt);
/// Makes nn's own primitives (fused attention's) known to the jaxpr parser: a process that loads an
/// exported program calls it (graft/io/export.cpp does), as one that traces them registers them on use.
void register_nn_primitives();

/// Multi-head self-attention: x [B, T, dim] -> [B, T, dim] through query/key/value/output projections
/// (dim divisible by heads).
struct MultiHeadAttention {
  int64_t dim = 0, heads = 1;
  bool causal = false;
  AttentionImpl attention = AttentionImpl::fused;  ///< composite for forward-mode derivatives
  Tree init(const Array& key, DType d = DType::f32) const;  ///< {"query", "key", "value", "out"}: Linear each
  Array operator()(const Tree& params, const Array& x) const;
};

/// A pre-norm transformer block: x + attention(ln1(x)), then + mlp(ln2(x)) with a GELU MLP of
/// mlp_ratio * dim hidden units. With a dropout key, both branches drop out at `dropout` while training.
struct TransformerBlock {
  int64_t dim = 0, heads = 1, mlp_ratio = 4;
  bool causal = true;
  double dropout = 0;
  AttentionImpl attention = AttentionImpl::fused;
  Tree init(const Array& key, DType d = DType::f32) const;
  Array operator()(const Tree& params, const Array& x, const std::optional<Array>& dropout_key = std::nullopt) const;
};

/// A decoder-only (GPT-style) language model: token and learned position embeddings, `layers` causal
/// blocks, a final layer norm and a linear head. ids [B, T] (integers in [0, vocab), T <= max_len) ->
/// logits [B, T, vocab]; position t's logits predict token t + 1.
///
///   nn::TransformerLM lm{.vocab = 256, .dim = 128, .heads = 4, .layers = 2, .max_len = 128};
///   Tree p = lm.init(random::key(0));
///   Array loss = nn::cross_entropy(lm(p, x), y);   // x, y: [B, T] windows of text, y shifted by one
struct TransformerLM {
  int64_t vocab = 256, dim = 128, heads = 4, layers = 2, max_len = 128;
  double dropout = 0;
  AttentionImpl attention = AttentionImpl::fused;
  Tree init(const Array& key, DType d = DType::f32) const;
  Array operator()(const Tree& params, const Array& ids, const std::optional<Array>& dropout_key = std::nullopt) const;
};

// ---- activations beyond graft/ops/ops.h's (jax.nn's, with its definitions) ---------------------------------
Array identity(const Array& x);
/// x * sigmoid(x) (silu).
Array swish(const Array& x);
/// max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).
Array celu(const Array& x, double alpha = 1.0);
/// scale * elu(x, alpha) with JAX's constants (1.0507..., 1.6732...).
Array selu(const Array& x);
/// x * tanh(softplus(x)).
Array mish(const Array& x);
/// relu6(x + 3) / 6.
Array hard_sigmoid(const Array& x);
/// x * hard_sigmoid(x) (hard_swish).
Array hard_silu(const Array& x);
Array hard_swish(const Array& x);
/// clip(x, -1, 1).
Array hard_tanh(const Array& x);
/// x / (|x| + 1).
Array soft_sign(const Array& x);
/// (x + sqrt(x^2 + b)) / 2.
Array squareplus(const Array& x, double b = 4.0);
/// 0 below -1, (x + 1)^2 / 4 on [-1, 1], x above.
Array sparse_plus(const Array& x);
/// 0 below -1, (x + 1) / 2 on [-1, 1], 1 above.
Array sparse_sigmoid(const Array& x);
/// The first half of x along axis times sigmoid of the second (the axis must be even).
Array glu(const Array& x, int64_t axis = -1);
/// log(1 - exp(-x)) for x >= 0, accurate near 0 and for large x.
Array log1mexp(const Array& x);
/// log(mean(exp(x))) over axis, stably.
Array logmeanexp(const Array& x, AxisArg axis = {}, bool keepdims = false);
/// (x - mean) / sqrt(variance + epsilon) over axis.
Array standardize(const Array& x, AxisArg axis = -1, double epsilon = 1e-5);

// ---- losses and metrics ------------------------------------------------------------------------------
/// Mean cross entropy of logits [..., classes] against integer labels [...].
Array cross_entropy(const Array& logits, const Array& labels);
/// Mean cross entropy against probability targets of the logits' shape.
Array softmax_cross_entropy(const Array& logits, const Array& targets);
/// Mean binary cross entropy of logits against {0, 1} targets (numerically stable).
Array binary_cross_entropy_with_logits(const Array& logits, const Array& targets);
/// Mean squared error.
Array mse(const Array& pred, const Array& target);
/// Fraction of rows whose argmax equals the label (f32).
Array accuracy(const Array& logits, const Array& labels);

/// Number of parameters (elements) in a tree.
int64_t num_params(const Tree& params);

}  // namespace graft::nn
