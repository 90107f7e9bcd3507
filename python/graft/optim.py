"""Optimizers as pure functions over pytrees (optax's shape): opt.init(params) -> state,
opt.update(grads, state, params) -> (updates, state), apply_updates(params, updates)."""
import math

from . import _graft
from ._tree import tree_map


class Optimizer:
    def __init__(self, init, update):
        self.init, self.update = init, update


def _schedule(lr):
    return lr if callable(lr) else (lambda count: lr)


def cosine_decay(init_value, decay_steps, alpha=0.0):
    """init_value * (alpha + (1 - alpha) * (1 + cos(pi * min(t, T) / T)) / 2)."""
    def f(count):
        t = _graft.minimum(count.astype("float32"), float(decay_steps)) / float(decay_steps)
        return init_value * (alpha + (1 - alpha) * 0.5 * (1 + _graft.cos(math.pi * t)))
    return f


def apply_updates(params, updates):
    return tree_map(lambda p, u: p + u.astype(p.dtype), params, updates)


def sgd(learning_rate, momentum=0.0, nesterov=False):
    lr = _schedule(learning_rate)

    def init(params):
        state = {"count": _graft.zeros((), "int32")}
        if momentum:
            state["trace"] = tree_map(_graft.zeros_like, params)
        return state

    def update(grads, state, params=None):
        step = lr(state["count"])
        new = {"count": state["count"] + 1}
        if momentum:
            trace = tree_map(lambda t, g: momentum * t + g, state["trace"], grads)
            new["trace"] = trace
            direction = tree_map(lambda t, g: momentum * t + g, trace, grads) if nesterov else trace
        else:
            direction = grads
        return tree_map(lambda d: -step * d, direction), new

    return Optimizer(init, update)


def adam(learning_rate, b1=0.9, b2=0.999, eps=1e-8, weight_decay=0.0):
    lr = _schedule(learning_rate)

    def init(params):
        return {"count": _graft.zeros((), "int32"), "mu": tree_map(_graft.zeros_like, params),
                "nu": tree_map(_graft.zeros_like, params)}

    def update(grads, state, params=None):
        count = state["count"] + 1
        mu = tree_map(lambda m, g: b1 * m + (1 - b1) * g, state["mu"], grads)
        nu = tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, state["nu"], grads)
        c = count.astype("float32")
        bc1, bc2 = 1 - _graft.power(b1, c), 1 - _graft.power(b2, c)
        step = lr(state["count"])
        updates = tree_map(lambda m, v: -step * (m / bc1) / (_graft.sqrt(v / bc2) + eps), mu, nu)
        if weight_decay:
            updates = tree_map(lambda u, p: u - step * weight_decay * p, updates, params)
        return updates, {"count": count, "mu": mu, "nu": nu}

    return Optimizer(init, update)


def adamw(learning_rate, b1=0.9, b2=0.999, eps=1e-8, weight_decay=1e-4):
    return adam(learning_rate, b1, b2, eps, weight_decay)


from ._optim_extra import (GradientTransformation, MultiSteps, adabelief, adafactor, adagrad,  # noqa: E402,F401
                           add_decayed_weights, chain, clip, clip_by_block_rms, clip_by_global_norm, constant_schedule,
                           cosine_decay_schedule, cosine_onecycle_schedule, ema, exponential_decay, global_norm,
                           identity, inject_hyperparams, join_schedules, lamb, linear_schedule, lion, masked,
                           multi_transform, nadam, piecewise_constant_schedule, polynomial_schedule, rmsprop, scale,
                           scale_by_adam, scale_by_belief, scale_by_factored_rms, scale_by_learning_rate,
                           scale_by_lion, scale_by_param_block_rms, scale_by_rms, scale_by_rss, scale_by_schedule,
                           scale_by_stddev, scale_by_trust_ratio, trace, warmup_cosine_decay_schedule,
                           warmup_exponential_decay_schedule)
onecycle = cosine_onecycle_schedule
