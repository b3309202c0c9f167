"""`harness reproduce` end to end, its receipt in both checkers and in `verify --original`, and
the reproductions in REPORT.md; the two bundles' agreement (harness/judge/agreement.py). The
timing judgment itself is unit-tested (tests/unit/test_reproduce_judgment.py); here no timing is
asserted: the honest re-run's word is only required to be the one the two bundles give, and the
forged bundle claims a speed-up 100 times the real one."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

from conftest import CAMPAIGNS, ROOT, harness, no_traceback
from fakes import record
from harness import contract as C, outcomes, records
from harness.bundle import arrays as tensors, read as bundlereader
from harness.judge import agreement, reproduce
from harness.records import MachineClass
from harness.selftest import tamper

FORGED_FACTOR = 100


# --------------------------------------------------------------------------- machines
EPYC = {"cpu_model": "AMD EPYC", "vector_isa": {"summary": "avx2", "flags": ["avx2"]}, "cores": 2,
        "blas": "mkl 2024.2", "torch_threads": 1}
XEON = {"cpu_model": "Intel Xeon", "vector_isa": {"summary": "avx512", "flags": []}, "blas": "mkl 2024.2",
        "torch_threads": 1}


def test_the_machine_class_of_an_environment():
    m = MachineClass.of(EPYC)
    assert (m.cpu_model, m.vector_isa, m.blas, m.torch_threads, m.cores) == ("AMD EPYC", "avx2", "mkl 2024.2", 1, 2)
    assert m.text() == "AMD EPYC, avx2, mkl, 2 cores"
    assert MachineClass.of({}) == MachineClass(None, None, None, None, None)


def test_machine_classes():
    epyc, xeon = MachineClass.of(EPYC), MachineClass.of(XEON)
    assert agreement.same_class(epyc, MachineClass.of(dict(EPYC)))[0] is True
    same, why = agreement.same_class(epyc, xeon)
    assert same is False and "cpu_model 'AMD EPYC' vs 'Intel Xeon'" in why and "vector_isa" in why
    same, why = agreement.same_class(epyc, MachineClass.of({"cpu_model": "AMD EPYC"}))
    assert same is None and "vector_isa, blas not recorded" in why  # missing is unknown, never "same"
    assert agreement.same_class(epyc, MachineClass.of({**EPYC, "blas": "openblas 0.3"}))[0] is False


# --------------------------------------------------------------------------- outputs
def _run(tmp, label, variant, outputs: dict, error=None):
    """A run record holding outputs {item: {field: array}} stored under tmp/arrays."""
    items = [records.Item(i, 0.1, 0.1, {n: records.Output(**tensors.store(a, tmp / "arrays"))
                                        for n, a in fields.items()} if not (error and i == "err") else {},
                          error if i == "err" else None) for i, fields in outputs.items()]
    return record(label, variant, items)


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
    out = records.to_json(agreement.compare_outputs(a, b, True))
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
    out = records.to_json(agreement.compare_outputs(a, b, same))
    assert (out["agree"], out["why"], out["kinds"]) == (agree, why, ["float"])
    assert out["items_differing"] == {"x0": "float"}
    rows = agreement.divergence_across(out["mismatches"], tmp_path / "a" / "arrays", tmp_path / "b" / "arrays")
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
    out = records.to_json(agreement.compare_outputs(a, b, same))
    assert not out["agree"] and out["kinds"] == [kind] and kind in out["why"]


def test_recorded_errors_and_missing_fields_fail_and_only_common_items_count(tmp_path):
    more = {"x2": {"logp": LOGP}}  # only the original has x2: not compared
    a, b = _pair(tmp_path, outputs(extra=more), outputs(extra={"x1": {"logp": LOGP * 2}}))
    out = records.to_json(agreement.compare_outputs(a, b, False))
    assert out["items"]["compared"] == 2 and "x2" not in out["items_differing"]
    assert not out["agree"] and out["items_differing"] == {"x1": "structure"}  # tokens missing
    a = [_run(tmp_path / "e", "A1", "base", {"err": {}}, error={"type": "ValueError", "message": "m"})]
    b = [_run(tmp_path / "f", "A1", "base", {"err": {}}, error={"type": "ValueError", "message": "other"})]
    out = records.to_json(agreement.compare_outputs(a, b, False))
    assert not out["agree"] and out["kinds"] == ["error"]


def test_other_campaign():
    import dataclasses

    blank = {f.name: None for f in dataclasses.fields(records.CampaignRecord)}
    a = records.CampaignRecord(**{**blank, "name": "demo", "revisions": {
        "base": records.Pin("main", "a"), "candidate": records.Pin("pr", "b")}})
    assert agreement.other_campaign(a, dataclasses.replace(a)) is None
    assert agreement.other_campaign(a, dataclasses.replace(a, name="other")) == "name demo vs other"
    b = dataclasses.replace(a, revisions={**a.revisions, "candidate": records.Pin("pr", "c")})
    assert agreement.other_campaign(a, b) == "candidate SHA b vs c"


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


def test_a_reproduction_of_the_demo_is_judged_by_the_two_bundles(demo_bundle_master, reproduction):
    out, result = reproduction
    receipt = receipt_of(out)
    original, new = bundlereader.load(demo_bundle_master), bundlereader.load(out)
    assert result.returncode == outcomes.REPRODUCTION_CODES[receipt["verdict"]], result.stdout + result.stderr
    assert receipt["verdict"] in ("reproduced", "not contradicted", "not reproduced")  # timing decides, honestly
    assert receipt["original"]["digest"] == original.digest and receipt["campaign"] == "demo"
    assert receipt["machines"]["same_class"] is True  # the same machine
    assert receipt["outputs"]["why"] == "identical" and receipt["outputs"]["items"]["compared"] == 9
    assert receipt["scope"]["same_items"] and receipt["scope"]["note"] == "the same 9 items; 5 rounds, as the original"
    # The receipt is what the two bundles give, part by part (unit-tested judgment).
    want = records.to_json(reproduce.receipt(original, new))
    want["outputs"]["divergence"] = receipt["outputs"]["divergence"]
    assert receipt == json.loads(json.dumps(want))
    assert f"verdict: {receipt['verdict']} (exit {result.returncode})" in result.stdout
    assert f"digest {new.digest}" in result.stdout and "outputs: identical (9 items, 32 fields)" in result.stdout
    for check in checkers(out):
        assert check.returncode == 0, check.stdout + check.stderr
    assert harness("verify", out, "--original", demo_bundle_master).returncode == 0
    leftovers = sorted(p.name for p in out.parent.iterdir())
    assert leftovers == ["demo.reproduction"]  # no work folder, staging folder or lock left


def forge_speedup(bundle):
    """The candidate's runs edited to a speed-up FORGED_FACTOR times the real one, every figure
    the checkers cross-check with them re-derived (tamper.speed_up: the runner's marks, the
    process's life, the contradictions and interference marks), comparison.json re-derived and
    both manifests re-sealed: every checker passes it."""
    tamper.speed_up([FORGED_FACTOR])(bundle)
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
    assert result.returncode == outcomes.NOT_REPRODUCED, result.stdout + result.stderr
    receipt = receipt_of(out)
    assert receipt["verdict"] == "not reproduced" and "excludes the claimed ratio" in receipt["reason"]
    timing = receipt["timing"]
    shown = [f"claimed {reproduce.ratio_text(records.Claim(**timing['claimed']))}", reproduce.ratio_text(records.Claim(**timing["held_to"])),
             f"re-run {reproduce.ratio_text(records.Claim(**timing['measured']))}"]
    assert all(s in result.stdout for s in shown), result.stdout  # the claim, what it is held to, the re-run
    assert receipt["outputs"]["why"] == "identical"  # only the claim was forged


def test_a_spot_check_of_fewer_items_is_partial_and_held_to_those_items(forged_spot_check):
    forged, out, result = forged_spot_check
    everything = [it["id"] for it in json.loads((forged / C.run_path("A1")).read_text())["items"]]
    chosen = C.subset(everything, 3)
    assert chosen == ["series-00", "series-03", "series-06"]  # evenly spread, the first included
    for label in ("A1", "B1", "A5", "B5"):
        assert [it["id"] for it in json.loads((out / C.run_path(label)).read_text())["items"]] == chosen
    receipt = receipt_of(out)
    assert receipt["scope"]["note"].startswith("partial: 6 of the original's 9 items not re-run")
    assert receipt["outputs"]["items"] == {"original": 9, "reproduction": 3, "compared": 3, "identical": 3}
    held_to = reproduce.claim_on(bundlereader.load(forged), set(chosen))
    assert receipt["timing"]["held_to"] == records.to_json(held_to) and held_to.items == 3
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


def test_an_edit_that_names_a_commit_the_repository_lacks_does_not_verify(demo_bundle, tmp_path):
    # the byte flipped above can land in a recorded SHA (where it does depends on the paths in
    # campaign.json): the seal's failure is the verdict, not "the commit is not in the repository"
    path = demo_bundle / C.CAMPAIGN_JSON
    doc = json.loads(path.read_text())
    sha = doc["revisions"]["base"]["sha"]
    other = sha[:-1] + ("0" if sha[-1] != "0" else "1")
    doc["revisions"]["base"] = {"rev": other, "sha": other}
    path.write_text(json.dumps(doc, indent=2))
    result = harness("reproduce", demo_bundle, "--out", tmp_path / "out")
    assert result.returncode == 1 and "does not verify" in result.stderr and no_traceback(result)
    assert "hash mismatch" in result.stdout  # the seal's failure is named, not the missing commit
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
    assert "expected the repository holding the campaign file" in result.stderr and "has no such file" in result.stderr
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- the receipt in checkers and report
def test_both_checkers_hold_the_receipt_to_its_bundle(reproduction, tmp_path):
    out, _ = reproduction
    for edit, rule in ((lambda r: r.update(schema=C.SCHEMAS["reproduction"].rsplit("/v", 1)[0] + "/v0"), "[parsing]"),
                       (lambda r: r.update(extra=1), "extra: not declared by the contract"),
                       (lambda r: r["reproduction"]["measured"].update(ratio=1e-9), "[identity]"),
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


def test_a_receipt_made_by_hand_is_refused_by_verify_original_and_never_shown(demo_bundle_master, reproduction,
                                                                            tmp_path):
    out, _ = reproduction
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    receipt = receipt_of(copy)
    receipt["verdict"], receipt["original"]["machine"]["cpu_model"] = "reproduced", "Intel Xeon"
    (copy / C.REPRODUCTION).write_text(json.dumps(receipt))
    tamper.reseal(copy)
    assert harness("verify", copy).returncode == 0  # its own side holds: only the original can tell
    result = harness("verify", copy, "--original", demo_bundle_master)
    assert result.returncode == 1 and "[original]" in result.stdout and "Intel Xeon" in result.stdout
    from harness.judge.survey import survey

    entries = survey([demo_bundle_master, copy])
    assert [r.rederived for r in entries[0].reproductions] == [False]


def test_report_lists_each_reproduction_under_its_original(demo_bundle_master, reproduction, tmp_path):
    from harness.judge.survey import find_bundles, survey
    from harness.render import report

    out, _ = reproduction
    shutil.copytree(demo_bundle_master, tmp_path / "evidence" / "demo")
    shutil.copytree(out, tmp_path / "evidence" / "demo_rerun")
    entries = survey(find_bundles(tmp_path))
    text = report.render(entries, tmp_path, "test")
    assert text == report.render(survey(find_bundles(tmp_path)), tmp_path, "test")  # deterministic
    original = text[text.index("## demo\n"):text.index("## demo\n", text.index("## demo\n") + 1)]
    receipt = receipt_of(out)
    row = next(line for line in original.splitlines() if line.startswith("| `evidence/demo_rerun`"))
    assert bundlereader.load(out).machine.text() in row and receipt["verdict"] in row
    from harness.render.text import cell

    assert cell(reproduce.ratio_text(records.Claim(**receipt["reproduction"]["measured"]))) in row and "identical (9 items" in row
    assert text.count("### Reproductions") == 1  # the re-run itself has none
    assert f"a reproduction of the bundle with digest `{receipt['original']['digest'][:16]}`" in text


# --------------------------------------------------------------------------- what reproduce runs (issue 20, item 4)
def test_reproduce_prints_what_it_will_run_from_the_campaign_file_given(demo_bundle, tmp_path):
    result = harness("reproduce", demo_bundle, "--campaign", CAMPAIGNS / "demo.yaml", "--out", tmp_path / "out",
                     "--order", "AB", "--items", "2")
    assert result.returncode in outcomes.REPRODUCTION_CODES.values(), result.stdout + result.stderr
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
    trees = json.loads((demo_bundle / C.REVISIONS).read_text())
    builds = {"schema": C.SCHEMAS["builds"],
              **{v: {"key": "0" * 24, "tree_sha256": trees[v]["tree_sha256"], "cached": False,
                     "steps": [{"argv": command, "exit_code": 0, "output_tail": ""}]} for v in ("base", "candidate")}}
    (demo_bundle / C.BUILDS).write_text(json.dumps(builds))
    tamper.reseal(demo_bundle)
    assert harness("verify", demo_bundle).returncode == 0  # only the repository can tell
    for extra in ((), ("--campaign", CAMPAIGNS / "demo.yaml")):
        result = harness("reproduce", demo_bundle, *extra, "--out", tmp_path / "out", "--order", "AB")
        assert result.returncode == 2 and no_traceback(result), result.stdout + result.stderr
        assert "no longer matches" in result.stderr and "campaign.yaml" in result.stderr
    assert not marker.exists() and not (tmp_path / "out").exists()
