"""Issue 12: `harness reproduce`, its receipt in both checkers, and the reproductions in
REPORT.md. The classifier and the timing judgement are unit-tested on synthetic inputs;
end to end, the demo campaign is re-run. No timing assertions: the honest re-run's timing
verdict is only required to be the one its two recorded intervals give, and the forged
bundle claims a speed-up 100 times the real one."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

from conftest import CAMPAIGNS, ROOT, harness, no_traceback
from harness import contract as C
from harness import records, rehash
from harness.comparison import analysis, parity
from harness.bundle import read as bundlereader, arrays as tensors
from harness.engine import environment
from harness.judge import reproduce
from harness.selftest import tamper
from harness.render.report import render_report
from harness.engine.worker import subset

FORGED_FACTOR = 100


# --------------------------------------------------------------------------- machines
EPYC = {"cpu_model": "AMD EPYC", "cpu_isa": {"summary": "avx2", "flags": ["avx2"]}, "cores": 2,
        "torch_runtime": {"blas": "mkl", "blas_version": "2024.2", "threads": 1}}
XEON = {"cpu_model": "Intel Xeon", "vector_isa": "avx512", "blas": "mkl 2024.2", "torch_threads": 1}


def test_machine_reads_the_new_and_the_older_fields():
    m = environment.machine(EPYC)
    assert (m["cpu_model"], m["vector_isa"], m["blas"], m["torch_threads"]) == ("AMD EPYC", "avx2", "mkl 2024.2", 1)
    m = environment.machine(XEON)
    assert (m["vector_isa"], m["blas"], m["torch_threads"]) == ("avx512", "mkl 2024.2", 1)
    assert environment.machine({}) == {"cpu_model": None, "vector_isa": None, "blas": None, "torch_threads": None,
                                     "cores": None}


def test_machine_classes():
    epyc, xeon = environment.machine(EPYC), environment.machine(XEON)
    assert environment.same_class(epyc, dict(epyc))[0] is True
    same, why = environment.same_class(epyc, xeon)
    assert same is False and "cpu_model 'AMD EPYC' vs 'Intel Xeon'" in why and "vector_isa" in why
    same, why = environment.same_class(epyc, environment.machine({"cpu_model": "AMD EPYC"}))
    assert same is None and "vector_isa, blas not recorded" in why  # missing is unknown, never "same"
    assert environment.same_class(epyc, environment.machine({**EPYC, "blas": "openblas 0.3"}))[0] is False


# --------------------------------------------------------------------------- outputs
def _run(tmp, label, variant, outputs: dict, error=None) -> dict:
    """A run record holding outputs {item: {field: array}} stored under tmp/arrays."""
    items = [records.item(item_id=i, wall_s=0.1, cpu_s=0.1, fields={n: tensors.store(a, tmp / "arrays")
                                                                    for n, a in fields.items()},
                          error=error if i == "err" else None) for i, fields in outputs.items()]
    return {"label": label, "variant": variant, "status": "ok", "items": items}


def _pair(tmp, original: dict, other: dict):
    """One base and one candidate run per bundle, with the same outputs in both variants."""
    a = [_run(tmp / "a", "A1", "base", original), _run(tmp / "a", "B1", "candidate", original)]
    b = [_run(tmp / "b", "A1", "base", other), _run(tmp / "b", "B1", "candidate", other)]
    return a, b


LOGP = np.linspace(-3, 0, 64, dtype=np.float32)
TOKENS = np.arange(64, dtype=np.int64)
FLAGS = np.zeros(8, dtype=bool)


def outputs(logp=LOGP, tokens=TOKENS, flags=FLAGS, extra=None):
    return {"x0": {"logp": logp, "tokens": tokens, "flags": flags}, "x1": {"logp": LOGP * 2, "tokens": TOKENS},
            **(extra or {})}


def test_identical_outputs_agree(tmp_path):
    a, b = _pair(tmp_path, outputs(), outputs())
    out = parity.compare_outputs(a, b, True)
    assert out["agree"] and out["why"] == "identical" and out["mismatch_count"] == 0
    assert out["items"] == {"original": 2, "reproduction": 2, "compared": 2, "identical": 2}
    assert out["fields_compared"] == out["fields_identical"] == 10


@pytest.mark.parametrize("same, agree, why", [
    (True, False, "float fields differ on a machine of the same class"),
    (False, True, "float fields differ only: expected non-portability across machine classes"),
    (None, True, "float fields differ only: expected non-portability across machine classes"),
])
def test_float_only_differences_depend_on_the_machine_class(tmp_path, same, agree, why):
    logp = LOGP.copy()
    logp[5] = np.nextafter(logp[5], np.float32(1))  # one ulp
    a, b = _pair(tmp_path, outputs(), outputs(logp=logp))
    out = parity.compare_outputs(a, b, same)
    assert (out["agree"], out["why"], out["kinds"]) == (agree, why, ["float"])
    assert out["items_differing"] == {"x0": "float"}
    rows = parity.divergence_across(out["mismatches"], tmp_path / "a" / "arrays", tmp_path / "b" / "arrays")
    assert [(r["field"], r["differing"], r["max_ulp"]) for r in rows] == [("logp", 1, 1), ("logp", 1, 1)]


@pytest.mark.parametrize("edit, kind", [
    ({"tokens": np.where(TOKENS == 7, 8, TOKENS)}, "discrete"),  # a token id
    ({"flags": np.ones(8, dtype=bool)}, "discrete"),  # a flag
    ({"tokens": TOKENS.astype(np.int32)}, "structure"),  # a dtype
    ({"logp": LOGP[:-1]}, "structure"),  # a shape
])
@pytest.mark.parametrize("same", [True, False, None])
def test_discrete_and_structural_differences_fail_on_any_machine(tmp_path, edit, kind, same):
    a, b = _pair(tmp_path, outputs(), outputs(**edit))
    out = parity.compare_outputs(a, b, same)
    assert not out["agree"] and out["kinds"] == [kind] and kind in out["why"]


def test_recorded_errors_and_missing_fields_fail_and_only_common_items_count(tmp_path):
    more = {"x2": {"logp": LOGP}}  # only the original has x2: not compared
    a, b = _pair(tmp_path, outputs(extra=more), outputs(extra={"x1": {"logp": LOGP * 2}}))
    out = parity.compare_outputs(a, b, False)
    assert out["items"]["compared"] == 2 and "x2" not in out["items_differing"]
    assert not out["agree"] and out["items_differing"] == {"x1": "structure"}  # tokens missing
    a = [_run(tmp_path / "e", "A1", "base", {"err": {}}, error={"type": "ValueError", "message": "m"})]
    b = [_run(tmp_path / "f", "A1", "base", {"err": {}}, error={"type": "ValueError", "message": "other"})]
    out = parity.compare_outputs(a, b, False)
    assert not out["agree"] and out["kinds"] == ["error"]


# --------------------------------------------------------------------------- judgement
def claim(ratio, lo, hi):
    return {"ratio": ratio, "ci95": [lo, hi], "metric": "item wall_s", "items": 8, "speedup": 1 / ratio}


@pytest.mark.parametrize("new, held", [
    (claim(0.45, 0.41, 0.49), True),  # the same ratio
    (claim(0.48, 0.47, 0.49), True),  # 1.07 apart, within the original's own width
    (claim(0.52, 0.51, 0.53), False),  # 1.16 apart: the ratio of ratios excludes 1
    (claim(0.35, 0.34, 0.36), False),  # 1.29 apart the other way
    (claim(0.045, 0.04, 0.05), False),  # a claim ten times the re-run
])
def test_judgement_of_the_claimed_interval(new, held):
    judged = reproduce.judge_timing(claim(0.45, 0.40, 0.50), new)
    lo, hi = judged["ci95"]
    assert judged["reproduced"] is held and (lo <= 1 <= hi) is held
    assert judged["ratio_of_ratios"] == pytest.approx(new["ratio"] / 0.45, rel=1e-5)
    no_interval = reproduce.judge_timing(claim(0.45, 0.40, 0.50), {**new, "ci95": None})
    assert no_interval["reproduced"] is False


@pytest.mark.parametrize("status, identical, agree, held, word", [
    ("failed", True, True, True, "run failed"),
    ("complete", False, True, True, "outputs differ"),  # the re-run's own base and candidate differ
    ("complete", True, False, True, "outputs differ"),
    ("complete", True, True, False, "timing not reproduced"),
    ("complete", True, True, True, "reproduced"),
])
def test_verdict_and_exit_codes(status, identical, agree, held, word):
    comparison = {"status": status, "parity": {"identical": identical}}
    assert reproduce.verdict(comparison, {"agree": agree}, {"reproduced": held}) == word
    assert reproduce.EXIT_CODES == {"reproduced": 0, "outputs differ": 3, "run failed": 4, "timing not reproduced": 7}


def test_the_issue_s_overclaim_is_not_reproduced():
    """Issue 17: a 1.42x claim, 0.744 [0.684, 0.807], against a 1.10x re-run, 0.909 [0.888, 0.936]."""
    judged = reproduce.judge_timing(claim(0.744, 0.684, 0.807), claim(0.909, 0.888, 0.936))
    assert judged["reproduced"] is False and "excludes 1" in judged["reason"]


def test_overloaded_runs_are_named():
    def run(label, before, after, cores=2):
        return {"label": label, "status": "ok",
                "machine": {"loadavg_before": [before, 0, 0], "loadavg_after": [after, 0, 0], "cores": cores}}
    runs = [run("A1", 1.0, 1.5), run("B1", 1.9, 2.5), run("B2", 3.0, 1.0), run("A2", 9.0, 9.0, cores=None)]
    assert analysis.overloaded(runs) == ["B1", "B2"]


def test_other_campaign():
    a = {"name": "demo", "revisions": {"base": {"sha": "a"}, "candidate": {"sha": "b"}}}
    assert reproduce.other_campaign(a, json.loads(json.dumps(a))) is None
    assert reproduce.other_campaign(a, {**a, "name": "other"}) == "name demo vs other"
    b = {**a, "revisions": {"base": {"sha": "a"}, "candidate": {"sha": "c"}}}
    assert reproduce.other_campaign(a, b) == "candidate SHA b vs c"


# --------------------------------------------------------------------------- end to end
def receipt_of(bundle):
    return json.loads((bundle / C.REPRODUCTION).read_text())


def checkers(bundle):
    verify = harness("verify", bundle)
    script = subprocess.run([sys.executable, "-S", str(ROOT / "harness" / "rehash.py"), str(bundle)],
                            capture_output=True, text=True)
    return verify, script


@pytest.fixture(scope="module")
def reproduction(demo_bundle_master, tmp_path_factory):
    out = tmp_path_factory.mktemp("reproduce") / "demo.reproduction"
    return out, harness("reproduce", demo_bundle_master, "--out", out)


def test_a_reproduction_of_the_demo_agrees_with_its_original(demo_bundle_master, reproduction):
    out, result = reproduction
    assert result.returncode in (0, 7), result.stdout + result.stderr
    receipt = receipt_of(out)
    original, new = bundlereader.load(demo_bundle_master), bundlereader.load(out)
    assert receipt["original"]["digest"] == original["digest"] and receipt["campaign"] == "demo"
    assert receipt["machines"]["same_class"] is True  # the same machine
    assert receipt["outputs"]["why"] == "identical" and receipt["outputs"]["items"]["compared"] == 9
    assert receipt["scope"]["spot_check"] is False and receipt["scope"]["note"] == "full re-run: 5 rounds, 9 of 9 items"
    # The verdict is the one the two recorded intervals give (judged as unit-tested above).
    judged = reproduce.judge_timing(reproduce.claim(original["comparison"]), reproduce.claim(new["comparison"]))
    assert {key: receipt["timing"][key] for key in judged} == json.loads(json.dumps(judged))
    assert receipt["timing"]["claimed"] == receipt["timing"]["original"]  # all items: held to the claim itself
    expected = "reproduced" if judged["reproduced"] else "timing not reproduced"
    assert receipt["verdict"] == expected and result.returncode == reproduce.EXIT_CODES[expected]
    assert f"verdict: {expected} (exit {result.returncode})" in result.stdout
    assert f"digest {new['digest']}" in result.stdout and "outputs: identical (9 items, 32 fields)" in result.stdout
    for check in checkers(out):
        assert check.returncode == 0, check.stdout + check.stderr
    leftovers = sorted(p.name for p in out.parent.iterdir())
    assert leftovers == ["demo.reproduction"]  # no work folder, staging folder or lock left


def forge_speedup(bundle):
    """The candidate's records edited to a speed-up FORGED_FACTOR times the real one, every
    wall and CPU time scaled alike (walls alone break the physics rules), comparison.json
    re-derived and both manifests re-sealed: every checker passes it."""
    def faster(label, record):
        if record["variant"] == "candidate":
            record["wall_s"] /= FORGED_FACTOR
            for item in record["items"]:
                item["wall_s"] /= FORGED_FACTOR
                item["cpu_s"] /= FORGED_FACTOR
            for row in record["stages"].values():
                row["self_cpu_s"] /= FORGED_FACTOR
                row["incl_cpu_s"] /= FORGED_FACTOR
    tamper.edit_runs(faster)(bundle)
    tamper.rederive(bundle)
    tamper.reseal(bundle)


@pytest.fixture(scope="module")
def forged_spot_check(demo_bundle_master, tmp_path_factory):
    where = tmp_path_factory.mktemp("forged")
    forged = where / "forged"
    shutil.copytree(demo_bundle_master, forged)
    forge_speedup(forged)
    out = where / "spot"
    return forged, out, harness("reproduce", forged, "--out", out, "--rounds", 5, "--items", 3)


def test_a_forged_speedup_is_not_reproduced(forged_spot_check, demo_bundle_master):
    forged, out, result = forged_spot_check
    for check in checkers(forged):
        assert check.returncode == 0  # consistent: no checker can tell
    assert harness("verify", forged, "--repo", ROOT).returncode == 0
    assert result.returncode == 7, result.stdout + result.stderr
    receipt = receipt_of(out)
    judged = receipt["timing"]
    shown = [f"claimed {reproduce.ratio_text(judged['claimed'])} over 8 items",
             f"{reproduce.ratio_text(judged['original'])} over the same 3 items",
             f"reproduction {reproduce.ratio_text(judged['reproduction'])}"]
    assert all(s in result.stdout for s in shown)  # the intervals printed
    assert "(95% CI of the ratio of the two ratios) excludes 1" in result.stdout
    assert receipt["outputs"]["why"] == "identical"  # only the claim was forged
    # The same judgement without a re-run: the forged claim against the honest bundle.
    honest = reproduce.receipt(bundlereader.load(forged), bundlereader.load(demo_bundle_master))
    assert honest["exit_code"] == 7 and honest["timing"]["ratio_of_ratios"] == pytest.approx(FORGED_FACTOR, rel=1e-4)


def test_items_selects_the_documented_subset_and_says_how_much_weaker(forged_spot_check):
    forged, out, result = forged_spot_check
    everything = [it["id"] for it in json.loads((forged / C.run_path("A1")).read_text())["items"]]
    chosen = subset(everything, 3)
    assert chosen == ["series-00", "series-03", "series-06"]  # evenly spread, the first included
    for label in ("A1", "B1", "A5", "B5"):
        assert [it["id"] for it in json.loads((out / C.run_path(label)).read_text())["items"]] == chosen
    note = ("scope: spot check, weaker than the original: 3 of 9 items; the new interval rests on 3 timed items "
            "and 14 runs only, and is held to the original's interval on the same items")  # 5 rounds, 2 of stage runs
    assert note in result.stdout
    receipt = receipt_of(out)
    assert receipt["outputs"]["items"] == {"original": 9, "reproduction": 3, "compared": 3, "identical": 3}
    held_to = reproduce.claim_on(bundlereader.load(forged), set(chosen))
    assert receipt["timing"]["original"] == held_to and held_to["items"] == 3
    overrides = json.loads((out / C.CAMPAIGN_JSON).read_text())["overrides"]
    assert overrides == {"rounds": 5, "items": 3}
    for check in checkers(out):
        assert check.returncode == 0, check.stdout + check.stderr


# --------------------------------------------------------------------------- refusals
def test_an_original_that_does_not_verify_is_not_rerun(demo_bundle, tmp_path):
    tamper.flip_byte(C.CAMPAIGN_JSON)(demo_bundle, None)
    result = harness("reproduce", demo_bundle, "--out", tmp_path / "out")
    assert result.returncode == 1 and "does not verify" in result.stderr and no_traceback(result)
    assert not (tmp_path / "out").exists()


def test_a_tree_that_no_longer_matches_is_refused_in_one_line(demo_bundle, tmp_path):
    revisions = json.loads((demo_bundle / C.REVISIONS).read_text())
    revisions["base"]["tree_sha256"] = "0" * 64
    (demo_bundle / C.REVISIONS).write_text(json.dumps(revisions, indent=2))
    tamper.reseal(demo_bundle)
    assert harness("verify", demo_bundle).returncode == 0  # only the repository can tell
    result = harness("reproduce", demo_bundle, "--out", tmp_path / "out")
    assert result.returncode == 2 and no_traceback(result)
    assert result.stderr.count("\n") == 1 and "no longer matches" in result.stderr and "tree_sha256" in result.stderr
    assert not (tmp_path / "out").exists()


def test_a_repository_without_the_campaign_file_is_refused(demo_bundle, tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    result = harness("reproduce", demo_bundle, "--repo", tmp_path, "--out", tmp_path / "out")
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "demo.yaml" in result.stderr
    assert "cannot be read" in result.stderr
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- the receipt in checkers and report
def test_both_checkers_hold_the_receipt_to_its_bundle(reproduction, tmp_path):
    out, _ = reproduction
    for edit, rule in ((lambda r: r.update(schema="abba-harness/reproduction/v0"), "[parsing]"),
                       (lambda r: r.update(extra=1), "unknown extra"),
                       (lambda r: r["timing"]["reproduction"].update(ratio=1e-9), "[identity]"),
                       (lambda r: r.update(campaign="other"), "[identity]")):
        copy = tmp_path / f"copy{len(list(tmp_path.iterdir()))}"
        shutil.copytree(out, copy)
        receipt = receipt_of(copy)
        edit(receipt)
        (copy / C.REPRODUCTION).write_text(json.dumps(receipt))
        tamper.reseal(copy)
        for check in checkers(copy):
            assert check.returncode == 1 and f"FAIL {C.REPRODUCTION}:" in check.stdout and rule in check.stdout
    copy = tmp_path / "unknown"
    shutil.copytree(out, copy)
    (copy / "data" / "receipts" / "other.json").write_text("{}")
    tamper.reseal(copy)
    for check in checkers(copy):
        assert check.returncode == 1 and "data/receipts/other.json: [files] not a file a bundle holds" in check.stdout


def test_report_lists_each_reproduction_under_its_original(demo_bundle_master, reproduction, tmp_path):
    out, _ = reproduction
    shutil.copytree(demo_bundle_master, tmp_path / "evidence" / "demo")
    shutil.copytree(out, tmp_path / "evidence" / "demo_rerun")
    bundles = [tmp_path / "evidence" / "demo", tmp_path / "evidence" / "demo_rerun"]
    text = render_report(bundles, tmp_path)
    assert text == render_report(bundles, tmp_path)  # deterministic
    original = text[text.index("## demo: `evidence/demo`"):text.index("## demo: `evidence/demo_rerun`")]
    receipt = receipt_of(out)
    row = next(line for line in original.splitlines() if line.startswith("| `evidence/demo_rerun`"))
    assert environment.machine_text(receipt["reproduction"]["machine"]) in row
    assert reproduce.ratio_text(receipt["timing"]["reproduction"]) in row and "identical (9 items" in row
    assert text.count("### Reproductions") == 1  # the re-run itself has none
    assert f"a reproduction of the bundle with digest `{receipt['original']['digest']}`" in text


# --------------------------------------------------------------------------- what reproduce runs (issue 20, item 4)
def test_reproduce_prints_what_it_will_run_from_the_campaign_file_given(demo_bundle, tmp_path):
    result = harness("reproduce", demo_bundle, "--campaign", CAMPAIGNS / "demo.yaml", "--out", tmp_path / "out",
                     "--order", "AB", "--items", "2")
    assert result.returncode in (0, 7), result.stdout + result.stderr  # one AB round: no interval to judge by
    shown = [line for line in result.stdout.splitlines() if line.startswith("will run: ")]
    assert f"will run: campaign file: {(CAMPAIGNS / 'demo.yaml').resolve()}" in shown
    assert "will run: entry point: demo_workload:setup from " + str((CAMPAIGNS / "workloads").resolve()) in shown
    assert "will run: stage moving_mean: demo.core:moving_mean" in shown
    chosen = next(line for line in shown if "the bundle chooses" in line)
    assert "order AB" in chosen and "items 2" in chosen
    assert result.stdout.index("will run: ") < result.stdout.index("verdict: ")


def test_a_campaign_file_inside_a_bundle_is_refused(demo_bundle, tmp_path):
    result = harness("reproduce", demo_bundle, "--campaign", demo_bundle / C.CAMPAIGN_YAML,
                     "--out", tmp_path / "out")
    assert result.returncode == 2 and no_traceback(result) and result.stderr.count("\n") == 1
    assert "inside the evidence bundle" in result.stderr and not (tmp_path / "out").exists()


def test_a_build_command_the_bundle_wrote_is_never_executed(demo_bundle, tmp_path):
    """The bundle's campaign.yaml and campaign.json gain a build: command, consistently (both
    checkers pass the bundle alone); reproduce runs the repository's file or none at all."""
    marker = tmp_path / "MARKER-the-bundle-s-build-ran"
    command = [sys.executable, "-c", f"open({str(marker)!r}, 'w')"]
    yaml_path = demo_bundle / C.CAMPAIGN_YAML
    yaml_path.write_text(yaml_path.read_text() + f"build:\n  - {json.dumps(command)}\n")
    campaign = json.loads((demo_bundle / C.CAMPAIGN_JSON).read_text())
    campaign["build"] = [command]
    (demo_bundle / C.CAMPAIGN_JSON).write_text(json.dumps(campaign, indent=2))
    builds = {"schema": C.SCHEMAS["builds"], "base": {}, "candidate": {}}
    (demo_bundle / C.BUILDS).write_text(json.dumps(builds))
    tamper.reseal(demo_bundle)
    assert harness("verify", demo_bundle).returncode == 0  # only the repository can tell
    for extra in ((), ("--campaign", CAMPAIGNS / "demo.yaml")):
        result = harness("reproduce", demo_bundle, *extra, "--out", tmp_path / "out", "--order", "AB")
        assert result.returncode == 2 and no_traceback(result), result.stdout + result.stderr
        assert "no longer matches" in result.stderr and "campaign.yaml" in result.stderr
    assert not marker.exists() and not (tmp_path / "out").exists()
