// Optimizers as pure functions on parameter trees (optax's design), so that a whole training step
// is one jittable function:
//
//   auto opt = optim::adam(1e-3);
//   Tree state = opt.init(params);
//   auto step = jit([&](const Tree& p, const Tree& s, const Array& x, const Array& y) {
//     auto [loss, g] = value_and_grad(loss_fn)(p, x, y);
//     auto [updates, s2] = opt.update(g, s, p);
//     return std::make_tuple(optim::apply_updates(p, updates), s2, loss);
//   });
//
// `update` returns the *updates* (what to add to the parameters) and the new optimizer state; both
// are trees. The step count lives in the state, so learning-rate schedules need no host counter.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "graft/core/array.h"
#include "graft/transforms/pytree.h"

namespace graft::optim {

/// A learning-rate schedule: step (an i32 scalar array, from 0) -> rate (an f32 scalar array).
using ScheduleFn = std::function<Array(const Array& step)>;

/// A learning rate: a constant or a schedule.
struct Schedule {
  ScheduleFn fn;
  Schedule(double lr);  // NOLINT: constants convert
  Schedule(ScheduleFn f) : fn(std::move(f)) {}  // NOLINT
  Array operator()(const Array& step) const { return fn(step); }
};

Schedule constant_schedule(double lr);
/// lr * rate^(step / transition_steps) (floored with staircase).
Schedule exponential_decay(double lr, double decay_rate, int64_t transition_steps, bool staircase = false);
/// Cosine from lr to lr * alpha over decay_steps, then constant.
Schedule cosine_decay(double lr, int64_t decay_steps, double alpha = 0.0);
/// Linear from init to end over `steps`, then constant.
Schedule linear_schedule(double init, double end, int64_t steps);
/// Linear warmup from 0 to peak over warmup_steps, then cosine decay to end over the remaining steps.
Schedule warmup_cosine_decay(double peak, int64_t warmup_steps, int64_t decay_steps, double end = 0.0);
/// values[i] while step < boundaries[i] (values has one more entry than boundaries).
Schedule piecewise_constant(std::vector<int64_t> boundaries, std::vector<double> values);

/// A gradient transformation: init(params) -> state; update(grads, state, params) -> (updates, state).
struct Optimizer {
  std::function<Tree(const Tree& params)> init;
  std::function<std::pair<Tree, Tree>(const Tree& grads, const Tree& state, const Tree& params)> update;
};

/// params + updates.
Tree apply_updates(const Tree& params, const Tree& updates);

/// Stochastic gradient descent, with optional (Nesterov) momentum.
Optimizer sgd(Schedule lr, double momentum = 0.0, bool nesterov = false);
/// Adam (Kingma & Ba), with bias correction.
Optimizer adam(Schedule lr, double b1 = 0.9, double b2 = 0.999, double eps = 1e-8);
/// AdamW: Adam with decoupled weight decay (lr * weight_decay * param subtracted each step).
Optimizer adamw(Schedule lr, double b1 = 0.9, double b2 = 0.999, double eps = 1e-8, double weight_decay = 1e-4);
/// RMSProp.
Optimizer rmsprop(Schedule lr, double decay = 0.9, double eps = 1e-8);
/// Scales the gradients so that their global L2 norm is at most max_norm.
Optimizer clip_by_global_norm(double max_norm);
/// Clips every gradient element to [-max_delta, max_delta].
Optimizer clip(double max_delta);
/// Applies the transformations in order (e.g. clipping, then adam).
Optimizer chain(std::vector<Optimizer> parts);

/// The global L2 norm of all leaves.
Array global_norm(const Tree& t);

// ---- optax's breadth ------------------------------------------------------------------------------------
// A leaf's path is its dict keys and list positions joined by dots ("blocks.0.fc1.w"), as
// leaf_shardings spells it; masks and labels are functions of it (and of the leaf).
using LeafPredicate = std::function<bool(const std::string& path, const Array& leaf)>;
using LeafLabel = std::function<std::string(const std::string& path, const Array& leaf)>;

/// Updates times step_size.
Optimizer scale(double step_size);
/// Updates times -lr(count) (lr(count) with flip_sign false); its state counts the steps.
Optimizer scale_by_learning_rate(Schedule lr, bool flip_sign = true);
/// Adam's direction m^ / (sqrt(v^ + eps_root) + eps), with Nesterov's momentum (NAdam) when asked.
Optimizer scale_by_adam(double b1 = 0.9, double b2 = 0.999, double eps = 1e-8, double eps_root = 0.0,
                        bool nesterov = false);
/// updates + weight_decay * params (on the leaves `mask` selects; all without one).
Optimizer add_decayed_weights(double weight_decay, LeafPredicate mask = {});
/// An exponential moving average of the updates (debiased: divided by 1 - decay^t).
Optimizer ema(double decay, bool debias = true);
/// Each update scaled by ||param|| / ||update|| (LAMB's trust ratio; 1 where either is zero).
Optimizer scale_by_trust_ratio(double min_norm = 0.0, double trust_coefficient = 1.0, double eps = 0.0);
/// Each update divided by max(1, rms(update) / threshold).
Optimizer clip_by_block_rms(double threshold);
/// `inner` on the leaves `mask` selects; the other updates pass through unchanged.
Optimizer masked(Optimizer inner, LeafPredicate mask);
/// Each leaf updated by transforms[label(path, leaf)] (an error names a label without a transformation).
Optimizer multi_transform(std::map<std::string, Optimizer> transforms, LeafLabel label);

/// Adagrad: g / sqrt(sum of g^2 + eps), the sum starting at initial_accumulator_value.
Optimizer adagrad(Schedule lr, double initial_accumulator_value = 0.1, double eps = 1e-7);
/// NAdam: Adam with Nesterov momentum.
Optimizer nadam(Schedule lr, double b1 = 0.9, double b2 = 0.999, double eps = 1e-8, double eps_root = 0.0);
/// AdaBelief: Adam whose second moment is that of g - m (the gradient's surprise).
Optimizer adabelief(Schedule lr, double b1 = 0.9, double b2 = 0.999, double eps = 1e-16, double eps_root = 1e-16);
/// Lion: sign((1 - b1) g + b1 m) plus decoupled weight decay; m tracks g with b2.
Optimizer lion(Schedule lr, double b1 = 0.9, double b2 = 0.99, double weight_decay = 1e-3, LeafPredicate mask = {});
/// LAMB: Adam's direction plus weight decay, scaled by the trust ratio per leaf.
Optimizer lamb(Schedule lr, double b1 = 0.9, double b2 = 0.999, double eps = 1e-6, double eps_root = 0.0,
               double weight_decay = 0.0, LeafPredicate mask = {});
struct AdafactorOptions {
  std::optional<Schedule> lr;  ///< none: the relative step alone (scaled by the parameters' rms)
  int64_t min_dim_size_to_factor = 128;
  double decay_rate = 0.8;
  int64_t decay_offset = 0;
  bool multiply_by_parameter_scale = true;
  std::optional<double> clipping_threshold = 1.0;
  std::optional<double> momentum;
  std::optional<double> weight_decay_rate;
  double eps = 1e-30;
  bool factored = true;
};
/// Adafactor (Shazeer & Stern): second moments kept as row and column means for matrices whose two
/// largest dimensions reach min_dim_size_to_factor, full otherwise; block-rms clipping; updates scaled
/// by the parameters' rms.
Optimizer adafactor(AdafactorOptions o = {});

/// Gradient accumulation (optax's MultiSteps): the inner optimizer sees the mean of every k gradients;
/// the steps in between give zero updates (under jit both paths run and the state chooses).
struct MultiSteps {
  Optimizer opt;
  int64_t every_k = 1;
  Optimizer gradient_transformation() const;
};
/// inject_hyperparams: the hyperparameters live in the state (state["hyperparams"][name], f32 scalars)
/// so a program can read and change them between steps without retracing; a ScheduleFn entry is
/// evaluated at the step count instead. make(values) builds the inner optimizer from them each step.
using Hyperparam = std::variant<double, ScheduleFn>;
Optimizer inject_hyperparams(std::function<Optimizer(const std::map<std::string, Array>&)> make,
                             std::map<std::string, Hyperparam> hyperparams);
/// A schedule that returns the array it holds (a hyperparameter read from inject_hyperparams' state).
Schedule schedule_of(const Array& value);

/// schedules[i] from boundaries[i - 1] on, each counting from its own start.
Schedule join_schedules(std::vector<Schedule> schedules, std::vector<int64_t> boundaries);
/// One cycle: cosine from peak / div_factor up to peak over pct_start of the steps, then down to
/// peak / (div_factor * final_div_factor).
Schedule cosine_onecycle_schedule(int64_t transition_steps, double peak, double pct_start = 0.3, double div_factor = 25.0,
                                  double final_div_factor = 1e4);

// ---- mixed precision -----------------------------------------------------------------------------------
/// Dynamic loss scaling for f16 training (jmp's DynamicLossScale, PyTorch's GradScaler), as pure
/// functions on a state tree {scale: f32, good_steps: i32}, so that a training step stays one jit:
///
///   optim::LossScaler ls = optim::dynamic_loss_scale();
///   Tree ls_state = ls.init();
///   // in the step:
///   Tree g = grad([&](const Tree& p) { return ls.scale(loss_fn(p, x, y), ls_state); })(params);
///   g = ls.unscale(g, ls_state);              // f32 gradients for the f32 master weights
///   Array ok = optim::all_finite(g);
///   auto [u, s2] = opt.update(g, opt_state, params);
///   params = optim::select_tree(ok, optim::apply_updates(params, u), params);  // skipped on overflow
///   opt_state = optim::select_tree(ok, s2, opt_state);
///   ls_state = ls.adjust(ls_state, ok);
///
/// The loss is multiplied by the scale before differentiation, so that small f16 gradients do not flush
/// to zero; a step whose gradients overflowed is skipped and the scale divided by `factor` (not below
/// `min_scale`); after `period` finite steps in a row it is multiplied by `factor`.
struct LossScaler {
  double initial = 32768, factor = 2, min_scale = 1;
  int64_t period = 2000;
  Tree init() const;
  /// loss * scale, in the loss's dtype.
  Array scale(const Array& loss, const Tree& state) const;
  /// grads / scale, computed in f32: f16 and bf16 leaves come back as f32 (dividing in f16 would flush
  /// the small gradients the scale saved), f64 leaves stay f64.
  Tree unscale(const Tree& grads, const Tree& state) const;
  /// The next state given whether this step's gradients were all finite (a bool scalar).
  Tree adjust(const Tree& state, const Array& finite) const;
};
LossScaler dynamic_loss_scale(double initial = 32768, int64_t period = 2000, double factor = 2, double min_scale = 1);

/// Whether every element of every floating leaf is finite (a bool scalar; true for no leaves).
Array all_finite(const Tree& t);
/// Leafwise where(pred, on_true, on_false) for a bool scalar pred: skips an update inside jit without
/// reading pred on the host.
Tree select_tree(const Array& pred, const Tree& on_true, const Tree& on_false);

}  // namespace graft::optim
