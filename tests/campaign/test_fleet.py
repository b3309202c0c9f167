"""harness fleet on a real Ray cluster on this machine (no fake Ray): a head node offering
no CPU and two worker nodes offering `abba_node: 1` each (tests/fleet_cluster.py), all in
a network namespace of the test's own (`unshare -n`, only `lo` up), so every byte of Ray's
traffic stays on loopback; the `harness fleet` commands join that namespace with
`nsenter --net`. Every cluster is torn down, also when a test fails, and no process of it
(raylet, gcs_server, ray::..., a node's harness run) may remain in the namespace.

Cases: the demo campaign with two replicas lands verified on two distinct nodes and the
cross-machine table is printed (and `fleet report` and `reproduce --fleet 2` read it); a
node killed mid-run gives one failed line while the other replica lands; a bundle
tampered in transit is refused and nothing lands; a job past --timeout fails with one
line; more replicas than nodes is one line; an interrupted fleet run cancels its jobs and
says what finished; without --address, a local Ray instance runs a campaign.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import ROOT, no_traceback, wait_until

pytestmark = [pytest.mark.fleet]

DEMO = "campaigns/demo.yaml"
CLUSTER_SCRIPT = ROOT / "tests" / "fleet_cluster.py"
START_TIMEOUT_S = 180


def _unavailable() -> str | None:
    """Why a local cluster in a network namespace cannot be started here, or None."""
    try:
        import ray  # noqa: F401
    except ImportError:
        return "Ray is not installed (pip install -e '.[fleet]'; make venv installs it)"
    if os.geteuid() != 0:
        return "needs root for a network namespace of its own (unshare -n, nsenter)"
    for tool in ("unshare", "nsenter", "ip"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    probe = subprocess.run(["unshare", "-n", "ip", "link", "set", "lo", "up"], capture_output=True, text=True)
    if probe.returncode:
        return f"cannot create a network namespace: {probe.stderr.strip()}"
    return None


class LocalCluster:
    """A real multi-node Ray cluster on loopback, in a network namespace of its own."""

    def __init__(self, where: Path, workers: int = 2):
        self.where = where
        where.mkdir(parents=True, exist_ok=True)
        # Ray's session folder holds Unix sockets: a short path keeps them under 108 bytes.
        self.ray_tmp = Path(tempfile.mkdtemp(prefix="abba-ray-", dir="/tmp"))
        self.node_tmp = where / "node-tmp"
        self.node_tmp.mkdir()
        self.info_path = where / "cluster.json"
        self.log = open(where / "cluster.log", "wb")
        env = {**os.environ, "RAY_TMPDIR": str(self.ray_tmp), "TMPDIR": str(self.node_tmp)}
        self.proc = subprocess.Popen(
            ["unshare", "-n", "bash", "-c",
             f"ip link set lo up && exec {sys.executable} {CLUSTER_SCRIPT} {self.info_path} {workers}"],
            cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=self.log, stderr=subprocess.STDOUT,
            start_new_session=True)
        self.netns = None  # known once the cluster is up: unshare has run by then
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self.info_path.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the local Ray cluster did not come up: {self.log_tail()}")
            time.sleep(0.2)
        netns = os.readlink(f"/proc/{self.proc.pid}/ns/net")
        if netns == os.readlink("/proc/self/ns/net"):
            self.stop()
            raise RuntimeError("the cluster runs in this process's own network namespace; refusing to go on")
        self.netns = netns
        self.info = json.loads(self.info_path.read_text())
        self.address = self.info["address"]

    def log_tail(self) -> str:
        try:
            return (self.where / "cluster.log").read_text(errors="replace")[-2000:]
        except OSError:
            return ""

    def argv(self, *args) -> list[str]:
        return ["nsenter", f"--net=/proc/{self.proc.pid}/ns/net", sys.executable, "-m", "harness", *map(str, args)]

    def harness(self, *args, env=None, timeout=600) -> subprocess.CompletedProcess:
        """`python -m harness ARGS` inside the cluster's namespace (loopback only)."""
        return subprocess.run(self.argv(*args), cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **(env or {})})

    def popen(self, *args) -> subprocess.Popen:
        return subprocess.Popen(self.argv(*args), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)

    def in_namespace(self) -> list[tuple[int, str]]:
        """Every process in the cluster's network namespace: (pid, command line). Never the
        namespace this test runs in (nothing is known, or killed, before the cluster is up)."""
        if self.netns is None or self.netns == os.readlink("/proc/self/ns/net"):
            return []
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                if os.readlink(f"/proc/{entry}/ns/net") != self.netns:
                    continue
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            found.append((int(entry), cmd.strip()))
        return found

    def stop(self) -> list[tuple[int, str]]:
        """Stop the cluster; returns what was still running in its namespace afterwards
        (killed here), which a test must find empty."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()  # the driver only; what it started is found by its namespace below
            self.proc.wait()
        deadline = time.monotonic() + 20
        left = self.in_namespace()
        while left and time.monotonic() < deadline:
            time.sleep(0.5)
            left = self.in_namespace()
        for pid, _ in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        left += reap_started_with(f"RAY_TMPDIR={self.ray_tmp}", wait_s=5)  # escaped the namespace?
        self.log.close()
        shutil.rmtree(self.ray_tmp, ignore_errors=True)
        return left


def with_env(assignment: str) -> list[tuple[int, str]]:
    """Processes whose environment holds NAME=VALUE exactly (a private folder's path: only
    what one test started has it)."""
    marker = assignment.encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            if marker not in Path(f"/proc/{entry}/environ").read_bytes().split(b"\0"):
                continue
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        found.append((int(entry), cmd.strip()))
    return found


def reap_started_with(assignment: str, wait_s: float = 20) -> list[tuple[int, str]]:
    """Wait for the processes started with NAME=VALUE to end; kill and return any left."""
    deadline = time.monotonic() + wait_s
    left = with_env(assignment)
    while left and time.monotonic() < deadline:
        time.sleep(0.5)
        left = with_env(assignment)
    for pid, _ in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return left


def harness_runs(node_id: str) -> list[int]:
    """The pids of `harness run`/`reproduce` processes a fleet job started on node_id."""
    marker = f"ABBA_FLEET_NODE_ID={node_id}".encode()
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if marker not in Path(f"/proc/{entry}/environ").read_bytes().split(b"\0"):
                continue
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"harness" in cmd and (b"run" in cmd or b"reproduce" in cmd):
            pids.append(int(entry))
    return pids


def wait_for_runs(nodes: list[str]) -> None:
    wait_until(lambda: all(harness_runs(n) for n in nodes), f"no harness run started on {nodes}", 120, 0.3)


def start_cluster(where: Path, workers: int = 2) -> LocalCluster:
    why = _unavailable()
    if why:
        pytest.skip(why)
    return LocalCluster(where, workers)


def assert_torn_down(cluster: LocalCluster) -> None:
    left = cluster.stop()
    assert not left, f"processes left in the cluster's namespace (killed now): {left}"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = start_cluster(tmp_path_factory.mktemp("fleet-cluster"))
    yield c
    assert_torn_down(c)


@pytest.fixture(scope="module")
def two_replicas(cluster, tmp_path_factory):
    """The demo campaign, two replicas, on the two worker nodes."""
    out = tmp_path_factory.mktemp("fleet-run") / "out"
    result = cluster.harness("fleet", "run", DEMO, "--replicas", 2, "--address", cluster.address, "--out", out)
    return out, result


def test_two_replicas_land_verified_on_distinct_nodes(cluster, two_replicas):
    out, result = two_replicas
    assert result.returncode == 0, result.stdout + result.stderr
    assert no_traceback(result)
    nodes = {n["node_id"][:12] for n in cluster.info["nodes"]}
    landed = sorted(p.name for p in (out / "demo").iterdir())
    assert set(landed) == nodes  # one bundle per worker node: distinct nodes
    for name in landed:
        bundle = out / "demo" / name
        verify = subprocess.run([sys.executable, "-m", "harness", "verify", bundle, "--repo", ROOT], cwd=ROOT,
                                capture_output=True, text=True)
        assert verify.returncode == 0, verify.stdout + verify.stderr
        env = json.loads((bundle / "data" / "environment.json").read_text())
        fleet = env["fleet"]
        assert fleet["scheduler"] == "ray" and fleet["node_id"].startswith(name)
        assert fleet["node_id"] in {n["node_id"] for n in cluster.info["nodes"]}
        assert fleet["cluster"] == cluster.address and len(fleet["cluster_id"]) >= 16
    lines = result.stdout.splitlines()
    assert sum(": ok (exit 0" in line for line in lines) == 2
    assert "fleet run: 2 of 2 replicas landed verified" in result.stdout
    # the cross-machine table: one row per node, verdict agreement, bit-identity, spread
    assert sum(line.startswith(f"| {n}") for line in lines for n in nodes) == 2
    assert "verdicts: agree" in result.stdout
    assert "outputs: bit-identical across the 2 nodes" in result.stdout
    assert "ratio spread:" in result.stdout
    assert not [p for p in out.rglob("*") if ".partial-" in p.name]
    summary = json.loads((out / "fleet.json").read_text())
    assert {j["node_id"][:12] for j in summary["jobs"] if j["ok"]} == nodes


def test_fleet_report_reads_the_run(two_replicas):
    out, _ = two_replicas
    result = subprocess.run([sys.executable, "-m", "harness", "fleet", "report", out, "--repo", ROOT], cwd=ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "## demo" in result.stdout and "2 bundles" in result.stdout
    assert "outputs: bit-identical across the 2 nodes" in result.stdout


def test_environment_records_the_fleet_origin(monkeypatch):
    """environment.json's `fleet`: null outside the fleet, the node and cluster inside."""
    from harness.engine import environment
    from harness.records import ProbedInterpreter

    me = {"base": ProbedInterpreter(sys.executable, "3.11.0", "CPython", {})}

    for name in (environment.FLEET_NODE_ID, environment.FLEET_CLUSTER, environment.FLEET_CLUSTER_ID):
        monkeypatch.delenv(name, raising=False)
    assert environment.capture({}, me)["fleet"] is None
    monkeypatch.setenv(environment.FLEET_NODE_ID, "ab" * 28)
    monkeypatch.setenv(environment.FLEET_CLUSTER, "10.0.0.1:6379")
    monkeypatch.setenv(environment.FLEET_CLUSTER_ID, "cd" * 28)
    assert environment.capture({}, me)["fleet"] == {"scheduler": "ray", "node_id": "ab" * 28, "cluster": "10.0.0.1:6379",
                                                "cluster_id": "cd" * 28}


def test_reproduce_on_two_nodes(cluster, two_replicas, tmp_path):
    out, _ = two_replicas
    original = sorted((out / "demo").iterdir())[0]
    dest = tmp_path / "repro"
    result = cluster.harness("reproduce", original, "--fleet", 2, "--address", cluster.address, "--out", dest,
                             "--items", 2)
    assert no_traceback(result), result.stderr
    # --items 2 re-runs 2 of the original's items: partial (9) when the rest holds; the timing may
    # also not reproduce (7) or be too wide to tell (8) on two busy cores. Each seals a bundle that lands.
    assert result.returncode in (9, 7, 8), result.stdout + result.stderr
    assert "reproduce --fleet: " in result.stdout and " of 2 nodes reproduced the claim" in result.stdout
    landed = sorted(p.name for p in dest.iterdir() if p.is_dir())
    assert set(landed) == {n["node_id"][:12] for n in cluster.info["nodes"]}
    for name in landed:
        receipt = json.loads((dest / name / "data" / "receipts" / "reproduction.json").read_text())
        assert receipt["outputs"]["agree"] is True
        assert f"node {name}: " in result.stdout


def test_more_replicas_than_nodes_is_one_line(cluster, tmp_path):
    out = tmp_path / "out"
    result = cluster.harness("fleet", "run", DEMO, "--replicas", 3, "--address", cluster.address, "--out", out)
    assert result.returncode == 4, result.stdout + result.stderr
    failed = [line for line in result.stdout.splitlines() if "failed:" in line]
    assert failed == ["demo [3 replicas]: failed: needs 3 nodes with abba_node: 1, the cluster has 2"]
    assert not out.exists()


def test_a_bundle_tampered_in_transit_is_refused(cluster, tmp_path):
    out = tmp_path / "out"
    result = cluster.harness("fleet", "run", DEMO, "--order", "AB", "--address", cluster.address, "--out", out,
                             env={"ABBA_FLEET_TAMPER_IN_TRANSIT": "data/comparison.json"})
    assert result.returncode == 1, result.stdout + result.stderr
    failed = [line for line in result.stdout.splitlines() if "failed:" in line]
    assert len(failed) == 1 and "does not verify: data/comparison.json" in failed[0], result.stdout
    assert "nothing landed" in failed[0]
    assert not out.exists()  # nothing half-written, not even the staging folder


def test_a_job_past_its_timeout_fails_with_one_line(cluster, tmp_path):
    out = tmp_path / "out"
    result = cluster.harness("fleet", "run", DEMO, "--timeout", 3, "--code", "shared", "--address", cluster.address,
                             "--out", out)
    assert result.returncode == 4, result.stdout + result.stderr
    failed = [line for line in result.stdout.splitlines() if "failed:" in line]
    assert len(failed) == 1 and "timed out" in failed[0], result.stdout
    assert not out.exists()
    time.sleep(1)
    assert not [pid for n in cluster.info["nodes"] for pid in harness_runs(n["node_id"])]


def test_interrupt_cancels_the_jobs_and_says_what_finished(cluster, tmp_path):
    out = tmp_path / "out"
    proc = cluster.popen("fleet", "run", DEMO, "--replicas", 2, "--address", cluster.address, "--out", out)
    nodes = [n["node_id"] for n in cluster.info["nodes"]]
    try:
        wait_for_runs(nodes)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 4, stdout + stderr
    assert "Traceback" not in stderr
    assert sum("failed: cancelled" in line for line in stdout.splitlines()) == 2, stdout
    assert "interrupted: 0 of 2 replicas had finished" in stdout
    assert not out.exists()
    # the node's harness run ends with its Ray worker
    wait_until(lambda: not any(harness_runs(n) for n in nodes), "a node's harness run outlived its cancelled job",
               poll_s=0.5)


def test_a_node_killed_mid_run(tmp_path):
    """Its own cluster: the killed node does not come back for the other tests."""
    c = start_cluster(tmp_path / "cluster")
    try:
        out = tmp_path / "out"
        proc = c.popen("fleet", "run", DEMO, "--replicas", 2, "--address", c.address, "--out", out)
        victim, survivor = c.info["nodes"]
        try:
            wait_for_runs([victim["node_id"], survivor["node_id"]])
            time.sleep(2)  # mid-run: its harness run is under way
            os.kill(victim["raylet_pid"], signal.SIGKILL)
            stdout, stderr = proc.communicate(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 4, stdout + stderr
        assert "Traceback" not in stderr
        lines = stdout.splitlines()
        failed = [line for line in lines if "failed:" in line]
        assert len(failed) == 1 and "node lost" in failed[0] and victim["node_id"][:12] in failed[0], stdout
        assert [p.name for p in (out / "demo").iterdir()] == [survivor["node_id"][:12]]
        assert "fleet run: 1 of 2 replicas landed verified" in stdout
        wait_until(lambda: not harness_runs(victim["node_id"]), "the lost node's harness run went on", poll_s=0.5)
    finally:
        assert_torn_down(c)


def test_without_address_a_local_ray_instance(tmp_path):
    """No --address: a Ray instance of its own on this machine (one node), in a namespace."""
    why = _unavailable()
    if why:
        pytest.skip(why)
    out = tmp_path / "out"
    ray_tmp = Path(tempfile.mkdtemp(prefix="abba-ray-", dir="/tmp"))
    env = {**os.environ, "RAY_TMPDIR": str(ray_tmp), "TMPDIR": str(tmp_path)}
    try:
        result = subprocess.run(
            ["unshare", "-n", "bash", "-c", f"ip link set lo up && exec {sys.executable} -m harness fleet run "
                                           f"{DEMO} --order AB --out {out}"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        left = reap_started_with(f"RAY_TMPDIR={ray_tmp}")
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert not left, f"the local Ray instance left processes (killed now): {left}"
    assert result.returncode == 0, result.stdout + result.stderr
    assert "a local Ray instance" in result.stdout
    assert "fleet run: 1 of 1 replica landed verified" in result.stdout
    (landed,) = (out / "demo").iterdir()
    env_json = json.loads((landed / "data" / "environment.json").read_text())
    assert env_json["fleet"]["node_id"].startswith(landed.name)


def test_usage_errors_are_one_line(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "f").write_text("")
    for args, words in ((["fleet", "run", DEMO, "--out", tmp_path / "x"], "exists and is not an empty folder"),
                        (["fleet", "run", DEMO, "--replicas", "0", "--out", tmp_path / "o"], "--replicas"),
                        (["fleet", "run", "/etc/hostname", "--out", tmp_path / "o"], "not inside the repository"),
                        (["fleet", "run", DEMO, DEMO, "--out", tmp_path / "o"], "given twice"),
                        (["reproduce", tmp_path / "x", "--address", "127.0.0.1:1"], "go with --fleet N")):
        result = subprocess.run([sys.executable, "-m", "harness", *map(str, args)], cwd=ROOT, capture_output=True,
                                text=True)
        assert result.returncode == 2, (args, result.stdout, result.stderr)
        assert words in result.stderr and no_traceback(result)
        assert not (tmp_path / "o").exists()


def test_ray_stays_out_of_the_cli_and_the_runner():
    code = ("import sys; import harness.cli as c; c.build_parser(); import harness.engine.runner, "
            "harness.worker.main, harness.engine.environment; print('ray' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert result.stdout.strip() == "False", result.stderr
