"""JAX's jax.scipy: `graft.scipy.special`, `graft.scipy.linalg`."""
from . import linalg, special  # noqa: F401
