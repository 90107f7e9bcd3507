"""JAX's jax.tree namespace: graft.tree.map, leaves, structure, ... (graft.tree_util's functions under their
short names)."""
from ._tree import keystr  # noqa: F401
from ._tree import tree_all as all  # noqa: A001
from ._tree import tree_broadcast as broadcast
from ._tree import tree_flatten as flatten
from ._tree import tree_flatten_with_path as flatten_with_path
from ._tree import tree_leaves as leaves
from ._tree import tree_leaves_with_path as leaves_with_path
from ._tree import tree_map as map  # noqa: A001
from ._tree import tree_map_with_path as map_with_path
from ._tree import tree_reduce as reduce
from ._tree import tree_structure as structure
from ._tree import tree_transpose as transpose
from ._tree import tree_unflatten as unflatten
from ._tree import tree_reduce_associative as reduce_associative


def static(**kwargs):
    """A dataclass field marked static (metadata {"static": True}) for register_dataclass: part of the
    tree's structure, not a leaf. Takes dataclasses.field's arguments."""
    import dataclasses
    metadata = {"static": True, **(kwargs.pop("metadata", None) or {})}
    return dataclasses.field(metadata=metadata, **kwargs)

__all__ = ["all", "broadcast", "flatten", "flatten_with_path", "keystr", "leaves", "leaves_with_path", "map",
           "map_with_path", "reduce", "reduce_associative", "static", "structure", "transpose", "unflatten"]
