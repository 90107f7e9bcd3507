"""Process-wide switches, as JAX's ``jax.config``.

    import graft
    graft.config.update("jax_enable_x64", True)   # or GRAFT_ENABLE_X64=1 / JAX_ENABLE_X64=1
    graft.config.jax_enable_x64                   # True

``jax_enable_x64`` (off by default, as in JAX): off, graft's Python front end makes no 64-bit values.
Python floats and ints are weakly typed float32 / int32, NumPy's float64 / int64 / uint64 arrays arrive
as float32 / int32 / uint32, a requested 64-bit dtype (``dtype=jnp.float64``, ``astype(float)``) is its
32-bit sibling, and the default float and int (``jnp.zeros(3)``, ``jnp.arange(3)``, ``random.normal``)
are 32-bit. On, those are 64-bit. Jitted functions are traced again when it changes. The C++ API is
not affected: its values carry their own types.

``jax_debug_nans`` / ``jax_debug_infs`` (GRAFT_DEBUG_NANS / GRAFT_DEBUG_INFS): every primitive's
floating outputs checked, FloatingPointError naming the first that made a NaN (an infinity).

``jax_disable_jit``: jitted functions run eagerly (as ``graft.disable_jit()``).

``jax_threefry_partitionable`` (on by default, as in JAX >= 0.5): how random bits are drawn from
threefry. Off, the samplers draw the values of JAX's original scheme. Jit keys its caches on it.
"""
from . import _graft


def _set_disable_jit(on):
    from . import _api
    _api._jit_disabled[0] = bool(on)


def _disable_jit():
    from . import _api
    return _api._jit_disabled[0]


_FLAGS = {
    "enable_x64": (_graft._x64_enabled, _graft._set_x64),
    "debug_nans": (_graft._debug_nans, _graft._set_debug_nans),
    "debug_infs": (_graft._debug_infs, _graft._set_debug_infs),
    "disable_jit": (_disable_jit, _set_disable_jit),
    "threefry_partitionable": (_graft._threefry_partitionable, _graft._set_threefry_partitionable),
}


def _flag(name):
    for prefix in ("jax_", "graft_"):
        if name.startswith(prefix) and name[len(prefix):] in _FLAGS:
            return _FLAGS[name[len(prefix):]]
    raise AttributeError(f"graft.config has no option {name!r} (it has: "
                         + ", ".join("jax_" + k for k in _FLAGS) + ")")


class Config:
    """graft.config: ``update(name, value)``, ``read(name)``, and each option as an attribute."""

    def update(self, name, value):
        _flag(name)[1](bool(value))

    def read(self, name):
        return _flag(name)[0]()

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return _flag(name)[0]()

    @property
    def x64_enabled(self):
        return _graft._x64_enabled()

    def values(self):
        """Every option and its value."""
        return {"jax_" + k: get() for k, (get, _) in _FLAGS.items()}

    def __repr__(self):
        return "graft.config(" + ", ".join(f"{k}={v}" for k, v in self.values().items()) + ")"


config = Config()
