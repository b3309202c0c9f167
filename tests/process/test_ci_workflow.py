"""CI in one page (issue 36, item 3): the workflow docs/ci.md shows (docs/ci/abba.yml), run here
as far as it can be without GitHub. A tiny repository whose pull-request branch forked from main
before main moved on (so the merge-base is not main's tip), cloned as actions/checkout does with
`fetch-depth: 0`; then every `run:` step of the workflow, in order, with the job's environment
(GITHUB_STEP_SUMMARY a file, RUNNER_TEMP a folder, `gh` a stub that records what it is asked);
the install step is the one left out (the harness is this checkout's). And `merge-base:BRANCH`
itself: the SHA it resolves to, and its one-line refusals."""
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

WORKFLOW = ROOT / "docs" / "ci" / "abba.yml"
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
GH_STUB = '''#!/bin/sh
# gh, as the workflow calls it: every call's arguments on one line of $GH_LOG; a body file's text
# kept beside it; the comment's id (the --jq lookup) is $GH_EXISTING_ID.
printf '%s\\n' "$*" >> "$GH_LOG"
for arg in "$@"; do
  case "$arg" in body=@*) cat "${arg#body=@}" > "$GH_LOG.body" ;; esac
done
case "$*" in *--jq*) [ -n "$GH_EXISTING_ID" ] && echo "$GH_EXISTING_ID" ;; esac
exit 0
'''


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
               "github.event.pull_request.head.sha": None}


def expand(text: str, env: dict) -> str:
    """A step's `${{ ... }}` as GitHub would give them in a pull-request job; an expression this
    test does not know fails it (so the workflow stays testable)."""
    def one(m):
        name = m.group(1).strip()
        if name.startswith("env."):
            return env[name[4:]]
        assert name in EXPRESSIONS and EXPRESSIONS[name] is not None, f"unknown expression {name}"
        return EXPRESSIONS[name]
    return re.sub(r"\$\{\{(.*?)\}\}", one, text)


def test_the_workflow_runs_its_steps_against_the_merge_base(pull_request, tmp_path):
    clone, shas = pull_request
    flow = yaml.safe_load(WORKFLOW.read_text())
    assert "pull_request" in flow[True] or "pull_request" in flow.get("on", {})  # YAML 1.1 reads `on` as true
    assert flow["permissions"]["pull-requests"] == "write"
    steps = flow["jobs"]["campaign"]["steps"]
    checkout = next(s for s in steps if s.get("uses", "").startswith("actions/checkout@"))
    assert checkout["with"]["fetch-depth"] == 0
    assert "pull_request.head.sha" in checkout["with"]["ref"]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gh").write_text(GH_STUB)
    (bin_dir / "gh").chmod(0o755)
    summary_file, temp = tmp_path / "step_summary.md", tmp_path / "runner_temp"
    temp.mkdir()
    job = {**os.environ, **{k: str(v) for k, v in flow["env"].items()},
           "PATH": f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "GITHUB_STEP_SUMMARY": str(summary_file), "GITHUB_REPOSITORY": "owner/repo", "RUNNER_TEMP": str(temp),
           "GH_LOG": str(tmp_path / "gh.log"), "ABBA_HARNESS_CACHE": str(tmp_path / "cache")}
    ran, codes = [], {}
    for step in steps:
        if "uses" in step:
            if step["uses"].startswith("actions/upload-artifact@"):
                assert expand(step["with"]["path"], job) == job["BUNDLE"]
            continue
        if step["name"].startswith("Install"):
            assert 'pip install "$HARNESS"' in step["run"]  # this checkout's harness is on PATH instead
            continue
        env = {**job, **{k: expand(str(v), job) for k, v in (step.get("env") or {}).items()}}
        result = subprocess.run(["bash", "-e", "-c", expand(step["run"], env)], cwd=clone, env=env,
                                capture_output=True, text=True, timeout=600)
        ran.append(step["name"])
        codes[step["name"]] = result.returncode
        assert "Traceback" not in result.stdout + result.stderr, (step["name"], result.stderr[-2000:])
        if not step["name"].startswith("Gate"):
            assert result.returncode == 0, (step["name"], result.stdout[-2000:], result.stderr[-2000:])
    assert len(ran) == 5 and ran[0].startswith("The campaign and its rules") and ran[-1].startswith("Gate")
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
    page = summary_file.read_text()
    assert page.startswith("### Performance evidence: ci-demo") and len(page.encode()) <= 1 << 20
    assert "The runs in execution order" in page and f"`{shas['fork']}` (merge-base:main)" in page
    # the comment: looked up by its marker, then posted (none yet), its body under 64 KB
    calls = (tmp_path / "gh.log").read_text().splitlines()
    assert len(calls) == 2 and "startswith(\"<!-- abba-harness:ci-demo -->\")" in calls[0]
    assert calls[1].startswith("api --method POST repos/owner/repo/issues/7/comments -F body=@")
    body = (tmp_path / "gh.log.body").read_text()
    assert body.splitlines()[0] == "<!-- abba-harness:ci-demo -->" and len(body) <= 65536
    assert "**Improved** (`harness compare` exit 0)" in body
    assert codes[ran[-1]] == 0  # improved: the check passes
    # a second push: the comment the marker finds is updated in place
    (tmp_path / "gh.log").unlink()
    comment = next(s for s in steps if s.get("name", "").startswith("Comment"))
    env = {**job, "GH_EXISTING_ID": "4242", **{k: expand(str(v), job) for k, v in comment["env"].items()}}
    result = subprocess.run(["bash", "-e", "-c", comment["run"]], cwd=clone, env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "gh.log").read_text().splitlines()[1].startswith(
        "api --method PATCH repos/owner/repo/issues/comments/4242 -F body=@")


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
    flow = yaml.safe_load(WORKFLOW.read_text())
    step = next(s for s in flow["jobs"]["campaign"]["steps"] if s.get("name", "").startswith("Gate"))
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
