"""Layers as pairs of pure functions (init(key) -> params, apply(params, x)), activations, losses."""
import math

from . import _graft
from . import random as _random
from ._graft import (accuracy, avg_pool2d, cross_entropy, dropout, gelu, log_sigmoid, log_softmax,  # noqa: F401
                     max_pool2d, relu, relu6, sigmoid, silu, softmax, softmax_cross_entropy, softplus)


# ---- initializers: f(key, shape, dtype) ----------------------------------------------------------------
def variance_scaling(scale, mode, distribution, in_axis=-2, out_axis=-1):
    def init(key, shape, dtype="float32"):
        rf = 1
        for i, n in enumerate(shape):
            if i not in (in_axis % len(shape), out_axis % len(shape)):
                rf *= n
        fan_in, fan_out = shape[in_axis] * rf, shape[out_axis] * rf
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[mode]
        var = scale / n
        if distribution == "uniform":
            lim = math.sqrt(3 * var)
            return _random.uniform(key, shape, dtype, -lim, lim)
        return _random.normal(key, shape, dtype) * math.sqrt(var)
    return init


def glorot_uniform(in_axis=-2, out_axis=-1):
    return variance_scaling(1.0, "fan_avg", "uniform", in_axis, out_axis)


def he_normal(in_axis=-2, out_axis=-1):
    return variance_scaling(2.0, "fan_in", "normal", in_axis, out_axis)


def lecun_normal(in_axis=-2, out_axis=-1):
    return variance_scaling(1.0, "fan_in", "normal", in_axis, out_axis)


# ---- layers ------------------------------------------------------------------------------------------
class Linear:
    """y = x @ w + b; params {"w": [in, out], "b": [out]}."""

    def __init__(self, in_features, out_features, bias=True, w_init=None):
        self.in_features, self.out_features, self.bias = in_features, out_features, bias
        self.w_init = w_init or glorot_uniform()

    def init(self, key, dtype="float32"):
        p = {"w": self.w_init(key, (self.in_features, self.out_features), dtype)}
        if self.bias:
            p["b"] = _graft.zeros((self.out_features,), dtype)
        return p

    def __call__(self, params, x):
        y = x @ params["w"]
        return y + params["b"] if self.bias else y


class MLP:
    """Dense layers of the given sizes with an activation between them (the seeds' 784-512-512-10)."""

    def __init__(self, sizes, activation=relu):
        self.layers = [Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:])]
        self.activation = activation

    def init(self, key, dtype="float32"):
        keys = _random.split(key, len(self.layers))
        return [layer.init(keys[i], dtype) for i, layer in enumerate(self.layers)]

    def __call__(self, params, x):
        for i, (layer, p) in enumerate(zip(self.layers, params)):
            x = layer(p, x)
            if i + 1 < len(self.layers):
                x = self.activation(x)
        return x


class Conv2d:
    """2-D convolution of [N, C, H, W] inputs; params {"w": [out, in / groups, kh, kw], "b": [out]}."""

    def __init__(self, in_channels, out_channels, kernel, stride=(1, 1), padding="VALID", dilation=(1, 1),
                 groups=1, bias=True, w_init=None):
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel = (kernel, kernel) if isinstance(kernel, int) else tuple(kernel)
        self.stride = (stride, stride) if isinstance(stride, int) else tuple(stride)
        self.dilation = (dilation, dilation) if isinstance(dilation, int) else tuple(dilation)
        self.padding, self.groups, self.bias = padding, groups, bias
        self.w_init = w_init or he_normal(1, 0)

    def init(self, key, dtype="float32"):
        shape = (self.out_channels, self.in_channels // self.groups) + self.kernel
        p = {"w": self.w_init(key, shape, dtype)}
        if self.bias:
            p["b"] = _graft.zeros((self.out_channels,), dtype)
        return p

    def __call__(self, params, x):
        y = _graft.conv2d(x, params["w"], self.stride, self.padding, self.dilation, self.groups)
        return y + params["b"].reshape(1, self.out_channels, 1, 1) if self.bias else y


def num_params(params):
    from ._tree import tree_leaves
    return sum(x.size for x in tree_leaves(params))
