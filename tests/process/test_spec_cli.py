"""Campaign validation through the command line (exit 2, one line naming the file and the key,
no traceback, no bundle), the errors only a run can find (missing commit, input hash, fence,
missing input folder, missing golden, not a repository), which must behave the same, and a
handful of fuzzed campaigns through `harness run`. The in-process checks of the same validation:
tests/unit/test_spec.py and tests/unit/test_spec_fuzz.py."""
from __future__ import annotations

import copy
import hashlib
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from conftest import CAMPAIGNS, cache_env, harness, no_traceback
from harness.plan import spec
from spec_support import DELETE, HEX, PATHS, SOURCE, VALID, get, mutated, values


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


def test_target_repo_that_is_not_a_repository(tmp_path, cache):
    plain = tmp_path / "plain"
    plain.mkdir()
    campaign = demo_campaign(tmp_path, target={"repo": str(plain)})
    run_refused(tmp_path, cache, campaign, "target.repo: expected a git repository")


def test_missing_build_tree(tmp_path, cache):
    campaign = demo_campaign(tmp_path, target={"build": [{"tree": str(tmp_path / "gone"), "message": "m"}]})
    run_refused(tmp_path, cache, campaign, "target.build: tree", "does not exist")


# --- a handful through the real CLI ---------------------------------------------------

@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from(PATHS), value=values)
def test_cli_exit_2_no_traceback_no_bundle(path, value):
    data = copy.deepcopy(VALID)
    get(data, path[:-1])[path[-1]] = value
    try:
        spec.parse(data, SOURCE)
    except spec.SpecError:
        pass
    else:
        assume(False)  # only campaigns the validator refuses
    with tempfile.TemporaryDirectory() as tmp:
        campaign = Path(tmp) / "fuzz.yaml"
        campaign.write_text(yaml.safe_dump(data))
        out = Path(tmp) / "out"
        result = subprocess.run([sys.executable, "-m", "harness", "run", str(campaign), "--out", str(out)],
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 2, result.stderr
        assert "Traceback" not in result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"harness run: error: {campaign}: "), lines
        assert sorted(p.name for p in Path(tmp).iterdir()) == ["fuzz.yaml"]
