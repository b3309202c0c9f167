"""Signing a bundle, and checking its attestation against a trust file: one line per
outcome, naming the cause and what to do.

- `sign(bundle, key)`: the attestation of a bundle that verifies, written beside it;
- `check(bundle, trust)`: an Outcome (absent, present but not checked, verified, failed,
  unusable) with the line to print: `harness verify --trust` and `harness compare --trust`;
- `signer_line(bundle, trust)`: who signed a verified bundle, for `report` and `summary`
  (harness/judge/survey.py): the signer's text, None when the bundle has no attestation,
  AttestError (one line) when its signature does not hold or the trust file cannot be used."""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from harness import outcomes
from harness.attest import MAX_ATTESTATION_BYTES, NAMESPACE, SUFFIX, AttestError
from harness.records import to_json

if TYPE_CHECKING:
    from harness.attest import claim as claim_


def attestation_path(bundle: str | os.PathLike) -> Path:
    """BUNDLE.intoto.json: beside the bundle's folder, never inside (the bag stays valid BagIt)."""
    path = Path(bundle)
    if path.name in ("", ".", ".."):
        path = path.resolve()
    return path.with_name(path.name + SUFFIX)


def subject_name(bundle: str | os.PathLike) -> str:
    path = Path(bundle)
    return (path.resolve() if path.name in ("", ".", "..") else path).name


@dataclass
class Signed:
    path: Path
    digest: str
    statement: dict
    claim: claim_.Predicate  # the statement's predicate, as signed (less signed_at)


def sign(bundle: str | os.PathLike, key, verified, out: str | os.PathLike | None = None,
         force: bool = False) -> Signed:
    """Write the attestation of bundle, signed with key (keys.SigningKey), at out (default
    BUNDLE.intoto.json): only for a bundle that verifies (verified: the caller's verify report
    of it, harness.judge.verify; attest sits below the judge and never calls it), never over an
    existing file unless force, never half-written."""
    from harness.attest import claim, dsse
    from harness.bundle import read
    from harness.files import dumps_json

    bundle = Path(bundle)
    target = Path(out) if out else attestation_path(bundle)
    if not force and os.path.lexists(target):
        raise AttestError(f"{target} exists; --force replaces it", unusable=True)
    if verified.unusable:
        raise AttestError(verified.unusable, unusable=True)
    if verified.problems:
        raise AttestError(f"{bundle} does not verify ({len(verified.problems)} problem(s), the first: "
                          f"{verified.problems[0]}); a bundle that does not verify is never signed")
    try:
        loaded = read.load(bundle)
        derived = claim.predicate(loaded)
    except read.BundleError as exc:
        raise AttestError(str(exc), unusable=True) from None
    if loaded.digest is None:
        raise AttestError(f"{bundle} is not sealed (no tagmanifest-sha256.txt)", unusable=True)
    doc = claim.statement(subject_name(bundle), loaded.digest, derived)
    data = dumps_json(dsse.envelope(claim.encode(doc), key)).encode()
    _write(target, data, force)
    return Signed(target, loaded.digest, doc, derived)


def _write(path: Path, data: bytes, replace: bool) -> None:
    """Through a temporary file in the same folder: renamed over path (replace), or linked
    to it (not replace: fails when path appeared meanwhile), so nothing is half-written."""
    import tempfile

    from harness.files import _UMASK, WriteFailed

    try:
        _write_through(path, data, replace, tempfile, _UMASK)
    except WriteFailed:
        raise
    except OSError as exc:  # a full disk, a read-only folder: one line, nothing half-written
        raise WriteFailed(path, exc, fix=f"free space (or make {path.parent} writable) and sign again "
                                         "(`harness sign`); the bundle is untouched") from None


def _write_through(path: Path, data: bytes, replace: bool, tempfile, umask: int) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~umask)  # mkstemp's 0600 would hide the attestation from reviewers
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if replace:
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)
            except FileExistsError:
                raise AttestError(f"{path} exists; --force replaces it", unusable=True) from None
            os.unlink(tmp)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


# --- verifying --------------------------------------------------------------------------
ABSENT, PRESENT, VERIFIED, FAILED, UNUSABLE = "absent", "present", "verified", "failed", "unusable"


@dataclass
class Outcome:
    """What became of an attestation: state (absent, present: not checked for want of a trust
    file, verified, failed, unusable: the trust file cannot be used), the line to print, and
    for a verified one who signed."""

    state: str
    line: str | None = None
    path: Path | None = None
    principal: str | None = None
    key: str | None = None  # "ssh-ed25519 SHA256:..."
    notes: tuple[str, ...] = ()

    @property
    def exit_code(self) -> int:
        return {FAILED: outcomes.PROBLEMS, UNUSABLE: outcomes.UNUSABLE}.get(self.state, outcomes.OK)

    @property
    def short(self) -> str | None:
        """For compare and report: `signed by P (...)`, `attestation present, not verified`, ..."""
        if self.state == VERIFIED:
            return f"signed by {self.principal} ({self.key})"
        if self.state == PRESENT:
            return "attestation present, not verified"
        if self.state in (FAILED, UNUSABLE):
            return f"attestation does not verify: {self.line}"
        return None


def check(bundle: str | os.PathLike, trust: str | os.PathLike | None = None,
          attestation: str | os.PathLike | None = None, intact: bool = True, optional: bool = False,
          rederive: bool = True) -> Outcome:
    """The attestation of bundle (BUNDLE.intoto.json unless attestation names another
    file) against the trust file. intact: whether the bundle itself verified (the caller
    ran `harness verify`'s checks); a bundle that does not is never "signed by". optional:
    a missing attestation is ABSENT even with trust (`harness report` over every bundle).
    rederive: the signed claim is compared with the claim today's reader derives from the
    bundle; False for a bundle of an earlier generation (`verify --legacy`), which today's
    reader does not read: the signature and its subject digest (every byte) alone, said so.

    Without trust an attestation is only reported present, never trusted. With trust, one
    that is missing, refused or does not hold is FAILED (exit 1); a trust file that cannot
    be used is UNUSABLE (exit 2)."""
    path = Path(attestation) if attestation else attestation_path(bundle)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        if (trust is None or optional) and attestation is None:
            return Outcome(ABSENT, path=path)
        return Outcome(FAILED, f"attestation: none at {path}: the bundle is not signed (`harness sign BUNDLE "
                               "--key KEY` signs it)", path)
    except OSError as exc:
        return Outcome(FAILED, f"attestation: {path}: cannot be read ({exc.strerror or exc})", path)
    if stat.S_ISLNK(st.st_mode):
        return Outcome(FAILED if trust is not None else PRESENT,
                       f"attestation: {path} is a symlink, refused (an attestation must be a regular file)", path)
    if trust is None:
        return Outcome(PRESENT, f"attestation: present ({path}), not verified: give --trust FILE", path)
    from harness.attest import keys

    try:
        trusted = keys.load_trust(trust)
    except AttestError as exc:
        return Outcome(UNUSABLE, str(exc), path)
    notes = tuple(trusted.notes)
    try:
        return _check(Path(bundle), path, trusted, intact, notes, rederive)
    except ImportError as exc:  # a declared dependency, but an environment may lack it
        if not (exc.name or "").startswith("cryptography"):
            raise
        return Outcome(UNUSABLE, f"checking a signature needs the cryptography package ({exc}): pip install "
                                 "cryptography", path, notes=notes)
    except AttestError as exc:
        return Outcome(UNUSABLE if exc.unusable else FAILED, f"attestation: {path}: {exc}", path, notes=notes)


def _check(bundle: Path, path: Path, trusted, intact: bool, notes: tuple, rederive: bool = True) -> Outcome:
    from harness import contract as C, rehash
    from harness.attest import claim, dsse
    from harness.bundle import read
    from harness.files import NotReadable, read_regular

    try:
        raw = read_regular(path, MAX_ATTESTATION_BYTES)
    except NotReadable as exc:
        if str(exc).startswith("larger than"):
            raise AttestError(f"{exc} (contract.MAX_ATTESTATION_BYTES; an attestation is a few KiB): refused "
                              "unread; sign the bundle again (`harness sign BUNDLE --key KEY --force`)") from None
        raise AttestError(str(exc)) from None
    except OSError as exc:
        raise AttestError(f"cannot be read ({exc.strerror or exc})") from None
    try:
        envelope = dsse.parse(C.parse_json(raw))
    except C.JSONRefused as exc:
        raise AttestError(f"not a DSSE envelope: invalid JSON ({exc})") from None
    message = dsse.pae(envelope.payload_type, envelope.payload)
    usable = [s for s in trusted.signers if s.refusal() is None]
    signer = next((s for keyid, sig in envelope.signatures for s in candidates(usable, keyid)
                   if s.key.verify(sig, message)), None)
    if signer is None:
        return Outcome(FAILED, _who_failed(envelope, trusted, message), path, notes=notes)
    who, key = signer.principals, str(signer.key)
    fail = lambda text: Outcome(FAILED, f"signature by {who} ({key}): {text}", path, notes=notes)  # noqa: E731
    try:
        doc = C.parse_json(envelope.payload)
    except C.JSONRefused as exc:
        return fail(f"the signed payload is not JSON ({exc})")
    subject = doc.get("subject") if isinstance(doc, dict) else None
    if not isinstance(doc, dict) or doc.get("_type") != claim.STATEMENT_TYPE:
        return fail(f"the signed payload is not an in-toto Statement v1 ({claim.STATEMENT_TYPE})")
    if doc.get("predicateType") != claim.PREDICATE_TYPE or not isinstance(doc.get("predicate"), dict):
        return fail(f"predicateType {doc.get('predicateType')!r} is not this harness's claim ({claim.PREDICATE_TYPE})")
    if not (isinstance(subject, list) and len(subject) == 1 and isinstance(subject[0], dict)
            and isinstance(subject[0].get("digest"), dict) and isinstance(subject[0]["digest"].get("sha256"), str)):
        return fail("the statement's subject is not one bundle with a sha256 digest")
    signed_digest, signed_name = subject[0]["digest"]["sha256"], subject[0].get("name")
    if not intact:
        return fail("the bundle does not verify (problems above): it changed after it was signed, and a signature "
                    "vouches only for an intact bundle")
    if not rederive:
        try:
            digest = read.digest(bundle)
        except read.BundleError as exc:
            raise AttestError(str(exc), unusable=True) from None
        if signed_digest != digest:
            return fail(f"signed for another bundle ({signed_name!r}, digest {signed_digest[:16]}...), not this one "
                        f"(digest {str(digest)[:16]}...)")
        return Outcome(VERIFIED, f"signed by {who} ({key}): verified over this bundle's digest, every byte (the "
                                 "signed claim is not re-derived: today's reader does not read an earlier "
                                 f"generation's bundle; signed at {doc['predicate'].get('signed_at')} by the "
                                 "signer's clock)", path, who, key, notes)
    try:
        loaded = read.load(bundle)
        digest, derived = loaded.digest, claim.predicate(loaded)
    except read.BundleError as exc:
        raise AttestError(str(exc), unusable=True) from None
    differ = claim.differences(doc["predicate"], to_json(derived))
    if signed_digest != digest:
        if not differ:
            return fail(f"signed for digest {signed_digest[:16]}..., this bundle's is {str(digest)[:16]}... although "
                        "it makes the same claim: the bundle changed (was re-sealed) after it was signed; check the "
                        "bundle that was signed, or have it signed again")
        return fail(f"signed for another bundle ({signed_name!r}, digest {signed_digest[:16]}...), not this one "
                    f"(digest {str(digest)[:16]}...): an attestation moved from another bundle; this bundle "
                    "itself is not signed")
    if differ:
        field, said, has = differ[0]
        more = f" (and {len(differ) - 1} more field(s))" if len(differ) > 1 else ""
        return fail(f"the signed claim no longer matches the bundle: {field} is {rehash.short(said)} in the "
                    f"attestation, {rehash.short(has)} in the bundle{more}; a stale claim (`harness sign --force` "
                    "signs what the bundle says)")
    return Outcome(VERIFIED, f"signed by {who} ({key}): verified (subject digest and claim match this bundle; "
                             f"signed at {doc['predicate'].get('signed_at')} by the signer's clock)",
                   path, who, key, notes)


def candidates(signers: list, keyid: str | None) -> list:
    """The trusted signers one signature is checked against, one per distinct key: those whose
    key the signature's keyid names, or, with no keyid, every one; at most
    contract.MAX_KEYS_PER_SIGNATURE (past it, AttestError: refused before any check)."""
    from harness import contract as C

    picked, seen = [], set()
    for signer in signers:
        if (keyid is None or signer.key.fingerprint == keyid) and signer.key.blob not in seen:
            seen.add(signer.key.blob)
            picked.append(signer)
    if len(picked) > C.MAX_KEYS_PER_SIGNATURE:
        raise AttestError(f"a signature without a keyid would be checked against {len(picked)} trusted keys, more "
                          f"than the {C.MAX_KEYS_PER_SIGNATURE} a check tries (contract.MAX_KEYS_PER_SIGNATURE): "
                          "refused unchecked; sign the bundle again with `harness sign` (it names the key's "
                          "fingerprint as keyid)")
    return picked


def _who_failed(envelope, trusted, message: bytes) -> str:
    """No usable trusted key verifies a signature: say whose key the envelope names, and why
    that one does not count."""
    for keyid, sig in envelope.signatures:
        if keyid is None:
            continue
        holders = trusted.holding(keyid)
        for signer in candidates([s for s in holders if s.refusal()], keyid):
            refusal = signer.refusal()
            if signer.key.verify(sig, message):
                return (f"signature: made by the key of {signer.principals} (ssh-ed25519 {keyid}), but "
                        f"{trusted.path}:{signer.line} {refusal}")
        if holders:
            return (f"signature: not made by the key of {holders[0].principals} (ssh-ed25519 {keyid}) that its "
                    "keyid names: signed with another key, or the envelope was altered; have the bundle signed "
                    "again with that key")
        return (f"signature: made with ssh-ed25519 {keyid}, a key no principal in {trusted.path} holds (unknown "
                f"principal): add its public key there only if you trust its holder to sign for "
                f"{NAMESPACE}")
    return (f"signature: no key in {trusted.path} verifies it, and the envelope names no keyid (unknown principal, "
            "or another key)")


def signer_line(bundle: str | os.PathLike, trust: str | os.PathLike) -> Optional[str]:
    """Who signed a bundle that verifies (the caller verified it: harness/judge/survey.py
    does), as `report` and `summary` show it: "PRINCIPAL (ssh-ed25519 SHA256:...)". None when
    no attestation lies beside the bundle. AttestError, one line, when its signature does not
    hold (unusable=False: the command exits 1) or the trust file cannot be used (unusable=True:
    exit 2)."""
    outcome = check(bundle, trust, optional=True)
    if outcome.state == VERIFIED:
        return f"{outcome.principal} ({outcome.key})"
    if outcome.state in (FAILED, UNUSABLE):
        raise AttestError(outcome.line or f"the attestation: {outcome.state}", unusable=outcome.state == UNUSABLE)
    return None


def presence(bundle: str | os.PathLike) -> Optional[str]:
    """Without a trust file: "attestation present, not verified" when one lies beside the
    bundle (never trusted), else None."""
    return "attestation present, not verified" if os.path.lexists(attestation_path(bundle)) else None
