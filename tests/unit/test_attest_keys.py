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


# --- bounded signature checks (issue 33, item 5) ----------------------------------------------
def _public_keys(n: int) -> list:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    return [keys.PublicKey.from_raw(Ed25519PrivateKey.generate().public_key().public_bytes(Encoding.Raw,
                                                                                          PublicFormat.Raw))
            for _ in range(n)]


def _trust_file(path: Path, publics: list) -> Path:
    path.write_text("".join(f"k{n}@example.org {pub.openssh()}\n" for n, pub in enumerate(publics)))
    return path


def _stuffed(path: Path, signatures: list[dict]) -> Path:
    """A well-formed envelope (a real statement's shape) holding these signatures."""
    import json

    payload = claim.encode(claim.statement("b", "ab" * 32, {"ratio": 0.5}))
    path.write_text(json.dumps({"payloadType": dsse.PAYLOAD_TYPE, "payload": base64.b64encode(payload).decode(),
                                "signatures": signatures}))
    return path


@pytest.fixture
def counted(monkeypatch) -> list:
    """Every Ed25519 verification a check makes, counted (never timed)."""
    calls = []
    real = keys.PublicKey.verify

    def verify(self, signature, message):
        calls.append(self.fingerprint)
        return real(self, signature, message)

    monkeypatch.setattr(keys.PublicKey, "verify", verify)
    return calls


def test_an_envelope_of_thousands_of_signatures_is_refused_by_count_before_any_crypto(tmp_path, counted):
    from harness.attest import check

    publics = _public_keys(8)
    trust = _trust_file(tmp_path / "allowed_signers", publics)
    sig = base64.b64encode(bytes(64)).decode()
    attestation = _stuffed(tmp_path / "b.intoto.json",
                           [{"keyid": publics[n % 8].fingerprint, "sig": sig} for n in range(5000)])
    assert attestation.stat().st_size < C.MAX_ATTESTATION_BYTES  # well-formed, within the size bound: the count refuses
    outcome = check.check(tmp_path / "b", trust, attestation=attestation)
    assert counted == []
    assert outcome.state == check.FAILED and outcome.exit_code == 1
    assert f"holds 5000 signatures, more than the {C.MAX_SIGNATURES} a check tries (contract.MAX_SIGNATURES)" \
        in outcome.line and "\n" not in outcome.line
    with pytest.raises(AttestError, match="contract.MAX_SIGNATURES"):
        dsse.parse({"payloadType": dsse.PAYLOAD_TYPE, "payload": "", "signatures": [{"sig": sig}] * 5000})


def test_a_signature_is_tried_only_against_the_key_its_keyid_names(tmp_path, counted):
    """At the bound of signatures, each naming one of 8 trusted keys: 8 checks, not 64."""
    from harness.attest import check

    publics = _public_keys(8)
    trust = _trust_file(tmp_path / "allowed_signers", publics)
    sig = base64.b64encode(bytes(64)).decode()
    attestation = _stuffed(tmp_path / "b.intoto.json", [{"keyid": p.fingerprint, "sig": sig} for p in publics])
    outcome = check.check(tmp_path / "b", trust, attestation=attestation)
    assert outcome.state == check.FAILED and "not made by the key of k0@example.org" in outcome.line
    assert sorted(counted) == sorted(p.fingerprint for p in publics)  # each key once, against its own signature
    # A keyid no trusted key has: no check at all.
    counted.clear()
    _stuffed(attestation, [{"keyid": "SHA256:nobody", "sig": sig}] * C.MAX_SIGNATURES)
    assert check.check(tmp_path / "b", trust, attestation=attestation).state == check.FAILED
    assert counted == []


def test_a_signature_without_keyid_is_tried_against_a_few_keys_at_most(tmp_path, counted):
    from harness.attest import check

    sig = base64.b64encode(bytes(64)).decode()
    attestation = _stuffed(tmp_path / "b.intoto.json", [{"sig": sig}] * C.MAX_SIGNATURES)
    few = _trust_file(tmp_path / "few", _public_keys(C.MAX_KEYS_PER_SIGNATURE))
    assert check.check(tmp_path / "b", few, attestation=attestation).state == check.FAILED
    assert len(counted) == C.MAX_SIGNATURES * C.MAX_KEYS_PER_SIGNATURE
    counted.clear()
    many = _trust_file(tmp_path / "many", _public_keys(C.MAX_KEYS_PER_SIGNATURE + 1))
    outcome = check.check(tmp_path / "b", many, attestation=attestation)
    assert counted == []
    assert outcome.state == check.FAILED and "(contract.MAX_KEYS_PER_SIGNATURE): refused unchecked" in outcome.line


def test_an_attestation_and_a_trust_file_past_their_bounds_are_one_line(tmp_path):
    from harness.attest import check

    trust = _trust_file(tmp_path / "allowed_signers", _public_keys(1))
    big = tmp_path / "b.intoto.json"
    big.write_bytes(b" " * (C.MAX_ATTESTATION_BYTES + 1))
    outcome = check.check(tmp_path / "b", trust, attestation=big)
    assert outcome.state == check.FAILED and "contract.MAX_ATTESTATION_BYTES" in outcome.line
    crowded = tmp_path / "crowded"
    line = f"x@example.org {_public_keys(1)[0].openssh()}\n"
    crowded.write_text(line * (C.MAX_TRUST_KEYS + 1))
    with pytest.raises(AttestError, match=re.escape(f"more than {C.MAX_TRUST_KEYS} keys")) as exc:
        keys.load_trust(crowded)
    assert exc.value.unusable and "contract.MAX_TRUST_KEYS" in str(exc.value)
    assert len(keys.load_trust(_trust_file(tmp_path / "full", _public_keys(1) * C.MAX_TRUST_KEYS)).signers) \
        == C.MAX_TRUST_KEYS
    huge = tmp_path / "huge"
    huge.write_text("#" * (C.MAX_TRUST_BYTES + 1))
    with pytest.raises(AttestError, match="contract.MAX_TRUST_BYTES") as exc:
        keys.load_trust(huge)
    assert exc.value.unusable
    assert check.check(tmp_path / "b", huge, attestation=big).exit_code == 2
