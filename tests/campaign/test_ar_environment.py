"""environment.json names the machine class the AR loop's float outputs hold for: the CPU's
vector ISA, the BLAS and its version, the torch threads a worker uses, and each variant's
interpreter. torch is asked in a subprocess of the workers' interpreter, so the harness
process never imports it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness import records
from harness.engine import environment

WORKER_ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "OMP_NUM_THREADS": "1", "PYTHONNOUSERSITE": "1"}


def own_interpreters() -> dict:
    """Both variants on the harness's own interpreter (a campaign without `python:`), as the
    runner asks it of the interpreter itself."""
    own = environment.interpreter(None, Path.cwd())
    return {"base": own, "candidate": own}


def test_vector_isa_from_cpuinfo(monkeypatch):
    flags = "fpu sse2 ssse3 sse4_1 sse4_2 avx fma avx2 avx512f avx512bw avx512vl bmi2"
    monkeypatch.setattr(environment, "_cpuinfo", lambda *keys: flags if "flags" in keys else None)
    assert environment.vector_isa() == {
        "summary": "avx512",
        "flags": ["sse2", "ssse3", "sse4_1", "sse4_2", "avx", "fma", "avx2", "avx512f", "avx512bw", "avx512vl"]}
    monkeypatch.setattr(environment, "_cpuinfo", lambda *keys: "fp asimd sve" if "Features" in keys else None)
    assert environment.vector_isa() == {"summary": "sve", "flags": ["asimd", "sve"]}
    monkeypatch.setattr(environment, "_cpuinfo", lambda *keys: None)
    assert environment.vector_isa() == {"summary": "unknown", "flags": []}


def test_torch_runtime_without_torch(monkeypatch, tmp_path):
    monkeypatch.setenv("ABBA_HARNESS_CACHE", str(tmp_path))
    interpreters = own_interpreters()
    monkeypatch.setattr(environment.importlib.util, "find_spec", lambda name: None)
    env = environment.capture(WORKER_ENV, interpreters)
    assert env["torch_runtime"] == {"version": None, "reason": "torch is not installed"}
    assert env["blas"] is None and env["torch_threads"] is None
    assert env["interpreters"] == records.to_json(interpreters)
    assert env["interpreters"]["base"]["executable"] == sys.executable


@pytest.mark.parametrize("probe,timeout,reason", [
    ("import time; time.sleep(30)", 1, "probe timed out after 1 s"),
    ("raise SystemExit('no BLAS here')", 60, "probe failed: no BLAS here"),
])
def test_torch_runtime_probe_failures_are_recorded_not_cached(monkeypatch, tmp_path, probe, timeout, reason):
    pytest.importorskip("torch")
    monkeypatch.setenv("ABBA_HARNESS_CACHE", str(tmp_path))
    monkeypatch.setattr(environment, "TORCH_PROBE", probe)
    monkeypatch.setattr(environment, "TORCH_PROBE_TIMEOUT_S", timeout)
    assert environment.torch_runtime(WORKER_ENV) == {"version": None, "reason": reason}
    assert not (tmp_path / "environment").exists()


CAPTURE = """
import json, sys
from pathlib import Path
from harness import records
from harness.engine import environment
own = environment.interpreter(None, Path.cwd())
env = environment.capture(json.loads(sys.argv[1]), {"base": own, "candidate": own})
print(json.dumps({"torch imported": "torch" in sys.modules, **{k: env[k] for k in
                  ("vector_isa", "blas", "torch_threads", "torch_runtime")}}))
"""


def test_capture_asks_torch_in_a_worker_like_subprocess(tmp_path):
    torch = pytest.importorskip("torch")
    cache_env = {**os.environ, "ABBA_HARNESS_CACHE": str(tmp_path)}

    def capture():
        proc = subprocess.run([sys.executable, "-c", CAPTURE, json.dumps(WORKER_ENV)], env=cache_env,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    first = capture()
    assert first["torch imported"] is False
    runtime = first["torch_runtime"]
    assert runtime["version"] == torch.__version__ and runtime["threads"] == 1  # the worker env's OMP_NUM_THREADS
    assert first["torch_threads"] == 1 and first["blas"].startswith(runtime["blas"])
    assert runtime["blas_version"] is None or runtime["blas_version"] in first["blas"]
    assert first["vector_isa"]["summary"]
    # Cached under the harness cache, keyed by python, torch, worker env and CPU.
    assert len(list((tmp_path / "environment").iterdir())) == 1
    assert capture() == first
