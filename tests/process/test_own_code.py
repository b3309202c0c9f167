"""Issue 11: a user's own repository, first try. Each trap a new user met is a test here:
data loss under --force, failures that read as success, misleading parity messages, src
layouts, build steps, working-tree candidates, errors found too late, tracebacks on
output paths."""
from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest

from conftest import ROOT, cache_env, harness, make_target, no_traceback, write_campaign
from harness import contract as C

GIT = ["git", "-c", "user.name=u", "-c", "user.email=u@u", "-c", "init.defaultBranch=main"]

WORKLOAD = '''
    import numpy as np

    from fastsum import total


    class Bench:
        def __init__(self, ctx):
            self.mode = ctx.params.get("mode", "ok")
            self.items = [f"n{i}" for i in range(4)]

        def run(self, item):
            n = 2000 * (1 + int(item[1:]))
            if self.mode == "bare":
                return np.arange(3)
            if self.mode == "raise" or (self.mode == "mostly_raise" and item != "n3"):
                raise ValueError(f"no {item}")
            if self.mode == "object":
                return {"x": np.array([object()])}
            if self.mode == "int":
                return {"total": total(n)}
            return {"total": np.array([total(n)], dtype=np.int64)}


    def setup(ctx):
        return Bench(ctx)
'''


def git(repo: Path, *args) -> str:
    return subprocess.run([*GIT, *args], cwd=repo, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def user_repo(tmp_path) -> Path:
    """A src-layout package whose build step generates a module; base committed, the
    candidate's change left uncommitted in the working tree; the workload beside it."""
    repo = tmp_path / "repo"
    (repo / "src" / "fastsum").mkdir(parents=True)
    (repo / "src" / "fastsum" / "__init__.py").write_text(textwrap.dedent('''
        from fastsum._generated import STEP


        def total(n):
            s = 0
            for i in range(0, n, STEP):
                s += i
            return s
    '''))
    (repo / "gen.py").write_text("open('src/fastsum/_generated.py', 'w').write('STEP = 1\\n')\n")
    (repo / ".gitignore").write_text("_generated.py\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "slow sum")
    (repo / "src" / "fastsum" / "__init__.py").write_text(textwrap.dedent('''
        from fastsum._generated import STEP


        def total(n):
            return sum(range(0, n, STEP))
    '''))
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "bench_sum.py").write_text(textwrap.dedent(WORKLOAD))
    return repo


def campaign(tmp_path: Path, repo: Path, **extra) -> Path:
    import yaml

    body = {"name": "fastsum", "target": {"repo": str(repo)}, "base": {"rev": "HEAD"},
            "candidate": {"rev": "WORKTREE"},
            "workload": {"entry": "bench_sum:setup", "path": str(tmp_path / "bench"), "sys_path": ["src"]},
            "build": [["{python}", "gen.py"]], "order": "ABBA", "slots": 1}
    body.update(extra)
    path = tmp_path / "fastsum.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    return path


def test_src_layout_build_step_and_working_tree_candidate(user_repo, tmp_path):
    status_before = git(user_repo, "status", "--porcelain")
    refs_before = git(user_repo, "for-each-ref")
    env = cache_env(tmp_path / "cache")
    out = tmp_path / "out"
    result = harness("run", campaign(tmp_path, user_repo), "--out", out, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "parity: identical (12/12 fields, 4 per run compared with the reference, 4 items, 0 recorded errors)" in result.stdout
    # The working tree, index and refs are as they were: the snapshot is a dangling commit.
    assert git(user_repo, "status", "--porcelain") == status_before
    assert git(user_repo, "for-each-ref") == refs_before and not git(user_repo, "stash", "list")
    revisions = json.loads((out / "data/receipts/revisions.json").read_text())
    head = git(user_repo, "rev-parse", "HEAD").strip()
    assert revisions["base"]["sha"] == head and revisions["candidate"]["sha"] != head
    assert "working tree" in revisions["candidate"]["note"]
    builds = json.loads((out / "data/receipts/builds.json").read_text())
    assert [s["exit_code"] for v in ("base", "candidate") for s in builds[v]["steps"]] == [0, 0]
    record = json.loads((out / "data/runs/B1.json").read_text())
    assert record["imported_from"]["workload"].endswith("bench_sum.py")
    assert harness("verify", out).returncode == 0
    # A second campaign reuses the cached builds.
    again = harness("run", campaign(tmp_path, user_repo), "--out", tmp_path / "again", env=env)
    builds = json.loads((tmp_path / "again/data/receipts/builds.json").read_text())
    assert again.returncode == 0 and builds["base"]["cached"] and builds["candidate"]["cached"]


def test_a_failed_build_is_exit_2_with_its_last_lines(user_repo, tmp_path):
    path = campaign(tmp_path, user_repo, build=[["{python}", "-c", "import sys; print('no compiler'); sys.exit(3)"]])
    result = harness("run", path, "--out", tmp_path / "out", env=cache_env(tmp_path / "cache"))
    assert result.returncode == 2 and no_traceback(result)
    assert "build:" in result.stderr and "(exit 3): no compiler" in result.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("mode, reason", [
    ("bare", "broke the output protocol: returned ndarray, expected a non-empty dict"),
    ("object", "broke the output protocol: field 'x': unsupported dtype object"),
    ("raise", "run() raised on every item (4); the first: n0: ValueError: no n0"),
    # 21.4: a Python number has no dtype of its own; the README says arrays, and so does the harness.
    ("int", "broke the output protocol: field 'total': a Python int (1999000), not an array: return "
            "np.array(value, dtype=np.int64) so its dtype is explicit"),
])
def test_broken_protocols_fail_before_anything_is_timed(user_repo, tmp_path, mode, reason):
    path = campaign(tmp_path, user_repo, workload={"entry": "bench_sum:setup", "path": str(tmp_path / "bench"),
                                                   "sys_path": ["src"], "params": {"mode": mode}})
    out = tmp_path / "out"
    result = harness("run", path, "--out", out, env=cache_env(tmp_path / "cache"))
    assert result.returncode == 2 and no_traceback(result), result.stdout + result.stderr
    assert "pre-flight: " in result.stderr and reason in result.stderr
    assert "base (" in result.stderr and "no bundle was written" in result.stderr
    assert not out.exists() and not list(tmp_path.glob("out.partial-*"))
    check = harness("check", path, env=cache_env(tmp_path / "cache"))
    assert check.returncode == 2 and reason in check.stderr
    errors = [line for line in check.stderr.splitlines() if "error" in line]
    assert errors and all(line.startswith("harness check: error: ") for line in errors)


def test_protocol_failures_inside_a_run_fail_the_campaign(tmp_path):
    """Past the pre-flight (which runs the first items), a run whose every item raises, or
    whose outputs break the protocol, is a failed run: exit 4, the reason named."""
    tree, patch = make_target(tmp_path, {"m/__init__.py": "X = 1\n"}, {"m/__init__.py": "X = 2\n"})
    wl = tmp_path / "wl"
    wl.mkdir()
    (wl / "late.py").write_text(textwrap.dedent('''
        import numpy as np


        class W:
            def __init__(self, ctx):
                self.items = [f"i{k}" for k in range(5)]
                self.label = ctx.label

            def run(self, item):
                if self.label == "B1":
                    if item == "i4":
                        return [1, 2]
                    raise RuntimeError("boom")
                return {"x": np.arange(3)}


        def setup(ctx):
            return W(ctx)
    '''))
    path = write_campaign(tmp_path / "late.yaml", tree, patch, wl, "late:setup")
    result = harness("run", path, "--out", tmp_path / "out", env=cache_env(tmp_path / "cache"))
    assert result.returncode == 4, result.stdout + result.stderr
    assert "B1: worker exited with code 1: run('i4') broke the output protocol: returned list" in result.stdout
    assert "exit: 4 (campaign failed)" in result.stdout
    assert harness("verify", tmp_path / "out").returncode == 0


def work_calling_workload(tmp_path: Path) -> Path:
    """A workload folder whose items call m.work(100) (for the stage-call tests)."""
    wl = tmp_path / "wl"
    wl.mkdir()
    (wl / "w.py").write_text(textwrap.dedent('''
        import numpy as np

        import m


        class W:
            items = ["a", "b"]

            def run(self, item):
                return {"s": np.array([m.work(100)])}


        def setup(ctx):
            return W()
    '''))
    return wl


def test_fewer_stage_calls_name_the_cause_and_the_fix(tmp_path):
    tree, patch = make_target(
        tmp_path, {"m/__init__.py": "def step(x):\n    return x\n\n\ndef work(n):\n    return sum(step(i) for i in range(n))\n"},
        {"m/__init__.py": "def step(x):\n    return x\n\n\ndef work(n):\n    return sum(range(n))\n"})
    wl = work_calling_workload(tmp_path)
    path = write_campaign(tmp_path / "calls.yaml", tree, patch, wl, "w:setup", stages={"step": "m:step"})
    result = harness("run", path, "--out", tmp_path / "out", env=cache_env(tmp_path / "cache"))
    assert result.returncode == 3
    verdict = next(line for line in result.stdout.splitlines() if line.startswith("verdict:"))
    assert verdict.startswith("verdict: parity mismatch, timing ")  # the timing is shown whatever parity says
    assert ("parity mismatch: stage call counts differ: 'step' is called 200 times per base run and 0 per candidate "
            "run; if the change is meant to call it less, mark it `calls: per_variant`") in verdict
    assert "(0 mismatches)" not in result.stdout
    report = harness("report", tmp_path / "out")
    assert "**Parity fails: stage call counts differ: 'step'" in report.stdout


def test_force_never_deletes_what_is_not_a_bundle(tmp_path):
    precious = tmp_path / "thesis"
    precious.mkdir()
    (precious / "thesis.txt").write_text("three years of work\n")
    result = harness("run", ROOT / "campaigns" / "demo.yaml", "--out", precious, "--force")
    assert result.returncode == 2 and no_traceback(result)
    assert result.stderr.count("\n") == 1 and "not an abba-harness bundle" in result.stderr
    assert (precious / "thesis.txt").read_text() == "three years of work\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["thesis"]  # no lock, staging or replaced-PID left


def test_out_that_is_a_file_or_unusable(tmp_path):
    afile = tmp_path / "notes.txt"
    afile.write_text("keep me\n")
    for out in (afile, afile / "bundle"):
        result = harness("run", ROOT / "campaigns" / "demo.yaml", "--out", out, "--force")
        assert result.returncode == 2 and no_traceback(result), result.stderr
        assert result.stderr.startswith("harness run: error: ") and result.stderr.count("\n") == 1
    assert afile.read_text() == "keep me\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_typos_are_found_before_anything_is_timed(tmp_path):
    import yaml

    demo = yaml.safe_load((ROOT / "campaigns" / "demo.yaml").read_text())
    for step in demo["target"]["build"]:
        for kind in ("tree", "patch"):
            if kind in step:
                step[kind] = str(ROOT / "campaigns" / step[kind])
    demo["workload"]["path"] = str(ROOT / "campaigns" / demo["workload"]["path"])
    demo.pop("golden")
    demo["workload"]["entry"] = "demo_workloadd:setup"
    demo["stages"] = {"means": "demo.core:moving_meanz"}
    path = tmp_path / "typo.yaml"
    path.write_text(yaml.safe_dump(demo))
    check = harness("check", path)
    assert check.returncode == 2 and no_traceback(check)
    lines = [line for line in check.stderr.splitlines() if line.startswith("harness check: error:")]
    assert len(lines) == 2 and lines[0].startswith(f"harness check: error: {path}: base (")
    assert "stages: " in lines[0] and "moving_meanz" in lines[0] and lines[1].startswith(
        f"harness check: error: {path}: candidate (")
    demo["stages"] = {}
    path.write_text(yaml.safe_dump(demo))
    run = harness("run", path, "--out", tmp_path / "out")
    assert run.returncode == 2 and "workload.entry: cannot import 'demo_workloadd:setup'" in run.stderr
    assert not (tmp_path / "out").exists()


def test_same_revision_twice_is_an_error(user_repo, tmp_path):
    result = harness("run", campaign(tmp_path, user_repo, candidate={"rev": "main"}), "--out", tmp_path / "o",
                     env=cache_env(tmp_path / "cache"))
    assert result.returncode == 2 and "both resolve to" in result.stderr and "nothing to compare" in result.stderr


def test_overrides_are_recorded_and_verified(user_repo, tmp_path):
    out = tmp_path / "out"
    result = harness("run", campaign(tmp_path, user_repo), "--out", out, "--order", "AB", "--items", "2",
                     "--param", "mode=ok", env=cache_env(tmp_path / "cache"))
    assert result.returncode == 0, result.stderr
    recorded = json.loads((out / "data/campaign.json").read_text())
    assert recorded["overrides"] == {"order": "AB", "items": 2, "params": {"mode": "ok"}}
    assert recorded["order"] == "AB" and recorded["labels"] == ["A1", "B1"]
    assert [it["id"] for it in json.loads((out / "data/runs/A1.json").read_text())["items"]] == ["n0", "n2"]
    assert harness("verify", out).returncode == 0
    # A forger who drops the recorded override: campaign.json no longer follows from the YAML.
    from harness.selftest import tamper

    recorded["overrides"] = {}
    (out / "data/campaign.json").write_text(json.dumps(recorded))
    tamper.reseal(out)
    bad = harness("verify", out)
    assert bad.returncode == 1 and "[campaign] order is \"AB\", campaign.yaml gives \"ABBA\"" in bad.stdout


def test_version_and_one_error_prefix():
    version = harness("--version")
    assert version.returncode == 0 and version.stdout.startswith("abba-harness ")
    missing = harness("verify", "/nonexistent/bundle")
    assert missing.returncode == 2 and missing.stderr.startswith("harness verify: error: ")


def test_init_writes_a_loadable_minimal_campaign_and_never_overwrites(user_repo, tmp_path):
    from harness.plan import spec

    out = tmp_path / "bench" / "c.yaml"
    made = harness("init", "--repo", user_repo, "--entry", "bench_sum:setup", "--workload-path", tmp_path / "bench",
                   "-o", out)
    assert made.returncode == 0, made.stderr
    campaign = spec.load(out)
    assert (campaign.base.rev, campaign.candidate.rev, campaign.rounds, campaign.slots) == ("HEAD", "WORKTREE",
                                                                                          C.DEFAULT_FIRST_LOOK, 1)
    text = out.read_text()
    for default in ("# rounds: auto", "# budget_s: 60", f"# min_rounds: {C.DEFAULT_FIRST_LOOK}", "# slots: 1", "run_s: 600", "campaign_s: 1200", "threshold: 0.02",
                    "# sys_path: [src]", "# build: []"):
        assert default in text, default
    again = harness("init", "--repo", user_repo, "--entry", "x:y", "-o", out)
    assert again.returncode == 2 and "already exists" in again.stderr and out.read_text() == text


def test_a_plain_install_says_what_it_lacks(monkeypatch, tmp_path, capsys):
    from harness import clone

    monkeypatch.setattr(clone, "ROOT", tmp_path)
    with pytest.raises(SystemExit) as exit_:
        clone.clone_file("campaigns/demo.yaml", "selftest")
    assert exit_.value.code == 2
    assert capsys.readouterr().err == ("harness selftest: error: needs a clone of the abba-harness repository "
                                       "(campaigns/demo.yaml is not part of an installed package); run it from a "
                                       "clone\n")
    with pytest.raises(SystemExit):
        clone.require("no_such_module_abba", "microbench ar-loop")
    assert "pip install 'abba-harness[campaigns]'" in capsys.readouterr().err


def test_items_that_raise_are_allowed_when_one_returns(user_repo, tmp_path):
    """Recorded errors are evidence, not a broken campaign: three of four items raise in both
    revisions, the pre-flight reaches the fourth, and the run is complete with parity."""
    path = campaign(tmp_path, user_repo, workload={"entry": "bench_sum:setup", "path": str(tmp_path / "bench"),
                                                   "sys_path": ["src"], "params": {"mode": "mostly_raise"}})
    result = harness("run", path, "--out", tmp_path / "out", "--order", "AB", env=cache_env(tmp_path / "cache"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "parity: identical (1/1 fields, 1 per run compared with the reference, 4 items, 3 recorded errors)" \
        in result.stdout


def test_a_stage_neither_revision_calls_is_a_pre_flight_error(tmp_path):
    """A stage the code calls through an alias bound before the wrapper was installed
    records 0 calls in every run, so parity on call counts would pass: the pre-flight
    names it, the likely causes and the fix. One revision calling it 0 times is the
    change's business (test_fewer_stage_calls_name_the_cause_and_the_fix)."""
    body = "def step(x):\n    return x\n\n\n_step = step  # bound at import, before any wrapper\n\n\n" \
           "def work(n):\n    return sum(_step(i) for i in range(n))\n"
    tree, patch = make_target(tmp_path, {"m/__init__.py": body}, {"m/__init__.py": body.replace("range(n)", "range(n + 1)")})
    wl = work_calling_workload(tmp_path)
    path = write_campaign(tmp_path / "alias.yaml", tree, patch, wl, "w:setup", stages={"step": "m:step"})
    result = harness("check", path, env=cache_env(tmp_path / "cache"))
    assert result.returncode == 2 and no_traceback(result), result.stdout + result.stderr
    assert ("stages: 'step' (m:step) never called in either revision's pre-flight item: the code calls it "
            "through a name bound before the wrapper was installed") in result.stderr
    assert "mark the stage `optional: true`" in result.stderr
    run = harness("run", path, "--out", tmp_path / "out", env=cache_env(tmp_path / "cache"))
    assert run.returncode == 2 and "never called" in run.stderr and not (tmp_path / "out").exists()
    # Marked optional, the same campaign passes the pre-flight.
    optional = write_campaign(tmp_path / "optional.yaml", tree, patch, wl, "w:setup",
                              stages={"step": {"path": "m:step", "optional": True}})
    assert harness("check", optional, env=cache_env(tmp_path / "cache")).returncode == 0


# --- Issue 21: the traps a new user hit on real libraries -------------------------------

def test_untracked_module_of_a_worktree_candidate_says_git_add(user_repo, tmp_path):
    """21.1: the change imports a new module left untracked; a WORKTREE snapshot takes
    tracked files only, so the candidate cannot import it: the line says so and the fix."""
    init = user_repo / "src" / "fastsum" / "__init__.py"
    init.write_text("from fastsum._generated import STEP\nfrom fastsum._fast import total\n")
    (user_repo / "src" / "fastsum" / "_fast.py").write_text("def total(n):\n    return sum(range(0, n, 1))\n")
    result = harness("check", campaign(tmp_path, user_repo), env=cache_env(tmp_path / "cache"))
    assert result.returncode == 2 and no_traceback(result), result.stderr
    line = next(x for x in result.stderr.splitlines() if "error:" in x and ": candidate (" in x)
    assert "No module named 'fastsum._fast' (at src/fastsum/__init__.py:2)" in line
    assert line.endswith("; src/fastsum/_fast.py is untracked: `git add` it; a WORKTREE candidate takes "
                         "tracked files only")
    # Ignored by git (a build product): the hint names the build step instead.
    (user_repo / ".gitignore").write_text("_generated.py\n_fast.py\n")
    git(user_repo, "add", ".gitignore")
    git(user_repo, "commit", "-qm", "ignore")
    init.write_text(init.read_text() + "\n")
    result = harness("check", campaign(tmp_path, user_repo), env=cache_env(tmp_path / "cache"))
    assert "src/fastsum/_fast.py exists in the working tree but git ignores it" in result.stderr
    assert "add the step under `build:`" in result.stderr


def test_a_clean_working_tree_says_there_is_no_uncommitted_change(user_repo, tmp_path):
    git(user_repo, "stash", "-q")
    (user_repo / "new_module.py").write_text("X = 1\n")
    result = harness("check", campaign(tmp_path, user_repo), env=cache_env(tmp_path / "cache"))
    assert result.returncode == 2 and no_traceback(result) and result.stderr.count("error:") == 1, result.stderr
    assert ("candidate.rev: WORKTREE: the working tree has no uncommitted changes to tracked files (it is HEAD, "
            in result.stderr and "nothing to compare" in result.stderr)
    assert "1 untracked file(s) (e.g. new_module.py) are left out: `git add` them" in result.stderr


def test_src_layout_without_sys_path_names_the_folder_and_the_key(user_repo, tmp_path):
    """21.2: `No module named 'fastsum'` alone sends a user searching; the target has
    src/fastsum, so the line suggests `sys_path: [src]`."""
    path = campaign(tmp_path, user_repo, workload={"entry": "bench_sum:setup", "path": str(tmp_path / "bench")})
    result = harness("check", path, env=cache_env(tmp_path / "cache"))
    assert result.returncode == 2 and no_traceback(result), result.stderr
    for variant in ("base", "candidate"):
        line = next(x for x in result.stderr.splitlines() if "error:" in x and f": {variant} (" in x)
        assert "ModuleNotFoundError: No module named 'fastsum'" in line
        assert line.endswith("; the target has src/fastsum: add `sys_path: [src]` under workload"), line


def test_a_missing_workload_folder_is_named(user_repo, tmp_path):
    path = campaign(tmp_path, user_repo, workload={"entry": "bench_sum:setup", "path": str(tmp_path / "bnech"),
                                                   "sys_path": ["src"]})
    for command in (("check", path), ("run", path, "--out", tmp_path / "out")):
        result = harness(*command, env=cache_env(tmp_path / "cache"))
        assert result.returncode == 2 and no_traceback(result) and result.stderr.count("\n") == 1, result.stderr
        assert f"workload.path: folder '{tmp_path / 'bnech'}' does not exist" in result.stderr
    assert not (tmp_path / "out").exists()


def test_stage_and_setup_errors_read_as_the_users_own(user_repo, tmp_path):
    """21.3: no harness class path in a message; setup() errors give the user's file:line."""
    path = campaign(tmp_path, user_repo, stages={"total": "fastsum:totl"})
    result = harness("check", path, env=cache_env(tmp_path / "cache"))
    assert result.returncode == 2 and no_traceback(result)
    assert "stages: 'fastsum:totl': 'totl' not found" in result.stderr
    assert "stagetimer" not in result.stderr and "StageError" not in result.stderr
    (tmp_path / "bench" / "bench_sum.py").write_text(textwrap.dedent(WORKLOAD) + textwrap.dedent('''

        def load(ctx):
            return ctx.params["corpus"]


        def setup(ctx):
            load(ctx)
            return Bench(ctx)
    '''))
    lineno = next(i for i, x in enumerate((tmp_path / "bench" / "bench_sum.py").read_text().splitlines(), 1)
                  if 'ctx.params["corpus"]' in x)
    result = harness("check", campaign(tmp_path, user_repo), env=cache_env(tmp_path / "cache"))
    assert result.returncode == 2 and no_traceback(result)
    assert (f"workload.entry: setup() failed: KeyError: 'corpus' (at {tmp_path / 'bench' / 'bench_sum.py'}:"
            f"{lineno})") in result.stderr, result.stderr
    # an endless `items` (a generator that never ends) is read to one more than a run measures, then refused
    (tmp_path / "bench" / "bench_sum.py").write_text(textwrap.dedent(WORKLOAD) + textwrap.dedent('''

        def setup(ctx):
            import itertools

            bench = Bench(ctx)
            bench.items = (f"n{i}" for i in itertools.count())
            return bench
    '''))
    result = harness("check", campaign(tmp_path, user_repo), env=cache_env(tmp_path / "cache"))
    assert result.returncode == 2 and no_traceback(result)
    assert "workload.entry: setup() gave more than 10000 items; a run measures at most 10000" in result.stderr


def test_an_input_hash_mismatch_prints_the_digest_in_full(user_repo, tmp_path):
    import hashlib

    data = tmp_path / "corpus.txt"
    data.write_bytes(b"some data\n")
    path = campaign(tmp_path, user_repo, inputs={"corpus": {"path": str(data), "sha256": "0" * 64}})
    result = harness("check", path, env=cache_env(tmp_path / "cache"))
    assert result.returncode == 2 and no_traceback(result)
    actual = hashlib.sha256(b"some data\n").hexdigest()
    assert f"has sha256 {actual}, pinned {'0' * 64}" in result.stderr


def test_reproduce_writes_a_fresh_folder_under_out_never_beside_the_bundle(demo_bundle, tmp_path):
    """21.5: without --out, a reproduction of a bundle (committed ones live under evidence/)
    goes to a fresh folder under the current folder's out/, printed; never beside the
    bundle, never into an existing folder."""
    import shutil

    evidence = tmp_path / "repo" / "evidence"
    evidence.mkdir(parents=True)
    bundle = evidence / "demo"
    shutil.copytree(demo_bundle, bundle)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    first = harness("reproduce", bundle, "--repo", ROOT, "--order", "AB", "--items", 2, cwd=elsewhere)
    # Where it writes is the point; one AB round gives no interval to judge timing by (exit 7).
    assert first.returncode in (0, 7, 8, 9), first.stdout + first.stderr
    out = elsewhere / "out" / "demo.reproduction"
    assert f"harness: reproduction: writing the new bundle to {out}" in first.stderr
    assert f"reproduction: {out} (digest " in first.stdout
    assert harness("verify", out).returncode == 0
    assert sorted(p.name for p in evidence.iterdir()) == ["demo"]  # nothing written beside it
    second = harness("reproduce", bundle, "--repo", ROOT, "--order", "AB", "--items", 2, cwd=elsewhere)
    assert second.returncode in (0, 7, 8, 9), second.stdout + second.stderr
    assert f"reproduction: {out.parent / 'demo.reproduction-2'} (digest " in second.stdout
    assert (out / "bagit.txt").is_file()


def test_report_rerun_line_names_a_command_that_writes_a_fresh_folder(demo_bundle, tmp_path):
    """21.5: REPORT.md's re-run line is `harness reproduce`, whose default folder is fresh;
    the `harness run --out out/NAME` it gave reused a folder that could exist."""
    import shutil

    shutil.copytree(demo_bundle, tmp_path / "evidence" / "demo")
    preview = harness("report", tmp_path / "evidence" / "demo", "--root", tmp_path)
    assert preview.returncode == 0, preview.stderr
    assert "harness reproduce B                    # re-run it (into out/NAME.reproduction)" in preview.stdout
    assert "harness run " not in preview.stdout


def test_target_lists_the_newest_commits_and_says_how_many_are_left_out(user_repo, tmp_path):
    for k in range(24):
        git(user_repo, "commit", "-q", "--allow-empty", "-m", f"step {k}")
    path = campaign(tmp_path, user_repo)
    result = harness("target", path, env=cache_env(tmp_path / "cache"))
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if "  tree " in line]
    assert len(rows) == 20 and rows[-1].endswith("step 23") and rows[0].endswith("step 4")
    assert "(5 older commits left out; the 20 newest follow, oldest first; --all or -n N lists more)" in result.stdout
    every = harness("target", path, "--all", env=cache_env(tmp_path / "cache"))
    assert len([line for line in every.stdout.splitlines() if "  tree " in line]) == 25
    assert "left out" not in every.stdout
    bad = harness("target", path, "-n", "0")
    assert bad.returncode == 2 and no_traceback(bad) and "-n: expected a positive number" in bad.stderr


PARITY_BASE = '''
    def value():
        return 0.1 + 0.2


    def check(item):
        return item
'''
PARITY_CANDIDATE = '''
    def value():
        return 0.3


    def check(item):
        if item == "b":
            raise ValueError("no b")
        return item
'''
PARITY_WORKLOAD = '''
    import os
    import time

    import numpy as np

    import m


    class W:
        items = ["a", "b", "c"]

        def __init__(self, ctx):
            self.mode, self.label = ctx.params["mode"], ctx.label

        def run(self, item):
            if self.mode == "errors":
                m.check(item)
                return {"x": np.array([1.0])}
            if self.mode == "fail" and self.label == "B1":
                os._exit(1)
            if self.mode == "timing":
                return {"x": np.array([1.0]), "elapsed": np.array([time.perf_counter()])}
            return {"x": np.array([m.value()]), "n": np.arange(3)}


    def setup(ctx):
        return W(ctx)
'''


@pytest.fixture
def parity_target(tmp_path):
    tree, patch = make_target(tmp_path, {"m/__init__.py": PARITY_BASE}, {"m/__init__.py": PARITY_CANDIDATE})
    wl = tmp_path / "wl"
    wl.mkdir()
    (wl / "pw.py").write_text(textwrap.dedent(PARITY_WORKLOAD))

    def run(mode: str, order: str = "ABBA"):
        path = write_campaign(tmp_path / f"{mode}.yaml", tree, patch, wl, "pw:setup", order=order,
                              params={"mode": mode})
        return harness("run", path, "--out", tmp_path / mode, env=cache_env(tmp_path / "cache"))
    return run


def test_parity_line_counts_recorded_errors_per_run_when_they_differ(parity_target):
    """21.7: "0 recorded errors" (the reference's count) sat next to "recorded errors differ"."""
    result = parity_target("errors")
    assert result.returncode == 3, result.stdout + result.stderr
    assert "recorded errors differ (per run: A1 0, B1 1, B2 1, A2 0))" in result.stdout
    assert "0 recorded errors" not in result.stdout
    verdict = next(line for line in result.stdout.splitlines() if line.startswith("verdict:"))
    assert "parity mismatch: recorded errors differ in 2 place(s), first B1 item b (A1 vs B1: no error vs ValueError: " \
           "no b); warnings:" in verdict, verdict  # not also as the fields the raising item lacks


def test_a_failed_campaign_does_not_claim_a_parity_of_0_of_0_fields(parity_target):
    result = parity_target("fail", order="AB")
    assert result.returncode == 4, result.stdout + result.stderr
    assert ("parity: not compared, the campaign failed (no successful run of both variants to compare)"
            in result.stdout)
    assert "0/0 fields" not in result.stdout and "NOT identical" not in result.stdout


def test_base_runs_that_differ_are_called_non_determinism_in_the_workload(parity_target):
    result = parity_target("timing")
    assert result.returncode == 3, result.stdout + result.stderr
    verdict = next(line for line in result.stdout.splitlines() if line.startswith("verdict:"))
    assert ("the workload is not deterministic: base runs A1 and A2 ran the same code and differ in field(s) "
            "'elapsed' (first item a)") in verdict
    assert "metrics()" in verdict


def test_float_differences_are_in_the_run_output(parity_target):
    result = parity_target("floats", order="AB")
    assert result.returncode == 3, result.stdout + result.stderr
    assert ("divergence: field 'x' (float64) in 3 place(s), first B1 item a: 3 of 3 elements differ, max abs "
            "5.55112e-17, max 1 ULP" in result.stdout)
    assert "not deterministic" not in result.stdout
