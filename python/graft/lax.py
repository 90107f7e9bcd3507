"""JAX's lax: primitives by name, structured control flow and collectives."""
from . import _graft
from ._api import _flat_arrays
from ._graft import (abs, axis_index, cos, exp, log, pmax, pmean, pmin, psum, sin, sqrt, stop_gradient,  # noqa: F401
                     tanh)
from ._tree import tree_flatten, tree_unflatten
from . import _lax_linalg as linalg  # noqa: E402  (graft.lax.linalg)
import sys as _sys  # noqa: E402
_sys.modules[__name__ + ".linalg"] = linalg

neg, logistic = _graft.negative, _graft.sigmoid
add, sub, mul, div = _graft.add, _graft.subtract, _graft.multiply, _graft.divide
max, min, pow = _graft.maximum, _graft.minimum, _graft.power  # noqa: A001
dot = _graft.matmul
rsqrt = _graft.rsqrt
square = _graft.square
lgamma, digamma, polygamma, zeta = (_graft.special_gammaln, _graft.special_digamma, _graft.special_polygamma,
                                    _graft.special_zeta)
bessel_i0e, bessel_i1e, erf_inv = _graft.special_i0e, _graft.special_i1e, _graft.erf_inv
random_gamma_grad = _graft.lax_random_gamma_grad
igamma, igammac, igamma_grad_a = _graft.special_gammainc, _graft.special_gammaincc, _graft.lax_igamma_grad_a
betainc = _graft.special_betainc


def with_sharding_constraint(x, sharding):
    """x laid out as `sharding` inside sharded jit (the identity elsewhere); x may be a pytree."""
    from ._tree import tree_map
    return tree_map(lambda a: _graft.with_sharding_constraint(a, sharding), x)


def _check_same(what, trees):
    first = trees[0]
    for t in trees[1:]:
        if t != first:
            raise TypeError(f"{what}: the branches return different structures: {first} and {t}")


def switch(index, branches, *operands):
    """branches[clamp(index, 0, len - 1)](*operands), traced as one cond."""
    leaves, tree = _flat_arrays(operands, "switch")
    outs = []

    def make(b):
        def flat(xs):
            o, d = tree_flatten(b(*tree_unflatten(tree, xs)))
            outs.append(d)
            return o
        return flat

    res = _graft.cond(index, [make(b) for b in branches], leaves)
    _check_same("switch", outs)
    return tree_unflatten(outs[0], res)


def cond(pred, true_fun, false_fun, *operands):
    """true_fun(*operands) if pred else false_fun(*operands), as a cond primitive (both traced)."""
    return switch(pred, [false_fun, true_fun], *operands)


def while_loop(cond_fun, body_fun, init_val, max_steps=-1):
    leaves, tree = _flat_arrays(init_val, "while_loop")
    res = _graft.while_loop(lambda xs: [cond_fun(tree_unflatten(tree, xs))],
                            lambda xs: tree_flatten(body_fun(tree_unflatten(tree, xs)))[0], leaves, max_steps)
    return tree_unflatten(tree, res)


def scan(f, init, xs=None, length=None, reverse=False):
    """(final carry, stacked ys) of carry, y = f(carry, x) over the leading axis of xs."""
    c_leaves, c_tree = _flat_arrays(init, "scan")
    x_leaves, x_tree = _flat_arrays(xs, "scan")
    nc = len(c_leaves)
    box = {}

    def flat(vals):
        carry, y = f(tree_unflatten(c_tree, vals[:nc]), tree_unflatten(x_tree, vals[nc:]))
        co, cd = tree_flatten(carry)
        if cd != c_tree:
            raise TypeError(f"scan: the body returns a carry of structure {cd}, the initial carry is {c_tree}")
        yo, box["y"] = tree_flatten(y)
        return co + yo

    res = _graft.scan(flat, c_leaves, x_leaves, length, reverse)
    return tree_unflatten(c_tree, res[:nc]), tree_unflatten(box["y"], res[nc:])


def fori_loop(lower, upper, body_fun, init_val):
    """body_fun(i, val) for i in [lower, upper), as a scan (so reverse mode differentiates it)."""
    if not isinstance(lower, int) or not isinstance(upper, int):
        def body(c):
            i, v = c
            return (i + 1, body_fun(i, v))
        return while_loop(lambda c: c[0] < upper, body, (_graft.asarray(lower), init_val))[1]

    def step(c, _):
        i, v = c
        return (i + 1, body_fun(i, v)), None

    (_, val), _ = scan(step, (_graft.asarray(lower, "int32"), init_val), None, length=upper - lower)
    return val
