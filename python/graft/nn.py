"""Layers as pairs of pure functions (init(key) -> params, apply(params, x)), activations, losses."""
import math

from . import _graft
from . import random as _random
from ._graft import (accuracy, avg_pool2d, cross_entropy, dropout, gelu, log_sigmoid, log_softmax,  # noqa: F401
                     max_pool2d, relu, relu6, sigmoid, silu, softmax, softmax_cross_entropy, softplus)


# ---- activations, attention and initializers beyond the C++ ones -------------------------------------------
from ._nn_extra import (celu, dot_product_attention, elu, glu, hard_sigmoid, hard_silu, hard_swish,  # noqa: E402,F401
                        hard_tanh, identity, leaky_relu, log1mexp, logmeanexp, logsumexp, mish, one_hot, selu, soft_sign, sparse_plus,
                        sparse_sigmoid, squareplus, standardize, swish)
from . import _nn_extra as initializers  # noqa: E402  (graft.nn.initializers, as jax.nn.initializers)
from ._nn_extra import (glorot_normal, glorot_uniform, he_normal, he_uniform, lecun_normal,  # noqa: E402,F401
                        lecun_uniform, variance_scaling)
import sys as _sys  # noqa: E402
_sys.modules[__name__ + ".initializers"] = initializers
tanh = _graft.tanh


# ---- layers ------------------------------------------------------------------------------------------
# nn's C++ layers (graft/nn/nn.h) as classes: parameters are dicts and lists of arrays
from ._graft import BatchNorm, Embedding, LayerNorm, MultiHeadAttention, TransformerBlock, TransformerLM  # noqa: E402,F401


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
