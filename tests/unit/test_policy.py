"""Issue 45, attack 6 (2): a reviewer judges any bundle by rules of their own. A pull request's
campaign file chose its own band (0.5 read a 34-42% slower candidate "equal"); the contract now
bounds it, and `harness compare|verify|summary --policy FILE` re-judges a bundle at the
reviewer's band from the bundle's own interval (no interval depends on the band), says so
("judged by your policy FILE"), and gives the exit code of that judgement: 14 where the bundle
breaks a rule of the policy. The policy file is strict: one line for anything it cannot use."""
from __future__ import annotations

import json
import re
import os

import pytest

from checks_support import full_bundle
from fakes import Model, run_fake
from harness import cli, outcomes
from harness.bundle import read
from harness.comparison import analysis
from harness.judge import policy


@pytest.fixture(scope="module")
def slower(tmp_path_factory):
    """A candidate 1.15x slower under the widest band the contract allows, read "equal" by it."""
    where = tmp_path_factory.mktemp("slower")
    outcome, _ = run_fake(where, Model(ratio=1.15, noise=0.005), rounds=6, verdict={"threshold": 0.2})
    assert outcome.comparison.stats.verdict == "equal"
    return outcome.out


def write(where, text: str, name: str = "policy.yaml"):
    path = where / name
    path.write_text(text)
    return path


def lines(capsys) -> list[str]:
    return capsys.readouterr().out.splitlines()


def test_compare_re_judges_at_the_reviewers_band(slower, tmp_path, capsys):
    assert cli.main(["compare", str(slower)]) == outcomes.OK
    capsys.readouterr()
    rules = write(tmp_path, "max_threshold: 0.05\n")
    assert cli.main(["compare", str(slower), "--policy", str(rules)]) == outcomes.REGRESSED
    out = lines(capsys)
    # the fake's walls are its model's ratio times the machine's own pace: 1.15x, give or take a busy host
    assert re.match(re.escape(f"verdict: regressed, judged by your policy {rules} (exit 5): ") + r"1\.1\dx slower \[",
                    out[0]), out[0]
    assert "band +-5.0%" in out[0]
    assert out[1] == (f"judged by your policy {rules}: band +-5.0% (at most your +-5%; the campaign's +-20.0%); "
                      "verdict regressed (the campaign's own: equal)")
    assert out[2].startswith("the campaign's own: verdict: equal (exit 0)")


def test_a_policy_in_json_and_a_fixed_threshold(slower, tmp_path, capsys):
    rules = write(tmp_path, json.dumps({"threshold": 0.2, "min_rounds": 5}), "policy.json")
    assert cli.main(["compare", str(slower), "--policy", str(rules)]) == outcomes.OK
    assert "the bundle's own band and rounds hold" in lines(capsys)[1]


def test_re_judging_gives_what_the_campaign_would_have_decided_at_that_band(tmp_path):
    """The same rule as analysis: for a fixed count (its interval does not depend on the band),
    load raising the claim band included, the re-judged verdict is the one a campaign with that
    threshold derives from the same runs."""
    outcome, _ = run_fake(tmp_path, Model(ratio=1.06, noise=0.05, stall=0.2), rounds=8)
    bundle = read.load(outcome.out)
    stats = bundle.comparison.stats
    assert stats.load.overloaded and stats.rounds.typical_deviation > 0.01  # a claim band above the narrow bands
    seen = set()
    for band in (0.0, 0.01, 0.03, 0.05, 0.08, 0.12, 0.2, 0.25):
        want = analysis.analyze(bundle.runs, band)
        verdict, _reason, claim = policy.rejudged(stats, band)
        assert (verdict, claim) == (want["verdict"], want["claim_band"]), band
        seen.add(verdict)
    assert len(seen) >= 2


def test_min_rounds_metrics_and_sandbox(slower, tmp_path, capsys):
    rules = write(tmp_path, "min_rounds: 20\n")
    assert cli.main(["compare", str(slower), "--policy", str(rules)]) == outcomes.INCONCLUSIVE
    assert "6 round(s), fewer than your 20" in lines(capsys)[1]
    rules = write(tmp_path, "metrics: [wall, instructions]\n")
    assert cli.main(["compare", str(slower), "--policy", str(rules)]) == outcomes.REFUSED == 14
    out = lines(capsys)
    assert out[0] == (f"verdict: refused by your policy {rules} (exit 14): it measured no instructions (the policy "
                      "requires metrics: wall, instructions)")
    rules = write(tmp_path, "sandbox: required\n")
    assert cli.main(["compare", str(slower), "--policy", str(rules)]) == outcomes.REFUSED
    assert "12 run(s) recorded no sandbox (" in (line := lines(capsys)[0]) and "...; the policy requires one" in line


def test_a_noise_floor_the_reviewer_does_not_accept(tmp_path, capsys):
    """A floor of 15% (its own interval's) widens the band: a 1.1x slower candidate reads equal;
    without the floor, at the campaign's own 2%, it is regressed."""
    from checks_support import sha256
    from harness import records

    first, _ = run_fake(tmp_path / "first", Model(), rounds=5)
    b = read.load(first.out)
    floor = tmp_path / "floor.json"
    floor.write_text(json.dumps(records.to_json(records.noise_floor(
        campaign="model", bundle_digest=b.digest, machine=b.machine, started_at=b.runner.started_at, rounds=8,
        ratio=1.0, ci95=[0.85, 1.15], floor=0.15))))
    outcome, _ = run_fake(tmp_path / "floored", Model(ratio=1.1, noise=0.005), rounds=6,
                          noise_floor={"path": str(floor), "sha256": sha256(floor)})
    assert outcome.comparison.stats.verdict == "equal" and outcome.comparison.stats.band == 0.15
    rules = write(tmp_path, "noise_floor: false\n")
    assert cli.main(["compare", str(outcome.out), "--policy", str(rules)]) == outcomes.REGRESSED
    assert "its noise floor not accepted; the campaign's +-15.0%" in lines(capsys)[1]


def test_disturbed_runs_refused_when_the_policy_says_so(tmp_path, capsys):
    outcome, _ = run_fake(tmp_path, Model(ratio=0.5, item_s=0.5, disturb={"B2": (20, 1.0)}), rounds=6)
    assert outcome.comparison.stats.interference.disturbed == ["B2"]
    rules = write(tmp_path, "disturbed: false\n")
    assert cli.main(["compare", str(outcome.out), "--policy", str(rules)]) == outcomes.REFUSED
    assert "disturbed runs B2 (the policy accepts none: disturbed: false)" in lines(capsys)[0]


def test_verify_and_summary_say_the_judgement(slower, tmp_path, capsys):
    rules = write(tmp_path, "max_threshold: 0.05\n")
    assert cli.main(["verify", str(slower), "--policy", str(rules)]) == outcomes.OK  # verify gates on evidence
    out = lines(capsys)
    assert out[0].startswith("OK ") and any(x.startswith(f"judged by your policy {rules}: band +-5.0%") for x in out)
    assert any(x.startswith(f"verdict: regressed, judged by your policy {rules} (exit 5)") for x in out)
    strict = write(tmp_path, "metrics: [instructions]\n", "strict.yaml")
    assert cli.main(["verify", str(slower), "--policy", str(strict)]) == outcomes.REFUSED
    assert f"FAIL policy {strict}: it measured no instructions" in capsys.readouterr().out
    assert cli.main(["summary", str(slower), "--policy", str(rules)]) == outcomes.OK
    page = capsys.readouterr().out
    assert "**Regressed by your policy**" in page and "(`harness compare --policy` exit 5)" in page
    assert re.search(r"\*\*Equal: [^*]+\*\* \(`harness compare` exit 0\)", page)  # the campaign's own claim follows
    assert cli.main(["summary", str(slower), "--policy", str(rules), "--format", "json"]) == outcomes.OK
    doc = json.loads(capsys.readouterr().out)
    assert doc["policy"]["verdict"] == "regressed" and doc["policy"]["exit_code"] == 5
    assert doc["claim"]["verdict"] == "equal"  # the claim a signature signs stays the bundle's
    assert cli.main(["summary", str(slower), "--policy", str(rules), "--format", "text"]) == outcomes.OK
    assert capsys.readouterr().out.startswith("verdict: regressed, judged by your policy")
    assert cli.main(["summary", str(slower), "--policy", str(rules), "--format", "benchmark-action"]) == 2


@pytest.mark.parametrize("text, says", [
    ("max_threshold: 0.5\n", "max_threshold: expected a band from 0 to 0.25 (0.02 is +-2%), got 0.5"),
    ("threshold: yes\n", "threshold: expected a band from 0 to 0.25"),
    ("band: 0.02\n", "band: expected one of the policy's keys (max_threshold, threshold"),
    ("min_rounds: 0\n", "min_rounds: expected a count of rounds from 1 to 100, got 0"),
    ("metrics: [wall, speed]\n", "metrics: expected a list of metrics (wall, cpu, memory, instructions)"),
    ("noise_floor: 0\n", "noise_floor: expected true or false, got 0"),
    ("sandbox: maybe\n", "sandbox: expected required or optional, got 'maybe'"),
    ("max_threshold: 0.05\nmax_threshold: 0.2\n", "key 'max_threshold' appears twice"),
    ("a: &x 1\nb: *x\n", "an alias"),
    ("- 0.05\n", "(top level): expected a mapping of the policy's keys"),
    ("{max_threshold: 0.05", "not valid YAML"),
])
def test_a_policy_it_cannot_use_is_one_line_and_exit_2(slower, tmp_path, capsys, text, says):
    rules = write(tmp_path, text)
    for command in ("compare", "verify", "summary"):
        assert cli.main([command, str(slower), "--policy", str(rules)]) == outcomes.UNUSABLE
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"harness {command}: error: --policy {rules}") and says in err, err
        assert "\n" not in err


def test_a_policy_file_is_read_bounded_and_never_through_a_link(slower, tmp_path, capsys):
    big = write(tmp_path, "#" * (policy.MAX_BYTES + 1))
    assert cli.main(["compare", str(slower), "--policy", str(big)]) == outcomes.UNUSABLE
    assert "a policy is a regular file of at most 65536 bytes" in capsys.readouterr().err
    link = tmp_path / "link.yaml"
    os.symlink(write(tmp_path, "max_threshold: 0.05\n", "real.yaml"), link)
    assert cli.main(["compare", str(slower), "--policy", str(link)]) == outcomes.UNUSABLE
    assert cli.main(["compare", str(slower), "--policy", str(tmp_path)]) == outcomes.UNUSABLE
    capsys.readouterr()
