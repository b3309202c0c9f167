"""`harness sign BUNDLE --key KEY [--out FILE] [--force]`: sign the claim a verified bundle
makes (harness/attest): an in-toto Statement in a DSSE envelope at BUNDLE.intoto.json,
beside the bundle, never inside it.

Exit codes: 0 signed, 1 the bundle does not verify (nothing signed), 2 unusable input (a
missing, unreadable or passphrase-protected key, an attestation that exists without
--force), 10 the attestation could not be written (a full disk: nothing half-written). The
helpers below serve `run --sign` and `reproduce --sign`."""
from __future__ import annotations

from harness import outcomes
from harness.commands import error

HELP = "sign a verified bundle's claim with an OpenSSH Ed25519 key (BUNDLE.intoto.json beside it)"


def add_parser(sub) -> None:
    p = sub.add_parser("sign", help=HELP, description=HELP + ". Exit 0 signed, 1 the bundle does not verify, "
                       "2 unusable key or input, 10 the attestation could not be written (a full disk).")
    p.add_argument("bundle", metavar="BUNDLE", help="a sealed bundle folder")
    p.add_argument("--key", required=True, metavar="KEY",
                   help="an OpenSSH Ed25519 private key file without a passphrase (`ssh-keygen -t ed25519`)")
    p.add_argument("--out", metavar="FILE", help="where to write the attestation (default: BUNDLE.intoto.json)")
    p.add_argument("--force", action="store_true", help="replace an existing attestation")
    p.set_defaults(func=main)


def main(args) -> int:
    from harness.attest import AttestError, claim, keys
    from harness.attest.check import sign
    from harness.files import WriteFailed
    from harness.judge.verify import verify

    try:
        key = keys.load_private(args.key)
        signed = sign(args.bundle, key, verify(args.bundle), out=args.out, force=args.force)
    except AttestError as exc:
        return error("sign", exc, code=outcomes.UNUSABLE if exc.unusable else outcomes.PROBLEMS)
    except WriteFailed as exc:  # a full disk: no attestation, not part of one
        return error("sign", exc.line(), code=outcomes.WRITE_FAILED)
    from harness.render.text import term

    print(term(f"signed: {signed.path} (ssh-ed25519 {key.public.fingerprint}) for {args.bundle}, "
               f"digest {signed.digest}"))
    print(f"claim: {term(claim.summary(signed.claim))}")
    return outcomes.OK


def unusable_trust(command: str, trust) -> int:
    """For `compare`, `report` and `summary --trust`, before any bundle is judged: 0, or 2
    after one error line when the trust file cannot be used (not one line per bundle)."""
    from harness.attest import AttestError, keys

    if trust is None:
        return outcomes.OK
    try:
        keys.load_trust(trust)
    except AttestError as exc:
        return error(command, exc, code=outcomes.UNUSABLE)
    return outcomes.OK


def load_key(command: str, path):
    """For `run --sign` and `reproduce --sign`, before anything runs: (key, 0), or (None,
    2) after one error line when the key cannot be used."""
    from harness.attest import AttestError, keys

    try:
        return keys.load_private(path), outcomes.OK
    except AttestError as exc:
        return None, error(command, exc, code=outcomes.UNUSABLE)


def in_the_way(command: str, bundle, force: bool) -> int:
    """0, or 2 after one error line when an attestation already lies where the new bundle's
    goes and --force was not given (checked before anything runs)."""
    import os

    from harness.attest.check import attestation_path

    if force or not os.path.lexists(attestation_path(bundle)):
        return outcomes.OK
    return error(command, f"{attestation_path(bundle)} exists (the attestation of an earlier bundle); --force "
                          "replaces it with the new bundle's", code=outcomes.UNUSABLE)


def sign_sealed(command: str, key, bundle, force: bool) -> tuple[int, str]:
    """For `run --sign` and `reproduce --sign`: sign the bundle just sealed (verified first:
    a bundle that does not verify is never signed). (0, the line to print) or (2, "") after
    one error line: the bundle stays, unsigned."""
    from harness.attest import AttestError
    from harness.attest.check import sign
    from harness.files import WriteFailed
    from harness.judge.verify import verify

    try:
        signed = sign(bundle, key, verify(bundle), force=force)
    except AttestError as exc:
        return error(command, f"{bundle} is sealed but not signed: {exc}", code=outcomes.UNUSABLE), ""
    except WriteFailed as exc:
        return error(command, f"{bundle} is sealed but not signed: {exc.why()}; free space, then `harness sign "
                              f"{bundle} --key KEY`" + (" --force" if force else ""), code=outcomes.WRITE_FAILED), ""
    return outcomes.OK, f"signed: {signed.path} (ssh-ed25519 {key.public.fingerprint})"
