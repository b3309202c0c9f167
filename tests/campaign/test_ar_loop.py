"""The ar_loop code under test: the compacted loop's bookkeeping (history cache, counts,
the stop-token first-stop fix) and the campaigns' inputs and workload.

Exactness at every batch size, thread count and MKL mode is swept in test_ar_exact.py.
Small models (hidden 32, 2 blocks) so everything runs in seconds; no timing assertions.
"""
from __future__ import annotations

import hashlib
import shlex

import numpy as np
import pytest

torch = pytest.importorskip("torch")
yaml = pytest.importorskip("yaml")

from ar_loop_support import AR_LOOP, load_model_module, materialize  # noqa: E402

CAMPAIGNS = AR_LOOP.parent
FIELDS = ("secondaries", "n_sec", "sec_valid", "stop_slot")
SMALL = dict(hidden=32, n_blocks=2, n_heads=4, k_max=15, ctx_dim=16, sec_dim=8)


@pytest.fixture(scope="module")
def revs(tmp_path_factory):
    root = tmp_path_factory.mktemp("ar_loop")
    base = load_model_module(materialize(root / "base", "base"), "ar_loop_base_model")
    cand = load_model_module(materialize(root / "candidate", "candidate"), "ar_loop_candidate_model")
    torch.set_num_threads(2)
    return base, cand


def build(mod, seed=3, **kw):
    return mod.build_model(mod.Stage2Config(**{**SMALL, **kw}), seed)


def inputs(mod, b, seed=0, ctx_dim=SMALL["ctx_dim"]):
    gen = torch.Generator().manual_seed(10_000 + seed)
    return torch.randn(b, ctx_dim, generator=gen), mod.make_noise(b, SMALL["k_max"], SMALL["sec_dim"], seed)


def sample(model, ctx, noise, **kw):
    with torch.inference_mode():
        out = model.sample_secondaries_ar(ctx, noise, **kw)
    return {k: out[k].numpy() for k in FIELDS}


def assert_bytes_equal(a, b):
    for k in FIELDS:
        assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape, k
        assert a[k].tobytes() == b[k].tobytes(), f"{k} differs"


def assert_canonical(out, k_max=SMALL["k_max"]):
    n = out["n_sec"]
    assert (out["sec_valid"] == (np.arange(k_max)[None, :] < n[:, None])).all()
    sec = out["secondaries"]
    invalid = ~out["sec_valid"]
    assert (sec[invalid] == 0).all() and not np.signbit(sec[invalid]).any()


class Counter:
    """Counts calls of a bound method through an instance attribute."""

    def __init__(self, obj, name):
        self.calls, self.fn = 0, getattr(obj, name)
        setattr(obj, name, self)

    def __call__(self, *a, **kw):
        self.calls += 1
        return self.fn(*a, **kw)


@pytest.mark.parametrize("history", ["attention", "markov"])
@pytest.mark.parametrize("mode", ["head", "stop_token"])
@pytest.mark.parametrize("head", ["flow", "wgan"])
def test_outputs_are_canonical(revs, history, mode, head):
    _, cand = revs
    model = build(cand, history=history, head=head, n_sec_mode=mode, count_rate=1.0, stop_bias=-0.3)
    ctx, noise = inputs(cand, 23, seed=2)
    out = sample(model, ctx, noise)
    assert_canonical(out)
    assert 0 < out["n_sec"].sum() < 23 * SMALL["k_max"]


@pytest.mark.parametrize("history", ["attention", "markov"])
def test_select_cache_keeps_rows_aligned(revs, history):
    _, cand = revs
    model = build(cand, history=history)
    b, tile = 48, cand.TILE
    ctx, noise = inputs(cand, b, seed=7)
    # The index sets the compacted loop makes: every row at its own tile position, in
    # another tile; tile_layout also fills gaps with copies (compared: the real rows only).
    swapped = torch.arange(b).view(-1, tile).flip(0).flatten()
    ids = torch.tensor([3, 4, 19, 20, 21, 35, 36, 40])
    layout, place = cand.tile_layout(ids)
    assert (layout[place] == ids).all() and (place % tile == ids % tile).all()

    def run(index_at, index):
        hs = []
        with torch.inference_mode():
            model.history.reset_cache(ctx)
            for slot in range(6):
                if slot == index_at:
                    model.select_history_cache(index)
                h = model.encode_history(slot)
                rows = index if slot >= index_at else torch.arange(b)
                sec = model.sample_head(h, noise.sec[rows, slot])
                model.history.observe(sec)
                hs.append(h.clone())
        return hs

    plain = run(99, None)
    for index, real in ((swapped, torch.arange(b)), (layout, place)):
        moved = run(3, index)
        for slot in range(6):
            expect = plain[slot][index[real]] if slot >= 3 else plain[slot][real]
            assert torch.equal(moved[slot][real], expect), (slot, len(index))


@pytest.mark.parametrize("history", ["attention", "markov"])
def test_all_rows_inactive_from_the_start(revs, history):
    _, cand = revs
    # head mode: a vanishing Poisson rate gives every row a count of 0.
    model = build(cand, history=history, count_rate=1e-12)
    ctx, noise = inputs(cand, 20)
    calls = Counter(model.history, "forward")
    out = sample(model, ctx, noise)
    assert calls.calls == 0
    assert (out["n_sec"] == 0).all() and not out["sec_valid"].any()
    assert (out["secondaries"] == 0).all() and (out["stop_slot"] == -1).all()
    assert_bytes_equal(out, sample(model, ctx, noise, full_length=True))
    # stop_token mode: every stop logit fires at slot 0; one slot runs, then none.
    model = build(cand, history=history, n_sec_mode="stop_token", stop_bias=1e6)
    calls = Counter(model.history, "forward")
    out = sample(model, ctx, noise)
    assert calls.calls == 1
    assert (out["n_sec"] == 0).all() and (out["stop_slot"] == 0).all()
    assert_bytes_equal(out, sample(model, ctx, noise, full_length=True))


@pytest.mark.parametrize("history", ["attention", "markov"])
def test_one_row_uses_every_slot(revs, history):
    _, cand = revs
    k_max = SMALL["k_max"]
    model = build(cand, history=history)
    b = 24
    ctx, noise = inputs(cand, b, seed=5)
    counts = torch.zeros(b, dtype=torch.long)
    counts[7] = k_max
    counts[3] = 2
    model.predict_n_sec = lambda context, u: counts.clone()
    calls = Counter(model.history, "forward")
    out = sample(model, ctx, noise)
    assert calls.calls == k_max
    assert out["n_sec"].tolist() == counts.tolist()
    assert out["sec_valid"][7].all() and out["sec_valid"].sum() == k_max + 2
    assert (out["secondaries"][7] != 0).all()
    assert_bytes_equal(out, sample(model, ctx, noise, full_length=True))
    # stop_token mode, a stop logit that never fires: every row runs every slot.
    model = build(cand, history=history, n_sec_mode="stop_token", stop_bias=-1e6)
    out = sample(model, ctx, noise)
    assert (out["n_sec"] == k_max).all() and (out["stop_slot"] == -1).all()
    assert_bytes_equal(out, sample(model, ctx, noise, full_length=True))


def test_batch_of_one(revs):
    base, cand = revs
    for history in ("attention", "markov"):
        for mode in ("head", "stop_token"):
            kw = dict(history=history, n_sec_mode=mode, count_rate=2.0, stop_bias=-0.5)
            mc = build(cand, **kw)
            for seed in range(4):
                ctx, noise = inputs(cand, 1, seed=seed)
                full = sample(mc, ctx, noise, full_length=True)
                assert_bytes_equal(full, sample(mc, ctx, noise))
                if mode == "head":
                    assert_bytes_equal(full, sample(build(base, **kw), ctx, noise))


def record_stop_logits(model):
    """Every stop logit the full-length loop computes, as a (B, k_max) array."""
    seen = []
    fn = model.stop_logits

    def wrapper(h):
        out = fn(h)
        seen.append(out.clone())
        return out

    model.stop_logits = wrapper
    return seen


def test_stop_token_refire_bug_in_base_fixed_in_candidate(revs):
    base, cand = revs
    k_max = SMALL["k_max"]
    kw = dict(history="markov", n_sec_mode="stop_token", stop_bias=-0.2)
    mb, mc = build(base, **kw), build(cand, **kw)
    ctx, noise = inputs(cand, 64, seed=11)

    seen = record_stop_logits(mb)
    base_out = sample(mb, ctx, noise)
    fired = (torch.stack(seen, dim=1) > 0).numpy()  # (B, k_max): computed for every slot
    assert fired.shape == (64, k_max)
    ever = fired.any(axis=1)
    first = np.where(ever, fired.argmax(axis=1), k_max)
    last = np.where(ever, k_max - 1 - fired[:, ::-1].argmax(axis=1), k_max)
    refired = first != last
    assert refired.sum() >= 3, "the test needs rows whose stop logit fires again after the first stop"

    # The base's bug: a later re-fire overwrites derived_n_sec.
    assert (base_out["n_sec"] == last).all()
    assert (base_out["n_sec"][refired] != first[refired]).all()

    # The candidate records only the first stop, full-length and compacted alike.
    seen_c = record_stop_logits(mc)
    full = sample(mc, ctx, noise, full_length=True)
    assert torch.equal(torch.stack(seen_c, dim=1) > 0, torch.from_numpy(fired))
    assert (full["n_sec"] == first).all()
    assert (full["stop_slot"] == np.where(ever, first, -1)).all()
    compact = sample(mc, ctx, noise)
    assert_bytes_equal(full, compact)
    assert_canonical(compact)
    # Rows that never re-fire agree with the base byte for byte.
    for k in FIELDS:
        assert base_out[k][~refired].tobytes() == full[k][~refired].tobytes(), k


@pytest.mark.parametrize("name", ["ar_loop_attention", "ar_loop_markov",
                                  "ar_loop_attention_quick", "ar_loop_markov_quick"])
def test_campaign_inputs_rebuild_to_pinned_digest(name, tmp_path):
    spec = yaml.safe_load((CAMPAIGNS / f"{name}.yaml").read_text())
    assert spec["workload"]["params"]["n_sec_mode"] == "head"  # see the YAML header
    inp = spec["inputs"]["contexts"]
    argv = inp["build"]
    assert argv[0] == "{python}" and argv[2] == "{path}"
    out = tmp_path / "contexts.npy"
    import subprocess
    import sys
    subprocess.run([sys.executable, str(CAMPAIGNS / argv[1]), str(out), *argv[3:]], check=True,
                   capture_output=True)
    assert hashlib.sha256(out.read_bytes()).hexdigest() == inp["sha256"], shlex.join(argv)
    fence = spec["base"]["fence"]["stage2/model.py"]
    assert hashlib.sha256((AR_LOOP / "tree" / "stage2" / "model.py").read_bytes()).hexdigest() == fence


WORKLOAD_DRIVER = r"""
import json, pathlib, sys, types
import numpy as np
tree, workloads, contexts, out = sys.argv[1:5]
sys.path[:0] = [tree, workloads]
import ar_loop_workload
params = dict(history=sys.argv[5], head=sys.argv[6], n_sec_mode="head", hidden=32, n_blocks=2,
              n_heads=4, count_rate=0.6, weights_seed=1, noise_seed=1000, device="cpu", threads=2)
ctx = types.SimpleNamespace(params=params, inputs={"contexts": pathlib.Path(contexts)}, slots=1,
                            label="A1", variant="?", tree=pathlib.Path(tree))
w = ar_loop_workload.setup(ctx)
arrays = {}
for item in w.items:
    for name, value in w.run(item).items():
        arrays[f"{item}/{name}"] = value
w.sync()
np.savez(out, **arrays)
print(json.dumps(w.metrics()))
"""


@pytest.mark.parametrize("history,head", [("attention", "flow"), ("markov", "wgan")])
def test_workload_outputs_identical_across_revisions(tmp_path, history, head):
    import json
    import subprocess
    import sys
    contexts = tmp_path / "contexts.npy"
    subprocess.run([sys.executable, str(AR_LOOP / "make_inputs.py"), str(contexts), "--batch", "40",
                    "--batches", "2", "--dim", "64", "--seed", "5"], check=True, capture_output=True)
    results = {}
    for variant in ("base", "candidate"):
        tree = materialize(tmp_path / variant, variant)
        out = tmp_path / f"{variant}.npz"
        proc = subprocess.run([sys.executable, "-c", WORKLOAD_DRIVER, str(tree), str(CAMPAIGNS / "workloads"),
                               str(contexts), str(out), history, head],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        metrics = json.loads(proc.stdout.strip().splitlines()[-1])
        assert metrics["rows"] == 80 and metrics["device"] == "cpu"
        results[variant] = (np.load(out), metrics)
    (a, ma), (b, mb) = results["base"], results["candidate"]
    assert sorted(a.files) == sorted(b.files) and len(a.files) == 2 * len(FIELDS)
    for key in a.files:
        assert a[key].dtype == b[key].dtype and a[key].tobytes() == b[key].tobytes(), key
    assert ma["mean_n_sec"] == mb["mean_n_sec"] > 0
    assert a["batch-000/secondaries"].dtype == np.float32 and a["batch-000/n_sec"].dtype == np.int64
