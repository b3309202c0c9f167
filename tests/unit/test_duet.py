"""Issue 48 item 3, duet benchmarking (`launch: duet`) on the fake launcher: each round's two runs
at once, each on a core of its own, their loops started together. The campaign file's rules, the
plan (which run has which core), the mark channel's hold (outside.Together, on real sockets in this
process), a whole campaign both checkers verify, and the forgeries of what a duet's bundle says:
the checkers' sequential rules (a run starts after the one before it ended) widened for a round's
two runs exactly, no wider. Real processes (pinning, start-together): tests/process/test_duet_processes.py."""
from __future__ import annotations

import copy
import json
import shutil
import socket

import pytest

from checks_support import duet_bundle, forge, problems, refused
from fakes import Model, run_fake
from harness import contract as C
from harness import rules as R
from harness.engine import outside
from harness.engine.duet_launcher import DuetError, cores_for, crowded
from harness.bundle import read
from harness.plan import spec
from harness.render import summary
from spec_support import SOURCE, VALID


def parsed(**top):
    return spec.parse({**copy.deepcopy(VALID), "slots": 1, **top}, SOURCE)


def error_of(**top) -> str:
    with pytest.raises(spec.SpecError) as exc:
        parsed(**top)
    return str(exc.value)


# --- the campaign file ----------------------------------------------------------------------------
def test_a_duet_is_a_launch_mode_with_two_cores_or_the_runners_first_two():
    assert parsed(launch="duet").launch == "duet" and parsed(launch="duet").cores == ()
    named = parsed(launch={"mode": "duet", "cores": [2, 3]})
    assert named.cores == (2, 3) and named.with_cores((0, 1)).cores == (2, 3)  # the YAML's stand
    assert parsed(launch="duet").with_cores((0, 1)).cores == (0, 1)
    assert parsed(launch="fresh").with_cores((0, 1)).cores == ()  # only a duet has cores


@pytest.mark.parametrize("top, says", [
    ({"launch": {"mode": "duet", "cores": [0]}}, "launch.cores: expected two distinct CPU numbers"),
    ({"launch": {"mode": "duet", "cores": [1, 1]}}, "launch.cores: expected two distinct CPU numbers"),
    ({"launch": {"mode": "duet", "cores": [0, -1]}}, "launch.cores"),
    ({"launch": {"mode": "duet", "cores": [0, "1"]}}, "launch.cores"),
    ({"launch": {"mode": "duet", "preload": ["json"]}}, "launch.preload: expected one of the known keys"),
    ({"launch": "duet", "slots": 2}, "slots: expected 1 with `launch: duet`"),
    ({"launch": "duet", "order": "AaBb", "stages": {"a": "demo.core:f"}}, "runs 1-2 (Aa) are not one round"),
    ({"launch": "duet", "metrics": ["wall", "instructions"]}, "metrics: expected [wall] with `launch: duet`"),
])
def test_what_a_duet_cannot_run_is_refused_in_one_line(top, says):
    msg = error_of(**top)
    assert "\n" not in msg and says in msg, msg


def test_an_order_runs_as_duets_when_its_consecutive_runs_pair_into_rounds():
    assert R.duet_problem("ABBAabBA") is None
    assert "runs 3-4 (AA)" in R.duet_problem("ABAABB")
    assert R.duet_problem(R.round_order(12, 7, 2)) is None  # a shuffled campaign always does
    # the first run of each round on cores[0]: the shuffle shuffles which variant has which core
    assert [R.duet_core((4, 9), i) for i in range(4)] == [4, 9, 4, 9]
    assert R.round_pace("duet", 2.0, 3.0) == 3.0 and R.round_pace("fresh", 2.0, 3.0) == 5.0


def test_the_cores_are_the_campaigns_when_the_workers_may_run_there_else_the_first_two():
    assert cores_for((), {3, 1, 7}) == (1, 3)
    assert cores_for((7, 3), {3, 1, 7}) == (7, 3)
    with pytest.raises(DuetError, match=r"launch.cores: CPU 5 is not one the workers may run on here \(CPU 1,3,7\)"):
        cores_for((5, 3), {3, 1, 7})
    with pytest.raises(DuetError, match="needs two cores"):
        cores_for((), {0})


# --- the channel: both start marks answered at once, both end marks likewise ----------------------
class Pair:
    """Two mark channels joined by outside.Together, on real socket pairs (this process stands in
    for both workers: the readings at a mark are of this process)."""

    def __init__(self):
        self.together = outside.Together()
        self.workers, self.channels = [], []
        for _ in range(2):
            ours, theirs = socket.socketpair()
            self.workers.append(theirs)
            self.channels.append(outside.Channel(ours, outside.Marks(launched=0.0), __import__("os").getpid(),
                                                 together=self.together))

    def send(self, k: int, text: bytes) -> None:
        self.workers[k].sendall(text)
        assert self.channels[k].feed()

    def answered(self, k: int) -> bool:
        self.workers[k].setblocking(False)
        try:
            return self.workers[k].recv(1) == b"1"
        except BlockingIOError:
            return False

    def close(self):
        for s in self.workers:
            s.close()
        for c in self.channels:
            c.close()


def test_a_duet_on_all_the_cores_the_workers_may_use_is_warned_about():
    """Two CPUs in all: the runner and the rest of the machine fall on one run of a round."""
    assert crowded({0, 1, 2}) is None
    said = crowded({0, 1})
    assert said.startswith("launch: duet: the workers may run on 2 CPUs here (CPU 0,1)") and "`launch: fresh`" in said


def test_a_start_mark_waits_for_the_partners_and_both_are_answered_at_once():
    pair = Pair()
    try:
        pair.send(0, b"S\n")
        assert not pair.answered(0) and pair.channels[0].marks.start is None  # held: no reading, no start
        pair.send(1, b"S\n")
        assert pair.answered(0) and pair.answered(1)
        m0, m1 = (c.marks for c in pair.channels)
        assert m0.start is not None and m1.start is not None and m0.cpu_start is not None
        assert m0.start <= m1.start  # the readings of both first, then the answers in one pass
        pair.send(0, b"E 1.0 2.0\n")
        assert not pair.answered(0) and m0.end is not None  # its end is when it came; its answer waits
        pair.send(1, b"E 1.5 2.5\n")
        assert pair.answered(0) and pair.answered(1) and m0.end <= m1.end
        assert not m0.violations and not m1.violations
    finally:
        pair.close()


def test_a_partner_that_is_gone_releases_the_one_waiting():
    pair = Pair()
    try:
        pair.send(0, b"S\n")
        pair.workers[1].close()  # it died before its start mark
        assert not pair.channels[1].feed()  # end of file: gone
        assert pair.answered(0) and pair.channels[0].marks.start is not None
        pair.send(0, b"E 1.0 2.0\n")
        assert pair.answered(0)  # nobody left to wait for
    finally:
        pair.channels[0].close()
        pair.workers[0].close()


def test_a_lone_channel_answers_at_once_as_before():
    ours, theirs = socket.socketpair()
    channel = outside.Channel(ours, outside.Marks(launched=0.0), __import__("os").getpid())
    try:
        theirs.sendall(b"S\n")
        channel.feed()
        assert theirs.recv(1) == b"1"
    finally:
        channel.close()
        theirs.close()


# --- a campaign of duets ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def duet(tmp_path_factory):
    return duet_bundle(tmp_path_factory.mktemp("duet"))


def runs_of(bundle):
    return {p.stem: json.loads(p.read_text()) for p in (bundle / "data" / "runs").glob("*.json")}


def test_a_campaign_of_duets_runs_each_round_at_once_and_both_checkers_verify_it(duet):
    campaign = json.loads((duet / C.CAMPAIGN_JSON).read_text())
    assert campaign["launch"] == "duet" and campaign["cores"] == [0, 1]
    runs = runs_of(duet)
    for index, (label, _variant) in enumerate(R.labels(campaign["order"])):
        assert runs[label]["launch"] == {"mode": "duet", "zygote": None, "generation": None,
                                         "core": R.duet_core([0, 1], index)}
    pairs = [R.labels(campaign["order"])[k:k + 2] for k in range(0, len(campaign["order"]), 2)]
    for (a, _), (b, _) in pairs:  # the two of a round start together and overlap
        assert runs[a]["process"]["started_at"] == runs[b]["process"]["started_at"]
        assert runs[a]["outside"]["before_s"] == runs[b]["outside"]["before_s"]
    assert problems(duet) == ([], [])


def test_the_wait_at_a_duets_end_mark_is_not_time_moved_out_of_the_loop(duet):
    """Each end mark of a duet is held until both loops ended, so the run whose loop ended first
    lives on by its wait: the rule on time moved out of the loop leaves that wait out (the real
    demo's candidate, 470x faster, waited 1.78 s a round for the base's loop and read as work moved
    out of its loop), and a run one after the other that grew as much after its loop is flagged."""
    def side(r, mode):
        return r["wall_s"], r["outside"], r["process"], mode

    runs = runs_of(duet)
    for k in (1, 2, 3):
        a, b = runs[f"A{k}"], runs[f"B{k}"]
        spans = [R.loop_span(r["process"]["started_at"], r["outside"]["before_s"], r["wall_s"]) for r in (a, b)]
        wait = spans[0][1] - spans[1][1]  # the candidate's loop ended first, by this much
        assert wait > 0.1 and b["outside"]["after_s"] > wait  # it waited at its end mark
        held = R.outside_pair(side(a, "duet"), side(b, "duet"))
        assert held[1][1] == pytest.approx(b["outside"]["before_s"] + b["outside"]["after_s"] - wait)
        assert held[0][1] == a["outside"]["before_s"] + a["outside"]["after_s"]  # the base waited for nothing
        assert R.duet_holds(side(a, "duet"), side(b, "duet")) == pytest.approx((0.0, wait))
        fresh = R.outside_pair(side(a, "fresh"), side(b, "fresh"))
        assert fresh[1][1] == b["outside"]["before_s"] + b["outside"]["after_s"]  # nothing is left out
    stats = json.loads((duet / C.COMPARISON).read_text())["stats"]
    assert stats["verdict"] == "improved" and not stats["outside"]["moved"]["flagged"], stats["outside"]
    # the same runs, had they run one after the other: the candidate's wait is time after its loop
    rounds = [R.outside_pair(side(runs[f"A{k}"], "fresh"), side(runs[f"B{k}"], "fresh"))
              for k in range(1, stats["rounds"]["n"] + 1)]
    assert R.moved_outside(rounds, stats["band"])["flagged"]


def test_the_summary_says_the_rounds_ran_as_duets_and_how_much_their_loops_overlapped(duet, tmp_path):
    text = summary.render(read.load(duet), "duet")
    assert "each round one base and one candidate run at once (a duet), fresh processes pinned to CPUs 0 and 1" \
        in text, text
    # the fake's two loops of a round begin together: the shorter lies wholly inside the longer
    rounds = len(json.loads((duet / C.CAMPAIGN_JSON).read_text())["order"]) // 2
    assert f"ran beside the other for 100% of its time at the median round (least 100%, {rounds} rounds)" in text, text
    fresh, _ = run_fake(tmp_path, Model(items=3, item_s=0.1), rounds=3)
    plain = summary.render(read.load(fresh.out), "fresh")
    assert "in fresh processes" in plain and "a duet" not in plain and "Duet:" not in plain


def test_the_overlap_of_two_loops_is_the_share_of_the_shorter_that_ran_beside_the_other():
    assert R.loop_span(100.0, 0.5, 2.0) == (100.5, 102.5)
    assert R.overlap((0.0, 2.0), (0.0, 2.0)) == 1.0 and R.overlap((0.0, 2.0), (0.5, 1.0)) == 1.0
    assert R.overlap((0.0, 2.0), (1.0, 3.0)) == 0.5 and R.overlap((1.0, 3.0), (0.0, 2.0)) == 0.5
    assert R.overlap((0.0, 1.0), (1.5, 2.0)) == 0.0 and R.overlap((0.0, 0.0), (0.0, 0.0)) == 0.0


def test_a_duets_auto_rounds_count_a_round_at_the_pace_of_its_longer_run(tmp_path):
    out, _ = run_fake(tmp_path, Model(items=4, item_s=0.1, ratio=1.0, noise=0.5, seed=2), rounds="auto",
                      budget_s=20, min_rounds=4, launch="duet")
    runs = runs_of(out.out)
    pace = max(runs["A1"]["process"]["wall_s"], runs["B1"]["process"]["wall_s"])
    campaign = json.loads((out.out / C.CAMPAIGN_JSON).read_text())
    assert out.comparison.stats.sequential.cap == R.auto_rounds(20, pace, 4)
    assert campaign["rounds"] <= out.comparison.stats.sequential.cap
    assert problems(out.out) == ([], [])


def shift_run(label, seconds):
    def edit(run):
        run["process"]["started_at"] += seconds
        run["process"]["ended_at"] += seconds
    return edit


@pytest.mark.parametrize("edits, says", [
    ({"data/runs/B1.json": lambda r: r["launch"].update(core=0)}, "launch.core 0, its place in its round gives core 1"),
    ({C.CAMPAIGN_JSON: lambda c: c.update(cores=[0, 0])}, "cores [0, 0]: a duet names two distinct cores"),
    ({C.CAMPAIGN_JSON: lambda c: c.update(cores=None)}, "a duet names two distinct cores"),
    ({"data/runs/A2.json": lambda r: r["launch"].update(mode="fresh", core=None)}, 'launch.mode "fresh"'),
    # the second of round 1 long after the first ended: not at once, though the pair may overlap
    ({"data/runs/B1.json": shift_run("B1", 0.6)}, "did not run at once"),
    # a round that starts before the round before it ended
    ({"data/runs/A2.json": shift_run("A2", -0.7)}, "started before the previous round's runs ended"),
])
def test_a_forged_duet_is_refused_by_both_checkers(duet, tmp_path, edits, says):
    copy_ = shutil.copytree(duet, tmp_path / "b")
    forge(copy_, edits)
    r, v = problems(copy_)
    assert refused(r, says) and refused(v, says), (r, v)


def test_a_fresh_campaign_that_claims_cores_or_a_run_with_a_core_is_refused(tmp_path):
    out, _ = run_fake(tmp_path / "fresh", Model(items=3, item_s=0.1), rounds=3)
    for edits, says in (({C.CAMPAIGN_JSON: lambda c: c.update(cores=[0, 1])}, "only a duet names cores"),
                        ({"data/runs/A1.json": lambda r: r["launch"].update(core=1)}, "a core exactly for a duet's run")):
        copy_ = shutil.copytree(out.out, tmp_path / f"b{len(says)}")
        forge(copy_, edits)
        r, v = problems(copy_)
        assert refused(r, says) and refused(v, says), (r, v)


def test_a_duet_started_out_of_pairs_is_refused(duet, tmp_path):
    """runs_started odd: the runner starts a duet's runs two at a time."""
    copy_ = shutil.copytree(duet, tmp_path / "b")
    runs = runs_of(copy_)
    last = R.labels(json.loads((copy_ / C.CAMPAIGN_JSON).read_text())["order"])[len(runs) - 1][0]
    (copy_ / C.run_path(last)).unlink()
    (copy_ / C.log_path(last)).unlink()
    forge(copy_, {C.RUNNER: lambda r: r.update(runs_started=r["runs_started"] - 1)})
    r, v = problems(copy_)
    assert refused(r, "a duet starts its rounds' runs two at a time") and refused(v, "two at a time"), (r, v)
