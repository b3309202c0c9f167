"""The claim as JSON, for dashboards: `harness summary --format json` (the claim a signature
signs, harness/attest/claim.py's predicate, with what the Markdown shows beside it; schema
contract.SCHEMAS["claim"], not part of a bundle) and `--format benchmark-action`
(github-action-benchmark's custom format, `customSmallerIsBetter`: a list of {name, unit,
value, range, extra}).

Both are ASCII (every other character a \\u escape) and `<`, `>`, `&` are \\u escapes too, so no
byte of them is a terminal control or markup wherever the text is pasted. In `json` bundle text
is data (a dashboard escapes it as it shows it); in `benchmark-action` the names and extras are
Markdown-inert already (harness/render/text.py `cell`): github-action-benchmark puts them into
its own Markdown comment and chart page as they are."""
from __future__ import annotations

import json

from harness import contract as C
from harness.records import to_json
from harness.render.text import cell


def dumps(doc) -> str:
    """ASCII JSON with `<`, `>` and `&` escaped: the same document to any parser."""
    text = json.dumps(doc, indent=2, sort_keys=False, ensure_ascii=True, allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026") + "\n"


def claim(bundle, signer: str | None = None, judgement=None) -> dict:
    """The claim as one JSON object (SCHEMAS["claim"]): the attestation predicate, the bundle's
    folder name and digest, how the rounds stopped, the worst items, wall means, instruction
    counts, every metric's entry and warnings, all read from the verified bundle."""
    from harness import outcomes
    from harness.attest.claim import predicate

    c = bundle.comparison
    stats = c.stats
    seq = stats.sequential
    per = stats.per_item
    ins = c.instructions
    wall = c.wall
    pythons = {v: sorted({f"{r.python.implementation} {r.python.version}" for r in bundle.runs
                          if r.ok and r.variant == v and r.python is not None}) for v in ("base", "candidate")}
    return {
        "schema": C.SCHEMAS["claim"],
        "bundle": {"name": bundle.path.name, "digest": bundle.digest},
        "claim": to_json(predicate(bundle)),
        "signed_by": signer,
        "rounds": {"n": stats.rounds.n,
                   "stopped": seq.stopped if seq is not None else "fixed count",
                   "first_look": seq.first if seq is not None else None,
                   "cap": seq.cap if seq is not None else None},
        "question": {"asked": stats.question, "margin": stats.margin, "answer": outcomes.answer_word(stats)},
        "band": stats.band, "claim_band": stats.claim_band,
        "family": None if stats.family is None else {
            "members": stats.family.members, "alpha": stats.family.alpha, "counts": stats.family.counts,
            "benchmarks": [{"id": m.id, "verdict": m.verdict, "ratio": m.ratio, "ci95": m.ci95,
                            "decided_at": m.decided_at} for m in stats.family.leading()]},
        "per_item": {"items": per.items if per else 0, "regressed": per.regressed if per else 0,
                     "improved": per.improved if per else 0, "band": per.band if per else None,
                     "worst": [{"id": r.id, "ratio": r.ratio, "ci95": r.ci95} for r in (per.table if per else [])]},
        "wall": {"base_mean_s": wall.base_mean_s, "candidate_mean_s": wall.candidate_mean_s, "speedup": wall.speedup},
        "instructions": None if ins is None else {"verdict": ins.verdict, "ratio": ins.ratio,
                                                  "change_pct": ins.change_pct},
        "metrics": [{k: getattr(m, k) for k in ("name", "unit", "of", "n", "base", "candidate", "ratio", "ci95",
                                                "band", "verdict")} for m in c.metrics],
        "parity": outcomes.parity_text(c),
        "python": pythons,
        "warnings": list(stats.warnings) + [w for w in [outcomes.disagreement(c)] if w],
        **({} if judgement is None else {"policy": judged(judgement)}),
    }


def judged(judgement) -> dict:
    """`summary --format json --policy FILE`: the bundle judged by the reviewer's policy, beside the
    claim (which stays the bundle's own, the predicate a signature signs)."""
    from harness import outcomes

    stats = judgement.comparison.stats
    return {"file": judgement.policy.path, "exit_code": outcomes.judged_line(judgement)[1],
            "verdict": stats.verdict, "verdict_reason": stats.verdict_reason, "band": stats.band,
            "refused": list(judgement.refused), "changed": list(judgement.changed)}


def claim_json(bundle, signer: str | None = None, judgement=None) -> str:
    return dumps(claim(bundle, signer, judgement))


def benchmark_action(bundle, signer: str | None = None) -> str:
    """github-action-benchmark's custom format (tool `customSmallerIsBetter`): the campaign's
    candidate/base ratio, each of the worst items' (contract.PER_ITEM_SHOWN at most), every other
    metric's ratio, and the candidate's mean timed wall in seconds; range the interval's half-width."""
    from harness.attest.claim import predicate

    said, c = predicate(bundle), bundle.comparison
    name, verdict, digest = cell(said.campaign, 64), cell(said.verdict, 64), bundle.digest

    def entry(what, value, unit, ci=None, note=""):
        row = {"name": what, "unit": unit, "value": value}
        if ci:
            row["range"] = f"\u00b1{(ci[1] - ci[0]) / 2:.4f}"
        extra = f"campaign verdict {verdict}" + (f"; interval {ci[0]:.4f} to {ci[1]:.4f}" if ci else "") + note
        row["extra"] = f"{extra}; bundle digest {digest}"
        return row

    out = []
    paired, per = c.stats.paired, c.stats.per_item
    if paired.geomean_ratio is not None:
        out.append(entry(name, paired.geomean_ratio, "ratio (candidate/base)", paired.ci95,
                         f"; {c.stats.rounds.n} rounds"))
    for row in per.table if per else []:
        out.append(entry(f"{name}/{cell(row.id, 120)}", row.ratio, "ratio (candidate/base)", row.ci95))
    for m in c.stats.family.leading() if c.stats.family else []:  # a suite: every benchmark, the changed first
        if m.ratio is not None:
            out.append(entry(f"{name}/{cell(m.id, 120)}", m.ratio, "ratio (candidate/base)", m.ci95,
                             f"; benchmark verdict {cell(m.verdict)}"))
    for m in c.other_metrics():
        if m.ratio is not None:
            out.append(entry(f"{name} {m.title}", m.ratio, "ratio (candidate/base)", m.ci95,
                             f"; {m.name} verdict {m.verdict}"))
    if c.wall.candidate_mean_s is not None:
        out.append(entry(f"{name} candidate mean timed wall", c.wall.candidate_mean_s, "s"))
    return dumps(out)
