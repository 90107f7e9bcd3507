#!/usr/bin/env python3
"""Records what JAX draws for every jax.random sampler, for graft's bit-for-bit tests.

Run where JAX 0.11 is installed (the lent GPU machine: `STAGES=jaxvalues tools/cuda_device.sh`, or by
hand: `JAX_PLATFORMS=cpu python3 tools/jax_random_values.py > tests/data/jax_random_values.json`), then
commit the file: python/tests/test_random_jax_values.py compares graft's draws with every entry (in both
of jax_threefry_partitionable's modes; x64 off). Floats are written with float.hex (exact), integers
and booleans as numbers.
"""
import json
import sys
import zlib

# name, keyword arguments (arrays as nested lists with their dtype), shape, dtype
CASES = [
    ("bits", {}, (6,), "uint32"), ("bits", {}, (6,), "uint8"), ("bits", {}, (6,), "uint16"),
    ("uniform", {}, (6,), "float32"), ("uniform", {}, (6,), "bfloat16"), ("uniform", {}, (6,), "float16"),
    ("uniform", {"minval": -2.0, "maxval": 3.0}, (6,), "float32"),
    ("normal", {}, (6,), "float32"), ("normal", {}, (6,), "bfloat16"),
    ("bernoulli", {"p": 0.3}, (8,), None),
    ("randint", {"minval": 0, "maxval": 10}, (6,), "int32"),
    ("randint", {"minval": -5, "maxval": 300}, (6,), "uint8"),
    ("randint", {"minval": -1000, "maxval": 1000}, (6,), "int16"),
    ("truncated_normal", {"lower": -1.0, "upper": 2.0}, (6,), "float32"),
    ("exponential", {}, (6,), "float32"), ("laplace", {}, (6,), "float32"),
    ("logistic", {}, (6,), "float32"), ("cauchy", {}, (6,), "float32"),
    ("gumbel", {}, (6,), "float32"), ("gumbel", {}, (6,), "float16"),
    ("gumbel", {"mode": "high"}, (6,), "float32"), ("gumbel", {"mode": "highest"}, (6,), "float32"),
    ("pareto", {"b": 0.5}, (6,), "float32"), ("rademacher", {}, (6,), "int32"),
    ("maxwell", {}, (6,), "float32"), ("double_sided_maxwell", {"loc": 1.0, "scale": 2.0}, (6,), "float32"),
    ("weibull_min", {"scale": 1.5, "concentration": 0.7}, (6,), "float32"),
    ("rayleigh", {"scale": 2.0}, (6,), "float32"), ("wald", {"mean": 1.5}, (6,), "float32"),
    ("gamma", {"a": 0.4}, (6,), "float32"), ("gamma", {"a": 3.0}, (6,), "float32"),
    ("loggamma", {"a": 0.2}, (6,), "float32"),
    ("beta", {"a": 0.8, "b": 2.5}, (6,), "float32"),
    ("dirichlet", {"alpha": ([0.5, 1.5, 3.0], "float32")}, (2,), "float32"),
    ("chisquare", {"df": 3.0}, (6,), "float32"), ("t", {"df": 4.0}, (6,), "float32"),
    ("f", {"dfnum": 3.0, "dfden": 7.0}, (6,), "float32"),
    ("generalized_normal", {"p": 1.5}, (6,), "float32"),
    ("ball", {"d": 3, "p": 2.0}, (2,), "float32"),
    ("poisson", {"lam": 3.0}, (6,), "int32"), ("poisson", {"lam": 40.0}, (6,), "int32"),
    ("binomial", {"n": 8.0, "p": 0.3}, (6,), "float32"), ("binomial", {"n": 200.0, "p": 0.4}, (6,), "float32"),
    ("geometric", {"p": 0.2}, (6,), "int32"),
    ("triangular", {"left": -1.0, "mode": 0.5, "right": 2.0}, (6,), "float32"),
    ("lognormal", {"sigma": 0.5}, (6,), "float32"),
    ("multinomial", {"n": 10.0, "p": ([0.2, 0.3, 0.5], "float32")}, (2, 3), "float32"),
    ("multivariate_normal", {"mean": ([0.0, 1.0], "float32"), "cov": ([[2.0, 0.5], [0.5, 1.0]], "float32")}, (3,), "float32"),
    ("orthogonal", {"n": 3}, (), "float32"),
    ("categorical", {"logits": ([0.1, 1.0, -0.5, 2.0], "float32")}, (6,), None),
    ("choice", {"a": 10}, (4,), None), ("choice", {"a": 10, "replace": False}, (4,), None),
    ("choice", {"a": 5, "p": ([0.1, 0.2, 0.3, 0.25, 0.15], "float32")}, (4,), None),
    ("choice", {"a": 5, "replace": False, "p": ([0.1, 0.2, 0.3, 0.25, 0.15], "float32")}, (3,), None),
    ("permutation", {"x": 8}, None, None),
]


def seed_of(name, kwargs, shape, dtype):
    return zlib.adler32(repr((name, sorted(kwargs), shape, dtype)).encode())


def main():
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax import random

    jax.config.update("jax_enable_x64", False)  # graft's test draws in the default (32-bit) mode
    out = {"jax": jax.__version__, "cases": []}
    for partitionable in (True, False):
        jax.config.update("jax_threefry_partitionable", partitionable)
        for name, kwargs, shape, dtype in CASES:
            args = {k: (jnp.asarray(v[0], v[1]) if isinstance(v, tuple) else v) for k, v in kwargs.items()}
            key = random.key(seed_of(name, kwargs, shape, dtype))
            call = dict(args)
            if shape is not None:
                call["shape"] = shape
            if dtype is not None:
                call["dtype"] = jnp.dtype(dtype)
            if name == "permutation":
                x = np.asarray(getattr(random, name)(key, call.pop("x")))
            else:
                x = np.asarray(getattr(random, name)(key, **call))
            flat = x.reshape(-1)
            values = [float(v).hex() for v in flat.astype(np.float64)] if x.dtype.kind == "f" or str(x.dtype) == "bfloat16" \
                else [int(v) for v in flat]
            out["cases"].append({"name": name, "kwargs": kwargs, "shape": shape, "dtype": dtype,
                                 "partitionable": partitionable, "out_shape": list(x.shape),
                                 "out_dtype": str(x.dtype), "values": values})
    json.dump(out, sys.stdout, indent=0)


if __name__ == "__main__":
    main()
