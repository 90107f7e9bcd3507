"""JAX's jax.custom_derivatives: user-defined derivatives (custom_jvp, custom_vjp, custom_gradient),
closure_convert, and linear_call (a linear function with the transpose the caller gives)."""
from ._api import closure_convert, custom_gradient, custom_jvp, custom_vjp, linear_call  # noqa: F401

__all__ = ["closure_convert", "custom_gradient", "custom_jvp", "custom_vjp", "linear_call"]
