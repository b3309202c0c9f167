"""`harness selftest noise` end to end at its smallest: real campaigns of the noise workload,
quiet only, checked for what it prints (never for what the timings are)."""
from __future__ import annotations

import re
import subprocess
import sys

from conftest import ROOT, harness


def test_selftest_noise_runs_and_reports_false_claims_coverage_and_detections():
    result = harness("selftest", "noise", "--campaigns", "1", "--rounds", "2", "--work", "2000", "--quiet-only")
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"^quiet, A-vs-A #1: (improved|regressed|equal|inconclusive) ", result.stdout, re.M)
    assert re.search(r"^quiet: A-vs-A \d false claim\(s\) in 1, interval holds 1.0 in \d of 1; known effect "
                     r"called improved in \d of 1 \(median ratio ", result.stdout, re.M)


def test_selftest_noise_runs_its_campaigns_as_duets_and_says_each_ones_spread():
    """`--launch duet`: the same campaigns with each round's two runs at once, and the per-round
    spread each campaign and the condition show, the figure a duet is there to lower."""
    result = harness("selftest", "noise", "--campaigns", "1", "--effect-campaigns", "0", "--rounds", "2",
                     "--work", "2000", "--quiet-only", "--launch", "duet")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("harness selftest noise: launch: duet\n")
    assert re.search(r"^quiet, A-vs-A #1: \w+ .*runs overloaded, per-round spread \d+\.\d%", result.stdout, re.M)
    assert re.search(r"^quiet: A-vs-A \d false claim\(s\) in 1, .*; per-round spread \(sd of the rounds' log "
                     r"ratios\) median \d+\.\d% ", result.stdout, re.M)


def test_the_load_generator_is_not_ours_and_stops():
    import os

    import psutil

    from harness.selftest.noise import Load
    from harness.worker import prctl

    prctl.become_subreaper()  # as inside a campaign: orphans would come back to us
    try:
        with Load() as load:
            assert len(load.pids) == (os.cpu_count() or 1)
            ours = {p.pid for p in psutil.Process().children(recursive=True)}
            assert all(psutil.pid_exists(pid) and pid not in ours for pid in load.pids)
    finally:
        prctl.prctl(prctl.PR_SET_CHILD_SUBREAPER, 0)
    assert not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
                   for pid in load.pids)


def test_the_noise_selftest_needs_no_command_module():
    """harness/selftest/noise.py takes the demo campaign's path from its caller: importing it and
    what its campaigns run (spec, runner) pulls in no harness.commands (nor harness.clone)."""
    probe = ("import sys\nimport harness.selftest.noise, harness.plan.spec, harness.engine.runner\n"
             "print(sorted(m for m in sys.modules if m.startswith(('harness.commands', 'harness.clone'))))")
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
