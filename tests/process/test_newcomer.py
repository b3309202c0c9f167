"""Issue 28 ("Your code, your interpreter, your PR"): what a newcomer hit on a first campaign of
their own, each as it happens, through the CLI and real worker processes. Every test says what
the user met; the words asserted are the ones the harness prints."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import yaml

from conftest import ROOT, cache_env, harness, make_target, no_traceback, small_campaign, write_campaign
from fakes import Model, run_fake
from harness import contract as C
from harness.selftest import tamper

GIT = ["git", "-c", "user.name=u", "-c", "user.email=u@u", "-c", "init.defaultBranch=main"]


def git(repo: Path, *args) -> str:
    return subprocess.run([*GIT, *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text))


def workload_campaign(where: Path, source: str, **body) -> Path:
    """A campaign file at where/c.yaml whose workload module `bench.py` (source, dedented) sits
    in where/bench; `body` holds the target, revisions and anything else."""
    write(where / "bench", {"bench.py": source})
    doc = {"name": "newcomer", **body, "workload": {"entry": "bench:setup", "path": "bench"}, "order": "AB",
           "slots": 1, "timeouts": {"run_s": 60, "campaign_s": 300}}
    (where / "c.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return where / "c.yaml"


# --- 2. a stage path through a re-export ------------------------------------------------------------
REEXPORT_WORKLOAD = '''
    import numpy as np

    import pkg


    class Bench:
        items = ["a", "b"]

        def run(self, item):
            return {"v": np.array([pkg.run_all(1000)], dtype=np.int64)}


    def setup(ctx):
        return Bench()
'''


def test_a_stage_named_through_a_re_export_is_pointed_at_its_defining_module(tmp_path):
    """The user named `work: pkg:func`, where pkg/__init__.py re-exports func from pkg/_impl.py
    and the library calls it inside _impl: the wrapper on pkg.func was never called. The
    pre-flight names where func is defined and the path to write; that path then passes."""
    impl = "def func(n):\n    return sum(range(n))\n\n\ndef run_all(n):\n    return func(n)\n"
    tree, patch = make_target(tmp_path, {"pkg/__init__.py": "from pkg._impl import func, run_all\n",
                                         "pkg/_impl.py": impl},
                              {"pkg/_impl.py": impl.replace("sum(range(n))", "n * (n - 1) // 2")})
    write(tmp_path / "bench", {"bench.py": REEXPORT_WORKLOAD})
    env = cache_env(tmp_path / "cache")
    path = write_campaign(tmp_path / "c.yaml", tree, patch, tmp_path / "bench", "bench:setup",
                          stages={"work": "pkg:func"})
    result = harness("check", path, env=env)
    assert result.returncode == 2, result.stdout + result.stderr
    assert ("stages: 'work' (pkg:func) never called in either revision's pre-flight item: 'work' is defined as "
            "pkg._impl:func: the path names a re-export, and the code calls the function where it is defined; use "
            "`work: pkg._impl:func`") in result.stderr, result.stderr
    assert no_traceback(result)
    fixed = write_campaign(tmp_path / "fixed.yaml", tree, patch, tmp_path / "bench", "bench:setup",
                           stages={"work": "pkg._impl:func"})
    again = harness("check", fixed, env=env)
    assert again.returncode == 0, again.stderr


# --- 3. a WORKTREE candidate importing an untracked module -------------------------------------------
def test_an_untracked_module_imported_from_its_package_is_named_with_git_add(tmp_path):
    """The change added pkg/newmod.py and `from pkg import newmod` in pkg/__init__.py, but never
    `git add`ed the new file: the WORKTREE snapshot left it out, and Python said only "cannot
    import name 'newmod' from partially initialized module 'pkg'". The pre-flight names the file
    as untracked and says to `git add` it; once staged, the check passes."""
    repo = tmp_path / "repo"
    write(repo, {"pkg/__init__.py": "def total(n):\n    return sum(range(n))\n"})
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "slow")
    write(repo, {"pkg/__init__.py": "from pkg import newmod\n\n\ndef total(n):\n    return newmod.total(n)\n",
                 "pkg/newmod.py": "def total(n):\n    return n * (n - 1) // 2\n"})
    path = workload_campaign(tmp_path, '''
        import numpy as np

        from pkg import total


        class Bench:
            items = ["x"]

            def run(self, item):
                return {"t": np.array([total(100)], dtype=np.int64)}


        def setup(ctx):
            return Bench()
    ''', target={"repo": "repo"}, base={"rev": "HEAD"}, candidate={"rev": "WORKTREE"})
    env = cache_env(tmp_path / "cache")
    result = harness("check", path, env=env)
    assert result.returncode == 2, result.stdout + result.stderr
    line = next(x for x in result.stderr.splitlines() if x.startswith("harness check: error: ") and ": candidate (" in x)
    assert "cannot import name 'newmod' from partially initialized module 'pkg'" in line, line
    assert line.endswith("; pkg/newmod.py is untracked: `git add` it; a WORKTREE candidate takes tracked files only")
    assert no_traceback(result)
    git(repo, "add", "pkg/newmod.py")
    staged = harness("check", path, env=env)
    assert staged.returncode == 0, staged.stderr


# --- 4. verify --repo after the campaign file was edited ---------------------------------------------
def test_verify_against_a_repository_whose_campaign_file_was_edited_names_it_and_the_fix(demo_bundle, tmp_path):
    """The user added a comment to campaigns/demo.yaml after the run and `harness verify B --repo`
    failed. The one problem is the campaign file, named with its path; the closing line says the
    bundle itself is intact and what to do, not the generic "do not trust this bundle"."""
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "campaigns", repo / "campaigns")
    git(repo, "init", "-q")
    assert harness("verify", demo_bundle, "--repo", repo).returncode == 0
    # a repository without the campaign file: the message names which repository --repo must be
    (tmp_path / "other").mkdir()
    git(tmp_path / "other", "init", "-q")
    for command in ("verify", "reproduce"):
        wrong = harness(command, demo_bundle, "--repo", tmp_path / "other", "--out", tmp_path / "again") \
            if command == "reproduce" else harness(command, demo_bundle, "--repo", tmp_path / "other")
        assert wrong.returncode == 2 and no_traceback(wrong) and wrong.stderr.count("\n") == 1, wrong.stderr
        assert wrong.stderr == (f"harness {command}: error: --repo: expected the repository holding the campaign file "
                                f"campaigns/demo.yaml (the bundle's campaign_path); {tmp_path / 'other'} has no such "
                                "file: give the repository the campaign was run from\n")
    assert not (tmp_path / "again").exists()
    demo = repo / "campaigns" / "demo.yaml"
    demo.write_text(demo.read_text() + "# tuned later\n")
    result = harness("verify", demo_bundle, "--repo", repo)
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert [x for x in lines if x.startswith("FAIL ")] == [f"FAIL data/campaign.yaml: [anchors] differs from {demo}"]
    assert lines[-1] == (f"{demo_bundle}: 1 problem(s); the bundle itself is intact, but the repository no longer "
                         "holds what it ran (a file named above was edited since): check out the commit the bundle "
                         "was made at, or re-run the campaign")
    assert "do not trust this bundle" not in result.stdout and no_traceback(result)


# --- 5. piped into a reader that leaves early --------------------------------------------------------
def closed_reader(*args) -> tuple[int, str]:
    """`harness ARGS | head -1` where the reader is gone before the harness writes: its stdout
    is a pipe whose only read end is closed. (exit code, stderr)."""
    proc = subprocess.Popen([sys.executable, "-m", "harness", *map(str, args)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    proc.stdout.close()
    err = proc.stderr.read()
    return proc.wait(timeout=120), err


def test_output_piped_into_a_reader_that_left_keeps_the_commands_exit_code(tmp_path):
    """`harness compare B | head -1` under `set -o pipefail` exited 0 for an inconclusive bundle
    once the reader had left (the BrokenPipeError handler answered OK for every command), so a CI
    gate passed. Now compare, summary and report end with their own exit code and say nothing
    on stderr."""
    outcome, _ = run_fake(tmp_path, Model(), rounds=3)  # too few rounds: inconclusive, exit 6
    bundle = outcome.out
    assert harness("compare", bundle).returncode == 6
    for args, code in ((("compare", bundle), 6), (("summary", bundle), 0),
                       (("report", bundle, "--root", tmp_path), 0)):
        got, err = closed_reader(*args)
        assert (got, err) == (code, ""), (args, got, err)


# --- 9. outputs that already differ at the pre-flight; parity within a declared ULP ------------------
LAST_BIT_CORE = "import math\n\n\ndef value(x):\n    return x * 0.1\n"
LAST_BIT_WORKLOAD = '''
    import numpy as np

    from lastbit import value


    class Bench:
        items = ["p", "q", "r"]

        def run(self, item):
            return {"y": np.array([value(float(ord(item)))], dtype=np.float64)}


    def setup(ctx):
        return Bench()
'''


def last_bit_campaign(tmp_path: Path, **fields) -> Path:
    """The candidate returns the base's value moved up by one unit in the last place."""
    tree, patch = make_target(tmp_path, {"lastbit.py": LAST_BIT_CORE},
                              {"lastbit.py": LAST_BIT_CORE.replace("return x * 0.1",
                                                                   "return math.nextafter(x * 0.1, math.inf)")})
    write(tmp_path / "bench", {"bench.py": LAST_BIT_WORKLOAD})
    return write_campaign(tmp_path / "c.yaml", tree, patch, tmp_path / "bench", "bench:setup", **fields)


def test_the_pre_flight_warns_when_outputs_already_differ_and_goes_on(tmp_path):
    """The user's change moved a float in its last bit; the campaign ran its rounds and only the
    end said parity mismatch. `harness check` now warns at once (and passes: it is a note, not a
    problem), naming the item, the field and `parity: {max_ulp: N}`."""
    result = harness("check", last_bit_campaign(tmp_path), env=cache_env(tmp_path / "cache"))
    assert result.returncode == 0, result.stderr
    assert ("warning: pre-flight: base and candidate outputs already differ on item p (field(s) y): parity will "
            "fail; if the change moves floats in their last bits by design, declare `parity: {max_ulp: N}`"
            ) in result.stdout.splitlines(), result.stdout
    assert result.stdout.splitlines()[-1].startswith("OK ")


def test_a_run_within_a_declared_ulp_says_within_never_identical(tmp_path):
    """With `parity: {max_ulp: 2}` declared and outputs one ULP apart, the run goes on past the
    pre-flight's note, completes (exit 0), and its verdict line says "within 2 ULP (close, not
    identical", shows the timing, and never calls the outputs identical or equal."""
    path = last_bit_campaign(tmp_path, parity={"max_ulp": 2})
    result = harness("run", path, "--out", tmp_path / "out", env=cache_env(tmp_path / "cache"))
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert "warning: pre-flight: base and candidate outputs already differ on item p (field(s) y): parity will fail" \
        in lines
    verdict = next(x for x in lines if x.startswith("verdict: "))
    assert "; outputs within 2 ULP (close, not identical: max seen 1 ULP, " in verdict
    assert "parity identical" not in verdict and "outputs equal" not in verdict
    assert "wall " in verdict and "->" in verdict  # the timing is on the line
    assert next(x for x in lines if x.startswith("parity: ")).startswith("parity: within 2 ULP (close, not identical: ")
    comparison = json.loads((tmp_path / "out" / C.COMPARISON).read_text())
    assert comparison["parity"]["identical"] is False and comparison["parity"]["tolerance"]["max_ulp_seen"] == 1


# --- 10. a machine too noisy for the band ------------------------------------------------------------
def test_the_pre_flight_suggests_instruction_counts_when_the_item_is_erratic(tmp_path):
    """On a busy shared machine the user's wall ratios wandered by more than the 2% band and the
    campaign ended inconclusive. When the pre-flight item's own repeats move by more than the
    band (here an item that sleeps 10 ms and 50 ms by turns), `harness check` suggests
    `metrics: [wall, instructions]`."""
    erratic = '''
        import time

        import numpy as np

        import pkg


        class Bench:
            items = ["one", "two"]
            calls = 0

            def run(self, item):
                Bench.calls += 1
                time.sleep(0.01 if Bench.calls % 2 else 0.05)
                return {"x": np.array([pkg.X], dtype=np.int64)}


        def setup(ctx):
            return Bench()
    '''
    path = small_campaign(tmp_path, erratic, "erratic:setup")
    result = harness("check", path, env=cache_env(tmp_path / "cache"))
    assert result.returncode == 0, result.stderr
    note = [x for x in result.stdout.splitlines() if x.startswith("warning: pre-flight: the item's wall moved by ")]
    assert len(note) == 1, result.stdout
    assert note[0].endswith("against an equal band of +-2%: wall time on this machine may not resolve a change that "
                            "small; `metrics: [wall, instructions]` adds instruction counts, which noise does not "
                            "move"), note[0]


def test_the_pre_flight_says_an_item_is_too_short_to_time_and_a_large_change_needs_no_note(tmp_path):
    """An item of a few microseconds times the process's own jitter (its repeats moved by
    300-1400% here): the pre-flight says so and how many repeats of its work would make ~10 ms.
    The demo, whose candidate is hundreds of times faster, gets no note: a change far larger
    than what the repeats moved is resolved by wall time whatever the band."""
    tiny = '''
        import numpy as np

        import pkg


        class Bench:
            items = ["one", "two"]

            def run(self, item):
                return {"x": np.array([pkg.X], dtype=np.int64)}


        def setup(ctx):
            return Bench()
    '''
    result = harness("check", small_campaign(tmp_path, tiny, "tiny:setup"), env=cache_env(tmp_path / "cache"))
    assert result.returncode == 0, result.stderr
    note = [x for x in result.stdout.splitlines() if x.startswith("warning: pre-flight: item one takes ")]
    assert len(note) == 1 and "in the base: too short to time" in note[0] and "have run() repeat its work about " \
        in note[0] and note[0].endswith("so that an item takes 10 ms or more"), result.stdout
    assert "the item's wall moved by" not in result.stdout  # an item too short to time is not called noisy
    demo = harness("check", ROOT / "campaigns" / "demo.yaml")
    assert demo.returncode == 0 and "warning:" not in demo.stdout, demo.stdout


# --- 13. summary of a real bundle ---------------------------------------------------------------------
def test_summary_of_the_demo_bundle_holds_the_claim_and_only_the_bundles_numbers(demo_bundle):
    """The user wanted a section to paste into the pull request. `harness summary` prints it in
    Markdown, short: revisions, ratio and interval and how many rounds, the worst items, parity
    in one sentence, interpreter and machine, the digest and the commands to verify and
    reproduce; `--long` adds the runs in execution order, the stage CPU table and cleanup. Each
    figure checked here is the bundle's own."""
    from harness.render.text import cell

    result = harness("summary", demo_bundle)
    assert result.returncode == 0, result.stderr
    text = result.stdout
    campaign = json.loads((demo_bundle / C.CAMPAIGN_JSON).read_text())
    comparison = json.loads((demo_bundle / C.COMPARISON).read_text())
    cleanup = json.loads((demo_bundle / C.CLEANUP).read_text())
    digest = __import__("hashlib").sha256((demo_bundle / C.TAGMANIFEST).read_bytes()).hexdigest()
    from harness.outcomes import speed
    from harness.render.summary import SHORT_LINES

    assert text.startswith("### Performance evidence: demo\n") and len(text.splitlines()) <= SHORT_LINES
    base, cand = (campaign["revisions"][v]["sha"] for v in ("base", "candidate"))
    assert f"Base `{base}` \u2192 candidate `{cand}`." in text
    paired = comparison["stats"]["paired"]
    # the verdict and one figure, a factor with its interval; the ratio it is made from beside it
    assert (f"**{comparison['stats']['verdict'].capitalize()}: {speed(paired['geomean_ratio'], paired['ci95'])}** "
            "(`harness compare` exit 0)") in text
    assert f"candidate time over base time ({paired['geomean_ratio']:.4g})" in text and "a 95% interval" in text
    assert f"\n{comparison['stats']['rounds']['n']} rounds (a fixed count), each round" in text
    worst = comparison["stats"]["per_item"]["table"][0]
    assert f"| {cell(worst['id'])} " in text and speed(worst["ratio"], worst["ci95"]) in text
    parity = comparison["parity"]
    sentence = next(line for line in text.splitlines() if line.startswith("- Outputs: "))[2:]  # a note, in a list
    assert sentence.startswith(f"Outputs: all {parity['fields_identical']} fields of the {parity['items'] - 1} items "
                               f"that give outputs (of {parity['items']}) byte-identical in every run (fields means, "
                               "trend; dtypes &lt;f8; dtype, shape and raw bytes, NaN payloads included)")
    assert "stage call counts identical" in sentence and "1 recorded error return(s), identical" in sentence
    assert "Interpreter CPython " in text
    assert f"bundle digest (SHA-256 of `tagmanifest-sha256.txt`) `{digest}`" in text
    # the bundle by its folder's name: no absolute path of this machine on the page
    assert f"```sh\nharness verify {demo_bundle.name} --repo .\nharness reproduce {demo_bundle.name}\n```" in text
    assert text.rstrip().endswith(f"```sh\npython -S harness/rehash.py {demo_bundle.name}\n```")
    assert "Summed worker-thread CPU" not in text and "Cleanup:" not in text  # the long form's
    text = harness("summary", demo_bundle, "--long").stdout
    # the runs table, in execution order, each run's timed wall as its record holds it
    rows = [line.split("|")[1:4] for line in text.splitlines() if line.startswith("| ") and
            line.split("|")[1].strip() in campaign["labels"]]
    assert [r[0].strip() for r in rows] == campaign["labels"]
    for label, variant, wall in rows:
        record = json.loads((demo_bundle / C.run_path(label.strip())).read_text())
        assert variant.strip() == record["variant"].capitalize() and wall.strip() == f"{record['wall_s']:.3f}"
    # the stage CPU table: call counts and CPU as comparison.json holds them
    assert "Summed worker-thread CPU per run, each stage excluding its instrumented child stages" in text
    for name, stage in comparison["stages"].items():
        row = next(line for line in text.splitlines() if line.startswith(f"| {cell(name)} "))
        cells = [c.strip() for c in row.split("|")[1:-1]]
        assert cells[1] == f"{stage['calls_per_run']:,}" and cells[2] == f"{stage['base_self_cpu_s']:.3f}"
    assert f"Cleanup: {len(cleanup['processes'])} launched process(es) verified absent." in text


def test_summary_of_a_bundle_that_does_not_verify_prints_nothing_to_paste(demo_bundle):
    """A summary is a claim to post: a bundle that does not verify gives exit 1, one error line,
    and nothing on stdout."""
    tamper.flip_byte(C.COMPARISON)(demo_bundle, None)
    result = harness("summary", demo_bundle)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith(f"harness summary: error: {demo_bundle} does not verify (")
    assert "there is no claim to post" in result.stderr and no_traceback(result)
