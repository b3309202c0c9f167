"""A campaign's pinned revision as a tree outside any campaign, and files loaded as modules:
what the campaigns' own microbenchmarks (campaigns/<name>/bench/) and their tests use to load
the code under test from the same tree a worker imports, never from the working copy."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

CAMPAIGNS = Path(__file__).resolve().parents[2] / "campaigns"  # in a clone (see checkout)
# `harness microbench NAME`: each campaign's microbenchmark beside the campaign it serves.
BENCHES = {"span-prefix": "span_finding/bench/span_prefix.py", "ar-loop": "ar_loop/bench/ar_loop.py",
           "gemm-rows": "ar_loop/bench/gemm_rows.py"}


def checkout(campaign_path: str | Path, variant: str, dest: Path) -> Path:
    """Export one revision of a campaign's target into dest/<variant> (SHA and fence
    checked as in a campaign) and return that tree. Errors exit with one line."""
    from harness.plan import revisions, spec
    from harness.clone import clone_file

    clone_file(str(Path(campaign_path).relative_to(CAMPAIGNS.parent)), "microbench")
    try:
        campaign = spec.load(campaign_path)
        return revisions.materialize(campaign, revisions.target_repo(campaign),
                                     campaign.revision(variant), dest).tree
    except spec.SpecError as exc:
        raise SystemExit(f"harness microbench: error: {exc}") from None


def load_module(path: Path, name: str):
    """Import one file as module `name` (both revisions can then live in one process)."""
    module_spec = importlib.util.spec_from_file_location(name, path)
    assert module_spec is not None and module_spec.loader is not None  # a file path always has a spec and loader
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    module_spec.loader.exec_module(module)
    return module


def bench(name: str):
    """The campaign microbenchmark `name` (BENCHES) as a module; one line when this is not a
    clone that holds it."""
    from harness.clone import clone_file

    path = clone_file(f"campaigns/{BENCHES[name]}", "microbench")
    return sys.modules.get(f"abba_bench_{name.replace('-', '_')}") or load_module(path, f"abba_bench_{name.replace('-', '_')}")
