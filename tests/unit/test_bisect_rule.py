"""`harness bisect`'s search rule (rules.bisect_search) on synthetic step verdicts, the
consistent histories and the ones no single culprit explains; then a whole bisect folder made
on the fake launcher, re-verified by both checkers, and every edit of its receipt refused by both."""
from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil

import pytest

from bisect_support import fake_bisect
from harness import contract as C, outcomes, records, rehash
from harness import rules as R

GOOD = "0" * 40


def shas(n: int) -> list[str]:
    return [f"{i + 1:040x}" for i in range(n)]


def drive(commits, judge, find="either", threshold=0.1, band=0.1):
    """Play the rule to its end; judge(base, candidate, band) -> verdict, or (verdict, ratio,
    interval), band the one the rule asks that step to be judged against. Returns (result, steps)."""
    steps = []
    for _ in range(C.MAX_BISECT_STEPS + 1):
        result = R.bisect_search(GOOD, commits, steps, find, threshold, band)
        if result["next"] is None:
            assert result["used"] == len(steps)
            return result, steps
        base, candidate, step_band = result["next"]
        got = judge(base, candidate, step_band)
        verdict, ratio, interval = got if isinstance(got, tuple) else (got, None, None)
        steps.append({"base": base, "candidate": candidate, "band": step_band, "verdict": verdict, "ratio": ratio,
                      "interval": interval})
    raise AssertionError("the rule never ended")


def monotone(commits, speeds, unclear=()):
    """A judge from each commit's speed (good: 1.0): the ratio against the band the rule asks for,
    exact; a pair in `unclear` reads inconclusive."""
    speed = {GOOD: 1.0, **dict(zip(commits, speeds))}

    def judge(base, candidate, band):
        ratio = speed[candidate] / speed[base]
        if (base, candidate) in unclear:
            return "inconclusive", ratio, [ratio * 0.8, ratio * 1.2]
        verdict = "regressed" if ratio > 1 + band else "improved" if ratio < 1 - band else "equal"
        return verdict, ratio, [ratio * 0.98, ratio * 1.02]

    return judge


@pytest.mark.parametrize("n", [1, 2, 3, 15, 100])
def test_a_single_culprit_is_named_wherever_it_is(n):
    commits = shas(n)
    for at in range(n):
        result, steps = drive(commits, monotone(commits, [1.0] * at + [2.0] * (n - at)))
        assert result["ending"] == "culprit" and result["culprit"] == commits[at], (n, at, result)
        assert len(steps) <= 2 + math.ceil(math.log2(n)) if n > 1 else len(steps) == 1
        assert steps[0]["base"] == GOOD and steps[0]["candidate"] == commits[-1]  # first: is bad slower at all
        # every probe against good; the last step the culprit against its own parent (unless that is good)
        assert all(s["base"] == GOOD for s in steps[:-1])
        assert steps[-1]["candidate"] == commits[at]
        assert steps[-1]["base"] == (commits[at - 1] if at else GOOD)


def test_a_slow_down_spread_over_several_commits_cannot_be_told():
    """Four commits of 1.2x each, every one inside a 30% band, the total (2.07x) far outside:
    good -> bad regressed, the first commit beyond the band (1.44x against good) is equal against
    its own parent, so no single commit makes it."""
    commits = shas(8)
    speeds = [1.0, 1.0, 1.2, 1.44, 1.728, 2.0736, 2.0736, 2.0736]
    result, steps = drive(commits, monotone(commits, speeds), threshold=0.3, band=0.3)
    assert result["ending"] == "spread" and result["culprit"] is None
    assert result["reason"].startswith("cannot tell: the slow-down is spread over several commits")
    assert steps[0]["verdict"] == "regressed"
    assert not any(s["verdict"] == "regressed" and s["base"] != GOOD for s in steps)  # no adjacent step regressed
    assert (steps[-1]["base"], steps[-1]["candidate"]) == (commits[2], commits[3])


def test_a_culprit_that_makes_only_part_of_the_slow_down_says_so():
    commits = shas(6)
    result, _ = drive(commits, monotone(commits, [1.0, 1.0, 1.5, 1.5, 3.0, 3.0]))
    assert result["ending"] == "culprit" and result["culprit"] == commits[2]
    assert "only part of bad's slow-down" in result["reason"]


@pytest.mark.parametrize("verdict, ending", [("equal", "nothing to find"), ("improved", "nothing to find"),
                                             ("inconclusive", "inconclusive"), ("failed", "failed"),
                                             ("outputs differ", "outputs differ")])
def test_the_first_step_decides_whether_there_is_anything_to_find(verdict, ending):
    commits = shas(7)
    result, steps = drive(commits, lambda base, candidate, band: verdict, find="slower")
    assert len(steps) == 1 and result["ending"] == ending and result["culprit"] is None
    assert result["reason"].startswith("bad is" if ending == "nothing to find" else "cannot tell")


@pytest.mark.parametrize("verdict, ending", [("improved", "not monotone"), ("inconclusive", "inconclusive"),
                                             ("failed", "failed"), ("outputs differ", "outputs differ")])
def test_a_probe_that_moves_neither_bound_ends_the_search(verdict, ending):
    commits = shas(7)
    judge = monotone(commits, [1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0])

    def odd(base, candidate, band):
        return verdict if candidate == commits[3] and base == GOOD else judge(base, candidate, band)

    result, steps = drive(commits, odd)
    assert result["ending"] == ending and result["culprit"] is None
    assert steps[-1]["candidate"] == commits[3] and "cannot tell" in result["reason"]


@pytest.mark.parametrize("verdict, ending", [("equal", "spread"), ("inconclusive", "inconclusive"),
                                             ("improved", "not monotone")])
def test_the_culprit_against_its_own_parent(verdict, ending):
    commits = shas(7)
    judge = monotone(commits, [1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0])

    def adjacent(base, candidate, band):
        return verdict if base != GOOD else judge(base, candidate, band)

    result, steps = drive(commits, adjacent)
    assert result["ending"] == ending and result["culprit"] is None
    assert (steps[-1]["base"], steps[-1]["candidate"]) == (commits[2], commits[3])


@pytest.mark.parametrize("n", [1, 2, 15, 16])
@pytest.mark.parametrize("band", [0.1, None])
def test_a_single_speed_up_is_found_from_the_ends_own_verdict(n, band):
    """Bad improved against good: the search looks for the speed-up by itself (issue 46: over 14
    commits holding a speed-up, bisect said "not regressed" and nothing more)."""
    commits = shas(n)
    for at in range(n):
        result, steps = drive(commits, monotone(commits, [1.0] * at + [0.5] * (n - at)), band=band)
        assert result["ending"] == "culprit" and result["culprit"] == commits[at], (n, at, result)
        assert result["direction"] == "faster" and "is the first commit faster than good" in result["reason"]
        assert steps[0]["verdict"] == "improved" and len(steps) <= 2 + math.ceil(math.log2(n))


def test_the_probes_band_is_half_the_ends_change_unless_one_is_given():
    """A 2x slow-down: good against bad at the campaign's threshold, every later step at
    sqrt(2) - 1 = 41.4%, capped at the contract's widest band, 25% (a probe nearer good reads equal,
    one nearer bad regressed); a 2x speed-up: 1 - sqrt(0.5) = 29.2%, capped at 25% too; a 1.2x one:
    sqrt(1.2) - 1 = 9.5%; never below the threshold (1.3x: 14% < 20%)."""
    commits = shas(15)
    for speed, threshold, want in ((2.0, 0.1, C.MAX_BAND), (0.5, 0.1, C.MAX_BAND), (1.2, 0.05, 0.0954), (1.3, 0.2, 0.2)):
        result, steps = drive(commits, monotone(commits, [1.0] * 7 + [speed] * 8), threshold=threshold, band=None)
        assert result["culprit"] == commits[7]
        assert steps[0]["band"] == threshold and {s["band"] for s in steps[1:]} == {want}, (speed, steps)
        assert R.bisect_band(speed, threshold) == want
    result, steps = drive(commits, monotone(commits, [1.0] * 7 + [2.0] * 8), band=0.25)
    assert {s["band"] for s in steps} == {0.25}


def test_the_dominant_commit_of_a_change_in_two_parts_is_named_with_the_probes_band():
    """1.1x then 1.45x more (1.6x in all): against half the total change (26.5%, capped at the
    contract's 25%) the 1.1x commit reads equal and the 1.45x one is the culprit, which makes only
    part of it."""
    commits = shas(6)
    result, _ = drive(commits, monotone(commits, [1.0, 1.0, 1.1, 1.1, 1.6, 1.6]), band=None)
    assert result["ending"] == "culprit" and result["culprit"] == commits[4]
    assert "only part of bad's slow-down" in result["reason"]


@pytest.mark.parametrize("find, speed, says", [
    ("slower", 0.5, "bad is faster than good: no slow-down to find (leave --find out, or give --find faster"),
    ("faster", 2.0, "bad is slower than good: no speed-up to find (leave --find out, or give --find slower"),
    ("either", 1.0, "bad is as fast as good within the band: no change to find"),
])
def test_nothing_to_find_says_what_it_found_instead(find, speed, says):
    commits = shas(8)
    result, steps = drive(commits, monotone(commits, [speed] * 8), find=find)
    assert len(steps) == 1 and result["ending"] == "nothing to find" and result["reason"].startswith(says)
    assert outcomes.BISECT_CODES[result["ending"]] == outcomes.NOTHING_TO_FIND


def test_an_inconclusive_probe_leaves_the_range_the_steps_have_narrowed():
    commits = shas(16)
    judge = monotone(commits, [1.0] * 6 + [0.5] * 10, unclear={(GOOD, commits[3])})
    result, steps = drive(commits, judge, band=None)
    assert result["ending"] == "inconclusive" and steps[-1]["candidate"] == commits[3]
    assert result["range"] == (GOOD, commits[7]) and result["direction"] == "faster"
    assert "--budget" in result["reason"] and "--band" in result["reason"]


def test_a_step_the_rule_does_not_ask_for_is_refused():
    commits = shas(7)
    _, steps = drive(commits, monotone(commits, [1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0]))
    swapped = [steps[0], steps[2], steps[1], *steps[3:]]
    with pytest.raises(R.BisectOff) as off:
        R.bisect_search(GOOD, commits, swapped, "either", 0.1, 0.1)
    assert off.value.index == 1
    assert R.bisect_search(GOOD, commits, steps + [steps[-1]], "either", 0.1, 0.1)["used"] == len(steps)  # past the end
    with pytest.raises(R.BisectOff):  # a probe judged against another band than the rule asks for
        R.bisect_search(GOOD, commits, [steps[0], {**steps[1], "band": 0.2}, *steps[2:]], "either", 0.1, 0.1)


def test_a_step_verdict_from_its_comparison():
    ok = {"status": "complete", "parity": {"agree": True},
          "stats": {"verdict": "regressed", "paired": {"geomean_ratio": 2.0, "ci95": [1.9, 2.1]}}}
    ok["stats"]["threshold"] = 0.25
    assert R.bisect_step(ok) == ("regressed", 2.0, [1.9, 2.1], 0.25)
    assert R.bisect_step({**ok, "parity": {"agree": False}})[0] == "outputs differ"
    assert R.bisect_step({**ok, "status": "failed"})[0] == "failed"


# --- a bisect folder on the fake launcher, and both checkers ----------------------------------------
@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    where = tmp_path_factory.mktemp("bisect")
    out, receipt, history = fake_bisect(where, [1.0] * 6 + [2.0] * 10)
    return out, receipt, history


@pytest.fixture
def copy(folder, tmp_path):
    out = tmp_path / "bisect"
    shutil.copytree(folder[0], out, symlinks=True)
    return out


def checkers(out):
    """(rehash.py's problem lines, harness verify's) for a bisect folder."""
    from harness.judge.verify import verify

    try:
        r = rehash.check_bisect(str(out))[0].problems
    except rehash.Unusable as exc:
        r = [f"unusable: {exc}"]
    report = verify(out)
    return r, report.problems or ([f"unusable: {report.unusable}"] if report.unusable else [])


def refused_by_both(out, *needles):
    lines = checkers(out)
    for mine in lines:
        assert any(all(n in line for n in needles) for line in mine), (needles, lines)


def edit(out, change):
    path = out / C.BISECT_FILE
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc, indent=2))


def test_the_fake_bisect_names_its_culprit_and_both_checkers_agree(folder):
    out, receipt, history = folder
    assert receipt["ending"] == "culprit" and receipt["culprit"] == history[6]
    assert receipt["commits"] == history[1:] and receipt["good"] == history[0]
    assert sorted(os.listdir(out / C.BISECT_STEPS)) == [s["folder"] for s in receipt["steps"]]
    assert checkers(out) == ([], [])
    raw = (out / C.BISECT_FILE).read_text()  # read through its type and written again: itself, in its order
    assert json.dumps(records.to_json(records.BisectReceipt.from_json(json.loads(raw)))) == json.dumps(json.loads(raw))


def test_an_edited_culprit_is_refused(copy, folder):
    edit(copy, lambda d: d.update(culprit=folder[2][5]))
    refused_by_both(copy, "[bisect]", "culprit")


def test_an_edited_step_verdict_is_refused(copy):
    def change(d):
        d["steps"][2]["verdict"] = "regressed"  # an equal probe read as regressed
    edit(copy, change)
    refused_by_both(copy, "[bisect]", "steps[2].verdict")


def test_an_edited_step_digest_is_refused(copy):
    def change(d):
        d["steps"][1]["digest"] = "ab" * 32
    edit(copy, change)
    refused_by_both(copy, "[bisect]", "steps[1].digest")


def test_a_verdict_and_ending_forged_together_are_refused(copy):
    """The receipt rewritten as the rule would read it had the culprit's own step been equal:
    the step bundle still says regressed."""
    def change(d):
        d["steps"][-1]["verdict"] = "equal"
        d.update(ending="spread", culprit=None, reason=R.bisect_search(d["good"], d["commits"], d["steps"], d["find"],
                                                                         d["threshold"], d["band"])["reason"])
    edit(copy, change)
    refused_by_both(copy, "[bisect]", f"steps[{len(json.loads((copy / C.BISECT_FILE).read_text())['steps']) - 1}]"
                                      ".verdict")


def test_a_step_dropped_is_refused(copy):
    edit(copy, lambda d: d["steps"].pop())
    refused_by_both(copy, "extra: not a step bisect.json lists")
    refused_by_both(copy, "[bisect]", "ending")


def test_a_tampered_step_bundle_is_refused(copy, folder):
    step = copy / C.BISECT_STEPS / folder[1]["steps"][0]["folder"]
    path = step / C.COMPARISON
    path.write_text(path.read_text().replace('"regressed"', '"equal"', 1))
    refused_by_both(copy, "hash mismatch")
    refused_by_both(copy, "the step bundle does not verify")


def test_a_commit_list_edited_is_refused(copy):
    """A commit dropped from the list: the rule asks for other probes than the steps ran."""
    edit(copy, lambda d: d["commits"].pop(3))
    refused_by_both(copy, "[bisect]", "the search rule asks for")


def test_a_bisect_receipt_of_the_wrong_shape_or_a_link_is_refused(copy, tmp_path):
    edit(copy, lambda d: d.update(extra=1))
    refused_by_both(copy, "extra: not declared by the contract")
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / C.BISECT_FILE).symlink_to(copy / C.BISECT_FILE)
    refused_by_both(linked, "not a regular file")


def test_an_edited_step_band_is_refused(copy):
    def change(d):
        d["steps"][1]["band"] = 0.2  # within the contract's bound, not the band the rule gives that step
    edit(copy, change)
    refused_by_both(copy, "[bisect]", "steps[1].band")


def test_an_edited_budget_per_step_is_refused(copy):
    edit(copy, lambda d: d.update(budget_s=30.0))
    refused_by_both(copy, "[bisect]", "bisect.json's budget per step is 30")


def test_a_fake_bisect_finds_the_speed_up_among_16_commits_and_both_checkers_agree(tmp_path):
    out, receipt, history = fake_bisect(tmp_path, [1.0] * 9 + [0.6] * 7)
    assert receipt["ending"] == "culprit" and receipt["culprit"] == history[9] and receipt["find"] == "either"
    assert receipt["steps"][0]["verdict"] == "improved" and receipt["band"] is None
    assert {s["band"] for s in receipt["steps"][1:]} == {R.bisect_band(receipt["steps"][0]["ratio"], 0.1)}
    assert checkers(out) == ([], [])


def test_an_inconclusive_search_names_the_commands_to_run_next(tmp_path):
    """The default budget stopped inconclusive at a no-op commit, with no hint (issue 46). The
    command now prints what to run: the narrower range the steps have left, with twice the budget
    per step, or with a wider band."""
    import yaml

    from bisect_support import history_repo, speeds_tree
    from harness.judge import bisect

    history = history_repo(tmp_path / "repo", [speeds_tree(s, i) for i, s in enumerate([1.0] * 6 + [0.8] * 10)])
    (tmp_path / "w").mkdir()
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"name": "m", "target": {"repo": str(tmp_path / "repo")}, "base": {"rev": "HEAD~1"},
                                    "candidate": {"rev": "HEAD"}, "workload": {"entry": "w:setup",
                                                                               "path": str(tmp_path / "w")}}))
    p = bisect.plan(path, history[0], history[-1])
    assert p.budget_s == bisect.BISECT_BUDGET_S and p.threshold == 0.02 and p.band is None
    commits = history[1:]
    judge = monotone(commits, [1.0] * 5 + [0.8] * 10, unclear={(GOOD, commits[2])})  # the second probe

    def relabel(base, candidate, band):  # monotone() knows good as GOOD
        return judge(GOOD if base == history[0] else base, candidate, band)

    steps = []
    while True:
        rule = bisect.search(p, steps)
        if rule["next"] is None:
            break
        base, candidate, band = rule["next"]
        verdict, ratio, interval = relabel(base, candidate, band)
        steps.append({"base": base, "candidate": candidate, "band": band, "verdict": verdict, "ratio": ratio,
                      "interval": interval})
    receipt = bisect.receipt(p, [records.BisectStep(n, f"{n:02d}-{s['candidate'][:12]}", digest="0" * 64, **s)
                                 for n, s in enumerate(steps, 1)], rule["ending"], None, rule["reason"])
    assert receipt.ending == "inconclusive"
    lines = bisect.next_steps(p, receipt, "c.yaml", tmp_path / "out")
    assert lines[0] == (f"next: the faster commit lies after good and at or before {commits[6][:12]} (7 commit(s)); "
                        "to go on from there:")
    assert lines[1].startswith(f"  harness bisect c.yaml --good {history[0]} --bad {commits[6]} --find faster "
                               f"--budget 240 --out {tmp_path / 'out'}.2")
    assert f"--band 0.211 --out {tmp_path / 'out'}.3" in lines[2]  # twice the probes' 10.55%, at most 25%
    receipt = dataclasses.replace(receipt, ending="culprit")
    assert bisect.next_steps(p, receipt, "c.yaml", tmp_path / "out") == []


@pytest.mark.parametrize("kw, says", [({"band": 0.7}, "--band 0.7: expected a share above 0 and at most 0.25"),
                                      ({"band": 0.0}, "--band 0: expected a share above 0"),
                                      ({"budget_s": 0.5}, "--budget 0.5: expected seconds per step"),
                                      ({"find": "sideways"}, "--find 'sideways': expected one of either, slower, faster")])
def test_a_bisect_that_cannot_start_says_why_in_one_line(tmp_path, kw, says):
    from harness.judge import bisect

    with pytest.raises(bisect.BisectError) as refused:
        bisect.plan(tmp_path / "none.yaml", "a", "b", **kw)
    assert str(refused.value).startswith(says) and "\n" not in str(refused.value)
