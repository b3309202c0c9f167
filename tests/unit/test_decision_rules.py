"""Issue 45, attack 6 (1): the band, noise floor, order and rounds that decide a claim are the
contract's to bound (the `decision` rule). A campaign file's `verdict.threshold: 0.5` (a 34-42%
slower candidate read "equal" or "inconclusive"), a noise-floor file edited to 0.5 with its own
interval left at [0.99, 1.01], and an explicit `order: BBBBBBAAAAAA` (identical code read
"improved 0.77" when the load changed midway) were accepted by run, verify and rehash.py. Each is
now refused by the loader or the runner in one line naming the fix, and a bundle that carries
one (sealed by a harness that did not refuse it) by both checkers."""
from __future__ import annotations

import copy
import json

import pytest

from checks_support import full_bundle, problems, refused, sha256
from fakes import Model, ModelLauncher, run_fake, write_fake_campaign
from harness import contract as C
from harness import rules as R
from harness.engine.runner import Runner
from harness.plan import spec
from spec_support import SOURCE, VALID


def load_error(**changes) -> str:
    with pytest.raises(spec.SpecError) as info:
        spec.parse({**copy.deepcopy(VALID), **changes}, SOURCE)
    msg = str(info.value)
    assert "\n" not in msg
    return msg


@pytest.mark.parametrize("threshold", [0.5, 0.26, 1])
def test_a_threshold_wider_than_the_contract_allows_is_refused(threshold):
    msg = load_error(verdict={"threshold": threshold})
    assert f"verdict.threshold: expected at most {C.MAX_BAND}" in msg and "1.3x" in msg


def test_the_widest_band_is_allowed():
    assert spec.parse({**copy.deepcopy(VALID), "verdict": {"threshold": C.MAX_BAND}}, SOURCE).threshold == C.MAX_BAND


@pytest.mark.parametrize("order, where", [("BBBBBBAAAAAA", "timed runs 1-2 (BB) are not one A and one B"),
                                          ("AABB", "timed runs 1-2 (AA) are not one A and one B"),
                                          ("ABBAA", "the last timed run (A) has no partner"),
                                          ("ABBAaa", "stage runs 1-2 (aa) are not one a and one b"),
                                          ("ABABBBAA", "timed runs 5-6 (BB)")])
def test_an_explicit_order_must_interleave_every_round(order, where):
    msg = load_error(order=order)
    assert f"order: expected an order whose every round interleaves A and B, but in {order} {where}" in msg
    assert "e.g. ABBA" in msg or "e.g. abba" in msg
    assert R.order_problem(order) is not None


@pytest.mark.parametrize("order", ["AB", "BA", "ABBA", "ABABBAAB", "ABBAab", "ABabBA"])
def test_orders_of_rounds_pass(order):
    assert R.order_problem(order) is None


def test_every_shuffled_order_interleaves():
    assert all(R.order_problem(R.round_order(n, seed, stages)) is None
               for n in range(1, 30) for seed in range(5) for stages in (0, 2))


def test_an_order_given_on_the_command_line_is_held_to_it():
    raw = json.dumps({k: v for k, v in VALID.items() if k != "order"} | {"rounds": 4}).encode()
    with pytest.raises(spec.SpecError, match="every round interleaves A and B, but in BBAA timed runs 1-2"):
        spec.loads(raw, SOURCE, spec.parse_overrides(order="BBAA"))


def floor_doc(**changes) -> dict:
    doc = {"schema": C.SCHEMAS["noise_floor"], "campaign": "model", "bundle_digest": "0" * 64,
           "machine": {"cpu_model": "x", "vector_isa": None, "blas": None, "torch_threads": None},
           "started_at": 1.7e9, "rounds": 10, "ratio": 1.0, "ci95": [0.99, 1.01], "floor": 0.01}
    doc.update(changes)
    return doc


@pytest.mark.parametrize("changes, says", [
    ({"floor": 0.5}, "floor 0.5 is not the one its interval [0.99, 1.01] gives, 0.01"),
    ({"floor": 0.0}, "floor 0.0 is not the one its interval"),
    ({"ratio": 1.2}, "its ratio 1.2 lies outside its own interval"),
    ({"rounds": 3}, "3 round(s) of A against A; a noise floor needs at least 5"),
    ({"ci95": [0.6, 1.4], "ratio": 1.0, "floor": 0.4}, "floor 0.4: over 0.25"),
])
def test_a_floor_must_be_its_own_intervals(changes, says):
    assert says in R.noise_floor_problem(floor_doc(**changes))
    assert R.noise_floor_problem(floor_doc()) is None


def test_the_runner_refuses_a_floor_edited_to_half_before_any_run(tmp_path):
    floor = tmp_path / "floor.json"
    floor.write_text(json.dumps(floor_doc(floor=0.5)))
    path = write_fake_campaign(tmp_path, noise_floor={"path": str(floor), "sha256": sha256(floor)})
    launcher = ModelLauncher(Model())
    with pytest.raises(spec.SpecError) as info:
        Runner(spec.load(path), (tmp_path / "b").absolute(), launcher=launcher).run()
    assert "floor 0.5 is not the one its interval [0.99, 1.01] gives" in str(info.value)
    assert "\n" not in str(info.value) and not launcher.processes


@pytest.mark.parametrize("doc", [[floor_doc()], {k: v for k, v in floor_doc().items() if k != "ci95"},
                                 floor_doc(machine="x")])
def test_a_pinned_file_that_is_no_noise_floor_is_refused_in_one_line_before_any_run(tmp_path, doc):
    """The pinned file is read through its type (records.NoiseFloor): a list, a missing key or a
    machine that is no object is named, not a traceback."""
    floor = tmp_path / "floor.json"
    floor.write_text(json.dumps(doc))
    path = write_fake_campaign(tmp_path, noise_floor={"path": str(floor), "sha256": sha256(floor)})
    launcher = ModelLauncher(Model())
    with pytest.raises(spec.SpecError, match="is not a noise-floor file of `harness calibrate`") as info:
        Runner(spec.load(path), (tmp_path / "b").absolute(), launcher=launcher).run()
    assert "\n" not in str(info.value) and not launcher.processes


# --- bundles a harness without these rules would have sealed: both checkers refuse them -------------
def test_both_checkers_refuse_an_order_that_does_not_interleave(tmp_path, monkeypatch):
    monkeypatch.setattr(R, "order_problem", lambda order: None)  # a harness that never asked
    outcome, _ = run_fake(tmp_path, Model(ratio=1.0), overrides={"order": "BBBAAA"})
    monkeypatch.undo()
    ours, theirs = problems(outcome.out)
    for lines in (ours, theirs):
        assert refused(lines, "[decision]", "does not interleave: timed runs 1-2 (BB) are not one A and one B"), lines


def test_both_checkers_refuse_a_floor_that_is_not_its_intervals(tmp_path, monkeypatch):
    """The attack's own forgery: a noise-floor file edited to a wide floor, its interval left at
    [0.99, 1.01], pinned and sealed (the band follows the floor)."""
    import harness.engine.runner as runner

    real = R.noise_floor_problem
    monkeypatch.setattr(R, "noise_floor_problem", lambda doc: None)
    monkeypatch.setattr(runner.R, "noise_floor_problem", lambda doc: None)
    bundle = full_bundle(tmp_path, floor_value=0.2)
    monkeypatch.setattr(R, "noise_floor_problem", real)
    doc = json.loads((bundle / C.NOISE_FLOOR).read_text())
    assert doc["floor"] == 0.2 and doc["ci95"] == [0.99, 1.01]
    assert json.loads((bundle / C.COMPARISON).read_text())["stats"]["band"] == 0.2
    ours, theirs = problems(bundle)
    for lines in (ours, theirs):
        assert refused(lines, "noise_floor.json", "[decision]", "floor 0.2 is not the one its interval"), lines


def test_both_checkers_refuse_a_threshold_past_the_widest_band(tmp_path):
    from checks_support import forge

    outcome, _ = run_fake(tmp_path, Model(ratio=1.0), rounds=5)
    forge(outcome.out, {C.CAMPAIGN_JSON: lambda c: c.update(threshold=0.5)})
    ours, theirs = problems(outcome.out)
    assert refused(ours, "threshold") and refused(theirs, "threshold")
