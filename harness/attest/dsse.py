"""DSSE, the Dead Simple Signing Envelope (github.com/secure-systems-lab/dsse, v1.0.0):

    {"payloadType": TYPE, "payload": base64(BODY), "signatures": [{"keyid": ID, "sig": base64(SIG)}]}

where SIG is signed over the pre-authentication encoding

    PAE(TYPE, BODY) = "DSSEv1" SP LEN(TYPE) SP TYPE SP LEN(BODY) SP BODY

(LEN: the byte length in ASCII decimal). Here SIG is a plain Ed25519 signature (RFC 8032),
so any DSSE verifier with the public key checks it; keyid is the key's OpenSSH
fingerprint, a hint that selects a key, never trusted by itself."""
from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from harness import contract as C
from harness.attest import AttestError

PAYLOAD_TYPE = "application/vnd.in-toto+json"
SIGNATURE_BYTES = 64


def pae(payload_type: str, payload: bytes) -> bytes:
    kind = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


def b64decode(text, what: str) -> bytes:
    """DSSE allows standard or URL-safe base64; padding may be left out."""
    if not isinstance(text, str) or not text.isascii():
        raise AttestError(f"{what} is not base64 text")
    text = text.replace("-", "+").replace("_", "/")
    text += "=" * (-len(text) % 4)
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise AttestError(f"{what} is not base64") from None


def envelope(payload: bytes, key, payload_type: str = PAYLOAD_TYPE) -> dict:
    """The envelope of payload signed with key (keys.SigningKey)."""
    sig = key.sign(pae(payload_type, payload))
    return {"payloadType": payload_type, "payload": base64.b64encode(payload).decode(),
            "signatures": [{"keyid": key.public.fingerprint, "sig": base64.b64encode(sig).decode()}]}


@dataclass
class Envelope:
    payload_type: str
    payload: bytes
    signatures: list[tuple[str | None, bytes]]  # (keyid or None, the 64-byte signature)


def parse(doc) -> Envelope:
    """A parsed envelope, or AttestError (a problem, exit 1) naming what is wrong."""
    if not isinstance(doc, dict):
        raise AttestError("the envelope is not a JSON object")
    extra = set(doc) - {"payloadType", "payload", "signatures"}
    if extra:
        raise AttestError(f"the envelope has fields DSSE does not define: {', '.join(sorted(extra))}")
    kind = doc.get("payloadType")
    if kind != PAYLOAD_TYPE:
        raise AttestError(f"payloadType is {kind!r}, not {PAYLOAD_TYPE!r} (an in-toto statement)")
    payload = b64decode(doc.get("payload"), "payload")
    sigs = doc.get("signatures")
    if not isinstance(sigs, list) or not sigs:
        raise AttestError("the envelope holds no signatures")
    if len(sigs) > C.MAX_SIGNATURES:  # refused before any signature is decoded or checked
        raise AttestError(f"the envelope holds {len(sigs)} signatures, more than the {C.MAX_SIGNATURES} a check "
                          f"tries (contract.MAX_SIGNATURES): refused unchecked; sign the bundle again "
                          "(`harness sign BUNDLE --key KEY --force` writes one signature)")
    out = []
    for n, entry in enumerate(sigs):
        if not isinstance(entry, dict) or set(entry) - {"keyid", "sig"} or "sig" not in entry:
            raise AttestError(f"signatures[{n}] is not {{keyid, sig}}")
        keyid = entry.get("keyid")
        if keyid is not None and not isinstance(keyid, str):
            raise AttestError(f"signatures[{n}].keyid is not a string")
        sig = b64decode(entry["sig"], f"signatures[{n}].sig")
        if len(sig) != SIGNATURE_BYTES:
            raise AttestError(f"signatures[{n}].sig is {len(sig)} bytes, not an Ed25519 signature (64)")
        out.append((keyid or None, sig))
    return Envelope(kind, payload, out)
