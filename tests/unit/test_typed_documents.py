"""The documents a campaign writes are built as typed records by their writers and read back through
the same types (issue 47): campaign.json, the runner's, cleanup's, inputs', workload's and revisions'
receipts (harness/records.py) and comparison.json (harness/bundle/model.py). Read through its type and written again, each
document of a sealed bundle is itself, key for key and in its order, so no reader needs a second
model of it and no field is lost on the way."""
from __future__ import annotations

import dataclasses
import json

from fakes import Model, run_fake
from harness import contract as C, records
from harness.bundle import read
from harness.bundle.model import Comparison
from harness.selftest import keyreads

TYPED = {C.CAMPAIGN_JSON: records.CampaignRecord.from_json, C.RUNNER: records.RunnerReceipt.from_json,
         C.CLEANUP: records.CleanupReceipt.from_json, C.INPUTS: records.InputsReceipt.from_json,
         C.WORKLOAD: records.WorkloadReceipt.from_json, C.REVISIONS: records.RevisionsReceipt.from_json,
         C.COMPARISON: Comparison.of}


def _ordered(value):
    """value with every object's key order made visible (json.loads keeps it; == ignores it)."""
    if isinstance(value, dict):
        return [(k, _ordered(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [_ordered(v) for v in value]
    return value


def test_every_typed_document_reads_back_through_its_type_to_itself(tmp_path):
    outcome, _ = run_fake(tmp_path, Model(ratio=0.8, noise=0.02), stages={"core": "lib.core:VERSION"})
    for rel, of in TYPED.items():
        raw = (outcome.out / rel).read_text()
        doc = json.loads(raw)
        assert _ordered(records.to_json(of(doc))) == _ordered(doc), rel
    bundle = read.load(outcome.out)
    assert records.to_json(bundle.campaign) == json.loads((outcome.out / C.CAMPAIGN_JSON).read_text())
    assert bundle.comparison == outcome.comparison  # the writer's record is the reader's


def test_comparison_json_is_written_in_the_contracts_order(tmp_path):
    """The writer serialises the model, whose fields follow contract.FIELDS (tests/unit/test_model.py),
    so comparison.json's keys come in the order docs/bundle-format.md lists them."""
    outcome, _ = run_fake(tmp_path, Model())
    doc = json.loads((outcome.out / C.COMPARISON).read_text())
    top = [p for p in C.FIELDS["comparison"] if "." not in p and "[" not in p]
    stats = [p.split(".", 1)[1] for p in C.FIELDS["comparison"] if p.startswith("stats.") and p.count(".") == 1]
    assert list(doc) == top and list(doc["stats"]) == [k for k in stats if k in doc["stats"]]


def test_an_absent_optional_key_stays_absent(tmp_path):
    """campaign.json's interference is left out (not null) beside run records of an earlier schema:
    read as None, written back without it."""
    outcome, _ = run_fake(tmp_path, Model())
    full = json.loads((outcome.out / C.CAMPAIGN_JSON).read_text())
    doc = records.to_json(records.CampaignRecord.from_json({k: v for k, v in full.items() if k != "interference"}))
    assert "interference" not in doc and list(doc) == [k for k in full if k != "interference"]
    again = records.CampaignRecord.from_json(doc)
    assert again.interference is None and records.to_json(again) == doc
    bounds = records.interference_bounds(None)
    assert records.to_json(dataclasses.replace(again, interference=bounds))["interference"] == records.to_json(bounds)


# Issue 47: constant-key reads of documents outside the checkers were 922 when it was filed and 733
# before the comparison's stats and parity, the reproduction, revisions, builds and bisect receipts,
# the interference bounds, the fleet's jobs and the signed claim were built as typed records; 424
# before what the workers and zygotes hand the runner (the pre-flight's and an instruction run's
# results, a zygote's lines), the interpreters' probes, the noise-floor file, environment.json's
# sandbox, the campaign's sandbox setting, a suite's params and the worker's own readings were. The
# ceiling is the figure reached: lower it when a module becomes typed; a change that raises it
# reads a document by key where its type would do. 287 with the duet and the precision merged:
# a `rounds: auto` plan is read through analysis.Plan (records.build; -2 of main's 288, and the
# precision adds none), the duet's fake machine names its cores (+1).
DOCUMENT_KEY_READS = 287


def test_the_documents_are_read_by_key_no_more_than_the_ceiling():
    assert keyreads.documents(keyreads.count()) <= DOCUMENT_KEY_READS


def test_the_key_read_count_sees_subscripts_and_gets_with_a_literal_key():
    source = 'a["x"]; a.get("y"); a.get("z", 1); a[k]; a["w"] = 1; del a["v"]; b.get(k)\n'
    assert keyreads.reads(source) == 3
    counts = keyreads.count()
    assert "rehash.py" not in counts and not any(m.startswith("legacy/") for m in counts)


def test_an_optional_key_left_out_stays_out_and_a_null_stays_null():
    """A parity mismatch's max_ulp is present (null when no distance is defined) only under a
    declared tolerance: a document built from JSON writes back exactly the keys it was given."""
    from harness.bundle import model as M
    from harness.records import to_json

    bare = {"run": "B1", "item": "x", "field": "out", "reason": "digest differs",
            "reference_digest": "a" * 64, "digest": "b" * 64}
    assert to_json(M.build(M.Mismatch, bare)) == bare
    assert to_json(M.build(M.Mismatch, {**bare, "max_ulp": None})) == {**bare, "max_ulp": None}
