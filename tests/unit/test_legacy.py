"""Evidence that outlives a version (issue 47 item 4), the parts that run no checker process:
the frozen checkers are git's own files and the manifest's to the byte; every generation is told
apart from the others and from today's; a bundle's generation is read without trusting or
following anything; an edited frozen checker judges nothing; and a bundle records the harness
commit that sealed it, which both checkers bind. tests/process/test_legacy_checkers.py runs the frozen
checkers on each generation's real bundle."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from checks_support import bag_info, forge, problems, refused, set_bag
from conftest import ROOT
from harness import contract as C, legacy, rehash
from harness.judge.verify import verify
from legacy_support import FIXTURES, fixture, relabel

GENERATIONS = legacy.generations()
IDS = [g.id for g in GENERATIONS]


def git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, timeout=60)


def in_history(commit: str) -> bool:
    return (ROOT / ".git").exists() and git("cat-file", "-e", f"{commit}^{{commit}}").returncode == 0


# --- the frozen checkers are git's -------------------------------------------------------------
@pytest.mark.parametrize("gen", GENERATIONS, ids=IDS)
def test_each_frozen_checker_is_its_last_commits_pair_to_the_byte(gen):
    """vendor/ID/rehash.py and contract.py are `git show LAST:harness/FILE`, the manifest pins
    their SHA-256, and LAST's contract declares the format and schema ids the manifest says."""
    assert sorted(gen.files) == sorted(p.name for p in Path(gen.folder).iterdir() if p.suffix == ".py")
    for name, digest in gen.files.items():
        assert hashlib.sha256((Path(gen.folder) / name).read_bytes()).hexdigest() == digest, name
    if not in_history(gen.last):
        pytest.skip(f"{gen.last[:7]} is not in this checkout's history (a shallow clone or an sdist)")
    for name in legacy.FILES:
        shown = git("show", f"{gen.last}:harness/{name}")
        assert (shown.returncode == 0) == (name in gen.files), name
        if name in gen.files:
            assert shown.stdout == (Path(gen.folder) / name).read_bytes(), name
    assert git("merge-base", "--is-ancestor", gen.first, gen.last).returncode == 0
    if gen.format is not None:
        for commit in (gen.first, gen.last):
            text = git("show", f"{commit}:harness/contract.py").stdout.decode()
            assert re.search(rf'^FORMAT = "{re.escape(gen.format)}"', text, re.M), commit
            for kind, schema in gen.schemas.items():
                assert f'"{kind}": "{schema}"' in text, (commit, kind)


def test_generations_and_today_are_told_apart():
    """No two generations, and no generation and today, carry one format and the same ids of the
    documents identify() reads: a bundle's ids name at most one set of rules."""
    seen = {(C.FORMAT, tuple(C.SCHEMAS.get(k) for k in legacy.IDENTIFY_KINDS))}
    for gen in GENERATIONS:
        key = (gen.format, tuple(gen.schemas.get(k) for k in legacy.IDENTIFY_KINDS))
        assert key not in seen, gen.id
        seen.add(key)
    assert [g.index for g in GENERATIONS] == list(range(len(GENERATIONS)))
    assert sum(g.format is None for g in GENERATIONS) == 1  # the one generation before Abba-Format


def test_every_generation_lists_its_holes_and_where_they_were_closed():
    for gen in GENERATIONS:
        holes = legacy.holes(gen)
        assert holes and all(h.endswith(")") for h in holes), gen.id
    assert any("max_ulp is unbounded" in h for h in legacy.holes(legacy.by_id("v6")))
    assert not any("max_ulp is unbounded" in h for h in legacy.holes(legacy.by_id("v7-run4")))
    assert any("zygote" in h for h in legacy.holes(legacy.by_id("v7-run6")))
    assert not any("zygote" in h for h in legacy.holes(legacy.by_id("v7-run5")))
    assert any("names no harness commit" in h for h in legacy.holes(legacy.by_id("v8-campaign9")))
    assert not any("names no harness commit" in h for h in legacy.holes(legacy.by_id("v9-run8")))
    assert any("holds a campaign's interval to a precision" in h for h in legacy.holes(legacy.by_id("v9-run8")))


# --- a bundle's generation --------------------------------------------------------------------
@pytest.mark.parametrize("gen", GENERATIONS, ids=IDS)
def test_each_generations_bundle_is_identified_as_its_own(gen):
    found = legacy.identify(str(fixture(gen.id)))
    assert found is not None and found.id == gen.id


def test_todays_bundle_is_no_earlier_generation(full_fake):
    assert legacy.identify(str(full_fake)) is None
    rehash.earlier(full_fake)  # raises nothing


@pytest.mark.parametrize("gen", GENERATIONS, ids=IDS)
def test_todays_bundle_relabelled_is_taken_for_the_generation_it_names(full_fake, tmp_path, gen):
    """The forger's relabelling picks which earlier rules are asked; it never reaches today's
    checks, which refuse it without --legacy (tests/process/test_legacy_checkers.py: and the rules it
    names refuse it with)."""
    bundle = relabel(full_fake, tmp_path / "b", gen)
    assert legacy.identify(str(bundle)).id == gen.id
    for lines in problems(bundle):
        assert len(lines) == 1 and lines[0].startswith(f"unusable: {C.BAG_INFO}: a bundle of an earlier generation, "
                                                       f"{gen.label},"), lines
        assert f"harness verify --legacy {bundle}" in lines[0]


def test_a_format_relabelled_alone_names_no_generation(full_fake, tmp_path):
    """Abba-Format set to the newest frozen one with today's ids: no generation wrote that, so
    today's checks judge it and refuse the format."""
    bundle = tmp_path / "b"
    shutil.copytree(full_fake, bundle)
    bag_info(bundle, set_bag("Abba-Format", GENERATIONS[-1].format))
    assert legacy.identify(str(bundle)) is None
    for lines in problems(bundle):
        assert refused(lines, f'Abba-Format "{GENERATIONS[-1].format}" with schema ids of no generation')


def test_a_damaged_bag_info_is_named_not_taken_for_an_earlier_bundle(tmp_path):
    """bag-info.txt chooses rules only when it is the file the tag manifest lists: a pre-v6
    bundle whose bag-info lost a byte is today's problem, naming the file."""
    bundle = tmp_path / "b"
    shutil.copytree(fixture("pre-v6"), bundle)
    info = bundle / C.BAG_INFO
    info.write_bytes(info.read_bytes().replace(b"abba-harness 0.1.0", b"abba-harness 0.1.1"))
    assert legacy.identify(str(bundle)) is None
    r, v = problems(bundle)
    assert refused(r, "bag-info.txt: hash mismatch") and refused(v, "bag-info.txt: hash mismatch")


def test_identify_follows_no_link(tmp_path):
    """A bag-info.txt, or a data folder, that is a link is not read to choose rules."""
    for what in ("bag-info.txt", "data"):
        bundle = tmp_path / what / "b"
        shutil.copytree(fixture("v7-run5"), bundle)
        target = tmp_path / what / "elsewhere"
        (bundle / what).rename(target)
        (bundle / what).symlink_to(target)
        assert legacy.identify(str(bundle)) is None, what
    bundle = tmp_path / "fifo" / "b"
    shutil.copytree(fixture("v7-run5"), bundle)
    (bundle / "data" / "campaign.json").unlink()
    os.mkfifo(bundle / "data" / "campaign.json")  # never opened for long: O_NONBLOCK, then not regular
    assert legacy._schema(str(bundle), "data/campaign.json") is None


def test_identify_reads_a_documents_first_bytes_only(tmp_path):
    """The schema id is the first key every harness wrote: a document that opens otherwise, or
    nests a bomb, names nothing, and only its first READ_BYTES are read."""
    (tmp_path / "a.json").write_bytes(b"[" * (8 << 20))
    (tmp_path / "b.json").write_bytes(b'{"schema": "abba-harness/run/v5", ' + b"[" * (8 << 20))
    (tmp_path / "c.json").write_bytes(b'{"label": "A1", "schema": "abba-harness/run/v5"}')
    assert [legacy._schema(str(tmp_path), n) for n in ("a.json", "b.json", "c.json")] == \
        [None, "abba-harness/run/v5", None]


# --- an edited frozen checker judges nothing ----------------------------------------------------
@pytest.fixture
def vendor_copy(tmp_path, monkeypatch) -> Path:
    copy = tmp_path / "vendor"
    shutil.copytree(legacy.VENDOR, copy)
    monkeypatch.setattr(legacy, "VENDOR", str(copy))
    return copy


@pytest.mark.parametrize("gen", GENERATIONS, ids=IDS)
def test_an_edited_frozen_checker_is_refused(vendor_copy, gen):
    assert legacy.frozen(gen) == str(vendor_copy / gen.id / "rehash.py")
    for name in gen.files:
        path = vendor_copy / gen.id / name
        kept = path.read_bytes()
        path.write_bytes(kept.replace(b"def ", b"def  ", 1))
        with pytest.raises(legacy.Refused, match=rf"{name}: SHA-256 .* generations.json pins .*: the frozen checker "
                                                  rf"of .* was edited, and judges nothing"):
            legacy.frozen(gen)
        report = verify(fixture(gen.id), legacy=True)
        assert report.exit_code == 2 and "was edited" in report.unusable and report.frozen is None
        path.unlink()
        path.symlink_to(vendor_copy.parent / "elsewhere.py")
        (vendor_copy.parent / "elsewhere.py").write_bytes(kept)  # the right bytes, but through a link
        with pytest.raises(legacy.Refused, match="cannot be read"):
            legacy.frozen(gen)
        path.unlink()
        path.write_bytes(kept)
    legacy.frozen(gen)


# --- the harness that sealed a bundle -----------------------------------------------------------
def test_a_bundle_names_the_harness_commit_that_sealed_it(full_fake):
    env = json.loads((full_fake / C.ENVIRONMENT).read_text())
    if (ROOT / ".git").exists() and git("rev-parse", "--show-toplevel").stdout.decode().strip() == str(ROOT):
        head = git("rev-parse", "HEAD").stdout.decode().strip()
        assert env["harness_commit"] == head and env["harness_origin"] in ("checkout", "checkout-modified")
    line = f"Abba-Harness-Commit: {env['harness_commit'] or 'none'} ({env['harness_origin']})\n"
    assert line in (full_fake / C.BAG_INFO).read_text()


def test_the_harness_commit_is_bound_by_both_checkers(full_fake, tmp_path):
    bundle = tmp_path / "b"
    shutil.copytree(full_fake, bundle)
    bag_info(bundle, set_bag("Abba-Harness-Commit", f"{'0' * 40} (checkout)"))
    for lines in problems(bundle):
        assert refused(lines, "bag-info.txt: [bag-info] Abba-Harness-Commit"), lines
    shutil.rmtree(bundle)
    shutil.copytree(full_fake, bundle)
    origin = json.loads((bundle / C.ENVIRONMENT).read_text())["harness_origin"]
    forge(bundle, {C.ENVIRONMENT: lambda e: e.update(harness_commit=None)}, rederive=False)
    bag_info(bundle, set_bag("Abba-Harness-Commit", f"none ({origin})"))
    for lines in problems(bundle):
        assert refused(lines, "environment.json: [bag-info] harness_commit null with harness_origin"), lines


def test_where_no_commit_is_known_the_bundle_says_so(monkeypatch):
    """Not a git checkout (a wheel, or a checkout git cannot read): no commit, origin unknown;
    an installed copy whose installer recorded its commit (PEP 610): that commit."""
    from harness.engine import environment

    monkeypatch.setattr(environment, "_git", lambda top, *args: None)
    monkeypatch.setattr(environment, "_installed_commit", lambda: None)
    got = environment.harness_identity()
    assert (got["harness_commit"], got["harness_origin"]) == (None, "unknown")
    monkeypatch.setattr(environment, "_installed_commit", lambda: "a" * 40)
    got = environment.harness_identity()
    assert (got["harness_commit"], got["harness_origin"]) == ("a" * 40, "installed-vcs")


def test_an_installers_record_counts_only_for_the_copy_imported(monkeypatch, tmp_path):
    from harness.engine import environment

    class Dist:
        def __init__(self, where: Path):
            self.where = where

        def locate_file(self, rel):
            return self.where / rel

        def read_text(self, name):
            return json.dumps({"url": "https://example.org/abba.git", "vcs_info": {"vcs": "git", "commit_id": "b" * 40}})

    imported = Path(environment.__file__).resolve().parents[2]
    monkeypatch.setattr(environment.importlib.metadata, "distribution", lambda name: Dist(imported))
    assert environment._installed_commit() == "b" * 40
    monkeypatch.setattr(environment.importlib.metadata, "distribution", lambda name: Dist(tmp_path))
    assert environment._installed_commit() is None  # another copy's record says nothing of this one


def test_a_venv_inside_another_checkout_is_not_the_harness_checkout(monkeypatch, tmp_path):
    """git finds the enclosing repository of a site-packages folder: its HEAD is not the
    harness's source, so it is not recorded."""
    from harness.engine import environment

    monkeypatch.setattr(environment, "_git", lambda top, *args: f"{tmp_path}\n{'c' * 40}\n"
                        if args[0] == "rev-parse" else "")
    assert environment._git_commit() == (None, "")


def test_fixtures_are_vendor_folders():
    """The fixtures' workload files are earlier copies: under a vendor folder, as `duplicates`
    skips them (tests/fixtures/legacy/README.md)."""
    assert sorted(p.name for p in FIXTURES.iterdir() if p.is_dir()) == sorted(IDS)
    assert Path(legacy.VENDOR).name == "vendor" and FIXTURES.name == "vendor"
