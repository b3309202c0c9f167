"""`harness reproduce`: re-run the campaign a bundle records and say whether its claim held.

Checkers prove a bundle consistent; only a re-run tests the claim. The re-run uses the
repository's campaign file (byte for byte the bundle's campaign.yaml), the recorded
overrides and the recorded SHAs, seals a new bundle, and writes into it a receipt
(`data/receipts/reproduction.json`) comparing it with the original:

* outputs: per variant, the first ok run of each bundle, item by item (the items both
  have) and field by field, by digest. On machines of one class (CPU model, vector ISA,
  BLAS build: what float kernels depend on) any difference fails; on another class, or
  when a bundle does not record its class, differences in float fields only are expected
  non-portability, while integer and bool fields (counts, ids, tokens, flags), dtypes,
  shapes and recorded errors must still agree.
* timing: reproduced when the 95% interval of the ratio of the two ratios (re-run over
  original) holds 1. Each bundle's interval is read as a symmetric interval of the log
  ratio, so its half-width holds that bundle's own t quantile and spread; the two bundles
  are independent, so the half-widths add in quadrature. A re-run of
  some items is held to the original's ratio re-derived over those items (timing.original;
  the claim over all of them is timing.claimed).

The pure functions here (judge_timing, scope, verdict) take parsed records; the machine
class is harness/environment.py's, output agreement harness/parity.py's; `reproduce` does
the running and sealing.
"""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from harness import records
from harness.bundle import read as bundlereader
from harness.engine import environment
from harness.comparison import parity
from harness.outcomes import REPRODUCTION_CODES

EXIT_CODES = REPRODUCTION_CODES


OUT = Path("out")  # where a default reproduction goes: the current folder's scratch, never evidence/


def default_name(bundle: Path) -> str:
    """The first default folder's name for BUNDLE's reproduction (REPORT.md names it too)."""
    return f"{bundle.absolute().name}.reproduction"


def fresh_out(bundle: Path) -> Path:
    """The default --out: out/BUNDLE.reproduction of the current folder, or the first free
    out/BUNDLE.reproduction-N. Never an existing folder, and never beside the bundle: a
    bundle is usually committed under evidence/, and a re-run written there would be
    committed and reported as evidence by accident."""
    first = OUT.absolute() / default_name(bundle)
    n, out = 1, first
    while os.path.lexists(out) or os.path.lexists(out.parent / f".{out.name}.lock"):
        n += 1
        out = first.parent / f"{first.name}-{n}"
    return out


class Refused(Exception):
    """Nothing was run: the bundle cannot be re-run as it was (one line, exit 2)."""


# --------------------------------------------------------------------------- bundles
def other_campaign(a: dict, b: dict) -> str | None:
    """Why two campaign.json records are not one campaign at one pair of SHAs, or None:
    outputs of different code are not comparable under these rules."""
    for what, path in (("name", ("name",)), ("base SHA", ("revisions", "base", "sha")),
                       ("candidate SHA", ("revisions", "candidate", "sha"))):
        x, y = a, b
        for key in path:
            x, y = x[key], y[key]
        if x != y:
            return f"{what} {x} vs {y}"
    return None


# --------------------------------------------------------------------------- timing
def claim(comparison: dict) -> dict:
    """A bundle's timing claim: the candidate/base ratio, its interval, the wall speed-up."""
    paired = (comparison.get("stats") or {}).get("paired") or {}
    return {"ratio": paired.get("geomean_ratio"), "ci95": paired.get("ci95"), "metric": paired.get("metric"),
            "items": paired.get("items"), "speedup": (comparison.get("wall") or {}).get("speedup")}


def claim_on(original: dict, ids: set[str]) -> dict:
    """The original's claim re-derived over some of its items: per-item speed-ups differ, so
    a spot check of N items is held to what the original measured on those N."""
    from harness.comparison import analysis, legacy

    runs = [{**r, "items": [it for it in r["items"] if it["id"] in ids]} for r in original["runs"]]
    v2 = original["comparison"].get("schema") == records.LEGACY_SCHEMAS["comparison"]
    analysed = (legacy.analyze_v2 if v2 else analysis.analyze)(runs, threshold=original["campaign"]["threshold"])
    return {**claim({"stats": analysed}), "speedup": None}


def ratio_text(c: dict) -> str:
    if c.get("ratio") is None or not c.get("ci95"):
        return "no interval"
    return f"{c['ratio']:.4g} [{c['ci95'][0]:.4g}, {c['ci95'][1]:.4g}]"


def judge_timing(original: dict, reproduction: dict) -> dict:
    """original, reproduction: claim() of each comparison.json. Reproduced when the 95%
    interval of reproduction ratio / original ratio holds 1."""
    import math

    out = {"original": original, "reproduction": reproduction, "ratio_of_ratios": None, "ci95": None}
    if not (original["ci95"] and reproduction["ci95"] and original["ratio"] and reproduction["ratio"]):
        return {**out, "reproduced": False, "reason": "a bundle has no candidate/base interval"}
    half = math.hypot(*(math.log(c["ci95"][1] / c["ci95"][0]) / 2 for c in (original, reproduction)))
    center = math.log(reproduction["ratio"] / original["ratio"])
    q, lo, hi = (round(math.exp(v), 6) for v in (center, center - half, center + half))
    held = lo <= 1 <= hi
    reason = (f"re-run/original {q:.4f} [{lo:.4f}, {hi:.4f}] (95% CI of the ratio of the two ratios) "
              f"{'holds' if held else 'excludes'} 1")
    return {**out, "ratio_of_ratios": q, "ci95": [lo, hi], "reproduced": held, "reason": reason}


# --------------------------------------------------------------------------- scope, verdict
def scope(original: dict, reproduction: dict) -> dict:
    """How much of the original campaign the re-run repeated, and what that costs the check."""
    orders = original["campaign"]["order"], reproduction["campaign"]["order"]
    plans = [f"{c['rounds']} rounds" if c.get("rounds") else c["order"]
             for c in (original["campaign"], reproduction["campaign"])]
    items = parity.items_run(original["runs"]), parity.items_run(reproduction["runs"])
    spot = len(orders[1]) < len(orders[0]) or items[1] < items[0]
    if spot:
        timed = claim(reproduction["comparison"])["items"]
        fewer = [f"{len(orders[1])} runs instead of {len(orders[0])} ({plans[1]} vs {plans[0]})"] \
            if len(orders[1]) < len(orders[0]) else []
        note = (f"spot check, weaker than the original: {', '.join(fewer + [f'{items[1]} of {items[0]} items'])}; "
                f"the new interval rests on {items[1] if timed is None else timed} timed items and "
                f"{len(orders[1])} runs only")
        if items[1] < items[0]:
            note += ", and is held to the original's interval on the same items"
    else:
        note = f"full re-run: {plans[1]}, {items[1]} of {items[0]} items"
    return {"order": orders[1], "order_original": orders[0], "items": items[1], "items_original": items[0],
            "spot_check": spot, "note": note}


def verdict(comparison: dict, outputs: dict, timing: dict) -> str:
    if comparison["status"] != "complete":
        return "run failed"
    if not outputs["agree"] or not comparison["parity"]["identical"]:
        return "outputs differ"
    return "reproduced" if timing["reproduced"] else "timing not reproduced"


def receipt(original: dict, reproduction: dict) -> dict:
    """The receipt from two loaded bundles (bundlereader.load), the divergence left empty."""
    from harness.comparison import analysis

    ma, mb = environment.machine(original["environment"]), environment.machine(reproduction["environment"])
    same, why = environment.same_class(ma, mb)
    outputs = parity.compare_outputs(original["runs"], reproduction["runs"], same)
    claimed = claim(original["comparison"])
    ran = {it["id"] for r in reproduction["runs"] if r["status"] == "ok" for it in r["items"]}
    everything = {it["id"] for r in original["runs"] for it in r["items"]}
    held_to = claimed if ran >= everything else claim_on(original, ran)
    timing = {**judge_timing(held_to, claim(reproduction["comparison"])), "claimed": claimed,
              "overloaded": analysis.overloaded([r for r in reproduction["runs"] if r["status"] == "ok"])}
    word = verdict(reproduction["comparison"], outputs, timing)
    return records.reproduction_receipt(
        campaign=original["campaign"]["name"],
        original={"digest": original["digest"], "started_at": original["runner"]["started_at"], "machine": ma},
        reproduction={"started_at": reproduction["runner"]["started_at"], "machine": mb},
        machines={"same_class": same, "why": why}, scope=scope(original, reproduction),
        outputs={**outputs, "divergence": []}, timing=timing, verdict=word, exit_code=EXIT_CODES[word])


def divergence_lines(rows: list[dict], most: int = 5) -> list[str]:
    return [f"  {r['run']} item {r['item']} field {r['field']}: {r.get('differing')} of {r.get('elements')} elements "
            f"differ, max abs {r.get('max_abs')}, max ulp {r.get('max_ulp')}" for r in rows[:most]]


def timing_text(timing: dict) -> str:
    held = f"claimed {ratio_text(timing['claimed'])}"
    if timing["original"] != timing["claimed"]:
        held += f" over {timing['claimed']['items']} items, {ratio_text(timing['original'])} over the same " \
                f"{timing['original']['items']} items"
    text = f"candidate/base {held}; reproduction {ratio_text(timing['reproduction'])} (95% CIs): {timing['reason']}"
    if timing["overloaded"]:
        text += (f"; warning: more work than cores was runnable during {', '.join(timing['overloaded'])}, "
                 "so other work competed with the re-run")
    return text


def outputs_text(outputs: dict) -> str:
    n = outputs["items"]
    if outputs["why"] == "identical":
        return f"identical ({n['compared']} items, {outputs['fields_compared']} fields)"
    return (f"{'agree' if outputs['agree'] else 'DIFFER'}: {outputs['why']} ({n['identical']} of {n['compared']} "
            "common items identical)")


# --------------------------------------------------------------------------- running
def campaign_for(original: dict, repo: Path, order: str | None, items: int | None, rounds: int | None = None,
                 campaign_file: Path | None = None):
    """The campaign as the bundle ran it, from the repository's campaign file (or the
    reviewer's --campaign FILE, never a bundle's), at the recorded SHAs, with the recorded
    overrides (and --order/--rounds/--items on top); a campaign of rounds gets a fresh
    shuffle. Overrides can only choose revisions, order, rounds, items and params (the
    spec refuses any other key), so nothing the bundle wrote becomes a command."""
    from harness.plan import spec

    recorded = original["campaign"]
    if not recorded["campaign_path"]:
        raise Refused("the bundle records no campaign_path to find its campaign in the repository")
    overrides = dict(recorded["overrides"])
    for variant in ("base", "candidate"):
        rev = recorded["revisions"][variant]
        if rev["rev"] != rev["sha"]:  # WORKTREE or a moved branch would name another commit now
            overrides[variant] = rev["sha"]
    if order is not None or rounds is not None:
        overrides.pop("order", None)
        overrides.pop("rounds", None)
    overrides.update(spec.parse_overrides(order=order, items=items, rounds=rounds))
    from harness.judge.verify import AnchorError, anchor, repository

    try:  # the repository's own campaign file, or the reviewer's: never one inside a bundle
        source = outside_bundles(Path(campaign_file)) if campaign_file is not None else \
            anchor(repository(repo), recorded["campaign_path"], "campaign_path")
    except AnchorError as exc:
        raise Refused(str(exc)) from None
    campaign = spec.load(source, overrides)
    pinned = {inp.name: inp.sha256 for inp in campaign.inputs}
    had = {name: r["sha256"] for name, r in original["inputs"]["inputs"].items()}
    if pinned != had:
        name = next(n for n in sorted(set(pinned) | set(had)) if pinned.get(n) != had.get(n))
        raise Refused(f"input '{name}' is pinned to {str(pinned.get(name))[:16]}... in {campaign.source}, the "
                      f"bundle ran {str(had.get(name))[:16]}...")
    return campaign


def outside_bundles(path: Path) -> Path:
    """--campaign FILE: a regular file that no evidence bundle holds."""
    from harness.judge.verify import AnchorError

    path = path.resolve()
    if not path.is_file():
        raise AnchorError(f"--campaign {path}: not a regular file")
    for folder in path.parents:
        if (folder / records.TAGMANIFEST).exists() or (folder / records.BAGIT).exists():
            raise AnchorError(f"--campaign {path}: lies inside the evidence bundle {folder}; give the "
                              "repository's own campaign file")
    return path


def plan_lines(campaign) -> list[str]:
    """What the re-run will execute, shown before anything runs: every command and entry
    point comes from the campaign file; the bundle's choices are the overrides."""
    lines = [f"campaign file: {campaign.source}"]
    for variant in ("base", "candidate"):
        lines.append(f"{variant}: revision {campaign.revision(variant).rev}")
    for cmd in campaign.build:
        lines.append(f"build command (in each revision's tree): {' '.join(cmd)}")
    for inp in campaign.inputs:
        if inp.build:
            lines.append(f"input builder for {inp.name} (only when {inp.path} is missing): {' '.join(inp.build)}")
    lines.append(f"entry point: {campaign.workload.entry} from {campaign.workload.path}")
    for name, target in campaign.stages.items():
        lines.append(f"stage {name}: {target}")
    chosen = ", ".join(f"{k} {v}" for k, v in sorted(campaign.overrides.items())) or "nothing"
    lines.append(f"the bundle chooses (revisions, order, rounds, items, params only): {chosen}")
    return lines


@dataclass
class Reproduction:
    out: Path
    digest: str
    receipt: dict
    comparison: dict


def reproduce(original: dict, campaign, out: Path, force: bool = False, progress=None) -> Reproduction:
    """Run the campaign into a private folder, derive the receipt, then seal the run's
    payload plus the receipt as a new bundle at out (published only once sealed)."""
    from harness.bundle import write as bundle
    from harness.engine.runner import Runner

    out = out.absolute()
    bundle.check_output(out, force)
    work = out.parent / f".{out.name}.run-{os.getpid()}"
    with bundle.OutputLock(out):
        try:
            outcome = Runner(campaign, work, force=True, progress=progress).run()
            new = bundlereader.load(work)
            result = receipt(original, new)
            shown = result["outputs"]["mismatches"]
            result["outputs"]["divergence"] = parity.divergence_across(shown, original["path"] / "data" / "arrays",
                                                         work / "data" / "arrays") if shown else []
            staging = bundle.Staging(out)
            try:
                os.rmdir(staging.root / "data")
                os.rename(work / "data", staging.root / "data")
                staging.write_json(records.REPRODUCTION, result)
                info = dict(line.split(": ", 1) for line in (work / records.BAG_INFO).read_text().splitlines())
                digest = staging.seal({k: v for k, v in info.items()
                                       if k == "External-Identifier" or k.startswith("Abba-")})
                staging.publish(force)
            except BaseException:
                staging.discard()
                raise
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return Reproduction(out, digest, result, outcome.comparison)
