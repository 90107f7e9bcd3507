"""Writes the public names of JAX's modules (jax, jax.numpy, jax.lax, jax.nn, jax.nn.initializers,
jax.tree_util, jax.tree, jax.random, jax.scipy.special) from a JAX source checkout, one file per module in
this folder, as the static list tools/jax_coverage.py compares graft with.

    python3 tools/jax_api/extract.py /path/to/jax-checkout

A public name is one a module's source binds without a leading underscore: JAX's `from x import a as a`
re-exports, its own definitions and assignments, less what it deletes. The lists are read from the source
(not by importing JAX), so no JAX installation is needed.
"""
import ast
import os
import sys

MODULES = {
    "jax": "jax/__init__.py",
    "jax.numpy": "jax/numpy/__init__.py",
    "jax.lax": "jax/lax/__init__.py",
    "jax.nn": "jax/nn/__init__.py",
    "jax.nn.initializers": "jax/nn/initializers.py",
    "jax.tree_util": "jax/tree_util.py",
    "jax.tree": "jax/tree.py",
    "jax.random": "jax/random.py",
    "jax.scipy.special": "jax/scipy/special.py",
}


def public_names(source):
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            for a in node.names:
                name = a.asname or a.name
                if a.name != "*" and not name.startswith("_"):
                    names.add(name)
        elif isinstance(node, ast.Import):
            for a in node.names:
                # `import jax.numpy as numpy`-style submodule re-exports
                if a.asname and not a.asname.startswith("_"):
                    names.add(a.asname)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.col_offset == 0:
            if not node.name.startswith("_"):
                names.add(node.name)
        elif isinstance(node, ast.Assign) and node.col_offset == 0:
            for t in node.targets:
                if isinstance(t, ast.Name) and not t.id.startswith("_"):
                    names.add(t.id)
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Delete):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    names.discard(t.id)
    return sorted(names)


def main(root):
    here = os.path.dirname(os.path.abspath(__file__))
    for mod, path in MODULES.items():
        with open(os.path.join(root, path)) as f:
            names = public_names(f.read())
        with open(os.path.join(here, mod + ".txt"), "w") as f:
            f.write(f"# public names of {mod}, read from {path} of JAX's source (see README.md here)\n")
            f.write("\n".join(names) + "\n")
        print(f"{mod}: {len(names)} names")


if __name__ == "__main__":
    main(sys.argv[1])
