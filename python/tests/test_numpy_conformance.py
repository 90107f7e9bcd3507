"""graft.numpy against NumPy in the style of JAX's lax_numpy_test: one table row per function, every row run
over several shapes (empty, scalar, broadcasting) and dtypes (bool, int32, float16, bfloat16, float32,
float64), with NaN / inf inputs for the floating dtypes; then, per row, its derivatives against central
differences in float64, `vmap` against a Python loop and `jit` against eager.

NumPy is the oracle for values. Dtypes are compared by kind (bool / integer / floating), since JAX's
promotion differs from NumPy's on purpose (int32 / int32 is float32 in JAX without x64); JAX's exact result
dtypes are checked in test_x64.py and test_numpy_extra.py. bfloat16 inputs are made by rounding float32
values to bfloat16 in graft, and NumPy computes on the same rounded values in float32.
The complex, linear-algebra and FFT rows are test_conformance_numerics.py's.
"""
import math

import numpy as np
import pytest

import graft as gf
import graft.numpy as gnp

F16, BF16, F32, F64 = "float16", "bfloat16", "float32", "float64"
FLOATS = [F16, BF16, F32, F64]
INTS = ["int32"]
BOOL = ["bool"]
NUMERIC = INTS + FLOATS
ALL = BOOL + NUMERIC

# relative / absolute tolerance of a value check per dtype (f16 and bf16 compute in f32 and round).
TOL = {F16: 4e-3, BF16: 2e-2, F32: 3e-6, F64: 1e-13, "int32": 0, "bool": 0}

SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, 2.0, -2.5]

DOMAINS = {
    "real": (-3.0, 3.0),
    "pos": (0.1, 3.0),
    "unit": (-0.95, 0.95),
    "ge1": (1.05, 3.0),
    "small": (-1.5, 1.5),
    "nonzero": (0.3, 3.0),  # sign chosen at random below
}


def draw(shape, dtype, domain, rng):
    """A NumPy array of `shape` (float32 standing in for bfloat16) with values in `domain`."""
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype == "int32":
        lo, hi = (1, 6) if domain in ("pos", "ge1", "nonzero") else (-5, 6)
        v = rng.integers(lo, hi, shape).astype(np.int32)
        if domain == "nonzero":
            v = v * rng.choice(np.array([-1, 1], np.int32), shape)
        return v
    lo, hi = DOMAINS[domain]
    v = rng.uniform(lo, hi, shape)
    if domain == "nonzero":
        v = v * rng.choice([-1.0, 1.0], shape)
    if dtype == BF16:
        return np.asarray(gnp.asarray(v.astype(np.float32), dtype=gnp.bfloat16).astype(gnp.float32))
    return v.astype(dtype)


def to_graft(x, dtype):
    return gnp.asarray(x, dtype=gnp.bfloat16) if dtype == BF16 else gnp.asarray(x)


def kind(dt):
    dt = np.dtype(dt) if str(dt) != "bfloat16" else np.dtype(np.float32)
    return "b" if dt.kind == "b" else "i" if dt.kind in "iu" else dt.kind


def check_close(got, want, dtype, what, rtol=None, atol=None):
    got_np = np.asarray(got)
    want = np.asarray(want)
    assert got_np.shape == want.shape, f"{what}: shape {got_np.shape}, NumPy {want.shape}"
    assert kind(getattr(got, "dtype", got_np.dtype)) == kind(want.dtype), (
        f"{what}: dtype {getattr(got, 'dtype', got_np.dtype)}, NumPy {want.dtype}")
    out_dt = str(getattr(got, "dtype", got_np.dtype))
    t = max(TOL[dtype], TOL.get(out_dt, 0)) if rtol is None else rtol
    if want.dtype.kind in "biu" and got_np.dtype.kind in "biu":
        np.testing.assert_array_equal(got_np, want, err_msg=what)
    else:
        np.testing.assert_allclose(got_np.astype(np.float64), want.astype(np.float64), rtol=t,
                                   atol=t if atol is None else atol, equal_nan=True, err_msg=what)


class Row:
    """One function: its NumPy oracle, arity, dtypes, input domain and which checks apply."""

    def __init__(self, name, arity=1, dtypes=NUMERIC, domain="real", grad=True, np_fn=None, g_fn=None,
                 specials=True, tol=None, grad_tol=1e-6, jit_exact=False):
        self.name, self.arity, self.dtypes, self.domain = name, arity, dtypes, domain
        self.grad, self.specials, self.tol, self.grad_tol = grad, specials, tol, grad_tol
        self.np_fn = np_fn or getattr(np, name)
        self.g_fn = g_fn or getattr(gnp, name)
        self.jit_exact = jit_exact

    def __repr__(self):
        return self.name


U = lambda *a, **k: Row(*a, arity=1, **k)  # noqa: E731
B = lambda *a, **k: Row(*a, arity=2, **k)  # noqa: E731

UNARY = [
    U("abs", dtypes=ALL[1:]), U("negative"), U("positive"), U("sign", grad=True),
    U("floor", dtypes=FLOATS), U("ceil", dtypes=FLOATS), U("trunc", dtypes=FLOATS), U("rint", dtypes=FLOATS),
    U("fix", dtypes=FLOATS), U("round", dtypes=FLOATS, grad=False),
    U("exp", dtypes=FLOATS), U("exp2", dtypes=FLOATS), U("expm1", dtypes=FLOATS),
    U("log", domain="pos"), U("log2", domain="pos"), U("log10", domain="pos"), U("log1p", domain="pos"),
    U("sqrt", domain="pos"), U("cbrt", domain="pos"), U("square"), U("reciprocal", dtypes=FLOATS, domain="nonzero"),
    U("sin"), U("cos"), U("tan", domain="small"), U("arcsin", domain="unit"), U("arccos", domain="unit"),
    U("arctan"), U("sinh"), U("cosh"), U("tanh"), U("arcsinh"), U("arccosh", domain="ge1"),
    U("arctanh", domain="unit"), U("deg2rad"), U("rad2deg"), U("degrees"), U("radians"),
    # JAX 0.11 defines sinc(+-inf) = 0, the limit, where NumPy says NaN
    U("sinc", dtypes=FLOATS, domain="nonzero", np_fn=lambda x: np.where(np.isinf(x), 0.0, np.sinc(x)).astype(x.dtype)),
    U("isnan", dtypes=FLOATS, grad=False), U("isinf", dtypes=FLOATS, grad=False),
    U("isfinite", dtypes=FLOATS, grad=False), U("signbit", dtypes=FLOATS, grad=False),
    U("logical_not", dtypes=ALL, grad=False), U("invert", dtypes=BOOL + INTS, grad=False),
    U("nan_to_num", dtypes=FLOATS), U("i0", dtypes=[F32, F64], tol=1e-5, specials=False),
    U("spacing", dtypes=[F32, F64], grad=False, specials=False),
]

BINARY = [
    B("add", dtypes=ALL), B("subtract"), B("multiply", dtypes=ALL), B("divide", domain="nonzero"),
    B("true_divide", domain="nonzero"), B("floor_divide", domain="nonzero", grad=False),
    B("remainder", domain="nonzero", grad=False), B("mod", domain="nonzero", grad=False),
    B("fmod", domain="nonzero", grad=False), B("power", dtypes=FLOATS, domain="pos"),
    B("float_power", dtypes=[F32, F64], domain="pos"),
    B("maximum", dtypes=ALL), B("minimum", dtypes=ALL), B("fmax"), B("fmin"),
    B("arctan2", dtypes=FLOATS), B("hypot", dtypes=FLOATS), B("copysign", dtypes=FLOATS, grad=False),
    B("nextafter", dtypes=[F32, F64], grad=False), B("logaddexp", dtypes=FLOATS),
    B("logaddexp2", dtypes=FLOATS), B("heaviside", dtypes=FLOATS, grad=False),
    B("equal", dtypes=ALL, grad=False), B("not_equal", dtypes=ALL, grad=False), B("less", grad=False),
    B("less_equal", grad=False), B("greater", grad=False), B("greater_equal", grad=False),
    B("logical_and", dtypes=ALL, grad=False), B("logical_or", dtypes=ALL, grad=False),
    B("logical_xor", dtypes=ALL, grad=False),
    B("bitwise_and", dtypes=BOOL + INTS, grad=False), B("bitwise_or", dtypes=BOOL + INTS, grad=False),
    B("bitwise_xor", dtypes=BOOL + INTS, grad=False),
    B("gcd", dtypes=INTS, grad=False), B("lcm", dtypes=INTS, grad=False),
]

UNARY_SHAPES = [(), (0,), (5,), (2, 3), (2, 0, 3)]
BINARY_SHAPES = [((), ()), ((), (3,)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((0, 3), (3,)), ((2, 3), (2, 3)),
                 ((4, 1, 3), (2, 1))]


def np_eval(row, args, dtype):
    """NumPy's answer. float16 rows are computed in float32 and rounded, as graft (and JAX on a CPU)
    computes them: NumPy's own float16 loops lose more (sinc(0) is NaN in NumPy's float16)."""
    if dtype == F16:
        args = [a.astype(np.float32) if a.dtype == np.float16 else a for a in args]
    with np.errstate(all="ignore"):
        out = row.np_fn(*args)
    if dtype == F16 and np.asarray(out).dtype == np.float32:
        out = np.asarray(out, np.float16)
    return out


def round_like(want, dtype):
    """NumPy computes bfloat16 rows in float32: round its answer as graft's bfloat16 result is rounded."""
    want = np.asarray(want)
    if dtype == BF16 and want.dtype.kind == "f":
        return np.asarray(gnp.asarray(want.astype(np.float32), dtype=gnp.bfloat16).astype(gnp.float32))
    return want


def rows_by_dtype(rows, only=None):
    return [pytest.param(r, d, id=f"{r.name}-{d}") for r in rows for d in r.dtypes if only is None or d in only]


def run_values(row, dtype, shapes):
    rng = np.random.default_rng(abs(hash((row.name, dtype))) % 2**32)
    for shape in shapes:
        shape = shape if row.arity > 1 else (shape,)
        args = [draw(s, dtype, row.domain, rng) for s in shape]
        got = row.g_fn(*[to_graft(a, dtype) for a in args])
        want = round_like(np_eval(row, args, dtype), dtype)
        check_close(got, want, dtype, f"{row.name}{tuple(shape)} {dtype}", rtol=row.tol)


@pytest.mark.parametrize("row,dtype", rows_by_dtype(UNARY))
def test_unary_values(row, dtype):
    run_values(row, dtype, UNARY_SHAPES)


@pytest.mark.parametrize("row,dtype", rows_by_dtype(BINARY))
def test_binary_values(row, dtype):
    run_values(row, dtype, BINARY_SHAPES)


def special_inputs(dtype):
    x = np.array(SPECIALS, np.float64)
    if dtype == BF16:
        return x.astype(np.float32)
    return x.astype(dtype)


@pytest.mark.parametrize("row,dtype", [p for p in rows_by_dtype([r for r in UNARY if r.specials], FLOATS)
                                       if p.id not in ("nan_to_num-bfloat16", "nan_to_num-float16")])  # see below
def test_unary_nan_inf(row, dtype):
    x = special_inputs(dtype)
    got = row.g_fn(to_graft(x, dtype))
    want = round_like(np_eval(row, [x], dtype), dtype)
    check_close(got, want, dtype, f"{row.name}(specials) {dtype}", rtol=row.tol)


@pytest.mark.parametrize("dtype", [F16, BF16])
def test_nan_to_num_half_uses_its_own_range(dtype):
    # NumPy (computing half-precision rows in float32) would clamp to float32's max, which rounds to inf
    x = to_graft(np.array([np.nan, np.inf, -np.inf, 1.5], np.float32), dtype).astype(dtype)
    r = np.asarray(gnp.nan_to_num(x).astype(gnp.float32))
    big = float(gnp.finfo(dtype).max)
    assert r.tolist() == [0.0, big, -big, 1.5] and np.isfinite(big) and big < 1e39


@pytest.mark.parametrize("row,dtype", rows_by_dtype([r for r in BINARY if r.specials], FLOATS))
def test_binary_nan_inf(row, dtype):
    x = special_inputs(dtype)
    a, b = x[:, None], x[None, :]
    got = row.g_fn(to_graft(a, dtype), to_graft(b, dtype))
    want = round_like(np_eval(row, [a, b], dtype), dtype)
    check_close(got, want, dtype, f"{row.name}(specials) {dtype}", rtol=row.tol)


def numeric_grad(f, args, i, eps=1e-6):
    """Central differences of sum(f(*args)) with respect to args[i], elementwise."""
    x = args[i]
    g = np.zeros_like(x)
    flat = g.reshape(-1)
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = eps
        e = e.reshape(x.shape)
        hi = [a if j != i else a + e for j, a in enumerate(args)]
        lo = [a if j != i else a - e for j, a in enumerate(args)]
        flat[k] = (np.sum(np.asarray(f(*hi))) - np.sum(np.asarray(f(*lo)))) / (2 * eps)
    return g


@pytest.mark.parametrize("row", [r for r in UNARY + BINARY if r.grad and F64 in r.dtypes], ids=repr)
def test_grad_against_finite_differences(row):
    rng = np.random.default_rng(1)
    shapes = [(3,)] * row.arity if row.arity == 1 else [(2, 3), (3,)]
    args = [draw(s, F64, row.domain, rng) for s in shapes]
    for i in range(row.arity):
        g = gf.grad(lambda *a: gnp.sum(row.g_fn(*a)), argnums=i)(*[gnp.asarray(a) for a in args])
        want = numeric_grad(row.g_fn, args, i)
        np.testing.assert_allclose(np.asarray(g), want, rtol=row.grad_tol, atol=row.grad_tol,
                                   err_msg=f"d{row.name}/darg{i}")


@pytest.mark.parametrize("row,dtype", rows_by_dtype(UNARY + BINARY, (F32, "int32", "bool")))  # one per kind
def test_vmap_against_loop(row, dtype):
    rng = np.random.default_rng(2)
    args = [draw((4, 3), dtype, row.domain, rng) for _ in range(row.arity)]
    g = [to_graft(a, dtype) for a in args]
    got = gf.vmap(row.g_fn)(*g)
    want = np.stack([np.asarray(row.g_fn(*[to_graft(a[i], dtype) for a in args])) for i in range(4)])
    check_close(got, want, dtype, f"vmap {row.name}")
    if row.arity == 2:  # one batched operand, one broadcast
        got = gf.vmap(row.g_fn, in_axes=(0, None))(g[0], g[1][0])
        want = np.stack([np.asarray(row.g_fn(to_graft(args[0][i], dtype), g[1][0])) for i in range(4)])
        check_close(got, want, dtype, f"vmap(in_axes=(0, None)) {row.name}")


@pytest.mark.parametrize("row,dtype", rows_by_dtype(UNARY + BINARY))
def test_jit_against_eager(row, dtype):
    rng = np.random.default_rng(3)
    # the shapes of the special-value grid below, so that one compiled program serves both
    shapes = [(10,)] if row.arity == 1 else [(10, 10)] * 2
    args = [to_graft(draw(s, dtype, row.domain, rng), dtype) for s in shapes]
    eager = row.g_fn(*args)
    jitted = gf.jit(row.g_fn)(*args)
    assert str(jitted.dtype) == str(eager.dtype), f"jit {row.name}: {jitted.dtype} vs {eager.dtype}"
    check_close(jitted, np.asarray(eager), dtype, f"jit {row.name}", rtol=TOL[dtype] if dtype != F64 else 1e-14)
    if dtype in FLOATS and row.specials:
        x = to_graft(special_inputs(dtype), dtype)
        xs = [x] if row.arity == 1 else [gnp.broadcast_to(x[:, None], (10, 10)), gnp.broadcast_to(x[None, :], (10, 10))]
        check_close(gf.jit(row.g_fn)(*xs), np.asarray(row.g_fn(*xs)), dtype, f"jit {row.name}(specials)")


# ---- reductions ---------------------------------------------------------------------------------------------
class Red:
    """A reduction: NumPy's oracle, the dtypes, whether it takes keepdims / a tuple of axes, whether an
    empty reduction has a value (else both libraries raise), and whether it is differentiable."""

    def __init__(self, name, dtypes=NUMERIC, keepdims=True, multi_axis=True, empty_ok=True, grad=True,
                 nan_in=False, tol=None):
        self.name, self.dtypes, self.keepdims, self.multi_axis = name, dtypes, keepdims, multi_axis
        self.empty_ok, self.grad, self.nan_in, self.tol = empty_ok, grad, nan_in, tol
        self.np_fn, self.g_fn = getattr(np, name), getattr(gnp, name)

    def __repr__(self):
        return self.name


REDUCTIONS = [
    Red("sum", dtypes=ALL), Red("prod"), Red("mean"), Red("var"), Red("std"),
    Red("max", empty_ok=False), Red("min", empty_ok=False), Red("amax", empty_ok=False),
    Red("amin", empty_ok=False), Red("ptp", empty_ok=False, grad=False),
    Red("argmax", keepdims=True, multi_axis=False, empty_ok=False, grad=False),
    Red("argmin", keepdims=True, multi_axis=False, empty_ok=False, grad=False),
    Red("all", dtypes=ALL, grad=False), Red("any", dtypes=ALL, grad=False),
    Red("count_nonzero", dtypes=ALL, grad=False),
    Red("nansum", dtypes=FLOATS, nan_in=True), Red("nanprod", dtypes=FLOATS, nan_in=True),
    Red("nanmean", dtypes=FLOATS, nan_in=True), Red("nanvar", dtypes=FLOATS, nan_in=True),
    Red("nanstd", dtypes=FLOATS, nan_in=True), Red("nanmax", dtypes=FLOATS, nan_in=True, empty_ok=False),
    Red("nanmin", dtypes=FLOATS, nan_in=True, empty_ok=False),
    Red("median", dtypes=[F32, F64], grad=False), Red("nanmedian", dtypes=[F32, F64], nan_in=True, grad=False),
    Red("cumsum", keepdims=False, multi_axis=False), Red("cumprod", keepdims=False, multi_axis=False),
    Red("nancumsum", dtypes=FLOATS, keepdims=False, multi_axis=False, nan_in=True),
    Red("nancumprod", dtypes=FLOATS, keepdims=False, multi_axis=False, nan_in=True),
]

RED_CASES = [((5,), None), ((5,), 0), ((5,), -1), ((2, 3, 4), None), ((2, 3, 4), 1), ((2, 3, 4), -1),
             ((2, 3, 4), (0, 2)), ((2, 3, 4), (-1, 0)), ((), None), ((0,), None), ((2, 0), 1), ((2, 0), 0)]


def red_kwargs(red, axis, keepdims):
    kw = {"axis": axis}
    if keepdims and red.keepdims:
        kw["keepdims"] = True
    return kw


def red_cases(red):
    for shape, axis in RED_CASES:
        if isinstance(axis, tuple) and not red.multi_axis:
            continue
        if axis is not None and len(shape) == 0:
            continue
        for keepdims in ([False, True] if red.keepdims else [False]):
            yield shape, axis, keepdims


def red_input(red, shape, dtype, rng):
    x = draw(shape, dtype, "pos" if red.name in ("prod", "cumprod", "nanprod", "nancumprod") else "real", rng)
    if red.nan_in and x.size > 2:
        x = x.copy()
        x.reshape(-1)[:: 3] = np.nan
    return x


@pytest.mark.parametrize("red,dtype", [pytest.param(r, d, id=f"{r.name}-{d}") for r in REDUCTIONS for d in r.dtypes])
def test_reduction_values(red, dtype):
    rng = np.random.default_rng(4)
    for shape, axis, keepdims in red_cases(red):
        x = red_input(red, shape, dtype, rng)
        kw = red_kwargs(red, axis, keepdims)
        what = f"{red.name}{shape} {kw} {dtype}"
        empty = x.size == 0 if axis is None else any(shape[a] == 0 for a in np.atleast_1d(axis))
        if empty and not red.empty_ok:
            with pytest.raises(Exception):
                np.asarray(red.g_fn(to_graft(x, dtype), **kw))
            continue
        with np.errstate(all="ignore"), __import__("warnings").catch_warnings():
            __import__("warnings").simplefilter("ignore")
            xn = x.astype(np.float32) if dtype == F16 else x
            want = red.np_fn(xn, **kw)
        want = np.asarray(want)
        if dtype == F16 and want.dtype == np.float32:
            with np.errstate(over="ignore"):  # a product that overflows float16 is inf in both
                want = want.astype(np.float16)
        # sums in a low precision accumulate in float32 in graft (as in JAX): compare at the input's precision
        tol = red.tol or max(TOL[dtype], 1e-6 if dtype == F32 else 0)
        check_close(red.g_fn(to_graft(x, dtype), **kw), round_like(want, dtype), dtype, what,
                    rtol=tol * (8 if dtype in (F16, BF16) else 1))


@pytest.mark.parametrize("red", [r for r in REDUCTIONS if r.grad], ids=repr)
def test_reduction_grad_against_finite_differences(red):
    rng = np.random.default_rng(5)
    for shape, axis, keepdims in [((2, 3, 4), None, False), ((2, 3, 4), 1, True), ((2, 3, 4), -1, False),
                                  ((5,), 0, False)]:
        x = red_input(red, shape, F64, rng)
        kw = red_kwargs(red, axis, keepdims)
        f = lambda v: red.g_fn(v, **kw)  # noqa: E731
        w = draw(np.shape(np.asarray(f(x))), F64, "real", rng)  # a random cotangent
        g = gf.grad(lambda v: gnp.sum(f(v) * w))(gnp.asarray(x))
        want = numeric_grad(lambda v: np.asarray(f(v)) * w, [x], 0)
        np.testing.assert_allclose(np.asarray(g), want, rtol=1e-6, atol=1e-6, err_msg=f"d{red.name} {shape} {kw}")


@pytest.mark.parametrize("red", REDUCTIONS, ids=repr)
def test_reduction_vmap_and_jit(red):
    rng = np.random.default_rng(6)
    dtype = F32 if F32 in red.dtypes else red.dtypes[0]
    x = red_input(red, (3, 4, 5), dtype, rng)
    for axis, keepdims in [(None, False), (0, False), (-1, True), ((0, 1), False)]:
        if isinstance(axis, tuple) and not red.multi_axis:
            continue
        kw = red_kwargs(red, axis, keepdims)
        f = lambda v: red.g_fn(v, **kw)  # noqa: E731
        looped = np.stack([np.asarray(f(to_graft(x[i], dtype))) for i in range(3)])
        check_close(gf.vmap(f)(to_graft(x, dtype)), looped, dtype, f"vmap {red.name} {kw}", rtol=1e-5)
        eager = f(to_graft(x, dtype))
        jitted = gf.jit(f)(to_graft(x, dtype))
        assert str(jitted.dtype) == str(eager.dtype), f"jit {red.name} {kw}"
        check_close(jitted, np.asarray(eager), dtype, f"jit {red.name} {kw}", rtol=1e-5)


# ---- shapes, indexing, linear algebra products, sorting and sets --------------------------------------------
class Call:
    """`name(*arrays, **kwargs)` with arrays of the given shapes, the same call in NumPy and graft."""

    def __init__(self, name, shapes, dtypes=NUMERIC, grad=True, np_fn=None, vmap=True, int_args=(), jit=True,
                 **kwargs):
        # jit=False: the result's shape depends on the values, so jit must refuse with a clear error (as JAX)
        self.name, self.shapes, self.dtypes, self.grad, self.vmap, self.jit = name, shapes, dtypes, grad, vmap, jit
        self.kwargs, self.int_args = kwargs, int_args
        self.np_fn = np_fn or getattr(np, name)
        self.g_fn = getattr(gnp, name)
        self.id = name + "(" + ",".join("x".join(map(str, s)) or "s" for s in shapes) + \
            "".join(f",{k}={v}" for k, v in kwargs.items()) + ")"

    def args(self, dtype, rng):
        # int_args: positions holding indices into the first argument's leading axis
        out = []
        for i, s in enumerate(self.shapes):
            if i in self.int_args:
                out.append(rng.integers(0, self.shapes[0][self.kwargs.get("axis", 0) or 0], s).astype(np.int32))
            else:
                out.append(draw(s, dtype, "real", rng))
        return out


def _cast(dtype, args, call):
    return [a if i in call.int_args else to_graft(a, dtype) for i, a in enumerate(args)]


CALLS = [
    Call("transpose", [(2, 3, 4)], dtypes=ALL, axes=(2, 0, 1)), Call("transpose", [(2, 3)], dtypes=ALL),
    Call("moveaxis", [(2, 3, 4)], source=0, destination=-1), Call("swapaxes", [(2, 3, 4)], axis1=0, axis2=2),
    Call("squeeze", [(1, 3, 1)], axis=(0, 2)), Call("expand_dims", [(2, 3)], axis=(0, -1)),
    Call("flip", [(2, 3, 4)], dtypes=ALL, axis=(0, -1)), Call("flip", [(0, 3)]), Call("fliplr", [(2, 3)]),
    Call("flipud", [(2, 3)]), Call("rot90", [(2, 3)], k=3),
    Call("roll", [(2, 3, 4)], dtypes=ALL, shift=5, axis=-1), Call("roll", [(2, 3)], shift=-2),
    Call("roll", [(2, 3, 4)], shift=(1, -2), axis=(0, 2)),
    Call("tile", [(2, 3)], reps=(2, 1, 2)), Call("repeat", [(2, 3)], repeats=3, axis=1),
    Call("repeat", [(2, 3)], repeats=2), Call("clip", [(3, 4)], min=-1.0, max=0.5, np_fn=lambda a, min, max: np.clip(a, min, max)),
    Call("sort", [(3, 5)], axis=-1, grad=False), Call("sort", [(3, 5)], axis=0, grad=False),
    Call("diff", [(3, 6)]), Call("diff", [(3, 6)], n=2, axis=0), Call("triu", [(4, 5)], k=1),
    Call("tril", [(4, 5)], k=-1), Call("diag", [(4, 4)]), Call("diag", [(4,)], k=1),
    Call("diagonal", [(3, 4, 5)], offset=1, axis1=0, axis2=2), Call("trace", [(4, 5)], offset=-1),
    Call("outer", [(3,), (4,)]), Call("inner", [(2, 4), (3, 4)]), Call("dot", [(2, 3), (3, 4)]),
    Call("dot", [(3,), (3,)]), Call("matmul", [(2, 3, 4), (4, 5)]), Call("matmul", [(4,), (2, 4, 5)]),
    Call("vdot", [(6,), (6,)]), Call("tensordot", [(2, 3, 4), (4, 3, 5)], axes=([1, 2], [1, 0])),
    Call("kron", [(2, 3), (2, 2)]), Call("cross", [(4, 3), (4, 3)]),
    Call("take", [(5, 3), (4,)], int_args=(1,), axis=0), Call("cumsum", [(3, 4)], axis=1),
    Call("ravel", [(2, 3, 4)], dtypes=ALL), Call("atleast_2d", [(3,)]), Call("broadcast_to", [(3, 1)], shape=(2, 3, 4)),
    Call("pad", [(2, 3)], pad_width=((1, 2), (0, 1))), Call("pad", [(2, 3)], pad_width=1, mode="reflect"),
    Call("pad", [(2, 3)], pad_width=((1, 1), (2, 0)), mode="edge"),
    Call("pad", [(3,)], pad_width=2, mode="constant", constant_values=7),
    Call("append", [(2, 3), (1, 3)], axis=0), Call("delete", [(4, 3)], obj=1, axis=0),
    Call("insert", [(4, 3)], obj=2, values=5, axis=0), Call("resize", [(2, 3)], new_shape=(4, 4)),
    Call("trim_zeros", [(6,)], grad=False, vmap=False, jit=False), Call("round", [(3, 4)], decimals=2, grad=False),
    Call("cumprod", [(2, 4)], axis=0), Call("reshape", [(2, 3, 4)], dtypes=ALL, shape=(4, -1), np_fn=lambda a, shape: np.reshape(a, shape)),
    # the rarer ones
    Call("absolute", [(3, 4)]), Call("around", [(3, 4)], decimals=1, grad=False, dtypes=[F32, F64]),
    Call("fabs", [(3, 4)], dtypes=FLOATS), Call("real", [(3, 4)]), Call("imag", [(3, 4)], grad=False),
    Call("conj", [(3, 4)]), Call("angle", [(3, 4)], grad=False, dtypes=[F32, F64]),
    Call("isneginf", [(3, 4)], dtypes=FLOATS, grad=False), Call("isposinf", [(3, 4)], dtypes=FLOATS, grad=False),
    Call("isreal", [(3, 4)], grad=False), Call("bitwise_not", [(3, 4)], dtypes=BOOL + INTS, grad=False),
    Call("average", [(3, 4)], axis=1),
    Call("ediff1d", [(6,)]), Call("convolve", [(6,), (3,)]), Call("convolve", [(6,), (3,)], mode="same"),
    Call("convolve", [(6,), (3,)], mode="valid"), Call("correlate", [(6,), (3,)], mode="full"),
    Call("correlate", [(6,), (3,)]), Call("cov", [(3, 6)], dtypes=[F32, F64]), Call("corrcoef", [(3, 6)], dtypes=[F32, F64]),
    Call("cov", [(3, 6)], rowvar=False, ddof=0, dtypes=[F32, F64]), Call("diagflat", [(3,)], k=-1),
    Call("atleast_1d", [()]), Call("atleast_3d", [(3, 4)]), Call("rollaxis", [(2, 3, 4)], axis=2),
    Call("nanargmax", [(3, 5)], axis=1, grad=False, dtypes=FLOATS), Call("nanargmin", [(3, 5)], grad=False, dtypes=FLOATS),
    Call("percentile", [(3, 8)], q=30.0, axis=1, dtypes=[F32, F64], grad=False),
    Call("quantile", [(3, 8)], q=0.75, dtypes=[F32, F64], grad=False),
    Call("nanpercentile", [(3, 8)], q=60.0, axis=0, dtypes=[F32, F64], grad=False),
    Call("unwrap", [(8,)], dtypes=[F32, F64]), Call("vander", [(4,)], N=3), Call("vander", [(4,)], increasing=True),
    Call("polyval", [(3,), (5,)]), Call("polyder", [(5,)], vmap=False, dtypes=FLOATS),  # JAX: inexact for ints
    Call("polyint", [(4,)], vmap=False),
    Call("polyadd", [(3,), (5,)], vmap=False), Call("polysub", [(5,), (3,)], vmap=False),
    Call("polymul", [(3,), (4,)], vmap=False), Call("isclose", [(3, 4), (3, 4)], grad=False),
    Call("gradient", [(7,)]), Call("trapezoid", [(3, 6)], axis=-1, np_fn=lambda y, axis: np.trapz(y, axis=axis)),
    # aliases and the array API's names (NumPy 2 spellings: the oracle is the NumPy 1 function)
    Call("acos", [(3, 4)], grad=False, dtypes=[F32, F64], np_fn=np.arccos),
    Call("asin", [(3, 4)], grad=False, dtypes=[F32, F64], np_fn=np.arcsin),
    Call("atan", [(3, 4)], dtypes=FLOATS, np_fn=np.arctan), Call("asinh", [(3, 4)], dtypes=FLOATS, np_fn=np.arcsinh),
    Call("acosh", [(3, 4)], grad=False, dtypes=[F32, F64], np_fn=np.arccosh),
    Call("atanh", [(3, 4)], grad=False, dtypes=[F32, F64], np_fn=np.arctanh),
    Call("atan2", [(3, 4), (3, 4)], dtypes=[F32, F64], np_fn=np.arctan2),
    Call("pow", [(3, 4), (3, 4)], grad=False, dtypes=[F32, F64], np_fn=np.power),
    Call("conjugate", [(3, 4)]), Call("round_", [(3, 4)], decimals=1, grad=False, dtypes=[F32, F64], np_fn=np.round),
    Call("bitwise_invert", [(3, 4)], dtypes=BOOL + INTS, grad=False, np_fn=np.invert),
    Call("left_shift", [(3, 4), (3, 4)], dtypes=INTS, int_args=(1,), grad=False),
    Call("right_shift", [(3, 4), (3, 4)], dtypes=INTS, int_args=(1,), grad=False),
    Call("bitwise_left_shift", [(3, 4), (3, 4)], dtypes=INTS, int_args=(1,), grad=False, np_fn=np.left_shift),
    Call("bitwise_right_shift", [(3, 4), (3, 4)], dtypes=INTS, int_args=(1,), grad=False, np_fn=np.right_shift),
    Call("bitwise_count", [(3, 4)], dtypes=INTS, grad=False,
         np_fn=lambda a: np.vectorize(lambda v: bin(int(v)).count("1"))(np.abs(a)).astype(np.uint8)),
    Call("ldexp", [(3, 4), (3, 4)], dtypes=[F32, F64], int_args=(1,)),
    Call("cumulative_sum", [(3, 4)], axis=1, np_fn=lambda a, axis: np.cumsum(a, axis=axis)),
    Call("cumulative_prod", [(2, 4)], axis=0, np_fn=lambda a, axis: np.cumprod(a, axis=axis)),
    Call("cumproduct", [(2, 4)], axis=1, np_fn=lambda a, axis: np.cumprod(a, axis=axis)),
    Call("product", [(3, 4)], axis=0, np_fn=lambda a, axis: np.prod(a, axis=axis)),
    Call("matrix_transpose", [(2, 3, 4)], dtypes=ALL, np_fn=lambda a: np.swapaxes(a, -1, -2)),
    Call("permute_dims", [(2, 3, 4)], dtypes=ALL, axes=(2, 0, 1), np_fn=lambda a, axes: np.transpose(a, axes)),
    Call("matvec", [(2, 3, 4), (4,)], np_fn=lambda a, b: np.einsum("...ij,...j->...i", a, b)),
    Call("vecmat", [(4,), (2, 4, 3)], np_fn=lambda a, b: np.einsum("...i,...ij->...j", a, b)),
    Call("vecdot", [(2, 5), (2, 5)], np_fn=lambda a, b: np.sum(np.conj(a) * b, axis=-1)),
    Call("take_along_axis", [(3, 5), (3, 2)], int_args=(1,), axis=1),
    Call("argsort", [(3, 5)], axis=-1, grad=False, dtypes=[F32, F64]),
    Call("argsort", [(4, 3)], axis=0, grad=False, dtypes=INTS, np_fn=lambda a, axis: np.argsort(a, axis=axis, kind="stable")),
    Call("digitize", [(3, 4)], bins=[-1.0, 0.0, 1.5], grad=False, dtypes=[F32, F64]),
    Call("digitize", [(6,)], bins=[-1.0, 0.0, 1.5], right=True, grad=False, dtypes=[F64]),
    Call("nanquantile", [(3, 8)], q=0.3, axis=1, dtypes=[F32, F64], grad=False),
    Call("trapz", [(3, 6)], dx=0.5, np_fn=lambda y, dx: np.trapz(y, dx=dx)),
    Call("copy", [(3, 4)], dtypes=ALL), Call("ones_like", [(3, 4)], dtypes=ALL), Call("zeros_like", [(2, 3)], dtypes=ALL),
    Call("full_like", [(2, 3)], fill_value=2.5, dtypes=[F32, F64]),
    Call("array_equal", [(3, 4), (3, 4)], dtypes=ALL, grad=False), Call("allclose", [(3, 4), (3, 4)], grad=False),
    Call("array_equiv", [(3, 4), (4,)], dtypes=ALL, grad=False),
    Call("isin", [(3, 4), (5,)], dtypes=INTS + [F64], grad=False),
    Call("histogram_bin_edges", [(10,)], bins=4, dtypes=[F32, F64], grad=False, vmap=False),
    Call("unique", [(8,)], dtypes=[F32, F64], grad=False, vmap=False, jit=False),
    Call("flatnonzero", [(3, 4)], dtypes=ALL, grad=False, vmap=False, jit=False),
    Call("argwhere", [(3, 4)], dtypes=ALL, grad=False, vmap=False, jit=False),
    # constructors (no array operands)
    Call("linspace", [], dtypes=[F64], vmap=False, start=0.0, stop=1.0, num=5),
    Call("linspace", [], dtypes=[F64], vmap=False, start=2.0, stop=3.0, num=4, endpoint=False),
    Call("logspace", [], dtypes=[F64], vmap=False, start=0.0, stop=2.0, num=4),
    Call("geomspace", [], dtypes=[F64], vmap=False, start=1.0, stop=1000.0, num=4),
    Call("arange", [], dtypes=[F64], vmap=False, start=1, stop=8, step=2),
    Call("eye", [], dtypes=[F64], vmap=False, N=3, M=4, k=1), Call("identity", [], dtypes=[F64], vmap=False, n=3),
    Call("tri", [], dtypes=[F64], vmap=False, N=3, M=4, k=-1),
    Call("ones", [], dtypes=[F64], vmap=False, shape=(2, 3)), Call("zeros", [], dtypes=[F64], vmap=False, shape=(3,)),
]


@pytest.mark.parametrize("call,dtype", [pytest.param(c, d, id=f"{c.id}-{d}") for c in CALLS for d in c.dtypes])
def test_call_values(call, dtype):
    rng = np.random.default_rng(7)
    args = call.args(dtype, rng)
    with np.errstate(all="ignore"):
        want = call.np_fn(*[a.astype(np.float32) if dtype == F16 and a.dtype == np.float16 else a for a in args],
                          **call.kwargs)
    want = np.asarray(want)
    if dtype == F16 and want.dtype == np.float32:
        want = want.astype(np.float16)
    got = call.g_fn(*_cast(dtype, args, call), **call.kwargs)
    check_close(got, round_like(want, dtype), dtype, f"{call.id} {dtype}", rtol=max(TOL[dtype], 1e-6 if dtype == F32 else 0) * (4 if dtype in (F16, BF16) else 1))


@pytest.mark.parametrize("call", [c for c in CALLS if c.grad], ids=lambda c: c.id)
def test_call_grad_against_finite_differences(call):
    rng = np.random.default_rng(8)
    args = call.args(F64, rng)
    f = lambda *a: call.g_fn(*a, **call.kwargs)  # noqa: E731
    w = draw(np.shape(np.asarray(f(*_cast(F64, args, call)))), F64, "real", rng)
    for i in range(len(args)):
        if i in call.int_args:
            continue
        g = gf.grad(lambda *a: gnp.sum(f(*a) * w), argnums=i)(*_cast(F64, args, call))
        want = numeric_grad(lambda *a: np.asarray(f(*_cast(F64, a, call))) * w, args, i)
        np.testing.assert_allclose(np.asarray(g), want, rtol=1e-6, atol=1e-6, err_msg=f"d{call.id}/darg{i}")


@pytest.mark.parametrize("call", CALLS, ids=lambda c: c.id)
def test_call_vmap_and_jit(call):
    rng = np.random.default_rng(9)
    dtype = F32 if F32 in call.dtypes else call.dtypes[0]
    args = call.args(dtype, rng)
    f = lambda *a: call.g_fn(*a, **call.kwargs)  # noqa: E731
    ga = _cast(dtype, args, call)
    eager = f(*ga)
    if not call.jit:
        with pytest.raises(gf.ConcretizationError):
            gf.jit(f)(*ga)
        return
    jitted = gf.jit(f)(*ga)
    assert str(jitted.dtype) == str(eager.dtype), f"jit {call.id}"
    check_close(jitted, np.asarray(eager), dtype, f"jit {call.id}", rtol=1e-6)
    if call.vmap:  # a batch of 3 in front of the first operand
        xs = np.stack([call.args(dtype, rng)[0] for _ in range(3)])
        g = lambda v: f(v, *ga[1:])  # noqa: E731
        looped = np.stack([np.asarray(g(to_graft(xs[i], dtype))) for i in range(3)])
        check_close(gf.vmap(g)(to_graft(xs, dtype)), looped, dtype, f"vmap {call.id}", rtol=1e-6)


# ---- functions of lists, and the static-size forms that work under jit --------------------------------------
@pytest.mark.parametrize("name", ["concatenate", "stack", "hstack", "vstack", "dstack", "column_stack"])
@pytest.mark.parametrize("dtype", ["bool", "int32", F32, F64])
def test_functions_of_lists(name, dtype):
    rng = np.random.default_rng(10)
    xs = [draw((2, 3), dtype, "real", rng) for _ in range(3)]
    for kw in ([{}, {"axis": 1}, {"axis": -1}] if name in ("concatenate", "stack") else [{}]):
        want = getattr(np, name)(xs, **kw)
        check_close(getattr(gnp, name)([gnp.asarray(x) for x in xs], **kw), want, dtype, f"{name} {kw}")
        check_close(gf.jit(lambda *a: getattr(gnp, name)(list(a), **kw))(*[gnp.asarray(x) for x in xs]), want,
                    dtype, f"jit {name} {kw}")


@pytest.mark.parametrize("dtype", ["int32", F32])
def test_argsort_is_stable_and_searchsorted_matches(dtype):
    rng = np.random.default_rng(11)
    x = rng.integers(0, 4, (3, 9)).astype(dtype)  # many ties
    for axis in (0, -1):
        np.testing.assert_array_equal(np.asarray(gnp.argsort(gnp.asarray(x), axis=axis)),
                                      np.argsort(x, axis=axis, kind="stable"))
    a = np.sort(rng.integers(0, 10, 12)).astype(dtype)
    v = rng.integers(-1, 11, 7).astype(dtype)
    for side in ("left", "right"):
        np.testing.assert_array_equal(np.asarray(gnp.searchsorted(gnp.asarray(a), gnp.asarray(v), side=side)),
                                      np.searchsorted(a, v, side=side))


def test_static_size_forms_under_jit():
    x = np.array([[0, 3, 0], [1, 0, 2]], np.int32)
    u = np.array([3, 1, 3, 2, 1, 1], np.int32)
    # nonzero / argwhere / flatnonzero / unique with size= and fill_value= are jittable, as in JAX
    f = gf.jit(lambda v: gnp.nonzero(v, size=5, fill_value=-1))
    for got, want in zip(f(gnp.asarray(x)), np.nonzero(x)):
        np.testing.assert_array_equal(np.asarray(got), np.concatenate([want, [-1, -1]]))
    np.testing.assert_array_equal(np.asarray(gf.jit(lambda v: gnp.argwhere(v, size=4))(gnp.asarray(x))),
                                  np.concatenate([np.argwhere(x), np.zeros((1, 2), int)]))
    np.testing.assert_array_equal(np.asarray(gf.jit(lambda v: gnp.flatnonzero(v, size=2))(gnp.asarray(x))),
                                  np.flatnonzero(x)[:2])
    np.testing.assert_array_equal(np.asarray(gf.jit(lambda v: gnp.unique(v, size=4, fill_value=0))(gnp.asarray(u))),
                                  [1, 2, 3, 0])
    # eagerly, without size=, the shapes follow the values
    np.testing.assert_array_equal(np.asarray(gnp.unique(gnp.asarray(u))), np.unique(u))
    # and under jit without size=, a clear error
    with pytest.raises(gf.ConcretizationError):
        gf.jit(lambda v: gnp.nonzero(v))(gnp.asarray(x))


def test_where_select_interp_against_numpy():
    rng = np.random.default_rng(12)
    c = rng.integers(0, 2, (3, 4)).astype(bool)
    a, b = rng.normal(size=(3, 4)), rng.normal(size=(4,))
    check_close(gnp.where(c, a, b), np.where(c, a, b), F64, "where")
    check_close(gnp.where(c, 1.0, 0), np.where(c, 1.0, 0), F64, "where(scalars)")
    conds = [a > 0.5, a < -0.5]
    check_close(gnp.select(conds, [a, -a], default=7.0), np.select(conds, [a, -a], default=7.0), F64, "select")
    xp = np.sort(rng.uniform(0, 10, 8))
    fp = rng.normal(size=8)
    xq = rng.uniform(-1, 11, 20)
    check_close(gnp.interp(xq, xp, fp), np.interp(xq, xp, fp), F64, "interp")
    check_close(gnp.interp(xq, xp, fp, left=-5.0, right=5.0), np.interp(xq, xp, fp, left=-5.0, right=5.0), F64,
                "interp(left, right)")


@pytest.mark.parametrize("size", [1, 3, 8])
def test_unique_with_size_matches_numpy_eagerly_and_under_jit(size):
    rng = np.random.default_rng(13)
    for shape in [(7,), (3, 4), (0,)]:
        x = rng.integers(0, 5, shape).astype(np.int32)
        vals, index, inverse, counts = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
        k = min(size, vals.size)
        fv = vals[0] if vals.size else 0
        f = lambda v: gnp.unique(v, size=size, return_index=True, return_inverse=True, return_counts=True)  # noqa
        for got in (f(gnp.asarray(x)), gf.jit(f)(gnp.asarray(x))):
            g = [np.asarray(a) for a in got]
            np.testing.assert_array_equal(g[0], np.concatenate([vals[:k], np.full(size - k, fv)]))
            np.testing.assert_array_equal(g[1], np.concatenate([index[:k], np.zeros(size - k, int)]))
            np.testing.assert_array_equal(g[3], np.concatenate([counts[:k], np.zeros(size - k, int)]))
            np.testing.assert_array_equal(g[2], inverse.reshape(x.shape))


def test_nanargmax_of_an_all_nan_slice_is_minus_one():
    # JAX's answer (NumPy raises): -1 where every entry is NaN, under jit too
    x = np.array([[1.0, np.nan, 3.0], [np.nan] * 3], np.float64)
    for f in (gnp.nanargmax, gf.jit(gnp.nanargmax, static_argnums=1)):
        np.testing.assert_array_equal(np.asarray(f(gnp.asarray(x), 1)), [2, -1])
    np.testing.assert_array_equal(np.asarray(gnp.nanargmin(gnp.asarray(x), 1, keepdims=True)), [[0], [-1]])


# ---- functions that return several arrays, take functions or lists, or write in place in NumPy ----------------
# Each row is the same call written once for both modules (m is graft.numpy or NumPy, a() makes m's array),
# compared element by element; jit=True rows must also give the same under jit (their shapes do not depend
# on the values). NumPy 1.24 is the oracle, so NumPy 2 names get NumPy 1 spellings on its side.
_R = np.random.default_rng(11)
_X, _Y = _R.uniform(-3, 3, (4, 6)), _R.uniform(-3, 3, (4, 6))
_NZ = _R.uniform(0.5, 2, (4, 6)) * _R.choice([-1.0, 1.0], (4, 6))
_V, _W = _R.uniform(-3, 3, 7), _R.uniform(-3, 3, 5)
_I, _J = _R.integers(0, 6, 9).astype(np.int32), _R.integers(0, 6, 7).astype(np.int32)
_CUBE = _R.uniform(-1, 1, (2, 3, 4))


def _is_np(m):
    return m is np


def _unstack(m, a):
    return m.unstack(a, axis=1) if not _is_np(m) else tuple(np.moveaxis(a, 1, 0))


def _unique_counts(m, a):
    if _is_np(m):
        return np.unique(a, return_counts=True)
    r = m.unique_counts(a)
    return r.values, r.counts


def _unique_inverse(m, a):
    if _is_np(m):
        return np.unique(a, return_inverse=True)
    r = m.unique_inverse(a)
    return r.values, r.inverse_indices


def _polydiv(m, u, v):
    q, r = m.polydiv(u, v)
    return (q, np.concatenate([np.zeros(len(u) - len(r)), r])) if _is_np(m) else (q, r)


def _float_counts(m, r):
    return (r[0].astype(np.float64),) + tuple(r[1:]) if _is_np(m) else r


def _flat_hist(m, r):
    h, edges = r
    return (h.astype(np.float64) if _is_np(m) else h, *edges)


def _unique_all(m, a):
    if _is_np(m):
        return np.unique(a, return_index=True, return_inverse=True, return_counts=True)
    r = m.unique_all(a)
    return r.values, r.indices, r.inverse_indices, r.counts


def _top_k(m, a, k):
    if _is_np(m):
        idx = np.argsort(-a, axis=-1, kind="stable")[..., :k]
        return np.take_along_axis(a, idx, -1), idx
    return m.top_k(a, k)


def _in_place(name, m, a, *args, **kwargs):
    """NumPy's in-place `name` on a copy of a; graft's (as JAX's) returns the result (inplace=False)."""
    if _is_np(m):
        out = a.copy()
        getattr(np, name)(out, *args, **kwargs)
        return out
    return getattr(m, name)(a, *args, inplace=False, **kwargs)


def _partitioned(m, x, kth, arg):
    """(partition / argpartition): the kth entry along the last axis, the sorted entries before it and the
    sorted ones after it -- what NumPy and JAX agree on (the order within each side is unspecified)."""
    if arg:
        idx = m.argpartition(x, kth, axis=-1)
        r = m.take_along_axis(x, idx, axis=-1)
    else:
        r = m.partition(x, kth, axis=-1)
    return m.sort(r[..., :kth], axis=-1), r[..., kth], m.sort(r[..., kth + 1:], axis=-1)


def _astype(m, x, d):
    return x.astype(d) if _is_np(m) else m.astype(x, d)


def _shape_dtype(m, x):
    """empty / empty_like: the contents are unspecified; the shape and the dtype's kind are not."""
    return np.array(x.shape), np.array(np.dtype(str(x.dtype)).kind == "f")


MULTI = [
    ("partition", lambda m, a: _partitioned(m, a(_X), 2, arg=False), True),
    ("argpartition", lambda m, a: _partitioned(m, a(_X), 4, arg=True), True),
    ("array", lambda m, a: m.array(_X), True), ("asarray", lambda m, a: m.asarray(_CUBE), True),
    ("astype", lambda m, a: _astype(m, a(_X), "int32"), True),
    ("concatenate", lambda m, a: m.concatenate([a(_X), a(_Y)], axis=0), True),
    ("stack", lambda m, a: m.stack([a(_X), a(_Y)], axis=-1), True),
    ("hstack", lambda m, a: m.hstack([a(_V), a(_W)]), True), ("vstack", lambda m, a: m.vstack([a(_X), a(_Y)]), True),
    ("dstack", lambda m, a: m.dstack([a(_X), a(_Y)]), True),
    ("column_stack", lambda m, a: m.column_stack([a(_V[:5]), a(_W)]), True),
    ("full", lambda m, a: m.full((2, 3), 1.5), True), ("empty", lambda m, a: _shape_dtype(m, m.empty((2, 3))), False),
    ("empty_like", lambda m, a: _shape_dtype(m, m.empty_like(a(_X))), False),
    ("where", lambda m, a: m.where(a(_X) > 0, a(_X), a(_Y)), True),
    ("where_one_argument", lambda m, a: m.where(a(_X) > 1), False),
    ("select", lambda m, a: m.select([a(_X) > 1, a(_X) < -1], [a(_X), a(_Y)], 0.5), True),
    ("interp", lambda m, a: m.interp(a(_V), a(np.sort(_W)), a(_W ** 2)), True),
    ("size", lambda m, a: np.array([m.size(a(_CUBE)), m.size(a(_CUBE), 1)]), False),
    ("from_dlpack", lambda m, a: m.from_dlpack(_V), False),
    ("frombuffer", lambda m, a: m.frombuffer(_V.astype(np.float32).tobytes(), dtype=m.float32), False),
    ("fromstring", lambda m, a: m.fromstring("1.5 2 -3", sep=" ", dtype=m.float32), False),
    ("fromiter", lambda m, a: m.fromiter((k * k for k in range(5)), dtype=m.float32), False),
    ("einsum_path", lambda m, a: np.array(m.einsum_path("ij,jk,kl->il", _X, _X.T, _X, optimize="greedy")[0][1:]), False),
    ("divmod", lambda m, a: m.divmod(a(_X), a(_NZ)), True),
    ("frexp", lambda m, a: m.frexp(a(_X)), True),
    ("modf", lambda m, a: m.modf(a(_X)), True),
    ("split", lambda m, a: m.split(a(_X), 3, axis=1), True),
    ("split_at", lambda m, a: m.split(a(_X), [1, 4], axis=1), True),
    ("array_split", lambda m, a: m.array_split(a(_X), 4, axis=1), True),
    ("hsplit", lambda m, a: m.hsplit(a(_X), 2), True),
    ("vsplit", lambda m, a: m.vsplit(a(_X), 2), True),
    ("dsplit", lambda m, a: m.dsplit(a(_CUBE), 2), True),
    ("meshgrid", lambda m, a: m.meshgrid(a(_V), a(_W)), True),
    ("meshgrid_ij", lambda m, a: m.meshgrid(a(_V), a(_W), indexing="ij"), True),
    ("broadcast_arrays", lambda m, a: m.broadcast_arrays(a(_X[:, :1]), a(_Y[:1])), True),
    ("unstack", lambda m, a: _unstack(m, a(_X)), True),
    ("diag_indices", lambda m, a: m.diag_indices(3), True),
    ("diag_indices_from", lambda m, a: m.diag_indices_from(a(_X[:4, :4])), True),
    ("tril_indices", lambda m, a: m.tril_indices(4, -1), True),
    ("triu_indices", lambda m, a: m.triu_indices(4, 1, 5), True),
    ("tril_indices_from", lambda m, a: m.tril_indices_from(a(_X)), True),
    ("triu_indices_from", lambda m, a: m.triu_indices_from(a(_X), 2), True),
    ("nonzero", lambda m, a: m.nonzero(a(_X) > 0), False),
    ("indices", lambda m, a: m.indices((2, 3)), True),
    ("ix_", lambda m, a: m.ix_(a(np.array([0, 2])), a(np.array([1, 3, 4]))), True),
    ("unravel_index", lambda m, a: m.unravel_index(a(np.array([3, 7, 11])), (3, 4)), True),
    ("ravel_multi_index", lambda m, a: m.ravel_multi_index((a(np.array([0, 2, 1])), a(np.array([3, 1, 0]))), (3, 4)),
     True),
    # JAX's polydiv keeps the remainder at u's length (trim_leading_zeros=False); JAX's histogram counts are floats
    ("polydiv", lambda m, a: _polydiv(m, a(np.array([1.0, -3.0, 2.0, 5.0])), a(np.array([2.0, 1.0]))), True),
    ("histogram", lambda m, a: _float_counts(m, m.histogram(a(_V), bins=4)), True),
    ("histogram_range_weights", lambda m, a: m.histogram(a(_V), bins=3, range=(-2.0, 2.0), weights=a(_V * _V)), True),
    ("histogram2d", lambda m, a: _float_counts(m, m.histogram2d(a(_V), a(_V[::-1]), bins=3)), True),
    ("unique_counts", lambda m, a: _unique_counts(m, a(_I)), False),
    ("unique_inverse", lambda m, a: _unique_inverse(m, a(_I)), False),
    ("intersect1d", lambda m, a: m.intersect1d(a(_I), a(_J)), False),
    ("union1d", lambda m, a: m.union1d(a(_I), a(_J)), False),
    ("setdiff1d", lambda m, a: m.setdiff1d(a(_I), a(_J)), False),
    ("setxor1d", lambda m, a: m.setxor1d(a(_I), a(_J)), False),
    ("in1d", lambda m, a: m.in1d(a(_I), a(_J)), True),
    ("lexsort", lambda m, a: m.lexsort((a(_I), a(_I % 3))), True),
    ("searchsorted", lambda m, a: m.searchsorted(a(np.sort(_V)), a(_W)), True),
    ("searchsorted_right", lambda m, a: m.searchsorted(a(np.sort(_I)), a(_J), side="right"), True),
    ("polyfit", lambda m, a: m.polyfit(a(_V), a(_V ** 3 - _V), 3), True),
    ("poly", lambda m, a: m.poly(a(np.array([1.0, -2.0, 0.5]))), True),
    ("einsum", lambda m, a: m.einsum("ij,kj->ik", a(_X), a(_Y)), True),
    ("einsum_trace", lambda m, a: m.einsum("ii->", a(_X[:4, :4])), True),
    ("einsum_diagonal", lambda m, a: m.einsum("ij,jj->i", a(_X[:, :4]), a(_Y[:4, :4])), True),
    ("block", lambda m, a: m.block([[a(_X[:2, :2]), a(_Y[:2, :3])], [a(_X[2:, :2]), a(_Y[2:, :3])]]), True),
    ("choose", lambda m, a: m.choose(a(np.array([0, 1, 1, 0])), [a(_V[:4]), a(_W[:4])]), True),
    ("extract", lambda m, a: m.extract(a(_X > 0), a(_Y)), False),
    ("compress", lambda m, a: m.compress(a(np.array([True, False, True, True])), a(_X), axis=0), False),
    ("bincount", lambda m, a: m.bincount(a(_I)), False),
    ("bincount_weights", lambda m, a: m.bincount(a(_I), weights=a(_V[:7].repeat(2)[:9]), minlength=8), False),
    ("packbits", lambda m, a: m.packbits(a(_X > 0), axis=1), True),
    ("unpackbits", lambda m, a: m.unpackbits(a(np.array([3, 200, 17], np.uint8))), True),
    ("apply_along_axis", lambda m, a: m.apply_along_axis(lambda v: (v * v).sum(), 1, a(_X)), True),
    ("apply_over_axes", lambda m, a: m.apply_over_axes(m.sum, a(_CUBE), [0, 2]), True),
    ("piecewise", lambda m, a: m.piecewise(a(_V), [a(_V < 0), a(_V >= 0)], [lambda v: -v, lambda v: v * 2]), True),
    ("vectorize", lambda m, a: m.vectorize(lambda p, q: p * q + 1)(a(_X), a(_Y)), True),
    ("fromfunction", lambda m, a: m.fromfunction(lambda i, j: i * 10 + j, (3, 4), dtype=float), True),
    ("hamming", lambda m, a: m.hamming(7), True), ("hanning", lambda m, a: m.hanning(6), True),
    ("bartlett", lambda m, a: m.bartlett(7), True), ("blackman", lambda m, a: m.blackman(6), True),
    ("kaiser", lambda m, a: m.kaiser(7, 5.0), True),
    ("concat", lambda m, a: (np.concatenate if _is_np(m) else m.concat)([a(_X), a(_Y)], axis=1), True),
    ("row_stack", lambda m, a: m.row_stack([a(_V[:5]), a(_W)]), True),
    ("histogramdd", lambda m, a: _flat_hist(m, m.histogramdd(a(np.stack([_V, _V ** 2], 1)), bins=(2, 3))), True),
    ("unique_values", lambda m, a: np.unique(a(_I)) if _is_np(m) else m.unique_values(a(_I)), False),
    ("unique_all", lambda m, a: _unique_all(m, a(_I)), False),
    ("top_k", lambda m, a: _top_k(m, a(_X), 3), True),
    ("mask_indices", lambda m, a: m.mask_indices(4, m.triu, 1), False),  # nonzero inside, as JAX's
    ("ndim", lambda m, a: m.ndim(a(_CUBE)), False), ("shape", lambda m, a: m.shape(a(_CUBE)), False),
    ("fill_diagonal", lambda m, a: _in_place("fill_diagonal", m, a(_X), 7.0), True),
    ("put", lambda m, a: _in_place("put", m, a(_X), a(np.array([0, 5, 23])), a(np.array([9.0, 8.0, 7.0]))), True),
    ("place", lambda m, a: _in_place("place", m, a(_X), a(_X > 1), a(np.array([-1.0, -2.0]))), False),
    ("put_along_axis", lambda m, a: _in_place("put_along_axis", m, a(_X), a(np.array([[0], [2], [5], [1]])),
                                                     a(np.array([[1.0], [2.0], [3.0], [4.0]])), axis=1), True),
]


def _as_list(r):
    if isinstance(r, (tuple, list)):
        return [x for x in r]
    return [r]


@pytest.mark.parametrize("name,fn,jittable", MULTI, ids=[m[0] for m in MULTI])
def test_multi_output_and_functional_calls(name, fn, jittable):
    with np.errstate(all="ignore"):
        want = _as_list(fn(np, lambda x: x))
    got = _as_list(fn(gnp, gnp.asarray))
    assert len(got) == len(want), f"{name}: {len(got)} results, NumPy {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        check_close(g, np.asarray(w), F64, f"{name} result {k}", rtol=1e-10, atol=1e-10)
    if jittable:
        jitted = _as_list(gf.jit(lambda: fn(gnp, gnp.asarray))())
        for k, (j, g) in enumerate(zip(jitted, got)):
            check_close(j, np.asarray(g), F64, f"jit {name} result {k}", rtol=1e-12, atol=1e-12)


# The dtype utilities, against NumPy where JAX agrees with it and against JAX's lattice where JAX differs on
# purpose (no 64-bit default, weak Python scalars).
def test_dtype_utilities():
    assert gnp.dtype("float32") == np.dtype("float32") and gnp.dtype(gnp.int32) == np.dtype("int32")
    assert str(gnp.dtype("bfloat16")) == "bfloat16"
    assert gnp.broadcast_shapes((2, 1), (3,), (1, 1, 1)) == np.broadcast_shapes((2, 1), (3,), (1, 1, 1))
    with pytest.raises(ValueError):
        gnp.broadcast_shapes((2,), (3,))
    for f, t in [("int32", "float32"), ("float32", "int32"), ("int8", "int32"), ("float32", "float64"), ("bool", "int8")]:
        assert gnp.can_cast(f, t) == np.can_cast(f, t) or (f, t) == ("int32", "float32"), (f, t)
    assert gnp.can_cast("int32", "float32")  # JAX's lattice: i32 promotes to f32
    assert gnp.finfo(gnp.float32).eps == np.finfo(np.float32).eps and gnp.finfo("float16").max == np.finfo("float16").max
    assert gnp.finfo("bfloat16").eps == 2.0 ** -7
    assert gnp.iinfo(gnp.int32).max == np.iinfo(np.int32).max and gnp.iinfo("uint8").min == 0
    assert gnp.isdtype(gnp.float32, "real floating") and not gnp.isdtype(gnp.int32, "real floating")
    assert gnp.isdtype(gnp.int32, ("integral", "bool")) and gnp.isdtype(gnp.bool_, "bool")
    for a, b in [(np.float32, np.floating), (np.int32, np.integer), (np.int32, np.floating), (np.uint8, np.signedinteger)]:
        assert gnp.issubdtype(a, b) == np.issubdtype(a, b), (a, b)
    assert gnp.issubdtype("bfloat16", np.floating)
    assert gnp.promote_types("int8", "int16") == np.promote_types("int8", "int16")
    assert gnp.promote_types("int32", "float32") == np.dtype("float32")  # NumPy: float64
    assert gnp.promote_types("bfloat16", "float16") == np.dtype("float32")
    # a weak Python float with an int32: the default float (JAX: float64 under x64, the suite's mode)
    assert gnp.result_type(gnp.int32, 1.0) == np.dtype("float64" if gf.config.jax_enable_x64 else "float32")
    assert gnp.result_type(gnp.asarray(np.ones(2, np.float32)), 2) == np.dtype("float32")
    for v in [3.0, 1, np.float32(2), [1.0]]:
        assert gnp.isscalar(v) == np.isscalar(v), v
    # JAX's: a 0-d array is a scalar, a string is not
    assert gnp.isscalar(gnp.asarray(1.0)) and not gnp.isscalar("s") and not gnp.isscalar(gnp.asarray([1.0]))
    for v in [[1], (), "ab", 3, gnp.asarray([1.0])]:
        assert gnp.iterable(v) == np.iterable(v) or isinstance(v, gf.Array), v
    z = np.array([1 + 1j, 2.0, -3j])
    np.testing.assert_array_equal(np.asarray(gnp.iscomplex(gnp.asarray(z))), np.iscomplex(z))
    assert gnp.iscomplexobj(gnp.asarray(z)) and not gnp.iscomplexobj(gnp.asarray([1.0]))
    assert gnp.isrealobj(gnp.asarray([1.0])) and not gnp.isrealobj(gnp.asarray(z))


# save / savez / load / fromfile write NumPy's formats: files NumPy reads, and read files NumPy writes.
def test_file_io_against_numpy(tmp_path):
    x = _X.astype(np.float32)
    gnp.save(tmp_path / "g.npy", gnp.asarray(x))
    np.testing.assert_array_equal(np.load(tmp_path / "g.npy"), x)
    np.save(tmp_path / "n.npy", _CUBE)
    np.testing.assert_allclose(np.asarray(gnp.load(tmp_path / "n.npy")), _CUBE.astype(np.float32), rtol=1e-7)
    gnp.savez(tmp_path / "g.npz", a=gnp.asarray(x), b=gnp.asarray(_I))
    with np.load(tmp_path / "g.npz") as f:
        np.testing.assert_array_equal(f["a"], x)
        np.testing.assert_array_equal(f["b"], _I)
    x.tofile(tmp_path / "raw.bin")
    np.testing.assert_array_equal(np.asarray(gnp.fromfile(tmp_path / "raw.bin", dtype=gnp.float32)).reshape(4, 6), x)
