"""campaigns/peers/peers.py's commits made with git plumbing: the A-vs-A commit and, for a change
that adds its own benchmark (--candidate-bench), the base with the candidate's benchmark file.
Each must change only what it says, repeat its SHA, and leave the clone's index and work tree
alone."""
from __future__ import annotations

import importlib.util
import subprocess

from conftest import ROOT

_spec = importlib.util.spec_from_file_location("peers", ROOT / "campaigns" / "peers" / "peers.py")
peers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(peers)


def git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def commit_all(repo, message):
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD")


def test_the_base_runs_the_candidates_benchmark_and_nothing_else_of_it(tmp_path):
    repo = tmp_path / "lib"
    (repo / "pkg").mkdir(parents=True)
    git(tmp_path, "init", "-q", str(repo))
    (repo / "pkg" / "code.py").write_text("SLOW = True\n")
    base = commit_all(repo, "base")
    bench = repo / peers.BENCH
    bench.parent.mkdir(parents=True)
    bench.write_text("def time_it():\n    pass\n")
    (repo / "pkg" / "code.py").write_text("SLOW = False\n")
    cand = commit_all(repo, "the change, and a benchmark for it")
    (repo / "pkg" / "code.py").write_text("uncommitted\n")  # the work tree and index stay as they are

    made = peers.with_bench_of(repo, base, cand)
    assert peers.with_bench_of(repo, base, cand) == made  # fixed dates: the same SHA each time
    assert git(repo, "rev-parse", "refs/peers/base") == made
    assert git(repo, "rev-parse", f"{made}^") == base
    assert git(repo, "diff", "--name-only", base, made) == peers.BENCH
    assert git(repo, "diff", "--name-only", made, cand) == "pkg/code.py"
    assert git(repo, "show", f"{made}:pkg/code.py") == "SLOW = True"
    assert (repo / "pkg" / "code.py").read_text() == "uncommitted\n"
    assert git(repo, "diff", "--cached", "--name-only") == ""

    aa = peers.aa_commit(repo, made)
    assert git(repo, "rev-parse", f"{aa}^{{tree}}") == git(repo, "rev-parse", f"{made}^{{tree}}") and aa != made
