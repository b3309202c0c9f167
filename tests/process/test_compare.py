"""`harness compare BUNDLE`: one verdict line and the exit codes a CI job acts on."""
from __future__ import annotations

import json

import pytest

from harness import contract as C
from harness.cli import main as cli


@pytest.fixture(scope="module")
def honest(tmp_path_factory) -> dict:
    """A comparison.json of the contract, from a whole campaign on the fake launcher."""
    from fakes import Model, run_fake

    outcome, _ = run_fake(tmp_path_factory.mktemp("fake"), Model(items=3), rounds=3)
    return json.loads((outcome.out / C.COMPARISON).read_text())


def comparison(honest, verdict="improved", status="complete", agree=True):
    c = json.loads(json.dumps(honest))
    c["status"], c["reason"] = status, None if status == "complete" else "B1: timeout"
    c["parity"]["agree"] = c["parity"]["identical"] = agree
    c["stats"]["verdict"] = verdict
    return c


def write(tmp_path, obj, raw=None):
    b = tmp_path / "bundle"
    (b / "data").mkdir(parents=True)
    (b / "data" / "comparison.json").write_text(raw if raw is not None else json.dumps(obj))
    return b


@pytest.mark.parametrize("kwargs,code,word", [
    ({"verdict": "improved"}, 0, "improved"),
    ({"verdict": "equal"}, 0, "equal"),
    ({"verdict": "regressed"}, 5, "regressed"),
    ({"verdict": "inconclusive"}, 6, "inconclusive"),
    ({"agree": False}, 3, "parity mismatch"),
    ({"status": "failed"}, 4, "campaign failed"),
])
def test_exit_codes(honest, tmp_path, capsys, kwargs, code, word):
    b = write(tmp_path, comparison(honest, **kwargs))
    assert cli(["compare", "--no-verify", str(b)]) == code
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith(f"verdict: {word}") and f"(exit {code})" in out.splitlines()[0]
    assert out.splitlines()[0].rstrip().endswith("[not verified: --no-verify]")  # it says it did not verify
    # the comparison.json path itself is accepted too
    assert cli(["compare", "--no-verify", str(b / "data" / "comparison.json")]) == code


def test_compare_verifies_first(honest, tmp_path, capsys):
    """A bundle that does not verify gives no verdict, whatever its comparison.json says."""
    b = write(tmp_path, comparison(honest))
    assert cli(["compare", str(b)]) == 1  # verify's code: staging-like, never sealed
    cap = capsys.readouterr()
    assert "verdict" not in cap.out and "does not verify" in cap.err
    assert cli(["compare", str(b / "data" / "comparison.json")]) == 2  # a lone file cannot be verified


def test_compare_refuses_a_resealed_forgery(demo_bundle, capsys):
    from harness.selftest import tamper

    def edit(comp):
        comp["stats"]["verdict"] = "improved" if comp["stats"]["verdict"] != "improved" else "regressed"
    tamper._edit_comparison(demo_bundle, edit)
    assert cli(["compare", str(demo_bundle)]) == 1
    assert "stats.verdict claims" in capsys.readouterr().out
    assert cli(["compare", str(demo_bundle)]) == 1


def test_compare_on_an_intact_bundle(demo_bundle, capsys):
    """The verdict line first (what CI reads), then the short stage table (issue 21.6)."""
    assert cli(["compare", str(demo_bundle)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("verdict: improved (exit 0)")
    assert lines[1].startswith("stage self CPU (s per run, mean over ok runs), most base CPU first")
    header = [c.strip() for c in lines[2].strip("|").split("|")]
    assert header == ["stage", "calls per run", "base self", "candidate self", "candidate/base"]


@pytest.mark.parametrize("raw", [
    "{broken",
    "[]",
    json.dumps({"status": "complete", "parity": {"identical": True}}),  # not of the contract
    json.dumps({"schema": C.SCHEMAS["comparison"], "status": "weird"}),
    '{"status": 1' + "0" * 5000 + "}",  # an integer no machine writes
    '{"a": ' * 100 + "1" + "}" * 100,  # nested past the limit
])
def test_unusable_input_exits_2_without_traceback(tmp_path, capsys, raw):
    b = write(tmp_path, None, raw=raw)
    assert cli(["compare", "--no-verify", str(b)]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    assert cap.err.startswith("harness compare: error:") and cap.err.count("\n") == 1
    assert "Traceback" not in cap.err


def test_missing_bundle_and_missing_file(tmp_path, capsys):
    assert cli(["compare", str(tmp_path / "nope")]) == 2
    (tmp_path / "empty").mkdir()
    assert cli(["compare", str(tmp_path / "empty")]) == 2
    err = capsys.readouterr().err
    assert "no such bundle" in err and "missing" in err and "Traceback" not in err


# --------------------------------------------------------------------------- two bundles (issue 12)
def _nudge_an_output(bundle):
    """One float of one stored output moved by one ulp in every run that has it; records,
    comparison.json and manifests made consistent again (the bundle still verifies)."""
    import numpy as np

    from harness.selftest import tamper
    from harness.bundle import arrays as tensors

    arrays = bundle / "data" / "arrays"
    first = json.loads((bundle / C.run_path("A1")).read_text())["items"][0]
    old = first["fields"]["means"]["digest"]
    array = tensors.load(tensors.array_path(arrays, old)).copy()
    array[100] = np.nextafter(array[100], np.inf)
    new = tensors.store(array, arrays)["digest"]
    tensors.array_path(arrays, old).unlink()

    def swap(label, record):
        for it in record["items"]:
            for f in it["fields"].values():
                if f["digest"] == old:
                    f["digest"] = new
    tamper.edit_runs(swap)(bundle)
    tamper.rederive(bundle)
    tamper.reseal(bundle)


def _older(bundle, seconds=10.0):
    from harness.selftest import tamper

    tamper.edit_json(C.RUNNER, lambda r: r.update(started_at=r["started_at"] - seconds))(bundle)
    tamper.reseal(bundle)


def test_compare_two_bundles_of_one_campaign(demo_bundle_master, demo_bundle, capsys):
    _older(demo_bundle)
    assert cli(["compare", str(demo_bundle), str(demo_bundle_master)]) == 0
    out = capsys.readouterr().out
    header = "| #   | bundle"
    assert out.startswith(header) and str(demo_bundle) in out and str(demo_bundle_master) in out
    stages = out[out.index("Stage self CPU"):out.index("machines:")]
    header = next(line for line in stages.splitlines() if line.startswith("| stage"))
    assert [c.strip() for c in header.strip("|").split("|")] == [
        "stage", "1 base self", "1 candidate self", "1 candidate/base",
        "2 base self", "2 candidate self", "2 candidate/base"]
    assert "machines: same machine class" in out and "outputs: identical (9 items, 32 fields)" in out
    assert out.rstrip().endswith("exit 0: the verdict of bundle 2, the one judged (A B: B)")


def test_compare_two_exits_3_when_outputs_differ(demo_bundle_master, demo_bundle, capsys):
    _nudge_an_output(demo_bundle)
    assert cli(["verify", str(demo_bundle)]) == 0
    capsys.readouterr()
    assert cli(["compare", str(demo_bundle_master), str(demo_bundle)]) == 3
    out = capsys.readouterr().out
    assert "outputs: DIFFER: float fields differ on a machine of the same class (8 of 9 common items identical)" \
        in out
    assert "item series-00 field means: 1 of 12000 elements differ" in out and "max ulp 1" in out
    assert out.rstrip().endswith("exit 3: outputs differ")


def test_compare_two_refuses_what_it_cannot_compare(demo_bundle_master, demo_bundle, tmp_path, capsys):
    from harness.selftest import tamper

    assert cli(["compare", "--no-verify", str(demo_bundle), str(demo_bundle_master)]) == 2
    assert cli(["compare", str(demo_bundle), str(demo_bundle), str(demo_bundle_master)]) == 2
    tamper.flip_byte(C.ENVIRONMENT)(demo_bundle, None)
    assert cli(["compare", str(demo_bundle_master), str(demo_bundle)]) == 1
    cap = capsys.readouterr()
    assert "does not verify" in cap.err and "Traceback" not in cap.err
