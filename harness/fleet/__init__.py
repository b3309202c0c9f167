"""Campaigns and reproductions across a fleet of machines, on Ray.

One rule, as every benchmark fleet keeps it: one job per machine at a time, and never a
comparison split across machines. Each campaign (each replica) runs whole on one node,
as the ordinary `harness run` (or `harness reproduce`) in a subprocess there; the sealed
bundle comes back to the caller as a tar stream, is verified there (`verify --repo`), and
only then is renamed into place under --out.

Ray's CPU "resources" are logical, not isolation: a node stays quiet only if every job
asks for the whole node. Each worker node offers exactly `abba_node: 1` (RESOURCE) and
every fleet job asks for it; the head node offers `num_cpus=0` and no `abba_node`.

Nothing here imports Ray at module level: `harness --help`, `harness run` and workers
never pay for it. A fleet job tells the `harness run` it starts where it runs through the
environment variables engine/environment.py names and records as environment.json's `fleet`.

cluster: connecting (a given cluster or a local instance) and the nodes with RESOURCE;
jobs: what runs on a node (imported there by Ray); schedule: placing jobs, one per node, and
their faults; collect: a returned bundle verified on the caller before it lands; report:
the cross-machine view.
"""
from __future__ import annotations

RESOURCE = "abba_node"  # each worker node offers exactly 1; each fleet job asks for 1


def short(node_id: str) -> str:
    """The node id as a folder name and in tables: its first 12 hex digits."""
    return node_id[:12]
