"""The conformance suite's complex, linear-algebra and FFT rows (issue 33), in the style of
test_numpy_conformance.py: one table row per function, each run over complex64 and complex128 (linear
algebra and FFT rows over float32 / float64 too), against NumPy / SciPy; then per row its derivative against
central differences in complex128 (or float64), `vmap` against a Python loop and `jit` against eager.

Derivatives follow JAX's conventions: for a real-valued loss L of complex inputs z = x + iy, grad(L) is
dL/dx - i dL/dy (the conjugate of the gradient in the real-pair sense), checked by differences along
both the real and the imaginary direction; holomorphic rows also check grad(f, holomorphic=True) = f'(z).
Decompositions are compared through what does not depend on a choice of signs or phases (values,
reconstructions, |vectors|), since LAPACK builds are free to choose those.
"""
import warnings
import zlib

import numpy as np
import pytest

import graft as gf
import graft.numpy as gnp
import graft.numpy.linalg as gla
from graft import lax

sla = pytest.importorskip("scipy.linalg")

C64, C128, F32, F64 = "complex64", "complex128", "float32", "float64"
COMPLEX = [C64, C128]
TOL = {C64: 2e-5, C128: 1e-12, F32: 2e-5, F64: 1e-12}


def seed(*parts):
    """A seed fixed by the row's name (Python's hash of a string changes from process to process)."""
    return zlib.crc32(repr(parts).encode())


def rand(shape, dtype, rng, lo=-2.0, hi=2.0):
    x = rng.uniform(lo, hi, shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.uniform(lo, hi, shape)
    return x.astype(dtype)


def check(got, want, dtype, what, tol=None):
    got_np, want = np.asarray(got), np.asarray(want)
    assert got_np.shape == want.shape, f"{what}: shape {got_np.shape}, NumPy {want.shape}"
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got_np, want, err_msg=what)
        return
    assert got_np.dtype.kind == want.dtype.kind or want.dtype.kind == "f" and got_np.dtype.kind == "c" and \
        np.all(got_np.imag == 0), f"{what}: dtype {got_np.dtype}, NumPy {want.dtype}"
    t = TOL[dtype] if tol is None else tol
    scale = max(1.0, float(np.max(np.abs(want[np.isfinite(want)]), initial=0.0)))
    got_c, want_c = got_np.astype(np.complex128), want.astype(np.complex128)
    with np.errstate(invalid="ignore"):  # NumPy's comparison of infinite values
        # part by part: equal_nan on complex values would skip every position where either part is NaN
        for part in (np.real, np.imag):
            np.testing.assert_allclose(part(got_c), part(want_c), rtol=t, atol=t * scale, equal_nan=True,
                                       err_msg=what)


def complex_fd_grad(loss, z, eps=1e-6):
    """JAX's grad of a real-valued loss at complex z: dL/dx - i dL/dy, by central differences."""
    g = np.zeros(z.shape, np.complex128)
    flat = g.reshape(-1)
    directions = ((1.0, 1.0), (1j, -1j)) if np.iscomplexobj(z) else ((1.0, 1.0),)
    for k in range(z.size):
        for direction, weight in directions:
            e = np.zeros(z.size, z.dtype)
            e[k] = eps * direction
            e = e.reshape(z.shape)
            flat[k] += weight * (loss(z + e) - loss(z - e)) / (2 * eps)
    return g if np.iscomplexobj(z) else g.real


def np_loss(f, w):
    """sum(Re(f(z) * w)) as a NumPy float, computed by graft."""
    return lambda z: float(np.sum(np.real(np.asarray(f(gnp.asarray(z))) * w)))


# ---- elementwise rows ------------------------------------------------------------------------------------
class Z:
    """A graft.numpy function on complex arrays: its NumPy oracle, arity, the box both parts are drawn from,
    whether it is differentiable (and holomorphic, so that grad(holomorphic=True) applies)."""

    def __init__(self, name, arity=1, lo=-2.0, hi=2.0, grad=True, holomorphic=True, np_fn=None, g_fn=None,
                 specials=True):
        self.name, self.arity, self.lo, self.hi = name, arity, lo, hi
        self.grad, self.holomorphic, self.specials = grad, holomorphic, specials
        self.np_fn = np_fn or getattr(np, name)
        self.g_fn = g_fn or getattr(gnp, name)

    def __repr__(self):
        return self.name


def _np_sign(z):  # JAX's (and NumPy 2's) sign of a complex number: z / |z|, 0 at 0
    with np.errstate(all="ignore"):
        return np.where(z == 0, 0, z / np.abs(z)).astype(z.dtype)


def _lex_less(a, b):
    return (a.real < b.real) | ((a.real == b.real) & (a.imag < b.imag))


ZUNARY = [
    Z("abs", holomorphic=False), Z("negative"), Z("positive"), Z("conj", holomorphic=False),
    Z("conjugate", holomorphic=False), Z("real", holomorphic=False), Z("imag", holomorphic=False),
    Z("angle", holomorphic=False), Z("exp"), Z("exp2"), Z("expm1"),
    # the logarithms and square root keep away from their branch cut (the negative real axis)
    Z("log", lo=0.2), Z("log2", lo=0.2), Z("log10", lo=0.2), Z("log1p", lo=0.2), Z("sqrt", lo=0.2),
    Z("square"), Z("reciprocal", lo=0.3, specials=False),  # 1/inf: 0 in graft (C99's Annex G), NaN in NumPy
    Z("sin"), Z("cos"), Z("tan", lo=-0.7, hi=0.7), Z("sinh"), Z("cosh"), Z("tanh", lo=-0.7, hi=0.7),
    Z("arcsin", lo=-0.7, hi=0.7), Z("arccos", lo=-0.7, hi=0.7), Z("arctan", lo=-0.7, hi=0.7),
    Z("arcsinh", lo=-0.7, hi=0.7), Z("arccosh", lo=0.3), Z("arctanh", lo=-0.7, hi=0.7),
    Z("sign", grad=False, np_fn=_np_sign, specials=False),
    Z("isnan", grad=False), Z("isinf", grad=False), Z("isfinite", grad=False),
]

ZBINARY = [
    Z("add", 2), Z("subtract", 2), Z("multiply", 2), Z("divide", 2, lo=0.3), Z("true_divide", 2, lo=0.3),
    Z("power", 2, lo=0.3, hi=1.5), Z("float_power", 2, lo=0.3, hi=1.5),
    Z("maximum", 2, holomorphic=False, np_fn=lambda a, b: np.where(_lex_less(a, b), b, a)),
    Z("minimum", 2, holomorphic=False, np_fn=lambda a, b: np.where(_lex_less(b, a), b, a)),
    Z("equal", 2, grad=False), Z("not_equal", 2, grad=False), Z("less", 2, grad=False),
    Z("less_equal", 2, grad=False), Z("greater", 2, grad=False), Z("greater_equal", 2, grad=False),
]

UNARY_SHAPES = [(), (0,), (5,), (2, 3)]
BINARY_SHAPES = [((), ()), ((), (3,)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((0, 3), (3,)), ((2, 3), (2, 3))]


def draw_args(row, shapes, dtype, rng):
    if row.grad is False and row.arity == 2:  # comparisons: parts from {-1, 0, 1}, so that ties occur
        return [(rng.integers(-1, 2, s) + 1j * rng.integers(-1, 2, s)).astype(dtype) for s in shapes]
    return [rand(s, dtype, rng, row.lo, row.hi) for s in shapes]


def zrows(rows):
    return [pytest.param(r, d, id=f"{r.name}-{d}") for r in rows for d in COMPLEX]


@pytest.mark.parametrize("row,dtype", zrows(ZUNARY + ZBINARY))
def test_complex_values(row, dtype):
    rng = np.random.default_rng(seed(row.name, dtype))
    for shapes in (UNARY_SHAPES if row.arity == 1 else BINARY_SHAPES):
        shapes = (shapes,) if row.arity == 1 else shapes
        args = draw_args(row, shapes, dtype, rng)
        got = row.g_fn(*[gnp.asarray(a) for a in args])
        with np.errstate(all="ignore"):
            want = row.np_fn(*args)
        check(got, want, dtype, f"{row.name}{shapes} {dtype}")
        if np.asarray(want).dtype.kind == "c":
            assert str(got.dtype) == dtype, f"{row.name}: {got.dtype}, want {dtype}"


@pytest.mark.parametrize("row", [r for r in ZUNARY if r.specials], ids=repr)
def test_complex_nan_inf(row):
    # every pair of parts from {0, -0, +-1, +-inf, nan, 2.5}: NumPy follows C99's Annex G, and so does graft
    v = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 2.5]
    z = np.array([complex(a, b) for a in v for b in v], np.complex128)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = row.np_fn(z)
    check(row.g_fn(gnp.asarray(z)), want, C128, f"{row.name}(specials)")


@pytest.mark.parametrize("name", ["add", "subtract", "multiply"])
def test_complex_binary_nan_inf(name):
    # the textbook product (NumPy's and XLA's), not C99's Annex G recovery of infinities from NaN parts
    v = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 2.5]
    z = np.array([complex(a, b) for a in v for b in v], np.complex128)
    a, b = z[:, None], z[None, :]
    with np.errstate(all="ignore"):
        want = getattr(np, name)(a, b)
    check(getattr(gnp, name)(gnp.asarray(a), gnp.asarray(b)), want, C128, f"{name}(specials)")


@pytest.mark.parametrize("row", [r for r in ZUNARY + ZBINARY if r.grad], ids=repr)
def test_complex_grad_against_finite_differences(row):
    rng = np.random.default_rng(1)
    shapes = [(3,)] if row.arity == 1 else [(2, 3), (3,)]
    args = [rand(s, C128, rng, row.lo, row.hi) for s in shapes]
    out_shape = np.shape(row.np_fn(*args))
    w = rand(out_shape, C128, rng)  # a random complex cotangent: the loss is sum(Re(f * w))
    for i in range(row.arity):
        def loss_g(v):
            a = [gnp.asarray(x) for x in args]
            a[i] = v
            return gnp.sum(gnp.real(row.g_fn(*a) * gnp.asarray(w)))

        def loss_np(v):
            a = [gnp.asarray(x) for x in args]
            a[i] = gnp.asarray(v)
            return float(np.sum(np.real(np.asarray(row.g_fn(*a)) * w)))

        g = gf.grad(loss_g)(gnp.asarray(args[i]))
        np.testing.assert_allclose(np.asarray(g), complex_fd_grad(loss_np, args[i]), rtol=1e-6, atol=1e-6,
                                   err_msg=f"d{row.name}/darg{i}")
    if row.holomorphic and row.arity == 1:  # f'(z) itself, by differences along the real axis
        z0 = args[0][0]
        d = gf.grad(lambda v: row.g_fn(v), holomorphic=True)(gnp.asarray(z0))
        h = 1e-6
        fd = (np.asarray(row.g_fn(gnp.asarray(z0 + h))) - np.asarray(row.g_fn(gnp.asarray(z0 - h)))) / (2 * h)
        np.testing.assert_allclose(complex(np.asarray(d)), complex(fd), rtol=1e-6, atol=1e-6,
                                   err_msg=f"{row.name}' (holomorphic)")


@pytest.mark.parametrize("row,dtype", zrows(ZUNARY + ZBINARY))
def test_complex_vmap_and_jit(row, dtype):
    rng = np.random.default_rng(2)
    args = draw_args(row, [(4, 3)] * row.arity, dtype, rng)
    g = [gnp.asarray(a) for a in args]
    looped = np.stack([np.asarray(row.g_fn(*[gnp.asarray(a[i]) for a in args])) for i in range(4)])
    check(gf.vmap(row.g_fn)(*g), looped, dtype, f"vmap {row.name}", tol=0)
    eager = row.g_fn(*g)
    jitted = gf.jit(row.g_fn)(*g)
    assert str(jitted.dtype) == str(eager.dtype), f"jit {row.name}: {jitted.dtype} vs {eager.dtype}"
    check(jitted, np.asarray(eager), dtype, f"jit {row.name}")


# ---- reductions, scans and sorting over complex ----------------------------------------------------------
ZRED = [("sum", True), ("prod", True), ("mean", True), ("var", True), ("std", True), ("max", True),
        ("min", True), ("argmax", False), ("argmin", False), ("cumsum", True), ("cumprod", True),
        ("sort", False), ("argsort", False)]
ZRED_CASES = [((5,), None), ((2, 3, 4), 1), ((2, 3, 4), -1), ((2, 3, 4), (0, 2)), ((2, 0), 0)]


def red_kwargs(name, shape, axis):
    if name in ("cumsum", "cumprod", "sort", "argsort", "argmax", "argmin"):
        if isinstance(axis, tuple):
            return None
        if name in ("sort", "argsort") and axis is None:
            return {"axis": -1}
    if name in ("max", "min", "argmax", "argmin"):
        if (axis is None and 0 in shape) or (axis is not None and not isinstance(axis, tuple)
                                             and shape[axis] == 0):
            return None
    return {"axis": axis}


@pytest.mark.parametrize("name,dtype", [pytest.param(n, d, id=f"{n}-{d}") for n, _ in ZRED for d in COMPLEX])
def test_complex_reductions(name, dtype):
    rng = np.random.default_rng(4)
    for shape, axis in ZRED_CASES:
        kw = red_kwargs(name, shape, axis)
        if kw is None:
            continue
        # parts from a small grid, so that max / min / sort meet ties in the real part
        x = (rng.integers(-2, 3, shape) + 1j * rng.uniform(-1, 1, shape)).astype(dtype)
        got = getattr(gnp, name)(gnp.asarray(x), **kw)
        want = getattr(np, name)(x, **kw)
        check(got, want, dtype, f"{name}{shape} {kw} {dtype}", tol=1e-4 if dtype == C64 else 1e-12)
    x = rand((3, 4, 5), dtype, rng)
    kw = {"axis": 1}
    f = lambda v: getattr(gnp, name)(v, **kw)  # noqa: E731
    looped = np.stack([np.asarray(f(gnp.asarray(x[i]))) for i in range(3)])
    check(gf.vmap(f)(gnp.asarray(x)), looped, dtype, f"vmap {name}", tol=0)
    check(gf.jit(f)(gnp.asarray(x)), np.asarray(f(gnp.asarray(x))), dtype, f"jit {name}")


@pytest.mark.parametrize("name", [n for n, smooth in ZRED if smooth])
def test_complex_reduction_grads(name):
    rng = np.random.default_rng(5)
    x = rand((2, 3), C128, rng)
    f = lambda v: getattr(gnp, name)(v, axis=1)  # noqa: E731
    w = rand(np.shape(getattr(np, name)(x, axis=1)), C128, rng)
    g = gf.grad(lambda v: gnp.sum(gnp.real(f(v) * gnp.asarray(w))))(gnp.asarray(x))
    np.testing.assert_allclose(np.asarray(g), complex_fd_grad(np_loss(f, w), x), rtol=1e-6, atol=1e-6,
                               err_msg=f"d{name}")


def test_complex_extrema_skip_nans_and_clip_refuses():
    x = np.array([[1 + 1j, np.nan + 0j, 3 + 0j, complex(0, np.nan)], [np.nan, np.nan, 2 - 1j, 2 - 2j]])
    for name in ("nanmax", "nanmin", "nanargmax", "nanargmin"):
        check(getattr(gnp, name)(gnp.asarray(x), axis=1), getattr(np, name)(x, axis=1), C128, name)
    with pytest.raises(ValueError, match="clip"):
        gnp.clip(gnp.asarray(x), 0, 1)
    with pytest.raises(ValueError, match="signbit"):
        gnp.signbit(gnp.asarray(x))
    with pytest.raises(TypeError, match="copysign"):
        gnp.copysign(gnp.asarray(x), 1.0)


def test_complex_nan_orders_first_in_extrema_and_last_in_sorts():
    x = np.array([1 + 1j, np.nan + 0j, 3 + 0j, complex(0, np.nan), 3 - 1j], np.complex128)
    for name in ("argmax", "argmin"):  # NumPy's: the first NaN
        assert int(getattr(gnp, name)(gnp.asarray(x))) == int(getattr(np, name)(x)) == 1
    # JAX's sort order: by real part, then imaginary part, a NaN part after every number (so 0 + nan i
    # comes first, by its real part; NumPy puts every value with a NaN part after the numbers)
    order = [3, 0, 4, 2, 1]
    np.testing.assert_array_equal(np.asarray(gnp.argsort(gnp.asarray(x))), order)
    check(gnp.sort(gnp.asarray(x)), x[order], C128, "sort with NaNs")
    ok = x[~np.isnan(x)]
    check(gnp.sort(gnp.asarray(ok)), np.sort(ok), C128, "sort without NaNs")


# ---- linear algebra ----------------------------------------------------------------------------------------
DTYPES = [F32, F64, C64, C128]


def general(shape, dtype, rng):
    return (rand(shape, dtype, rng, -1, 1) + 3 * np.eye(shape[-1])).astype(dtype)


def hermitian_pd(shape, dtype, rng):
    b = rand(shape, dtype, rng, -1, 1)
    return (b @ np.conj(np.swapaxes(b, -1, -2)) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def hermitian(shape, dtype, rng):
    b = rand(shape, dtype, rng, -1, 1)
    return ((b + np.conj(np.swapaxes(b, -1, -2))) / 2).astype(dtype)


def _recon_svd(m, a):
    u, s, vh = m.linalg.svd(a, full_matrices=False)
    return (u * s[..., None, :].astype(u.dtype)) @ vh


def _eigh_parts(m, a):
    w, v = m.linalg.eigh(a)
    return w, m.abs(v) if m is gnp else np.abs(v)


def _qr_parts(m, a, mode):
    q, r = m.linalg.qr(a, mode=mode)
    return q @ r, m.abs(r) if m is gnp else np.abs(r)


def _sorted_eigvals(m, a):
    w = np.asarray(m.linalg.eigvals(a)).astype(np.complex128)
    return w[np.lexsort((w.imag.round(8), w.real.round(8)))]


class LA:
    """`call(module, *arrays)` with NumPy (or SciPy, `ref`) as the oracle: inputs from `make(rng, dtype)`,
    dtypes, whether its derivative is checked (a real loss of its outputs that does not depend on a choice
    of signs or phases), and whether jit / vmap apply."""

    def __init__(self, id, call, make, dtypes=DTYPES, ref=None, grad=True, jit=True, tol=None, transforms=True):
        self.id, self.call, self.make, self.dtypes, self.grad, self.jit = id, call, make, dtypes, grad, jit
        self.transforms = transforms  # False: the row's call reads values (NumPy sorting), so vmap/jit don't apply
        self.ref = ref or (lambda *a: call(np, *a))
        self.tol = tol

    def __repr__(self):
        return self.id


def sq(fn, n=4, batch=()):
    return lambda rng, d: [fn(batch + (n, n), d, rng)]


def sq_and(fn, rhs_shape, n=4, batch=()):
    return lambda rng, d: [fn(batch + (n, n), d, rng), rand(batch + rhs_shape, d, rng, -1, 1)]


class _SciPy:  # SciPy's functions under the names graft.scipy.linalg uses, for LA rows' oracles
    linalg = sla


LINALG = [
    LA("solve", lambda m, a, b: m.linalg.solve(a, b), sq_and(general, (4, 2))),
    LA("solve_batched", lambda m, a, b: m.linalg.solve(a, b), sq_and(general, (4, 3), batch=(2,))),
    LA("inv", lambda m, a: m.linalg.inv(a), sq(general, batch=(2,))),
    LA("det", lambda m, a: m.linalg.det(a), sq(general, batch=(3,))),
    LA("slogdet", lambda m, a: tuple(m.linalg.slogdet(a)), sq(general), grad=False),
    LA("slogdet_logabs", lambda m, a: m.linalg.slogdet(a)[1], sq(general, batch=(2,))),
    LA("cholesky", lambda m, a: m.linalg.cholesky(a), sq(hermitian_pd, batch=(2,))),
    LA("qr_reduced", lambda m, a: _qr_parts(m, a, "reduced"), lambda rng, d: [rand((5, 3), d, rng, -1, 1)]),
    # (as in JAX, complete factors of a tall matrix have no derivative: test_linalg_errors)
    LA("qr_complete", lambda m, a: _qr_parts(m, a, "complete"), lambda rng, d: [rand((5, 3), d, rng, -1, 1)],
       grad=False),
    LA("qr_complete_square", lambda m, a: _qr_parts(m, a, "complete"), sq(general)),
    LA("qr_r", lambda m, a: m.linalg.qr(a, mode="r"), lambda rng, d: [rand((3, 5), d, rng, -1, 1)], grad=False),
    LA("svd_values", lambda m, a: m.linalg.svd(a, compute_uv=False), lambda rng, d: [rand((2, 5, 3), d, rng, -1, 1)]),
    LA("svd_reconstruction", _recon_svd, lambda rng, d: [rand((4, 3), d, rng, -1, 1)]),
    LA("svd_full_matrices", lambda m, a: tuple(abs(x) for x in m.linalg.svd(a, full_matrices=True)),
       lambda rng, d: [rand((4, 3), d, rng, -1, 1)], grad=False),
    LA("eigh", _eigh_parts, sq(hermitian, batch=(2,))),
    LA("eigvalsh", lambda m, a: m.linalg.eigvalsh(a), sq(hermitian)),
    LA("eigvals", _sorted_eigvals, sq(general), grad=False, transforms=False),
    LA("eigvals_product", lambda m, a: (gnp if m is gnp else np).prod(m.linalg.eigvals(a)), sq(general, batch=(2,)),
       grad=False),
    LA("lstsq", lambda m, a, b: m.linalg.lstsq(a, b, rcond=None)[0],
       lambda rng, d: [rand((6, 3), d, rng, -1, 1), rand((6, 2), d, rng, -1, 1)]),
    LA("pinv", lambda m, a: m.linalg.pinv(a), lambda rng, d: [rand((5, 3), d, rng, -1, 1)]),
    LA("matrix_power_3", lambda m, a: m.linalg.matrix_power(a, 3), sq(general)),
    LA("matrix_power_-2", lambda m, a: m.linalg.matrix_power(a, -2), sq(general)),
    LA("matrix_rank", lambda m, a: m.linalg.matrix_rank(a),
       lambda rng, d: [(rand((5, 2), d, rng) @ rand((2, 4), d, rng)).astype(d)], grad=False),
    LA("cond", lambda m, a: m.linalg.cond(a), sq(general)),
    LA("expm", lambda m, a: (gf.scipy.linalg if m is gnp else sla).expm(a), lambda rng, d: [rand((4, 4), d, rng, -1, 1)]),
    LA("cho_solve", lambda m, a, b: (gf.scipy.linalg if m is gnp else sla).cho_solve(
        ((gf.scipy.linalg if m is gnp else sla).cho_factor(a, lower=True)[0], True), b), sq_and(hermitian_pd, (4, 2)),
       jit=True),
    LA("solve_triangular", lambda m, a, b: (gf.scipy.linalg if m is gnp else sla).solve_triangular(
        (gnp.tril if m is gnp else np.tril)(a), b, lower=True), sq_and(general, (4, 2))),
    LA("lu_solve", lambda m, a, b: (gf.scipy.linalg if m is gnp else sla).lu_solve(
        (gf.scipy.linalg if m is gnp else sla).lu_factor(a), b), sq_and(general, (4, 2))),
    LA("lu", lambda m, a: tuple((gf.scipy.linalg if m is gnp else sla).lu(a)), sq(general), grad=False),
] + [LA(f"norm_{o}", (lambda o: lambda m, a: m.linalg.norm(a, ord=o))(o), sq(general), grad=o not in (1, -1, np.inf, -np.inf))
     for o in (None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf)] + \
    [LA(f"norm_vector_{o}", (lambda o: lambda m, a: m.linalg.norm(a, ord=o, axis=-1))(o),
        lambda rng, d: [rand((3, 5), d, rng, -1, 1)], grad=o not in (np.inf, -np.inf, 0))
     for o in (None, 1, 2, 3, 0, np.inf, -np.inf)]


def la_rows(kinds=DTYPES):
    return [pytest.param(r, d, id=f"{r.id}-{d}") for r in LINALG for d in r.dtypes if d in kinds]


def _tree(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


@pytest.mark.parametrize("row,dtype", la_rows())
def test_linalg_values(row, dtype):
    rng = np.random.default_rng(seed(row.id, dtype))
    args = row.make(rng, dtype)
    got = _tree(row.call(gnp, *[gnp.asarray(a) for a in args]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = _tree(row.ref(*args))
    tol = row.tol or (2e-4 if dtype in (F32, C64) else 1e-10)
    for i, (g, w) in enumerate(zip(got, want)):
        check(g, w, dtype, f"{row.id} output {i} {dtype}", tol=tol)


@pytest.mark.parametrize("row,dtype", [p for p in la_rows([F64, C128]) if p.values[0].transforms])
def test_linalg_vmap_and_jit(row, dtype):
    rng = np.random.default_rng(7)
    batches = [row.make(rng, dtype) for _ in range(3)]
    stacked = [gnp.asarray(np.stack([b[k] for b in batches])) for k in range(len(batches[0]))]
    f = lambda *a: row.call(gnp, *a)  # noqa: E731
    looped = [_tree(f(*[gnp.asarray(x) for x in b])) for b in batches]
    got = _tree(gf.vmap(f)(*stacked))
    for i, g in enumerate(got):
        check(g, np.stack([np.asarray(lp[i]) for lp in looped]), dtype, f"vmap {row.id} output {i}", tol=1e-9)
    if row.jit:
        args = [gnp.asarray(a) for a in batches[0]]
        for i, (j, e) in enumerate(zip(_tree(gf.jit(f)(*args)), _tree(f(*args)))):
            check(j, np.asarray(e), dtype, f"jit {row.id} output {i}", tol=1e-12)


@pytest.mark.parametrize("row,dtype", [p for p in la_rows([F64, C128]) if p.values[0].grad])
def test_linalg_grad_against_finite_differences(row, dtype):
    rng = np.random.default_rng(8)
    args = row.make(rng, dtype)
    outs = _tree(row.call(gnp, *[gnp.asarray(a) for a in args]))
    ws = [rand(np.shape(np.asarray(o)), np.asarray(o).dtype if np.asarray(o).dtype.kind == "c" else F64, rng)
          for o in outs]
    herm = row.id in ("cholesky", "eigh", "eigvalsh", "cho_solve")

    def value(a, i):
        a = list(a)
        if herm and i == 0:  # a Hermitian input: differentiate along Hermitian directions only
            a[0] = (a[0] + gnp.conj(gnp.swapaxes(a[0], -1, -2))) / 2
        return sum(gnp.sum(gnp.real(o * gnp.asarray(w))) for o, w in zip(_tree(row.call(gnp, *a)), ws))

    for i in range(len(args)):
        def loss_g(v):
            a = [gnp.asarray(x) for x in args]
            a[i] = v
            return value(a, i)

        def loss_np(v):
            a = [gnp.asarray(x) for x in args]
            a[i] = gnp.asarray(v)
            return float(np.asarray(value(a, i)))

        g = gf.grad(loss_g)(gnp.asarray(args[i]))
        np.testing.assert_allclose(np.asarray(g), complex_fd_grad(loss_np, args[i]), rtol=1e-5, atol=1e-6,
                                   err_msg=f"d{row.id}/darg{i} {dtype}")


# ---- FFT ---------------------------------------------------------------------------------------------------
class FT:
    def __init__(self, name, shape, kinds, **kw):
        self.name, self.shape, self.kinds, self.kw = name, shape, kinds, kw
        self.id = name + "(" + "x".join(map(str, shape)) + "".join(f",{k}={v}" for k, v in kw.items()) + ")"

    def __call__(self, m, x):
        return getattr(m.fft, self.name)(x, **self.kw)

    def __repr__(self):
        return self.id


FFTS = [FT("fft", (3, 8), COMPLEX + [F32, F64]), FT("fft", (2, 7), COMPLEX, n=9, norm="ortho"),
        FT("ifft", (2, 6), COMPLEX, axis=0, norm="forward"), FT("fft2", (2, 4, 6), COMPLEX),
        FT("ifft2", (4, 5), COMPLEX, s=(3, 6)), FT("fftn", (2, 3, 4), COMPLEX, axes=(0, 2)),
        FT("ifftn", (2, 3, 4), COMPLEX, norm="ortho"), FT("rfft", (3, 10), [F32, F64]),
        FT("rfft", (2, 9), [F32, F64], n=12, norm="ortho"), FT("irfft", (3, 6), COMPLEX),
        FT("irfft", (2, 5), COMPLEX, n=9), FT("rfft2", (2, 4, 6), [F32, F64]), FT("irfft2", (4, 4), COMPLEX),
        FT("rfftn", (2, 3, 4), [F32, F64], axes=(0, 1)), FT("irfftn", (2, 3, 4), COMPLEX, s=(3, 6)),
        FT("hfft", (2, 5), COMPLEX), FT("ihfft", (2, 8), [F32, F64])]


def fft_rows():
    return [pytest.param(r, d, id=f"{r.id}-{d}") for r in FFTS for d in r.kinds]


@pytest.mark.parametrize("row,dtype", fft_rows())
def test_fft_values_vmap_and_jit(row, dtype):
    rng = np.random.default_rng(9)
    x = rand(row.shape, dtype, rng)
    got, want = row(gnp, gnp.asarray(x)), row(np, x)
    tol = 1e-4 if dtype in (F32, C64) else 1e-12
    check(got, want, dtype, f"{row.id} {dtype}", tol=tol)
    f = lambda v: row(gnp, v)  # noqa: E731
    xs = rand((3,) + row.shape, dtype, rng)
    if "axis" not in row.kw and "axes" not in row.kw:  # default axes are the last ones: a new leading axis maps
        looped = np.stack([np.asarray(f(gnp.asarray(xs[i]))) for i in range(3)])
        check(gf.vmap(f)(gnp.asarray(xs)), looped, dtype, f"vmap {row.id}", tol=tol)
    check(gf.jit(f)(gnp.asarray(x)), np.asarray(got), dtype, f"jit {row.id}", tol=0)


@pytest.mark.parametrize("row", [r for r in FFTS], ids=repr)
def test_fft_grad_against_finite_differences(row):
    rng = np.random.default_rng(10)
    dtype = C128 if C128 in row.kinds else F64
    x = rand(row.shape, dtype, rng)
    w = rand(np.shape(row(np, x)), C128 if np.iscomplexobj(row(np, x)) else F64, rng)
    f = lambda v: row(gnp, v)  # noqa: E731
    g = gf.grad(lambda v: gnp.sum(gnp.real(f(v) * gnp.asarray(w))))(gnp.asarray(x))
    np.testing.assert_allclose(np.asarray(g), complex_fd_grad(np_loss(f, w), x), rtol=1e-6, atol=1e-6,
                               err_msg=f"d{row.id}")


def test_lax_rows_on_complex():
    # the lax half: lax.max / min order complex operands, lax.exp2 / pow take them, lax.fft and
    # lax.linalg agree with the numpy-level functions
    rng = np.random.default_rng(11)
    a, b = rand((4, 3), C128, rng), rand((4, 3), C128, rng)
    check(lax.max(gnp.asarray(a), gnp.asarray(b)), np.where(_lex_less(a, b), b, a), C128, "lax.max")
    check(lax.min(gnp.asarray(a), gnp.asarray(b)), np.where(_lex_less(b, a), b, a), C128, "lax.min")
    check(lax.exp2(gnp.asarray(a)), np.exp2(a), C128, "lax.exp2")
    check(lax.pow(gnp.asarray(a), gnp.asarray(b)), np.power(a, b), C128, "lax.pow")
    check(lax.fft(gnp.asarray(a), "FFT", (3,)), np.fft.fft(a), C128, "lax.fft")
    check(lax.fft(gnp.asarray(a), "IFFT", (4, 3)), np.fft.ifft2(a), C128, "lax.fft IFFT")
    h = hermitian_pd((3, 3), C128, rng)
    check(lax.linalg.cholesky(gnp.asarray(h)), np.linalg.cholesky(h), C128, "lax.linalg.cholesky")
    v, e = lax.linalg.eigh(gnp.asarray(h))
    check(e, np.linalg.eigvalsh(h), C128, "lax.linalg.eigh values")
    with pytest.raises(TypeError, match="lt"):
        lax.lt(gnp.asarray(a), gnp.asarray(b))


def test_linalg_errors():
    a = gnp.asarray(rand((5, 3), C128, np.random.default_rng(12)))
    with pytest.raises(NotImplementedError, match="qr"):
        gf.grad(lambda v: gnp.sum(gnp.abs(gla.qr(v, mode="complete")[0])))(a)
    with pytest.raises(Exception, match="square"):
        gla.inv(a)
