"""Histories for `harness bisect`'s tests: a git repository built commit by commit, a model worker
whose speed is the commit's own (for fake-launcher bisects in the unit tier), and a whole bisect
folder made on it in about a second a step."""
from __future__ import annotations

import dataclasses
import subprocess
import sys
import textwrap
from pathlib import Path

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false"]


def history_repo(repo: Path, trees: list[dict[str, str]]) -> list[str]:
    """A git repository whose i-th commit writes trees[i] (relative path -> text, dedented; files
    of earlier commits stay); returns the SHAs, oldest first (the first is `good`)."""
    repo.mkdir(parents=True)
    subprocess.run([*GIT, "init", "-q"], cwd=repo, check=True)
    shas = []
    for i, files in enumerate(trees):
        for rel, text in files.items():
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            (repo / rel).write_text(textwrap.dedent(text))
        subprocess.run([*GIT, "add", "-A"], cwd=repo, check=True)
        subprocess.run([*GIT, "commit", "-q", "--allow-empty", "-m", f"commit {i}"], cwd=repo, check=True)
        shas.append(subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True,
                                   text=True).stdout.strip())
    return shas


def speeds_tree(speed: float, i: int) -> dict[str, str]:
    return {"lib/__init__.py": "", "lib/core.py": f"SPEED = {speed!r}\nCOMMIT = {i}\n"}


def fake_bisect(where: Path, speeds: list[float], **fields):
    """A bisect folder on the fake launcher over a history whose commit i is speeds[i] times as
    slow as good (speeds[0] == 1.0, good itself). Returns (out, receipt, shas)."""
    import yaml

    from fakes import Model, ModelLauncher
    from harness import records
    from harness.judge import bisect

    class CommitModel(Model):
        """The model worker at the speed of the commit its tree holds."""

        def __call__(self, job):
            text = (Path(job.tree) / "lib" / "core.py").read_text()
            self.ratio = float(text.split("SPEED = ")[1].split("\n")[0])
            return super().__call__(dataclasses.replace(job, variant="candidate"))

    shas = history_repo(where / "repo", [speeds_tree(s, i) for i, s in enumerate(speeds)])
    workloads = where / "workloads"
    workloads.mkdir()
    (workloads / "model_workload.py").write_text("def setup(ctx):\n    raise SystemExit('a model campaign')\n")
    body = {"name": "model", "target": {"repo": str(where / "repo")}, "base": {"rev": "HEAD~1"},
            "candidate": {"rev": "HEAD"}, "workload": {"entry": "model_workload:setup", "path": str(workloads)},
            "rounds": "auto", "min_rounds": 4, "budget_s": 60, "slots": 1, "verdict": {"threshold": 0.1},
            "timeouts": {"run_s": 60, "campaign_s": 3600}}
    body.update(fields)
    path = where / "model.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    models = iter(range(1000))
    p = bisect.plan(path, shas[0], shas[-1])
    out = where / "bisect"
    receipt = bisect.run(p, out, say=lambda line: None,
                         launcher_for=lambda: ModelLauncher(CommitModel(items=4, item_s=0.05, noise=0.01,
                                                                        seed=next(models))))
    return out, records.to_json(receipt), shas  # as bisect.json holds it


sys.modules.setdefault("bisect_support", sys.modules[__name__])
