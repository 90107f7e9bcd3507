"""optax's breadth on graft: gradient transformations (each an Optimizer(init, update)) that chain into
optimizers, the optimizers built from them (adagrad, rmsprop, lion, lamb, nadam, adabelief, adafactor), wrappers
(masked, multi_transform, MultiSteps, inject_hyperparams) and schedules. Updates follow optax's formulas; states
are pytrees of arrays, so a whole training step compiles under jit."""
import math as _math

from . import _graft
from . import numpy as _np
from ._tree import tree_flatten, tree_leaves, tree_map, tree_unflatten


class GradientTransformation:
    """init(params) -> state; update(updates, state, params=None) -> (updates, state)."""

    def __init__(self, init, update):
        self.init, self.update = init, update


def _count0():
    return _graft.zeros((), "int32")


def _sched(v):
    return v if callable(v) else (lambda count: v)


def _f32(count):
    return _np.asarray(count).astype("float32")


def _like(count, x):
    """The step count in x's dtype (bias corrections in f64 for f64 parameters)."""
    return _np.asarray(count).astype(str(x.dtype))


# ---- transformations -----------------------------------------------------------------------------------------
def identity():
    return GradientTransformation(lambda params: (), lambda u, s, p=None: (u, s))


def scale(step_size):
    return GradientTransformation(lambda params: (), lambda u, s, p=None: (tree_map(lambda g: step_size * g, u), s))


def scale_by_learning_rate(learning_rate, *, flip_sign=True):
    lr = _sched(learning_rate)
    sign = -1.0 if flip_sign else 1.0

    def update(u, state, params=None):
        step = lr(state["count"])
        return tree_map(lambda g: (sign * step) * g, u), {"count": state["count"] + 1}

    return GradientTransformation(lambda params: {"count": _count0()}, update)


scale_by_schedule = scale_by_learning_rate


def add_decayed_weights(weight_decay=0.0, mask=None):
    def update(u, state, params=None):
        if params is None:
            raise ValueError("add_decayed_weights: update needs the params")
        m = mask(params) if callable(mask) else mask
        if m is None:
            return tree_map(lambda g, p: g + weight_decay * p, u, params), state
        return tree_map(lambda g, p, k: g + weight_decay * p if k else g, u, params, m), state

    return GradientTransformation(lambda params: (), update)


def clip(max_delta):
    return GradientTransformation(lambda params: (),
                                  lambda u, s, p=None: (tree_map(lambda g: _np.clip(g, -max_delta, max_delta), u), s))


def global_norm(updates):
    return _np.sqrt(sum(_np.sum(_np.square(g)) for g in tree_leaves(updates)))


def clip_by_global_norm(max_norm):
    def update(u, state, params=None):
        n = global_norm(u)
        factor = _np.where(n < max_norm, 1.0, max_norm / _np.where(n == 0, 1.0, n))
        return tree_map(lambda g: g * factor.astype(str(g.dtype)), u), state

    return GradientTransformation(lambda params: (), update)


def clip_by_block_rms(threshold):
    def update(u, state, params=None):
        def one(g):
            rms = _np.sqrt(_np.mean(_np.square(g)))
            return g / _np.maximum(1.0, rms / threshold)
        return tree_map(one, u), state

    return GradientTransformation(lambda params: (), update)


def trace(decay, nesterov=False):
    def init(params):
        return {"trace": tree_map(_graft.zeros_like, params)}

    def update(u, state, params=None):
        t = tree_map(lambda g, tr: g + decay * tr, u, state["trace"])
        out = tree_map(lambda g, tr: g + decay * tr, u, t) if nesterov else t
        return out, {"trace": t}

    return GradientTransformation(init, update)


def ema(decay, debias=True):
    def init(params):
        return {"count": _count0(), "ema": tree_map(_graft.zeros_like, params)}

    def update(u, state, params=None):
        e = tree_map(lambda g, m: (1 - decay) * g + decay * m, u, state["ema"])
        count = state["count"] + 1
        out = tree_map(lambda m: m / (1 - decay ** _like(count, m)), e) if debias else e
        return out, {"count": count, "ema": e}

    return GradientTransformation(init, update)


def _moments_init(params):
    return {"count": _count0(), "mu": tree_map(_graft.zeros_like, params), "nu": tree_map(_graft.zeros_like, params)}


def scale_by_adam(b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, nesterov=False):
    def update(u, state, params=None):
        mu = tree_map(lambda g, m: (1 - b1) * g + b1 * m, u, state["mu"])
        nu = tree_map(lambda g, v: (1 - b2) * g * g + b2 * v, u, state["nu"])
        count = state["count"] + 1
        if nesterov:
            mu_hat = tree_map(lambda m, g: b1 * m / (1 - b1 ** (_like(count, m) + 1)) + (1 - b1) * g /
                              (1 - b1 ** _like(count, m)), mu, u)
        else:
            mu_hat = tree_map(lambda m: m / (1 - b1 ** _like(count, m)), mu)
        nu_hat = tree_map(lambda v: v / (1 - b2 ** _like(count, v)), nu)
        out = tree_map(lambda m, v: m / (_np.sqrt(v + eps_root) + eps), mu_hat, nu_hat)
        return out, {"count": count, "mu": mu, "nu": nu}

    return GradientTransformation(_moments_init, update)


def scale_by_belief(b1=0.9, b2=0.999, eps=1e-16, eps_root=1e-16):
    def update(u, state, params=None):
        mu = tree_map(lambda g, m: (1 - b1) * g + b1 * m, u, state["mu"])
        nu = tree_map(lambda g, m, v: (1 - b2) * (g - m) ** 2 + b2 * v + eps_root, u, mu, state["nu"])
        count = state["count"] + 1
        out = tree_map(lambda m, v: (m / (1 - b1 ** _like(count, m))) / (_np.sqrt(v / (1 - b2 ** _like(count, v))) + eps),
                       mu, nu)
        return out, {"count": count, "mu": mu, "nu": nu}

    return GradientTransformation(_moments_init, update)


def scale_by_rss(initial_accumulator_value=0.1, eps=1e-7):
    def init(params):
        return {"sum_of_squares": tree_map(lambda p: _np.full_like(p, initial_accumulator_value), params)}

    def update(u, state, params=None):
        s = tree_map(lambda g, a: g * g + a, u, state["sum_of_squares"])
        out = tree_map(lambda g, a: _np.where(a > 0, g / _np.sqrt(a + eps), 0 * g), u, s)
        return out, {"sum_of_squares": s}

    return GradientTransformation(init, update)


def scale_by_rms(decay=0.9, eps=1e-8, initial_scale=0.0):
    def init(params):
        return {"nu": tree_map(lambda p: _np.full_like(p, initial_scale), params)}

    def update(u, state, params=None):
        nu = tree_map(lambda g, v: (1 - decay) * g * g + decay * v, u, state["nu"])
        return tree_map(lambda g, v: g / _np.sqrt(v + eps), u, nu), {"nu": nu}

    return GradientTransformation(init, update)


def scale_by_stddev(decay=0.9, eps=1e-8, initial_scale=0.0):
    def init(params):
        return {"mu": tree_map(_graft.zeros_like, params),
                "nu": tree_map(lambda p: _np.full_like(p, initial_scale), params)}

    def update(u, state, params=None):
        mu = tree_map(lambda g, m: (1 - decay) * g + decay * m, u, state["mu"])
        nu = tree_map(lambda g, v: (1 - decay) * g * g + decay * v, u, state["nu"])
        return tree_map(lambda g, m, v: g / _np.sqrt(v - m * m + eps), u, mu, nu), {"mu": mu, "nu": nu}

    return GradientTransformation(init, update)


def scale_by_lion(b1=0.9, b2=0.99):
    def init(params):
        return {"mu": tree_map(_graft.zeros_like, params)}

    def update(u, state, params=None):
        out = tree_map(lambda g, m: _np.sign((1 - b1) * g + b1 * m), u, state["mu"])
        mu = tree_map(lambda g, m: (1 - b2) * g + b2 * m, u, state["mu"])
        return out, {"mu": mu}

    return GradientTransformation(init, update)


def scale_by_trust_ratio(min_norm=0.0, trust_coefficient=1.0, eps=0.0):
    def update(u, state, params=None):
        def one(g, p):
            pn = _np.maximum(_np.sqrt(_np.sum(p * p)), min_norm)
            un = _np.maximum(_np.sqrt(_np.sum(g * g)), min_norm)
            ratio = trust_coefficient * pn / (un + eps)
            safe = _np.where((pn == 0) | (un == 0), 1.0, ratio)
            return g * safe.astype(str(g.dtype))
        return tree_map(one, u, params), state

    return GradientTransformation(lambda params: (), update)


def scale_by_param_block_rms(min_scale=1e-3):
    def update(u, state, params=None):
        return tree_map(lambda g, p: g * _np.maximum(_np.sqrt(_np.mean(p * p)), min_scale), u, params), state

    return GradientTransformation(lambda params: (), update)


def _factored_dims(shape, factored, min_dim):
    if not factored or len(shape) < 2:
        return None
    order = sorted(range(len(shape)), key=lambda i: shape[i])
    if shape[order[-2]] < min_dim:
        return None
    return order[-2], order[-1]


def scale_by_factored_rms(factored=True, decay_rate=0.8, step_offset=0, min_dim_size_to_factor=128, epsilon=1e-30):
    """Adafactor's second moments: row and column means of g² for matrices whose two largest dimensions reach
    min_dim_size_to_factor, full ones otherwise."""
    def init(params):
        def one(p):
            dims = _factored_dims(tuple(p.shape), factored, min_dim_size_to_factor)
            if dims is None:
                return {"v": _graft.zeros_like(p)}
            d1, d0 = dims
            row = [s for i, s in enumerate(p.shape) if i != d0]
            col = [s for i, s in enumerate(p.shape) if i != d1]
            return {"v_row": _np.zeros(tuple(row), str(p.dtype)), "v_col": _np.zeros(tuple(col), str(p.dtype))}
        return {"count": _count0(), "v": tree_map(one, params)}

    def update(u, state, params=None):
        leaves, tree = tree_flatten(u)
        vs = tree.flatten_up_to(state["v"])
        outs, new_vs = [], []
        for g, v in zip(leaves, vs):
            rate = 1 - (_like(state["count"] - step_offset, g) + 1) ** (-decay_rate)
            g2 = g * g + epsilon
            dims = _factored_dims(tuple(g.shape), factored, min_dim_size_to_factor)
            if dims is None:
                nv = rate * v["v"] + (1 - rate) * g2
                outs.append(g / _np.sqrt(nv))
                new_vs.append({"v": nv})
                continue
            d1, d0 = dims
            v_row = rate * v["v_row"] + (1 - rate) * _np.mean(g2, axis=d0)
            v_col = rate * v["v_col"] + (1 - rate) * _np.mean(g2, axis=d1)
            rd1 = d1 - 1 if d1 > d0 else d1
            row_factor = 1 / _np.sqrt(v_row / _np.mean(v_row, axis=rd1, keepdims=True))
            col_factor = 1 / _np.sqrt(v_col)
            outs.append(g * _np.expand_dims(row_factor, d0) * _np.expand_dims(col_factor, d1))
            new_vs.append({"v_row": v_row, "v_col": v_col})
        return tree_unflatten(tree, outs), {"count": state["count"] + 1, "v": tree_unflatten(tree, new_vs)}

    return GradientTransformation(init, update)


# ---- composition ------------------------------------------------------------------------------------------------
def chain(*transforms):
    def init(params):
        return tuple(t.init(params) for t in transforms)

    def update(u, state, params=None):
        new = []
        for t, s in zip(transforms, state):
            u, s = t.update(u, s, params)
            new.append(s)
        return u, tuple(new)

    return GradientTransformation(init, update)


def _select(tree, keep):
    leaves, d = tree_flatten(tree)
    return [x for x, k in zip(leaves, keep) if k], d


def masked(inner, mask):
    """inner applied to the leaves where mask (a pytree of bools, or a function of the params giving one) is
    True; the other updates pass through unchanged."""
    def flags(params):
        return tree_leaves(mask(params) if callable(mask) else mask)

    def init(params):
        sel, _ = _select(params, flags(params))
        return {"inner": inner.init(sel)}

    def update(u, state, params=None):
        ref = params if params is not None else u
        f = flags(ref)
        sel_u, d = _select(u, f)
        sel_p = _select(params, f)[0] if params is not None else None
        out_sel, s = inner.update(sel_u, state["inner"], sel_p)
        leaves = tree_leaves(u)
        it = iter(out_sel)
        return tree_unflatten(d, [next(it) if k else x for x, k in zip(leaves, f)]), {"inner": s}

    return GradientTransformation(init, update)


def multi_transform(transforms, param_labels):
    """Each leaf updated by transforms[label], labels given as a pytree like the params (or a function of
    them)."""
    def labels(params):
        return tree_leaves(param_labels(params) if callable(param_labels) else param_labels)

    def init(params):
        ls = labels(params)
        missing = set(ls) - set(transforms)
        if missing:
            raise ValueError(f"multi_transform: no transformation for labels {sorted(missing)}")
        return {k: t.init(_select(params, [x == k for x in ls])[0]) for k, t in transforms.items()}

    def update(u, state, params=None):
        ls = labels(params if params is not None else u)
        leaves, d = tree_flatten(u)
        out = list(leaves)
        new = {}
        for k, t in transforms.items():
            idx = [i for i, x in enumerate(ls) if x == k]
            sel_p = [tree_leaves(params)[i] for i in idx] if params is not None else None
            r, new[k] = t.update([leaves[i] for i in idx], state[k], sel_p)
            for i, v in zip(idx, r):
                out[i] = v
        return tree_unflatten(d, out), new

    return GradientTransformation(init, update)


class MultiSteps:
    """Gradient accumulation: the inner optimizer sees the mean of every k gradients; the steps in between
    return zero updates (all under jit: both paths are computed, the state chooses)."""

    def __init__(self, opt, every_k_schedule):
        self.opt = opt
        self.k = every_k_schedule if callable(every_k_schedule) else (lambda step: every_k_schedule)

    def init(self, params):
        return {"mini_step": _count0(), "gradient_step": _count0(), "inner_state": self.opt.init(params),
                "acc_grads": tree_map(_graft.zeros_like, params)}

    def update(self, u, state, params=None):
        k = self.k(state["gradient_step"])
        acc = tree_map(lambda a, g: a + g, state["acc_grads"], u)
        emit = (state["mini_step"] + 1) >= k
        mean = tree_map(lambda a: a / _np.asarray(k).astype(str(a.dtype)), acc)
        upd, inner = self.opt.update(mean, state["inner_state"], params)
        out = tree_map(lambda x: _np.where(emit, x, 0 * x), upd)
        inner = tree_map(lambda n, o: _np.where(emit, n, o), inner, state["inner_state"])
        return out, {"mini_step": _np.where(emit, 0, state["mini_step"] + 1).astype("int32"),
                     "gradient_step": state["gradient_step"] + _np.where(emit, 1, 0).astype("int32"),
                     "inner_state": inner, "acc_grads": tree_map(lambda a: _np.where(emit, 0 * a, a), acc)}

    @property
    def gradient_transformation(self):
        return GradientTransformation(self.init, self.update)


def inject_hyperparams(inner_factory):
    """inner_factory's hyperparameters kept in the state as arrays (state["hyperparams"]), so that they can be
    read and changed between steps without retracing; callables among them are schedules of the step count."""
    def make(**hparams):
        def init(params):
            values = {k: _np.asarray(v(0) if callable(v) else v).astype("float32") for k, v in hparams.items()}
            return {"count": _count0(), "hyperparams": values, "inner_state": inner_factory(**values).init(params)}

        def update(u, state, params=None):
            values = {k: (_np.asarray(hparams[k](state["count"])).astype("float32") if callable(hparams[k]) else v)
                      for k, v in state["hyperparams"].items()}
            out, inner = inner_factory(**values).update(u, state["inner_state"], params)
            return out, {"count": state["count"] + 1, "hyperparams": values, "inner_state": inner}

        return GradientTransformation(init, update)

    return make


# ---- optimizers -------------------------------------------------------------------------------------------------
def adagrad(learning_rate, initial_accumulator_value=0.1, eps=1e-7):
    return chain(scale_by_rss(initial_accumulator_value, eps), scale_by_learning_rate(learning_rate))


def rmsprop(learning_rate, decay=0.9, eps=1e-8, initial_scale=0.0, centered=False, momentum=None, nesterov=False):
    core = scale_by_stddev(decay, eps, initial_scale) if centered else scale_by_rms(decay, eps, initial_scale)
    parts = [core, scale_by_learning_rate(learning_rate)]
    if momentum is not None:
        parts.append(trace(momentum, nesterov))
    return chain(*parts)


def nadam(learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0):
    return chain(scale_by_adam(b1, b2, eps, eps_root, nesterov=True), scale_by_learning_rate(learning_rate))


def adabelief(learning_rate, b1=0.9, b2=0.999, eps=1e-16, eps_root=1e-16):
    return chain(scale_by_belief(b1, b2, eps, eps_root), scale_by_learning_rate(learning_rate))


def lion(learning_rate, b1=0.9, b2=0.99, weight_decay=1e-3, mask=None):
    return chain(scale_by_lion(b1, b2), add_decayed_weights(weight_decay, mask), scale_by_learning_rate(learning_rate))


def lamb(learning_rate, b1=0.9, b2=0.999, eps=1e-6, eps_root=0.0, weight_decay=0.0, mask=None):
    return chain(scale_by_adam(b1, b2, eps, eps_root), add_decayed_weights(weight_decay, mask), scale_by_trust_ratio(),
                 scale_by_learning_rate(learning_rate))


def adafactor(learning_rate=None, min_dim_size_to_factor=128, decay_rate=0.8, decay_offset=0,
              multiply_by_parameter_scale=True, clipping_threshold=1.0, momentum=None, weight_decay_rate=None,
              eps=1e-30, factored=True, weight_decay_mask=None):
    parts = [scale_by_factored_rms(factored, decay_rate, decay_offset, min_dim_size_to_factor, eps)]
    if clipping_threshold is not None:
        parts.append(clip_by_block_rms(clipping_threshold))
    if learning_rate is not None:
        parts.append(scale_by_learning_rate(learning_rate, flip_sign=False))
    if multiply_by_parameter_scale:
        parts.append(scale_by_param_block_rms())
    if momentum is not None:
        parts.append(ema(momentum, debias=False))
    if weight_decay_rate is not None:
        parts.append(add_decayed_weights(weight_decay_rate, weight_decay_mask))
    parts.append(scale(-1.0))
    return chain(*parts)


# ---- schedules (functions of the step count) ---------------------------------------------------------------------
def constant_schedule(value):
    return lambda count: value


def linear_schedule(init_value, end_value, transition_steps, transition_begin=0):
    def f(count):
        t = _np.clip(_f32(count) - transition_begin, 0, transition_steps) / _builtin_max(transition_steps, 1)
        return init_value + (end_value - init_value) * t
    return f


def polynomial_schedule(init_value, end_value, power, transition_steps, transition_begin=0):
    def f(count):
        t = _np.clip(_f32(count) - transition_begin, 0, transition_steps) / _builtin_max(transition_steps, 1)
        return (init_value - end_value) * (1 - t) ** power + end_value
    return f


def exponential_decay(init_value, transition_steps, decay_rate, transition_begin=0, staircase=False, end_value=None):
    def f(count):
        p = _np.maximum(_f32(count) - transition_begin, 0.0) / transition_steps
        if staircase:
            p = _np.floor(p)
        v = init_value * decay_rate ** p
        if end_value is not None:
            v = _np.maximum(v, end_value) if decay_rate < 1 else _np.minimum(v, end_value)
        return v
    return f


def cosine_decay_schedule(init_value, decay_steps, alpha=0.0, exponent=1.0):
    def f(count):
        t = _np.minimum(_f32(count), float(decay_steps)) / float(decay_steps)
        return init_value * ((1 - alpha) * (0.5 * (1 + _np.cos(_math.pi * t))) ** exponent + alpha)
    return f


def piecewise_constant_schedule(init_value, boundaries_and_scales=None):
    """init_value times every scale whose boundary the count has reached."""
    items = sorted((boundaries_and_scales or {}).items())

    def f(count):
        c = _np.asarray(count)
        v = _np.asarray(float(init_value))
        for b, s in items:
            v = _np.where(c >= b, v * s, v)
        return v
    return f


def join_schedules(schedules, boundaries):
    """schedules[i] from boundaries[i-1] on, each counting from its own start."""
    def f(count):
        c = _np.asarray(count)
        out = schedules[0](c)
        for b, s in zip(boundaries, schedules[1:]):
            out = _np.where(c >= b, s(c - b), out)
        return out
    return f


def warmup_cosine_decay_schedule(init_value, peak_value, warmup_steps, decay_steps, end_value=0.0, exponent=1.0):
    alpha = 0.0 if peak_value == 0 else end_value / peak_value
    return join_schedules([linear_schedule(init_value, peak_value, warmup_steps),
                           cosine_decay_schedule(peak_value, decay_steps - warmup_steps, alpha, exponent)],
                          [warmup_steps])


def warmup_exponential_decay_schedule(init_value, peak_value, warmup_steps, transition_steps, decay_rate,
                                      transition_begin=0, staircase=False, end_value=None):
    return join_schedules([linear_schedule(init_value, peak_value, warmup_steps),
                           exponential_decay(peak_value, transition_steps, decay_rate, transition_begin, staircase,
                                             end_value)], [warmup_steps])


def cosine_onecycle_schedule(transition_steps, peak_value, pct_start=0.3, div_factor=25.0, final_div_factor=1e4):
    """Up from peak/div_factor to the peak over pct_start of the steps, then down to peak/(div * final_div), by
    cosine interpolation."""
    start = peak_value / div_factor
    end = start / final_div_factor
    up = int(pct_start * transition_steps)

    def cos_interp(a, b, steps):
        def f(count):
            t = _np.clip(_f32(count), 0, steps) / _builtin_max(steps, 1)
            return b + (a - b) * (1 + _np.cos(_math.pi * t)) / 2
        return f

    return join_schedules([cos_interp(start, peak_value, up), cos_interp(peak_value, end, transition_steps - up)], [up])


def _builtin_max(a, b):
    return a if a > b else b
