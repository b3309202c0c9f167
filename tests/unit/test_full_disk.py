"""Issue 33, item 1: a full disk (ENOSPC) or any OSError while evidence is written. On the fake
launcher (no process): the write fails as one WriteFailed naming the file and the OSError,
nothing is half-written, a campaign that ended keeps its runs in the staging folder, and
`harness seal`'s engine seals that folder into a bundle both checkers accept; where the runs
did not all end it refuses. The same runs on real processes: tests/process/test_full_disk.py."""
from __future__ import annotations

import errno
import os

import pytest

from fakes import Model, ModelLauncher, run_fake
from harness import cli, contract as C, files, outcomes, rehash
from harness.bundle import write as bundle
from harness.engine import reseal
from harness.files import WriteFailed
from harness.judge.verify import verify


def fill_disk_at(monkeypatch, mark: str) -> None:
    """fsync of a file whose name holds mark fails with ENOSPC, as on a full disk."""
    real = os.fsync

    def fsync(fd):
        try:
            name = os.path.basename(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            name = ""
        if mark in name:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd)

    monkeypatch.setattr(os, "fsync", fsync)


def test_a_full_disk_fails_an_atomic_write_as_one_line_and_keeps_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "a.json"
    files.atomic_write_bytes(target, b"old")
    fill_disk_at(monkeypatch, ".a.json.")
    with pytest.raises(WriteFailed) as caught:
        files.atomic_write_bytes(target, b"new")
    assert isinstance(caught.value, OSError) and caught.value.errno == errno.ENOSPC
    assert caught.value.line() == (f"cannot write {target}: No space left on device (ENOSPC); free space (or make "
                                   "the folder writable) and run the command again")
    assert target.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == ["a.json"]


def test_a_full_disk_at_the_manifest_keeps_every_run_and_seal_finishes_the_bundle(tmp_path, monkeypatch):
    out = tmp_path / "bundle"
    with monkeypatch.context() as m:
        fill_disk_at(m, ".manifest-sha256.txt.")
        with pytest.raises(WriteFailed) as caught:
            run_fake(tmp_path, Model(), out=out)
    failed = caught.value
    staging = failed.folder
    assert failed.sealable and staging == out.parent / f"{out.name}.partial-{os.getpid()}" and not out.exists()
    runs = sorted(p.stem for p in (staging / "data" / "runs").iterdir())
    assert len(runs) == 12 and (staging / C.RUNNER).is_file() and (staging / C.COMPARISON).is_file()
    assert failed.line().startswith(f"cannot write {staging / C.MANIFEST}: No space left on device (ENOSPC); "
                                    f"the 12 finished run(s) are kept in {staging}; free space, then `harness seal ")
    # with room again: comparison re-derived, sealed, verified, published
    (staging / C.COMPARISON).unlink()  # re-derived, not trusted
    sealed = reseal.seal_kept(staging, out)
    assert verify(staging).exit_code == 0
    where, note = sealed.staging.publish(bundle.claim_output(out, False), sealed.digest)
    assert where == out and note is None and not staging.exists()
    assert not rehash.rehash(str(out)).problems and verify(out).exit_code == 0
    assert sealed.comparison.status == "complete" and outcomes.run_code(sealed.comparison) == outcomes.OK


def test_a_full_disk_before_the_runs_ended_keeps_them_but_seal_refuses(tmp_path, monkeypatch):
    out = tmp_path / "bundle"
    with monkeypatch.context() as m:
        fill_disk_at(m, ".A2.json.")
        with pytest.raises(WriteFailed) as caught:
            run_fake(tmp_path, Model(), out=out)
    failed = caught.value
    assert not failed.sealable and "cannot be sealed" in failed.line() and failed.line().endswith(
        "free space and run the campaign again")
    assert (failed.folder / C.run_path("A1")).is_file()
    with pytest.raises(reseal.Unsealable, match="the campaign stopped before its runs ended"):
        reseal.seal_kept(failed.folder, out)
    assert not out.exists()


def test_a_failed_publish_keeps_the_sealed_bundle_for_seal(tmp_path, monkeypatch):
    out = tmp_path / "bundle"
    real = os.rename

    def rename(src, dst):
        if ".partial-" in os.fspath(src):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), os.fspath(dst))
        return real(src, dst)

    with monkeypatch.context() as m:
        m.setattr(os, "rename", rename)
        with pytest.raises(WriteFailed) as caught:
            run_fake(tmp_path, Model(), out=out)
    failed = caught.value
    assert "the sealed bundle is kept in" in failed.line() and failed.sealable and failed.folder.is_dir()
    sealed = reseal.seal_kept(failed.folder, out)
    sealed.staging.publish(bundle.claim_output(out, False), sealed.digest)
    assert verify(out).exit_code == 0


def test_seal_refuses_what_is_not_a_staging_folder_of_this_harness(tmp_path):
    other = tmp_path / "notes"
    other.mkdir()
    (other / "a.txt").write_text("mine")
    with pytest.raises(reseal.Unsealable, match="not a staging folder of this harness"):
        reseal.seal_kept(other, tmp_path / "out")
    with pytest.raises(reseal.Unsealable, match="not a folder"):
        reseal.seal_kept(tmp_path / "missing", tmp_path / "out")
    assert (other / "a.txt").read_text() == "mine"


def test_seal_refuses_a_staging_folder_a_run_still_writes(tmp_path):
    out = tmp_path / "bundle"
    staging = out.parent / f"{out.name}.partial-4242"
    staging.mkdir()
    with bundle.OutputLock(out):
        with pytest.raises(reseal.Unsealable, match="still writing it"):
            reseal.check_idle(staging)
    reseal.check_idle(staging)  # the lock released: nothing runs


def test_an_attestation_on_a_full_disk_is_one_line_and_never_half_written(tmp_path, monkeypatch):
    from harness.attest import check

    target = tmp_path / "b.intoto.json"
    fill_disk_at(monkeypatch, ".b.intoto.json.")
    with pytest.raises(WriteFailed) as caught:
        check._write(target, b"{}" * 1000, replace=False)
    assert "(ENOSPC)" in caught.value.line() and "sign again" in caught.value.line()
    assert list(tmp_path.iterdir()) == []


def test_every_command_says_a_write_it_did_not_catch_as_one_line_and_exit_10(tmp_path, monkeypatch, capsys):
    outcome, _ = run_fake(tmp_path, Model())
    golden = tmp_path / "golden.json"
    fill_disk_at(monkeypatch, ".golden.json.")
    assert cli.main(["golden", str(outcome.out), "-o", str(golden)]) == outcomes.WRITE_FAILED == 10
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"harness golden: error: cannot write {golden}: No space left on device (ENOSPC); free space "
                   "(or make the folder writable) and run the command again"]
    assert not golden.exists()


@pytest.mark.parametrize("mark, kept", [(".manifest-sha256.txt.", "run `harness reproduce` again"),
                                        (".reproduction.json.", "the re-run's runs are kept in ")])
def test_a_reproduction_on_a_full_disk_keeps_the_re_run_and_names_the_fix(tmp_path, monkeypatch, mark, kept):
    """The re-run's own seal (the manifest) or the reproduction receipt on a full disk: one
    WriteFailed (exit 10 through the CLI) naming the file, the kept folder and the fix; nothing
    at the output, and `harness seal` makes a bundle of what was kept that both checkers accept."""
    from checks_support import reproduction

    original = run_fake(tmp_path / "first", Model(items=4, item_s=0.1), rounds=3)[0].out
    out = tmp_path / "repro"
    with monkeypatch.context() as m:
        fill_disk_at(m, mark)
        with pytest.raises(WriteFailed) as caught:
            reproduction(original, out)
    failed = caught.value
    line = failed.line()
    assert "\n" not in line and line.startswith("cannot write ") and "No space left on device (ENOSPC)" in line
    assert kept in line and f"harness seal {failed.folder} --out {out}" in line and failed.sealable
    assert not out.exists() and failed.folder.is_dir() and any((failed.folder / "data" / "runs").iterdir())
    assert outcomes.WRITE_FAILED == 10
    (failed.folder / C.COMPARISON).unlink(missing_ok=True)  # re-derived by seal, not trusted
    sealed = reseal.seal_kept(failed.folder, out)
    where, _ = sealed.staging.publish(bundle.claim_output(out, False), sealed.digest)
    assert where == out and not rehash.rehash(str(out)).problems and verify(out).exit_code == 0


def test_an_os_error_during_the_runs_that_is_no_write_says_what_it_is(tmp_path, monkeypatch):
    """A launch that fails with an OSError that is no write's (too many open files): the runs
    are kept as for a full disk, exit 10, but the line names an OS error, never "cannot write"."""
    from harness.engine import launch

    real, calls = launch.FakeLauncher.run, {"n": 0}

    def run(self, job):
        calls["n"] += 1
        if calls["n"] == 4:  # two pre-flight runs, then the campaign's second
            raise OSError(errno.EMFILE, os.strerror(errno.EMFILE), "/proc/self/fd")
        return real(self, job)

    monkeypatch.setattr(launch.FakeLauncher, "run", run)
    with pytest.raises(WriteFailed) as caught:
        run_fake(tmp_path, Model(), out=tmp_path / "bundle")
    line = caught.value.line()
    assert "\n" not in line and "cannot write" not in line and not caught.value.write
    assert line.startswith("an OS error (not a write) at /proc/self/fd: Too many open files (EMFILE)"), line
    assert "kept in" in line and line.endswith("mend what the error names and run the campaign again"), line
    assert files.write_failed("x", OSError(errno.ENOSPC, "full")).write  # a full disk stays a write
