"""JAX's transformations over Python callables and pytrees, on graft's flat transformations."""
import contextlib
import math
import functools

from . import _graft
from ._graft import Array
from ._tree import broadcast_prefix, tree_flatten, tree_map, tree_structure, tree_unflatten


def _as_array(x, what):
    if isinstance(x, Array):
        return x
    try:
        return _graft.asarray(x)
    except TypeError:
        raise TypeError(f"{what}: {type(x).__name__} {x!r} is not a valid graft type "
                        "(arrays, Python numbers, NumPy arrays; mark other arguments static)") from None


def _flat_arrays(tree, what):
    leaves, d = tree_flatten(tree)
    return [_as_array(x, what) for x in leaves], d


def _flat_with_aux(fun, in_tree, has_aux, box):
    """fun on flat leaves: its output's leaves, then its aux's (has_aux); box records the output's
    structure ("out"), its number of leaves ("n") and the aux's structure ("aux")."""

    def flat(xs):
        out = fun(*tree_unflatten(in_tree, xs))
        if has_aux:
            out, aux = out
            aux_leaves, box["aux"] = tree_flatten(aux)
        o, box["out"] = tree_flatten(out)
        box["n"] = len(o)
        return o + aux_leaves if has_aux else o

    return flat


def _custom_call(self, args, what, call):
    """The shared body of custom_jvp and custom_vjp calls: `call(flat, leaves, tree, box)` runs the flat
    function (which records its output structure in box["out"]); the output comes back as a pytree."""
    leaves, tree = _flat_arrays(args, what)
    box = {}

    def flat(xs):
        o, box["out"] = tree_flatten(self.fun(*tree_unflatten(tree, xs)))
        return o

    outs = call(flat, leaves, tree, box)
    if "out" not in box:
        box["out"] = tree_structure(self.fun(*args))
    return tree_unflatten(box["out"], outs)


def _floating(x):
    return str(x.dtype) in ("float16", "bfloat16", "float32", "float64")


def _complex(x):
    return str(x.dtype) in ("complex64", "complex128")


def _check_diff_input(x, what, holomorphic):
    """JAX's rule: real-valued functions take floating or complex inputs; holomorphic=True, complex only."""
    if holomorphic and not _complex(x):
        raise TypeError(f"{what} with holomorphic=True requires inputs with complex dtype, but got {x.dtype}")
    if not holomorphic and not (_floating(x) or _complex(x)):
        raise TypeError(f"{what} requires real- or complex-valued inputs (input dtype that is a sub-dtype of "
                        f"np.inexact), but got {x.dtype}. If you want to use integer-valued inputs, use vjp.")


def _argnums_tuple(argnums):
    return (argnums,) if isinstance(argnums, int) else tuple(argnums)


# ---- forward and reverse mode --------------------------------------------------------------------
def jvp(fun, primals, tangents, has_aux=False):
    """(fun(*primals), the directional derivative along tangents) [, aux]."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("jvp: primals and tangents must be tuples or lists of arguments")
    p_leaves, p_tree = _flat_arrays(tuple(primals), "jvp")
    t_leaves, t_tree = _flat_arrays(tuple(tangents), "jvp")
    if p_tree != t_tree:
        raise ValueError(f"jvp: primals {p_tree} and tangents {t_tree} differ in structure")
    box = {}
    flat = _flat_with_aux(fun, p_tree, has_aux, box)
    outs, touts = _graft.jvp(flat, p_leaves, t_leaves)
    n = box["n"]
    res = (tree_unflatten(box["out"], outs[:n]), tree_unflatten(box["out"], touts[:n]))
    if has_aux:
        return res + (tree_unflatten(box["aux"], outs[n:]),)
    return res


def vjp(fun, *primals, has_aux=False):
    """(fun(*primals), pullback) [, aux]; pullback(cotangent) gives one cotangent per primal."""
    p_leaves, p_tree = _flat_arrays(primals, "vjp")
    box = {}
    flat = _flat_with_aux(fun, p_tree, has_aux, box)
    outs, pull = _graft.vjp(flat, p_leaves)
    n = box["n"]
    out_tree = box["out"]

    def pullback(ct):
        c_leaves, c_tree = tree_flatten(ct)
        if c_tree != out_tree:
            raise ValueError(f"vjp: the cotangent {c_tree} does not have the structure of the output {out_tree}")
        cts = pull(c_leaves + [None] * (len(outs) - n))
        return tree_unflatten(p_tree, cts)

    res = (tree_unflatten(out_tree, outs[:n]), pullback)
    if has_aux:
        return res + (tree_unflatten(box["aux"], outs[n:]),)
    return res


def value_and_grad(fun, argnums=0, has_aux=False, holomorphic=False):
    """A function returning (fun(*args), the gradient of fun with respect to args[argnums]). As in JAX, the
    output must be real unless holomorphic=True (then inputs and output are complex); the gradient of a
    real function of complex inputs is the conjugate direction: grad(lambda z: abs(z)**2)(3+4j) == 6-8j."""
    nums = _argnums_tuple(argnums)

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        for i in nums:
            if i >= len(args):
                raise TypeError(f"grad: argnums {argnums} refers to argument {i}, but the function got {len(args)}")
            for leaf in tree_flatten(args[i])[0]:
                _check_diff_input(_as_array(leaf, "grad"), "grad", holomorphic)

        def g(*diff):
            full = list(args)
            for i, d in zip(nums, diff):
                full[i] = d
            return fun(*full, **kwargs)

        res = vjp(g, *[args[i] for i in nums], has_aux=has_aux)
        out, pull = res[0], res[1]
        if not isinstance(out, Array) or out.shape != ():
            shape = getattr(out, "shape", None)
            raise TypeError(f"grad requires a scalar output, got {type(out).__name__}"
                            + (f" of shape {shape}" if shape is not None else ""))
        if holomorphic and not _complex(out):
            raise TypeError(f"grad with holomorphic=True requires outputs with complex dtype, but got {out.dtype}")
        if not holomorphic and not _floating(out):
            raise TypeError(f"grad requires real-valued outputs (output dtype that is a sub-dtype of np.floating), "
                            f"but got {out.dtype}. For holomorphic differentiation, pass holomorphic=True.")
        grads = pull(_graft.ones_like(out))
        g_out = grads[0] if isinstance(argnums, int) else tuple(grads)
        if has_aux:
            return (out, res[2]), g_out
        return out, g_out

    return wrapped


def grad(fun, argnums=0, has_aux=False, holomorphic=False):
    """The gradient of a scalar function with respect to args[argnums] (JAX's jax.grad)."""
    vg = value_and_grad(fun, argnums, has_aux, holomorphic)

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        (value, g) = vg(*args, **kwargs)
        if has_aux:
            return g, value[1]
        return g

    return wrapped


def jacfwd(fun, argnums=0, holomorphic=False):
    """The Jacobian by forward mode: one jvp per input element, vmapped (holomorphic=True: complex inputs,
    the complex Jacobian df/dz)."""
    nums = _argnums_tuple(argnums)

    def wrapped(*args):
        def one(i):
            x = _as_array(args[i], "jacfwd")
            if not holomorphic and _complex(x):
                raise TypeError(f"jacfwd requires real-valued inputs (input dtype that is a sub-dtype of "
                                f"np.floating), but got {x.dtype}. For holomorphic differentiation, pass "
                                "holomorphic=True.")
            _check_diff_input(x, "jacfwd", holomorphic)
            basis = _graft.reshape(_graft.eye(x.size, dtype=x.dtype), (x.size,) + x.shape)

            def push(t):
                tangents = [_graft.zeros_like(_as_array(a, "jacfwd")) for a in args]
                tangents[i] = t
                return jvp(fun, tuple(_as_array(a, "jacfwd") for a in args), tuple(tangents))[1]

            cols = vmap(push)(basis)  # [n, *out]
            return tree_map(lambda c: _graft.moveaxis(_graft.reshape(c, (x.size,) + c.shape[1:]), 0, -1)
                            .reshape(c.shape[1:] + x.shape), cols)

        res = [one(i) for i in nums]
        return res[0] if isinstance(argnums, int) else tuple(res)

    return wrapped


def jacrev(fun, argnums=0, holomorphic=False):
    """The Jacobian by reverse mode: one pullback per output element, vmapped (holomorphic=True: complex
    inputs and outputs, the complex Jacobian df/dz)."""
    nums = _argnums_tuple(argnums)

    def wrapped(*args):
        diff = [args[i] for i in nums]
        for d in diff:
            _check_diff_input(_as_array(d, "jacrev"), "jacrev", holomorphic)

        def g(*d):
            full = list(args)
            for i, v in zip(nums, d):
                full[i] = v
            return fun(*full)

        out, pull = vjp(g, *diff)
        out_a = _as_array(out, "jacrev")
        if holomorphic and not _complex(out_a):
            raise TypeError(f"jacrev with holomorphic=True requires outputs with complex dtype, but got {out_a.dtype}")
        if not holomorphic and _complex(out_a):
            raise TypeError(f"jacrev requires real-valued outputs (output dtype that is a sub-dtype of np.floating), "
                            f"but got {out_a.dtype}. For holomorphic differentiation, pass holomorphic=True.")
        basis = _graft.reshape(_graft.eye(out_a.size, dtype=out_a.dtype), (out_a.size,) + out_a.shape)
        rows = vmap(pull)(basis)  # tuple over diff args of [m, *x]
        res = tuple(_graft.reshape(r, out_a.shape + r.shape[1:]) for r in rows)
        return res[0] if isinstance(argnums, int) else res

    return wrapped


def hessian(fun, argnums=0):
    return jacfwd(jacrev(fun, argnums), argnums)


# ---- vmap ---------------------------------------------------------------------------------------------
def vmap(fun, in_axes=0, out_axes=0, axis_name=None, axis_size=None):
    """fun mapped over an axis of its arguments (JAX's jax.vmap). in_axes / out_axes: an int, None (not
    mapped) or a pytree prefix of the arguments / outputs; axis_name names the axis for collectives."""

    @functools.wraps(fun)
    def wrapped(*args):
        axes = in_axes
        if isinstance(axes, list):
            axes = tuple(axes)
        if isinstance(axes, tuple) and len(axes) != len(args):
            raise ValueError(f"vmap: in_axes {in_axes} has {len(axes)} entries for {len(args)} arguments")
        leaves, a_tree = _flat_arrays(args, "vmap")
        flat_in = broadcast_prefix(axes if isinstance(axes, tuple) else (axes,) * len(args), args, "vmap in_axes")
        box = {}

        def flat(xs):
            out = fun(*tree_unflatten(a_tree, xs))
            o, box["out"] = tree_flatten(out)
            box["value"] = out
            return o

        def flat_out_axes(n):
            return broadcast_prefix(out_axes, tree_unflatten(box["out"], [0] * n), "vmap out_axes")

        outs = _graft.vmap(flat, leaves, flat_in, flat_out_axes, axis_name or "", axis_size)
        return tree_unflatten(box["out"], outs)

    return wrapped


# ---- jit and make_jaxpr ---------------------------------------------------------------------------------
def jit(fun=None, *, static_argnums=(), static_argnames=(), donate_argnums=(), polymorphic=(), buckets=(),
        in_shardings=None, out_shardings=None):
    """fun traced once per argument structure, types and static values, and compiled (JAX's jax.jit).

    in_shardings / out_shardings (graft.sharding.NamedSharding, one for all or a pytree prefix of the
    arguments / outputs; None: the argument's own sharding for a ShardedArray, else replicated, and for
    outputs what the compiler chose) make it sharded jit: fun is written for one device and the compiler
    partitions it over the mesh, inserting the collectives. Called with ShardedArrays
    (graft.device_put(x, sharding)) it returns ShardedArrays, otherwise whole arrays.

    polymorphic: one spec per positional argument naming its batch dimension ("b, ..." for axis 0 of
    arrays of any rank, "(b, 784)", "_, b"; "" for none): every batch size up to a bucket runs in that
    bucket's one compiled program, padded and masked so that reductions over the batch see only its
    rows. buckets: the bucket sizes (default: the sizes of the first, largest batches).
    """
    if fun is None:
        return lambda f: jit(f, static_argnums=static_argnums, static_argnames=static_argnames,
                             donate_argnums=donate_argnums, polymorphic=polymorphic, buckets=buckets,
                             in_shardings=in_shardings, out_shardings=out_shardings)
    if in_shardings is not None or out_shardings is not None:
        if static_argnums or static_argnames or polymorphic:
            raise NotImplementedError("jit: in_shardings / out_shardings do not take static or polymorphic "
                                      "arguments yet")
        return _sharded_jit(fun, in_shardings, out_shardings, _argnums_tuple(donate_argnums))
    static_argnums = _argnums_tuple(static_argnums)
    static_argnames = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
    donate = _argnums_tuple(donate_argnums)
    polymorphic = [polymorphic] if isinstance(polymorphic, str) else list(polymorphic)
    state = _graft.Jit(getattr(fun, "__name__", "<lambda>"), list(donate), tree_unflatten, polymorphic,
                       [int(b) for b in buckets])
    out_trees = {}
    sig_names = {}
    fast_ok = not static_argnums and not static_argnames and not polymorphic

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        if _jit_disabled[0]:
            return fun(*args, **kwargs)
        if fast_ok and not kwargs:
            # positional arrays, seen before: the call stays in C++
            res = state.call_cached(*args)
            if res is not None:
                return res
        flat, key, leaves, offset, traced, fast, _ = prepare(args, kwargs)
        outs = state.call(flat, key, leaves, offset, traced)
        out_tree = out_trees[key]
        if fast:
            flat_tuple = out_tree.kind == "tuple" and all(c.kind == "leaf" for c in out_tree.children_)
            state.remember(args, out_tree, "leaf" if out_tree.kind == "leaf" else "tuple" if flat_tuple else "other")
        return tree_unflatten(out_tree, outs)

    def prepare(args, kwargs):
        """The flat call of f(*args, **kwargs): (flat function, cache key, leaves, offsets, traced flags,
        whether it may take the fast path, the dynamic arguments' structure)."""
        statics = tuple((i, args[i]) for i in static_argnums if i < len(args))
        static_kw = tuple(sorted((k, v) for k, v in kwargs.items() if k in static_argnames))
        dyn_pos = [i for i in range(len(args)) if i not in static_argnums]
        dyn_args = [args[i] for i in dyn_pos]
        dyn_kw = {k: v for k, v in kwargs.items() if k not in static_argnames}
        try:
            hash((statics, static_kw))
        except TypeError:
            raise ValueError("jit: static arguments must be hashable") from None
        fast = fast_ok and not kwargs and all(type(a) is Array for a in args)
        leaves, in_tree = _flat_arrays((dyn_args, dyn_kw), "jit")
        if fast:
            key = _graft.Jit.fast_prefix(len(args))
        else:
            # a short name per (structure, static values): the C++ cache key appends the types
            sig = (in_tree, statics, static_kw, _graft._x64_enabled())
            key = sig_names.get(sig)
            if key is None:
                key = sig_names.setdefault(sig, f"S{len(sig_names)}|")

        def flat(xs):
            d_args, d_kw = tree_unflatten(in_tree, xs)
            full = list(args)
            for i, v in zip(dyn_pos, d_args):
                full[i] = v
            out = fun(*full, **dict(static_kw), **d_kw)
            o, out_trees[key] = tree_flatten(out)
            return o

        # where each positional argument's leaves start (static ones have none): donate_argnums and
        # polymorphic name positional arguments
        offset, traced = [0], []
        for i, a in enumerate(args):
            dyn = i not in static_argnums
            traced.append(dyn)
            offset.append(offset[-1] + (tree_structure(a).num_leaves if dyn else 0))
        return flat, key, leaves, offset, traced, fast, in_tree

    def lower(*args, **kwargs):
        """JAX's ahead-of-time stage: fun traced and compiled for these arguments' types (and static
        values) without running it. `.as_text()`, `.cost_analysis()`, `.compile()` -> a callable taking
        the dynamic arguments (static ones are baked in, as in JAX)."""
        flat, key, leaves, offset, traced, _, in_tree = prepare(args, kwargs)
        low = state.lower(flat, key, leaves, offset, traced)
        return Lowered(low, in_tree, out_trees[key], getattr(fun, "__name__", "<lambda>"))

    def trace(*args, **kwargs):
        """JAX's `jit(f).trace(*args)`: `.jaxpr` (the traced program) and `.lower()`."""
        return Traced(make_jaxpr(fun, static_argnums=static_argnums)(*args, **kwargs),
                      lambda: lower(*args, **kwargs))

    wrapped.lower = lower
    wrapped.trace = trace
    wrapped._num_traces = lambda: state.num_traces
    wrapped._num_compiles = lambda: state.num_compiles
    return wrapped


class Traced:
    """`jit(f).trace(*args)`: the traced program (`.jaxpr`) and `.lower()`."""

    def __init__(self, jaxpr, lower):
        self.jaxpr = jaxpr
        self._lower = lower

    def lower(self):
        return self._lower()


class Lowered:
    """`jit(f).lower(*args)` (JAX's Lowered): the program traced for these argument types, not yet run.

    as_text(): the traced program as a jaxpr; cost_analysis(): {"flops", "transcendentals",
    "bytes accessed"} of that program; compile(): a Compiled. Lowering fills the jitted function's cache
    (a later call with these types does not trace again)."""

    def __init__(self, flat, in_tree, out_tree, name):
        self._flat, self.in_tree, self.out_tree, self._name = flat, in_tree, out_tree, name

    def as_text(self):
        return self._flat.as_text()

    def cost_analysis(self):
        return self._flat.cost_analysis()

    def compile(self):
        return Compiled(self._flat.compile(), self.in_tree, self.out_tree, self._name)

    @property
    def out_info(self):
        return tree_unflatten(self.out_tree, [ShapeDtypeStruct(s, d, w) for s, d, w in self._flat.out_avals])

    def __repr__(self):
        return f"Lowered(jit({self._name}))"


class CompiledMemoryStats:
    """What a compiled program holds in memory (JAX's names): argument_size_in_bytes,
    output_size_in_bytes, temp_size_in_bytes (intermediates at the peak, beyond the outputs) and
    peak_size_in_bytes (intermediates, results and donated arguments alive at once)."""

    def __init__(self, argument, output, peak):
        self.argument_size_in_bytes = argument
        self.output_size_in_bytes = output
        self.peak_size_in_bytes = peak
        self.temp_size_in_bytes = max(peak - output, 0)
        self.alias_size_in_bytes = 0

    def __repr__(self):
        return (f"CompiledMemoryStats(argument_size_in_bytes={self.argument_size_in_bytes}, output_size_in_bytes="
                f"{self.output_size_in_bytes}, temp_size_in_bytes={self.temp_size_in_bytes})")


class Compiled:
    """`jit(f).lower(*args).compile()` (JAX's Compiled): called with the dynamic arguments (static ones
    were fixed when lowering) of exactly the lowered types (TypeError otherwise: it is not traced again).
    as_text(): the optimized program (fusion groups included); cost_analysis() of it (fused loops count
    only their operands' and results' traffic); memory_analysis()."""

    def __init__(self, flat, in_tree, out_tree, name):
        self._flat, self.in_tree, self.out_tree, self._name = flat, in_tree, out_tree, name

    def __call__(self, *args, **kwargs):
        leaves, tree = _flat_arrays((list(args), kwargs), "compiled")
        if tree != self.in_tree:
            raise TypeError(f"compiled jit({self._name}): called with arguments of structure {tree}, it was "
                            f"compiled for {self.in_tree}")
        return tree_unflatten(self.out_tree, self._flat(leaves))

    def as_text(self):
        return self._flat.as_text()

    def cost_analysis(self):
        return self._flat.cost_analysis()

    def memory_analysis(self):
        return CompiledMemoryStats(*self._flat.memory_analysis())

    @property
    def out_info(self):
        return tree_unflatten(self.out_tree, [ShapeDtypeStruct(s, d, w) for s, d, w in self._flat.out_avals])

    def __repr__(self):
        return f"Compiled(jit({self._name}))"


def _sharded_jit(fun, in_shardings, out_shardings, donate_argnums=()):
    NamedSharding, ShardedArray = _graft.NamedSharding, _graft.ShardedArray

    def is_sh(s):
        return isinstance(s, NamedSharding)

    state = _graft.Pjit(getattr(fun, "__name__", "<lambda>"), list(donate_argnums))
    out_trees = {}

    @functools.wraps(fun)
    def wrapped(*args):
        leaves, in_tree = tree_flatten(args)
        if in_shardings is None:
            per_leaf = [None] * len(leaves)
        else:
            prefix = (in_shardings if isinstance(in_shardings, (tuple, list)) and not is_sh(in_shardings)
                      else (in_shardings,) * len(args))
            if len(prefix) != len(args):
                raise ValueError(f"jit: in_shardings has {len(prefix)} entries for {len(args)} arguments")
            per_leaf = broadcast_prefix(tuple(prefix), args, "jit in_shardings", is_sh)
        sharded, arrays = False, []
        for i, x in enumerate(leaves):
            if isinstance(x, ShardedArray):
                sharded = True
                if per_leaf[i] is None:
                    per_leaf[i] = x.sharding
                arrays.append(x.gather())
            else:
                arrays.append(_as_array(x, "jit"))
        key = f"{in_tree}|" + ",".join(repr(s) for s in per_leaf)

        def flat(xs):
            o, out_trees[key] = tree_flatten(fun(*tree_unflatten(in_tree, xs)))
            return o

        if out_shardings is None:
            outs_sh = []
        elif is_sh(out_shardings):
            outs_sh = [out_shardings]
        else:  # a pytree prefix of the outputs, whose structure a trace gives
            if key not in out_trees:
                _graft.make_jaxpr(flat, arrays)
            d = out_trees[key]
            outs_sh = broadcast_prefix(out_shardings, tree_unflatten(d, [0] * d.num_leaves), "jit out_shardings", is_sh)
        offsets = [0]
        for a in args:
            offsets.append(offsets[-1] + len(tree_flatten(a)[0]))
        outs, shardings = state.call(flat, arrays, per_leaf, outs_sh, None, key, offsets)
        if sharded:
            outs = [_graft.device_put_sharded(o, s) for o, s in zip(outs, shardings)]
        return tree_unflatten(out_trees[key], outs)

    wrapped._num_traces = lambda: state.num_traces
    return wrapped


class ClosedJaxpr:
    """A traced program, printed in JAX's text format; pretty_print(name_stack=True) annotates each
    equation with the named scopes it was traced in."""

    def __init__(self, text, text_with_names=None):
        self.text = text
        self._named = text_with_names if text_with_names is not None else text

    def pretty_print(self, *, name_stack=False, **_):
        return self._named if name_stack else self.text

    def __str__(self):
        return self.text

    def __repr__(self):
        return self.text


def make_jaxpr(fun, static_argnums=()):
    """A function returning the jaxpr that fun traces to on the given arguments."""
    static_argnums = _argnums_tuple(static_argnums)

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        dyn_pos = [i for i in range(len(args)) if i not in static_argnums]
        leaves, in_tree = _flat_arrays([args[i] for i in dyn_pos], "make_jaxpr")

        def flat(xs):
            full = list(args)
            for i, v in zip(dyn_pos, tree_unflatten(in_tree, xs)):
                full[i] = v
            return tree_flatten(fun(*full, **kwargs))[0]

        return ClosedJaxpr(*_graft.make_jaxpr(flat, leaves))

    return wrapped


# ---- user-defined derivatives and rematerialization --------------------------------------------------
class custom_jvp:
    """A function with its own JVP rule (JAX's jax.custom_jvp):

        @gf.custom_jvp
        def f(x): return gnp.log1p(gnp.exp(x))
        @f.defjvp
        def f_jvp(primals, tangents): (x,), (t,) = primals, tangents; return f(x), t * lax.logistic(x)
    """

    def __init__(self, fun):
        functools.update_wrapper(self, fun)
        self.fun, self.jvp = fun, None

    def defjvp(self, jvp):
        self.jvp = jvp
        return jvp

    def __call__(self, *args):
        if self.jvp is None:
            raise TypeError(f"custom_jvp {getattr(self.fun, '__name__', '')}: no JVP rule (use @f.defjvp)")
        def call(flat, leaves, tree, box):
            def rule(ps, ts):
                out, tan = self.jvp(tree_unflatten(tree, ps), tree_unflatten(tree, ts))
                return tree_flatten(out)[0], tree_flatten(tan)[0]

            return _graft.custom_jvp(flat, rule, leaves, getattr(self.fun, "__name__", "custom_jvp"))

        return _custom_call(self, args, "custom_jvp", call)


class custom_vjp:
    """A function with its own VJP (JAX's jax.custom_vjp): f.defvjp(fwd, bwd), fwd(*args) -> (out,
    residuals), bwd(residuals, cotangent) -> one cotangent per argument (a tuple)."""

    def __init__(self, fun):
        functools.update_wrapper(self, fun)
        self.fun, self.fwd, self.bwd = fun, None, None

    def defvjp(self, fwd, bwd):
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args):
        if self.fwd is None:
            raise TypeError(f"custom_vjp {getattr(self.fun, '__name__', '')}: no VJP (use f.defvjp(fwd, bwd))")
        def call(flat, leaves, tree, box):
            def fwd(xs):
                out, res = self.fwd(*tree_unflatten(tree, xs))
                o, box["out"] = tree_flatten(out)
                r, box["res"] = tree_flatten(res)
                return o, r

            def bwd(res, cts):
                g = self.bwd(tree_unflatten(box["res"], res), tree_unflatten(box["out"], cts))
                if not isinstance(g, tuple):
                    raise TypeError("custom_vjp: bwd must return a tuple with one cotangent per argument")
                return tree_flatten(g)[0]

            return _graft.custom_vjp(flat, fwd, bwd, leaves, getattr(self.fun, "__name__", "custom_vjp"))

        return _custom_call(self, args, "custom_vjp", call)


_jit_disabled = [False]


@contextlib.contextmanager
def disable_jit(disable=True):
    """Within it, jit-decorated functions run eagerly, op by op (Python control flow and prints see
    concrete values), as JAX's jax.disable_jit."""
    prev = _jit_disabled[0]
    _jit_disabled[0] = disable
    try:
        yield
    finally:
        _jit_disabled[0] = prev


def custom_gradient(fun):
    """JAX's jax.custom_gradient: fun(*args) returns (value, vjp_fn) with vjp_fn(cotangent) -> a tuple of
    cotangents, one per argument. As a custom_vjp whose backward pass runs fun again to get vjp_fn (so
    vjp_fn may close over fun's intermediates without those having to be arrays)."""
    f = custom_vjp(lambda *args: fun(*args)[0])

    def fwd(*args):
        return fun(*args)[0], args

    def bwd(args, ct):
        g = fun(*args)[1](ct)
        return tuple(g) if isinstance(g, (tuple, list)) else (g,)

    f.defvjp(fwd, bwd)
    functools.update_wrapper(f, fun)
    return f


def linear_call(fun, fun_transpose, residual_args, linear_args, *, _fun_res_jvp=None, _transpose_res_jvp=None):
    """fun(residual_args, linear_args), a function linear in linear_args, with the transpose the caller
    gives: fun_transpose(residual_args, output cotangents) -> linear_args' cotangents (JAX's
    jax.custom_derivatives.linear_call). Reverse mode transposes the call with fun_transpose instead of
    differentiating fun; forward mode applies fun to the tangents; vmap batches both. The residuals (any
    pytree) are not differentiated; fun and fun_transpose must not close over traced values (pass them as
    residuals)."""
    from . import tree_util as _tu
    r_leaves, r_tree = _tu.tree_flatten(residual_args)
    l_leaves, l_tree = _tu.tree_flatten(linear_args)
    l_leaves = [_graft.asarray(v) for v in l_leaves]
    out_tree = [None]

    def flat_fun(rs, ls):
        out = fun(_tu.tree_unflatten(r_tree, list(rs)), _tu.tree_unflatten(l_tree, list(ls)))
        leaves, out_tree[0] = _tu.tree_flatten(out)
        return leaves

    def flat_transpose(rs, cts):
        ct = fun_transpose(_tu.tree_unflatten(r_tree, list(rs)), _tu.tree_unflatten(out_tree[0], list(cts)))
        leaves, tree = _tu.tree_flatten(ct, is_leaf=lambda v: v is None)
        if len(leaves) != len(l_leaves):
            raise TypeError(f"linear_call: fun_transpose returned {len(leaves)} cotangents for "
                            f"{len(l_leaves)} linear inputs")
        return [_graft.zeros_like(l) if c is None else c for c, l in zip(leaves, l_leaves)]

    # (private: custom_linear_solve's and custom_root's derivatives in the residuals, so that a second
    # derivative does not differentiate the solver) (res, res tangents, linear, outputs) -> out tangents
    def flat_res_jvp(rule, in_tree, get_out_tree):
        if rule is None:
            return None

        def run(rs, drs, ls, outs):
            t = rule(_tu.tree_unflatten(r_tree, list(rs)), _tu.tree_unflatten(r_tree, list(drs)),
                     _tu.tree_unflatten(in_tree(), list(ls)), _tu.tree_unflatten(get_out_tree(), list(outs)))
            return _tu.tree_leaves(t)
        return run

    outs = _graft.linear_call(flat_fun, flat_transpose, r_leaves, l_leaves, getattr(fun, "__name__", "linear_call"),
                              flat_res_jvp(_fun_res_jvp, lambda: l_tree, lambda: out_tree[0]),
                              flat_res_jvp(_transpose_res_jvp, lambda: out_tree[0], lambda: l_tree))
    return _tu.tree_unflatten(out_tree[0], list(outs))


def closure_convert(fun, *example_args):
    """(converted, consts) as JAX's jax.closure_convert: fun traced on example_args, with the traced values
    it closes over (an enclosing grad's or jit's tracers) hoisted out as `consts`; `converted(*args,
    *consts)` computes fun(*args). custom_vjp / custom_jvp rules must not close over traced values, so a
    function that does is converted and its consts passed as explicit arguments (custom_linear_solve and
    custom_root do this). Concrete values it closes over stay inside."""
    leaves, in_tree = _flat_arrays(list(example_args), "closure_convert")
    out_trees = []

    def flat(xs):
        out_leaves, out_tree = tree_flatten(fun(*tree_unflatten(in_tree, xs)))
        out_trees.append(out_tree)
        return out_leaves

    call, consts = _graft.closure_convert(flat, leaves)
    out_tree = out_trees[0]
    nargs = len(example_args)

    def converted(*args):
        if len(args) != nargs + len(consts):
            raise TypeError(f"closure_convert: the converted function takes {nargs} argument(s) and "
                            f"{len(consts)} constant(s), got {len(args)}")
        arg_leaves, tree = tree_flatten(list(args[:nargs]))
        if tree != in_tree:
            raise TypeError(f"closure_convert: arguments of structure {tree}, traced with {in_tree}")
        return tree_unflatten(out_tree, call(*arg_leaves, *args[nargs:]))

    return converted, list(consts)


def named_scope(name):
    """A context whose traced equations carry `name` on their name stack (JAX's jax.named_scope):
    printed by make_jaxpr(...).pretty_print(name_stack=True) and in GRAFT_PROFILE's rows."""
    if not isinstance(name, str):
        raise TypeError(f"named_scope: the name must be a string, got {type(name).__name__}")
    return _graft.NameScope(name)


def named_call(fun, *, name=None):
    """fun whose equations are traced under named_scope(name or fun's name) (JAX's jax.named_call)."""
    scope = name if name is not None else getattr(fun, "__name__", "named_call")

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        with named_scope(scope):
            return fun(*args, **kwargs)

    return wrapped


def ensure_compile_time_eval():
    """A context in which operations whose operands are all concrete run now, even while jit (or another
    transformation) traces, so that values derived from constants stay concrete for Python control flow
    and shapes (JAX's jax.ensure_compile_time_eval). Operations on traced values are traced as usual."""
    return _graft.CompileTimeEval()


class ShapedArray:
    """An array's abstract value (what jax.typeof returns): shape, dtype and weak type; prints as JAX's
    short form, e.g. float32[3]."""

    __slots__ = ("shape", "dtype", "weak_type")

    def __init__(self, shape, dtype, weak_type=False):
        self.shape, self.dtype, self.weak_type = tuple(shape), _dtype_obj(dtype), bool(weak_type)

    @property
    def ndim(self):
        return len(self.shape)

    def str_short(self):
        return f"{str(self.dtype)}[{','.join(str(d) for d in self.shape)}]"

    def __str__(self):
        return self.str_short()

    def __repr__(self):
        return f"ShapedArray({self.str_short()}{', weak_type=True' if self.weak_type else ''})"

    def __eq__(self, other):
        return isinstance(other, ShapedArray) and (self.shape, str(self.dtype), self.weak_type) == \
            (other.shape, str(other.dtype), other.weak_type)

    def __hash__(self):
        return hash((self.shape, str(self.dtype), self.weak_type))


def typeof(x):
    """x's abstract value (jax.typeof): a ShapedArray, also for traced values."""
    a = x if isinstance(x, Array) else _graft.asarray(x)
    return ShapedArray(a.shape, a.dtype, a.weak_type)


class checkpoint_policies:
    """JAX's checkpoint policies, for checkpoint(fun, policy=...): which intermediate values the forward
    pass saves for reverse mode (the rest are recomputed)."""
    everything_saveable = "everything_saveable"
    nothing_saveable = "nothing_saveable"
    dots_saveable = "dots_saveable"
    checkpoint_dots = "dots_saveable"
    # graft saves every product's result here (a superset of JAX's choice: as much recomputation saved)
    dots_with_no_batch_dims_saveable = "dots_saveable"

    @staticmethod
    def save_only_these_names(*names):
        return ("save_only_these_names", tuple(names))


def checkpoint(fun, policy=None, names=()):
    """fun whose intermediate values reverse mode recomputes instead of storing (JAX's jax.checkpoint /
    remat). policy: None (save nothing), "dots_saveable", "everything_saveable", or
    "save_only_these_names" with names marked by graft.checkpoint_name(x, name)."""

    @functools.wraps(fun)
    def wrapped(*args):
        leaves, tree = _flat_arrays(args, "checkpoint")
        box = {}

        def flat(xs):
            o, box["out"] = tree_flatten(fun(*tree_unflatten(tree, xs)))
            return o

        pol, nm = policy, names
        if isinstance(pol, tuple):  # checkpoint_policies.save_only_these_names(...)
            pol, nm = pol[0], tuple(nm) + tuple(pol[1])
        outs = _graft.checkpoint(flat, leaves, pol or "nothing_saveable", list(nm))
        return tree_unflatten(box["out"], outs)

    return wrapped


remat = checkpoint
checkpoint_name = _graft.checkpoint_name


# ---- SPMD ----------------------------------------------------------------------------------------------
def shard_map(fun, mesh, in_specs, out_specs):
    """fun run on every device's block of its arguments (JAX's shard_map): in_specs / out_specs give,
    per argument / output (a PartitionSpec each, or one for all), the mesh axes each dimension is split
    over; collectives inside (lax.psum(x, "data"), ...) combine the devices. On one process the
    arguments are whole arrays; under mpirun each process passes its own blocks."""
    from .sharding import PartitionSpec

    is_spec = lambda p: isinstance(p, PartitionSpec)

    @functools.wraps(fun)
    def wrapped(*args):
        leaves, tree = _flat_arrays(args, "shard_map")
        per_arg = in_specs if isinstance(in_specs, (tuple, list)) and not is_spec(in_specs) else (in_specs,) * len(args)
        if len(per_arg) != len(args):
            raise ValueError(f"shard_map: in_specs has {len(per_arg)} entries for {len(args)} arguments")
        ins = broadcast_prefix(tuple(per_arg), args, "shard_map in_specs", is_spec)
        box = {}

        def flat(xs):
            o, box["out"] = tree_flatten(fun(*tree_unflatten(tree, xs)))
            return o

        single = isinstance(out_specs, PartitionSpec) or out_specs is None
        outs_spec = [out_specs] if single else list(out_specs)
        outs = _graft.shard_map(flat, mesh, [tuple(s) if s is not None else None for s in ins],
                                [tuple(s) if s is not None else None for s in outs_spec], leaves)
        return tree_unflatten(box["out"], outs)

    return wrapped


def pmap(fun, axis_name="i"):
    """fun on each device's slice of the leading axis of every argument, results stacked (JAX's pmap)."""
    from .sharding import P
    from ._graft import Mesh, devices

    @functools.wraps(fun)
    def wrapped(*args):
        def body(*blocks):
            out = fun(*[b[0] for b in blocks])
            return tree_map(lambda o: _graft.expand_dims(o, 0), out)

        mesh = Mesh(devices(), [axis_name])
        return shard_map(body, mesh, tuple(P(axis_name) for _ in args), P(axis_name))(*args)

    return wrapped


# ---- shapes without computation, linearization, transposition -----------------------------------------
def _dtype_obj(dtype):
    """A NumPy dtype, or the string "bfloat16" (NumPy has none), for a dtype, scalar type or name."""
    import numpy as np
    if isinstance(dtype, str) and dtype in ("bfloat16", "bf16"):
        return "bfloat16"
    return np.dtype(dtype)


class ShapeDtypeStruct:
    """An array's type without its values (JAX's jax.ShapeDtypeStruct): what eval_shape takes and returns."""

    __slots__ = ("shape", "dtype", "weak_type", "sharding")

    def __init__(self, shape, dtype, weak_type=False, sharding=None):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = _dtype_obj(dtype)
        self.weak_type = bool(weak_type)
        self.sharding = sharding

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return math.prod(self.shape)

    def __eq__(self, other):
        return (isinstance(other, ShapeDtypeStruct) and (self.shape, str(self.dtype), self.weak_type)
                == (other.shape, str(other.dtype), other.weak_type))

    def __hash__(self):
        return hash((self.shape, str(self.dtype), self.weak_type))

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype}{weak})"


def _spec_of(x):
    if isinstance(x, ShapeDtypeStruct):
        return (list(x.shape), str(x.dtype), x.weak_type)
    if not isinstance(x, Array) and hasattr(x, "shape") and hasattr(x, "dtype"):  # NumPy arrays and the like
        return (list(x.shape), str(x.dtype), False)
    a = _as_array(x, "eval_shape")
    return (list(a.shape), str(a.dtype), bool(a.weak_type))


def eval_shape(fun, *args, **kwargs):
    """The types of fun(*args, **kwargs) as a pytree of ShapeDtypeStruct, found by tracing: nothing is
    computed or allocated. Arguments may be arrays, NumPy arrays, Python numbers or ShapeDtypeStructs."""
    leaves, in_tree = tree_flatten((args, kwargs))
    specs = [_spec_of(x) for x in leaves]
    box = {}

    def flat(xs):
        a, k = tree_unflatten(in_tree, xs)
        o, box["out"] = tree_flatten(fun(*a, **k))
        return [_as_array(v, "eval_shape") for v in o]

    outs = _graft.eval_shape(flat, specs)
    return tree_unflatten(box["out"], [ShapeDtypeStruct(s, d, w) for s, d, w in outs])


def linearize(fun, *primals):
    """(fun(*primals), f_jvp): f_jvp(*tangents) is fun's JVP at primals, evaluated on the residuals stored by
    one linearization (fun does not run again), as JAX's jax.linearize."""
    leaves, in_tree = _flat_arrays(primals, "linearize")
    box = {}

    def flat(xs):
        o, box["out"] = tree_flatten(fun(*tree_unflatten(in_tree, xs)))
        return [_as_array(v, "linearize") for v in o]

    outs, jvp_fn = _graft.linearize(flat, leaves)
    out_tree = box["out"]

    def f_jvp(*tangents):
        t_leaves, t_tree = _flat_arrays(tangents, "linearize")
        if t_tree != in_tree:
            raise ValueError(f"linearize: tangents {t_tree} do not have the structure of the primals {in_tree}")
        return tree_unflatten(out_tree, jvp_fn(t_leaves))

    return tree_unflatten(out_tree, outs), f_jvp


def linear_transpose(fun, *primals, reduce_axes=()):
    """The transpose of fun, a function linear in its arguments (traced at the primals' types; their
    values are not used): f_t(cotangent of fun's output) -> a tuple of cotangents shaped like primals."""
    leaves, in_tree = _flat_arrays(primals, "linear_transpose")
    box = {}

    def flat(xs):
        o, box["out"] = tree_flatten(fun(*tree_unflatten(in_tree, xs)))
        return [_as_array(v, "linear_transpose") for v in o]

    t = _graft.linear_transpose(flat, leaves)
    out_tree = box["out"]

    def f_transpose(out_cotangent):
        c_leaves, c_tree = _flat_arrays(out_cotangent, "linear_transpose")
        if c_tree != out_tree:
            raise ValueError(f"linear_transpose: the cotangent {c_tree} does not have the structure of the "
                             f"output {out_tree}")
        return tree_unflatten(in_tree, t(c_leaves))

    return f_transpose


def block_until_ready(tree):
    """Waits for every array in the pytree; returns the pytree."""
    for x in tree_flatten(tree)[0]:
        if isinstance(x, Array):
            x.block_until_ready()
    return tree


# ---- host callbacks ---------------------------------------------------------------------------------------
def _host_callback(kind, callback, result_shape_dtypes, args, kwargs):
    import numpy as np
    leaves, in_tree = _flat_arrays((args, kwargs), kind + "_callback")
    res_leaves, res_tree = tree_flatten(result_shape_dtypes)
    specs = []
    for r in res_leaves:
        if not hasattr(r, "shape") or not hasattr(r, "dtype"):
            raise TypeError(f"{kind}_callback: result_shape_dtypes must hold ShapeDtypeStructs (or arrays), got {r!r}")
        specs.append((list(r.shape), str(r.dtype)))

    def host(xs):
        a, k = tree_unflatten(in_tree, [np.asarray(x) for x in xs])
        out = callback(*a, **k)
        o, d = tree_flatten(out)
        if kind != "debug" and d != res_tree:
            raise TypeError(f"{kind}_callback: the callback returned {d}, result_shape_dtypes is {res_tree}")
        return [np.asarray(v) for v in o] if kind != "debug" else []

    outs = _graft.host_callback(host, specs, leaves, kind)
    return None if kind == "debug" else tree_unflatten(res_tree, outs)


def pure_callback(callback, result_shape_dtypes, *args, sharding=None, vmap_method=None, **kwargs):
    """callback(*args, **kwargs) on the host with NumPy arrays, from inside any transformation (jit too); it must
    return arrays of result_shape_dtypes (a pytree of ShapeDtypeStruct) and be pure: an unused call may be
    dropped. vmap calls it once per example; grad raises (give it a custom_jvp)."""
    return _host_callback("pure", callback, result_shape_dtypes, args, kwargs)


def io_callback(callback, result_shape_dtypes, *args, sharding=None, ordered=False, **kwargs):
    """pure_callback for a callback with side effects: never dropped or merged, called in program order."""
    return _host_callback("io", callback, result_shape_dtypes, args, kwargs)
