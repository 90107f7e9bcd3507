"""graft.random draws JAX's values bit for bit.

JAX records the values its samplers draw, to catch changes between versions, in its own test suite
(tests/random_test.py of JAX 0.11.1: testPRNGValues, testRngRandomBits, the table of
testRandomDistributionValues and test_loggamma_nan_corner_case). Those values were drawn with
``jax_threefry_partitionable`` off (JAX's scheme before 0.5), so these tests switch it off too; the
samplers' algorithms are the same in both modes, which differ only in how bits and splits come out of
threefry (tests/random/test_random.cpp checks the partitionable mode's bits against threefry itself).
The seeds are JAX's: zlib.adler32 of the sampler's name and "threefry2x32".
"""
import zlib

import numpy as np
import pytest

import graft
from graft import random

_CASES = [
    # name, shape, dtype, params, expected (JAX 0.11.1, f32 unless stated, rtol 1e-5)
    ("bernoulli", (5,), None, {"p": 0.5}, [False, True, True, True, False]),
    ("beta", (5,), "float32", {"a": 0.8, "b": 0.9}, [0.13259, 0.824893, 0.948363, 0.964155, 0.235448]),
    ("bits", (5,), "uint8", {}, [10, 158, 82, 54, 158]),
    ("bits", (5,), "uint16", {}, [6738, 38161, 50695, 57337, 61600]),
    ("bits", (5,), "uint32", {}, [1978747883, 4134381225, 3628107870, 689687174, 2788938207]),
    ("cauchy", (5,), "float32", {}, [-0.088416, -10.169713, 3.49677, -1.18056, 0.34556]),
    ("dirichlet", (2,), "float32", {"alpha": np.array([0.5, 0.6, 0.7], "float32")},
     [[0.003128, 0.009694, 0.987178], [0.025938, 0.479091, 0.494971]]),
    ("double_sided_maxwell", (5,), "float32", {"loc": 1, "scale": 2},
     [-2.408914, -3.370437, 3.235352, -0.907734, -1.708732]),
    ("exponential", (5,), "float32", {}, [0.526067, 0.043046, 0.039932, 0.46427, 0.123886]),
    ("gamma", (5,), "float32", {"a": 0.8}, [0.824221, 1.724476, 0.502882, 5.386132, 0.685543]),
    ("gumbel", (5,), "float32", {}, [2.06701, 0.911726, 0.145736, 0.185427, -0.00711]),
    ("laplace", (5,), "float32", {}, [0.578939, -0.204902, 0.555733, 0.911053, -0.96456]),
    ("loggamma", (5,), "float32", {"a": 0.8}, [0.240559, -3.575443, -0.450946, -2.161372, -2.943277]),
    ("logistic", (5,), "float32", {}, [0.19611, -1.709053, -0.274093, -0.208322, -1.675489]),
    ("maxwell", (5,), "float32", {}, [3.070779, 0.908479, 1.521317, 0.875551, 1.306137]),
    ("multivariate_normal", (2,), "float32", {"mean": np.ones((1, 3)), "cov": np.eye(3)},
     [[1.067826, 1.215599, 0.234166], [-0.237534, 1.32591, 1.413987]]),
    ("normal", (5,), "float32", {}, [-1.173234, -1.511662, 0.070593, -0.099764, 1.052845]),
    ("pareto", (5,), "float32", {"b": 0.5}, [2.751398, 1.281863, 87.85448, 1.254542, 2.824487]),
    ("poisson", (5,), "int32", {"lam": 5}, [7, 3, 6, 11, 6]),
    ("rademacher", (5,), "int32", {}, [-1, -1, -1, -1, 1]),
    ("randint", (5,), "int32", {"minval": 0, "maxval": 10}, [0, 5, 7, 7, 5]),
    ("truncated_normal", (5,), "float32", {"lower": 0, "upper": 2}, [0.582807, 1.709771, 0.159513, 0.861376, 0.36148]),
    ("uniform", (5,), "float32", {}, [0.298671, 0.073213, 0.873356, 0.260549, 0.412797]),
    ("weibull_min", (5,), "float32", {"scale": 1, "concentration": 1},
     [1.605863, 0.841809, 0.224218, 0.4826, 0.027901]),
]


@pytest.fixture
def legacy_bits():
    prev_mode = graft.config.jax_threefry_partitionable
    prev_x64 = graft.config.jax_enable_x64
    graft.config.update("jax_threefry_partitionable", False)
    graft.config.update("jax_enable_x64", False)
    yield
    graft.config.update("jax_threefry_partitionable", prev_mode)
    graft.config.update("jax_enable_x64", prev_x64)


def _draw(name, key, shape, dtype, params):
    f = getattr(random, name)
    return f(key, **params, shape=shape, dtype=dtype) if dtype else f(key, **params, shape=shape)


def _check(got, want, name):
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, name
    if got.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want.astype(got.dtype), err_msg=name)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("make_key", [random.PRNGKey, random.key], ids=["PRNGKey", "key"])
@pytest.mark.parametrize("case", _CASES, ids=lambda c: f"{c[0]}_{c[2]}")
def test_distribution_values(legacy_bits, case, make_key):
    name, shape, dtype, params, want = case
    key = make_key(zlib.adler32((name + "threefry2x32").encode()))
    _check(_draw(name, key, shape, dtype, params), want, name)


@pytest.mark.parametrize("case", _CASES, ids=lambda c: f"{c[0]}_{c[2]}")
def test_distribution_values_under_jit(legacy_bits, case):
    name, shape, dtype, params, want = case
    key = random.PRNGKey(zlib.adler32((name + "threefry2x32").encode()))
    _check(graft.jit(lambda k: _draw(name, k, shape, dtype, params))(key), want, name)


@pytest.mark.parametrize("make_key", [random.PRNGKey, random.key], ids=["PRNGKey", "key"])
def test_prng_values(legacy_bits, make_key):
    k = make_key(0)
    _check(random.randint(k, (3, 3), 0, 8, dtype="int32"), [[2, 1, 3], [6, 1, 5], [6, 3, 4]], "randint")
    _check(random.key_data(random.split(k, 4)),
           [[2285895361, 1501764800], [1518642379, 4090693311], [433833334, 4221794875], [839183663, 3740430601]],
           "split")
    _check(random.key_data(random.fold_in(k, 4)), [2285895361, 433833334], "fold_in")
    k = make_key(1701)
    _check(random.bits(k, (3,), "uint8"), [216, 115, 43], "bits8")
    _check(random.bits(k, (3,), "uint16"), [41682, 1300, 55017], "bits16")
    _check(random.bits(k, (3,), "uint32"), [56197195, 4200222568, 961309823], "bits32")


def test_prng_values_x64(legacy_bits):
    graft.config.update("jax_enable_x64", True)
    _check(random.randint(random.PRNGKey(0), (3, 3), 0, 8, dtype="int64"), [[7, 2, 6], [2, 1, 0], [6, 7, 7]], "randint")
    got = random.bits(random.PRNGKey(1701), (3,), "uint64")
    assert np.asarray(got).dtype == np.uint64
    _check(got, np.array([3982329540505020460, 16822122385914693683, 7882654074788531506], np.uint64), "bits64")
    got = random.bits(random.PRNGKey(zlib.adler32(b"bitsthreefry2x32")), (5,), "uint64")
    _check(got, np.array([17649965731882839947, 1415307058040849897, 8282622628079774249, 14024425113645909402,
                          2012979996110532418], np.uint64), "bits64")


def test_loggamma_nan_corner_case(legacy_bits):
    # JAX's regression key for a loggamma that once gave NaN
    key = random.wrap_key_data(np.array([3200590325, 713258242], dtype="uint32"))
    np.testing.assert_allclose(np.asarray(random.loggamma(key, 0.0, dtype="float32")), -4.595436, rtol=1e-6)


def test_modes_differ_and_jit_keys_on_the_mode():
    prev = graft.config.jax_threefry_partitionable
    try:
        f = graft.jit(lambda k: random.uniform(k, (4,)))
        graft.config.update("jax_threefry_partitionable", True)
        on = np.asarray(f(random.PRNGKey(3)))
        graft.config.update("jax_threefry_partitionable", False)
        off = np.asarray(f(random.PRNGKey(3)))
        assert not np.array_equal(on, off)
        np.testing.assert_array_equal(off, np.asarray(random.uniform(random.PRNGKey(3), (4,))))
        # split(k)[i] == fold_in(k, i) holds in the partitionable mode only (JAX's symmetry test, key 72)
        graft.config.update("jax_threefry_partitionable", True)
        k = random.key(72)
        for i, s in enumerate(random.split(k, 3)):
            np.testing.assert_array_equal(np.asarray(random.key_data(s)), np.asarray(random.key_data(random.fold_in(k, i))))
    finally:
        graft.config.update("jax_threefry_partitionable", prev)


# ---- every sampler against JAX, when the lent GPU machine (which has JAX 0.11) has recorded its draws:
# tools/jax_random_values.py writes tests/data/jax_random_values.json. Until that file is committed this
# table has no rows (nothing here runs, nothing is claimed).
import json
import os
import sys

_DATA = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data", "jax_random_values.json")
_RECORDED = json.load(open(_DATA))["cases"] if os.path.exists(_DATA) else []


@pytest.mark.parametrize("case", _RECORDED,
                         ids=[f"{c['name']}_{c['dtype']}_{'p' if c['partitionable'] else 'legacy'}" for c in _RECORDED])
def test_recorded_jax_draws(case):
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools"))
    from jax_random_values import seed_of
    import graft.numpy as jnp
    kwargs = case["kwargs"]
    shape = None if case["shape"] is None else tuple(case["shape"])
    args = {k: (jnp.asarray(np.asarray(v[0], v[1])) if isinstance(v, list) and len(v) == 2 and isinstance(v[1], str) else v)
            for k, v in kwargs.items()}
    prev = (graft.config.jax_threefry_partitionable, graft.config.jax_enable_x64)
    graft.config.update("jax_threefry_partitionable", case["partitionable"])
    graft.config.update("jax_enable_x64", False)
    try:
        key = random.key(seed_of(case["name"], kwargs, shape, case["dtype"]))
        if shape is not None:
            args["shape"] = shape
        if case["dtype"] is not None:
            args["dtype"] = case["dtype"]
        f = getattr(random, case["name"])
        got = np.asarray(f(key, args.pop("x")) if case["name"] == "permutation" else f(key, **args))
    finally:
        graft.config.update("jax_threefry_partitionable", prev[0])
        graft.config.update("jax_enable_x64", prev[1])
    assert list(got.shape) == case["out_shape"]
    assert str(got.dtype) == case["out_dtype"]
    if isinstance(case["values"][0] if case["values"] else 0, str):
        want = np.array([float.fromhex(v) for v in case["values"]])
        # transcendental functions are graft's own (XLA evaluates its own polynomials): 2 ulp of the
        # output's dtype, relative to each value and (for values out of cancellation) to the largest
        eps = {"float32": 2.0 ** -23, "float64": 2.0 ** -52, "bfloat16": 2.0 ** -7, "float16": 2.0 ** -10}[case["out_dtype"]]
        scale = np.max(np.abs(want)) if want.size else 0.0
        np.testing.assert_allclose(got.reshape(-1).astype(np.float64), want, rtol=2 * eps, atol=4 * eps * scale)
    else:
        np.testing.assert_array_equal(got.reshape(-1).astype(np.int64), np.array(case["values"], np.int64))
