"""jax.experimental's context managers for the 64-bit mode."""
import contextlib

from . import _graft


@contextlib.contextmanager
def enable_x64(new_val=True):
    """Within it, the 64-bit mode is `new_val` (graft.config's jax_enable_x64), restored after."""
    prev = _graft._x64_enabled()
    _graft._set_x64(bool(new_val))
    try:
        yield
    finally:
        _graft._set_x64(prev)


def disable_x64():
    """Within it, the 64-bit mode is off."""
    return enable_x64(False)
