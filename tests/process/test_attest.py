"""Signed claims (issue 29) on the command line: a signed bundle verifies against the right
allowed_signers file, and fails in one line with another key, an unknown principal, a key for
other namespaces, an attestation moved from another bundle, a byte of the bundle changed, a
claim the bundle no longer makes; without a trust file an attestation is present, never
trusted; keys that cannot sign are one line and run nothing; keys never show; run --sign and
reproduce --sign end to end; the independent check in docs/signing.md runs as written.

Most bundles here are sealed on the model worker (tests/fakes.py: seconds, no worker process);
`run --sign` and `reproduce --sign` run the demo campaign for real."""
from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("cryptography")

from conftest import CAMPAIGNS, ROOT, harness, no_traceback  # noqa: E402
from fakes import Model, run_fake  # noqa: E402
from harness import contract as C, legacy, outcomes, records  # noqa: E402
from harness.attest import claim, dsse, keys  # noqa: E402
from harness.attest.check import attestation_path  # noqa: E402
from harness.bundle import read  # noqa: E402

SIGNING_DOC = ROOT / "docs" / "signing.md"


# --- keys and bundles ---------------------------------------------------------------------
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


def public(key: Path) -> str:
    return " ".join(key.with_name(key.name + ".pub").read_text().split()[:2])


@pytest.fixture(scope="module")
def keyring(tmp_path_factory):
    """alice (trusted), mallory (not), and trust files: alice's; alice's for git only."""
    where = tmp_path_factory.mktemp("keys")
    alice, mallory = make_key(where / "alice"), make_key(where / "mallory")
    trust = where / "allowed_signers"
    trust.write_text(f"# reviewers' trust file\n\nalice@example.org namespaces=\"abba-harness\" {public(alice)} alice\n")
    git_only = where / "git_only"
    git_only.write_text(f"alice@example.org namespaces=\"git\" {public(alice)}\n")
    return {"alice": alice, "mallory": mallory, "trust": trust, "git_only": git_only,
            "alice_fp": keys.load_private(alice).public.fingerprint,
            "mallory_fp": keys.load_private(mallory).public.fingerprint}


@pytest.fixture(scope="module")
def model_bundles(tmp_path_factory) -> dict:
    """Two sealed bundles of the model campaign (other seeds: other digests, other claims)."""
    made = {}
    for name, seed in (("model", 0), ("other", 1)):
        where = tmp_path_factory.mktemp(name)
        outcome, _ = run_fake(where, Model(seed=seed), out=where / name, seed=seed + 1)
        assert outcome.exit_code == 0
        made[name] = where / name
    return made


@pytest.fixture
def bundle(model_bundles, tmp_path) -> Path:
    """A private copy of the sealed model bundle, free to mutate."""
    copy = tmp_path / "model"
    shutil.copytree(model_bundles["model"], copy, symlinks=True)
    return copy


@pytest.fixture
def signed(bundle, keyring) -> Path:
    result = harness("sign", bundle, "--key", keyring["alice"])
    assert result.returncode == 0, result.stdout + result.stderr
    digest = hashlib.sha256((bundle / C.TAGMANIFEST).read_bytes()).hexdigest()
    assert result.stdout.splitlines()[0] == \
        f"signed: {bundle}.intoto.json (ssh-ed25519 {keyring['alice_fp']}) for {bundle}, digest {digest}"
    assert result.stdout.splitlines()[1].startswith("claim: model: improved, candidate/base 0.")
    return bundle


def verify_trust(bundle, trust, *extra) -> subprocess.CompletedProcess:
    return harness("verify", bundle, "--trust", trust, *extra)


def fail_lines(result) -> list[str]:
    return [line for line in result.stdout.splitlines() if line.startswith("FAIL ")]


def statement_of(bundle: Path) -> dict:
    return json.loads(base64.b64decode(json.loads(attestation_path(bundle).read_text())["payload"]))


def resign(bundle: Path, key: Path, edit) -> None:
    """Re-sign the bundle's attestation with key after edit(statement) changed what it says."""
    statement = statement_of(bundle)
    edit(statement)
    attestation_path(bundle).write_text(json.dumps(dsse.envelope(claim.encode(statement), keys.load_private(key))))


def change_one_byte(bundle: Path) -> Path:
    """Flip one character of environment.json's kernel (a free field, outside the claim)."""
    path = bundle / C.ENVIRONMENT
    text = path.read_text()
    at = text.index('"kernel": "') + len('"kernel": "')
    path.write_text(text[:at] + ("X" if text[at] != "X" else "Y") + text[at + 1:])
    return path


def reseal(bundle: Path, changed: Path) -> None:
    """Rewrite the manifests to match a changed payload file: a valid bag with another digest."""
    manifest = bundle / C.MANIFEST
    rel = changed.relative_to(bundle).as_posix()
    manifest.write_text(re.sub(rf"^[0-9a-f]{{64}}  {re.escape(rel)}$",
                               f"{hashlib.sha256(changed.read_bytes()).hexdigest()}  {rel}",
                               manifest.read_text(), flags=re.M))
    tag = bundle / C.TAGMANIFEST
    tag.write_text(re.sub(rf"^[0-9a-f]{{64}}  {C.MANIFEST}$",
                          f"{hashlib.sha256(manifest.read_bytes()).hexdigest()}  {C.MANIFEST}",
                          tag.read_text(), flags=re.M))


# --- the claim ----------------------------------------------------------------------------
def test_the_signed_claim_is_the_bundle_s(signed):
    predicate = statement_of(signed)["predicate"]
    b = read.load(signed)
    paired = b.comparison.stats.paired
    assert predicate["campaign"] == "model" and predicate["verdict"] == b.comparison.stats.verdict == "improved"
    assert predicate["exit_code"] == outcomes.exit_code(b.comparison) == outcomes.OK
    assert (predicate["ratio"], predicate["ci95"]) == (paired.geomean_ratio, paired.ci95)
    assert predicate["parity"] == {k: records.to_json(getattr(b.comparison.parity, k))
                                   for k in ("identical", "agree", "tolerance")}
    assert predicate["machine"] == b.machine.text()
    assert predicate["revisions"] == {v: b.campaign.sha(v) for v in ("base", "candidate")}
    assert predicate["reproduction"] is None and predicate["signed_at"].endswith("Z")
    assert statement_of(signed)["subject"] == [{"name": "model", "digest": {"sha256": b.digest}}]
    assert claim.differences(predicate, records.to_json(claim.predicate(b))) == []


# --- verify --trust -----------------------------------------------------------------------
def test_a_signed_bundle_verifies_with_the_right_trust_file(signed, keyring):
    result = verify_trust(signed, keyring["trust"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith(f"OK {signed}")
    assert result.stdout.splitlines()[-1].startswith(
        f"signed by alice@example.org (ssh-ed25519 {keyring['alice_fp']}): verified (subject digest and claim match "
        "this bundle; signed at ")
    # The attestation is outside the bag: the bag is the one it was, and bagit agrees.
    assert not any(p.name.endswith(C.ATTESTATION_SUFFIX) for p in signed.rglob("*"))
    bagit = pytest.importorskip("bagit")
    assert bagit.Bag(str(signed)).is_valid()
    # An explicit --attestation elsewhere is the same check.
    moved = signed.parent / "elsewhere.json"
    shutil.copy(attestation_path(signed), moved)
    assert verify_trust(signed, keyring["trust"], "--attestation", moved).returncode == 0


def test_without_trust_it_is_present_never_trusted(signed, keyring):
    result = harness("verify", signed)
    assert result.returncode == 0
    assert result.stdout.splitlines()[-1] == \
        f"attestation: present ({signed}.intoto.json), not verified: give --trust FILE"
    assert "signed by" not in result.stdout
    alone = subprocess.run([sys.executable, "-S", ROOT / "harness" / "rehash.py", signed], capture_output=True,
                           text=True)
    assert alone.returncode == 0
    assert "note: an attestation is present beside the bundle (model.intoto.json), not checked here" in alone.stdout
    signer = f"signed by alice@example.org (ssh-ed25519 {keyring['alice_fp']})"
    compared = harness("compare", signed)
    assert compared.returncode == 0 and "attestation present, not verified" in compared.stdout.splitlines()
    trusted = harness("compare", signed, "--trust", keyring["trust"])
    assert trusted.returncode == 0 and signer in trusted.stdout.splitlines()
    assert trusted.stdout.splitlines()[0].startswith("verdict: improved (exit 0)")
    from harness.render.text import cell

    report = harness("report", signed, "--trust", keyring["trust"])  # on a page: the Markdown owner's escapes
    assert report.returncode == 0 and f"; signed by {cell(signer.removeprefix('signed by '))}." in report.stdout
    plain = harness("report", signed)
    assert plain.returncode == 0 and "; attestation present, not verified." in plain.stdout
    assert "signed by" not in plain.stdout
    summary = harness("summary", signed, "--trust", keyring["trust"])
    assert summary.returncode == 0 and f"; signed by {cell(signer.removeprefix('signed by '))}." in summary.stdout
    assert "signed by" not in harness("summary", signed).stdout


def test_another_key_fails_in_one_line(bundle, keyring):
    # mallory signs, and names alice's key as the keyid to pass for her
    assert harness("sign", bundle, "--key", keyring["mallory"]).returncode == 0
    path = attestation_path(bundle)
    envelope = json.loads(path.read_text())
    envelope["signatures"][0]["keyid"] = keyring["alice_fp"]
    path.write_text(json.dumps(envelope))
    result = verify_trust(bundle, keyring["trust"])
    assert result.returncode == 1 and no_traceback(result)
    assert fail_lines(result) == [
        f"FAIL signature: not made by the key of alice@example.org (ssh-ed25519 {keyring['alice_fp']}) that its "
        "keyid names: signed with another key, or the envelope was altered; have the bundle signed again with "
        "that key"]
    assert result.stdout.splitlines()[-1] == \
        f"{bundle}: the bundle is intact, but its attestation does not hold; do not trust its signature"


def test_an_unknown_principal_fails_in_one_line(bundle, keyring):
    assert harness("sign", bundle, "--key", keyring["mallory"]).returncode == 0
    result = verify_trust(bundle, keyring["trust"])
    assert result.returncode == 1 and no_traceback(result)
    (line,) = fail_lines(result)
    why = (f"signature: made with ssh-ed25519 {keyring['mallory_fp']}, a key no principal in {keyring['trust']} "
           "holds (unknown principal)")
    assert line.startswith(f"FAIL {why}")
    # Where verdicts are read: no verdict, no signer, one line and exit 1.
    compared = harness("compare", bundle, "--trust", keyring["trust"])
    assert compared.returncode == 1 and compared.stdout == ""
    assert compared.stderr.startswith(f"harness compare: error: {bundle}: {why}") and compared.stderr.count("\n") == 1
    report = harness("report", bundle, "--trust", keyring["trust"])
    from harness.render.text import cell

    assert report.returncode == 1 and f"**{cell(why)}" in report.stdout and "| **does not hold** |" in report.stdout
    assert report.stderr.startswith(f"harness report: error: {bundle}: {why}")
    summary = harness("summary", bundle, "--trust", keyring["trust"])
    assert summary.returncode == 1 and summary.stdout == ""
    assert summary.stderr.startswith(f"harness summary: error: {bundle}: {why}") and summary.stderr.count("\n") == 1


def test_a_key_for_other_namespaces_is_not_trusted(signed, keyring):
    result = verify_trust(signed, keyring["git_only"])
    assert result.returncode == 1
    (line,) = fail_lines(result)
    assert line.startswith(f"FAIL signature: made by the key of alice@example.org (ssh-ed25519 {keyring['alice_fp']}), "
                           f"but {keyring['git_only']}:1 trusted only for namespaces='git', not 'abba-harness'")


def test_an_attestation_moved_to_another_bundle_fails(signed, model_bundles, keyring, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(model_bundles["other"], other)
    assert harness("sign", other, "--key", keyring["alice"]).returncode == 0
    shutil.copy(attestation_path(other), attestation_path(signed))  # the other bundle's, signed by alice
    result = verify_trust(signed, keyring["trust"])
    assert result.returncode == 1
    (line,) = fail_lines(result)
    assert line.startswith(f"FAIL signature by alice@example.org (ssh-ed25519 {keyring['alice_fp']}): signed for "
                           "another bundle ('other', digest ") and "an attestation moved from another bundle" in line


def test_a_stuffed_attestation_is_refused_by_its_bounds(signed, keyring, tmp_path):
    """Issue 33: thousands of well-formed signatures in one attestation (under its size bound)
    are refused by count, in one line and exit 1, by verify and report alike; past the size
    bound too. The bounds are contract.py's, and docs/signing.md states them."""
    path = attestation_path(signed)
    envelope = json.loads(path.read_text())
    one = envelope["signatures"][0]
    envelope["signatures"] = [one] + [{"keyid": one["keyid"], "sig": base64.b64encode(os.urandom(64)).decode()}
                                      for _ in range(4999)]
    path.write_text(json.dumps(envelope))
    assert path.stat().st_size < C.MAX_ATTESTATION_BYTES
    result = verify_trust(signed, keyring["trust"])
    assert result.returncode == outcomes.PROBLEMS and no_traceback(result)
    (line,) = fail_lines(result)
    assert f"holds 5000 signatures, more than the {C.MAX_SIGNATURES} a check tries (contract.MAX_SIGNATURES): " \
           "refused unchecked; sign the bundle again" in line
    assert "signed by" not in result.stdout
    report = harness("report", signed, "--trust", keyring["trust"])
    assert report.returncode == outcomes.PROBLEMS and "contract.MAX_SIGNATURES" in report.stderr
    assert report.stderr.count("\n") == 1 and no_traceback(report)
    path.write_text(json.dumps(envelope) + " " * C.MAX_ATTESTATION_BYTES)
    result = verify_trust(signed, keyring["trust"])
    assert result.returncode == outcomes.PROBLEMS and no_traceback(result)
    (line,) = fail_lines(result)
    assert f"larger than {C.MAX_ATTESTATION_BYTES} bytes (contract.MAX_ATTESTATION_BYTES" in line
    # the signature as signed still verifies: the bounds cost nothing to an honest attestation
    envelope["signatures"] = [one]
    path.write_text(json.dumps(envelope))
    assert verify_trust(signed, keyring["trust"]).returncode == outcomes.OK
    for name in ("MAX_SIGNATURES", "MAX_KEYS_PER_SIGNATURE", "MAX_ATTESTATION_BYTES", "MAX_TRUST_KEYS",
                 "MAX_TRUST_BYTES"):
        assert f"`{name}` ({getattr(C, name)}" in SIGNING_DOC.read_text(), name


def test_one_byte_of_the_bundle_changed_fails(signed, keyring):
    changed = change_one_byte(signed)
    result = verify_trust(signed, keyring["trust"])
    assert result.returncode == 1 and no_traceback(result)
    lines = fail_lines(result)
    assert len(lines) >= 2 and any(C.ENVIRONMENT in line for line in lines[:-1])
    assert lines[-1].startswith("FAIL signature by alice@example.org") and \
        "the bundle does not verify (problems above): it changed after it was signed" in lines[-1]
    assert "signed by" not in result.stdout
    # Re-sealed after the change (the manifests rewritten to match): the bundle verifies, its
    # digest is another, its claim the same.
    reseal(signed, changed)
    result = verify_trust(signed, keyring["trust"])
    assert result.returncode == 1 and result.stdout.startswith(f"OK {signed}"), result.stdout
    (line,) = fail_lines(result)
    assert "the bundle changed (was re-sealed) after it was signed" in line


def test_a_claim_the_bundle_no_longer_makes_fails(signed, keyring):
    resign(signed, keyring["alice"], lambda s: s["predicate"].update(verdict="regressed"))  # this digest, another claim
    result = verify_trust(signed, keyring["trust"])
    assert result.returncode == 1
    (line,) = fail_lines(result)
    assert line.startswith("FAIL signature by alice@example.org") and \
        'the signed claim no longer matches the bundle: verdict is "regressed" in the attestation, "improved" in ' \
        "the bundle; a stale claim" in line
    # signed_at is the signer's clock: shown, never compared
    resign(signed, keyring["alice"], lambda s: s["predicate"].update(verdict="improved", signed_at="1999-01-01"))
    assert verify_trust(signed, keyring["trust"]).returncode == 0


def test_a_symlinked_attestation_is_refused(signed, keyring, tmp_path):
    real = tmp_path / "real.intoto.json"
    shutil.move(attestation_path(signed), real)
    attestation_path(signed).symlink_to(real)
    result = verify_trust(signed, keyring["trust"])
    assert result.returncode == 1
    assert fail_lines(result) == [f"FAIL attestation: {signed}.intoto.json is a symlink, refused (an attestation "
                                  "must be a regular file)"]


def test_missing_attestation_and_unusable_trust_file(bundle, keyring, tmp_path):
    result = verify_trust(bundle, keyring["trust"])
    assert result.returncode == 1
    assert fail_lines(result) == [f"FAIL attestation: none at {bundle}.intoto.json: the bundle is not signed "
                                  "(`harness sign BUNDLE --key KEY` signs it)"]
    # report and summary over a bundle that has none: nothing to say, nothing failed
    assert harness("report", bundle, "--trust", keyring["trust"]).returncode == 0
    assert harness("sign", bundle, "--key", keyring["alice"]).returncode == 0
    nowhere = tmp_path / "nowhere"
    for command in ("verify", "report", "compare", "summary"):
        result = harness(command, bundle, "--trust", nowhere)
        assert result.returncode == 2 and no_traceback(result), command
        assert result.stderr == f"harness {command}: error: trust file {nowhere}: no such file\n", command
    # a private key given as a trust file: refused, none of its lines quoted
    result = verify_trust(bundle, keyring["alice"])
    assert result.returncode == 2 and result.stderr == (
        f"harness verify: error: trust file {keyring['alice']}: holds a private key, not allowed_signers lines "
        "(principal and public key per line)\n")


# --- sign ---------------------------------------------------------------------------------
def test_sign_refuses_keys_it_cannot_use_in_one_line(bundle, keyring, tmp_path):
    protected = make_key(tmp_path / "protected", passphrase="correct horse")
    cases = {protected: "is passphrase-protected; give a key without a passphrase",
             tmp_path / "missing": "no such file",
             Path(f"{keyring['alice']}.pub"): "is a public key; give the private key",
             tmp_path: "not a regular file"}
    for key, why in cases.items():
        result = harness("sign", bundle, "--key", key)
        assert result.returncode == 2 and result.stdout == "" and no_traceback(result), key
        assert result.stderr.startswith(f"harness sign: error: key {key}: {why}") and result.stderr.count("\n") == 1
    assert not attestation_path(bundle).exists()
    # signing never runs without an explicit key
    result = harness("sign", bundle)
    assert result.returncode == 2 and "the following arguments are required: --key" in result.stderr
    assert not attestation_path(bundle).exists()


def test_sign_refuses_a_bundle_that_does_not_verify_and_never_overwrites(bundle, keyring):
    original = (bundle / C.ENVIRONMENT).read_bytes()
    change_one_byte(bundle)
    result = harness("sign", bundle, "--key", keyring["alice"])
    assert result.returncode == 1 and no_traceback(result) and not attestation_path(bundle).exists()
    assert result.stderr.startswith(f"harness sign: error: {bundle} does not verify (") and \
        result.stderr.endswith("a bundle that does not verify is never signed\n")
    (bundle / C.ENVIRONMENT).write_bytes(original)
    assert harness("sign", bundle, "--key", keyring["alice"]).returncode == 0
    first = attestation_path(bundle).read_bytes()
    again = harness("sign", bundle, "--key", keyring["mallory"])
    assert again.returncode == 2 and again.stderr == f"harness sign: error: {bundle}.intoto.json exists; --force replaces it\n"
    assert attestation_path(bundle).read_bytes() == first
    assert harness("sign", bundle, "--key", keyring["mallory"], "--force").returncode == 0
    assert attestation_path(bundle).read_bytes() != first
    assert not [p for p in bundle.parent.iterdir() if p.name.endswith(".tmp")]


@pytest.fixture(scope="module")
def signed_run(tmp_path_factory, keyring):
    out = tmp_path_factory.mktemp("signed-run") / "demo"
    return out, harness("run", CAMPAIGNS / "demo.yaml", "--out", out, "--sign", keyring["alice"])


def test_run_sign_end_to_end(signed_run, keyring):
    out, result = signed_run
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[-3] == f"signed: {out}.intoto.json (ssh-ed25519 {keyring['alice_fp']})"
    assert lines[-2].startswith("digest: ") and lines[-1] == "exit: 0 (complete, outputs agree)"
    verified = verify_trust(out, keyring["trust"])
    assert verified.returncode == 0 and verified.stdout.splitlines()[-1].startswith("signed by alice@example.org")
    assert statement_of(out)["subject"][0]["digest"]["sha256"] == lines[-2].split()[1]


def test_run_sign_with_an_unusable_key_runs_nothing(tmp_path, keyring):
    out = tmp_path / "never"
    result = harness("run", CAMPAIGNS / "demo.yaml", "--out", out, "--sign", tmp_path / "missing-key")
    assert result.returncode == 2 and no_traceback(result)
    assert result.stderr == f"harness run: error: key {tmp_path / 'missing-key'}: no such file\n"
    assert not out.exists()
    # an attestation in the way is refused before anything runs too
    attestation_path(out).write_text("{}")
    result = harness("run", CAMPAIGNS / "demo.yaml", "--out", out, "--sign", keyring["alice"])
    assert result.returncode == 2 and "exists (the attestation of an earlier bundle)" in result.stderr
    assert not out.exists()


def test_keys_never_show(bundle, keyring, signed_run):
    out, run = signed_run
    outputs = [run.stdout + run.stderr]
    for args in (["sign", bundle, "--key", keyring["alice"]],
                 ["sign", bundle, "--key", keyring["alice"]],  # exists: an error
                 ["sign", bundle, "--key", f"{keyring['alice']}.pub"],
                 ["verify", bundle, "--trust", keyring["trust"]],
                 ["verify", bundle, "--trust", keyring["alice"]],  # a private key as trust file
                 ["compare", bundle, "--trust", keyring["alice"]],
                 ["report", bundle, "--trust", keyring["alice"]]):
        result = harness(*args)
        outputs.append(result.stdout + result.stderr)
    written = [attestation_path(bundle).read_text(), attestation_path(out).read_text()]
    written += [p.read_text(errors="replace") for p in out.rglob("*") if p.is_file() and p.suffix in (".json", ".log", ".txt")]
    secrets = [line for line in keyring["alice"].read_text().splitlines() if line and not line.startswith("-----")]
    assert secrets
    for text in outputs + written:
        assert not any(secret in text for secret in secrets)


def test_reproduce_sign_names_the_original(demo_bundle_master, keyring, tmp_path):
    out = tmp_path / "demo.reproduction"
    result = harness("reproduce", demo_bundle_master, "--out", out, "--rounds", 5, "--items", 2,
                     "--sign", keyring["alice"])
    assert result.returncode in outcomes.REPRODUCTION_CODES.values(), result.stdout + result.stderr
    assert result.returncode not in (outcomes.FAILED, outcomes.PARITY), result.stdout + result.stderr
    assert f"signed: {out}.intoto.json (ssh-ed25519 {keyring['alice_fp']})" in result.stdout.splitlines()
    verified = verify_trust(out, keyring["trust"])
    assert verified.returncode == 0 and verified.stdout.splitlines()[-1].startswith("signed by alice@example.org")
    statement = statement_of(out)
    original = hashlib.sha256((demo_bundle_master / C.TAGMANIFEST).read_bytes()).hexdigest()
    assert statement["predicate"]["reproduction"]["original_digest"] == original
    assert statement["predicate"]["reproduction"]["verdict"] in C.REPRODUCTION_VERDICTS
    assert statement["predicate"]["reproduction"]["verdict"] == read.load(out).reproduction.verdict


# --- the reviewer's independent check ------------------------------------------------------
def independent_check() -> str:
    text = SIGNING_DOC.read_text()
    block = re.search(r"<!-- independent-signature-check -->\n```python\n(.*?)```\n<!-- /independent-signature-check -->",
                      text, re.S)
    assert block, "docs/signing.md: the independent check is missing between its markers"
    return block.group(1)


def test_the_independent_check_in_docs_runs(signed, keyring, tmp_path):
    script = tmp_path / "check_signature.py"
    script.write_text(independent_check())
    env = {"PATH": os.environ.get("PATH", "")}  # nothing from this repository on the path
    result = subprocess.run([sys.executable, script, f"{signed}/", keyring["trust"]], cwd=tmp_path, env=env,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    digest = hashlib.sha256((signed / C.TAGMANIFEST).read_bytes()).hexdigest()
    assert result.stdout.splitlines()[0] == f"signed by alice@example.org; the subject is this bundle, digest {digest}"
    assert json.loads(result.stdout.split("\n", 1)[1]) == statement_of(signed)["predicate"]
    # and it refuses what it should: another signer, another bundle
    other = tmp_path / "other_signers"
    other.write_text(f"mallory@example.org {public(keyring['mallory'])}\n")
    refused = subprocess.run([sys.executable, script, signed, other], cwd=tmp_path, env=env, capture_output=True,
                             text=True)
    assert refused.returncode == 1 and "no key in ALLOWED_SIGNERS made this signature" in refused.stderr
    tag = signed / C.TAGMANIFEST
    tag.write_bytes(tag.read_bytes() + b"\n")
    moved = subprocess.run([sys.executable, script, signed, keyring["trust"]], cwd=tmp_path, env=env,
                           capture_output=True, text=True)
    assert moved.returncode == 1 and "the statement is about another bundle" in moved.stderr


def committed_attestations() -> list[Path]:
    return sorted((ROOT / "evidence").glob("*" + C.ATTESTATION_SUFFIX))


@pytest.mark.parametrize("attestation", committed_attestations() or [None], ids=lambda p: p.name if p else "none")
def test_committed_attestations_verify_with_the_example_key(attestation):
    """The committed example: a bundle under evidence/ signed with the project's example key
    verifies against docs/keys/allowed_signers, with the harness and with the independent check."""
    if attestation is None:
        pytest.skip("no attestation under evidence/ yet")
    bundle = attestation.with_name(attestation.name[:-len(C.ATTESTATION_SUFFIX)])
    trust = ROOT / "docs" / "keys" / "allowed_signers"
    # a bundle of the generation before the schema's last bump: its own frozen rules (harness/legacy)
    result = verify_trust(bundle, trust, *(["--legacy"] if legacy.identify(str(bundle)) else []))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1].startswith("signed by example@abba-harness (ssh-ed25519 ")
    independent = subprocess.run([sys.executable, "-c", independent_check(), bundle, trust], capture_output=True,
                                 text=True, cwd="/")
    assert independent.returncode == 0 and independent.stdout.startswith("signed by example@abba-harness;"), \
        independent.stderr
