"""How much of JAX's public interface graft has, in Python and in C++.

    PYTHONPATH=build/python python3 tools/jax_coverage.py [--missing] [--check]

The lists of JAX's names are tools/jax_api/<module>.txt, read from JAX's source at version 0.11.1
(github.com/jax-ml/jax at cec06d1, 2026-08-08) by tools/jax_api/extract.py. A name counts in Python when
the matching graft module has the attribute; in C++ when a header of the matching C++ layer declares a
function, class or constant of that name (a textual check: a declaration, not its semantics).

Scope, as issue 34 sets it:
- jax.numpy without the complex-only names and the linalg / fft submodules (issue 33 covers them), the
  sub-byte and 8-bit float types graft has no dtype for, and NumPy's text/printing machinery;
- jax.lax's functions: not its primitive objects (`add_p`, ...) nor its classes and type aliases;
- jax.nn's activations (every public function but the scaled-matmul ones), jax.nn.initializers,
  jax.tree_util, jax.tree, jax.random and jax.scipy.special in full;
- jax's top level: the transformations and APIs issue 34 lists.
--check exits non-zero when a scoped figure is below its goal (90% numpy, 80% lax, 100% nn activations
and the listed top-level APIs); --check=jax.numpy,jax.lax checks only those modules.
"""
import importlib
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

COMPLEX_ONLY = {"ComplexWarning", "angle", "cdouble", "complex128", "complex64", "complex_", "complexfloating",
                "conj", "conjugate", "csingle", "imag", "iscomplex", "iscomplexobj", "isreal", "isrealobj", "real",
                "sort_complex", "fft", "linalg"}
NO_DTYPE = {"float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz",
            "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "int1", "int2",
            "int4", "uint1", "uint2", "uint4"}
PRINTING = {"array_repr", "array_str", "get_printoptions", "printoptions", "set_printoptions", "frompyfunc", "ufunc"}
NN_NOT_ACTIVATIONS = {"get_scaled_dot_general_config", "scaled_dot_general", "scaled_matmul", "initializers"}
# the top-level APIs issue 34 lists (plus the transformations every JAX user calls)
TOP_LEVEL = ["grad", "value_and_grad", "jvp", "vjp", "vmap", "jit", "make_jaxpr", "jacfwd", "jacrev", "hessian",
             "eval_shape", "ShapeDtypeStruct", "linearize", "linear_transpose", "custom_jvp", "custom_vjp",
             "custom_gradient", "closure_convert", "pure_callback", "debug", "named_scope", "named_call",
             "disable_jit", "ensure_compile_time_eval", "block_until_ready", "checkpoint", "checkpoint_policies",
             "remat", "typeof", "config", "tree_util", "tree", "device_put", "device_get", "devices", "pmap",
             "shard_map", "numpy", "lax", "nn", "random", "scipy"]

MODULES = {  # JAX module: (graft module, C++ headers, the scope's filter)
    "jax": ("graft", ["graft/transforms/*.h", "include/graft/graft.h", "graft/core/*.h", "graft/parallel/*.h",
                      "graft/runtime/*.h"],
            lambda n: n in TOP_LEVEL),
    "jax.numpy": ("graft.numpy", ["graft/ops/ops.h", "graft/ops/numpy_more.h", "graft/ops/numpy_stats.h",
                                  "graft/ops/numpy_shape.h", "graft/ops/linalg.h", "graft/core/dtype.h",
                                  "graft/core/half.h", "graft/ops/numpy_dtypes.h", "graft/ops/numpy_sets.h"],
                  lambda n: n not in COMPLEX_ONLY | NO_DTYPE | PRINTING),
    "jax.lax": ("graft.lax", ["graft/prims/lax.h", "graft/transforms/control.h", "graft/ops/ops.h", "graft/ops/lax_more.h",
                              "graft/parallel/*.h"],
                lambda n: not n.endswith("_p") and not n[:1].isupper() and n not in ("complex", "conj", "real",
                                                                                    "imag", "fft")),
    "jax.nn": ("graft.nn", ["graft/nn/nn.h", "graft/ops/ops.h"], lambda n: n not in NN_NOT_ACTIVATIONS),
    "jax.nn.initializers": ("graft.nn.initializers", ["graft/nn/nn.h"], lambda n: True),
    "jax.tree_util": ("graft.tree_util", ["graft/transforms/pytree.h", "graft/transforms/tree_util.h"], lambda n: True),
    "jax.tree": ("graft.tree", ["graft/transforms/pytree.h", "graft/transforms/tree_util.h"], lambda n: True),
    "jax.random": ("graft.random", ["graft/random/random.h"], lambda n: True),
    "jax.scipy.special": ("graft.scipy.special", ["graft/ops/special.h", "graft/ops/ops.h"], lambda n: True),
}
GOALS = {"jax.numpy": 0.90, "jax.lax": 0.80, "jax.nn": 1.0, "jax": 1.0}


def jax_names(mod):
    with open(os.path.join(HERE, "jax_api", mod + ".txt")) as f:
        return [l.strip() for l in f if l.strip() and not l.startswith("#")]


def cpp_text(patterns):
    import glob
    text = []
    for p in patterns:
        for path in sorted(glob.glob(os.path.join(ROOT, p))):
            with open(path) as f:
                text.append(f.read())
    return "\n".join(text)


def in_cpp(name, text):
    return re.search(r"(\b%s\s*[(<{=;])|((class|struct|using|namespace)\s+%s\b)" % (re.escape(name), re.escape(name)),
                     text) is not None


def graft_module(name):
    try:
        return importlib.import_module(name)
    except ImportError:
        import graft
        obj = graft
        for part in name.split(".")[1:]:
            obj = getattr(obj, part)
        return obj


def main(argv):
    show_missing = "--missing" in argv
    check = next((a for a in argv if a.startswith("--check")), None)
    checked = set(check.split("=", 1)[1].split(",")) if check and "=" in check else set(GOALS)
    failed = []
    print(f"{'JAX module':22} {'scope':>5} {'Python':>14} {'C++':>14}")
    for mod, (gmod, headers, scope) in MODULES.items():
        names = [n for n in jax_names(mod) if scope(n)]
        if mod == "jax":
            names = [n for n in TOP_LEVEL]
        m = graft_module(gmod)
        text = cpp_text(headers)
        py = [n for n in names if hasattr(m, n)]
        cc = [n for n in names if in_cpp(n, text)]
        pf = len(py) / max(len(names), 1)
        print(f"{mod:22} {len(names):5} {len(py):5} ({pf:6.1%}) {len(cc):5} ({len(cc) / max(len(names), 1):6.1%})")
        if show_missing:
            print("    Python lacks:", " ".join(n for n in names if n not in py) or "-")
            print("    C++ lacks:   ", " ".join(n for n in names if n not in cc) or "-")
        if mod in GOALS and mod in checked and pf < GOALS[mod]:
            failed.append(f"{mod}: {pf:.1%} < {GOALS[mod]:.0%}")
    if failed:
        print("below the goals:", "; ".join(failed))
    return 1 if (check and failed) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
