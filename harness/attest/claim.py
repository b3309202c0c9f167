"""The in-toto Statement v1 a signer signs: its subject is the bundle (its folder name and
digest, the SHA-256 of `tagmanifest-sha256.txt`), its predicate the claim the bundle makes,
derived from the bundle's own records by `predicate()`: when signing, and again when
verifying, where the two are compared field by field (all but `signed_at`, the signer's own
clock). So a signature can neither move to another bundle nor keep a claim the bundle no
longer makes."""
from __future__ import annotations

import datetime as dt
import json

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


def predicate(bundle) -> dict:
    """What the bundle claims, from its records. bundle: a harness.bundle.read.Bundle (loaded
    through the one reader; the caller verified it, or compares this with a signed claim)."""
    comparison, campaign = bundle.comparison, bundle.campaign
    stats, parity = comparison.stats, comparison.parity
    code = outcomes.exit_code(comparison)
    word = {outcomes.FAILED: "campaign failed", outcomes.PARITY: "parity mismatch",
            outcomes.UNUSABLE: "unusable"}.get(code, stats.verdict)
    claim = {
        "campaign": campaign.name,
        "revisions": {v: campaign.sha(v) for v in ("base", "candidate")},
        "status": comparison.status,
        "verdict": word,
        "exit_code": code,
        "ratio": stats.paired.geomean_ratio,
        "ci95": stats.paired.ci95,
        "parity": {"identical": parity.identical, "agree": parity.agree, "tolerance": to_json(parity.tolerance)},
        "machine": bundle.machine.text(),
        "harness_version": _object(bundle.environment).get("harness_version"),
        "ended_at": _iso(bundle.runner.ended_at),
        "reproduction": None,
    }
    if bundle.reproduction is not None:
        claim["reproduction"] = {"original_digest": bundle.reproduction.original.digest,
                                 "verdict": bundle.reproduction.verdict}
    return claim


def statement(name: str, digest: str, claim: dict, signed_at: str | None = None) -> dict:
    signed_at = signed_at or dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
    return {"_type": STATEMENT_TYPE,
            "subject": [{"name": name, "digest": {"sha256": digest}}],
            "predicateType": PREDICATE_TYPE,
            "predicate": {**claim, "signed_at": signed_at}}


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


def summary(claim: dict) -> str:
    """`demo: improved, candidate/base 0.8123 [0.8011, 0.8240], parity identical, ...` for humans."""
    parts = [f"{claim.get('campaign')}: {claim.get('verdict')}"]
    ci = claim.get("ci95")
    if isinstance(claim.get("ratio"), (int, float)) and isinstance(ci, list) and len(ci) == 2 \
            and all(isinstance(x, (int, float)) for x in ci):
        parts.append(f"candidate/base {claim['ratio']:.4f} [{ci[0]:.4f}, {ci[1]:.4f}]")
    parity = _object(claim.get("parity"))
    parts.append("parity identical" if parity.get("identical") else "outputs agree within a tolerance"
                 if parity.get("agree") else "parity mismatch")
    revs = _object(claim.get("revisions"))
    parts.append(f"base {str(revs.get('base'))[:12]}, candidate {str(revs.get('candidate'))[:12]}")
    if isinstance(claim.get("reproduction"), dict):
        parts.append(f"a reproduction of {str(claim['reproduction'].get('original_digest'))[:16]}...: "
                     f"{claim['reproduction'].get('verdict')}")
    return ", ".join(parts)
