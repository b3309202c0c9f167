"""`harness run` keeps its promises about --out and the worker's output (issue 26, item 6), on
the fake launcher: the path is claimed at the start and checked at publish; nothing that is not
this campaign's staging folder or a bundle of this harness is ever deleted; a sealed bundle is
never thrown away; a worker's output is kept whole or cut to its head and tail, the cut recorded
and bound."""
from __future__ import annotations

from fakes import Model, ModelLauncher, run_fake
from harness import contract as C, rehash
from harness.bundle import read


def test_an_out_created_by_someone_else_during_the_run_is_left_alone(tmp_path):
    out = tmp_path / "bundle"

    def squat(n, launch):
        if launch.label == "B2":
            out.mkdir()
            (out / "theirs.txt").write_text("not a bundle\n")

    outcome, _ = run_fake(tmp_path, out=out, launcher=ModelLauncher(Model(), on_launch=squat))
    assert (out / "theirs.txt").read_text() == "not a bundle\n" and len(list(out.iterdir())) == 1
    assert outcome.out != out and outcome.out.name.startswith("bundle-") and outcome.note
    assert "left untouched" in outcome.note and str(outcome.out) in outcome.note
    assert not rehash.rehash(str(outcome.out)).problems


def test_force_replaces_only_the_bundle_it_found(tmp_path):
    out = tmp_path / "bundle"
    first, _ = run_fake(tmp_path / "a", out=out)
    assert first.out == out

    def swap(n, launch):  # someone moves our old bundle away and puts their folder there
        if launch.label == "A2":
            out.rename(tmp_path / "moved")
            out.mkdir()
            (out / "theirs.txt").write_text("keep me\n")

    from harness.engine.runner import Runner
    from harness.plan import spec

    second = Runner(spec.load(tmp_path / "a" / "model.yaml"), out, force=True,
                    launcher=ModelLauncher(Model(), on_launch=swap)).run()
    assert (out / "theirs.txt").read_text() == "keep me\n"
    assert second.out != out and second.note
    assert (tmp_path / "moved" / C.TAGMANIFEST).is_file()  # the old bundle was never deleted either


def test_force_replaces_a_bundle_that_stayed_put(tmp_path):
    out = tmp_path / "bundle"
    run_fake(tmp_path / "a", out=out)
    from harness.engine.runner import Runner
    from harness.plan import spec

    again = Runner(spec.load(tmp_path / "a" / "model.yaml"), out, force=True, launcher=ModelLauncher(Model())).run()
    assert again.out == out and again.note is None
    assert read.load(out).digest == again.digest


def test_a_worker_output_over_the_cap_is_cut_to_its_head_and_tail_and_bound(tmp_path, monkeypatch):
    monkeypatch.setattr(C, "LOG_HEAD_BYTES", 1024)
    monkeypatch.setattr(C, "LOG_TAIL_BYTES", 1024)
    output = b"start\n" + b"x" * 100_000 + b"\nthe end\n"
    outcome, _ = run_fake(tmp_path, Model(output=output))
    bundle = read.load(outcome.out)
    log = bundle.runs[0].log
    assert log.written == len(output) and log.truncated and log.bytes == (outcome.out / log.path).stat().st_size
    stored = (outcome.out / log.path).read_bytes()
    assert stored.startswith(b"start\n") and stored.endswith(b"the end\n")
    assert b"bytes of this worker's output left out here" in stored
    assert not rehash.rehash(str(outcome.out)).problems
    # the cut is bound: a log edited inside its bound size is refused by its hash
    path = outcome.out / log.path
    path.write_bytes(stored.replace(b"start", b"START"))
    from harness.selftest import tamper

    tamper.reseal(outcome.out)
    problems = rehash.rehash(str(outcome.out)).problems
    assert any("SHA-256 is not the one its record names" in p for p in problems), problems
