"""JAX's jax.debug: print and callback from inside transformed functions. Under jit they run when the compiled
program runs (with the values of that call), under vmap once per example, under grad on the primal values."""
from ._api import _host_callback


def callback(callback, *args, ordered=False, **kwargs):
    """callback(*args, **kwargs) on the host with NumPy arrays, for its side effects."""
    _host_callback("debug", lambda *a, **k: callback(*a, **k), None, args, kwargs)


def print(fmt, *args, ordered=False, **kwargs):  # noqa: A001
    """fmt.format(*args, **kwargs) printed with the runtime values of args and kwargs."""
    import builtins
    _host_callback("debug", lambda *a, **k: builtins.print(fmt.format(*a, **k)), None, args, kwargs)
