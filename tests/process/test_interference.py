"""Interference in a fresh bundle of campaigns/demo.yaml (issue 35, item 2): every run record holds
its readings and marks, campaign.json its bounds, comparison.json the check without the disturbed
rounds; both checkers (harness verify, python -S harness/rehash.py) refuse a disturbed mark or a
steal count edited and re-sealed as a forger would (comparison.json re-derived), and a record
stripped of its section, and a whole earlier generation (run/v4) relabelled."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, harness
from harness import contract as C
from harness.selftest import tamper

MEASURED = {"user_hz", "steal_ticks", "cpu", "cpu_steal_ticks", "freq_mhz_before", "freq_mhz_after"}


def runs_of(bundle: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((bundle / "data" / "runs").glob("*.json"))]


def test_a_fresh_demo_bundle_holds_the_new_fields(demo_bundle):
    runs = runs_of(demo_bundle)
    assert runs and all(r["schema"] == C.SCHEMAS["run"] for r in runs)
    for r in runs:
        section = r["interference"]
        assert set(section) == MEASURED | {"steal_share", "cpu_per_wall", "causes", "disturbed"}, r["label"]
        assert section["disturbed"] == bool(section["causes"])
        assert section["cpu_per_wall"] == pytest.approx(r["machine"]["process_cpu_s"] / r["wall_s"], rel=1e-8)
        if Path("/proc/stat").is_file():  # Linux: the cpu line is always there
            assert section["user_hz"] and section["steal_ticks"] is not None
        if not Path("/sys/devices/system/cpu/cpu0/cpufreq").exists():
            assert section["freq_mhz_before"] is None  # absent, never a nominal figure
    campaign = json.loads((demo_bundle / C.CAMPAIGN_JSON).read_text())
    assert campaign["interference"] == {"max_steal": C.MAX_STEAL, "min_cpu_per_wall": None}
    stats = json.loads((demo_bundle / C.COMPARISON).read_text())["stats"]
    assert stats["interference"]["disturbed"] == [r["label"] for r in runs_of_order(demo_bundle)
                                                  if r["interference"]["disturbed"]]
    assert stats["interference"]["steal_runs"] == len(runs)


def runs_of_order(bundle: Path) -> list[dict]:
    campaign = json.loads((bundle / C.CAMPAIGN_JSON).read_text())
    return [json.loads((bundle / C.run_path(label)).read_text()) for label in campaign["labels"]]


def rehash(bundle: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-S", str(ROOT / "harness" / "rehash.py"), str(bundle)],
                          capture_output=True, text=True, timeout=300)


def both_refuse(bundle: Path, needle: str) -> None:
    for name, result in (("harness verify", harness("verify", bundle)), ("rehash.py", rehash(bundle))):
        assert result.returncode == 1, (name, result.stdout[-2000:], result.stderr[-2000:])
        assert needle in result.stdout, (name, result.stdout[-2000:])


def forge(bundle: Path, label: str, change) -> None:
    """Edit one run record, re-derive comparison.json with the harness's code and re-seal."""
    tamper.edit_json(C.run_path(label), lambda r: change(r["interference"]))(bundle)
    tamper.rederive(bundle)
    tamper.reseal(bundle)


def test_a_disturbed_mark_edited_is_refused_by_both(demo_bundle):
    label = next(r["label"] for r in runs_of_order(demo_bundle) if r["label"].startswith("B"))
    forge(demo_bundle, label, lambda s: s.update(disturbed=not s["disturbed"]))
    both_refuse(demo_bundle, f"data/runs/{label}.json: [derived] interference.disturbed")


def test_a_steal_count_edited_is_refused_by_both(demo_bundle):
    run = next(r for r in runs_of_order(demo_bundle) if not r["interference"]["disturbed"])
    # steal over the whole loop and the tick it may settle in, on the worker's CPU: the most physics
    # allows, far past the bound however short the loop (a fast machine's loop may be under a tick)
    hz, cores = run["interference"]["user_hz"], run["machine"]["cores"]
    ticks = int((run["wall_s"] + C.TICK_S) * hz)
    forge(demo_bundle, run["label"], lambda s: s.update(cpu=s["cpu"] or 0, cpu_steal_ticks=ticks,
                                                     steal_ticks=max(ticks, s["steal_ticks"])))
    both_refuse(demo_bundle, f"data/runs/{run['label']}.json: [derived] interference.")
    # past what the loop's wall allows on every CPU the machine has: physics
    forge(demo_bundle, run["label"], lambda s: s.update(steal_ticks=2 * cores * ticks + hz))
    both_refuse(demo_bundle, f"data/runs/{run['label']}.json: [physics] interference.steal_ticks")


def test_absent_is_accepted_only_as_a_whole_earlier_generation(demo_bundle):
    """A forger who strips the section from the runs it would lose: refused while any record, or
    campaign.json, is of the current generation."""
    label = runs_of_order(demo_bundle)[0]["label"]
    forge(demo_bundle, label, lambda s: s.clear())  # emptied: keys missing
    both_refuse(demo_bundle, f"data/runs/{label}.json: [parsing] interference.")
    tamper.edit_json(C.run_path(label), lambda r: r.pop("interference"))(demo_bundle)
    tamper.rederive(demo_bundle)
    tamper.reseal(demo_bundle)
    both_refuse(demo_bundle, f"data/runs/{label}.json: [parsing] interference: missing")
    # relabelled as a run/v4 record: the checkers read the current generation only
    tamper.edit_json(C.run_path(label), lambda r: r.update(schema="abba-harness/run/v4"))(demo_bundle)
    tamper.reseal(demo_bundle)
    both_refuse(demo_bundle, f'data/runs/{label}.json: [parsing] schema "abba-harness/run/v4": this checker reads')


def test_a_whole_earlier_generation_is_refused(demo_bundle):
    """Every record relabelled run/v4 and stripped of its readings, as an earlier harness wrote
    them: the checkers read only the current generation (contract.PREVIOUS_SCHEMAS is empty)."""
    def older(label, record):
        record["schema"] = "abba-harness/run/v4"
        record.pop("interference", None)
    tamper.edit_runs(older)(demo_bundle)
    tamper.edit_json(C.CAMPAIGN_JSON, lambda c: c.pop("interference"))(demo_bundle)
    tamper.rederive(demo_bundle)
    tamper.reseal(demo_bundle)
    for name, result in (("harness verify", harness("verify", demo_bundle)), ("rehash.py", rehash(demo_bundle))):
        assert result.returncode in (1, 2) and "abba-harness/run/v4" in result.stdout + result.stderr, \
            (name, result.stdout[-2000:], result.stderr[-2000:])


def test_bounds_stripped_from_campaign_json_are_refused(demo_bundle):
    tamper.edit_json(C.CAMPAIGN_JSON, lambda c: c.pop("interference"))(demo_bundle)
    tamper.rederive(demo_bundle)
    tamper.reseal(demo_bundle)
    both_refuse(demo_bundle, "FAIL data/campaign.json: [identity] interference missing, but the run records are of "
                             + C.SCHEMAS["run"])
