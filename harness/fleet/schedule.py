"""On the caller: place each campaign's replicas on distinct, otherwise idle nodes, run
them, collect what comes back, and give one line per replica.

Placement: one placement group per campaign, STRICT_SPREAD over N bundles of
`{abba_node: 1}`, so the N replicas land on N distinct nodes, and each node runs one fleet
job at a time (it offers exactly one abba_node). A campaign asking for more replicas
than the cluster has such nodes fails at once with one line, and so does one whose
placement group is still waiting when the cluster has come to hold too few.

Faults, each one line marked failed while the other jobs go on: a node lost (Ray's
NodeDiedError, or the worker gone with it), a job past its --timeout (the node ends its
`harness run`; the caller cancels it if the node does not answer), a bundle that does not
verify, no node with the resource, a `harness run` that ends without a complete bundle.
Interrupting (SIGINT, SIGTERM) cancels every outstanding job (`ray.cancel(force=True)`:
the Ray worker is killed and its `harness run` with it) and says what finished.
"""
from __future__ import annotations

import signal
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from harness import outcomes
from harness.fleet import RESOURCE, cluster, collect, jobs, short

CHECK_NODES_S = 2.0  # how often a waiting placement group's feasibility is re-checked
ANSWER_GRACE_S = 120.0  # past --timeout (+ the node's own grace), before the caller gives up on a node
CANCEL_WAIT_S = 10.0


@dataclass
class Job:
    group: "Group"
    replica: int  # 1-based
    ref: object = None
    node_id: str | None = None
    submitted_at: float | None = None  # time.time()
    submitted_mono: float | None = None
    state: str = "waiting"  # waiting | running | done
    ok: bool = False
    cause: str | None = None
    code: int = outcomes.OK  # what this job adds to the exit code
    path: Path | None = None
    exit_code: int | None = None  # the node's `harness run`/`reproduce` exit code
    timings: dict = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.group.name} [{self.replica}/{self.group.replicas}]"


@dataclass
class Group:
    """One campaign (or one reproduction) and its N replicas."""
    name: str
    argv: list[str]  # harness arguments on the node; {out}, {original} filled in there
    replicas: int
    dest: Callable[[str], Path]  # node_id -> final folder under --out
    landing_codes: tuple[int, ...]  # the node's exit codes whose bundle lands (complete campaigns)
    code_meaning: dict  # exit code -> words, for the lines
    terms: collect.Terms  # what each replica's bundle must be (campaign, SHAs, original)
    original: object = None  # an ObjectRef of the original bundle's tar stream (reproduce)
    pg: Any = None  # a Ray PlacementGroup (Ray has no types)
    ready_ref: object = None
    jobs: list[Job] = field(default_factory=list)
    placed: bool = False
    created_mono: float | None = None
    next_check: float = 0.0


def run(groups: list[Group], conn: cluster.Connection, out: Path, repo: Path, timeout_s: float | None,
        harness_digest: str, echo=print, grace_s: float = jobs.GRACE_S) -> tuple[int, list[Job]]:
    """Every group's replicas to the end (or an interrupt). Returns (exit code, jobs)."""
    ray = cluster.ray_module()
    from ray.util.placement_group import placement_group, remove_placement_group
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    remote = ray.remote(num_cpus=0, resources={RESOURCE: 1}, max_retries=0, retry_exceptions=False)(jobs.node_job)
    spec_base = jobs.NodeSpec(argv=[], repo=str(repo) if conn.code == "shared" else None, timeout_s=timeout_s,
                              grace_s=grace_s, cluster=conn.address, cluster_id=conn.cluster_id)
    all_jobs = [job for g in groups for job in g.jobs]
    interrupted = False
    # SIGINT and SIGTERM are noted, not raised: a KeyboardInterrupt raised inside Ray's own
    # calls can be lost there (once in CI the run went on to the end), so the loop checks at
    # each turn, and ray.wait returns at least every second.
    received: list[int] = []
    old_handlers = {s: signal.signal(s, lambda signum, frame: received.append(signum))
                    for s in (signal.SIGINT, signal.SIGTERM)}

    def finish(job: Job, ok: bool, cause: str | None = None, code: int = outcomes.FAILED, quiet: bool = False) -> None:
        """ok: landed, and code is the node's own exit code; else code is what the failure adds."""
        job.state, job.ok, job.cause, job.code = "done", ok, cause, code
        if quiet:
            return group_done(job.group)
        node = f" node {short(job.node_id)}" if job.node_id else ""
        if ok:
            meaning = job.group.code_meaning.get(job.exit_code, "")
            t = job.timings
            echo(f"{job.label}{node}: ok (exit {job.exit_code}{f', {meaning}' if meaning else ''}; verified) -> "
                 f"{job.path}  [{t.get('total_s', 0):.1f} s, of which the campaign {t.get('run_s', 0):.1f} s]",
                 flush=True)
        else:
            echo(f"{job.label}{node}: failed: {cause}", flush=True)
        group_done(job.group)

    def group_done(group: Group) -> None:
        if group.pg is not None and all(j.state == "done" for j in group.jobs):
            try:
                remove_placement_group(group.pg)
            except Exception:  # noqa: BLE001 - the cluster may be gone; nothing to free then
                pass
            group.pg = None

    try:
        for group in groups:
            nodes = cluster.abba_nodes()
            if len(nodes) < group.replicas:
                too_few(group, len(nodes), finish, echo)
                continue
            group.pg = placement_group([{RESOURCE: 1}] * group.replicas, strategy="STRICT_SPREAD",
                                       name=f"abba-{group.name}")
            group.ready_ref = group.pg.ready()
            group.created_mono = time.monotonic()
        while any(j.state != "done" for j in all_jobs):
            if received:
                raise KeyboardInterrupt
            waiting = {g.ready_ref: g for g in groups if g.pg is not None and not g.placed}
            running = {j.ref: j for j in all_jobs if j.state == "running"}
            refs = list(waiting) + list(running)
            done, _ = ray.wait(refs, num_returns=1, timeout=1.0) if refs else ([], [])
            now = time.monotonic()
            for ref in done:
                if ref in waiting:
                    place(waiting[ref], remote, spec_base, PlacementGroupSchedulingStrategy, echo, ray, finish)
                else:
                    collect_one(running[ref], ray, out, repo, harness_digest, finish)
            for group in groups:  # a waiting group the cluster can no longer hold
                if group.pg is not None and not group.placed and now >= group.next_check:
                    group.next_check = now + CHECK_NODES_S
                    have = len(cluster.abba_nodes())
                    if have < group.replicas:
                        too_few(group, have, finish, echo)
            for job in all_jobs:  # a node that does not answer past the timeout
                if job.state == "running" and timeout_s is not None and job.submitted_mono is not None \
                        and now - job.submitted_mono > timeout_s + grace_s + ANSWER_GRACE_S:
                    ray.cancel(job.ref, force=True)
                    finish(job, False, f"timed out: no answer from the node {ANSWER_GRACE_S:g} s past the "
                                       f"--timeout of {timeout_s:g} s (cancelled)")
    except KeyboardInterrupt:
        interrupted = True
        outstanding = [j for j in all_jobs if j.state != "done"]
        for job in outstanding:
            if job.ref is not None:
                try:
                    ray.cancel(job.ref, force=True)
                except Exception:  # noqa: BLE001 - already finished or the cluster is gone
                    pass
        refs = [j.ref for j in outstanding if j.ref is not None]
        if refs:
            try:
                ray.wait(refs, num_returns=len(refs), timeout=CANCEL_WAIT_S)
            except Exception:  # noqa: BLE001
                pass
        for job in outstanding:
            finish(job, False, "cancelled: interrupted before it finished" if job.ref is not None
                   else "not started: interrupted")
    finally:
        for s, handler in old_handlers.items():
            signal.signal(s, handler)
        for group in groups:
            if group.pg is not None:
                try:
                    remove_placement_group(group.pg)
                except Exception:  # noqa: BLE001
                    pass
    landed = [j for j in all_jobs if j.ok]
    if interrupted:
        echo(f"interrupted: {len(landed)} of {len(all_jobs)} replicas had finished and landed"
             + (": " + ", ".join(f"{j.label} -> {j.path}" for j in landed) if landed else "")
             + f"; {len(all_jobs) - len(landed)} cancelled or failed", flush=True)
        return outcomes.FAILED, all_jobs
    return exit_code(all_jobs), all_jobs


def too_few(group: Group, have: int, finish, echo) -> None:
    """One line for the whole campaign: the cluster cannot hold its replicas on distinct nodes."""
    cause = f"needs {group.replicas} nodes with {RESOURCE}: 1, the cluster has {have}"
    echo(f"{group.name} [{group.replicas} replica{'s' if group.replicas > 1 else ''}]: failed: {cause}", flush=True)
    for job in group.jobs:
        if job.state != "done":
            finish(job, False, cause, outcomes.FAILED, quiet=True)


def exit_code(all_jobs: list[Job]) -> int:
    """1 when a bundle did not verify or was not its job's, else 4 when a job failed, else the
    worst code the landed bundles give (re-derived here from each verified bundle, which the
    node's own exit code must equal: 3 outputs differ, then 7 timing not reproduced), else 0."""
    codes = {j.code for j in all_jobs}
    for code in (outcomes.PROBLEMS, outcomes.FAILED, outcomes.PARITY, outcomes.NOT_REPRODUCED):
        if code in codes:
            return code
    return max(codes, default=outcomes.OK)


def place(group: Group, remote, spec_base: jobs.NodeSpec, strategy, echo, ray, finish) -> None:
    """The group's nodes are reserved: submit one job per bundle of its placement group."""
    from ray.util import placement_group_table

    group.placed = True
    try:
        ray.get(group.ready_ref)
    except Exception as exc:  # noqa: BLE001 - removed or failed placement
        for job in group.jobs:
            if job.state != "done":
                finish(job, False, f"placement failed ({type(exc).__name__})")
        return
    table = placement_group_table(group.pg)
    where = table.get("bundles_to_node_id") or {}
    assert group.created_mono is not None  # set with its placement group
    placed_s = time.monotonic() - group.created_mono
    for i, job in enumerate(group.jobs):
        job.node_id = where.get(i)
        job.submitted_at, job.submitted_mono = time.time(), time.monotonic()
        job.timings["placement_s"] = placed_s
        spec = replace(spec_base, argv=group.argv, submitted_at=job.submitted_at)
        args = (spec, group.original) if group.original is not None else (spec,)
        job.ref = remote.options(scheduling_strategy=strategy(group.pg, placement_group_bundle_index=i)).remote(*args)
        job.state = "running"
        echo(f"{job.label}: placed on node {short(job.node_id) if job.node_id else '?'}", flush=True)


def collect_one(job: Job, ray, out: Path, repo: Path, harness_digest: str, finish) -> None:
    """A finished job: its result, or the error that ended it, as one line."""
    from ray import exceptions as rx

    received = time.time()
    try:
        result = ray.get(job.ref)
    except rx.TaskCancelledError:
        return finish(job, False, "cancelled")
    except (rx.NodeDiedError, rx.LocalRayletDiedError) as exc:
        return finish(job, False, f"node lost ({type(exc).__name__}: the node {short(job.node_id or '?')} died or "
                                  "left the cluster mid-campaign)")
    except (rx.WorkerCrashedError, rx.ActorDiedError, rx.OwnerDiedError) as exc:
        alive = job.node_id is not None and cluster.node_alive(job.node_id)
        why = "the worker process died" if alive else "node lost"
        return finish(job, False, f"{why} ({type(exc).__name__})")
    except rx.RuntimeEnvSetupError as exc:
        line = next((ln for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
        return finish(job, False, f"the node could not set up the shipped repository: {line[:200]}")
    except rx.RayError as exc:
        line = next((ln for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
        return finish(job, False, f"{type(exc).__name__}: {line[:200]}")
    settle(job, result, time.time() - received, out, repo, harness_digest, finish)


def settle(job: Job, result: jobs.NodeResult, got_s: float, out: Path, repo: Path, harness_digest: str,
           finish) -> None:
    """What a node returned for a job (jobs.node_job's result): a bundle lands only when it
    is the job's and verifies here (collect.land); the job's code is the one re-derived from
    the landed bundle, never the node's word. No Ray here: tests give it forged results."""
    job.node_id = result.node_id
    job.exit_code = result.exit_code
    job.timings.update(_timings(job, result, got_s))
    if result.status == "raylet lost":
        return finish(job, False, f"node lost: the raylet of node {short(job.node_id)} died mid-campaign (the node "
                                  f"ended its harness {job.group.argv[0]} after {result.run_s or 0:.0f} s); nothing "
                                  "landed")
    if result.status == "timeout":
        return finish(job, False, f"timed out: the node ended its harness {job.group.argv[0]} after the --timeout "
                                  f"({result.run_s or 0:.0f} s); nothing landed")
    if result.exit_code not in job.group.landing_codes or result.bundle is None:
        words = job.group.code_meaning.get(result.exit_code, "")
        return finish(job, False, f"harness {job.group.argv[0]} exited {result.exit_code}"
                                  f"{f' ({words})' if words else ''}: {_cause(result.tail)}; nothing landed")
    final = job.group.dest(job.node_id)
    landing = collect.land(result.bundle, out, final, repo, job.node_id, harness_digest, job.group.terms,
                           result.exit_code)
    job.timings.update(unpack_s=landing.unpack_s, verify_s=landing.verify_s)
    job.timings["total_s"] = time.monotonic() - (job.submitted_mono or time.monotonic())
    if not landing.ok:
        assert landing.cause is not None  # a refusal always says why
        code = outcomes.PROBLEMS if landing.cause.startswith("does not ") else outcomes.FAILED
        return finish(job, False, landing.cause + "; nothing landed", code)
    job.path, job.exit_code = landing.path, landing.code
    finish(job, True, code=landing.code)


def _timings(job: Job, result: jobs.NodeResult, got_s: float) -> dict:
    """Where the time of one job went: waiting for the node and starting its worker (the
    shipped repository unpacked there, on first use), the campaign, packing its bundle,
    and getting the bytes back (clocks of two machines: read start_s with that in mind)."""
    return {"start_s": max(0.0, result.started_at - result.submitted_at) if result.submitted_at else None,
            "run_s": result.run_s, "pack_s": result.pack_s, "bundle_bytes": result.bundle_bytes,
            "return_s": got_s, "shipped": result.shipped}


def _cause(tail: list[str]) -> str:
    """The line of a node's output that says why it ended: the first problem of a bundle its own
    node's checks refused (`harness run` prints each as a FAIL line), else its error or verdict."""
    def cut(line: str) -> str:
        line = line.strip()
        return line if len(line) <= 300 else line[:297] + "..."

    for line in tail:
        if line.startswith("FAIL "):
            return cut(line)
    for marker in (": error: ", "verdict: campaign failed", "status: failed", "verdict: "):
        for line in reversed(tail):
            if marker in line:
                return cut(line)
    return cut(tail[-1]) if tail else "no output"
