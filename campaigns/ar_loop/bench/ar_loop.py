"""`harness microbench ar-loop`: the Stage-2 AR loop, full_length=True vs compacted.

Exports the candidate revision pinned by campaigns/ar_loop_attention.yaml (SHA and fence
checked, as for a worker), imports it there, and times
`sample_secondaries_ar(..., full_length=True)` against the compacted default on one batch
of the campaign's frozen contexts, alternating the two. Every repeat also checks that
both outputs are byte-identical. Prints the median seconds of each and their ratio;
`--json FILE` writes the figures. Exit 0, or 1 when the outputs differ.

Importing this module stays light: torch is imported in main() only.
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from harness.clone import require
from harness.plan.checkout import CAMPAIGNS, checkout, load_module

CAMPAIGN = CAMPAIGNS / "ar_loop_attention.yaml"  # both AR campaigns pin the same revisions
FIELDS = ("secondaries", "n_sec", "sec_valid", "stop_slot")


def add_arguments(parser) -> None:
    parser.add_argument("--history", choices=("attention", "markov"), default="attention")
    parser.add_argument("--head", choices=("flow", "wgan"), default=None,
                        help="sampling head (default: flow for attention, wgan for markov, as the campaigns)")
    parser.add_argument("--n-sec-mode", choices=("head", "stop_token"), default="head")
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--batches", type=int, default=1,
                        help="batches of the frozen contexts timed per repeat (the full campaigns use 8)")
    parser.add_argument("--k-max", type=int, default=15)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--blocks", type=int, default=6)
    parser.add_argument("--heads", type=int, default=8, help="attention heads")
    parser.add_argument("--count-rate", type=float, default=0.387,
                        help="Poisson count prior (0.387 gives mean n_sec ~0.38 at hidden 512)")
    parser.add_argument("--stop-bias", type=float, default=0.0, help="stop-logit bias (stop_token mode)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads (default: $OMP_NUM_THREADS, else torch's default)")
    parser.add_argument("--seed", type=int, default=20260903, help="contexts seed (as the campaigns)")
    parser.add_argument("--json", metavar="FILE", default=None, help="also write the figures as JSON")


def main(args) -> int:
    if min(args.batch, args.batches, args.k_max, args.repeats, args.hidden, args.blocks) < 1:
        print("harness microbench: error: ar-loop: --batch, --batches, --k-max, --repeats, --hidden, --blocks "
              "must be positive",
              file=sys.stderr)
        return 2
    require("torch", "microbench ar-loop")
    import numpy as np
    import torch

    threads = args.threads or os.environ.get("OMP_NUM_THREADS")
    if threads:
        torch.set_num_threads(int(threads))
    head = args.head or ("flow" if args.history == "attention" else "wgan")
    with tempfile.TemporaryDirectory(prefix="abba-ar-loop-") as tmp:
        tree = checkout(CAMPAIGN, "candidate", Path(tmp))
        model_mod = load_module(tree / "stage2" / "model.py", "abba_ar_loop_candidate_model")
        make_inputs = load_module(CAMPAIGNS / "ar_loop" / "make_inputs.py", "abba_ar_loop_make_inputs")
    cfg = model_mod.Stage2Config(ctx_dim=64, sec_dim=8, hidden=args.hidden, n_blocks=args.blocks,
                                 n_heads=args.heads, k_max=args.k_max, history=args.history, head=head,
                                 n_sec_mode=args.n_sec_mode, count_rate=args.count_rate,
                                 stop_bias=args.stop_bias)
    model = model_mod.build_model(cfg, 1)
    # The campaigns' items: batch i of the frozen contexts with noise seed 1000 + i.
    contexts = torch.from_numpy(make_inputs.make_contexts(args.batch, args.batches, 64, args.seed))
    noises = [model_mod.make_noise(args.batch, args.k_max, 8, 1000 + i) for i in range(args.batches)]

    def once(full_length: bool):
        outs = []
        t0 = time.perf_counter()
        with torch.inference_mode():
            for context, noise in zip(contexts, noises):
                outs.append(model.sample_secondaries_ar(context, noise, full_length=full_length))
        elapsed = time.perf_counter() - t0
        return elapsed, {k: np.concatenate([o[k].numpy() for o in outs]) for k in FIELDS}

    once(True), once(False)  # warm-up
    full_s, compact_s, identical = [], [], True
    n_sec = None
    for _ in range(args.repeats):
        tf, a = once(True)
        tc, b = once(False)
        full_s.append(tf)
        compact_s.append(tc)
        identical &= all(a[k].dtype == b[k].dtype and a[k].tobytes() == b[k].tobytes() for k in FIELDS)
        n_sec = b["n_sec"]
    full_med, compact_med = statistics.median(full_s), statistics.median(compact_s)
    figures = {
        "bench": "ar-loop", "history": args.history, "head": head, "n_sec_mode": args.n_sec_mode,
        "batch": args.batch, "batches": args.batches, "k_max": args.k_max, "hidden": args.hidden, "blocks": args.blocks,
        "count_rate": args.count_rate, "repeats": args.repeats, "torch_threads": torch.get_num_threads(),
        "torch_version": torch.__version__,
        "mean_n_sec": float(np.mean(n_sec)), "max_n_sec": int(np.max(n_sec)),
        "full_median_s": full_med, "compacted_median_s": compact_med,
        "ratio": full_med / compact_med if compact_med > 0 else None,
        "full_s": full_s, "compacted_s": compact_s, "identical": bool(identical),
    }
    print(f"ar-loop {args.history}/{head}/{args.n_sec_mode}: batch {args.batch} x {args.batches}, k_max {args.k_max}, "
          f"hidden {args.hidden}, {args.blocks} blocks, {torch.get_num_threads()} threads, "
          f"{args.repeats} repeats")
    print(f"  mean n_sec      {figures['mean_n_sec']:.4f} (max {figures['max_n_sec']})")
    print(f"  full_length     {full_med:.4f} s median")
    print(f"  compacted       {compact_med:.4f} s median")
    print(f"  ratio           {figures['ratio']:.2f}x")
    print(f"  outputs         {'byte-identical' if identical else 'DIFFER'}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n")
    return 0 if identical else 1
