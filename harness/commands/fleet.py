"""`harness fleet run CAMPAIGN... --out DIR [--replicas N] [--address ADDR] [--timeout S]
[--code ship|shared] [--repo PATH] [overrides]`: each campaign, N times, each replica whole
on its own otherwise idle Ray node (distinct nodes per campaign), as the ordinary
`harness run` there; every bundle comes back, is verified here (`verify --repo`) and
lands in OUT/CAMPAIGN/NODE/; then the cross-machine table.

`harness fleet report DIR... [--repo PATH]`: the cross-machine table of bundles made on
several nodes (a fleet run's --out, or bundles named one by one).

`harness reproduce BUNDLE --fleet N` (harness/commands/reproduce.py) runs `reproduce_on_fleet`.

Exit codes, fleet run: 0 every replica landed verified (and its `harness run` exited 0),
1 a bundle did not verify or was not its job's (another campaign or campaign file, other
SHAs, a reproduction of another original, or a node's exit code the verified bundle does
not give: collect.hold re-derives it here), 4 a job failed (node lost, timed out, no node with the
resource, interrupted, a campaign that failed on its node), 3 a landed bundle's outputs
differ between its variants, 2 usage or unusable input (nothing ran).
fleet report: 0 the verdicts agree and outputs are bit-identical, 3 outputs differ across
nodes, 6 the verdicts disagree, 1 a bundle does not verify, 2 no bundle found.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from harness import outcomes
from harness.commands import error
from harness.render.text import term

HELP = "run campaigns, or reproduce a bundle, on a Ray cluster: one job per node, bundles verified here"


def add_parser(sub) -> None:
    p = sub.add_parser("fleet", help=HELP, description=HELP + ".")
    fsub = p.add_subparsers(dest="fleet_command", required=True, metavar="SUBCOMMAND")
    r = fsub.add_parser("run", help="each campaign on N distinct nodes; bundles verified and written under --out",
                        description="Each campaign (each replica) runs whole on one Ray node that runs nothing else "
                                    "meanwhile (every node offers abba_node: 1, every job asks for it); replicas of "
                                    "one campaign go to distinct nodes. Each bundle is verified here and held to its job (campaign, "
                                    "SHAs; the exit code re-derived from it). Exit 0 all landed, 1 a bundle did not "
                                    "verify or was not its job's, "
                                    "4 a job failed, 3 a landed bundle has a parity mismatch, 2 usage.")
    r.add_argument("campaigns", nargs="+", metavar="CAMPAIGN", help="campaign YAML files inside the repository")
    r.add_argument("--out", required=True, metavar="DIR",
                   help="where the bundles land, as DIR/CAMPAIGN/NODE (must not exist, or be empty)")
    add_cluster_options(r)
    r.add_argument("--replicas", type=int, default=1, metavar="N",
                   help="run each campaign on N distinct nodes (default 1)")
    from harness.commands.run import add_overrides

    add_overrides(r)
    r.set_defaults(func=main_run)
    rep = fsub.add_parser("report", help="the cross-machine table of bundles made on several nodes",
                          description="One row per bundle (node, machine class, ratio and interval, verdict, parity, "
                                      "output digests), whether the verdicts agree, whether outputs are bit-identical "
                                      "across nodes, and the spread of the ratio. Exit 0 agree and identical, 3 outputs "
                                      "differ, 6 verdicts disagree, 1 a bundle does not verify, 2 none found.")
    rep.add_argument("paths", nargs="+", metavar="DIR", help="bundles, or folders holding them (a fleet run's --out)")
    rep.add_argument("--repo", metavar="PATH", help="also check each bundle's anchors in this clone (verify --repo)")
    rep.set_defaults(func=main_report)


def add_cluster_options(p, fleet_flag: bool = False) -> None:
    """The options `fleet run` and `reproduce --fleet` share."""
    p.add_argument("--address", metavar="ADDR",
                   help="the Ray cluster (HOST:PORT of its head, or ray://...); default: a local Ray instance on this "
                        "machine, one node")
    p.add_argument("--timeout", type=float, metavar="S", help="end a job that runs longer than S seconds on its node")
    p.add_argument("--code", choices=("ship", "shared"), default="ship",
                   help="ship: the repository goes to each node as Ray's working_dir (default); shared: every node "
                        "sees this repository at the same path")
    if not fleet_flag:
        p.add_argument("--repo", default=".", metavar="PATH",
                       help="the repository the campaigns belong to, shipped to the nodes and the anchor every "
                            "returned bundle is verified against (default: the current folder's)")


def _overrides_argv(args) -> list[str]:
    argv = []
    for flag in ("base", "candidate", "order", "rounds", "items"):
        value = getattr(args, flag, None)
        if value is not None:
            argv += [f"--{flag}", str(value)]
    for param in getattr(args, "param", None) or []:
        argv += ["--param", param]
    for metric in getattr(args, "metric", None) or []:
        argv += ["--metric", metric]
    return argv


def _fresh_out(out: Path, command: str) -> str | None:
    """--out must not exist, or be an empty folder: nothing of an earlier run is mixed in."""
    if os.path.lexists(out) and not (out.is_dir() and not out.is_symlink() and not any(out.iterdir())):
        return f"--out {out} exists and is not an empty folder; give a new one"
    return None


def _repo(path: str, command: str):
    from harness.judge.anchors import AnchorError, repository

    try:
        return repository(Path(path)), None
    except AnchorError as exc:
        return None, error(command, exc)


def main_run(args) -> int:
    from harness.plan import spec

    command = "fleet run"
    if args.replicas < 1:
        return error(command, "--replicas must be at least 1")
    if args.timeout is not None and args.timeout <= 0:
        return error(command, "--timeout must be positive")
    repo, code = _repo(args.repo, command)
    if repo is None:
        return code
    out = Path(args.out).absolute()
    problem = _fresh_out(out, command)
    if problem:
        return error(command, problem)
    try:
        overrides = spec.parse_overrides(args.base, args.candidate, args.order, args.items, args.param, args.rounds,
                                         args.metric)
    except spec.SpecError as exc:
        return error(command, exc)
    groups, names = [], set()
    for path in args.campaigns:
        source = Path(path).resolve()
        try:
            source.relative_to(repo)
        except ValueError:
            return error(command, f"{path}: not inside the repository {repo} (the nodes run the repository's campaign "
                                  "files; --repo names another)")
        try:
            group = campaign_group(source, repo, out, args.replicas, overrides, _overrides_argv(args))
        except spec.SpecError as exc:
            return error(command, exc)
        except OSError as exc:
            return error(command, f"{path}: cannot be read ({exc.strerror or exc})")
        if group.name in names:
            return error(command, f"{path}: campaign {group.name!r} is given twice (replicas: --replicas N)")
        names.add(group.name)
        groups.append(group)
    return _run_groups(command, args, repo, out, groups, after=_campaign_tables)


def campaign_group(source: Path, repo: Path, out: Path, replicas: int, overrides: dict | None = None,
                   override_argv: Sequence[str] = ()):
    """One campaign's replicas (schedule.Group and its Jobs), with the terms every replica's
    bundle is held to (collect.terms_of_run: fixed here, before anything is submitted)."""
    from harness.fleet import collect, schedule, short

    terms = collect.terms_of_run(source, repo, overrides)
    group = schedule.Group(name=terms.campaign, argv=["run", terms.campaign_path, "--out", "{out}", *override_argv],
                           replicas=replicas, dest=lambda node: out / terms.campaign / short(node),
                           landing_codes=(outcomes.OK, outcomes.PARITY), code_meaning=outcomes.RUN_EXIT_MEANING,
                           terms=terms)
    group.jobs = [schedule.Job(group, i + 1) for i in range(replicas)]
    return group


def reproduction_group(bundle: Path, digest: str, repo: Path, out: Path, replicas: int, argv: list[str],
                       campaign_file: Path | None = None):
    """The reproductions of one (verified) original on `replicas` nodes, with the terms each
    must meet (collect.terms_of_reproduction: of this original, its campaign, its SHAs)."""
    from harness.fleet import collect, schedule, short

    terms = collect.terms_of_reproduction(bundle.absolute(), digest, repo, campaign_file)
    meaning = {code: word for word, code in outcomes.REPRODUCTION_CODES.items()}
    group = schedule.Group(name=bundle.absolute().name, argv=argv, replicas=replicas,
                           dest=lambda node: out / short(node),
                           # every reproduction verdict seals a bundle worth landing; a failed run does not
                           landing_codes=tuple(c for c in meaning if c != outcomes.FAILED), code_meaning=meaning,
                           terms=terms)
    group.jobs = [schedule.Job(group, i + 1) for i in range(replicas)]
    return group


def _run_groups(command: str, args, repo: Path, out: Path, groups: list, after, original: bytes | None = None) -> int:
    """Connect, run every group, print the summary; always disconnect, and leave no empty --out."""
    from harness import contract as C
    from harness.files import atomic_write_json, harness_source_digest
    from harness.fleet import cluster, schedule

    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    try:
        try:
            conn = cluster.connect(args.address, repo, args.code, out)
        except cluster.FleetError as exc:
            return error(command, exc)
        print(f"cluster: {conn.address} (id {conn.cluster_id[:12]}, {'a local Ray instance' if conn.local else 'Ray'}"
              f"), {len(cluster.abba_nodes())} node(s) with abba_node; code: {conn.code}; connected in "
              f"{conn.connect_s:.1f} s" + (" (packing and shipping the repository included)" if conn.code == "ship"
                                            else ""), flush=True)
        if original is not None:
            ray = cluster.ray_module()
            for group in groups:
                group.original = ray.put(original)
        code, jobs = schedule.run(groups, conn, out, repo, args.timeout, harness_source_digest())
        landed = [j for j in jobs if j.ok]
        print(f"{command}: {len(landed)} of {len(jobs)} replica{'s' if len(jobs) > 1 else ''} landed verified under "
              f"{out}; {len(jobs) - len(landed)} failed", flush=True)
        if landed:
            atomic_write_json(out / "fleet.json", {
                "schema": C.SCHEMAS["fleet_run"], "command": command, "cluster": conn.address,
                "cluster_id": conn.cluster_id, "local": conn.local, "code": conn.code, "connect_s": conn.connect_s,
                "jobs": [{"group": j.group.name, "replica": j.replica, "node_id": j.node_id, "ok": j.ok,
                          "cause": j.cause, "exit_code": j.exit_code,
                          "path": os.path.relpath(j.path, out) if j.path else None, "timings": j.timings}
                         for j in jobs]})
        code = after(groups, code) if landed else code
        print(f"exit {code}", flush=True)
        return code
    finally:
        try:
            cluster.disconnect()
        except Exception:  # noqa: BLE001 - nothing left to stop
            pass
        if created and out.is_dir() and not any(out.iterdir()):
            out.rmdir()


def _campaign_tables(groups, code: int) -> int:
    from harness.fleet import report

    for group in groups:
        paths = [j.path for j in group.jobs if j.ok]
        if not paths:
            continue
        loaded, problems = report.load(paths)
        print(f"\n## {term(group.name)}: {len(loaded)} of {group.replicas} replicas\n")
        lines, _ = report.table_lines(loaded, Path.cwd())
        for line in lines:
            print(term(line))
    return code


def main_report(args) -> int:
    from harness.fleet import report

    repo = None
    if args.repo:
        repo, code = _repo(args.repo, "fleet report")
        if repo is None:
            return code
    return report.render([Path(p) for p in args.paths], repo)


# --- harness reproduce BUNDLE --fleet N ----------------------------------------------------
def reproduce_on_fleet(args) -> int:
    """The reviewer's re-run on N distinct nodes at once, each judged as `harness reproduce`
    judges (on its node), each reproduction bundle verified here; one line per node and one
    summary line."""
    from harness.bundle import read
    from harness.fleet import jobs
    from harness.judge import reproduce
    from harness.judge.verify import verify

    command = "reproduce"
    if args.fleet < 1:
        return error(command, "--fleet must be at least 1")
    bundle = Path(args.bundle)
    repo, code = _repo(args.repo, command)
    if repo is None:
        return code
    report = verify(bundle, repo=repo)
    if report.unusable:
        return error(command, report.unusable)
    anchors = [p for p in report.problems if p.rule == "anchors"]
    inside = [p for p in report.problems if p not in anchors]
    for line in inside:
        print(f"FAIL {term(line)}")
    if inside:
        return error(command, f"{bundle} does not verify; nothing to reproduce", code=outcomes.PROBLEMS)
    if anchors:
        return error(command, f"{bundle} no longer matches {repo}: {anchors[0]}")
    out = Path(args.out).absolute() if args.out else reproduce.fresh_out(bundle)
    problem = _fresh_out(out, command)
    if problem:
        return error(command, problem)
    argv = ["reproduce", "{original}", "--repo", ".", "--out", "{out}"]
    if args.campaign:
        try:
            argv += ["--campaign", Path(args.campaign).resolve().relative_to(repo).as_posix()]
        except ValueError:
            return error(command, f"--campaign {args.campaign}: not inside the repository {repo}")
    for flag in ("order", "rounds", "items"):
        if getattr(args, flag) is not None:
            argv += [f"--{flag}", str(getattr(args, flag))]
    assert report.digest is not None  # verified above: sealed
    try:
        group = reproduction_group(bundle, report.digest, repo, out, args.fleet, argv,
                                   Path(args.campaign) if args.campaign else None)
    except (read.BundleError, OSError, ValueError) as exc:
        return error(command, f"{bundle}: cannot fix what its reproductions must be ({exc})")
    print(f"original: {bundle} (digest {report.digest}); reproducing on {args.fleet} node(s) into {out}", flush=True)
    return _run_groups(command, args, repo, out, [group], after=_reproduction_lines, original=jobs.pack(bundle))


def _reproduction_lines(groups, code: int) -> int:
    """One line per node (its receipt's verdict, timing and outputs), one summary line."""
    from harness.bundle import read
    from harness.judge import reproduce as rep

    group = groups[0]
    words = []
    for job in group.jobs:
        if not job.ok:
            words.append("failed")
            continue
        why = "the bundle holds none"
        try:
            receipt = read.load(job.path).reproduction
        except read.BundleError as exc:
            receipt, why = None, str(exc)
        if not receipt:
            words.append("failed")
            print(term(f"node {job.path.name}: no reproduction receipt ({why})"))
            continue
        word = receipt.verdict
        words.append(word)
        print(term(f"node {job.path.name}: {word} (exit {outcomes.REPRODUCTION_CODES[word]}) on "
                   f"{receipt.reproduction.machine.text()}; outputs: "
                   f"{rep.outputs_text(receipt.outputs)}; re-run {rep.ratio_text(receipt.timing.measured)}"))
    summary = ", ".join(f"{words.count(w)} {w}" for w in sorted(set(words)))
    print(f"reproduce --fleet: {words.count('reproduced')} of {len(words)} nodes reproduced the claim ({summary})")
    return code
