"""Evidence that outlives a version (issue 47 item 4), both ways, through both checkers as a
reviewer types them: a real bundle of every earlier generation is refused with the commands that
check it, and with --legacy verified under its own frozen rules, shown as such with their holes;
today's bundle relabelled as an earlier generation is never verified as today's and never passes
that generation's rules unless it truly holds under them; an edited frozen checker judges
nothing; compare, summary, report and reproduce refuse an earlier bundle with the command."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, harness
from harness import contract as C, legacy
from legacy_support import fixture, relabel

GENERATIONS = legacy.generations()
IDS = [g.id for g in GENERATIONS]
SCRIPT = ROOT / "harness" / "rehash.py"


def rehash(*args, script=SCRIPT, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-S", str(script), *map(str, args)], capture_output=True, text=True,
                          timeout=600, cwd=cwd)


def refusal_line(result, bundle, gen, who) -> None:
    assert result.returncode == 2 and result.stdout == "", result.stdout + result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith(
        f"{who}: error: {C.BAG_INFO}: a bundle of an earlier generation, {gen.label}, written by harness "
        f"{gen.version} at {gen.first[:7]}..{gen.last[:7]}"), result.stderr
    assert f"these checkers judge {C.FORMAT} only" in result.stderr
    assert f"`harness verify --legacy {bundle}`" in result.stderr
    assert f"git -C ABBA_REPO archive {gen.last[:7]} harness" in result.stderr


@pytest.mark.parametrize("gen", GENERATIONS, ids=IDS)
def test_a_bundle_of_each_earlier_generation_is_refused_or_verified_under_its_own_rules(gen, tmp_path):
    bundle = fixture(gen.id)
    refusal_line(harness("verify", bundle), bundle, gen, "harness verify")
    refusal_line(rehash(bundle), bundle, gen, "rehash")
    shown = harness("verify", "--legacy", bundle)
    assert shown.returncode == 0 and shown.stderr == "", shown.stdout + shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == (f"OK {bundle}: verified under the rules of {gen.label} (harness {gen.version} at "
                        f"{gen.last[:7]}), not today's ({C.FORMAT}); its frozen checker "
                        f"(harness/legacy/vendor/{gen.id}/rehash.py, the manifest's to the byte) says:")
    assert lines[1].startswith(f"  OK {bundle}: ")  # the frozen checker's own verdict, quoted
    holes = lines.index(f"known holes of the rules of {gen.label} (a bundle that passes them may still hide these):")
    assert lines[holes + 1:-1] == [f"  - {hole}" for hole in legacy.holes(gen)]
    assert lines[-1].startswith("not checked under --legacy: campaign.yaml against campaign.json")
    by_hand = rehash("--legacy", bundle)
    assert (by_hand.returncode, by_hand.stdout, by_hand.stderr) == (0, shown.stdout, "")
    # the frozen checker alone, as generations.json's command line runs it, says what is quoted
    alone = subprocess.run([sys.executable, "-S", legacy.frozen(gen), str(bundle)], capture_output=True, text=True,
                           timeout=600)
    assert alone.returncode == 0 and [f"  {line}" for line in alone.stdout.splitlines()] == lines[1:holes]


@pytest.mark.parametrize("gen", GENERATIONS, ids=IDS)
def test_todays_bundle_relabelled_as_an_earlier_generation_fails_under_its_rules(demo_bundle, tmp_path, gen):
    """The schema-downgrade attack: every schema id and Abba-Format of a bundle of today set to
    an earlier generation's and re-sealed. Without --legacy both checkers refuse it as earlier;
    with it, that generation's closed contract refuses what it never declared (today's harness
    commit line first of all): never OK, never today's words."""
    bundle = relabel(demo_bundle, tmp_path / "relabelled", gen)
    refusal_line(harness("verify", bundle), bundle, gen, "harness verify")
    refusal_line(rehash(bundle), bundle, gen, "rehash")
    for result in (harness("verify", "--legacy", bundle), rehash("--legacy", bundle)):
        assert result.returncode == 1, result.stdout + result.stderr
        assert result.stdout.startswith(f"FAIL {bundle}: under the rules of {gen.label} (harness {gen.version} at "
                                        f"{gen.last[:7]}), its frozen checker says:\n  FAIL ")
        assert result.stdout.endswith(f"{bundle}: does not hold even under the rules of {gen.label}; do not trust "
                                      "this bundle\n")
        assert "\nOK " not in result.stdout and "known holes" not in result.stdout
    if gen.format is not None:  # the closed contracts (v6 on) name what today's bundle holds that they never declared
        assert ("data/campaign.json: [parsing] cores: not declared by the contract" if gen.id == "v9-run8"
                else "Abba-Harness-Commit is not a key the contract declares") in result.stdout


def test_a_careful_relabelling_holds_only_where_the_rules_it_names_hold(demo_bundle, precise_fake, tmp_path):
    """A forger who also strips what today's generation added over the newest frozen one (the
    precision asked, each look's precise, a duet's cores): a bundle whose content truly holds
    under those rules is shown as that generation's, its holes listed, never in today's words
    (the demo: a campaign that asked no precision); one that does not is refused by them: a
    campaign that went on past a decided look for its precision is, without it, a campaign that
    should have stopped, so the downgrade cannot shed today's stopping rule. Without --legacy
    both are refused."""
    gen = GENERATIONS[-1]
    careful = relabel(demo_bundle, tmp_path / "careful", gen, strip=True)
    refusal_line(harness("verify", careful), careful, gen, "harness verify")
    for result in (harness("verify", "--legacy", careful), rehash("--legacy", careful)):
        assert result.returncode == 0, result.stdout + result.stderr
        assert result.stdout.startswith(f"OK {careful}: verified under {gen.rules}, not today's ({C.FORMAT})")
        assert "known holes" in result.stdout
    went_on = relabel(precise_fake, tmp_path / "went_on", gen, strip=True)
    for result in (harness("verify", "--legacy", went_on), rehash("--legacy", went_on)):
        assert result.returncode == 1, result.stdout + result.stderr
        assert "decided, but the campaign went on to round" in result.stdout
        assert "\nOK " not in result.stdout and "known holes" not in result.stdout


def test_the_reviewers_script_alone_runs_the_frozen_checker_beside_it(tmp_path):
    """rehash.py with contract.py, rules.py and legacy/ beside it, copied out of the harness: --legacy runs
    the frozen checker from there; with the frozen file edited it refuses; without legacy/ it
    says where the checkers of earlier generations are."""
    gen = legacy.by_id("v6")
    bundle = fixture(gen.id)
    copy = tmp_path / "reviewer"
    copy.mkdir()
    for name in ("rehash.py", "contract.py", "rules.py"):
        shutil.copy(ROOT / "harness" / name, copy / name)
    shutil.copytree(ROOT / "harness" / "legacy", copy / "legacy", ignore=shutil.ignore_patterns("__pycache__"))
    ok = rehash("--legacy", bundle, script=copy / "rehash.py", cwd=tmp_path)
    assert ok.returncode == 0 and ok.stdout.startswith(f"OK {bundle}: verified under the rules of {gen.label}")
    frozen = copy / "legacy" / "vendor" / gen.id / "rehash.py"
    frozen.write_text(frozen.read_text() + "# an edit\n")
    edited = rehash("--legacy", bundle, script=copy / "rehash.py", cwd=tmp_path)
    assert edited.returncode == 2 and edited.stdout == ""
    assert edited.stderr.startswith(f"rehash: error: {frozen}: SHA-256 ") and "was edited, and judges nothing" in \
        edited.stderr
    shutil.rmtree(copy / "legacy")
    alone = rehash("--legacy", bundle, script=copy / "rehash.py", cwd=tmp_path)
    assert alone.returncode == 2 and alone.stdout == ""
    assert alone.stderr.startswith(f'rehash: error: {C.BAG_INFO}: Abba-Format "{gen.format}" with schema ids of no '
                                   "generation this checker knows") and "with harness/legacy beside it" in alone.stderr


def test_the_frozen_checkers_words_reach_the_terminal_escaped(tmp_path):
    """Earlier checkers printed the bundle's path as it is (v6 had no terminal owner): what
    --legacy shows of them goes through today's, so an escape sequence in a folder name is
    shown, not obeyed."""
    gen = legacy.by_id("v6")
    bundle = tmp_path / "b\x1b[2J\x1b]0;owned\x07"
    shutil.copytree(fixture(gen.id), bundle)
    for result in (harness("verify", "--legacy", bundle), rehash("--legacy", bundle)):
        assert result.returncode == 0, result.stdout + result.stderr
        assert "\x1b" not in result.stdout and "\x07" not in result.stdout and "\\x1b[2J" in result.stdout


def test_legacy_leaves_the_rest_to_that_generations_harness():
    """--repo and --original are checks of today's harness: under --legacy they are refused with
    the command that gets that generation's harness."""
    gen = legacy.by_id("v7-run5")
    bundle = fixture(gen.id)
    for extra in (["--repo", ROOT], ["--original", bundle]):
        result = harness("verify", "--legacy", bundle, *extra)
        assert result.returncode == 2 and result.stdout == "", result.stdout + result.stderr
        assert result.stderr.startswith(f"harness verify: error: {extra[0]}: not checked under --legacy") and \
            f"mkdir abba-{gen.last[:7]} && git -C ABBA_REPO archive {gen.last[:7]} harness" in result.stderr


def test_a_signed_earlier_bundle_keeps_its_signature(tmp_path):
    """A claim signed when it was sealed stays checkable: under --legacy, --trust checks who
    signed it and that the signature covers this bundle's digest (every byte); the signed claim
    itself is not re-derived (today's reader does not read the earlier schema), and it says so.
    An attestation moved from another bundle, or a key not trusted, fails."""
    from harness.attest import claim, dsse, keys
    from harness.bundle import read

    if not shutil.which("ssh-keygen"):
        pytest.skip("ssh-keygen not installed")
    key = tmp_path / "alice"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "alice", "-f", str(key)], check=True,
                   capture_output=True)
    trust = tmp_path / "allowed_signers"
    public = " ".join((tmp_path / "alice.pub").read_text().split()[:2])
    trust.write_text(f'alice@example.org namespaces="abba-harness" {public}\n')
    bundles = {}
    for gen_id in ("v7-run5", "v6"):
        bundles[gen_id] = tmp_path / gen_id / "b"
        shutil.copytree(fixture(gen_id), bundles[gen_id])
    signed = bundles["v7-run5"]
    doc = claim.statement("b", read.digest(signed), {"campaign": "span_finding_unmappable"})
    attestation = signed.with_name("b" + C.ATTESTATION_SUFFIX)
    attestation.write_text(__import__("json").dumps(dsse.envelope(claim.encode(doc), keys.load_private(key))))
    ok = harness("verify", "--legacy", signed, "--trust", trust)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert ok.stdout.splitlines()[-1].startswith("signed by alice@example.org (ssh-ed25519 SHA256:") and \
        "verified over this bundle's digest, every byte (the signed claim is not re-derived" in ok.stdout
    moved = bundles["v6"].with_name("b" + C.ATTESTATION_SUFFIX)
    shutil.copy(attestation, moved)
    other = harness("verify", "--legacy", bundles["v6"], "--trust", trust)
    assert other.returncode == 1 and other.stdout.splitlines()[-1].startswith("FAIL signature by alice@example.org")
    assert "signed for another bundle" in other.stdout
    trust.write_text("")
    untrusted = harness("verify", "--legacy", signed, "--trust", trust)
    assert untrusted.returncode in (1, 2) and "signed by alice" not in untrusted.stdout


@pytest.mark.parametrize("command, code", [("compare", 2), ("summary", 1), ("report", 1), ("reproduce", 2)])
def test_other_commands_refuse_an_earlier_bundle_with_the_command(command, code, tmp_path):
    """Today's readers read today's schema: an earlier bundle gets the refusal that names
    `verify --legacy` and that generation's harness, never a claim read by today's model."""
    gen = legacy.by_id("v8-campaign9")
    bundle = fixture(gen.id)
    args = {"report": [bundle, "--out", tmp_path / "REPORT.md"], "reproduce": [bundle, "--out", tmp_path / "again"]}
    result = harness(command, *args.get(command, [bundle]))
    assert result.returncode == code, result.stdout + result.stderr
    assert f"harness {command}: error:" in result.stderr and "a bundle of an earlier generation" in result.stderr
    assert f"harness verify --legacy {bundle}" in result.stderr
    assert not (tmp_path / "again").exists()


def test_the_report_shows_a_bundle_of_the_last_generation_as_verified_under_its_rules(tmp_path):
    """REPORT.md is made from evidence/, which a schema bump leaves of the generation before: the
    report reads a bundle its frozen checker passes (today's reader takes what that generation
    lacks as null), says whose rules verified it, the command and their holes, and never shows it
    as today's; the summary, a claim to post, still refuses it; a bundle those rules refuse does
    not verify."""
    gen = GENERATIONS[-1]
    name = fixture(gen.id).name
    evidence = tmp_path / "evidence"
    shutil.copytree(fixture(gen.id), evidence / name)
    result = harness("report", "--root", tmp_path, "-o", "-")
    assert result.returncode == 0, result.stdout + result.stderr
    row = next(line for line in result.stdout.splitlines() if line.startswith(f"| `evidence/{name}`"))
    assert "| earlier rules |" in row and "| yes |" not in row
    assert f"Verified under {gen.rules}, its generation's frozen checker (`harness verify --legacy evidence/{name}`)" \
        in result.stdout and "holds a campaign's interval to a precision" in result.stdout
    assert "harness verify --legacy B" in result.stdout
    posted = harness("summary", evidence / name)
    assert posted.returncode == 1 and "a bundle of an earlier generation" in posted.stderr
    broken = evidence / name / C.run_path("A1")
    broken.write_text(broken.read_text().replace('"status": "ok"', '"status": "ok" ', 1))
    result = harness("report", "--root", tmp_path, "-o", "-")
    assert result.returncode == 1 and f"under {gen.rules}:" in result.stderr, result.stderr
    assert "**does not verify**" in result.stdout and "earlier rules" not in result.stdout


def test_a_frozen_checker_is_held_to_its_limits(tmp_path, monkeypatch):
    """A frozen checker past its wall clock is stopped and reads as unusable; what it prints past
    the bound is read and dropped."""
    gen = legacy.Generation({"id": "slow", "format": "x", "schemas": {}, "version": "0", "first": "0" * 40,
                             "last": "0" * 40, "dates": ["", ""], "files": {}}, 0)
    folder = tmp_path / "slow"
    folder.mkdir()
    script = folder / "rehash.py"
    script.write_text("import sys, time\nsys.stdout.write('x' * (9 << 20))\nsys.stdout.flush()\ntime.sleep(60)\n")
    gen.files = {"rehash.py": __import__("hashlib").sha256(script.read_bytes()).hexdigest()}
    monkeypatch.setattr(legacy, "VENDOR", str(tmp_path))
    outcome = legacy.run(gen, str(tmp_path), timeout=5)
    assert outcome.code == 2 and outcome.err[-1].endswith("ran past 5 s and was stopped")
    assert len(outcome.out[0]) == legacy.OUTPUT_BYTES and outcome.out[1].startswith("(its output past")
