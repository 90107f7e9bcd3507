"""Devices, meshes, partition specs and named shardings (JAX's jax.sharding), for graft.shard_map, graft.pmap
and sharded jit (graft.jit(in_shardings=, out_shardings=))."""
from . import _graft
from ._graft import Mesh, NamedSharding, ShardedArray, devices, local_devices, process_count, process_index  # noqa: F401


class PartitionSpec(tuple):
    """For each dimension, the mesh axis it is split over (None: not split; a tuple: several axes, the
    major first): P("data", None), P(("data", "model"))."""

    def __new__(cls, *dims):
        return super().__new__(cls, dims)

    def __repr__(self):
        return "P(" + ", ".join(repr(d) for d in self) + ")"


P = PartitionSpec


def initialize():
    """Joins the job mpirun started (one process per rank); alone, the process runs by itself."""
    _graft.distributed_initialize()
