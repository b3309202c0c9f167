"""Load the ar_loop code under test at both revisions into one process.

Each revision is exported from the campaign's pinned commit (as a worker gets it) and its
``stage2/model.py`` is imported under its own module name, so both live side by side.
"""
from __future__ import annotations

from pathlib import Path

from harness.plan.checkout import CAMPAIGNS, checkout, load_module

AR_LOOP = CAMPAIGNS / "ar_loop"
CAMPAIGN = CAMPAIGNS / "ar_loop_attention.yaml"


def materialize(dest: Path, variant: str) -> Path:
    """The revision's tree, exported under dest."""
    if variant not in ("base", "candidate"):
        raise ValueError(variant)
    return checkout(CAMPAIGN, variant, dest)


def load_model_module(tree: Path, name: str):
    return load_module(tree / "stage2" / "model.py", name)
