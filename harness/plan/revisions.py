"""Git revisions: build the bundled targets reproducibly, resolve commit-ish to SHAs,
export each revision into a scratch tree and check its source fence."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from harness import records
from harness.files import sha256_file, tree_digest
from harness.plan.spec import Campaign, Revision, SpecError, Target

# A fixed identity and date make a built target's commit SHAs the same on every machine.
_IDENTITY = {
    "GIT_AUTHOR_NAME": "abba-harness",
    "GIT_AUTHOR_EMAIL": "targets@abba-harness.invalid",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00+0000",
    "GIT_COMMITTER_NAME": "abba-harness",
    "GIT_COMMITTER_EMAIL": "targets@abba-harness.invalid",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00+0000",
}
_CACHES = ("__pycache__", "*.pyc", ".pytest_cache")  # never part of a revision
_IGNORED = shutil.ignore_patterns(*_CACHES)


WORKTREE = "WORKTREE"  # a revision that is the target repository's uncommitted working tree
# `merge-base:BRANCH` (or `merge-base`, the remote's default branch): the commit where the
# candidate forked from BRANCH, `git merge-base CANDIDATE origin/BRANCH` (BRANCH itself when
# there is no origin/BRANCH), as a pull request's base; the campaign records the SHA it resolved.
MERGE_BASE = "merge-base"


def is_merge_base(rev: str) -> bool:
    return rev == MERGE_BASE or rev.startswith(MERGE_BASE + ":")


@dataclass(frozen=True)
class Materialized:
    variant: str
    rev: str
    sha: str
    tree: Path  # where the worker imports from: the export, or its built copy
    tree_sha256: str  # of the export, before any build: what `verify --repo` recomputes
    fence: dict[str, str]
    build: records.Build | None = None

    def receipt(self) -> records.RevisionReceipt:
        note = None
        if self.rev == WORKTREE:
            note = ("snapshot of the uncommitted working tree (git stash create: tracked files only), "
                    "a commit object no ref points to")
        elif is_merge_base(self.rev):
            note = (f"{self.rev}: where the candidate forked from "
                    f"{self.rev[len(MERGE_BASE) + 1:] or 'the default branch'} when the campaign ran "
                    "(git merge-base), pinned by its SHA")
        return records.RevisionReceipt(rev=self.rev, sha=self.sha, tree_sha256=self.tree_sha256,
                                       fence={path: records.Fenced(sha256=sha, ok=True)
                                              for path, sha in self.fence.items()}, note=note)


def cache_root() -> Path:
    return Path(os.environ.get("ABBA_HARNESS_CACHE") or Path.home() / ".cache" / "abba-harness")


def _git(args: list[str], cwd: Path, env_extra: dict | None = None, **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", **(env_extra or {})}
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, **kw)


def _build_key(target: Target) -> str:
    h = hashlib.sha256(b"abba-target-v1\n")
    for step in target.build:
        digest = tree_digest(step.path, _CACHES) if step.kind == "tree" else sha256_file(step.path)
        h.update(f"{step.kind}\0{digest}\0{step.message}\n".encode())
    return h.hexdigest()[:20]


def target_repo(campaign: Campaign) -> Path:
    """The git repository holding the code under test, building it when the campaign says so."""
    target = campaign.target
    if target.repo is not None:
        if _git(["rev-parse", "--git-dir"], cwd=target.repo if target.repo.is_dir() else Path("/")).returncode \
                or not target.repo.is_dir():
            raise SpecError(f"{campaign.source}: target.repo: expected a git repository, got '{target.repo}'")
        return target.repo
    for step in target.build:
        if not step.path.exists():
            raise SpecError(f"{campaign.source}: target.build: {step.kind} '{step.path}' does not exist")
    repo = cache_root() / "targets" / f"{campaign.name}-{_build_key(target)}"
    if (repo / ".git").is_dir():
        return repo
    repo.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{repo.name}.", dir=repo.parent))
    try:
        _build(target, work, campaign.source)
        try:
            os.rename(work, repo)
        except OSError:
            if not (repo / ".git").is_dir():  # another process may have won the race
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return repo


def _build(target: Target, work: Path, source: Path) -> None:
    def ok(result: subprocess.CompletedProcess, what: str) -> None:
        if result.returncode:
            err = result.stderr.decode(errors="replace").strip().splitlines()
            raise SpecError(f"{source}: target.build: {what} failed: {err[-1] if err else 'git error'}")

    ok(_git(["init", "-q", "-b", "main", "."], cwd=work), "git init")
    for step in target.build:
        if step.kind == "tree":
            for child in work.iterdir():
                if child.name != ".git":
                    shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
            shutil.copytree(step.path, work, ignore=_IGNORED, dirs_exist_ok=True)
            ok(_git(["add", "-A", "."], cwd=work), f"adding {step.path}")
        else:
            ok(_git(["apply", "--index", "--whitespace=nowarn", str(step.path)], cwd=work),
               f"applying {step.path}")
        ok(_git(["commit", "-q", "--allow-empty", "--no-verify", "-m", step.message], cwd=work,
                env_extra=_IDENTITY), f"committing {step.message!r}")


def commits(repo: Path) -> list[tuple[str, str]]:
    """(sha, subject) of every commit on HEAD, oldest first."""
    out = _git(["log", "--reverse", "--format=%H %s", "HEAD"], cwd=repo, text=True)
    return [tuple(line.split(" ", 1)) for line in out.stdout.splitlines()]


def commit_sha(repo: Path, rev: str) -> str | None:
    """The full SHA of a commit-ish in repo, or None when it names no commit."""
    if rev.startswith("-") or not rev or any(c.isspace() for c in rev):
        return None
    result = _git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], cwd=repo, text=True)
    return None if result.returncode else result.stdout.strip()


def first_parent_line(repo: Path, good: str, bad: str, limit: int) -> list[str]:
    """The first-parent commits good..bad, oldest first (bad last), when good is the first
    parent of the first of them; ValueError, one line, otherwise (or past limit commits)."""
    out = _git(["rev-list", "--first-parent", "--reverse", f"--max-count={limit + 1}", f"{good}..{bad}"],
               cwd=repo, text=True)
    if out.returncode:
        raise ValueError(f"git rev-list {good[:12]}..{bad[:12]} failed: "
                         f"{(out.stderr.strip().splitlines() or ['git error'])[-1]}")
    line = out.stdout.split()
    if not line:
        raise ValueError(f"no commits between {good[:12]} and {bad[:12]}: bad must be a descendant of good")
    if len(line) > limit:
        raise ValueError(f"more than {limit} first-parent commits between {good[:12]} and {bad[:12]}; "
                         "bisect a narrower range")
    parent = _git(["rev-parse", "--verify", "--quiet", f"{line[0]}^1"], cwd=repo, text=True).stdout.strip()
    if parent != good:
        raise ValueError(f"{good[:12]} is not on the first-parent line of {bad[:12]} (the first commit after it, "
                         f"{line[0][:12]}, has the first parent {parent[:12] or 'none'}): give a good revision "
                         "that is an ancestor along first parents, e.g. the merge base")
    return line


def resolve(campaign: Campaign, repo: Path, revision: Revision) -> str:
    if revision.rev == WORKTREE:
        return snapshot_worktree(campaign, repo, revision)
    if is_merge_base(revision.rev):
        return merge_base(campaign, repo, revision)
    result = _git(["rev-parse", "--verify", "--quiet", f"{revision.rev}^{{commit}}"], cwd=repo, text=True)
    if result.returncode:
        raise SpecError(f"{campaign.source}: {revision.variant}.rev: commit '{revision.rev}' "
                        f"does not exist in {repo}")
    return result.stdout.strip()


def merge_base(campaign: Campaign, repo: Path, revision: Revision) -> str:
    """`merge-base[:BRANCH]`: the best common ancestor of the candidate (HEAD when the candidate
    is WORKTREE or a merge-base itself, as `harness calibrate` makes it) and origin/BRANCH, else
    BRANCH; bare `merge-base`: origin/HEAD, the remote's default branch. SpecError, one line,
    when the branch is not there or the history does not reach a common ancestor (a shallow
    clone: actions/checkout fetches one commit unless `fetch-depth: 0`)."""
    where = f"{campaign.source}: {revision.variant}.rev: {revision.rev}"
    branch = revision.rev[len(MERGE_BASE) + 1:]
    if revision.rev.endswith(":"):
        raise SpecError(f"{where}: name the branch after the colon (`merge-base:main`), or drop the colon for the "
                        "remote's default branch")
    candidate = campaign.candidate
    if candidate.rev == WORKTREE or is_merge_base(candidate.rev):
        head = resolve(campaign, repo, Revision("candidate", "HEAD"))
    else:
        head = resolve(campaign, repo, candidate)
    tried = [f"refs/remotes/origin/{branch}", branch] if branch else ["refs/remotes/origin/HEAD"]
    other = next((ref for ref in tried if not _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
                                                   cwd=repo).returncode), None)
    if other is None:
        if not branch:
            raise SpecError(f"{where}: the repository {repo} has no origin/HEAD to find the default branch by: name "
                            "the branch, `merge-base:main` (in a pull request's job: merge-base:$GITHUB_BASE_REF)")
        raise SpecError(f"{where}: no branch {branch!r} (neither origin/{branch} nor {branch}) in {repo}: fetch it "
                        f"(`git fetch origin {branch}`; actions/checkout with `fetch-depth: 0` fetches every branch)")
    result = _git(["merge-base", head, other], cwd=repo, text=True)
    sha = result.stdout.strip()
    if result.returncode or not sha:
        shallow = _git(["rev-parse", "--is-shallow-repository"], cwd=repo, text=True).stdout.strip() == "true"
        raise SpecError(f"{where}: the candidate {head[:12]} and {other.removeprefix('refs/remotes/')} have no "
                        "common ancestor in " + (f"this shallow clone {repo}: fetch the whole history (`git fetch "
                                                  "--unshallow`; actions/checkout with `fetch-depth: 0`)"
                                                  if shallow else f"{repo}: they share no history"))
    return sha


def snapshot_worktree(campaign: Campaign, repo: Path, revision: Revision) -> str:
    """The working tree's tracked changes as a commit object, touching no ref, index or
    file (`git stash create`); HEAD itself when nothing is changed."""
    result = _git(["stash", "create", f"abba-harness snapshot of the working tree ({revision.variant})"],
                  cwd=repo, env_extra=_IDENTITY, text=True)
    if result.returncode:
        last = (result.stderr.strip().splitlines() or ["git stash create failed"])[-1]
        raise SpecError(f"{campaign.source}: {revision.variant}.rev: WORKTREE: {last}")
    sha = result.stdout.strip()
    if not sha:
        return resolve(campaign, repo, Revision(revision.variant, "HEAD"))
    return sha


def untracked_files(repo: Path) -> list[str]:
    """Files of the working tree git does not track and does not ignore (a WORKTREE
    snapshot leaves them out)."""
    result = _git(["ls-files", "--others", "--exclude-standard", "-z"], cwd=repo)
    return sorted(f.decode(errors="replace") for f in result.stdout.split(b"\0") if f) if not result.returncode else []


def untracked_hint(campaign: Campaign, repo: Path, problem: str) -> str:
    """For a pre-flight problem of a WORKTREE revision that names a module it cannot import
    ("No module named 'X'", or "cannot import name 'm' from (partially initialized module) 'pkg'",
    which is how `from pkg import m` fails when pkg/m.py is absent): the module exists in the
    working tree as a file git does not track (or ignores)."""
    import re

    match = re.search(r"No module named '([\w.]+)'", problem)
    named = re.search(r"cannot import name '(\w+)' from (?:partially initialized module )?'([\w.]+)'", problem)
    variant = next((v for v in ("base", "candidate") if campaign.revision(v).rev == WORKTREE
                    and f": {v} (" in problem), None)
    module = match.group(1) if match else f"{named.group(2)}.{named.group(1)}" if named else None
    if module is None or variant is None:
        return ""
    rel = module.replace(".", "/")
    roots = [*campaign.workload.sys_path, "."]
    candidates = [os.path.normpath(f"{root}/{rel}{suffix}") for root in roots for suffix in (".py", "/__init__.py")]
    present = [c for c in candidates if (repo / c).is_file()]
    if not present:
        return ""
    tracked = _git(["ls-files", "--", *present], cwd=repo, text=True).stdout.split()
    if tracked:
        return ""
    ignored = _git(["check-ignore", "-q", "--", present[0]], cwd=repo).returncode == 0
    if ignored:
        return (f"; {present[0]} exists in the working tree but git ignores it, so the WORKTREE snapshot "
                "leaves it out: if a build makes it, add the step under `build:`")
    return f"; {present[0]} is untracked: `git add` it; a WORKTREE {variant} takes tracked files only"


def export(repo: Path, sha: str, dest: Path) -> None:
    """Write the revision's files (no .git) into dest with `git archive`. RuntimeError, one
    line, when the commit is not in the repository (a collected WORKTREE snapshot)."""
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    if _git(["cat-file", "-e", f"{sha}^{{commit}}"], cwd=repo).returncode:
        raise RuntimeError(f"commit {sha} is not in the repository {repo}")
    dest.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(["git", "archive", "--format=tar", sha], cwd=repo, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None  # both are PIPEs
    try:
        with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
            tar.extractall(dest, filter="data")
    except tarfile.TarError as exc:
        proc.kill()
        proc.wait()
        raise RuntimeError(f"git archive {sha} in {repo}: {exc}") from None
    # tarfile stops at the end-of-archive marker; drain git's record padding so it never
    # dies of SIGPIPE on a larger tree.
    while proc.stdout.read(1 << 16):
        pass
    proc.stdout.close()
    err = proc.stderr.read().decode(errors="replace")
    if proc.wait():
        raise RuntimeError(f"git archive {sha} failed: {err.strip()}")
    copy_links(dest, sha)


def copy_links(dest: Path, sha: str) -> None:
    """A committed symlink to a regular file of the same tree becomes a copy of that file (its
    bytes and mode): the tree digest stands for bytes on disk, and the code reads what it read
    through the link. A link to nothing is left out: reading it fails as it would through the link
    (networkx commits benchmarks/pyproject.toml -> "../pyproject.toml\\n", a name with a newline).
    A link out of the tree or to a folder is refused in one line (RuntimeError)."""
    import os
    import shutil

    root = dest.resolve()
    links = []
    for dirpath, dirnames, filenames in os.walk(dest):
        for name in sorted(filenames + dirnames):
            path = Path(dirpath) / name
            if path.is_symlink():
                links.append(path)
    targets: list[Path | None] = []
    for link in links:
        target = link.resolve()
        if not os.path.lexists(target):
            targets.append(None)
            continue
        if not target.is_relative_to(root) or not target.is_file():
            raise RuntimeError(f"revision {sha[:12]}: {link.relative_to(dest)} is a symlink to {os.readlink(link)!r}, "
                               "which is not a file of the same tree; a revision tree holds regular files (a link to a "
                               "file of the tree is copied in)")
        targets.append(target)
    for link, source in zip(links, targets):
        link.unlink()
        if source is not None:
            shutil.copy2(source, link)


def packages(tree: Path, sys_path) -> dict[str, str]:
    """{top-level module or package: its path in the tree} of what a worker can import from this
    tree: the names at its import roots (the tree and workload.sys_path's folders of it, as the
    worker puts them first on sys.path): a package folder (with or without __init__.py, holding
    Python files), a module file, an extension module."""
    out: dict[str, str] = {}
    for rel in [*sys_path, "."]:
        root = (tree / rel).resolve()
        try:
            entries = sorted(os.scandir(root), key=lambda e: e.name)[:10_000]
        except OSError:
            continue
        for entry in entries:
            name = entry.name
            if name.startswith(".") or name in ("__init__.py", "__pycache__"):
                continue
            if entry.is_dir(follow_symlinks=False) and name.isidentifier():
                try:
                    python = any(f.endswith((".py", ".so", ".pyd")) for f in os.listdir(entry.path)[:10_000])
                except OSError:
                    python = False
                if python:
                    out.setdefault(name, os.path.relpath(entry.path, tree))
            elif entry.is_file(follow_symlinks=False):
                stem = name.split(".")[0]
                if name.endswith((".py", ".so", ".pyd")) and stem.isidentifier():
                    out.setdefault(stem, os.path.relpath(entry.path, tree))
    return out


def materialize(campaign: Campaign, repo: Path, revision: Revision, scratch: Path) -> Materialized:
    sha = resolve(campaign, repo, revision)
    tree = scratch / revision.variant
    try:
        export(repo, sha, tree)
    except RuntimeError as exc:
        raise SpecError(f"{campaign.source}: {revision.variant}.rev: {exc}") from None
    for rel, expected in revision.fence.items():
        path = tree / rel
        if not path.is_file():
            raise SpecError(f"{campaign.source}: {revision.variant}.fence.{rel}: file not found "
                            f"in revision {sha[:12]}")
        actual = sha256_file(path)
        if actual != expected:
            raise SpecError(f"{campaign.source}: {revision.variant}.fence.{rel}: source fence mismatch: "
                            f"expected sha256 {expected[:16]}..., revision {sha[:12]} has {actual[:16]}...")
    digest = tree_digest(tree)
    build = None
    if campaign.build:
        tree, build = built_tree(campaign, tree, digest, revision.variant)
    return Materialized(revision.variant, revision.rev, sha, tree, digest, dict(revision.fence), build)


def built_tree(campaign: Campaign, tree: Path, digest: str, variant: str) -> tuple[Path, records.Build]:
    """Run the campaign's build commands in a copy of the exported tree, cached by the
    tree digest and the commands: the same revision is built once. Returns the built tree
    and the receipt (commands, exit codes, output tails, cached or not)."""
    import json

    key = hashlib.sha256(json.dumps([digest, [list(c) for c in campaign.build]]).encode()).hexdigest()[:24]
    home = cache_root() / "builds" / key
    if (home / "receipt.json").is_file():
        return home / "tree", records.Build.from_json({**json.loads((home / "receipt.json").read_text()), "cached": True})
    home.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=home.parent))
    try:
        shutil.copytree(tree, work / "tree", symlinks=True)
        steps = []
        for cmd in campaign.build:
            argv = [a.replace("{python}", sys.executable) for a in cmd]
            try:
                result = subprocess.run(argv, cwd=work / "tree", capture_output=True, text=True, errors="replace",
                                        timeout=campaign.run_timeout_s, stdin=subprocess.DEVNULL)
                code, output = result.returncode, result.stdout + result.stderr
            except (OSError, subprocess.TimeoutExpired) as exc:
                code, output = None, f"{exc.__class__.__name__}: {exc}"
            steps.append(records.BuildStep(argv=argv, exit_code=code, output_tail=output[-4000:]))
            if code != 0:
                last = " | ".join(output.strip().splitlines()[-3:]) or "no output"
                raise SpecError(f"{campaign.source}: build: {' '.join(cmd)} failed in the {variant} tree "
                                f"(exit {code}): {last[-300:]}")
        receipt = {"key": key, "tree_sha256": digest, "steps": records.to_json(steps)}  # the cache's own file
        (work / "receipt.json").write_text(json.dumps(receipt))
        try:
            os.rename(work, home)
        except OSError:
            if not (home / "receipt.json").is_file():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return home / "tree", records.Build(key=key, tree_sha256=digest, cached=False, steps=steps)
