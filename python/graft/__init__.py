"""graft: a deep learning toolkit with JAX's interface over a C++ core.

    import graft as gf
    import graft.numpy as gnp
    gf.grad(lambda w: gnp.sum(gnp.tanh(w) ** 2))(gnp.ones(3))
"""
from . import _graft
from ._graft import __version__  # the C++ library's version (graft::version())
from ._graft import Array, ConcretizationError, Error, ShapeError, UnexpectedTracerError, from_dlpack
from ._tree import tree_flatten, tree_leaves, tree_map, tree_structure, tree_unflatten
from ._api import (ClosedJaxpr, ShapeDtypeStruct, block_until_ready, checkpoint, checkpoint_name, closure_convert,
                   custom_gradient, custom_jvp, custom_vjp, disable_jit, ensure_compile_time_eval, eval_shape, named_call, named_scope,
                   checkpoint_policies, ShapedArray, typeof, io_callback, pure_callback, grad, hessian, jacfwd, jacrev, jit, jvp, linear_transpose, linearize,
                   make_jaxpr, pmap, remat, shard_map, value_and_grad, vjp, vmap)
from . import _array  # noqa: F401  (NumPy-style methods and .at[] on Array)
from ._paradigms import GradientTape, Graph, graph_grad
from .config import config
from . import custom_derivatives, data, debug, experimental, export, io, lax, nn, numpy, optim, random, scipy, sharding, tree, tree_util
from .sharding import devices, local_devices, process_count, process_index

__all__ = ["__version__", "Array", "ConcretizationError", "Error", "ShapeError", "UnexpectedTracerError", "ClosedJaxpr", "grad",
           "hessian", "jacfwd", "jacrev", "jit", "jvp", "make_jaxpr", "value_and_grad", "vjp", "vmap", "lax",
           "numpy", "random", "scipy", "nn", "optim", "custom_derivatives", "data", "io", "tree", "tree_util", "tree_flatten", "tree_leaves", "tree_map", "tree_structure", "tree_unflatten",
           "device_get", "device_put", "default_device", "from_dlpack", "custom_jvp", "custom_vjp", "checkpoint", "checkpoint_name", "remat",
           "shard_map", "pmap", "ShapeDtypeStruct", "eval_shape", "custom_gradient", "closure_convert", "disable_jit", "pure_callback", "io_callback", "debug", "linearize", "linear_transpose", "block_until_ready", "ensure_compile_time_eval", "named_scope", "named_call", "checkpoint_policies", "typeof", "ShapedArray",
           "config", "experimental", "sharding", "devices", "local_devices", "process_count", "process_index", "GradientTape", "Graph", "graph_grad"]


def device_get(x):
    """The NumPy value of every array leaf of x."""
    import numpy as np
    return tree_map(lambda a: np.asarray(a) if isinstance(a, Array) else a, x)


def device_put(x, device=None):
    """x's array leaves committed to `device` ("cpu", "cuda", "cuda:1"; default: the default device),
    as jax.device_put: operations on them run there, and mixing two committed devices is an error. With
    a graft.sharding.NamedSharding, x's leaves laid out over its mesh (ShardedArrays)."""
    if isinstance(device, _graft.NamedSharding):  # laid out over a mesh: ShardedArrays
        return tree_map(lambda a: _graft.device_put_sharded(a, device), x)
    d = _graft.default_device_name() if device is None else str(device)
    return tree_map(lambda a: _graft.device_put(a, d), x)


def default_device(device):
    """A context in which new arrays and uncommitted computations go to `device` (jax.default_device):
    ``with graft.default_device("cuda"): ...``."""
    return _graft.DefaultDevice(str(device))
