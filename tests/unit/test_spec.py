"""Campaign validation, in-process: one table row per check in harness/plan/spec.py, the
file itself (YAML, duplicate keys, aliases, huge integers), rounds and their budget, the
workers' interpreter (python:) and the declared parity tolerance (parity: max_ulp). The same
refusals through `harness run`, and the errors only a run can find: tests/process/test_spec_cli.py."""
from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml

from conftest import CAMPAIGNS
from harness import contract as C
from harness import rules as R
from harness import rehash
from harness.plan import spec
from spec_support import DELETE, HEX, SOURCE, VALID, mutated


def error_of(data) -> str:
    with pytest.raises(spec.SpecError) as info:
        spec.parse(data, SOURCE)
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith(f"{SOURCE}: ")
    return msg


def test_valid_campaign_parses():
    c = spec.parse(copy.deepcopy(VALID), SOURCE)
    assert c.name == "demo" and c.order == "ABBA" and c.slots == 2
    assert c.labels() == [("A1", "base"), ("B1", "candidate"), ("B2", "candidate"), ("A2", "base")]
    assert c.target.build[0].path == Path("/campaigns/demo/tree")  # relative to the YAML's folder
    assert c.target.build[1].kind == "patch"
    assert c.stages == {"a": "demo.core:f", "b": "demo.core:C.m"} and c.optional_stages == {"b"}
    assert c.inputs[0].build == ("{python}", "make.py", "{path}")
    assert c.run_timeout_s == 60.0 and c.threshold == 0.05 and c.golden == Path("/campaigns/demo/golden.json")
    assert c.golden_sha256 == HEX


def test_rounds_shuffle_each_round_from_a_recorded_seed():
    d = {k: copy.deepcopy(VALID[k]) for k in ("name", "target", "base", "candidate", "workload")}
    c = spec.parse({**d, "rounds": 12}, SOURCE)
    fixed = c.with_seed(7)
    assert fixed.seed == 7 and fixed.order == R.round_order(12, 7) == c.with_seed(7).order
    assert all(fixed.order[i:i + 2] in ("AB", "BA") for i in range(0, 24, 2))
    assert len({c.with_seed(s).order for s in range(20)}) > 1  # the seed decides
    assert c.with_seed().seed is not None  # drawn when the YAML gives none
    pinned = spec.parse({**d, "rounds": 12, "seed": 3}, SOURCE)
    assert pinned.order == R.round_order(12, 3) and pinned.with_seed(99).seed == 3
    with pytest.raises(spec.SpecError, match="rounds: expected either rounds or an explicit order"):
        spec.parse({**d, "rounds": 3, "order": "AB"}, SOURCE)


@pytest.mark.parametrize("key, value, expected", [
    ("rounds", 0, "rounds: expected an integer from 1 to 100"),
    ("rounds", 101, "rounds: expected an integer from 1 to 100"),
    ("rounds", "ten", "rounds: expected an integer from 1 to 100, or auto"),
    ("seed", -1, "seed: expected an integer from 0 to 4.29497e+09"),
    ("seed", 1.5, "seed: expected an integer from 0"),
])
def test_rounds_validation(key, value, expected):
    d = {k: v for k, v in copy.deepcopy(VALID).items() if k != "order"}
    with pytest.raises(spec.SpecError) as err:
        spec.parse({**d, key: value}, SOURCE)
    assert f"{SOURCE}: {expected}" in str(err.value)


def test_rounds_and_order_overrides_replace_each_other():
    raw = yaml.safe_dump({**VALID}).encode()
    assert spec.loads(raw, SOURCE, spec.parse_overrides(rounds=6)).rounds == 6
    rounds_yaml = yaml.safe_dump({k: v for k, v in VALID.items() if k != "order"} | {"rounds": 4}).encode()
    back = spec.loads(rounds_yaml, SOURCE, spec.parse_overrides(order="ABAB"))
    assert (back.order, back.rounds) == ("ABAB", None)
    with pytest.raises(spec.SpecError, match="--order and --rounds"):
        spec.parse_overrides(order="AB", rounds=3)


def test_rounds_auto_is_the_default_and_follows_a_budget():
    d = {k: copy.deepcopy(v) for k, v in VALID.items() if k != "order"}
    c = spec.parse(d, SOURCE)
    assert (c.budget_s, c.min_rounds, c.rounds) == (spec.DEFAULT_BUDGET_S, C.DEFAULT_FIRST_LOOK, C.DEFAULT_FIRST_LOOK)
    same = spec.parse({**d, "rounds": "auto", "budget_s": 30, "min_rounds": 6}, SOURCE).with_seed(5)
    assert (same.budget_s, same.min_rounds, same.rounds) == (30, 6, 6)
    longer = same.with_rounds(40)
    # only more rounds of the same shuffle: the first round (already run when the count is decided) stays
    assert longer.order.startswith(same.order[:2]) and longer.order.count("A") == 40
    assert longer.order == R.round_order(40, 5, 2, 6)  # VALID has stages: two stage rounds, in the first look
    # where a sequential campaign stops cannot move a run: each longer order begins with the shorter
    assert all(same.with_rounds(n + 1).order.startswith(same.with_rounds(n).order) for n in range(6, 40))
    fixed = spec.parse({**d, "rounds": 7}, SOURCE)
    assert (fixed.budget_s, fixed.min_rounds) == (None, None)
    with pytest.raises(ValueError):
        fixed.with_rounds(9)
    for bad, message in [({"rounds": 7, "budget_s": 30}, "budget_s: expected only with `rounds: auto`"),
                         ({"order": "ABBA", "min_rounds": 4}, "min_rounds: expected no min_rounds with an explicit"),
                         ({"budget_s": 0}, "budget_s: expected a number from 1"),
                         ({"min_rounds": 2}, "min_rounds: expected an integer from 3 to 100"),
                         ({"rounds": "soon"}, "rounds: expected an integer from 1 to 100, or auto")]:
        with pytest.raises(spec.SpecError, match=re.escape(message)):
            spec.parse({**d, **bad}, SOURCE)
    raw = yaml.safe_dump({**d, "rounds": 7}).encode()
    assert spec.loads(raw, SOURCE, spec.parse_overrides(rounds="auto")).budget_s == spec.DEFAULT_BUDGET_S
    auto_raw = yaml.safe_dump({**d, "budget_s": 20}).encode()
    assert spec.loads(auto_raw, SOURCE, spec.parse_overrides(rounds="9")).rounds == 9  # the budget goes with it
    with pytest.raises(spec.SpecError, match="--rounds 'ten': expected a count of rounds or auto"):
        spec.parse_overrides(rounds="ten")


def test_auto_rounds_rule():
    assert R.auto_rounds(60, 0.6, 20, 100) == 100
    assert R.auto_rounds(60, 1.0, 20, 100) == 60
    assert R.auto_rounds(60, 5.0, 20, 100) == 20
    assert R.auto_rounds(60, 0.0, 20, 100) == 100
    # rehash.py reads the same rules: one rule for the runner and both checkers
    assert rehash.R.auto_rounds(60, 1.7, 20, 100) == R.auto_rounds(60, 1.7, 20, 100) == 36


def test_defaults():
    d = {k: copy.deepcopy(VALID[k]) for k in ("name", "target", "base", "candidate", "workload")}
    c = spec.parse(d, SOURCE)
    assert (c.rounds, c.seed, c.slots, c.run_timeout_s, c.campaign_timeout_s, c.threshold) == (
        C.DEFAULT_FIRST_LOOK, None, 1, 600.0, 1200.0, 0.02)
    assert c.inputs == () and c.stages == {} and c.env == {} and c.golden is None and c.description == ""


CASES = [
    # path (slash-separated), new value, key path the message must name
    ("name", DELETE, "name: expected a value (required key is missing)"),
    ("target", DELETE, "target: expected a value"),
    ("base", DELETE, "base: expected a value"),
    ("candidate", DELETE, "candidate: expected a value"),
    ("workload", DELETE, "workload: expected a value"),
    ("bogus", 1, "bogus: expected one of the known keys"),
    ("name", "", "name: expected"),
    ("name", "has space", "name: expected a name"),
    ("name", "x" * 65, "name: expected a name"),
    ("name", "demo\n", "name: expected a name"),
    ("name", 7, "name: expected"),
    ("description", ["a"], "description: expected a string"),
    ("target", "repo", "target: expected a mapping"),
    ("target", {}, "target: expected exactly one of 'repo' or 'build'"),
    ("target/repo", "r", "target: expected exactly one of 'repo' or 'build'"),
    ("target/extra", 1, "target.extra: expected one of the known keys"),
    ("target/build", [], "target.build: expected a non-empty list"),
    ("target/build", "demo/tree", "target.build: expected a non-empty list"),
    ("target/build/0", "demo/tree", "target.build[0]: expected a mapping"),
    ("target/build/0/message", DELETE, "target.build[0].message: expected a value"),
    ("target/build/0/message", "", "target.build[0].message: expected a non-empty string"),
    ("target/build/0/patch", "p", "target.build[0]: expected exactly one of 'tree' or 'patch'"),
    ("target/build/0/tree", DELETE, "target.build[0]: expected exactly one of 'tree' or 'patch'"),
    ("target/build/0", {"patch": "p", "message": "m"}, "target.build[0]: expected a 'tree' as the first step"),
    ("target/build/1/patch", 3, "target.build[1].patch: expected a path"),
    ("target/build/1/patch", "a\0b", "target.build[1].patch: expected a path without NUL"),
    ("target/build/1/x", 1, "target.build[1].x: expected one of the known keys"),
    ("base", "HEAD", "base: expected a mapping"),
    ("base/rev", DELETE, "base.rev: expected a value"),
    ("base/rev", "", "base.rev: expected a git commit-ish"),
    ("base/rev", "-x", "base.rev: expected a git commit-ish"),
    ("base/rev", "HEAD ~1", "base.rev: expected a git commit-ish"),
    ("base/rev", "HEAD\n", "base.rev: expected a git commit-ish"),
    ("candidate/rev", 12345, "candidate.rev: expected a git commit-ish"),
    ("candidate/other", 1, "candidate.other: expected one of the known keys"),
    ("base/fence", ["a"], "base.fence: expected a mapping of path -> sha256"),
    ("base/fence", {"/etc/passwd": HEX}, "base.fence./etc/passwd: expected a relative path inside the tree"),
    ("base/fence", {"a/../../x": HEX}, "base.fence.a/../../x: expected a relative path"),
    ("base/fence", {"a.py": "abc"}, "base.fence.a.py: expected 64 lowercase hex digits"),
    ("base/fence", {"a.py": HEX.upper()}, "base.fence.a.py: expected 64 lowercase hex digits"),
    ("base/fence", {"a.py": HEX + "\n"}, "base.fence.a.py: expected 64 lowercase hex digits"),
    ("workload", "demo_workload:setup", "workload: expected a mapping"),
    ("workload/entry", DELETE, "workload.entry: expected a value"),
    ("workload/entry", "demo_workload", "workload.entry: expected 'module:function'"),
    ("workload/entry", "demo_workload:setup:x", "workload.entry: expected 'module:function'"),
    ("workload/entry", "mod.:setup", "workload.entry: expected 'module:function'"),
    ("workload/entry", "mod:Class.setup", "workload.entry: expected 'module:function'"),
    ("workload/entry", "mod:setup\n", "workload.entry: expected 'module:function'"),
    ("workload/prepare", "prep", "workload.prepare: expected 'module:function'"),
    ("workload/prepare", 3, "workload.prepare: expected 'module:function'"),
    ("workload/params", [1], "workload.params: expected a mapping"),
    ("workload/params", {"x": float("nan")}, "workload.params.x: expected a finite number"),
    ("workload/params", {"x": [1, float("inf")]}, "workload.params.x[1]: expected a finite number"),
    ("workload/params", {1: "a"}, "workload.params: expected string keys"),
    ("workload/params", {"when": __import__("datetime").date(2020, 1, 1)}, "workload.params.when: expected a JSON value"),
    ("workload/params", {"b": b"bytes"}, "workload.params.b: expected a JSON value"),
    ("workload/path", "", "workload.path: expected a path"),
    ("workload/other", 1, "workload.other: expected one of the known keys"),
    ("inputs", ["corpus"], "inputs: expected a mapping of input name"),
    ("inputs", {"bad-name": {"path": "p", "sha256": HEX}}, "inputs.bad-name: expected an input name"),
    ("inputs/corpus", "c.jsonl", "inputs.corpus: expected a mapping"),
    ("inputs/corpus/path", DELETE, "inputs.corpus.path: expected a value"),
    ("inputs/corpus/sha256", DELETE, "inputs.corpus.sha256: expected a value"),
    ("inputs/corpus/sha256", "nothex", "inputs.corpus.sha256: expected 64 lowercase hex digits"),
    ("inputs/corpus/path", None, "inputs.corpus.path: expected a path"),
    ("inputs/corpus/build", [], "inputs.corpus.build: expected a non-empty list of strings"),
    ("inputs/corpus/build", "make", "inputs.corpus.build: expected a non-empty list of strings"),
    ("inputs/corpus/build", ["make", 3], "inputs.corpus.build: expected a non-empty list of strings"),
    ("inputs/corpus/build", ["make", "a\0"], "inputs.corpus.build: expected a non-empty list of strings"),
    ("inputs/corpus/other", 1, "inputs.corpus.other: expected one of the known keys"),
    ("order", "", "order: expected a string of A and B"),
    ("order", "AAAA", "order: expected a string of A and B holding both letters"),
    ("order", "BBB", "order: expected a string of A and B holding both letters"),
    ("order", "ABCA", "order: expected a string of A and B"),
    ("order", "abba", "order: expected a string of A and B"),
    ("order", "ABBA\n", "order: expected a string of A and B"),
    ("order", ["A", "B"], "order: expected a string of A and B"),
    ("order", "AB" * (C.MAX_RUNS // 2 + 1), f"order: expected at most {C.MAX_RUNS} runs"),
    ("seed", 3, "seed: expected no seed with an explicit order"),
    ("slots", 0, "slots: expected an integer from 1 to 256"),
    ("slots", 257, "slots: expected an integer from 1 to 256"),
    ("slots", 2.0, "slots: expected an integer"),
    ("slots", True, "slots: expected an integer"),
    ("slots", "2", "slots: expected an integer"),
    ("slots", 10 ** 100, "slots: expected an integer"),
    ("timeouts", 5, "timeouts: expected a mapping"),
    ("timeouts/other", 1, "timeouts.other: expected one of the known keys"),
    ("timeouts/run_s", 0, "timeouts.run_s: expected a number from 1 to 604800"),
    ("timeouts/run_s", -5, "timeouts.run_s: expected a number"),
    ("timeouts/run_s", float("nan"), "timeouts.run_s: expected a number"),
    ("timeouts/run_s", float("inf"), "timeouts.run_s: expected a number"),
    ("timeouts/run_s", "60", "timeouts.run_s: expected a number"),
    ("timeouts/campaign_s", 10 ** 9, "timeouts.campaign_s: expected a number"),
    ("stages", ["a"], "stages: expected a mapping of stage name"),
    ("stages", {1: "m:f"}, "stages: expected string stage names"),
    ("stages/a", "demo.core", "stages.a: expected 'module:function' or 'module:Class.method'"),
    ("stages/a", "demo.core:", "stages.a: expected 'module:function'"),
    ("stages/a", "demo..core:f", "stages.a: expected 'module:function'"),
    ("stages/a", "demo.core:C..m", "stages.a: expected 'module:function'"),
    ("stages/a", "demo.core:f()", "stages.a: expected 'module:function'"),
    ("stages/a", 3, "stages.a: expected 'module:function'"),
    ("stages/b/optional", "yes", "stages.b.optional: expected true or false"),
    ("stages/b/path", DELETE, "stages.b.path: expected a value"),
    ("stages/b/other", 1, "stages.b.other: expected one of the known keys"),
    ("env", "A=1", "env: expected a mapping of variable -> string"),
    ("env", {"1A": "x"}, "env: expected environment variable names"),
    ("env", {"A B": "x"}, "env: expected environment variable names"),
    ("env", {"A": 1}, "env.A: expected a string"),
    ("env", {"A": "a\0b"}, "env.A: expected a string without NUL"),
    ("golden", "demo/golden.json", "golden: expected a mapping"),
    ("golden/path", 5, "golden.path: expected a path"),
    ("golden/path", "", "golden.path: expected a path"),
    ("golden/path", "a\0", "golden.path: expected a path without NUL"),
    ("golden/sha256", DELETE, "golden.sha256: expected a value"),
    ("golden/sha256", "abc", "golden.sha256: expected 64 lowercase hex digits"),
    ("notes", 5, "notes: expected a string"),
    ("verdict", 0.1, "verdict: expected a mapping"),
    ("verdict/threshold", 0.9, "verdict.threshold: expected at most 0.25 (the contract's widest band"),
    ("verdict/threshold", -0.1, "verdict.threshold: expected a number"),
    ("verdict/other", 1, "verdict.other: expected one of the known keys"),
    ("verdict/question", "gate", "verdict.question: expected one of claim, not_slower, not_faster"),
    ("verdict/margin", 0.05, "verdict.margin: expected only with a one-sided question"),
]


def test_a_one_sided_question_keeps_its_margin_apart_from_the_band():
    data = copy.deepcopy(VALID)
    data["verdict"] = {"threshold": 0.02, "question": "not_slower"}
    c = spec.parse(data, Path(SOURCE))
    assert (c.question, c.margin, c.threshold) == ("not_slower", C.DEFAULT_MARGIN, 0.02)
    data["verdict"]["margin"] = 0.9
    assert "verdict.margin: expected a number from 0.001 to 0.25" in error_of(data)
    assert spec.parse(copy.deepcopy(VALID), Path(SOURCE)).question == "claim"


@pytest.mark.parametrize("path, value, expected", CASES, ids=[f"{c[0]}={c[1]!r}"[:60] for c in CASES])
def test_validation(path, value, expected):
    assert f"{SOURCE}: {expected}" in error_of(mutated(path, value))


@pytest.mark.parametrize("data", [None, [], "name: x", 3])
def test_top_level_not_a_mapping(data):
    assert "(top level): expected a mapping" in error_of(data)


def test_non_string_top_level_key():
    d = copy.deepcopy(VALID)
    d[3] = "x"
    assert "expected string keys" in error_of(d)


def test_control_characters_in_keys_keep_the_message_on_one_line():
    d = copy.deepcopy(VALID)
    d["line\nbreak\r"] = 1
    assert "line\\nbreak\\r: expected one of the known keys" in error_of(d)


def test_self_referencing_params_are_refused():
    d = copy.deepcopy(VALID)
    loop = []
    loop.append(loop)
    d["workload"]["params"] = {"x": loop}
    assert "workload.params.x" in error_of(d)


# --- spec.load: the file itself ---------------------------------------------------------

def test_load_missing_file(tmp_path):
    with pytest.raises(spec.SpecError, match=r"nope\.yaml: cannot read campaign file"):
        spec.load(tmp_path / "nope.yaml")


def test_load_invalid_yaml_names_line(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("name: demo\ntarget: [unclosed\n")
    with pytest.raises(spec.SpecError, match=r"bad\.yaml: not valid YAML at line 3"):
        spec.load(p)


def test_load_empty_file(tmp_path):
    p = tmp_path / "empty.yaml"
    p.write_text("")
    with pytest.raises(spec.SpecError, match=r"empty\.yaml: \(top level\): expected a mapping, got None"):
        spec.load(p)


def test_load_keeps_raw_bytes_and_resolves_relative_paths(tmp_path):
    p = tmp_path / "c.yaml"
    raw = yaml.safe_dump(VALID).encode() + b"# comment kept\n"
    p.write_bytes(raw)
    c = spec.load(p)
    assert c.raw == raw and c.source == p.resolve()
    assert c.workload.path == tmp_path / "workloads"


def test_a_key_given_twice_is_an_error(tmp_path):
    path = tmp_path / "twice.yaml"
    path.write_text((CAMPAIGNS / "demo.yaml").read_text() + "\nrounds: 7\n")
    with pytest.raises(spec.SpecError, match=r"twice.yaml: not valid YAML at line \d+.*'rounds' appears twice"):
        spec.load(path)


def test_stage_calls_mode_is_validated_and_recorded(tmp_path):
    from harness.plan import spec

    def campaign(stage):
        return {"name": "x", "target": {"repo": str(tmp_path)}, "base": {"rev": "HEAD~1"},
                "candidate": {"rev": "HEAD"}, "workload": {"entry": "m:f"}, "stages": {"s": stage}}

    parsed = spec.parse(campaign({"path": "m:f", "calls": "per_variant"}), tmp_path / "c.yaml")
    assert parsed.stage_calls == {"s": "per_variant"}
    assert spec.parse(campaign("m:f"), tmp_path / "c.yaml").stage_calls == {}
    with pytest.raises(spec.SpecError, match=r"stages\.s\.calls: expected 'equal' or 'per_variant'"):
        spec.parse(campaign({"path": "m:f", "calls": "sometimes"}), tmp_path / "c.yaml")


# --- python: the workers' interpreter -----------------------------------------------------

def test_python_names_the_workers_interpreter_per_campaign_or_per_revision():
    assert (spec.parse(copy.deepcopy(VALID), SOURCE).base.python, spec.parse(copy.deepcopy(VALID), SOURCE)
            .candidate.python) == (None, None)  # the harness's own
    both = spec.parse({**copy.deepcopy(VALID), "python": "python3.9"}, SOURCE)
    assert (both.base.python, both.candidate.python) == ("python3.9", "python3.9")
    own = spec.parse({**copy.deepcopy(VALID), "python": "python3.9",
                      "candidate": {"rev": "HEAD", "python": "venvs/new/bin/python"}}, SOURCE)
    assert (own.base.python, own.candidate.python) == ("python3.9", "venvs/new/bin/python")
    only_base = spec.parse(mutated("base/python", "/opt/py312/bin/python"), SOURCE)
    assert (only_base.base.python, only_base.candidate.python) == ("/opt/py312/bin/python", None)
    # recorded in campaign.json as the YAML names it
    from harness import records

    doc = records.campaign(own, {"base": ("HEAD~1", "0" * 40), "candidate": ("HEAD", "1" * 40)},
                           lambda p: None if p is None else str(p))
    assert doc.python == {"base": "python3.9", "candidate": "venvs/new/bin/python"}


@pytest.mark.parametrize("path, value, expected", [
    ("python", "", "python: expected an interpreter: a path or a command such as python3.9"),
    ("python", 3.9, "python: expected an interpreter"),
    ("python", ["python3"], "python: expected an interpreter"),
    ("python", "py\nthon", "python: expected an interpreter"),
    ("python", "a\0b", "python: expected an interpreter"),
    ("python", "x" * 4097, "python: expected an interpreter"),
    ("base/python", "", "base.python: expected an interpreter"),
    ("candidate/python", 3, "candidate.python: expected an interpreter"),
])
def test_python_validation(path, value, expected):
    assert f"{SOURCE}: {expected}" in error_of(mutated(path, value))


# --- parity: {max_ulp: N} ------------------------------------------------------------------

def test_parity_max_ulp_declares_how_far_floats_may_move():
    assert spec.parse(copy.deepcopy(VALID), SOURCE).max_ulp is None  # bit for bit
    assert spec.parse({**copy.deepcopy(VALID), "parity": {}}, SOURCE).max_ulp is None
    assert spec.parse({**copy.deepcopy(VALID), "parity": None}, SOURCE).max_ulp is None
    assert spec.parse({**copy.deepcopy(VALID), "parity": {"max_ulp": 4}}, SOURCE).max_ulp == 4
    assert spec.parse({**copy.deepcopy(VALID), "parity": {"max_ulp": 0}}, SOURCE).max_ulp == 0
    assert spec.parse({**copy.deepcopy(VALID), "parity": {"max_ulp": 2 ** 26}}, SOURCE).max_ulp == 2 ** 26
    assert C.MAX_ULP == {"float16": 32, "bfloat16": 16, "float32": 4096, "float64": 2 ** 26}
    # every bound stays far below the 2**m ULP between 1.0 and 2.0: half the significand agrees
    assert all(C.MAX_ULP[name] ** 2 <= 2 * 2 ** bits for name, bits in C.SIGNIFICAND_BITS.items())


def test_a_max_ulp_that_spans_a_float_range_is_refused_in_one_line():
    """Issue 33.6: `parity: {max_ulp: 4294967296}` covers every float32 (and any constant):
    refused, naming the bound of each dtype."""
    message = error_of({**copy.deepcopy(VALID), "parity": {"max_ulp": 2 ** 32}})
    assert f"{SOURCE}: parity.max_ulp: expected at most 67108864 ULP (per dtype: float16 32, float32 4096, " \
           "float64 67108864; a wider tolerance lets more than the low half of a float's significand move and " \
           "would pass a candidate returning a constant), got 4294967296" in message
    assert "\n" not in message


@pytest.mark.parametrize("value, expected", [
    (4, "parity: expected a mapping"),
    ({"max_ulp": -1}, "parity.max_ulp: expected an integer from 0 to 6.71089e+07"),
    ({"max_ulp": 2 ** 26 + 1}, "parity.max_ulp: expected at most 67108864 ULP"),
    ({"max_ulp": 2 ** 52}, "parity.max_ulp: expected at most 67108864 ULP"),
    ({"max_ulp": 1.5}, "parity.max_ulp: expected an integer"),
    ({"max_ulp": True}, "parity.max_ulp: expected an integer"),
    ({"max_ulp": "4"}, "parity.max_ulp: expected an integer"),
    ({"tolerance": 1e-9}, "parity.tolerance: expected one of the known keys (max_ulp)"),
])
def test_parity_validation(value, expected):
    assert f"{SOURCE}: {expected}" in error_of({**copy.deepcopy(VALID), "parity": value})


# --- what YAML alone would accept ------------------------------------------------------------

def valid_yaml(**extra) -> bytes:
    return yaml.safe_dump({**copy.deepcopy(VALID), **extra}, sort_keys=False).encode()


def test_yaml_aliases_are_refused_in_one_line():
    raw = valid_yaml().replace(b"description: one line", b"description: &d one line\nnotes: *d")
    assert b"*d" in raw
    with pytest.raises(spec.SpecError) as info:
        spec.loads(raw, SOURCE)
    msg = str(info.value)
    assert "\n" not in msg and re.match(rf"{re.escape(str(SOURCE))}: not valid YAML at line 3, column \d+: "
                                        r"an alias \(\*name\): a campaign file has none", msg), msg


def test_an_alias_bomb_is_refused_before_it_expands():
    bomb = b"a: &a [x, x, x, x, x, x, x, x, x]\n" + b"".join(
        b"%c: &%c [*%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c]\n" % ((c, c) + (c - 1,) * 9) for c in range(98, 108))
    with pytest.raises(spec.SpecError, match=r"not valid YAML at line 2, column \d+: an alias"):
        spec.loads(bomb, SOURCE)


@pytest.mark.parametrize("text, digits", [
    ("12345678901234567890", 20), ("-12345678901234567890", 20), ("1_234_567_890_123_456_789_0", 20),
    ("9" * 5000, 5000), ("0x" + "f" * 20, 20),  # a prefix is no digit, and gives no room
])
def test_integers_beyond_19_digits_are_refused(text, digits):
    raw = valid_yaml().replace(b"slots: 2", f"slots: {text}".encode())
    with pytest.raises(spec.SpecError) as info:
        spec.loads(raw, SOURCE)
    assert re.search(rf": not valid YAML at line \d+, column \d+: an integer of {digits} digits "
                     rf"\(at most {C.MAX_INT_DIGITS}\)$", str(info.value)), str(info.value)


@pytest.mark.parametrize("text, value", [("1234567890123456789", 1234567890123456789),
                                         ("0x" + "f" * 16, 2 ** 64 - 1)])
def test_nineteen_digits_still_parse_and_meet_the_keys_own_range(text, value):
    raw = valid_yaml().replace(b"slots: 2", f"slots: {text}".encode())
    with pytest.raises(spec.SpecError, match=rf"slots: expected an integer from 1 to 256, got {value}$"):
        spec.loads(raw, SOURCE)


def test_a_param_of_more_than_19_digits_is_refused_on_the_command_line():
    with pytest.raises(spec.SpecError, match=r"--param 'n=123456789012345678901': the value is not a YAML scalar"):
        spec.parse_overrides(params=["n=123456789012345678901"])
    assert spec.parse_overrides(params=["n=1234567890123456789"])["params"] == {"n": 1234567890123456789}


# --- an all-digit revision ---------------------------------------------------------------------

@pytest.mark.parametrize("variant", ["base", "candidate"])
def test_an_all_digit_rev_gets_its_own_message(variant):
    raw = valid_yaml().replace(b"rev: HEAD~1" if variant == "base" else b"rev: HEAD\n",
                               b"rev: 1234567" if variant == "base" else b"rev: 1234567\n")
    with pytest.raises(spec.SpecError) as info:
        spec.loads(raw, SOURCE)
    assert str(info.value) == (f'{SOURCE}: {variant}.rev: expected a git commit-ish as a string: YAML reads an '
                               f'all-digit revision as a number (quote it: rev: "1234567"), got 1234567')
    quoted = raw.replace(b"rev: 1234567", b'rev: "1234567"')
    assert spec.loads(quoted, SOURCE).revision(variant).rev == "1234567"


# --- launch: how a run's process is made (issue 35 item 3) -------------------------------

def test_launch_is_fresh_unless_the_campaign_says_zygote():
    assert spec.parse(copy.deepcopy(VALID), SOURCE).launch == "fresh"
    assert spec.parse({**copy.deepcopy(VALID), "launch": "zygote"}, SOURCE).launch == "zygote"


@pytest.mark.parametrize("value", ["fork", True, 1, None, ["zygote"]])
def test_a_bad_launch_is_refused_in_one_line_naming_both_modes(value):
    msg = error_of({**copy.deepcopy(VALID), "launch": value})
    assert "\n" not in msg and "launch: expected fresh" in msg and "zygote" in msg and "preload" in msg, msg


def test_a_zygote_may_preload_the_libraries_both_variants_import():
    parsed = spec.parse({**copy.deepcopy(VALID), "launch": {"mode": "zygote", "preload": ["transformers", "torch.nn"]}},
                        SOURCE)
    assert parsed.launch == "zygote" and parsed.preload == ("transformers", "torch.nn")
    assert spec.parse({**copy.deepcopy(VALID), "launch": "zygote"}, SOURCE).preload == ()


@pytest.mark.parametrize("value, says", [
    ({"mode": "fresh", "preload": ["json"]}, "launch.mode: expected zygote"),
    ({"preload": ["json"]}, "launch.mode: expected a value"),
    ({"mode": "zygote", "preload": ["os; import x"]}, "launch.preload: expected dotted module names"),
    ({"mode": "zygote", "preload": "json"}, "launch.preload: expected a list"),
    ({"mode": "zygote", "preload": ["json", "json"]}, "distinct module names"),
    ({"mode": "zygote", "preload": [f"m{k}" for k in range(C.MAX_PRELOAD + 1)]}, f"at most {C.MAX_PRELOAD}"),
    ({"mode": "zygote", "threads": 1}, "launch.threads: expected one of the known keys"),
], ids=["fresh", "no-mode", "not-a-module", "not-a-list", "twice", "too-many", "unknown-key"])
def test_a_bad_preload_is_refused_in_one_line(value, says):
    msg = error_of({**copy.deepcopy(VALID), "launch": value})
    assert "\n" not in msg and says in msg, msg


def test_zygote_generations_count_each_variants_runs():
    labels = [label for label, _ in R.labels("ABBAabBAABBAABBABAab")]
    gen = R.generations(labels)
    a_runs = [label for label in labels if label[0] == "A"]
    assert [gen[label] for label in a_runs] == [k // C.ZYGOTE_RUNS + 1 for k in range(len(a_runs))]
    assert R.zygote_label("base", 2) == "ZA2" and C.ZYGOTE_LABEL_RE.match("ZB13")
