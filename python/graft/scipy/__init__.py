"""JAX's jax.scipy: `graft.scipy.special`."""
from . import special  # noqa: F401
