"""`harness selftest noise`: does the verdict hold on this machine, quiet and under load?

Campaigns of the noise workload (campaigns/workloads/noise_workload.py) on the demo target:
A-vs-A (the candidate does the same work) and a known effect (the candidate does
1/(1 + effect) of the work), each first on a quiet machine, then under a bounded load
generator this command starts and stops itself (one process per core, all busy in the same
half of every 0.6 s, each ending by itself when this process is gone). Printed per condition: false
claims (A-vs-A called improved or regressed), how many intervals hold 1.0, detections of
the known effect, and under load whether each interval holds the quiet ratio or the
verdict makes no claim.
"""
from __future__ import annotations

import contextlib
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness.bundle.model import Comparison

# Busy for the first half of each 0.6 s of the wall clock, like another job that comes and
# goes. All of them in phase (a free-running loop each drifted apart, and then one core was
# always free); each ends by itself when the self-test's process is gone, or after 2 hours.
LOAD = ("import os, sys, time\nowner, end = int(sys.argv[1]), time.monotonic() + 7200\n"
        "while time.monotonic() < end:\n"
        "    try:\n        os.kill(owner, 0)\n    except ProcessLookupError:\n        break\n"
        "    while time.time() % 0.6 < 0.3: pass\n    time.sleep(0.6 - time.time() % 0.6)\n")


class Load:
    """One bursty busy process per core, started and reliably stopped. They are not our
    descendants (a launcher forks them and exits while we are no subreaper), so the runner,
    which fails a run that leaves processes behind, does not count them as the run's."""

    def __enter__(self):
        from harness.worker import prctl

        prctl.prctl(prctl.PR_SET_CHILD_SUBREAPER, 0)
        try:
            launcher = ("import subprocess, sys\nfor _ in range(int(sys.argv[1])):\n"
                        "    p = subprocess.Popen([sys.executable, '-c', sys.argv[2], sys.argv[3]], start_new_session=True,\n"
                        "                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,\n"
                        "                         stderr=subprocess.DEVNULL)\n"
                        "    print(p.pid)\n")
            out = subprocess.run([sys.executable, "-c", launcher, str(os.cpu_count() or 1), LOAD, str(os.getpid())],
                                 capture_output=True, text=True, check=True).stdout
        finally:
            prctl.become_subreaper()
        self.pids = [int(line) for line in out.split()]
        time.sleep(5)  # let the 1-minute load average notice
        return self

    def __exit__(self, *exc):
        import psutil

        for pid in self.pids:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        psutil.wait_procs([p for p in map(_process, self.pids) if p], timeout=5)


def _process(pid: int):
    import psutil

    try:
        return psutil.Process(pid)
    except psutil.NoSuchProcess:
        return None


def one_campaign(demo: Path, out: Path, rounds: int | None, candidate_work: float, work: int,
                 launch: str = "fresh") -> Comparison:
    import yaml

    from harness.plan import spec
    from harness.engine.runner import Runner

    data = yaml.safe_load(demo.read_bytes())
    data.pop("golden", None)
    data.pop("stages", None)  # no wrappers: the headline is the plain wall
    data.pop("order", None)
    data.pop("rounds", None)
    data.update(slots=1, name="noise", **({"rounds": rounds} if rounds is not None else {}))  # None: auto
    if launch != "fresh":  # fresh is the default; duet needs slots 1 and a paired order, as here
        data["launch"] = launch
    data["workload"] = {"entry": "noise_workload:setup", "path": data["workload"]["path"],
                        "params": {"items": 8, "work": work, "candidate_work": candidate_work}}
    campaign = spec.parse(data, demo, yaml.safe_dump(data, sort_keys=False).encode())
    runner = Runner(campaign, out)
    outcome = runner.run()
    assert outcome is not None  # not check_only: run() seals a bundle
    comparison = outcome.comparison
    if (runner.interrupted or "").startswith("interrupted by"):  # Ctrl-C or SIGTERM ends the self-test too
        raise SystemExit(f"harness selftest noise: {runner.interrupted}; the self-test stopped")
    return comparison


def run(demo: Path, campaigns: int, rounds: int | None, effect: float, work: int, loaded: bool = True,
        effect_campaigns: int | None = None, quiet: bool = True, launch: str = "fresh") -> int:
    """demo: the demo campaign's YAML (its target and workload folder serve every campaign here).
    rounds None: the default, `rounds: auto` with its budget. effect_campaigns: how many
    known-effect campaigns per condition (default: as many as A-vs-A ones). Without the
    quiet condition, claims under load are held to the work ratio 1 / (1 + effect)."""
    conditions = ([("quiet", False)] if quiet else []) + ([("under load", True)] if loaded else [])
    quiet_ratio = None if quiet else 1 / (1 + effect)
    print(f"harness selftest noise: launch: {launch}", flush=True)
    failed = 0
    with tempfile.TemporaryDirectory(prefix="abba-noise-") as tmp:
        # (kind, the candidate's work factor, campaigns of it), alternating while both last
        effect_kind = f"{100 * effect:g}% less work"
        kinds = (("A-vs-A", 1.0, campaigns),
                 (effect_kind, 1 / (1 + effect), campaigns if effect_campaigns is None else effect_campaigns))
        for name, load in conditions:
            rows: dict[str, list] = {kind: [] for kind, _, _ in kinds}
            spreads: list[float] = []  # each campaign's per-round spread (sd of the rounds' log ratios)
            with Load() if load else contextlib.nullcontext():
                for k in range(max(count for _, _, count in kinds)):
                    for kind, factor, count in kinds:
                        if k >= count:
                            continue
                        t0 = time.monotonic()
                        c = one_campaign(demo, Path(tmp) / f"{name}-{kind}-{k}".replace(" ", "_").replace("%", ""),
                                         rounds, factor, work, launch)
                        s = c.stats
                        if not c.complete or not s.paired.ci95:
                            failed += 1
                            print(f"{name}, {kind} #{k + 1}: {c.status}: {c.reason or s.verdict_reason}")
                            continue
                        lo, hi = s.paired.ci95
                        rows[kind].append((s.verdict, s.paired.geomean_ratio, lo, hi))
                        wider = f", claims +-{100 * s.claim_band:.1f}%" if s.claim_band > s.band else ""
                        loaded_runs = len(s.load.overloaded)
                        sd = s.rounds.sd_log
                        if sd is not None:
                            spreads.append(sd)
                        print(f"{name}, {kind} #{k + 1}: {s.verdict} {s.paired.geomean_ratio:.4f} "
                              f"[{lo:.4f}, {hi:.4f}], band +-{100 * s.band:.1f}%{wider}, "
                              f"{loaded_runs} of {2 * s.rounds.n} runs overloaded, "
                              f"per-round spread {'-' if sd is None else f'{100 * sd:.1f}%'}, "
                              f"base {'-' if c.wall.base_mean_s is None else f'{1e3 * c.wall.base_mean_s:.0f} ms'} a run"
                              f"{', drift flagged' if s.drift and s.drift.flagged else ''} "
                              f"({time.monotonic() - t0:.0f} s)", flush=True)
            aa, fx = rows["A-vs-A"], rows[effect_kind]
            claims = sum(v in ("improved", "regressed") for v, *_ in aa)
            holds = sum(lo <= 1.0 <= hi for _, _, lo, hi in aa)
            detected = sum(v == "improved" for v, *_ in fx)
            text = (f"{name}: A-vs-A {claims} false claim(s) in {len(aa)}, interval holds 1.0 in {holds} of "
                    f"{len(aa)}; known effect called improved in {detected} of {len(fx)}")
            if not load and fx:
                quiet_ratio = statistics.median(r for _, r, _, _ in fx)
                text += f" (median ratio {quiet_ratio:.4f})"
            elif quiet_ratio is not None:
                honest = sum(lo <= quiet_ratio <= hi or v not in ("improved", "regressed") for v, _, lo, hi in fx)
                text += (f"; interval holds the {'quiet' if quiet else 'work'} ratio {quiet_ratio:.4f} or no claim "
                         f"in {honest} of {len(fx)}")
            if spreads:
                text += (f"; per-round spread (sd of the rounds' log ratios) median {100 * statistics.median(spreads):.1f}% "
                         f"({100 * min(spreads):.1f}-{100 * max(spreads):.1f}%)")
            print(text, flush=True)
    return 1 if failed else 0
