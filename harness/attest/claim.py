"""The in-toto Statement v1 a signer signs: its subject is the bundle (its folder name and
digest, the SHA-256 of `tagmanifest-sha256.txt`), its predicate the claim the bundle makes,
derived from the bundle's own records by `predicate()`: when signing, and again when
verifying, where the two are compared field by field (all but `signed_at`, the signer's own
clock). So a signature can neither move to another bundle nor keep a claim the bundle no
longer makes."""
from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any, Optional

from harness import outcomes
from harness.records import to_json

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://github.com/abba-harness/abba-harness/attestation/claim/v1"
NOT_COMPARED = ("signed_at",)  # the signer's clock: shown, never compared


def _iso(epoch) -> str | None:
    if not isinstance(epoch, (int, float)) or isinstance(epoch, bool):
        return None
    return dt.datetime.fromtimestamp(epoch, dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _object(value) -> dict:
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class ParityClaim:
    identical: bool
    agree: bool
    tolerance: Optional[dict]  # comparison.json's parity.tolerance, as JSON


@dataclass(frozen=True)
class ReproducedClaim:
    original_digest: Optional[str]
    verdict: str


@dataclass(frozen=True)
class Predicate:
    """The claim a bundle makes (the statement's predicate, less the signer's signed_at)."""
    campaign: str
    revisions: dict  # variant -> SHA
    status: str
    verdict: str  # the verdict word, or what the exit code says instead (campaign failed, parity mismatch)
    exit_code: int
    ratio: Optional[float]
    ci95: Optional[list]
    parity: ParityClaim
    machine: str
    harness_version: Any  # environment.json's, as the bundle has it
    ended_at: Optional[str]
    reproduction: Optional[ReproducedClaim]


def predicate(bundle) -> Predicate:
    """What the bundle claims, from its records. bundle: a harness.bundle.read.Bundle (loaded
    through the one reader; the caller verified it, or compares this with a signed claim)."""
    comparison, campaign = bundle.comparison, bundle.campaign
    stats, parity = comparison.stats, comparison.parity
    code = outcomes.exit_code(comparison)
    word = {outcomes.FAILED: "campaign failed", outcomes.PARITY: "parity mismatch",
            outcomes.UNUSABLE: "unusable"}.get(code, stats.verdict)
    reproduced = bundle.reproduction
    return Predicate(
        campaign=campaign.name,
        revisions={v: campaign.sha(v) for v in ("base", "candidate")},
        status=comparison.status,
        verdict=word,
        exit_code=code,
        ratio=stats.paired.geomean_ratio,
        ci95=stats.paired.ci95,
        parity=ParityClaim(identical=parity.identical, agree=parity.agree, tolerance=to_json(parity.tolerance)),
        machine=bundle.machine.text(),
        harness_version=_object(bundle.environment).get("harness_version"),
        ended_at=_iso(bundle.runner.ended_at),
        reproduction=None if reproduced is None else ReproducedClaim(original_digest=reproduced.original.digest,
                                                                     verdict=reproduced.verdict),
    )


def statement(name: str, digest: str, claim: Predicate | dict, signed_at: str | None = None) -> dict:
    """The in-toto Statement of a bundle's claim (a Predicate, or its JSON)."""
    signed_at = signed_at or dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
    return {"_type": STATEMENT_TYPE,
            "subject": [{"name": name, "digest": {"sha256": digest}}],
            "predicateType": PREDICATE_TYPE,
            "predicate": {**to_json(claim), "signed_at": signed_at}}


def encode(doc: dict) -> bytes:
    """The statement's bytes as signed (the envelope's payload)."""
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def differences(signed: dict, derived: dict, prefix: str = "") -> list[tuple[str, object, object]]:
    """(field, signed value, the bundle's value) for every field that differs, but the ones
    never compared."""
    out = []
    for key in sorted(set(signed) | set(derived)):
        if not prefix and key in NOT_COMPARED:
            continue
        a, b = signed.get(key, "<absent>"), derived.get(key, "<absent>")
        if isinstance(a, dict) and isinstance(b, dict):
            out += differences(a, b, f"{prefix}{key}.")
        elif a != b or type(a) is not type(b):
            out.append((f"{prefix}{key}", a, b))
    return out


def summary(claim: Predicate) -> str:
    """`demo: improved, candidate/base 0.8123 [0.8011, 0.8240], parity identical, ...` for humans."""
    parts = [f"{claim.campaign}: {claim.verdict}"]
    ci = claim.ci95
    if claim.ratio is not None and ci is not None and len(ci) == 2:
        parts.append(f"candidate/base {claim.ratio:.4f} [{ci[0]:.4f}, {ci[1]:.4f}]")
    parity = claim.parity
    parts.append("parity identical" if parity.identical else "outputs agree within a tolerance"
                 if parity.agree else "parity mismatch")
    parts.append(", ".join(f"{v} {str(sha)[:12]}" for v, sha in claim.revisions.items()))
    if claim.reproduction is not None:
        parts.append(f"a reproduction of {str(claim.reproduction.original_digest)[:16]}...: "
                     f"{claim.reproduction.verdict}")
    return ", ".join(parts)
