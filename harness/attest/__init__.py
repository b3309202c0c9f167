"""Signed claims (issue 29): who made a bundle, checked offline with tools reviewers have.

An attestation lies beside a bundle, never inside it (the bag stays valid BagIt):
`BUNDLE.intoto.json` (contract.ATTESTATION_SUFFIX), an in-toto Statement v1 in a DSSE
envelope, signed with an OpenSSH Ed25519 key. Its subject is the bundle's digest (SHA-256 of
`tagmanifest-sha256.txt`), its predicate the claim the bundle makes, re-derived from the
bundle's records when verifying.

- keys.py: the OpenSSH private key (loaded only for signing), public keys and the
  `allowed_signers` trust file (`ssh-keygen -Y verify`'s and git's format);
- dsse.py: the DSSE envelope and its pre-authentication encoding, Ed25519 sign/verify;
- claim.py: the Statement and the predicate from a loaded bundle (harness/bundle/read.py);
- check.py: signing a bundle and verifying its attestation, one line per outcome; the signer
  `report` and `summary` show (`signer_line`, called by harness/judge/survey.py).

`cryptography` (the only non-standard import) is imported inside the functions that need
it, so `harness --help`, the workers and rehash.py never load it.
"""
from __future__ import annotations

from harness import contract as C

NAMESPACE = "abba-harness"  # the allowed_signers namespace this tool's signatures are for
SUFFIX = C.ATTESTATION_SUFFIX
MAX_ATTESTATION_BYTES = C.MAX_ATTESTATION_BYTES  # the bounds of a signature check are the contract's


class AttestError(Exception):
    """One line for the user. `unusable` (outcomes.UNUSABLE): a key or trust file that cannot
    be used; otherwise (outcomes.PROBLEMS) the attestation does not hold."""

    def __init__(self, message: str, unusable: bool = False):
        super().__init__(message)
        self.unusable = unusable
