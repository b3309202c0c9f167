"""Issue 45: the worker's sandbox, from inside a real worker. A probing workload tries, in its
setup, everything a run must not reach (the staging folder, the other revision's tree, /tmp,
/dev/shm, the campaign's repository, a folder outside its own to write, the network, another
process's scheduling) and what it must (its own folders, its tree, the inputs, the workload), and
says what happened; the bundle records the sandbox the runs had. The fallback where the kernel
gives less (ABBA_SANDBOX_DISABLE acts as a machine without Landlock, or without user namespaces)
is recorded the same way and said by both checkers, the verdict line and the summary's headline.
The kernel side alone: harness/worker/sandbox.py run as its wrapper on a shell command."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, cache_env, harness, make_target, no_traceback, write_campaign
from harness import contract as C
from harness.engine import sandbox as engine_sandbox
from harness.files import read_json

PROBED = engine_sandbox.probe(str(ROOT), "")
needs_landlock = pytest.mark.skipif(PROBED.landlock is None, reason="no Landlock on this kernel")

PROBE = '''
    """Tries what a run may and may not do, and prints one JSON line: {what: "ok" | the error}."""
    import json
    import os
    import socket
    import sys
    from pathlib import Path

    import numpy as np


    def attempt(fn):
        try:
            fn()
            return "ok"
        except OSError as exc:
            return exc.strerror or type(exc).__name__


    def read(path):
        with open(path, "rb") as fh:
            fh.read(1)


    def write(path):
        with open(path, "w") as fh:
            fh.write("x")


    def staging():
        job = json.load(open(sys.argv[1]))
        argv = open(f"/proc/{job['parent_pid']}/cmdline", "rb").read().split(b"\\0")
        out = argv[argv.index(b"--out") + 1].decode()
        return f"{out}.partial-{job['parent_pid']}"


    def connect():
        with socket.create_connection(("127.0.0.1", int(os.environ["PROBE_PORT"])), timeout=5):
            pass


    class W:
        items = ["one"]

        def run(self, item):
            return {"x": np.zeros(1)}


    def setup(ctx):
        tree = Path(ctx.tree)
        other = tree.parent / ("candidate" if ctx.variant == "base" else "base")
        here = Path.cwd()
        tried = {
            "own folder": attempt(lambda: write(here / "home" / "mine.txt")),
            "tmpdir": attempt(lambda: write(Path(os.environ["TMPDIR"]) / "t.txt")),
            "own tree": attempt(lambda: read(tree / "pkg" / "__init__.py")),
            "input": attempt(lambda: read(ctx.inputs["data"])),
            "staging": attempt(lambda: os.listdir(staging())),
            "other tree": attempt(lambda: read(other / "pkg" / "__init__.py")),
            "list /tmp": attempt(lambda: os.listdir("/tmp")),
            "write /tmp": attempt(lambda: write(f"/tmp/abba-sandbox-probe-{os.environ['PROBE_TAG']}-{ctx.label}")),
            "/dev/shm": attempt(lambda: write(f"/dev/shm/abba-sandbox-probe-{os.environ['PROBE_TAG']}")),
            "repository": attempt(lambda: read(os.environ["PROBE_REPO"])),
            "beside its folder": attempt(lambda: write(here.parent / "planted.txt")),
            "its tree": attempt(lambda: write(tree / "planted.txt")),
            "network": attempt(connect),
            "renice the runner": attempt(lambda: os.setpriority(os.PRIO_PROCESS, json.load(open(sys.argv[1]))["parent_pid"], 5))
            if os.environ.get("PROBE_RENICE") else "not tried",
            "signal the runner": attempt(lambda: os.kill(json.load(open(sys.argv[1]))["parent_pid"], 0)),
        }
        print("TRIED " + json.dumps(tried), flush=True)
        return W()
'''

MAY = ("own folder", "tmpdir", "own tree", "input")
MAY_NOT = ("staging", "other tree", "list /tmp", "write /tmp", "/dev/shm", "repository", "beside its folder",
           "its tree", "network", "renice the runner", "signal the runner")


@pytest.fixture(scope="module")
def listener():
    """A TCP server on loopback the runs try to reach (outside their network namespace)."""
    import socket

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    yield server.getsockname()[1]
    server.close()


def probe_campaign(where: Path, port: int, renice: bool = True, **fields) -> Path:
    tree, patch = make_target(where, {"pkg/__init__.py": "X = 1\n"}, {"pkg/__init__.py": "X = 2\n"})
    workloads = where / "workloads"
    workloads.mkdir()
    (workloads / "probe.py").write_text(PROBE.replace("\n    ", "\n").lstrip())
    data = where / "inputs" / "data.bin"
    data.parent.mkdir()
    data.write_bytes(b"pinned input\n")
    import hashlib

    secret = where / "repo-secret.txt"  # stands for the campaign's repository: earlier bundles, .git
    secret.write_text("the base's outputs of an earlier campaign\n")
    return write_campaign(where / "probe.yaml", tree, patch, workloads, "probe:setup", order="AB",
                          inputs={"data": {"path": str(data), "sha256": hashlib.sha256(data.read_bytes()).hexdigest()}},
                          env={"PROBE_PORT": str(port), "PROBE_REPO": str(secret), "PROBE_TAG": where.name, **({"PROBE_RENICE": "1"} if renice else {})},
                          **fields)


def tried(out: Path, label: str) -> dict:
    log = (out / C.log_path(label)).read_text()
    line, = [x for x in log.splitlines() if x.startswith("TRIED ")]
    return json.loads(line[len("TRIED "):])


@needs_landlock
def test_a_run_reaches_its_own_and_nothing_else(tmp_path, listener):
    out = tmp_path / "bundle"
    result = harness("run", probe_campaign(tmp_path, listener), "--out", out, env=cache_env(tmp_path / "cache"))
    assert result.returncode in (0, 6) and no_traceback(result), result.stdout + result.stderr
    for label in ("A1", "B1"):
        seen = tried(out, label)
        assert all(seen[k] == "ok" for k in MAY), (label, seen)
        assert all(seen[k] != "ok" for k in MAY_NOT), (label, {k: seen[k] for k in MAY_NOT})
    env = read_json(out / C.ENVIRONMENT)["sandbox"]
    assert env["level"] in ("full", "partial") and env["landlock"] == PROBED.landlock and env["scheduling"]
    assert env["network"] == ("cut" if PROBED.userns else "tcp")
    assert read_json(out / C.COMPARISON)["sandbox"]["level"] == env["level"]
    assert not list(Path("/tmp").glob(f"abba-sandbox-probe-{tmp_path.name}-*"))


@pytest.mark.parametrize("disabled, level", [("landlock,userns", "none"), ("userns", "partial")])
def test_a_machine_that_gives_less_is_recorded_and_said(tmp_path, listener, disabled, level):
    """The probe forced off (as on a kernel without Landlock, or a CI runner whose AppArmor refuses
    user namespaces): the campaign still runs, and the bundle, both checkers, the verdict line and
    the summary's headline say how far it was sandboxed."""
    if level == "partial" and PROBED.landlock is None:
        pytest.skip("no Landlock on this kernel")
    out = tmp_path / "bundle"
    env = {**cache_env(tmp_path / "cache"), engine_sandbox.DISABLE_ENV: disabled}
    # (a worker that reniced the runner unconfined would have the campaign refused: tested in test_adversary.py)
    result = harness("run", probe_campaign(tmp_path, listener, renice=False), "--out", out, env=env)
    assert result.returncode in (0, 6) and no_traceback(result), result.stdout + result.stderr
    box = read_json(out / C.ENVIRONMENT)["sandbox"]
    assert box["level"] == level and "disabled (ABBA_SANDBOX_DISABLE)" in box["reason"], box
    said = "not sandboxed" if level == "none" else "partly sandboxed"
    assert f"{said}: " in result.stdout  # the verdict line `run` prints
    assert f"{said}: " in harness("summary", out).stdout.split("\n\n")[1]
    checked = harness("verify", out)
    assert checked.returncode == 0 and f"note: {said}" in checked.stdout, checked.stdout
    rehashed = subprocess.run([sys.executable, "-S", str(ROOT / "harness" / "rehash.py"), str(out)],
                              capture_output=True, text=True, timeout=300)
    assert rehashed.returncode == 0 and f"note: {said}" in rehashed.stdout, rehashed.stdout
    seen = tried(out, "B1")
    if level == "none":  # nothing confined it: what it reached is what the record says
        assert seen["other tree"] == "ok" and seen["list /tmp"] == "ok"
        for planted in [*Path("/tmp").glob(f"abba-sandbox-probe-{tmp_path.name}-*"),
                        *Path("/dev/shm").glob(f"abba-sandbox-probe-{tmp_path.name}")]:
            planted.unlink()
    else:  # the filesystem confined; the network open to UDP, refused to TCP by Landlock
        assert seen["other tree"] != "ok" and seen["network"] != "ok"
        assert box["network"] == "tcp" and box["namespaces"] is False


@needs_landlock
def test_the_wrapper_applies_its_rules_before_it_execs(tmp_path):
    """harness/worker/sandbox.py as a wrapper: what it confines includes what it execs, and a rule
    it cannot apply ends it with SANDBOX_EXIT and one line, before anything runs."""
    script = ROOT / "harness" / "worker" / "sandbox.py"
    mine, other = tmp_path / "mine", tmp_path / "other"
    mine.mkdir()
    other.mkdir()
    (other / "secret").write_text("x")
    rules = {"landlock": PROBED.landlock, "userns": PROBED.userns, "network": False, "scheduling": True,
             "read": [], "write": [str(mine)]}
    cmd = f"cat {other / 'secret'} || echo denied; echo y > {mine / 'ok'} && echo wrote"
    done = subprocess.run([sys.executable, "-I", "-S", str(script), json.dumps(rules), "--", "/bin/sh", "-c", cmd],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "denied" in done.stdout and "wrote" in done.stdout, (done.stdout, done.stderr)
    bad = {**rules, "write": [str(tmp_path / "missing")]}
    done = subprocess.run([sys.executable, "-I", "-S", str(script), json.dumps(bad), "--", "/bin/true"],
                          capture_output=True, text=True, timeout=60)
    from harness.worker import sandbox

    assert done.returncode == sandbox.SANDBOX_EXIT and done.stderr.count("\n") == 1
    assert done.stderr.startswith("sandbox: landlock: the writable folder") and "sandbox: off" in done.stderr


@needs_landlock
def test_the_wrapper_finds_a_bare_command_on_the_runs_path(tmp_path):
    """Instruction runs start `setarch -R valgrind ...` by name (the command both checkers read
    back): the wrapper looks a bare name up on the run's PATH, as a shell would."""
    script = ROOT / "harness" / "worker" / "sandbox.py"
    rules = {"landlock": PROBED.landlock, "userns": PROBED.userns, "network": False, "scheduling": True,
             "read": [], "write": [str(tmp_path)]}
    done = subprocess.run([sys.executable, "-I", "-S", str(script), json.dumps(rules), "--", "sh", "-c", "echo ran"],
                          capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 0 and done.stdout == "ran\n", (done.stdout, done.stderr)
