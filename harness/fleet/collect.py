"""On the caller: a bundle that came back from a node lands under --out only once it
verifies here.

The tar stream is unpacked into a staging folder inside --out (`.NAME.partial-PID`, so
the rename into place is atomic and a crash leaves only a folder both checkers call
incomplete), verified with the harness's own `verify --repo` against the caller's clone
(every file and array re-hashed, the records' rules, comparison.json re-derived, the
campaign file byte for byte the clone's, each revision's tree digest recomputed from its
commit), then held to what the fleet knows: the node it says it ran on is the node Ray
ran the job on, and the harness that ran is this checkout's (its source digest). Only
then is it renamed to its final folder; anything else removes the staging folder.

A verified bundle is not yet the job's: a node could return a genuine bundle of another
campaign, a reproduction of another original, or its own word for the exit code. So each
job carries its Terms, fixed here before it is submitted (the campaign's name, the campaign
file's path and SHA-256 as a bundle seals it, both revisions' SHAs, for a reproduction the
original's digest), `hold` holds the landed bundle to them, and the exit code and verdict
are re-derived here from the verified bundle (harness/outcomes.py); a node that reported
another code is refused. Each refusal is one line naming the field; the fleet exits 1.
"""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from harness.fleet import jobs

# A test hook: flip one byte of this bundle file (path inside the bundle) after it
# arrives and before it is verified, as a corrupted or tampered transfer would.
TAMPER_ENV = "ABBA_FLEET_TAMPER_IN_TRANSIT"


@dataclass
class Landing:
    ok: bool
    cause: str | None = None  # why it did not land (one line)
    path: Path | None = None
    digest: str | None = None
    unpack_s: float = 0.0
    verify_s: float = 0.0
    code: int | None = None  # landed: the exit code re-derived from the bundle; refused: what the refusal adds
    word: str | None = None  # landed: the verdict re-derived from the bundle


@dataclass(frozen=True)
class Terms:
    """What a job must bring back, fixed on the caller before it is submitted."""
    kind: str  # "run" (harness run) or "reproduce" (harness reproduce)
    campaign: str  # campaign.json's name
    campaign_path: str  # campaign.json's campaign_path: the campaign file, relative to the repository
    campaign_sha256: str  # SHA-256 of the campaign file's bytes: the bundle's data/campaign.yaml
    revisions: dict  # variant -> ("commit", full SHA), or ("tree", tree SHA) for a WORKTREE snapshot
    target: str  # the target repository here (where a tree is looked up)
    original: str | None = None  # reproduce: the original bundle's folder here
    original_digest: str | None = None  # reproduce: the digest its receipt must name


def _sha256_file(path: Path) -> str:
    import hashlib

    from harness import contract as C
    from harness.files import read_regular

    return hashlib.sha256(read_regular(path, C.MAX_YAML_BYTES)).hexdigest()


def _tree(target: Path, sha: str) -> str | None:
    from harness.plan import revisions

    got = revisions._git(["rev-parse", "--verify", "--quiet", f"{sha}^{{tree}}"], cwd=target, text=True)
    return got.stdout.strip() if not got.returncode else None


def terms_of_run(source: Path, repo: Path, overrides: dict | None = None) -> Terms:
    """A `fleet run` job's terms: the campaign file as this checkout holds it, its revisions
    resolved here as `harness run` resolves them on the node (spec.SpecError when they do not
    resolve: nothing is submitted)."""
    from harness.plan import revisions, spec

    campaign = spec.load(source, overrides)
    target = revisions.target_repo(campaign)
    shas = {}
    for variant in ("base", "candidate"):
        revision = campaign.revision(variant)
        sha = revisions.resolve(campaign, target, revision)
        # a WORKTREE snapshot is a new commit object each time: its tree is what must match
        shas[variant] = ("tree", _tree(target, sha)) if revision.rev == revisions.WORKTREE else ("commit", sha)
    return Terms("run", campaign.name, source.resolve().relative_to(repo).as_posix(), _sha256_file(source), shas,
                 str(target))


def terms_of_reproduction(original: Path, digest: str, repo: Path, campaign_file: Path | None = None) -> Terms:
    """A `reproduce --fleet` job's terms: the original's campaign and SHAs (the re-run runs at
    the recorded SHAs), the campaign file it re-runs (the repository's at the original's
    campaign_path, or --campaign FILE), and the original's digest (verified by the caller)."""
    from harness.bundle import read

    loaded = read.load(original)
    recorded = loaded.campaign
    source = campaign_file.resolve() if campaign_file is not None else repo / str(recorded.campaign_path)
    return Terms("reproduce", recorded.name, source.relative_to(repo).as_posix(), _sha256_file(source),
                 {v: ("commit", recorded.sha(v)) for v in ("base", "candidate")}, "",
                 str(original), digest)


def _mismatch(terms: Terms, loaded) -> str | None:
    """The first field in which a (loaded) bundle is not what its job ran, or None."""
    import hashlib

    from harness import contract as C
    from harness.bundle.read import limit_of, read_bytes

    def short(value) -> str:
        return repr(value) if not isinstance(value, str) or len(value) <= 40 else repr(value[:16] + "...")

    c = loaded.campaign
    if c.name != terms.campaign:
        return f"{C.CAMPAIGN_JSON} name is {short(c.name)}, the job ran campaign {terms.campaign!r}"
    if c.campaign_path != terms.campaign_path:
        return (f"{C.CAMPAIGN_JSON} campaign_path is {short(c.campaign_path)}, the job ran "
                f"{terms.campaign_path!r}")
    sealed = hashlib.sha256(read_bytes(loaded.path / C.CAMPAIGN_YAML, limit_of(C.CAMPAIGN_YAML))).hexdigest()
    if sealed != terms.campaign_sha256:
        return (f"{C.CAMPAIGN_YAML} has SHA-256 {sealed[:16]}..., the job's campaign file {terms.campaign_path} "
                f"{terms.campaign_sha256[:16]}...")
    for variant in ("base", "candidate"):
        sha = c.sha(variant)
        kind, want = terms.revisions[variant]
        got = sha if kind == "commit" else (_tree(Path(terms.target), sha) if isinstance(sha, str) else None)
        if got != want:
            return (f"{C.CAMPAIGN_JSON} revisions.{variant}.sha is {short(sha)}"
                    + (f" (tree {short(got)})" if kind == "tree" else "")
                    + f", the job ran {variant} {'tree ' if kind == 'tree' else ''}{want}")
    if terms.kind == "reproduce":
        original = terms.original_digest or ""  # set on every reproduce job (jobs.reproduction_group)
        receipt = loaded.reproduction
        if receipt is None:
            return f"{C.REPRODUCTION}: none, the job was a reproduction of {original[:16]}..."
        said = receipt.original.digest
        if said != terms.original_digest:
            return (f"{C.REPRODUCTION} original.digest is {short(said)}, the job reproduced "
                    f"{terms.original} (digest {original[:16]}...)")
    elif loaded.reproduction is not None:
        return f"{C.REPRODUCTION}: present, the job was a campaign run, not a reproduction"
    return None


def derived_code(terms: Terms, loaded) -> tuple[int, str]:
    """The exit code and verdict a verified bundle gives, as `harness run` (or `harness
    reproduce`) gives them: from its re-derived comparison (or its re-derived receipt)."""
    from harness import outcomes

    if terms.kind == "reproduce":
        word = loaded.reproduction.verdict
        return outcomes.REPRODUCTION_CODES[word], word
    code = outcomes.run_code(loaded.comparison)
    return code, outcomes.RUN_EXIT_MEANING[code]


def hold(terms: Terms, bundle: Path, repo: Path, node_id: str, harness_digest: str,
         reported: int | None) -> Landing:
    """A returned bundle (unpacked at bundle) held to its job, here: it verifies against the
    repository (a reproduction's receipt re-derived from it and the original), it is the
    job's campaign at the job's SHAs (a reproduction: of the job's original), it ran on the
    node Ray ran the job on with this checkout's harness, and the exit code the node
    reported is the one the verified bundle gives. Landing.ok with the re-derived code and
    verdict, or the first refusal as one line (Landing.cause, Landing.code: 1)."""
    import time

    from harness import contract as C, outcomes
    from harness.bundle import read
    from harness.judge.verify import verify

    landing = Landing(ok=False, code=outcomes.PROBLEMS)
    t0 = time.monotonic()
    report = verify(bundle, repo=repo, original=terms.original if terms.kind == "reproduce" else None)
    landing.verify_s = time.monotonic() - t0
    try:
        loaded = read.load(bundle)
    except read.BundleError:
        loaded = None
    mismatch = _mismatch(terms, loaded) if loaded is not None else None
    if mismatch:
        landing.cause = f"does not match its job: {mismatch}"
        return landing
    if report.unusable:
        landing.cause = f"does not verify: {report.unusable}"
        return landing
    if report.problems or loaded is None:
        more = f" (and {len(report.problems) - 1} more)" if len(report.problems) > 1 else ""
        landing.cause = f"does not verify: {report.problems[0] if report.problems else 'unreadable'}{more}"
        return landing
    env = read.read_json(bundle / C.ENVIRONMENT, limit=read.limit_of(C.ENVIRONMENT))
    where = env.get("fleet") if isinstance(env, dict) else None
    if not isinstance(where, dict) or where.get("node_id") != node_id:
        said = where.get("node_id") if isinstance(where, dict) else None
        landing.cause = f"does not verify: the bundle says it ran on node {said!r}, Ray ran the job on {node_id}"
        return landing
    if env.get("harness_source_sha256") != harness_digest:
        landing.cause = (f"does not verify: the node ran another harness (source digest "
                         f"{str(env.get('harness_source_sha256'))[:12]}, this checkout {harness_digest[:12]}): "
                         "install this revision of the harness on the node")
        return landing
    code, word = derived_code(terms, loaded)
    if reported != code:
        meaning = outcomes.RUN_EXIT_MEANING if terms.kind == "run" else \
            {c: w for w, c in outcomes.REPRODUCTION_CODES.items()}
        said = f"{reported} ({meaning[reported]})" if reported in meaning else str(reported)
        landing.cause = (f"does not match its job: exit code: the node reported exit {said}, the verified bundle "
                         f"gives exit {code} ({word}); a node's word is not taken")
        return landing
    landing.ok, landing.code, landing.word, landing.digest = True, code, word, report.digest
    return landing


def _flip(bundle: Path, rel: str) -> None:
    path = bundle / rel
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def land(data: bytes, out: Path, final: Path, repo: Path, node_id: str, harness_digest: str, terms: Terms,
         reported: int | None) -> Landing:
    """Unpack, hold to its job (`hold`) and rename one returned bundle to `final` (inside `out`)."""
    import time

    staging = out / f".{'.'.join(final.relative_to(out).parts)}.partial-{os.getpid()}"
    landing = Landing(ok=False)
    try:
        t0 = time.monotonic()
        try:
            bundle = jobs.unpack(data, staging)
        except jobs.UnsafeArchive as exc:
            landing.cause = f"does not verify: the returned archive is unsafe ({exc})"
            return landing
        unpack_s = time.monotonic() - t0
        tamper = os.environ.get(TAMPER_ENV)
        if tamper and (bundle / tamper).is_file():
            _flip(bundle, tamper)
        landing = hold(terms, bundle, repo, node_id, harness_digest, reported)
        landing.unpack_s = unpack_s
        if not landing.ok:
            return landing
        final.parent.mkdir(parents=True, exist_ok=True)
        if os.path.lexists(final):
            landing.ok, landing.cause = False, f"{final} exists; nothing written"
            return landing
        os.rename(bundle, final)
        landing.path = final
        return landing
    finally:
        shutil.rmtree(staging, ignore_errors=True)
