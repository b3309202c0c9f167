"""What runs on a node: one fleet job, the ordinary `harness run` (or `harness reproduce`)
as a subprocess into a private temporary folder, its sealed bundle returned as a tar
stream with the node's id.

This module is imported on the nodes (by Ray, to run `node_job`) and must not import
Ray at module level; the harness itself is the node's installed one (`python -P -m
harness`: neither the current folder nor PYTHONPATH comes first), the same one its
workers import, so the bundle's harness digest names the code that ran and the caller
can hold it to its own.

The job ends its `harness run` (SIGTERM to its process group, SIGKILL after a grace)
when its timeout passes and when the node's raylet dies (the Ray worker's parent
changes: a worker outlives its raylet, and so would the campaign). A worker killed
outright (`ray.cancel(force=True)`) takes the `harness run` with it (PR_SET_PDEATHSIG),
which kills its own worker and exits; a temporary folder left behind that way is
removed by the next job on the node.
"""
from __future__ import annotations

import io
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from harness.engine import environment
from harness.worker import prctl

POLL_S = 0.5
GRACE_S = 30.0  # after SIGTERM, before SIGKILL: `harness run` seals its failed bundle meanwhile
TAIL_LINES = 30
SCRATCH = "abba-fleet"  # under the node's temporary folder: one job-PID-XXXX folder per job
BUNDLE = "bundle"  # the top folder inside the tar stream, both ways


def scratch_root() -> Path:
    return Path(tempfile.gettempdir()) / SCRATCH


def sweep(root: Path) -> None:
    """Remove what jobs killed outright left behind: folders of processes that are gone."""
    try:
        entries = list(root.iterdir())
    except OSError:
        return
    for entry in entries:
        parts = entry.name.split("-")
        if len(parts) < 3 or parts[0] != "job" or not parts[1].isdigit():
            continue
        try:
            os.kill(int(parts[1]), 0)
        except ProcessLookupError:
            shutil.rmtree(entry, ignore_errors=True)
        except PermissionError:
            pass


def pack(folder: Path) -> bytes:
    """A folder as an uncompressed tar stream under BUNDLE/ (its arrays are gzipped already):
    regular files and folders only, in a sorted order."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(folder.rglob("*")):
            if path.is_symlink() or not (path.is_file() or path.is_dir()):
                continue
            tar.add(path, arcname=f"{BUNDLE}/{path.relative_to(folder).as_posix()}", recursive=False)
    return buf.getvalue()


def _die_with_parent() -> None:
    """In the child: SIGTERM when the Ray worker that started it dies (force-cancelled)."""
    prctl.prctl(prctl.PR_SET_PDEATHSIG, signal.SIGTERM)


def _end(proc: subprocess.Popen, grace_s: float) -> None:
    """SIGTERM to the child's process group (the `harness run` kills its worker, seals its
    bundle as failed and exits), SIGKILL after grace_s."""
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def _tail(path: Path) -> list[str]:
    try:
        return path.read_text(errors="replace").splitlines()[-TAIL_LINES:]
    except OSError:
        return []


def shipped_size(root: Path) -> dict:
    """What the job's working folder holds (files, bytes): the code as it reached the node
    (less `.cache`, where the node builds the campaigns' inputs)."""
    files = size = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not (dirpath == str(root) and d == ".cache")]
        for name in filenames:
            try:
                size += os.lstat(os.path.join(dirpath, name)).st_size
                files += 1
            except OSError:
                pass
    return {"files": files, "bytes": size}


@dataclass(frozen=True)
class NodeSpec:
    """What the caller hands a node for one job (schedule.place)."""
    argv: list[str]  # the harness arguments: "{out}" the bundle folder to write, "{original}" the unpacked original
    repo: str | None  # the repository folder on the node; None: the job's working folder (the shipped repository)
    timeout_s: float | None  # None: no limit
    grace_s: float
    cluster: str | None
    cluster_id: str | None
    submitted_at: float | None = None  # the caller's clock


@dataclass(frozen=True)
class NodeResult:
    """What came of one job on its node (node_job), the node's word: schedule.settle lands its
    bundle only when it verifies there."""
    node_id: str
    hostname: str
    started_at: float
    submitted_at: float | None
    repo: str
    status: str | None  # finished, timeout or "raylet lost"
    exit_code: int | None
    tail: list[str]
    bundle: bytes | None  # the sealed bundle as a tar stream (pack)
    bundle_bytes: int
    run_s: float | None
    pack_s: float | None
    shipped: dict | None  # shipped_size of the job's working folder, when Ray shipped it
    ended_at: float | None = None


def node_job(spec: NodeSpec, original: bytes | None = None) -> NodeResult:
    """Run one `harness ARGV...` on this node and return what came of it. original: a tar
    stream of the bundle to reproduce, for `harness reproduce`."""
    import ray

    started_at = time.time()
    context = ray.get_runtime_context()
    node_id = context.get_node_id()
    raylet = os.getppid()  # the worker's parent: when it changes, the raylet is gone
    repo = Path(spec.repo) if spec.repo else Path.cwd()
    shipped_git = repo / ".git"
    if not spec.repo and shipped_git.is_dir() and not (shipped_git / "objects").exists():
        # The shipped copy leaves out .git/objects; git takes the folder for a repository only
        # with one there, and `reproduce --repo .` and `verify --repo .` need the root it finds.
        (shipped_git / "objects").mkdir()
    root = scratch_root()
    root.mkdir(parents=True, exist_ok=True)
    sweep(root)
    tmp = Path(tempfile.mkdtemp(prefix=f"job-{os.getpid()}-", dir=root))
    result = NodeResult(node_id=node_id, hostname=socket.gethostname(), started_at=started_at,
                        submitted_at=spec.submitted_at, repo=str(repo), status=None, exit_code=None, tail=[],
                        bundle=None, bundle_bytes=0, run_s=None, pack_s=None,
                        shipped=shipped_size(repo) if not spec.repo else None)
    status = None
    try:
        out = tmp / "out"
        if original is not None:
            unpack(original, tmp / "original")
        argv = [a.replace("{out}", str(out)).replace("{original}", str(tmp / "original" / BUNDLE))
                for a in spec.argv]
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env.update({environment.FLEET_NODE_ID: node_id, environment.FLEET_CLUSTER: spec.cluster or "",
                    environment.FLEET_CLUSTER_ID: spec.cluster_id or "", "TMPDIR": str(tmp)})
        log = tmp / "harness.log"
        t0 = time.monotonic()
        with open(log, "wb") as fh:
            proc = subprocess.Popen([sys.executable, "-P", "-m", "harness", *argv], cwd=repo, env=env,
                                    stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT,
                                    start_new_session=True, preexec_fn=_die_with_parent)
            timeout = spec.timeout_s
            try:
                while proc.poll() is None:
                    if timeout is not None and time.monotonic() - t0 > timeout:
                        status = "timeout"
                        _end(proc, spec.grace_s)
                        break
                    if os.getppid() != raylet:
                        status = "raylet lost"  # nobody will read it; the campaign ends
                        _end(proc, spec.grace_s)
                        break
                    time.sleep(POLL_S)
            except BaseException:  # cancelled (KeyboardInterrupt in the worker) or anything else
                _end(proc, 5.0)
                raise
        result = replace(result, run_s=time.monotonic() - t0, exit_code=proc.returncode, tail=_tail(log),
                         status=status or "finished")
        if result.status == "finished" and (out / "tagmanifest-sha256.txt").is_file():
            t1 = time.monotonic()
            bundle = pack(out)
            result = replace(result, bundle=bundle, pack_s=time.monotonic() - t1, bundle_bytes=len(bundle))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return replace(result, ended_at=time.time())


class UnsafeArchive(Exception):
    pass


MAX_ARCHIVE_BYTES = 8 << 30  # what a tar stream may unpack to, in all


def unpack(data: bytes, dest: Path) -> Path:
    """A tar stream from pack() into dest (which must not exist): regular files and folders
    under BUNDLE/ only, plain relative names, sizes within MAX_ARCHIVE_BYTES. Returns
    dest/BUNDLE. Anything else is UnsafeArchive, and dest is removed."""
    dest.mkdir(parents=True)
    try:
        total = 0
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
            members = tar.getmembers()
            for m in members:
                parts = m.name.split("/")
                if parts[0] != BUNDLE or m.name.startswith("/") or any(p in ("", ".", "..") for p in parts) \
                        or "\\" in m.name or "\0" in m.name or not (m.isreg() or m.isdir()):
                    raise UnsafeArchive(f"refused tar member {m.name!r} (type {m.type!r})")
                total += m.size
                if total > MAX_ARCHIVE_BYTES:
                    raise UnsafeArchive(f"the tar stream unpacks to more than {MAX_ARCHIVE_BYTES} bytes")
            (dest / BUNDLE).mkdir()
            tar.extractall(dest, members=members, filter="data")
    except (tarfile.TarError, OSError, UnsafeArchive) as exc:
        shutil.rmtree(dest, ignore_errors=True)
        raise UnsafeArchive(str(exc)) from None
    return dest / BUNDLE
