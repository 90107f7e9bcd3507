"""JAX's jax.tree_util: flattening, rebuilding and mapping over pytrees (nested lists, tuples, named tuples,
dicts, None and registered node types), with key paths, and the registration of custom node types
(classes, dataclasses, static types). Every transformation (grad, vmap, jit, scan, checkpoint, ...)
accepts and returns pytrees of registered types."""
from ._tree import (DictKey, FlattenedIndexKey, GetAttrKey, Partial, PyTreeDef, SequenceKey,  # noqa: F401
                    all_leaves, keystr, register_dataclass, register_pytree_node, register_pytree_node_class,
                    register_pytree_with_keys, register_static, tree_all, tree_broadcast, tree_flatten,
                    tree_flatten_with_path, tree_leaves, tree_leaves_with_path, tree_map, tree_map_with_path,
                    tree_reduce, tree_structure, tree_transpose, tree_unflatten, treedef_children, treedef_is_leaf,
                    treedef_tuple, is_tree_node, flatten_one_level, flatten_one_level_with_keys,
                    tree_reduce_associative, register_pytree_with_keys_class, default_registry, KeyEntry, KeyPath)

__all__ = ["DictKey", "FlattenedIndexKey", "GetAttrKey", "Partial", "PyTreeDef", "SequenceKey", "all_leaves",
           "keystr", "register_dataclass", "register_pytree_node", "register_pytree_node_class",
           "register_pytree_with_keys", "register_static", "tree_all", "tree_broadcast", "tree_flatten",
           "tree_flatten_with_path", "tree_leaves", "tree_leaves_with_path", "tree_map", "tree_map_with_path",
           "tree_reduce", "tree_structure", "tree_transpose", "tree_unflatten", "treedef_children", "treedef_is_leaf",
           "treedef_tuple", "is_tree_node", "flatten_one_level", "flatten_one_level_with_keys",
           "tree_reduce_associative", "register_pytree_with_keys_class", "default_registry", "KeyEntry", "KeyPath"]
