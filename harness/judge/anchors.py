"""Where a bundle's anchors lie in a repository (`verify --repo`, `reproduce`, `fleet`): the
repository's top folder, the files campaign.json names in it, read without blocking or past a
limit, and never a file inside an evidence bundle. One owner for both judges, so verify and
reproduce do not import each other for it."""
from __future__ import annotations

import os
from pathlib import Path

from harness import contract as C
from harness.records import CampaignRecord


class AnchorError(Exception):
    """--repo cannot be checked against: one line, exit 2."""


def repository(path: Path) -> Path:
    """--repo PATH as a git work tree's top folder, or AnchorError."""
    from harness.plan import revisions

    if not path.is_dir():
        raise AnchorError(f"--repo {path}: no such folder")
    top = revisions._git(["rev-parse", "--show-toplevel"], cwd=path, text=True)
    if top.returncode:
        raise AnchorError(f"--repo {path}: not a git repository")
    return Path(top.stdout.strip()).resolve()


UNANCHORED = ("anchors outside the bundle cannot be checked: campaign.json records no campaign_path inside a "
              "repository (the campaign file lay outside any git repository when it ran), so neither `--repo` nor "
              "`harness reproduce` can work for this bundle")


def anchorable(campaign: CampaignRecord) -> bool:
    """Whether campaign.json's campaign_path can be found in a repository (`verify --repo`,
    `reproduce`): a relative path. A campaign file outside any git repository seals its
    absolute path, and then neither can ever work."""
    rel = campaign.campaign_path
    return isinstance(rel, str) and bool(rel) and not rel.startswith("/")


def anchor(repo: Path, rel, key: str) -> Path:
    """A file campaign.json names in the repository: a plain relative path that resolves
    inside it and outside any evidence bundle (a bundle's own campaign.yaml would make the
    check compare the bundle with itself, and `reproduce` run what the bundle wrote)."""
    where = f"campaign.json {key} {rel!r}"
    if key == "campaign_path" and isinstance(rel, str) and rel.startswith("/"):
        raise AnchorError(f"{where}: not a relative path inside the repository but an absolute one (the campaign "
                          "file lay outside any git repository when it ran): the bundle has no anchors in any "
                          "repository, so neither `verify --repo` nor "
                          "`reproduce` can work for it; `harness verify BUNDLE` checks everything else")
    if not isinstance(rel, str) or not rel or rel.startswith("/") or "\\" in rel or "\0" in rel \
            or any(part in ("", ".", "..") for part in rel.split("/")):
        raise AnchorError(f"{where}: not a relative path inside the repository")
    path = (repo / rel).resolve()
    if repo not in path.parents:
        raise AnchorError(f"{where}: resolves outside the repository {repo} (to {path})")
    for folder in path.parents:
        if folder == repo:
            break
        if (folder / C.TAGMANIFEST).exists() or (folder / C.BAGIT).exists():
            raise AnchorError(f"{where}: lies inside the evidence bundle {folder}; the anchors are the "
                              "repository's own files, never a bundle's")
    return path


def campaign_file(repo: Path, rel, shas=()) -> Path:
    """The bundle's campaign file in the repository at --repo (campaign_path), or AnchorError
    naming which repository --repo must be: the one the campaign was run from. Given the bundle's
    commits (shas), a repository holding one of them is said to be the target's, the repository
    `verify --repo` takes for a bisect folder, not for a bundle."""
    path = anchor(repo, rel, "campaign_path")
    if os.path.lexists(path):
        return path  # read_anchor says what else is wrong with it (a FIFO, a device)
    from harness.plan import revisions

    held = next((sha for sha in shas if isinstance(sha, str) and C.GITSHA_RE.match(sha)
                 and revisions.commit_sha(repo, sha)), None)
    why = (f" (it holds the campaign's commit {held[:12]}: it is the target repository, which --repo names for a "
           "bisect folder, not for a bundle)") if held else ""
    raise AnchorError(f"--repo: expected the repository holding the campaign file {rel} (the bundle's campaign_path); "
                      f"{repo} has no such file{why}: give the repository the campaign was run from")


def read_anchor(path: Path, limit: int = C.MAX_YAML_BYTES) -> bytes:
    """A regular file's bytes, never blocking on a FIFO, never a device, at most limit."""
    from harness.files import NotReadable, read_regular

    try:
        return read_regular(path, limit)
    except NotReadable as exc:
        raise AnchorError(f"{path}: {exc}") from None
    except OSError as exc:
        raise AnchorError(f"{path}: cannot be read ({exc.strerror or exc})") from None


def outside_bundles(path: Path) -> Path:
    """--campaign FILE: a regular file that no evidence bundle holds."""
    path = path.resolve()
    if not path.is_file():
        raise AnchorError(f"--campaign {path}: not a regular file")
    for folder in path.parents:
        if (folder / C.TAGMANIFEST).exists() or (folder / C.BAGIT).exists():
            raise AnchorError(f"--campaign {path}: lies inside the evidence bundle {folder}; give the "
                              "repository's own campaign file")
    return path
