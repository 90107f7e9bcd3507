"""JAX's jax.scipy: `graft.scipy.special`, `graft.scipy.linalg`, `graft.scipy.stats`."""
from . import linalg, special, stats  # noqa: F401
