"""Signed claims (issue 29), the parts without a bundle: the DSSE encoding and envelope, OpenSSH
Ed25519 keys (loaded as ssh-keygen writes them, refused in one line that never shows them), the
allowed_signers trust file, and the project's example key files."""
from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("cryptography")

from conftest import ROOT  # noqa: E402
from harness import contract as C, rehash  # noqa: E402
from harness.attest import AttestError, NAMESPACE, claim, dsse, keys  # noqa: E402
from harness.attest.check import attestation_path  # noqa: E402


def make_key(path: Path, passphrase: str = "") -> Path:
    """An OpenSSH Ed25519 key pair as ssh-keygen writes it (cryptography's writer where
    ssh-keygen is missing; a passphrase needs ssh-keygen)."""
    if shutil.which("ssh-keygen"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", passphrase, "-C", path.name, "-f", str(path)],
                       check=True, capture_output=True)
        return path
    if passphrase:
        pytest.skip("ssh-keygen not installed")
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    private = Ed25519PrivateKey.generate()
    path.write_bytes(private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                           serialization.NoEncryption()))
    path.with_name(path.name + ".pub").write_bytes(
        private.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH))
    return path


def secret_lines(key: Path) -> list[str]:
    """The private key file's base64 lines: none may appear in any message."""
    return [line for line in key.read_text().splitlines() if line and not line.startswith("-----")]


@pytest.fixture(scope="module")
def alice(tmp_path_factory) -> Path:
    return make_key(tmp_path_factory.mktemp("keys") / "alice")


def test_pae_is_the_dsse_specification_s():
    # the DSSE specification's own example (protocol.md)
    assert dsse.pae("http://example.com/HelloWorld", b"hello world") == \
        b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"


def test_an_envelope_signs_and_verifies_and_is_parsed_strictly(alice):
    key = keys.load_private(alice)
    env = dsse.envelope(b'{"a":1}', key)
    parsed = dsse.parse(env)
    assert parsed.payload == b'{"a":1}' and parsed.signatures[0][0] == key.public.fingerprint
    assert key.public.verify(parsed.signatures[0][1], dsse.pae(parsed.payload_type, parsed.payload))
    assert not key.public.verify(parsed.signatures[0][1], dsse.pae(parsed.payload_type, b'{"a":2}'))
    # The independent verifier in cryptography agrees: a plain Ed25519 signature over the PAE.
    from cryptography.hazmat.primitives.serialization import load_ssh_public_key

    load_ssh_public_key(key.public.openssh().encode()).verify(base64.b64decode(env["signatures"][0]["sig"]),
                                                              dsse.pae(env["payloadType"], b'{"a":1}'))
    for change, why in ((lambda e: e.update(extra=1), "fields DSSE does not define: extra"),
                        (lambda e: e.update(payloadType="text/plain"), "not 'application/vnd.in-toto+json'"),
                        (lambda e: e.update(payload="***"), "payload is not base64"),
                        (lambda e: e.update(signatures=[]), "holds no signatures"),
                        (lambda e: e["signatures"][0].update(sig="AAAA"), "is 3 bytes, not an Ed25519 signature")):
        broken = {**env, "signatures": [dict(s) for s in env["signatures"]]}
        change(broken)
        with pytest.raises(AttestError, match=re.escape(why)):
            dsse.parse(broken)


def test_fingerprint_is_ssh_keygen_s(alice):
    if not shutil.which("ssh-keygen"):
        pytest.skip("ssh-keygen not installed")
    listed = subprocess.run(["ssh-keygen", "-lf", f"{alice}.pub"], capture_output=True, text=True,
                            check=True).stdout.split()[1]
    assert listed == keys.load_private(alice).public.fingerprint == keys.public_key_file(f"{alice}.pub").fingerprint


def test_a_key_shows_only_its_fingerprint(alice):
    key = keys.load_private(alice)
    assert repr(key) == f"<SigningKey ssh-ed25519 {key.public.fingerprint}>" and str(key.public) in repr(key)
    assert not any(secret in repr(key) + str(key.public) for secret in secret_lines(alice))


def test_keys_it_cannot_use_are_one_line_that_never_shows_them(alice, tmp_path):
    protected = make_key(tmp_path / "protected", passphrase="correct horse")
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    ecdsa = tmp_path / "ecdsa"
    ecdsa.write_bytes(ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()))
    damaged = tmp_path / "damaged"
    lines = alice.read_text().splitlines()
    damaged.write_text("\n".join([lines[0], lines[1][:-8] + "AAAAAAAA", *lines[2:]]) + "\n")
    cases = {protected: "is passphrase-protected; give a key without a passphrase",
             tmp_path / "missing": "no such file",
             Path(f"{alice}.pub"): "is a public key; give the private key",
             tmp_path: "not a regular file",
             ecdsa: "not an Ed25519 key",
             damaged: "not a readable OpenSSH private key",
             ROOT / "pyproject.toml": "not an OpenSSH private key"}
    for path, why in cases.items():
        with pytest.raises(AttestError) as exc:
            keys.load_private(path)
        message = str(exc.value)
        assert exc.value.unusable and message.startswith(f"key {path}: {why}") and "\n" not in message, message
        for secret in secret_lines(alice) + secret_lines(protected) + secret_lines(ecdsa):
            assert secret not in message
    if os.geteuid() != 0:  # root reads any file
        unreadable = tmp_path / "unreadable"
        shutil.copy(alice, unreadable)
        unreadable.chmod(0)
        with pytest.raises(AttestError, match=r"cannot be read \(Permission denied\)"):
            keys.load_private(unreadable)


def test_allowed_signers_lines(alice, tmp_path):
    b64 = Path(f"{alice}.pub").read_text().split()[1]
    path = tmp_path / "allowed"
    path.write_text("\n".join([
        "# comment", "",
        f"a@x,b@y ssh-ed25519 {b64} plain",
        f'"c d@z" namespaces="git,abba-*" ssh-ed25519 {b64}',
        f'e@x namespaces="git" ssh-ed25519 {b64}',
        f"f@x valid-before=20000101Z ssh-ed25519 {b64}",
        "g@x ssh-rsa AAAAB3NzaC1yc2E= rsa key",
        f"h@x cert-authority ssh-ed25519 {b64}",
        f'i@x namespaces="abba-harness,!abba-*" ssh-ed25519 {b64}',
    ]) + "\n")
    trust = keys.load_trust(path)
    assert [(s.principals, s.line, s.refusal() is None) for s in trust.signers] == \
        [("a@x,b@y", 3, True), ("c d@z", 4, True), ("e@x", 5, False), ("f@x", 6, False), ("i@x", 9, False)]
    assert f"namespaces='git', not '{NAMESPACE}'" in trust.signers[2].refusal()
    assert "expired" in trust.signers[3].refusal()
    assert any("ssh-rsa key of g@x skipped: only ssh-ed25519 keys are supported" in n for n in trust.notes)
    assert any("h@x skipped: a certificate authority" in n for n in trust.notes)
    for text, why in ((f"x@y ssh-ed25519 not-base64!\n", ":1: the ssh-ed25519 key of x@y does not decode"),
                      ("x@y\n", ":1: expected `principals [options] keytype base64-key [comment]`"),
                      (f'"x@y ssh-ed25519 {b64}\n', ":1: an unclosed double quote"),
                      (f"x@y valid-after=yesterday ssh-ed25519 {b64}\n", ":1: time 'yesterday' is not")):
        path.write_text(text)
        with pytest.raises(AttestError, match=re.escape(why)) as exc:
            keys.load_trust(path)
        assert exc.value.unusable


def test_a_trust_file_holding_a_private_key_is_refused_without_echo(alice):
    with pytest.raises(AttestError) as exc:
        keys.load_trust(alice)
    assert exc.value.unusable and str(exc.value) == (
        f"trust file {alice}: holds a private key, not allowed_signers lines (principal and public key per line)")


def test_the_example_key_files_agree():
    """docs/keys: the public half and the allowed_signers line name one key, for this tool."""
    public = keys.public_key_file(ROOT / "docs" / "keys" / "abba-example.pub")
    trust = keys.load_trust(ROOT / "docs" / "keys" / "allowed_signers")
    assert [(s.principals, s.key, s.refusal()) for s in trust.signers] == [("example@abba-harness", public, None)]
    assert not (ROOT / "docs" / "keys" / "abba-example").exists()  # the private half is never committed
    assert C.ATTESTATION_SUFFIX == ".intoto.json" == attestation_path("x").name[1:]
    assert attestation_path("out/demo/") == Path("out/demo.intoto.json")


def test_a_claim_differs_field_by_field_but_for_its_signing_time():
    said = {"verdict": "improved", "parity": {"identical": True, "agree": True}, "signed_at": "2020-01-01T00:00:00Z"}
    has = {"verdict": "regressed", "parity": {"identical": False, "agree": True}, "signed_at": "2030-01-01T00:00:00Z"}
    assert claim.differences(said, has) == [("parity.identical", True, False), ("verdict", "improved", "regressed")]
    assert claim.differences({"exit_code": 0}, {"exit_code": False}) == [("exit_code", 0, False)]
    # The statement as signed is strict JSON that rehash's parser takes.
    doc = claim.statement("b", "ab" * 32, {"ratio": 0.5})
    assert rehash.parse_json(claim.encode(doc)) == doc
