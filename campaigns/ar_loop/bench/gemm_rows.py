"""`harness microbench gemm-rows`: does a row get the same bits wherever it sits in a call?

A float matmul may give a row other bits in a call of another row count, or at another
position in the call: the BLAS picks its kernels by the call's shape (MKL's sgemm, with 2
threads, hands the last M mod 4 rows of 5-11-row calls to a small-M kernel; under
MKL_CBWR=COMPATIBLE many more sizes differ). The AR model therefore runs every dense layer
on fixed-shape tiles, one gemm call per tile (`stage2.model.linear`, from the campaigns'
pinned base revision), and the AR loop keeps each row at the same tile position. It runs
under the AR campaigns' worker environment (their thread counts); a variable the caller
sets wins. For the model's layer shapes, on this
machine and BLAS, this probe reports the row counts at which some row's bits differ from
the same row in one large call:

  F.linear   one gemm per call, the row shifted to other positions: differences here are
             why the model tiles; they are reported, not judged
  tiled      the model's linear, the row at the same tile position (1 to 17 tiles)
  tile positions
             the model's linear, the row moved to another tile position: the AR loop
             keeps a row's place within a batch, but in head mode its place depends on
             how many rows of the batch have larger counts, so differences here mean a
             row may get other bits in another batch (not between the two loops);
             reported, not judged
  row-wise   the AR loop's other operations on a subset of rows: LayerNorm, softmax, the
             stop logit's dot product, the attention matmuls

Exit 0 when the tiled layers and the row-wise operations agree everywhere (the AR loop's
exactness rests on them), 1 otherwise. Importing this module stays light: torch is
imported in main() and probe() only.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from harness.clone import require
from harness.plan.checkout import CAMPAIGNS, checkout, load_module

CAMPAIGN = CAMPAIGNS / "ar_loop_attention.yaml"
SIZES = tuple(range(1, 41)) + (63, 100, 257)
SHIFTS = (1, 2, 3, 5, 8, 13)  # rows a call starts after the large call's first row


def add_arguments(parser) -> None:
    parser.add_argument("--hidden", type=int, default=512, help="model width whose layer shapes are probed")
    parser.add_argument("--max-rows", type=int, default=40,
                        help="probe every call size from 1 to this (then 63, 100, 257)")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads (default: $OMP_NUM_THREADS, else torch's default)")
    parser.add_argument("--json", metavar="FILE", default=None, help="also write the findings as JSON")


def layer_shapes(hidden: int, ctx_dim: int = 64, sec_dim: int = 8, k_max: int = 15) -> list[tuple[int, int]]:
    """(in, out) of the AR model's dense layers: history, flow and wgan heads, count head."""
    h = hidden
    return sorted({(ctx_dim + sec_dim, h), (h, 3 * h), (h, h), (h, 4 * h), (4 * h, h),
                   (h + sec_dim // 2, h), (h, sec_dim), (h + sec_dim, h), (ctx_dim, h), (h, k_max + 1)})


def _differs(a, b) -> bool:
    return a.shape != b.shape or a.numpy().tobytes() != b.numpy().tobytes()


def probe(linear, tile: int, hidden: int = 512, sizes=SIZES, seed: int = 0) -> dict:
    """For each check, the call sizes (rows) at which some row's bits differ from the same
    row in one large call; `linear(x, layer)` and `tile` are the model's."""
    import torch
    from torch import nn
    from torch.nn import functional as F

    gen = torch.Generator().manual_seed(seed)
    top = max(sizes) + max(SHIFTS) + 3 * tile
    bad: dict[str, set[int]] = {"F.linear": set(), "tiled": set(), "tile positions": set()}
    with torch.inference_mode():
        for k, n in layer_shapes(hidden):
            layer = nn.Linear(k, n)
            x = torch.randn(top, k, generator=gen)
            ref, ref_tiled = F.linear(x, layer.weight, layer.bias), linear(x, layer)
            for m in sizes:
                if any(_differs(F.linear(x[s:s + m], layer.weight, layer.bias), ref[s:s + m])
                       for s in (0,) + SHIFTS):
                    bad["F.linear"].add(m)
                # Whole-tile shifts keep every row's tile position; a one-row shift does not.
                if any(_differs(linear(x[s:s + m], layer), ref_tiled[s:s + m]) for s in (0, tile, 3 * tile)):
                    bad["tiled"].add(m)
                if _differs(linear(x[1:1 + m], layer), ref_tiled[1:1 + m]):
                    bad["tile positions"].add(m)

        heads, d_head = 8, max(1, hidden // 8)
        h = torch.randn(top, hidden, generator=gen)
        w = torch.randn(hidden, generator=gen)
        q = torch.randn(top, heads, 1, d_head, generator=gen)
        kv = torch.randn(top, heads, 15, d_head, generator=gen)
        probs = torch.softmax(torch.randn(top, heads, 1, 15, generator=gen), dim=-1)
        row_ops = {
            "layer_norm": lambda r: F.layer_norm(h[r], (hidden,)),
            "softmax": lambda r: torch.softmax(h[r], dim=-1),
            "stop dot product": lambda r: (h[r] * w).sum(dim=-1),
            "attention scores": lambda r: torch.matmul(q[r], kv[r].transpose(-1, -2)),
            "attention values": lambda r: torch.matmul(probs[r], kv[r]),
        }
        for name, op in row_ops.items():
            ref = op(slice(None))
            bad[name] = {m for m in sizes if any(_differs(op(slice(s, s + m)), ref[s:s + m]) for s in (0, 1, 5))}
    return {name: sorted(v) for name, v in bad.items()}


def ranges(values) -> str:
    """[1, 2, 3, 5, 9, 10] -> '1-3, 5, 9-10'."""
    out, values = [], sorted(values)
    for v in values:
        if out and v == out[-1][1] + 1:
            out[-1][1] = v
        else:
            out.append([v, v])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in out)


def verdict(findings: dict) -> bool:
    """Does the AR loop's exactness hold: the tiled layers and row-wise ops agree everywhere?"""
    return not any(v for name, v in findings.items() if name not in ("F.linear", "tile positions"))


def main(args) -> int:
    if args.hidden < 8 or args.max_rows < 1:
        print("harness microbench gemm-rows: error: --hidden must be >= 8 and --max-rows >= 1", file=sys.stderr)
        return 2
    require("torch", "microbench gemm-rows")
    # The campaigns' worker environment (thread counts), before torch and MKL read it; a
    # variable set by the caller wins, so `MKL_CBWR=COMPATIBLE harness microbench ...` works.
    from harness.plan import spec

    campaign_env = spec.load(CAMPAIGN).env
    for name, value in campaign_env.items():
        os.environ.setdefault(name, value)
    import torch

    threads = args.threads or os.environ.get("OMP_NUM_THREADS")
    if threads:
        torch.set_num_threads(int(threads))
    with tempfile.TemporaryDirectory(prefix="abba-gemm-rows-") as tmp:
        model = load_module(checkout(CAMPAIGN, "base", Path(tmp)) / "stage2" / "model.py", "abba_gemm_rows_model")
    sizes = tuple(range(1, args.max_rows + 1)) + tuple(s for s in (63, 100, 257) if s > args.max_rows)
    findings = probe(model.linear, model.TILE, args.hidden, sizes)
    ok = verdict(findings)
    config = torch.__config__.show()
    blas = next((line.strip(" -") for line in config.splitlines() if "Math Kernel Library" in line
                 or "OpenBLAS" in line), "BLAS unknown")
    print(f"gemm-rows: torch {torch.__version__}, {torch.get_num_threads()} threads, {blas}, "
          f"MKL_CBWR={os.environ.get('MKL_CBWR', 'unset')}")
    print("  environment: " + " ".join(f"{name}={os.environ[name]}" for name in sorted(campaign_env))
          + f" (the AR campaigns' env: {CAMPAIGN.name}; a variable already set wins)")
    print(f"  {len(layer_shapes(args.hidden))} dense layer shapes of the AR model at hidden {args.hidden}; "
          f"call sizes {ranges(sizes)} rows")
    notes = {"F.linear": "one gemm per call (row at any position)",
             "tiled": f"the model's linear, {model.TILE}-row tiles (row at its tile position)",
             "tile positions": "the model's linear, rows moved to other tile positions"}
    for name, sizes_bad in findings.items():
        label = f"{name}: {notes.get(name, 'row-wise, on a subset of rows')}"
        print(f"  {label:72s} {'differs at ' + ranges(sizes_bad) if sizes_bad else 'same bits at every size'}")
    print("  verdict: " + ("a row's bits do not depend on the other rows of its call; the AR loop is exact here"
                           if ok else "ROWS DEPEND ON THEIR CALL: the AR loop's exactness does not hold here"))
    if ok and findings.get("tile positions"):
        print("  note: other tile positions give other bits here, so a row's bits may differ from one batch "
              "to another (its place in the layout moves with the counts of the rows before it)")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "bench": "gemm-rows", "torch_version": torch.__version__, "threads": torch.get_num_threads(),
            "blas": blas, "mkl_cbwr": os.environ.get("MKL_CBWR"),
            "env": {name: os.environ[name] for name in sorted(campaign_env)}, "hidden": args.hidden, "tile": model.TILE,
            "sizes": list(sizes), "differs_at": findings, "exact": ok}, indent=2) + "\n")
    return 0 if ok else 1
