#include "graft/optim/optim.h"

#include <cmath>
#include <limits>
#include <numbers>

#include "graft/ops/ops.h"

namespace graft::optim {

namespace {
Array as_f32(const Array& step) { return step.astype(DType::f32); }
Tree zeros_tree(const Tree& t) {
  return tree_map([](const Array& x) { return zeros_like(x); }, t);
}
Array new_count() { return array(int32_t(0)); }
}  // namespace

// ---- schedules ----------------------------------------------------------------------------------------
Schedule::Schedule(double lr) : fn([lr](const Array&) { return array(float(lr)); }) {}

Schedule constant_schedule(double lr) { return Schedule(lr); }

Schedule exponential_decay(double lr, double decay_rate, int64_t transition_steps, bool staircase) {
  if (transition_steps <= 0) fail<ValueError>("exponential_decay: transition_steps must be positive");
  return Schedule(ScheduleFn([=](const Array& step) {
    Array p = as_f32(step) / double(transition_steps);
    if (staircase) p = floor(p);
    return power(Array(float(decay_rate)), p) * lr;
  }));
}

Schedule cosine_decay(double lr, int64_t decay_steps, double alpha) {
  if (decay_steps <= 0) fail<ValueError>("cosine_decay: decay_steps must be positive");
  return Schedule(ScheduleFn([=](const Array& step) {
    Array t = minimum(as_f32(step), double(decay_steps)) / double(decay_steps);
    Array cosine = (cos(t * std::numbers::pi) + 1.0) * 0.5;
    return ((1 - alpha) * cosine + alpha) * lr;
  }));
}

Schedule linear_schedule(double init, double end, int64_t steps) {
  if (steps <= 0) fail<ValueError>("linear_schedule: steps must be positive");
  return Schedule(ScheduleFn([=](const Array& step) {
    Array t = minimum(as_f32(step), double(steps)) / double(steps);
    return t * (end - init) + init;
  }));
}

Schedule warmup_cosine_decay(double peak, int64_t warmup_steps, int64_t decay_steps, double end) {
  Schedule warm = linear_schedule(0.0, peak, std::max<int64_t>(1, warmup_steps));
  Schedule cool = cosine_decay(peak, std::max<int64_t>(1, decay_steps - warmup_steps), peak == 0 ? 0 : end / peak);
  return Schedule(ScheduleFn([=](const Array& step) {
    Array in_warmup = step < warmup_steps;
    return where(in_warmup, warm(step), cool(maximum(step - int(warmup_steps), 0)));
  }));
}

Schedule piecewise_constant(std::vector<int64_t> boundaries, std::vector<double> values) {
  if (values.size() != boundaries.size() + 1)
    fail<ValueError>("piecewise_constant: needs one more value than boundaries (", boundaries.size(), " boundaries, ",
                     values.size(), " values)");
  return Schedule(ScheduleFn([=](const Array& step) {
    Array lr = array(float(values.back()));
    for (size_t i = boundaries.size(); i-- > 0;) lr = where(step < int64_t(boundaries[i]), float(values[i]), lr);
    return lr;
  }));
}

// ---- optimizers ----------------------------------------------------------------------------------------
Tree apply_updates(const Tree& params, const Tree& updates) {
  return tree_map([](const Array& p, const Array& u) { return p + u.astype(p.dtype()); }, params, updates);
}

Optimizer sgd(Schedule lr, double momentum, bool nesterov) {
  Optimizer o;
  o.init = [momentum](const Tree& params) {
    Tree s = Tree::dict({{"count", new_count()}});
    if (momentum != 0) s["momentum"] = zeros_tree(params);
    return s;
  };
  o.update = [lr, momentum, nesterov](const Tree& grads, const Tree& state, const Tree&) {
    const Array& count = state["count"].array();
    Array rate = lr(count);
    Tree s = state;
    s["count"] = count + 1;
    Tree dir = grads;
    if (momentum != 0) {
      Tree m = tree_map([momentum](const Array& t, const Array& g) { return g + t * momentum; }, state["momentum"], grads);
      s["momentum"] = m;
      dir = nesterov ? tree_map([momentum](const Array& g, const Array& mm) { return g + mm * momentum; }, grads, m) : m;
    }
    return std::make_pair(tree_map([&](const Array& d) { return -d * rate; }, dir), s);
  };
  return o;
}

namespace {
Optimizer adam_like(Schedule lr, double b1, double b2, double eps, double weight_decay) {
  Optimizer o;
  o.init = [](const Tree& params) {
    return Tree::dict({{"count", new_count()}, {"mu", zeros_tree(params)}, {"nu", zeros_tree(params)}});
  };
  o.update = [=](const Tree& grads, const Tree& state, const Tree& params) {
    const Array& count = state["count"].array();
    Array rate = lr(count);
    Array t = as_f32(count + 1);
    Array c1 = 1.0 - power(Array(float(b1)), t), c2 = 1.0 - power(Array(float(b2)), t);
    Tree mu = tree_map([b1](const Array& m, const Array& g) { return m * b1 + g * (1 - b1); }, state["mu"], grads);
    Tree nu = tree_map([b2](const Array& v, const Array& g) { return v * b2 + g * g * (1 - b2); }, state["nu"], grads);
    auto lm = mu.leaves(), lv = nu.leaves(), lp = params.leaves();
    std::vector<Array> up;
    for (size_t i = 0; i < lm.size(); ++i) {
      Array u = (lm[i] / c1) / (sqrt(lv[i] / c2) + eps);
      if (weight_decay != 0) u = u + lp[i] * weight_decay;
      up.push_back(-u * rate);
    }
    Tree s = Tree::dict({{"count", count + 1}, {"mu", mu}, {"nu", nu}});
    return std::make_pair(grads.with_leaves(up), s);
  };
  return o;
}
}  // namespace

Optimizer adam(Schedule lr, double b1, double b2, double eps) { return adam_like(std::move(lr), b1, b2, eps, 0); }

Optimizer adamw(Schedule lr, double b1, double b2, double eps, double weight_decay) {
  return adam_like(std::move(lr), b1, b2, eps, weight_decay);
}

Optimizer rmsprop(Schedule lr, double decay, double eps) {
  Optimizer o;
  o.init = [](const Tree& params) { return Tree::dict({{"count", new_count()}, {"nu", zeros_tree(params)}}); };
  o.update = [=](const Tree& grads, const Tree& state, const Tree&) {
    const Array& count = state["count"].array();
    Array rate = lr(count);
    Tree nu = tree_map([decay](const Array& v, const Array& g) { return v * decay + g * g * (1 - decay); }, state["nu"],
                       grads);
    Tree up = tree_map([&](const Array& g, const Array& v) { return -(g / (sqrt(v) + eps)) * rate; }, grads, nu);
    return std::make_pair(up, Tree::dict({{"count", count + 1}, {"nu", nu}}));
  };
  return o;
}

Array global_norm(const Tree& t) {
  Array s = array(0.0f);
  for (auto& x : t.leaves()) s = s + sum(square(x.astype(DType::f32)));
  return sqrt(s);
}

Optimizer clip_by_global_norm(double max_norm) {
  if (max_norm <= 0) fail<ValueError>("clip_by_global_norm: max_norm must be positive");
  Optimizer o;
  o.init = [](const Tree&) { return Tree::dict({}); };
  o.update = [max_norm](const Tree& grads, const Tree& state, const Tree&) {
    Array n = global_norm(grads);
    Array scale = where(n > max_norm, max_norm / n, array(1.0f));
    return std::make_pair(tree_map([&](const Array& g) { return g * scale.astype(g.dtype()); }, grads), state);
  };
  return o;
}

Optimizer clip(double max_delta) {
  Optimizer o;
  o.init = [](const Tree&) { return Tree::dict({}); };
  o.update = [max_delta](const Tree& grads, const Tree& state, const Tree&) {
    return std::make_pair(
        tree_map([max_delta](const Array& g) { return graft::clip(g, Array(-max_delta), Array(max_delta)); }, grads),
        state);
  };
  return o;
}

Optimizer chain(std::vector<Optimizer> parts) {
  Optimizer o;
  o.init = [parts](const Tree& params) {
    std::vector<Tree> states;
    for (auto& p : parts) states.push_back(p.init(params));
    return Tree(states);
  };
  o.update = [parts](const Tree& grads, const Tree& state, const Tree& params) {
    Tree g = grads;
    std::vector<Tree> states;
    for (size_t i = 0; i < parts.size(); ++i) {
      auto [u, s] = parts[i].update(g, state[i], params);
      g = u;
      states.push_back(s);
    }
    return std::make_pair(g, Tree(states));
  };
  return o;
}

// ---- mixed precision -----------------------------------------------------------------------------------
LossScaler dynamic_loss_scale(double initial, int64_t period, double factor, double min_scale) {
  if (!(initial > 0) || !std::isfinite(initial)) fail<ValueError>("dynamic_loss_scale: initial must be finite and positive, got ", initial);
  if (period < 1) fail<ValueError>("dynamic_loss_scale: period must be at least 1, got ", period);
  if (!(factor > 1) || !std::isfinite(factor)) fail<ValueError>("dynamic_loss_scale: factor must be finite and > 1, got ", factor);
  if (!(min_scale > 0) || min_scale > initial)
    fail<ValueError>("dynamic_loss_scale: min_scale must be in (0, initial], got ", min_scale);
  LossScaler ls;
  ls.initial = initial;
  ls.period = period;
  ls.factor = factor;
  ls.min_scale = min_scale;
  return ls;
}

Tree LossScaler::init() const { return Tree::dict({{"good_steps", new_count()}, {"scale", array(float(initial))}}); }

Array LossScaler::scale(const Array& loss, const Tree& state) const { return loss * state["scale"].array().astype(loss.dtype()); }

Tree LossScaler::unscale(const Tree& grads, const Tree& state) const {
  Array inv = 1.0f / state["scale"].array();
  return tree_map(
      [&inv](const Array& g) {
        if (!is_floating(g.dtype())) return g;
        DType d = g.dtype() == DType::f64 ? DType::f64 : DType::f32;
        return g.astype(d) * inv.astype(d);
      },
      grads);
}

Tree LossScaler::adjust(const Tree& state, const Array& finite) const {
  const Array& s = state["scale"].array();
  Array good = state["good_steps"].array() + 1;
  Array grow = good >= int(period);
  Array up = where(grow, minimum(s * float(factor), array(std::numeric_limits<float>::max())), s);
  Array next_scale = where(finite, up, maximum(s / float(factor), array(float(min_scale))));
  Array next_good = where(finite, where(grow, array(int32_t(0)), good), array(int32_t(0)));
  return Tree::dict({{"good_steps", next_good}, {"scale", next_scale}});
}

Array all_finite(const Tree& t) {
  Array ok = array(true);
  for (const Array& x : t.leaves())
    if (is_floating(x.dtype())) ok = logical_and(ok, all(isfinite(x)));
  return ok;
}

Tree select_tree(const Array& pred, const Tree& on_true, const Tree& on_false) {
  if (pred.ndim() != 0 || pred.dtype() != DType::bool_)
    fail<TypeError>("select_tree: the predicate must be a bool scalar, got ", pred.aval().str());
  return tree_map([&pred](const Array& a, const Array& b) { return where(pred, a, b); }, on_true, on_false);
}

}  // namespace graft::optim
