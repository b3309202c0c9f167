"""Issue 33.6: a declared `parity: {max_ulp: N}` is bounded per dtype (contract.MAX_ULP). On
fake-launcher bundles: a float32 campaign whose tolerance exceeds float32's bound does not agree
(and both checkers accept that honest bundle); a forger who claims agreement for it, or who
writes a max_ulp past every bound into campaign.json, is refused by harness/rehash.py and by
harness verify."""
from __future__ import annotations

import json

import numpy as np

from checks_support import forge, problems, refused
from fakes import Model, run_fake
from harness import contract as C, outcomes, records
from harness.bundle.model import Comparison


class Float32Model(Model):
    """The model worker with float32 outputs; with `constant` the candidate returns 0.5 for every item."""

    constant: bool = False

    def _output(self, item: str, variant: str):
        if self.constant and variant == "candidate":
            return np.array([0.5], dtype=np.float32)
        return np.array([float(sum(map(ord, item)))], dtype=np.float32)


def constant_bundle(where, max_ulp):
    model = Float32Model(items=4, item_s=0.1)
    model.constant = True
    outcome, _ = run_fake(where, model, rounds=3, parity={"max_ulp": max_ulp})
    return outcome


def test_a_float32_campaign_over_its_dtypes_bound_is_a_parity_mismatch_both_checkers_accept(tmp_path):
    outcome = constant_bundle(tmp_path, 2 ** 26)  # float64's bound: the most a campaign file may say
    c = records.to_json(outcome.comparison)  # as comparison.json holds it
    assert c["status"] == "complete", c["reason"]
    assert c["parity"]["agree"] is False and c["parity"]["tolerance"]["over_bound"] == {"float32": 4096}
    assert outcome.exit_code == outcomes.PARITY
    line = outcomes.line(Comparison.of(c))
    assert "(float32: at most 4096 ULP; " in line and "equal" not in line
    r, v = problems(outcome.out)
    assert r == [] and v == []  # an honest mismatch is valid evidence


def test_a_forged_agreement_under_a_tolerance_over_the_dtypes_bound_is_refused_by_both(tmp_path):
    """The forger claims what the old code said: every constant output 'within' 2**26 ULP."""
    outcome = constant_bundle(tmp_path, 2 ** 26)

    def agree(c):
        c["parity"]["agree"] = True
        c["parity"]["tolerance"]["over_bound"] = {}
        c["parity"]["tolerance"]["fields_within"] = c["parity"]["mismatch_count"]

    forge(outcome.out, {C.COMPARISON: agree}, rederive=False)
    r, v = problems(outcome.out)
    assert refused(r, "comparison.json", "parity.agree"), r
    assert refused(r, "comparison.json", "parity.tolerance.over_bound"), r
    assert refused(v, "comparison.json", "parity.agree"), v


def test_a_campaign_json_max_ulp_past_every_bound_is_refused_by_both(tmp_path):
    outcome = constant_bundle(tmp_path, 4096)
    assert outcome.comparison.parity.agree is False  # the constant is millions of ULP away

    def widen(c):
        c["parity"]["max_ulp"] = 2 ** 32

    forge(outcome.out, {C.CAMPAIGN_JSON: widen}, rederive=False)
    r, v = problems(outcome.out)
    assert refused(r, "campaign.json", "parity.max_ulp", "4294967296 outside 0..67108864"), r
    assert refused(v, "campaign.json", "parity.max_ulp"), v
    json.loads((outcome.out / C.CAMPAIGN_JSON).read_text())  # the forged file is still JSON
