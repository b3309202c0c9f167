"""Keys: the OpenSSH Ed25519 private key a signer gives (`ssh-keygen -t ed25519` writes it),
public keys in OpenSSH's wire format, and the `allowed_signers` trust file of
`ssh-keygen -Y verify` and git (ssh-keygen(1), "ALLOWED SIGNERS").

Key material never leaves this module in a message: errors name the file and the cause,
and a key's repr is its fingerprint."""
from __future__ import annotations

import base64
import binascii
import datetime as dt
import fnmatch
import hashlib
import os
import stat
import struct
from dataclasses import dataclass, field
from pathlib import Path

from harness import contract as C
from harness.attest import NAMESPACE, AttestError

ED25519 = "ssh-ed25519"
MAX_KEY_BYTES = 64 << 10  # an Ed25519 private key file is ~400 bytes
MAX_TRUST_BYTES = C.MAX_TRUST_BYTES
MAX_TRUST_KEYS = C.MAX_TRUST_KEYS
# The key types allowed_signers may name (the second or third field); only ssh-ed25519 is used.
KEY_TYPE_PREFIXES = ("ssh-", "ecdsa-", "sk-", "rsa-sha2-")


def read_file(path: str | os.PathLike, limit: int, what: str, bound: str | None = None) -> bytes:
    """A user's own file (a key, a trust file): a symlink to it is followed (~/.ssh often
    holds them), but it must be a regular file under limit bytes; never blocks on a FIFO.
    bound: the contract's name of the limit, said when it is passed."""
    too_big = (f"{what} {path}: larger than {limit} bytes" + (f" ({bound})" if bound else "")
               + f", not a {what}" + (": keep only the keys you trust in it" if what == "trust file" else ""))
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise AttestError(f"{what} {path}: no such file", unusable=True) from None
    except OSError as exc:
        raise AttestError(f"{what} {path}: cannot be read ({exc.strerror or exc})", unusable=True) from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise AttestError(f"{what} {path}: not a regular file", unusable=True)
    with os.fdopen(fd, "rb") as fh:
        if st.st_size > limit:
            raise AttestError(too_big, unusable=True)
        try:
            data = fh.read(limit + 1)
        except OSError as exc:
            raise AttestError(f"{what} {path}: cannot be read ({exc.strerror or exc})", unusable=True) from None
    if len(data) > limit:
        raise AttestError(too_big, unusable=True)
    return data


def fingerprint(blob: bytes) -> str:
    """OpenSSH's fingerprint of a public key blob, as `ssh-keygen -l` prints it."""
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def _ssh_string(data: bytes, at: int) -> tuple[bytes, int]:
    if at + 4 > len(data):
        raise ValueError("truncated")
    (n,) = struct.unpack(">I", data[at:at + 4])
    if at + 4 + n > len(data):
        raise ValueError("truncated")
    return data[at + 4:at + 4 + n], at + 4 + n


@dataclass(frozen=True)
class PublicKey:
    """An ssh-ed25519 public key: its wire-format blob (what the base64 field holds)."""

    blob: bytes

    @classmethod
    def from_base64(cls, text: str) -> "PublicKey":
        """ValueError when text is not the base64 of an ssh-ed25519 key blob."""
        try:
            blob = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("not base64") from None
        kind, at = _ssh_string(blob, 0)
        raw, at = _ssh_string(blob, at)
        if kind != ED25519.encode():
            raise ValueError(f"the blob holds a {kind.decode('ascii', 'replace')!r} key")
        if len(raw) != 32 or at != len(blob):
            raise ValueError("not a 32-byte Ed25519 key")
        return cls(blob)

    @classmethod
    def from_raw(cls, raw: bytes) -> "PublicKey":
        kind = ED25519.encode()
        return cls(struct.pack(">I", len(kind)) + kind + struct.pack(">I", len(raw)) + raw)

    @property
    def raw(self) -> bytes:
        return self.blob[-32:]

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.blob)

    def openssh(self) -> str:
        """`ssh-ed25519 AAAA...`: the public half, as a .pub file and allowed_signers hold it."""
        return f"{ED25519} {base64.b64encode(self.blob).decode()}"

    def verify(self, signature: bytes, message: bytes) -> bool:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

        try:
            Ed25519PublicKey.from_public_bytes(self.raw).verify(signature, message)
        except (InvalidSignature, ValueError):
            return False
        return True

    def __str__(self) -> str:
        return f"{ED25519} {self.fingerprint}"


class SigningKey:
    """The private half, held only in memory, only by `harness sign`, `run --sign` and
    `reproduce --sign`. Its repr is its fingerprint, so no traceback or log shows it."""

    def __init__(self, private, path: str):
        self._private = private
        self.path = path
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

        raw = private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        self.public = PublicKey.from_raw(raw)

    def sign(self, message: bytes) -> bytes:
        return self._private.sign(message)

    def __repr__(self) -> str:
        return f"<SigningKey {self.public}>"


def load_private(path: str | os.PathLike) -> SigningKey:
    """The OpenSSH Ed25519 private key at path, or AttestError (unusable) with one line
    naming the file and the cause, never its contents."""
    data = read_file(path, MAX_KEY_BYTES, "key")
    head = data.lstrip()[:64]
    if head.startswith(tuple(p.encode() for p in KEY_TYPE_PREFIXES)):
        raise AttestError(f"key {path}: is a public key; give the private key (the file without .pub)", unusable=True)
    if not head.startswith(b"-----BEGIN OPENSSH PRIVATE KEY-----"):
        raise AttestError(f"key {path}: not an OpenSSH private key (as `ssh-keygen -t ed25519` writes it)",
                          unusable=True)
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import load_ssh_private_key

    if _encrypted(data):
        raise _passphrase(path)
    try:
        private = load_ssh_private_key(data, password=None)
    except TypeError:  # cryptography: "Key is password-protected."
        raise _passphrase(path) from None
    except (ValueError, UnsupportedAlgorithm):  # its messages never hold key bytes, but say ours
        raise AttestError(f"key {path}: not a readable OpenSSH private key (damaged, or a kind this "
                          "cryptography cannot load)", unusable=True) from None
    if not isinstance(private, Ed25519PrivateKey):
        kind = type(private).__name__.strip("_").replace("PrivateKey", "") or "another kind"
        raise AttestError(f"key {path}: not an Ed25519 key ({kind}); only Ed25519 keys are supported "
                          "(`ssh-keygen -t ed25519`)", unusable=True)
    return SigningKey(private, str(path))


def _passphrase(path) -> AttestError:
    return AttestError(f"key {path}: is passphrase-protected; give a key without a passphrase (ssh-keygen -t "
                       "ed25519 -N '' -f FILE): keys held by ssh-agent are not supported", unusable=True)


def _encrypted(data: bytes) -> bool:
    """Whether an OpenSSH private key file names a cipher (a passphrase protects it); read
    from the container's header before any key is parsed."""
    body = b"".join(line.strip() for line in data.strip().splitlines()[1:-1])
    try:
        blob = base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        return False
    magic = b"openssh-key-v1\0"
    if not blob.startswith(magic):
        return False
    try:
        cipher, _ = _ssh_string(blob, len(magic))
    except ValueError:
        return False
    return cipher != b"none"


# --- allowed_signers --------------------------------------------------------------------
@dataclass(frozen=True)
class Signer:
    """One usable line of the trust file."""

    principals: str  # as written (comma-separated patterns), quotes removed
    key: PublicKey
    line: int
    namespaces: tuple[str, ...] | None = None  # None: every namespace
    valid_after: dt.datetime | None = None
    valid_before: dt.datetime | None = None

    def refusal(self, namespace: str = NAMESPACE, now: dt.datetime | None = None) -> str | None:
        """Why this line does not trust its key for namespace now, or None."""
        if self.namespaces is not None and not _pattern_match(namespace, self.namespaces):
            return (f"trusted only for namespaces={','.join(self.namespaces)!r}, not {namespace!r} (add "
                    f"{namespace} to the line's namespaces option if its holder may sign claims)")
        now = now or dt.datetime.now(dt.timezone.utc)
        if self.valid_after is not None and now < self.valid_after:
            return f"not valid before {self.valid_after.isoformat()} (valid-after)"
        if self.valid_before is not None and now > self.valid_before:
            return f"expired at {self.valid_before.isoformat()} (valid-before)"
        return None


@dataclass
class Trust:
    path: str
    signers: list[Signer] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # lines skipped, and why

    def holding(self, fp: str) -> list[Signer]:
        return [s for s in self.signers if s.key.fingerprint == fp]


def _pattern_match(name: str, patterns: tuple[str, ...]) -> bool:
    """OpenSSH's pattern-list: any positive pattern matches and no negated one (`!pat`)."""
    hit = False
    for pattern in patterns:
        if pattern.startswith("!"):
            if fnmatch.fnmatchcase(name, pattern[1:]):
                return False
        elif fnmatch.fnmatchcase(name, pattern):
            hit = True
    return hit


def _tokens(line: str) -> list[str]:
    """Whitespace-separated fields; double quotes group (and stay in the field)."""
    out, cur, quoted = [], "", False
    for ch in line:
        if ch == '"':
            quoted = not quoted
            cur += ch
        elif ch.isspace() and not quoted:
            if cur:
                out.append(cur)
            cur = ""
        else:
            cur += ch
    if quoted:
        raise ValueError("an unclosed double quote")
    if cur:
        out.append(cur)
    return out


def _options(text: str) -> list[tuple[str, str | None]]:
    """`a,b="x,y",c=z` -> [(a, None), (b, 'x,y'), (c, 'z')]."""
    parts, cur, quoted = [], "", False
    for ch in text:
        if ch == '"':
            quoted = not quoted
        elif ch == "," and not quoted:
            parts.append(cur)
            cur = ""
            continue
        cur += ch
    parts.append(cur)
    out = []
    for part in parts:
        name, eq, value = part.partition("=")
        if not name:
            raise ValueError(f"an empty option in {text!r}")
        if eq and len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        out.append((name.lower(), value if eq else None))
    return out


def _when(value: str) -> dt.datetime:
    """ssh-keygen's valid-after/valid-before: YYYYMMDD[HHMM[SS]], local time unless it ends in Z."""
    utc = value.endswith(("Z", "z"))
    digits = value[:-1] if utc else value
    formats = {8: "%Y%m%d", 12: "%Y%m%d%H%M", 14: "%Y%m%d%H%M%S"}
    if not digits.isdigit() or len(digits) not in formats:
        raise ValueError(f"time {value!r} is not YYYYMMDD[HHMM[SS]][Z]")
    when = dt.datetime.strptime(digits, formats[len(digits)])
    return when.replace(tzinfo=dt.timezone.utc) if utc else when.astimezone(dt.timezone.utc)


def load_trust(path: str | os.PathLike) -> Trust:
    """The allowed_signers file at path. A malformed line is AttestError (unusable, exit 2)
    naming FILE:LINE; a line of another key type or a certificate authority is skipped with
    a note (only plain ssh-ed25519 keys are supported)."""
    data = read_file(path, MAX_TRUST_BYTES, "trust file", "contract.MAX_TRUST_BYTES")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise AttestError(f"trust file {path}: not UTF-8 text", unusable=True) from None
    if "PRIVATE KEY-----" in text:  # never echo a line of it
        raise AttestError(f"trust file {path}: holds a private key, not allowed_signers lines (principal and "
                          "public key per line)", unusable=True)
    trust = Trust(str(path))
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where = f"trust file {path}:{number}"
        try:
            fields = _tokens(line)
        except ValueError as exc:
            raise AttestError(f"{where}: {exc}", unusable=True) from None
        if len(fields) < 3:
            raise AttestError(f"{where}: expected `principals [options] keytype base64-key [comment]`",
                              unusable=True)
        principals = fields[0].strip('"')
        at = 1
        options: list[tuple[str, str | None]] = []
        if not fields[1].startswith(KEY_TYPE_PREFIXES):
            try:
                options = _options(fields[1])
            except ValueError as exc:
                raise AttestError(f"{where}: {exc}", unusable=True) from None
            at = 2
        if len(fields) < at + 2:
            raise AttestError(f"{where}: expected `principals [options] keytype base64-key [comment]`",
                              unusable=True)
        kind, b64 = fields[at], fields[at + 1]
        if not principals:
            raise AttestError(f"{where}: no principal", unusable=True)
        if len(trust.signers) + len(trust.notes) >= MAX_TRUST_KEYS:
            raise AttestError(f"{where}: the trust file holds more than {MAX_TRUST_KEYS} keys, the most a check "
                              f"reads (contract.MAX_TRUST_KEYS): keep only the keys you trust for {NAMESPACE} in "
                              "it (namespaces=\"abba-harness\" lines in a file of their own)", unusable=True)
        if kind != ED25519:
            trust.notes.append(f"{where}: {kind} key of {principals} skipped: only ssh-ed25519 keys are supported")
            continue
        try:
            key = PublicKey.from_base64(b64)
        except ValueError as exc:
            raise AttestError(f"{where}: the ssh-ed25519 key of {principals} does not decode ({exc})",
                              unusable=True) from None
        namespaces = after = before = None
        skip = None
        for name, value in options:
            try:
                if name == "namespaces" and value is not None:
                    namespaces = tuple(n.strip() for n in value.split(",") if n.strip())
                elif name == "valid-after" and value is not None:
                    after = _when(value)
                elif name == "valid-before" and value is not None:
                    before = _when(value)
                elif name == "cert-authority":
                    skip = "a certificate authority (certificates are not supported)"
                else:
                    skip = f"option {name!r} is not one this tool knows (namespaces, valid-after, valid-before)"
            except ValueError as exc:
                raise AttestError(f"{where}: {exc}", unusable=True) from None
        if skip:
            trust.notes.append(f"{where}: {principals} skipped: {skip}")
            continue
        trust.signers.append(Signer(principals, key, number, namespaces, after, before))
    return trust


def public_key_file(path: str | os.PathLike) -> PublicKey:
    """A .pub file (`ssh-ed25519 AAAA... comment`)."""
    text = read_file(path, MAX_KEY_BYTES, "public key").decode("utf-8", "replace").split()
    if len(text) < 2 or text[0] != ED25519:
        raise AttestError(f"public key {Path(path)}: not an ssh-ed25519 public key", unusable=True)
    try:
        return PublicKey.from_base64(text[1])
    except ValueError as exc:
        raise AttestError(f"public key {path}: does not decode ({exc})", unusable=True) from None
