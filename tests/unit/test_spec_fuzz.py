"""Property-based fuzzing of campaign validation. Whatever the YAML holds, spec.parse either
returns a campaign or raises SpecError with one line naming the file and the key path that
was changed; never another exception. A handful of examples go through `harness run` in
tests/process/test_spec_cli.py."""
from __future__ import annotations

import copy
import json
import re
import string
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from harness import contract as C
from harness.plan import spec
from spec_support import PATHS, SOURCE, VALID, dotted, get, values

FAST = settings(max_examples=75, deadline=None, suppress_health_check=[HealthCheck.too_slow])


REQUIRED = [("name",), ("target",), ("base",), ("candidate",), ("workload",), ("base", "rev"),
            ("candidate", "rev"), ("workload", "entry"), ("inputs", "corpus", "path"),
            ("inputs", "corpus", "sha256"), ("target", "build", 0, "message"), ("stages", "b", "path")]
# Mappings whose keys are fixed (params, inputs, stages, env and fence take any names).
STRICT_MAPPINGS = [(), ("target",), ("target", "build", 0), ("base",), ("candidate",), ("workload",),
                   ("inputs", "corpus"), ("timeouts",), ("stages", "b"), ("verdict",)]

def parse_or_error(data):
    """The property every case shares: a Campaign, or a one-line SpecError naming the file."""
    try:
        campaign = spec.parse(data, SOURCE)
    except spec.SpecError as exc:
        msg = str(exc)
        assert "\n" not in msg and "\r" not in msg, msg
        assert msg.startswith(f"{SOURCE}: "), msg
        assert ": expected " in msg, msg
        return None, msg[len(str(SOURCE)) + 2:].split(": expected ", 1)[0]
    # Whatever is accepted can travel to the worker and into the bundle.
    json.dumps(campaign.workload.params, allow_nan=False)
    assert len(campaign.labels()) == len(campaign.order)
    return campaign, None


def escaped(text: str) -> str:
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


@FAST
@given(path=st.sampled_from(PATHS), value=values)
def test_any_value_at_any_key(path, value):
    data = copy.deepcopy(VALID)
    get(data, path[:-1])[path[-1]] = value
    _, key_path = parse_or_error(data)
    if key_path is not None:
        # The error is at the changed key, below it, or at the list/mapping that holds it
        # (a command list, fence or env names its container); never somewhere unrelated.
        changed = dotted(path)
        assert key_path.startswith(changed) or changed.startswith(key_path), (changed, key_path)
        assert key_path != "(top level)"


@FAST
@given(where=st.sampled_from(STRICT_MAPPINGS), key=st.text(min_size=1, max_size=10),
       value=values)
def test_unknown_keys_are_named(where, key, value):
    data = copy.deepcopy(VALID)
    node = get(data, where)
    assume(key not in node and key not in {"repo", "build", "tree", "patch", "message", "rev", "fence", "entry",
                                            "path", "params", "sha256", "run_s", "campaign_s", "optional",
                                            "threshold", "description", "inputs", "order", "slots",
                                            "timeouts", "stages", "env", "golden", "verdict"})
    node[key] = value
    _, key_path = parse_or_error(data)
    assert key_path == escaped(f"{dotted(where)}.{key}" if where else key)


@FAST
@given(path=st.sampled_from(REQUIRED))
def test_missing_required_keys_are_named(path):
    data = copy.deepcopy(VALID)
    del get(data, path[:-1])[path[-1]]
    _, key_path = parse_or_error(data)
    assert key_path == dotted(path) or (path == ("target", "build", 0, "message") and key_path == dotted(path))


@FAST
@given(order=st.text(alphabet="ABab C\n", max_size=70) | st.text(alphabet="AB", min_size=195, max_size=205))
def test_order(order):
    data = copy.deepcopy(VALID)
    data["order"] = order
    campaign, key_path = parse_or_error(data)
    # a and b are stage runs (VALID has stages); the timed runs need both A and B, and every round
    # (consecutive pairs of timed runs, and of stage runs) one of each (rules.order_problem)
    ok = re.fullmatch(r"[ABab]+", order) is not None and "A" in order and "B" in order and len(order) <= spec.MAX_RUNS \
        and all(sorted(runs[k:k + 2]) == sorted(pair) for pair in ("AB", "ab")
                for runs in ["".join(c for c in order if c in pair)] for k in range(0, len(runs), 2))
    assert (campaign is not None) == ok, order
    if campaign:
        labels = [label for label, _ in campaign.labels()]
        assert [lab[0] for lab in labels] == list(order.upper()) and len(set(labels)) == len(labels)
        assert [lab[1] == "s" for lab in labels] == [c.islower() for c in order]
        assert [campaign.instrumented(lab) for lab in labels] == [c.islower() or order.isupper() for c in order]
    else:
        assert key_path == "order"


numbers = st.one_of(st.integers(min_value=-(2 ** 70), max_value=2 ** 70), st.floats(allow_nan=True),
                    st.booleans(), st.text(alphabet="0123456789.e-", max_size=6), st.none())


@FAST
@given(key=st.sampled_from([("slots",), ("timeouts", "run_s"), ("timeouts", "campaign_s"),
                            ("verdict", "threshold")]), value=numbers)
def test_numbers_and_their_ranges(key, value):
    data = copy.deepcopy(VALID)
    get(data, key[:-1])[key[-1]] = value
    campaign, key_path = parse_or_error(data)
    low, high, integer = {("slots",): (1, 256, True), ("timeouts", "run_s"): (1, 7 * 24 * 3600, False),
                          ("timeouts", "campaign_s"): (1, 7 * 24 * 3600, False),
                          ("verdict", "threshold"): (0, C.MAX_BAND, False)}[key]
    is_number = not isinstance(value, bool) and isinstance(value, int if integer else (int, float))
    ok = is_number and low <= value <= high
    assert (campaign is not None) == ok, value
    if not ok:
        assert key_path == dotted(key)


IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def stage_path_ok(text: str, method_allowed: bool = True) -> bool:
    if text.count(":") != 1:
        return False
    module, qual = text.split(":")
    parts_ok = all(IDENT.fullmatch(p) for p in module.split(".")) and all(IDENT.fullmatch(p) for p in qual.split("."))
    return parts_ok and (method_allowed or "." not in qual)


@FAST
@given(text=st.text(alphabet="ab_1.:C \n-", max_size=14))
def test_stage_and_entry_paths(text):
    data = copy.deepcopy(VALID)
    data["stages"] = {"s": text}
    campaign, key_path = parse_or_error(data)
    assert (campaign is not None) == stage_path_ok(text), text
    if campaign is None:
        assert key_path == "stages.s"
    data = copy.deepcopy(VALID)
    data["workload"]["entry"] = text
    campaign, key_path = parse_or_error(data)
    assert (campaign is not None) == stage_path_ok(text, method_allowed=False), text


@FAST
@given(text=st.text(alphabet=string.printable + "\x00\x85\u2028é", max_size=200))
def test_arbitrary_yaml_text_through_load(text):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "c.yaml"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        try:
            spec.load(path)
        except spec.SpecError as exc:
            assert "\n" not in str(exc) and str(exc).startswith(str(path))
