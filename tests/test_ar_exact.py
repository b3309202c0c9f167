"""The AR loop is exact at every batch size: a row's bits do not depend on which rows of
its batch run with it at a slot.

Where it can fail: a BLAS gives a row other bits in calls of other sizes or at other
positions (MKL's sgemm does, on some CPUs for 5-11-row calls, under MKL_CBWR=COMPATIBLE
for many more). So the sweep runs every batch size from 1 to 40 and a few odd larger ones,
both histories, both heads, both count modes, and checks bit for bit that

- the compacted loop gives what full_length=True gives,
- the base revision gives what the candidate gives (head mode: the base's stop-token
  re-fire bug changes stop-token outputs, see test_ar_loop.py),
- b rows get the same bits when rows that sort after them in the tile layout join their
  batch (rows with a count of 0; in stop-token mode, any rows: its layout is batch order).
  Rows that sort before them would move them to other tile positions, where a BLAS may
  give other bits: that is not promised (`gemm-rows` reports it as "tile positions"),

with 1 and 2 torch threads in this process and again in a subprocess under
MKL_CBWR=COMPATIBLE (MKL's reproducibility mode picks other gemm kernels) and one under
ATEN_CPU_CAPABILITY=default (ATen's scalar kernels for the row-wise ops): cheap looks at
what another CPU would do. A small model keeps the sweep quick; one full-size check stays.
When these fail, `harness microbench gemm-rows` says which operation depends on its call.
No timing assertions.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from ar_loop_support import load_model_module, materialize  # noqa: E402

SIZES = tuple(range(1, 41)) + (63, 100, 257)
# Small, so the sweep is quick; counts and first stops spread over all 6 slots, so the
# compacted loop's active sets shrink through many sizes.
SWEEP_MODEL = dict(hidden=32, n_blocks=1, n_heads=4, k_max=6, ctx_dim=16, sec_dim=8,
                   count_rate=2.0, stop_bias=-0.5)
CONFIGS = [(history, head, mode) for history in ("attention", "markov") for head in ("flow", "wgan")
           for mode in ("head", "stop_token")]
FIELDS = ("secondaries", "n_sec", "sec_valid", "stop_slot")


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    root = tmp_path_factory.mktemp("ar_exact")
    return materialize(root / "base", "base"), materialize(root / "candidate", "candidate")


@pytest.fixture(scope="module")
def revs(trees):
    return (load_model_module(trees[0], "ar_exact_base_model"),
            load_model_module(trees[1], "ar_exact_candidate_model"))


def sample(model, ctx, noise, **kw) -> dict:
    with torch.inference_mode():
        out = model.sample_secondaries_ar(ctx, noise, **kw)
    return {k: out[k] for k in FIELDS}


def rows(out: dict, b: int) -> dict[str, bytes]:
    """The first b rows of every output, as bytes."""
    return {k: v[:b].numpy().tobytes() for k, v in out.items()}


# Rows that join a batch in the sweep: enough to add a tile and end on a short one.
JOINING = 21


def sweep(base, cand, seed: int, sizes=SIZES, model=SWEEP_MODEL, configs=CONFIGS) -> list[str]:
    """Every (config, batch size) whose rows differ between the loops, revisions or batches;
    [] when the AR loop is exact. Batches are prefixes of one batch of max(sizes) rows."""
    found = []
    top = max(sizes)
    for i, (history, head, mode) in enumerate(configs):
        cfg = dict(model, history=history, head=head, n_sec_mode=mode)
        mc = cand.build_model(cand.Stage2Config(**cfg), seed + i)
        mb = base.build_model(base.Stage2Config(**cfg), seed + i) if mode == "head" else None
        gen = torch.Generator().manual_seed(1000 * seed + i)
        ctx = torch.randn(top + JOINING, model["ctx_dim"], generator=gen)
        noise = cand.make_noise(top + JOINING, model["k_max"], model["sec_dim"], 1000 * seed + i)
        for b in sizes:
            part = cand.Stage2Noise(noise.sec[:b], noise.count_u[:b])
            full = rows(sample(mc, ctx[:b], part, full_length=True), b)
            # The joining rows' uniform of 0 gives them a count of 0 (asserted below).
            grown = list(range(b)) + list(range(top, top + JOINING))
            u = torch.cat([noise.count_u[:b], torch.zeros(JOINING)])
            joined = sample(mc, ctx[grown], cand.Stage2Noise(noise.sec[grown], u), full_length=True)
            if mode == "head":
                assert (joined["n_sec"][b:] == 0).all()
            others = {"compacted vs full_length": sample(mc, ctx[:b], part),
                      f"rows vs the same rows with {JOINING} more in the batch": joined}
            if mb is not None:
                others["base vs candidate"] = sample(mb, ctx[:b], part)
            found += [f"{history}/{head}/{mode} seed {seed} batch {b}: {name}"
                      for name, other in others.items() if rows(other, b) != full]
    return found


def with_threads(threads: int, fn, *args, **kw):
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return fn(*args, **kw)
    finally:
        torch.set_num_threads(before)


def probe_findings(base, threads: int) -> dict:
    """The gemm-rows probe on the sweep model's layer shapes: the tiles' premise, directly."""
    from harness.microbench import gemm_rows

    return with_threads(threads, gemm_rows.probe, base.linear, base.TILE, hidden=SWEEP_MODEL["hidden"])


@pytest.mark.parametrize("threads,seed", [(2, 0), (1, 1)])
def test_exact_at_every_batch_size(revs, threads, seed):
    assert with_threads(threads, sweep, *revs, seed=seed) == []


@pytest.mark.parametrize("threads", [2, 1])
def test_tiles_and_row_wise_ops_agree_at_every_call_size(revs, threads):
    from harness.microbench import gemm_rows

    findings = probe_findings(revs[0], threads)
    assert gemm_rows.verdict(findings), findings


# MKL reads MKL_CBWR and ATen its CPU capability once, at start-up: the same checks in a
# fresh process.
SUBPROCESS = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import test_ar_exact as t
from harness.microbench import gemm_rows
base, cand = (t.load_model_module(t.Path(p), n) for p, n in zip(sys.argv[2:4], ("b", "c")))
found = t.with_threads(2, t.sweep, base, cand, seed=2)
for threads in (2, 1):
    findings = t.probe_findings(base, threads)
    if not gemm_rows.verdict(findings):
        found.append(f"gemm-rows, {threads} threads: {findings}")
print(json.dumps({"found": found, "capability": t.torch.backends.cpu.get_cpu_capability()}))
"""


# Two cheap looks at what another CPU would do: MKL's reproducibility mode picks other
# gemm kernels; ATen's default (scalar) kernels round LayerNorm, softmax and the
# elementwise ops differently from the vectorised ones this CPU gets.
@pytest.mark.parametrize("setting", ["MKL_CBWR=COMPATIBLE", "ATEN_CPU_CAPABILITY=default"])
def test_exact_under_other_kernels(trees, setting):
    env = {**os.environ, **dict([setting.split("=")])}
    proc = subprocess.run([sys.executable, "-c", SUBPROCESS, str(Path(__file__).parent), *map(str, trees)],
                          env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["found"] == []
    if setting.startswith("ATEN_CPU_CAPABILITY"):
        assert result["capability"] == "DEFAULT"  # the setting took effect


@pytest.mark.parametrize("history,head", [("attention", "flow"), ("markov", "wgan")])
def test_exact_at_full_size(revs, history, head):
    """The campaigns' model (hidden 512, 6 blocks, k_max 15) at batch sizes where one gemm
    per call would give rows other bits: a short last tile, a lone tile, a second tile."""
    full_size = dict(hidden=512, n_blocks=6, n_heads=8, k_max=15, ctx_dim=64, sec_dim=8,
                     count_rate=1.0, stop_bias=0.0)
    found = with_threads(2, sweep, *revs, seed=5, sizes=(7, 21), model=full_size,
                         configs=[(history, head, "head")])
    assert found == []
