"""A reviewer's own rules for judging a bundle: `harness compare|verify|summary BUNDLE --policy FILE`.

The campaign file is the author's (in a pull request, the pull request's): its band, its noise
floor and its rounds decide the bundle's own verdict. A reviewer who does not accept them writes
a policy file once and judges every bundle by it, whoever made it. The file (YAML or JSON: one
strict parser, the campaign loader's, bounded to MAX_BYTES, no aliases, no key twice, no key it
does not know, each value of its type) may hold:

    max_threshold: 0.05     # the widest equal band accepted: a wider one (the campaign's threshold or
                            # its noise floor) is re-judged at this one
    threshold: 0.02         # re-judge at exactly this band (the noise floor still widens it, if accepted)
    noise_floor: false      # a pinned noise floor may not widen the band (default true)
    min_rounds: 10          # fewer timed rounds: no claim (inconclusive)
    metrics: [wall, instructions]   # each must have been measured, else the bundle is refused
    disturbed: false        # a bundle with a disturbed run (steal, off its core) is refused (default true)
    sandbox: required       # every ok run must record that it ran sandboxed (default optional)

Re-judging is sound because no interval depends on the band (rules.decide reads the band only
to place the interval): a fixed count's 95% interval, the sequential interval valid at every
look at the round the campaign stopped (so at any band's stop), and the 97.5% interval at a cap
that time alone set. The verdict is decided again from the bundle's interval (and the run-level
ratio's guard, the claim band its load and drift measured, and the rounds without its disturbed
runs) against the reviewer's band; the same for the metrics judged against the threshold. What
the policy requires and the bundle lacks refuses it: outcomes.REFUSED (14), whatever its verdict.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness import contract as C
from harness import rules as R

if TYPE_CHECKING:
    from harness.bundle.model import Comparison

MAX_BYTES = 64 << 10
KEYS = ("max_threshold", "threshold", "noise_floor", "min_rounds", "metrics", "disturbed", "sandbox")
SANDBOX = ("required", "optional")


class PolicyError(ValueError):
    """A policy file that cannot be used; str() is one line naming the file, the key and the fix."""


@dataclass(frozen=True)
class Policy:
    path: str
    max_threshold: float | None = None
    threshold: float | None = None
    noise_floor: bool = True
    min_rounds: int | None = None
    metrics: tuple[str, ...] = ()
    disturbed: bool = True
    sandbox: str = "optional"


def load(path: str | Path) -> Policy:
    """The policy at path, strictly parsed; PolicyError (one line) for anything else."""
    from harness.files import NotReadable, read_regular
    from harness.plan.spec import SpecError, safe_yaml

    shown = str(path)
    try:
        raw = read_regular(Path(path), MAX_BYTES)
    except NotReadable as exc:
        raise PolicyError(f"{shown}: {exc}; a policy is a regular file of at most {MAX_BYTES} bytes") from None
    except OSError as exc:
        raise PolicyError(f"{shown}: cannot read the policy ({exc.strerror or exc})") from None
    try:
        data = safe_yaml(raw, shown)  # YAML's flow style is JSON: one parser for both
    except SpecError as exc:
        raise PolicyError(str(exc)) from None
    return parse(data, shown)


def parse(data: Any, shown: str) -> Policy:
    def fail(key: str, expected: str, got: Any = None) -> PolicyError:
        text = repr(got)
        got_text = f", got {text[:60]}{'...' if len(text) > 60 else ''}" if got is not None else ""
        return PolicyError("".join(ch if C.shown(ch) else ascii(ch)[1:-1]
                                   for ch in f"{shown}: {key}: expected {expected}{got_text}"))

    if data is None:
        data = {}
    if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
        raise fail("(top level)", "a mapping of the policy's keys (" + ", ".join(KEYS) + ")", data)
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise fail(unknown[0], "one of the policy's keys (" + ", ".join(KEYS) + ")")

    def band(key: str) -> float | None:
        value = data.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= C.MAX_BAND:
            raise fail(key, f"a band from 0 to {C.MAX_BAND} (0.02 is +-2%)", value)
        return float(value)

    def flag(key: str, default: bool) -> bool:
        value = data.get(key, default)
        if not isinstance(value, bool):
            raise fail(key, "true or false", value)
        return value

    rounds = data.get("min_rounds")
    if rounds is not None and (isinstance(rounds, bool) or not isinstance(rounds, int)
                               or not 1 <= rounds <= C.MAX_ROUNDS):
        raise fail("min_rounds", f"a count of rounds from 1 to {C.MAX_ROUNDS}", rounds)
    metrics = data.get("metrics", [])
    if not isinstance(metrics, list) or not all(m in C.METRIC_NAMES for m in metrics):
        raise fail("metrics", f"a list of metrics ({', '.join(C.METRIC_NAMES)})", metrics)
    sandbox = data.get("sandbox", "optional")
    if sandbox not in SANDBOX:
        raise fail("sandbox", " or ".join(SANDBOX), sandbox)
    return Policy(shown, max_threshold=band("max_threshold"), threshold=band("threshold"),
                  noise_floor=flag("noise_floor", True), min_rounds=rounds, metrics=tuple(dict.fromkeys(metrics)),
                  disturbed=flag("disturbed", True), sandbox=sandbox)


def sandboxed(run) -> bool:
    """Whether a run record says it ran sandboxed: its `sandbox` (the per-run record of issue 45's
    sandboxed worker) present and not saying none. A record without one (an earlier harness, or
    a launcher that had none) ran unsandboxed as far as anyone can tell."""
    box = getattr(run, "sandbox", None)
    if box is None:
        return False
    mode = box.get("mode") if isinstance(box, dict) else getattr(box, "mode", "sandboxed")
    return mode not in (None, "none", "unsandboxed", "off")


@dataclass
class Judgement:
    """A bundle judged by a policy: its comparison re-judged, what the policy refuses, and what changed."""
    policy: Policy
    comparison: Comparison  # the bundle's, with the verdicts re-judged under the policy
    refused: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)  # what the policy re-judged, in words

    @property
    def summary(self) -> str:
        """"judged by your policy FILE: ..." in one line."""
        head = f"judged by your policy {self.policy.path}"
        if self.refused:
            return f"{head}: refused: {'; '.join(self.refused)}"
        return f"{head}: " + ("; ".join(self.changed) if self.changed else "the bundle's own band and rounds hold")


def judge(bundle, policy: Policy) -> Judgement:
    """bundle: a verified harness.bundle.read.Bundle."""
    c = bundle.comparison
    stats = c.stats
    refused: list[str] = []
    for name in policy.metrics:
        if c.metric(name) is None:
            refused.append(f"it measured no {C.METRIC[name].title} (the policy requires metrics: "
                           f"{', '.join(policy.metrics)})")
    disturbed = list(stats.interference.disturbed) if stats.interference else []
    if not policy.disturbed and disturbed:
        refused.append(f"disturbed runs {', '.join(disturbed)} (the policy accepts none: disturbed: false)")
    if policy.sandbox == "required":
        bare = [r.label for r in bundle.runs if r.ok and not sandboxed(r)]
        if bare:
            refused.append(f"{len(bare)} run(s) recorded no sandbox ({', '.join(bare[:4])}"
                           f"{', ...' if len(bare) > 4 else ''}; the policy requires one: sandbox: required)")

    threshold = policy.threshold if policy.threshold is not None else stats.threshold
    floor = stats.floor if policy.noise_floor else None
    band = max(threshold, floor or 0.0)
    why = ([f"your threshold +-{100 * threshold:g}%"] if policy.threshold is not None else []) + \
        (["its noise floor not accepted"] if stats.floor and floor is None else [])
    if policy.max_threshold is not None and band > policy.max_threshold:
        band = policy.max_threshold
        threshold = min(threshold, policy.max_threshold)
        why.append(f"at most your +-{100 * band:g}%")
    band = R.sig10(band)
    changed = []
    if band != stats.band:
        changed.append(f"band +-{100 * band:.1f}% ({', '.join(why)}; the campaign's +-{100 * stats.band:.1f}%)")
    verdict, reason = stats.verdict, stats.verdict_reason
    claim_band = stats.claim_band
    if band != stats.band:
        verdict, reason, claim_band = rejudged(stats, band)
    if policy.min_rounds is not None and stats.rounds.n < policy.min_rounds:
        changed.append(f"{stats.rounds.n} round(s), fewer than your {policy.min_rounds}")
        verdict, reason = "inconclusive", (f"only {stats.rounds.n} round(s); the policy {policy.path} asks for at "
                                           f"least {policy.min_rounds}")
    if verdict != stats.verdict:
        changed.append(f"verdict {verdict} (the campaign's own: {stats.verdict})")
    new_stats = dataclasses.replace(stats, threshold=R.sig10(threshold), floor=floor, band=band,
                                    claim_band=claim_band, verdict=verdict, verdict_reason=reason)
    metrics = [rejudged_metric(m, band, R.sig10(threshold), new_stats, policy) for m in c.metrics]
    return Judgement(policy, dataclasses.replace(c, stats=new_stats, metrics=metrics), refused, changed)


def rejudged(stats, band: float) -> tuple[str, str, float]:
    """(verdict, reason, claim band) of the bundle's interval against another band: rules.decide
    with the run-level ratio's guard and the claim band of the noise the campaign was measured
    under (its rounds' typical deviation and a flagged drift, when load or drift raised it), then
    the rounds without its disturbed runs, as analysis and both checkers decide them."""
    paired = stats.paired
    seq = stats.sequential
    if paired.ci95 is None or (seq is None and stats.rounds.n < C.MIN_ROUNDS) or (seq is not None and
                                                                                  seq.stopped == "ended"):
        return stats.verdict, stats.verdict_reason, band  # no interval to judge: no claim either way
    drift = stats.drift
    cautions = bool(stats.load.overloaded) or bool(drift and drift.flagged)
    claim_band = band
    if cautions:
        moved = abs(math.log(drift.ratio.last / drift.ratio.first)) if drift and drift.flagged and drift.ratio else 0.0
        claim_band = R.sig10(max(band, stats.rounds.typical_deviation or 0.0, 1.0 - math.exp(-moved)))
    lo, hi = paired.ci95
    what = f"the {paired.metric} ratio over {stats.rounds.n} rounds, judged at the reviewer's band"
    verdict, reason = R.decide(lo, hi, band, paired.run_ratio, what, claim_band)
    itf = stats.interference
    if itf is not None and itf.disturbed_rounds and itf.without is not None:
        w = itf.without
        other = R.decide(w.ci95[0], w.ci95[1], band, None, "the rounds without the disturbed runs")[0] \
            if w.ci95 else "inconclusive"
        verdict, reason, _ = R.without_disturbed(verdict, reason, itf.disturbed_rounds, (other, w.rounds))
    return verdict, reason, claim_band


def rejudged_metric(m, band: float, threshold: float, stats, policy: Policy):
    """A metrics entry under the policy: the headline restates the re-judged stats; a metric judged
    against the campaign's threshold (contract.METRIC_DEFINITIONS band "threshold") is decided
    again at the policy's; instruction counts keep their own band (their runs' spread)."""
    if m.name == C.HEADLINE:
        return dataclasses.replace(m, band=band, verdict=stats.verdict, verdict_reason=stats.verdict_reason)
    if C.METRIC[m.name].band != "threshold" or m.band == threshold:
        return m
    if m.ci95 is None or (stats.sequential is None and m.n < C.MIN_ROUNDS):
        return dataclasses.replace(m, band=threshold)
    verdict, reason = R.decide(m.ci95[0], m.ci95[1], threshold, None, f"the {m.title} ratio, judged at the "
                                                                      "reviewer's band")
    if policy.min_rounds is not None and m.n < policy.min_rounds:
        verdict, reason = "inconclusive", f"only {m.n} round(s); the policy asks for at least {policy.min_rounds}"
    return dataclasses.replace(m, band=threshold, verdict=verdict, verdict_reason=reason)
