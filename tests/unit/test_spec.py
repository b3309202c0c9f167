"""Campaign validation: one table row per check in harness/spec.py (in-process), a few of
them through `harness run` (exit 2, one line naming file and key, no traceback, no bundle),
and the errors only a run can find (missing commit, input hash, fence, missing input
folder, missing golden, not a repository), which must behave the same."""
from __future__ import annotations

import copy
import re
import hashlib
from pathlib import Path

import pytest
import yaml

from conftest import CAMPAIGNS, cache_env, harness, no_traceback
from harness import contract as C
from harness import records, rehash
from harness.plan import spec

DELETE = object()
SOURCE = Path("/campaigns/x.yaml")
HEX = "ab" * 32

VALID = {
    "name": "demo",
    "description": "one line",
    "target": {"build": [{"tree": "demo/tree", "message": "base"},
                         {"patch": "demo/candidate.patch", "message": "cand"}]},
    "base": {"rev": "HEAD~1", "fence": {"demo/core.py": HEX}},
    "candidate": {"rev": "HEAD"},
    "workload": {"entry": "demo_workload:setup", "path": "workloads", "params": {"n": 1, "l": [1, "a"]}},
    "inputs": {"corpus": {"path": "c.jsonl", "sha256": HEX, "build": ["{python}", "make.py", "{path}"]}},
    "order": "ABBA",
    "slots": 2,
    "timeouts": {"run_s": 60, "campaign_s": 300},
    "stages": {"a": "demo.core:f", "b": {"path": "demo.core:C.m", "optional": True}},
    "env": {"OMP_NUM_THREADS": "1"},
    "golden": {"path": "demo/golden.json", "sha256": HEX},
    "verdict": {"threshold": 0.05},
}


def mutated(path: str, value):
    d = copy.deepcopy(VALID)
    keys = path.split("/")
    node = d
    for k in keys[:-1]:
        node = node[int(k)] if isinstance(node, list) else node[k]
    last = int(keys[-1]) if isinstance(node, list) else keys[-1]
    if value is DELETE:
        del node[last]
    else:
        node[last] = value
    return d


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
    assert fixed.seed == 7 and fixed.order == C.round_order(12, 7) == c.with_seed(7).order
    assert all(fixed.order[i:i + 2] in ("AB", "BA") for i in range(0, 24, 2))
    assert len({c.with_seed(s).order for s in range(20)}) > 1  # the seed decides
    assert c.with_seed().seed is not None  # drawn when the YAML gives none
    pinned = spec.parse({**d, "rounds": 12, "seed": 3}, SOURCE)
    assert pinned.order == C.round_order(12, 3) and pinned.with_seed(99).seed == 3
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
    assert (c.budget_s, c.min_rounds, c.rounds) == (spec.DEFAULT_BUDGET_S, spec.DEFAULT_ROUNDS, spec.DEFAULT_ROUNDS)
    same = spec.parse({**d, "rounds": "auto", "budget_s": 30, "min_rounds": 6}, SOURCE).with_seed(5)
    assert (same.budget_s, same.min_rounds, same.rounds) == (30, 6, 6)
    longer = same.with_rounds(40)
    # only more rounds of the same shuffle: the first round (already run when the count is decided) stays
    assert longer.order.startswith(same.order[:2]) and longer.order.count("A") == 40
    assert longer.order == C.round_order(40, 5, 2)  # VALID has stages: two stage rounds
    fixed = spec.parse({**d, "rounds": 7}, SOURCE)
    assert (fixed.budget_s, fixed.min_rounds) == (None, None)
    with pytest.raises(ValueError):
        fixed.with_rounds(9)
    for bad, message in [({"rounds": 7, "budget_s": 30}, "budget_s: expected only with `rounds: auto`"),
                         ({"order": "ABBA", "min_rounds": 4}, "min_rounds: expected no min_rounds with an explicit"),
                         ({"budget_s": 0}, "budget_s: expected a number from 1"),
                         ({"min_rounds": 1}, "min_rounds: expected an integer from 2 to 100"),
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
    assert C.auto_rounds(60, 0.6, 20, 100) == 100
    assert C.auto_rounds(60, 1.0, 20, 100) == 60
    assert C.auto_rounds(60, 5.0, 20, 100) == 20
    assert C.auto_rounds(60, 0.0, 20, 100) == 100
    assert rehash.auto_rounds(60, 1.7, 20, 100) == C.auto_rounds(60, 1.7, 20, 100) == 36


def test_defaults():
    d = {k: copy.deepcopy(VALID[k]) for k in ("name", "target", "base", "candidate", "workload")}
    c = spec.parse(d, SOURCE)
    assert (c.rounds, c.seed, c.slots, c.run_timeout_s, c.campaign_timeout_s, c.threshold) == (
        spec.DEFAULT_ROUNDS, None, 1, 600.0, 1200.0, 0.02)
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
    ("order", "AB" * 101, "order: expected at most 200 runs"),
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
    ("verdict/threshold", 0.9, "verdict.threshold: expected a number from 0 to 0.5"),
    ("verdict/threshold", -0.1, "verdict.threshold: expected a number"),
    ("verdict/other", 1, "verdict.other: expected one of the known keys"),
]


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


# --- through the CLI: exit 2, one line, no traceback, nothing written -------------------

def assert_refused(result, out: Path, *needles: str) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    assert no_traceback(result), result.stderr
    lines = result.stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith("harness run: error:")]
    assert len(errors) == 1, result.stderr
    for needle in needles:
        assert needle in errors[0], errors[0]
    assert not out.exists()
    leftovers = [p.name for p in out.parent.iterdir() if p.name.startswith((out.name, f".{out.name}"))]
    assert leftovers == [], leftovers


@pytest.mark.parametrize("path, value, key", [
    ("order", "AAAA", "order"),
    ("slots", "four", "slots"),
    ("stages/a", "demo.core", "stages.a"),
    ("workload/params", {"when": __import__("datetime").date(2020, 1, 1)}, "workload.params.when"),
])
def test_cli_refuses_invalid_campaign(tmp_path, path, value, key):
    campaign = tmp_path / "bad.yaml"
    campaign.write_text(yaml.safe_dump(mutated(path, value)))
    out = tmp_path / "out" / "bundle"
    out.parent.mkdir()
    result = harness("run", campaign, "--out", out)
    assert_refused(result, out, str(campaign), f": {key}: expected")


def test_cli_refuses_invalid_yaml(tmp_path):
    campaign = tmp_path / "broken.yaml"
    campaign.write_text("name: [\n")
    out = tmp_path / "bundle"
    assert_refused(harness("run", campaign, "--out", out), out, str(campaign), "not valid YAML")


# --- errors only a run can find --------------------------------------------------------

def demo_campaign(tmp_path: Path, **changes) -> Path:
    """campaigns/demo.yaml with absolute paths, written under tmp_path, with changes applied."""
    d = yaml.safe_load((CAMPAIGNS / "demo.yaml").read_text())
    for step in d["target"]["build"]:
        for kind in ("tree", "patch"):
            if kind in step:
                step[kind] = str(CAMPAIGNS / step[kind])
    d["workload"]["path"] = str(CAMPAIGNS / d["workload"]["path"])
    d.pop("golden", None)
    for key, value in changes.items():
        if value is DELETE:
            d.pop(key, None)
        else:
            d[key] = value
    path = tmp_path / "campaign.yaml"
    path.write_text(yaml.safe_dump(d))
    return path


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


def run_refused(tmp_path, cache, campaign, *needles):
    out = tmp_path / "out" / "bundle"
    out.parent.mkdir()
    result = harness("run", campaign, "--out", out, env=cache_env(cache), timeout=120)
    assert_refused(result, out, str(campaign), *needles)
    return result


def test_commit_that_does_not_exist(tmp_path, cache):
    campaign = demo_campaign(tmp_path, base={"rev": "0123456789abcdef0123456789abcdef01234567"})
    run_refused(tmp_path, cache, campaign, "base.rev: commit '0123456789abcdef0123456789abcdef01234567' does not exist")


def test_source_fence_mismatch(tmp_path, cache):
    d = yaml.safe_load((CAMPAIGNS / "demo.yaml").read_text())
    campaign = demo_campaign(tmp_path, candidate={"rev": d["candidate"]["rev"], "fence": {"demo/core.py": HEX}})
    run_refused(tmp_path, cache, campaign, "candidate.fence.demo/core.py: source fence mismatch")


def test_source_fence_file_missing(tmp_path, cache):
    d = yaml.safe_load((CAMPAIGNS / "demo.yaml").read_text())
    campaign = demo_campaign(tmp_path, base={"rev": d["base"]["rev"], "fence": {"demo/gone.py": HEX}})
    run_refused(tmp_path, cache, campaign, "base.fence.demo/gone.py: file not found")


def test_input_hash_mismatch(tmp_path, cache):
    data = tmp_path / "corpus.jsonl"
    data.write_bytes(b'{"x": 1}\n')
    wrong = hashlib.sha256(b"something else").hexdigest()
    campaign = demo_campaign(tmp_path, inputs={"corpus": {"path": str(data), "sha256": wrong}})
    run_refused(tmp_path, cache, campaign, "inputs.corpus.sha256:", str(data))


def test_missing_input_folder(tmp_path, cache):
    missing = tmp_path / "tokenizer"
    campaign = demo_campaign(tmp_path, inputs={"tokenizer": {"path": str(missing), "sha256": HEX}})
    run_refused(tmp_path, cache, campaign, "inputs.tokenizer.path:", f"'{missing}' does not exist")


def test_missing_golden_file(tmp_path, cache):
    campaign = demo_campaign(tmp_path, golden={"path": "nowhere/golden.json", "sha256": HEX})
    run_refused(tmp_path, cache, campaign, "golden.path: cannot read", "nowhere/golden.json")


def test_golden_file_that_is_not_the_pinned_one(tmp_path, cache):
    golden = tmp_path / "golden.json"
    golden.write_text('{"items": {}}\n')
    campaign = demo_campaign(tmp_path, golden={"path": str(golden), "sha256": HEX})
    run_refused(tmp_path, cache, campaign, "golden.sha256:", "pinned")


def test_a_key_given_twice_is_an_error(tmp_path):
    path = tmp_path / "twice.yaml"
    path.write_text((CAMPAIGNS / "demo.yaml").read_text() + "\nrounds: 7\n")
    with pytest.raises(spec.SpecError, match=r"twice.yaml: not valid YAML at line \d+.*'rounds' appears twice"):
        spec.load(path)


def test_target_repo_that_is_not_a_repository(tmp_path, cache):
    plain = tmp_path / "plain"
    plain.mkdir()
    campaign = demo_campaign(tmp_path, target={"repo": str(plain)})
    run_refused(tmp_path, cache, campaign, "target.repo: expected a git repository")


def test_missing_build_tree(tmp_path, cache):
    campaign = demo_campaign(tmp_path, target={"build": [{"tree": str(tmp_path / "gone"), "message": "m"}]})
    run_refused(tmp_path, cache, campaign, "target.build: tree", "does not exist")


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
