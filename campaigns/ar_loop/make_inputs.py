"""Frozen stage-1 context tensors for the ar_loop campaigns.

    python make_inputs.py OUT_FILE --batch 512 --batches 4 --dim 64 --seed 20260903

Writes a float32 array of shape (batches, batch, dim) as a version 1.0 .npy file. The
values come from numpy's PCG64 generator (standard normal, float32 ziggurat), which is
byte-identical on every platform, so the campaign can pin the file's SHA-256.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np


def make_contexts(batch: int, batches: int, dim: int, seed: int) -> np.ndarray:
    gen = np.random.Generator(np.random.PCG64(seed))
    return gen.standard_normal((batches, batch, dim), dtype=np.float32)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path)
    p.add_argument("--batch", type=int, default=512)
    p.add_argument("--batches", type=int, default=4)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--seed", type=int, default=20260903)
    a = p.parse_args(argv)
    if min(a.batch, a.batches, a.dim) < 1:
        p.error("--batch, --batches and --dim must be positive")
    arr = np.ascontiguousarray(make_contexts(a.batch, a.batches, a.dim, a.seed), dtype="<f4")
    a.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = a.out.with_name(a.out.name + f".partial-{os.getpid()}")
    with open(tmp, "wb") as f:
        np.lib.format.write_array(f, arr, version=(1, 0), allow_pickle=False)
    os.replace(tmp, a.out)
    print(f"{a.out}: {arr.shape} {arr.dtype}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
