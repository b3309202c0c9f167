"""`harness target CAMPAIGN`: build or find the target repository and list its commits,
so a campaign can pin its revisions by full SHA."""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from harness import revisions, spec


def add_parser(sub) -> None:
    p = sub.add_parser("target", help="build or find a campaign's target repository and list its commits")
    p.add_argument("campaign", help="campaign YAML file")
    p.set_defaults(func=main)


def main(args) -> int:
    try:
        campaign = spec.load(args.campaign)
        repo = revisions.target_repo(campaign)
    except spec.SpecError as exc:
        print(f"harness target: error: {exc}", file=sys.stderr)
        return 2
    print(f"repository: {repo}")
    for sha, subject in revisions.commits(repo):
        with tempfile.TemporaryDirectory() as tmp:
            revisions.export(repo, sha, Path(tmp))
            digest = revisions.tree_digest(tmp)
        print(f"{sha}  tree {digest[:16]}  {subject}")
    return 0
