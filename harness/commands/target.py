"""`harness target CAMPAIGN [--all] [-n N]`: build or find the target repository and list
its newest commits (all of them with --all), so a campaign can pin its revisions by full SHA."""
from __future__ import annotations

import tempfile
from pathlib import Path

from harness.plan import revisions, spec
from harness.commands import error

NEWEST = 20  # a real repository has thousands of commits; each listed one is exported once


def add_parser(sub) -> None:
    p = sub.add_parser("target", help="build or find a campaign's target repository and list its newest commits")
    p.add_argument("campaign", help="campaign YAML file")
    p.add_argument("-n", type=int, default=NEWEST, metavar="N", help=f"list the N newest commits (default {NEWEST})")
    p.add_argument("--all", action="store_true", help="list every commit on HEAD")
    p.set_defaults(func=main)


def main(args) -> int:
    if args.n < 1:
        return error("target", f"-n: expected a positive number of commits, got {args.n}")
    try:
        campaign = spec.load(args.campaign)
        repo = revisions.target_repo(campaign)
    except spec.SpecError as exc:
        return error("target", exc)
    print(f"repository: {repo}")
    listed = revisions.commits(repo)  # oldest first
    if not args.all and len(listed) > args.n:
        print(f"({len(listed) - args.n} older commits left out; the {args.n} newest follow, oldest first; "
              "--all or -n N lists more)")
        listed = listed[-args.n:]
    for sha, subject in listed:
        with tempfile.TemporaryDirectory() as tmp:
            revisions.export(repo, sha, Path(tmp))
            digest = revisions.tree_digest(tmp)
        print(f"{sha}  tree {digest[:16]}  {subject}")
    return 0
