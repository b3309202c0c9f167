"""Reaching a Ray cluster: connect to one (`--address`) or start a local one, ship the
repository to its nodes, and list the nodes that offer the exclusive `abba_node`.

How the code reaches a node (`--code`):
* `ship` (the default): the repository goes as Ray's job-level runtime environment
  `working_dir` (a zip in Ray's object store, at most 512 MiB, unpacked by each node into
  its session folder; the job runs there). Left out: what .gitignore lists (`.venv`,
  `.cache`, `out/`, ...), `evidence/` and `.git/objects` (the committed campaigns build
  their targets from `campaigns/NAME/tree` + patch; `.git` itself goes, so the node finds
  the repository's root and records the campaign's path relative to it). The harness and
  its dependencies are the node's own Python environment (the one `ray start` ran from),
  never the shipped copy: the caller holds the node's harness source digest to its own.
* `shared`: every node sees the caller's repository at the same path (one machine, or a
  shared filesystem); nothing is shipped.
"""
from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

from harness.fleet import RESOURCE

# Ray leaves out .git, .venv, venv and __pycache__ by default; the fleet keeps .git (less
# its objects, below) so a node finds the repository root.
RAY_DEFAULT_EXCLUDES = ".venv,venv,__pycache__"
SHIP_EXCLUDES = [".git/objects/", ".git/lfs/", ".git/modules/", ".git/worktrees/", "evidence/", "out/",
                 ".cache/", "*.partial-*", ".pytest_cache/", ".hypothesis/"]


class FleetError(Exception):
    """The fleet cannot start: one line, exit 2 (usage or unusable input)."""


def ray_module():
    try:
        import ray
    except ImportError:
        raise FleetError("Ray is not installed: pip install -e '.[fleet]' (`make venv` installs it)") from None
    return ray


@dataclass
class Connection:
    address: str  # the GCS address (HOST:PORT)
    cluster_id: str
    local: bool  # a local Ray instance this command started (and stops)
    code: str  # ship | shared
    connect_s: float  # ray.init: for ship, packing and uploading the repository too


def connect(address: str | None, repo: Path, code: str, out: Path) -> Connection:
    """ray.init: to the cluster at `address`, or a local instance on this machine (one node
    offering abba_node: 1, bound to loopback)."""
    ray = ray_module()
    kwargs: dict[str, object] = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.ERROR}
    if code == "ship":
        excludes = list(SHIP_EXCLUDES)
        try:
            excludes.append(out.resolve().relative_to(repo.resolve()).as_posix() + "/")
        except ValueError:
            pass
        os.environ["RAY_OVERRIDE_RUNTIME_ENV_DEFAULT_EXCLUDES"] = RAY_DEFAULT_EXCLUDES
        kwargs["runtime_env"] = {"working_dir": str(repo), "excludes": excludes}
    if address:
        kwargs["address"] = address
    else:
        kwargs.update(address="local", resources={RESOURCE: 1}, _node_ip_address="127.0.0.1")
    t0 = time.monotonic()
    try:
        ray.init(**kwargs)
    except (ConnectionError, ValueError, RuntimeError, OSError) as exc:
        raise FleetError(f"cannot reach the Ray cluster{f' at {address}' if address else ''}: "
                         f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    connect_s = time.monotonic() - t0
    _quiet_cluster_errors(ray)
    try:
        cluster_id = ray._private.worker.global_worker.node.cluster_id.hex()
    except AttributeError:  # a Ray Client connection (ray://) has no local node
        cluster_id = ""
    try:
        gcs = ray.get_runtime_context().gcs_address
    except AttributeError:
        gcs = address
    return Connection(address=gcs or address or "", cluster_id=cluster_id, local=not address, code=code,
                      connect_s=connect_s)


def _quiet_cluster_errors(ray) -> None:
    """Ray prints every error the cluster publishes (a node marked dead, with 20 lines of
    its raylet's log) on the driver's stdout; keep the first line of each, on stderr."""
    import sys

    module = ray._private.worker
    original = getattr(module, "print_to_stdstream", None)
    if original is None:
        return

    def first_lines(data, ignore_prefix: bool = False):
        if data.get("pid") != "raylet":
            return original(data, ignore_prefix)
        for message in data.get("lines") or []:
            first = next((ln.strip() for ln in str(message).splitlines() if ln.strip()), "")
            if first:
                print(f"ray: {first[:300]}", file=sys.stderr, flush=True)

    module.print_to_stdstream = first_lines


def disconnect() -> None:
    ray = ray_module()
    if ray.is_initialized():
        ray.shutdown()


def abba_nodes() -> list[dict]:
    """The live nodes offering abba_node: [{node_id, ip, hostname}]."""
    ray = ray_module()
    return [{"node_id": n["NodeID"], "ip": n.get("NodeManagerAddress"), "hostname": n.get("NodeManagerHostname")}
            for n in ray.nodes() if n.get("Alive") and (n.get("Resources") or {}).get(RESOURCE, 0) >= 1]


def node_alive(node_id: str) -> bool:
    ray = ray_module()
    return any(n["NodeID"] == node_id and n.get("Alive") for n in ray.nodes())
