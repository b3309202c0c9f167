"""What the worker's sandbox costs a run (issue 45): a campaign run with the sandbox on and off
(`sandbox: off` appended), fresh and under a zygote, alternating, and per mode the medians over
its runs of the runner's own readings: a run's life (launch to reap), its part before the timed
loop (the wrapper, the interpreter, imports, setup, the warm-up) and after it.

    .venv/bin/python campaigns/probe/sandbox_cost.py campaigns/demo.yaml --repeat 2
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

MODES = {"fresh, sandbox on": {}, "fresh, sandbox off": {"sandbox": "off"},
         "zygote, sandbox on": {"launch": {"mode": "zygote", "preload": ["numpy"]}},
         "zygote, sandbox off": {"launch": {"mode": "zygote", "preload": ["numpy"]}, "sandbox": "off"}}


def variant_of(source: Path, changes: dict, where: Path) -> Path:
    data = yaml.safe_load(source.read_text())
    for step in (data.get("target") or {}).get("build") or []:
        for kind in ("tree", "patch"):
            if kind in step:
                step[kind] = str((source.parent / step[kind]).resolve())
    for key in ("golden", "noise_floor"):
        data.pop(key, None)
    if isinstance(data.get("workload"), dict) and data["workload"].get("path"):
        data["workload"]["path"] = str((source.parent / data["workload"]["path"]).resolve())
    for name, spec in (data.get("inputs") or {}).items():
        spec["path"] = str((source.parent / spec["path"]).resolve())
        spec.pop("build", None)
    data.update(changes)
    path = where / f"{source.stem}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def readings(bundle: Path) -> list[dict]:
    out = []
    for path in sorted((bundle / "data" / "runs").glob("*.json")):
        r = json.loads(path.read_text())
        if r["status"] == "ok":
            out.append({"life": r["process"]["wall_s"], "before": r["outside"]["before_s"],
                        "after": r["outside"]["after_s"], "loop": r["wall_s"]})
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("campaign", type=Path)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args(argv)
    seen: dict = {mode: [] for mode in MODES}
    with tempfile.TemporaryDirectory(prefix="sandbox-cost-") as tmp:
        for k in range(args.repeat):
            for mode, changes in MODES.items():
                where = Path(tmp) / f"{k}-{mode.replace(', ', '-').replace(' ', '_')}"
                where.mkdir()
                path = variant_of(args.campaign.resolve(), changes, where)
                done = subprocess.run([sys.executable, "-m", "harness", "run", str(path), "--out", str(where / "b")],
                                      capture_output=True, text=True)
                if not (where / "b").is_dir():
                    print(f"{mode}: no bundle: {done.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
                    continue
                seen[mode] += readings(where / "b")
    print("| mode | runs | a run's life (median) | before the loop | after the loop |")
    print("|:--|--:|--:|--:|--:|")
    for mode, rows in seen.items():
        if rows:
            med = {k: statistics.median(r[k] for r in rows) for k in ("life", "before", "after")}
            print(f"| {mode} | {len(rows)} | {1e3 * med['life']:.0f} ms | {1e3 * med['before']:.0f} ms | "
                  f"{1e3 * med['after']:.0f} ms |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
