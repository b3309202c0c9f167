"""A real local multi-node Ray cluster for the fleet tests (and for trying `harness fleet`
on one machine): a head node offering no CPU and no abba_node, and N worker nodes offering
`abba_node: 1` each, every one bound to 127.0.0.1.

Run it inside a network namespace of its own, so that all of Ray's traffic stays on
loopback (Ray otherwise binds to the machine's interface address):

    unshare -n bash -c 'ip link set lo up && exec python tests/fleet_cluster.py INFO.json 2'

It writes INFO.json (the GCS address, its own pid, each worker node's id and raylet pid)
once the nodes are up, then waits: a line `add` on stdin adds a worker node (INFO.json is
rewritten), end of input (or SIGTERM) stops every process of the cluster and exits.
Commands reach it from the same namespace: `nsenter --net=/proc/PID/ns/net ...`.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import time


def main(info_path: str, workers: int) -> int:
    from ray.cluster_utils import Cluster

    t0 = time.monotonic()
    cluster = Cluster(initialize_head=True, shutdown_at_exit=True,
                      head_node_args={"num_cpus": 0, "node_ip_address": "127.0.0.1", "include_dashboard": False})
    nodes = []

    def add() -> None:
        nodes.append(cluster.add_node(num_cpus=1, resources={"abba_node": 1}, node_ip_address="127.0.0.1"))
        cluster.wait_for_nodes()

    def write() -> None:
        info = {"address": cluster.address, "pid": os.getpid(), "start_s": time.monotonic() - t0,
                "nodes": [{"node_id": n.node_id, "raylet_pid": n.all_processes["raylet"][0].process.pid}
                          for n in nodes]}
        tmp = f"{info_path}.tmp"
        with open(tmp, "w") as fh:
            json.dump(info, fh)
        os.rename(tmp, info_path)

    def stop(*_):
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    try:
        for _ in range(workers):
            add()
        write()
        for line in sys.stdin:
            if line.strip() == "add":
                add()
                write()
    finally:
        cluster.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 2))
