// optax's breadth on parameter trees: the building blocks (scale, scale_by_adam, add_decayed_weights,
// ema, the trust ratio, block-rms clipping, masks and labels), the optimizers composed from them
// (adagrad, nadam, adabelief, lion, lamb, adafactor), gradient accumulation, injected hyperparameters
// and the joined schedules. Each mirrors the formula python/graft/_optim_extra.py implements.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "graft/ops/ops.h"
#include "graft/optim/optim.h"
#include "graft/transforms/tree_util.h"

namespace graft::optim {

namespace {
Array count0() { return array(int32_t(0)); }
Tree no_state() { return Tree::dict({}); }
Tree zeros_of(const Tree& t) {
  return tree_map([](const Array& x) { return zeros_like(x); }, t);
}
/// Adam's and AdaBelief's state: the step count and the two moments, zero.
Tree moments0(const Tree& params) {
  return Tree::dict({{"count", count0()}, {"mu", zeros_of(params)}, {"nu", zeros_of(params)}});
}
/// b^t in x's dtype (bias corrections in f64 for f64 parameters).
Array pow_in(double b, const Array& t, const Array& x) {
  return power(Array(b).astype(x.dtype()), t.astype(x.dtype()));
}

/// "blocks.0.fc1.w": a leaf's dict keys and list positions joined by dots.
std::vector<std::string> leaf_paths(const Tree& t) {
  std::vector<std::string> out;
  for (auto& [path, leaf] : tree_leaves_with_path(t)) {
    std::string s;
    for (auto& e : path) {
      if (!s.empty()) s += '.';
      if (auto* d = std::get_if<DictKey>(&e)) {
        s += d->key;
      } else if (auto* q = std::get_if<SequenceKey>(&e)) {
        s += std::to_string(q->idx);
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<bool> selected(const Tree& t, const LeafPredicate& mask) {
  std::vector<Array> leaves = t.leaves();
  if (!mask) return std::vector<bool>(leaves.size(), true);
  std::vector<std::string> paths = leaf_paths(t);
  std::vector<bool> f;
  for (size_t i = 0; i < leaves.size(); ++i) f.push_back(mask(paths[i], leaves[i]));
  return f;
}

/// The leaves `keep` marks, as a list (what an inner transformation sees).
Tree pick(const Tree& t, const std::vector<bool>& keep) {
  std::vector<Tree> l;
  std::vector<Array> leaves = t.leaves();
  for (size_t i = 0; i < leaves.size(); ++i)
    if (keep[i]) l.push_back(Tree(leaves[i]));
  return Tree(l);
}

/// t with the leaves `keep` marks replaced, in order, by the leaves of `with`.
Tree put_back(const Tree& t, const std::vector<bool>& keep, const Tree& with) {
  std::vector<Array> leaves = t.leaves(), repl = with.leaves();
  size_t j = 0;
  for (size_t i = 0; i < leaves.size(); ++i)
    if (keep[i]) leaves[i] = repl.at(j++);
  return t.with_leaves(leaves);
}

Optimizer stateless(std::function<Tree(const Tree& grads, const Tree& params)> f) {
  Optimizer o;
  o.init = [](const Tree&) { return no_state(); };
  o.update = [f](const Tree& grads, const Tree& state, const Tree& params) { return std::make_pair(f(grads, params), state); };
  return o;
}

Optimizer scale_by_rss(double initial, double eps) {
  Optimizer o;
  o.init = [initial](const Tree& params) {
    return Tree::dict({{"sum_of_squares", tree_map([initial](const Array& p) { return full_like(p, initial); }, params)}});
  };
  o.update = [eps](const Tree& grads, const Tree& state, const Tree&) {
    Tree acc = tree_map([](const Array& g, const Array& a) { return g * g + a; }, grads, state["sum_of_squares"]);
    Tree out = tree_map([eps](const Array& g, const Array& a) { return where(a > 0.0, g / sqrt(a + eps), zeros_like(g)); },
                        grads, acc);
    return std::make_pair(out, Tree::dict({{"sum_of_squares", acc}}));
  };
  return o;
}

Optimizer scale_by_belief(double b1, double b2, double eps, double eps_root) {
  Optimizer o;
  o.init = &moments0;
  o.update = [=](const Tree& grads, const Tree& state, const Tree&) {
    Array count = state["count"].array() + 1;
    Tree mu = tree_map([b1](const Array& m, const Array& g) { return m * b1 + g * (1 - b1); }, state["mu"], grads);
    std::vector<Array> lg = grads.leaves(), lm = mu.leaves(), lv = state["nu"].leaves(), nu, out;
    for (size_t i = 0; i < lg.size(); ++i) {
      Array d = lg[i] - lm[i];
      nu.push_back(lv[i] * b2 + d * d * (1 - b2) + eps_root);
      Array mh = lm[i] / (1.0 - pow_in(b1, count, lm[i])), vh = nu[i] / (1.0 - pow_in(b2, count, nu[i]));
      out.push_back(mh / (sqrt(vh) + eps));
    }
    return std::make_pair(grads.with_leaves(out),
                          Tree::dict({{"count", count}, {"mu", mu}, {"nu", state["nu"].with_leaves(nu)}}));
  };
  return o;
}

Optimizer scale_by_lion(double b1, double b2) {
  Optimizer o;
  o.init = [](const Tree& params) { return Tree::dict({{"mu", zeros_of(params)}}); };
  o.update = [=](const Tree& grads, const Tree& state, const Tree&) {
    Tree out = tree_map([b1](const Array& g, const Array& m) { return sign(g * (1 - b1) + m * b1); }, grads, state["mu"]);
    Tree mu = tree_map([b2](const Array& g, const Array& m) { return g * (1 - b2) + m * b2; }, grads, state["mu"]);
    return std::make_pair(out, Tree::dict({{"mu", mu}}));
  };
  return o;
}

/// Adafactor's factored dimensions of a shape: (d1, d0), the second-largest and the largest (a stable
/// order by size), or none when the array is not factored.
std::optional<std::pair<int64_t, int64_t>> factored_dims(const Shape& s, bool factored, int64_t min_dim) {
  if (!factored || s.size() < 2) return std::nullopt;
  std::vector<int64_t> order(s.size());
  for (size_t i = 0; i < s.size(); ++i) order[i] = static_cast<int64_t>(i);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return s[static_cast<size_t>(a)] < s[static_cast<size_t>(b)]; });
  int64_t d1 = order[order.size() - 2], d0 = order.back();
  if (s[static_cast<size_t>(d1)] < min_dim) return std::nullopt;
  return std::make_pair(d1, d0);
}

Optimizer scale_by_factored_rms(bool factored, double decay_rate, int64_t step_offset, int64_t min_dim, double eps) {
  Optimizer o;
  o.init = [=](const Tree& params) {
    std::vector<Tree> vs;
    for (const Array& p : params.leaves()) {
      auto dims = factored_dims(p.shape(), factored, min_dim);
      if (!dims) {
        vs.push_back(Tree::dict({{"v", zeros_like(p)}}));
        continue;
      }
      Shape row, col;
      for (size_t i = 0; i < p.shape().size(); ++i) {
        if (static_cast<int64_t>(i) != dims->second) row.push_back(p.shape()[i]);
        if (static_cast<int64_t>(i) != dims->first) col.push_back(p.shape()[i]);
      }
      vs.push_back(Tree::dict({{"v_row", zeros(row, p.dtype())}, {"v_col", zeros(col, p.dtype())}}));
    }
    return Tree::dict({{"count", count0()}, {"v", Tree(vs)}});
  };
  o.update = [=](const Tree& grads, const Tree& state, const Tree&) {
    const Array& count = state["count"].array();
    std::vector<Array> lg = grads.leaves(), out;
    std::vector<Tree> nv;
    for (size_t i = 0; i < lg.size(); ++i) {
      const Array& g = lg[i];
      const Tree& v = state["v"][i];
      Array t = (count - int(step_offset) + 1).astype(g.dtype());
      Array rate = 1.0 - power(t, Array(-decay_rate).astype(g.dtype()));
      Array g2 = g * g + eps;
      auto dims = factored_dims(g.shape(), factored, min_dim);
      if (!dims) {
        Array n = rate * v["v"].array() + (1.0 - rate) * g2;
        out.push_back(g / sqrt(n));
        nv.push_back(Tree::dict({{"v", n}}));
        continue;
      }
      auto [d1, d0] = *dims;
      Array row = rate * v["v_row"].array() + (1.0 - rate) * mean(g2, {d0});
      Array col = rate * v["v_col"].array() + (1.0 - rate) * mean(g2, {d1});
      int64_t rd1 = d1 > d0 ? d1 - 1 : d1;
      Array row_factor = 1.0 / sqrt(row / mean(row, {rd1}, true));
      Array col_factor = 1.0 / sqrt(col);
      out.push_back(g * expand_dims(row_factor, {d0}) * expand_dims(col_factor, {d1}));
      nv.push_back(Tree::dict({{"v_row", row}, {"v_col", col}}));
    }
    return std::make_pair(grads.with_leaves(out), Tree::dict({{"count", count + 1}, {"v", Tree(nv)}}));
  };
  return o;
}

Optimizer scale_by_param_block_rms(double min_scale) {
  return stateless([min_scale](const Tree& grads, const Tree& params) {
    return tree_map([min_scale](const Array& g, const Array& p) { return g * maximum(sqrt(mean(p * p)), min_scale); },
                    grads, params);
  });
}
}  // namespace

// ---- building blocks ------------------------------------------------------------------------------------
Optimizer scale(double step_size) {
  return stateless([step_size](const Tree& grads, const Tree&) {
    return tree_map([step_size](const Array& g) { return g * step_size; }, grads);
  });
}

Optimizer scale_by_learning_rate(Schedule lr, bool flip_sign) {
  Optimizer o;
  o.init = [](const Tree&) { return Tree::dict({{"count", count0()}}); };
  o.update = [lr, flip_sign](const Tree& grads, const Tree& state, const Tree&) {
    const Array& count = state["count"].array();
    Array rate = lr(count) * (flip_sign ? -1.0 : 1.0);
    Tree out = tree_map([&](const Array& g) { return g * rate.astype(g.dtype()); }, grads);
    return std::make_pair(out, Tree::dict({{"count", count + 1}}));
  };
  return o;
}

Optimizer scale_by_adam(double b1, double b2, double eps, double eps_root, bool nesterov) {
  Optimizer o;
  o.init = &moments0;
  o.update = [=](const Tree& grads, const Tree& state, const Tree&) {
    Array count = state["count"].array() + 1;
    Tree mu = tree_map([b1](const Array& m, const Array& g) { return m * b1 + g * (1 - b1); }, state["mu"], grads);
    Tree nu = tree_map([b2](const Array& v, const Array& g) { return v * b2 + g * g * (1 - b2); }, state["nu"], grads);
    std::vector<Array> lg = grads.leaves(), lm = mu.leaves(), lv = nu.leaves(), out;
    for (size_t i = 0; i < lg.size(); ++i) {
      const Array& m = lm[i];
      Array mh = nesterov ? m * b1 / (1.0 - pow_in(b1, count + 1, m)) + lg[i] * (1 - b1) / (1.0 - pow_in(b1, count, m))
                          : m / (1.0 - pow_in(b1, count, m));
      Array vh = lv[i] / (1.0 - pow_in(b2, count, lv[i]));
      out.push_back(mh / (sqrt(vh + eps_root) + eps));
    }
    return std::make_pair(grads.with_leaves(out), Tree::dict({{"count", count}, {"mu", mu}, {"nu", nu}}));
  };
  return o;
}

Optimizer add_decayed_weights(double weight_decay, LeafPredicate mask) {
  return stateless([weight_decay, mask](const Tree& grads, const Tree& params) {
    if (params.is_none()) fail<ValueError>("add_decayed_weights: update needs the params");
    std::vector<bool> f = selected(params, mask);
    std::vector<Array> lg = grads.leaves(), lp = params.leaves();
    if (lg.size() != lp.size())
      fail<ValueError>("add_decayed_weights: ", lg.size(), " updates for ", lp.size(), " parameters");
    for (size_t i = 0; i < lg.size(); ++i)
      if (f[i]) lg[i] = lg[i] + lp[i] * weight_decay;
    return grads.with_leaves(lg);
  });
}

Optimizer ema(double decay, bool debias) {
  Optimizer o;
  o.init = [](const Tree& params) {
    return Tree::dict({{"count", count0()}, {"ema", zeros_of(params)}});
  };
  o.update = [=](const Tree& grads, const Tree& state, const Tree&) {
    Tree e = tree_map([decay](const Array& g, const Array& m) { return g * (1 - decay) + m * decay; }, grads, state["ema"]);
    Array count = state["count"].array() + 1;
    Tree out = debias ? tree_map([&](const Array& m) { return m / (1.0 - pow_in(decay, count, m)); }, e) : e;
    return std::make_pair(out, Tree::dict({{"count", count}, {"ema", e}}));
  };
  return o;
}

Optimizer scale_by_trust_ratio(double min_norm, double trust_coefficient, double eps) {
  return stateless([=](const Tree& grads, const Tree& params) {
    return tree_map(
        [=](const Array& g, const Array& p) {
          Array pn = maximum(sqrt(sum(p * p)), min_norm), un = maximum(sqrt(sum(g * g)), min_norm);
          Array ratio = pn * trust_coefficient / (un + eps);
          Array safe = where(logical_or(pn == 0.0, un == 0.0), ones_like(ratio), ratio);
          return g * safe.astype(g.dtype());
        },
        grads, params);
  });
}

Optimizer clip_by_block_rms(double threshold) {
  return stateless([threshold](const Tree& grads, const Tree&) {
    return tree_map([threshold](const Array& g) { return g / maximum(sqrt(mean(square(g))) / threshold, 1.0); }, grads);
  });
}

Optimizer masked(Optimizer inner, LeafPredicate mask) {
  Optimizer o;
  o.init = [inner, mask](const Tree& params) { return Tree::dict({{"inner", inner.init(pick(params, selected(params, mask)))}}); };
  o.update = [inner, mask](const Tree& grads, const Tree& state, const Tree& params) {
    std::vector<bool> f = selected(params.is_none() ? grads : params, mask);
    auto [u, s] = inner.update(pick(grads, f), state["inner"], params.is_none() ? Tree() : pick(params, f));
    return std::make_pair(put_back(grads, f, u), Tree::dict({{"inner", s}}));
  };
  return o;
}

Optimizer multi_transform(std::map<std::string, Optimizer> transforms, LeafLabel label) {
  auto labels = [transforms, label](const Tree& t) {
    std::vector<std::string> paths = leaf_paths(t), out;
    std::vector<Array> leaves = t.leaves();
    for (size_t i = 0; i < leaves.size(); ++i) {
      out.push_back(label(paths[i], leaves[i]));
      if (!transforms.count(out.back()))
        fail<ValueError>("multi_transform: no transformation for label '", out.back(), "' (leaf ", paths[i], ")");
    }
    return out;
  };
  auto of = [](const std::vector<std::string>& ls, const std::string& k) {
    std::vector<bool> f;
    for (auto& l : ls) f.push_back(l == k);
    return f;
  };
  Optimizer o;
  o.init = [=](const Tree& params) {
    std::vector<std::string> ls = labels(params);
    std::map<std::string, Tree> s;
    for (auto& [k, t] : transforms) s[k] = t.init(pick(params, of(ls, k)));
    return Tree(s);
  };
  o.update = [=](const Tree& grads, const Tree& state, const Tree& params) {
    std::vector<std::string> ls = labels(params.is_none() ? grads : params);
    Tree out = grads;
    std::map<std::string, Tree> s;
    for (auto& [k, t] : transforms) {
      std::vector<bool> f = of(ls, k);
      auto [u, ns] = t.update(pick(grads, f), state[k], params.is_none() ? Tree() : pick(params, f));
      out = put_back(out, f, u);
      s[k] = ns;
    }
    return std::make_pair(out, Tree(s));
  };
  return o;
}

// ---- optimizers -------------------------------------------------------------------------------------------
Optimizer adagrad(Schedule lr, double initial_accumulator_value, double eps) {
  return chain({scale_by_rss(initial_accumulator_value, eps), scale_by_learning_rate(std::move(lr))});
}
Optimizer nadam(Schedule lr, double b1, double b2, double eps, double eps_root) {
  return chain({scale_by_adam(b1, b2, eps, eps_root, true), scale_by_learning_rate(std::move(lr))});
}
Optimizer adabelief(Schedule lr, double b1, double b2, double eps, double eps_root) {
  return chain({scale_by_belief(b1, b2, eps, eps_root), scale_by_learning_rate(std::move(lr))});
}
Optimizer lion(Schedule lr, double b1, double b2, double weight_decay, LeafPredicate mask) {
  return chain({scale_by_lion(b1, b2), add_decayed_weights(weight_decay, std::move(mask)), scale_by_learning_rate(std::move(lr))});
}
Optimizer lamb(Schedule lr, double b1, double b2, double eps, double eps_root, double weight_decay, LeafPredicate mask) {
  return chain({scale_by_adam(b1, b2, eps, eps_root), add_decayed_weights(weight_decay, std::move(mask)),
                scale_by_trust_ratio(), scale_by_learning_rate(std::move(lr))});
}
Optimizer adafactor(AdafactorOptions o) {
  std::vector<Optimizer> parts{scale_by_factored_rms(o.factored, o.decay_rate, o.decay_offset, o.min_dim_size_to_factor, o.eps)};
  if (o.clipping_threshold) parts.push_back(clip_by_block_rms(*o.clipping_threshold));
  if (o.lr) parts.push_back(scale_by_learning_rate(*o.lr, false));
  if (o.multiply_by_parameter_scale) parts.push_back(scale_by_param_block_rms(1e-3));
  if (o.momentum) parts.push_back(ema(*o.momentum, false));
  if (o.weight_decay_rate) parts.push_back(add_decayed_weights(*o.weight_decay_rate));
  parts.push_back(scale(-1.0));
  return chain(std::move(parts));
}

// ---- accumulation and injected hyperparameters ------------------------------------------------------------
Optimizer MultiSteps::gradient_transformation() const {
  if (every_k < 1) fail<ValueError>("MultiSteps: every_k must be at least 1, got ", every_k);
  Optimizer inner = opt;
  int64_t k = every_k;
  Optimizer o;
  o.init = [inner](const Tree& params) {
    return Tree::dict({{"mini_step", count0()},
                       {"gradient_step", count0()},
                       {"inner_state", inner.init(params)},
                       {"acc_grads", zeros_of(params)}});
  };
  o.update = [inner, k](const Tree& grads, const Tree& state, const Tree& params) {
    Tree acc = tree_map([](const Array& a, const Array& g) { return a + g; }, state["acc_grads"], grads);
    const Array& mini = state["mini_step"].array();
    Array emit = (mini + 1) >= int(k);
    Tree avg = tree_map([k](const Array& a) { return a / double(k); }, acc);
    auto [upd, inner_new] = inner.update(avg, state["inner_state"], params);
    Tree zero = zeros_of(upd), zacc = zeros_of(acc);
    Tree s = Tree::dict({{"mini_step", where(emit, count0(), mini + 1)},
                         {"gradient_step", state["gradient_step"].array() + where(emit, array(int32_t(1)), count0())},
                         {"inner_state", select_tree(emit, inner_new, state["inner_state"])},
                         {"acc_grads", select_tree(emit, zacc, acc)}});
    return std::make_pair(select_tree(emit, upd, zero), s);
  };
  return o;
}

Schedule schedule_of(const Array& value) {
  return Schedule(ScheduleFn([value](const Array&) { return value; }));
}

Optimizer inject_hyperparams(std::function<Optimizer(const std::map<std::string, Array>&)> make,
                             std::map<std::string, Hyperparam> hyperparams) {
  auto values_at = [hyperparams](const Array& count, const Tree* stored) {
    std::map<std::string, Array> v;
    for (auto& [name, h] : hyperparams) {
      if (auto* f = std::get_if<ScheduleFn>(&h)) {
        v[name] = (*f)(count).astype(DType::f32);
      } else if (stored) {
        v[name] = (*stored)[name].array();
      } else {
        v[name] = array(float(std::get<double>(h)));
      }
    }
    return v;
  };
  auto as_tree = [](const std::map<std::string, Array>& v) {
    std::map<std::string, Tree> t;
    for (auto& [k, a] : v) t[k] = Tree(a);
    return Tree(t);
  };
  Optimizer o;
  o.init = [=](const Tree& params) {
    auto v = values_at(count0(), nullptr);
    return Tree::dict({{"count", count0()}, {"hyperparams", as_tree(v)}, {"inner_state", make(v).init(params)}});
  };
  o.update = [=](const Tree& grads, const Tree& state, const Tree& params) {
    const Array& count = state["count"].array();
    auto v = values_at(count, &state["hyperparams"]);
    auto [u, inner] = make(v).update(grads, state["inner_state"], params);
    return std::make_pair(u, Tree::dict({{"count", count + 1}, {"hyperparams", as_tree(v)}, {"inner_state", inner}}));
  };
  return o;
}

// ---- schedules --------------------------------------------------------------------------------------------
Schedule join_schedules(std::vector<Schedule> schedules, std::vector<int64_t> boundaries) {
  if (schedules.size() != boundaries.size() + 1)
    fail<ValueError>("join_schedules: ", schedules.size(), " schedules need ", schedules.size() - 1, " boundaries, got ",
                     boundaries.size());
  return Schedule(ScheduleFn([schedules, boundaries](const Array& step) {
    Array out = schedules[0](step);
    for (size_t i = 0; i < boundaries.size(); ++i) {
      Array b = array(int32_t(boundaries[i]));
      out = where(step >= b, schedules[i + 1](step - b), out);
    }
    return out;
  }));
}

Schedule cosine_onecycle_schedule(int64_t transition_steps, double peak, double pct_start, double div_factor,
                                  double final_div_factor) {
  if (transition_steps <= 0) fail<ValueError>("cosine_onecycle_schedule: transition_steps must be positive");
  double start = peak / div_factor, end = start / final_div_factor;
  int64_t up = static_cast<int64_t>(pct_start * double(transition_steps));
  auto interp = [](double a, double b, int64_t steps) {
    return Schedule(ScheduleFn([=](const Array& step) {
      Array t = clip(step.astype(DType::f32), Array(0.0f), Array(float(steps))) / double(std::max<int64_t>(steps, 1));
      return (cos(t * std::numbers::pi) + 1.0) * ((a - b) / 2) + b;
    }));
  };
  return join_schedules({interp(start, peak, up), interp(peak, end, transition_steps - up)}, {up});
}

}  // namespace graft::optim
