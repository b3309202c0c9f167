"""Issue 45: the code under test is the adversary. Each attack below got through on main (1534c31):
a hostile candidate, built here as a real two-revision target, runs in real workers, and the test
holds the harness to refusing, flagging or defeating it. Every one fails on main.

1. parity forged: a candidate that returns a constant reads the base's recorded outputs from the
   staging folder and hands them back as its own;
2. clocks faked: identical code that swaps the time module's clocks for half-speed ones and wraps
   the worker's own timed loop to scale every figure by 0.25;
4. the zygote: a preload that is the code under test (an installed copy of it, or a library that
   imports it), and a candidate that renices, pins and SCHED_IDLEs the base's zygote;
5. a cache at a literal path outside the run folders (/tmp) makes identical code "improved";
and work moved out of the timed loop (done at import) makes a slower candidate look faster.
The sandbox's own rules (what a worker can and cannot reach) are tests/process/test_sandbox.py.
"""
from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest

from conftest import cache_env, harness, make_target, no_traceback, write_campaign
from harness import contract as C
from harness.engine import sandbox as engine_sandbox
from harness.files import read_json

PROBED = engine_sandbox.probe(str(Path(__file__).resolve().parents[2]), "")
needs_landlock = pytest.mark.skipif(PROBED.landlock is None, reason="no Landlock on this kernel: nothing to confine")

WORK = '''
    import numpy as np


    def work(item, n=300_000):
        """A fixed amount of arithmetic (no clock in it): the same cost whatever the clocks say."""
        s = 0
        for i in range(n):
            s += i % 7
        return np.arange(8, dtype=np.float64) * (len(item) + s % 3)


    def compute(item):
        return work(item)
'''

WORKLOAD = '''
    import pkg


    class W:
        items = ["a", "bb", "ccc"]

        def run(self, item):
            return {"y": pkg.compute(item)}


    def setup(ctx):
        return W()
'''


def campaign(where: Path, candidate: str, base: str = WORK, **fields) -> Path:
    tree, patch = make_target(where, {"pkg/__init__.py": base}, {"pkg/__init__.py": candidate})
    workloads = where / "workloads"
    workloads.mkdir()
    (workloads / "adv.py").write_text(WORKLOAD.replace("\n    ", "\n").lstrip())
    fields.setdefault("env", {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"})
    if "rounds" in fields:
        fields["order"] = None  # write_campaign's default order gives way to rounds
    return write_campaign(where / "adv.yaml", tree, patch, workloads, "adv:setup", **fields)


def run(where: Path, path: Path, *extra, env=None) -> tuple:
    out = where / "bundle"
    result = harness("run", path, "--out", out, *extra, env={**cache_env(where / "cache"), **(env or {})},
                     timeout=900)
    assert no_traceback(result), result.stdout + result.stderr
    return result, out


def lines(out: Path, label: str, tag: str) -> list:
    log = (out / C.log_path(label)).read_text()
    return [json.loads(x[len(tag) + 1:]) for x in log.splitlines() if x.startswith(tag + " ")]


def verdict(out: Path) -> str:
    return read_json(out / C.COMPARISON)["stats"]["verdict"]


# --- 1. parity forged from the staging folder ----------------------------------------------------------
THIEF = WORK + '''

    import gzip
    import json
    import os
    import sys

    NOTES = []


    def _places():
        """Where the base's records are: on a harness whose job names the staging folder's arrays,
        two levels up from them; else the runner's --out, from its command line, .partial-PID."""
        try:
            with open(sys.argv[1]) as fh:
                job = json.load(fh)
        except Exception as exc:  # noqa: BLE001
            NOTES.append(f"job: {exc!r}")
            return []
        places = [os.path.dirname(os.path.dirname(job["arrays_dir"]))]
        try:
            with open(f"/proc/{job['parent_pid']}/cmdline", "rb") as fh:
                argv = fh.read().split(b"\\0")
            places.append(f"{argv[argv.index(b'--out') + 1].decode()}.partial-{job['parent_pid']}")
        except Exception as exc:  # noqa: BLE001
            NOTES.append(f"cmdline: {exc!r}")
        return places


    def _steal():
        for root in _places():
            try:
                with open(os.path.join(root, "data", "runs", "A1.json")) as fh:
                    record = json.load(fh)
            except Exception as exc:  # noqa: BLE001
                NOTES.append(f"{root}: {type(exc).__name__}: {exc}")
                continue
            return root, [f for it in record["items"] for _n, f in sorted(it["fields"].items())]
        return None, []


    ROOT, STOLEN = _steal()
    print("STEAL " + json.dumps({"root": ROOT, "fields": len(STOLEN), "notes": NOTES}), flush=True)
    if STOLEN:
        from harness.bundle import arrays

        queue = list(STOLEN)

        def store(array, arrays_dir):  # a worker that hashes and records: record the base's field
            return dict(queue.pop(0))

        def write_raw(array, folder, stem):  # a runner that hashes the files: hand it the base's bytes
            f = queue.pop(0)
            with gzip.open(os.path.join(ROOT, "data", "arrays", f["digest"] + ".npy.gz")) as fh:
                data = fh.read()
            with open(os.path.join(folder, stem + ".npy"), "wb") as fh:
                fh.write(data)
            return stem + ".npy"

        arrays.store, arrays.write_raw = store, write_raw


    def compute(item):
        return np.zeros(8)  # wrong: a constant
'''


@needs_landlock
def test_a_candidate_cannot_copy_the_bases_outputs_from_the_staging_folder(tmp_path):
    result, out = run(tmp_path, campaign(tmp_path, THIEF, order="AB"))
    assert result.returncode == 3, result.stdout + result.stderr  # parity: its own outputs are its own
    assert "parity: NOT identical" in result.stdout
    said, = lines(out, "B1", "STEAL")
    assert said["fields"] == 0 and said["root"] is None, said  # it found nothing it could read
    assert any("Permission denied" in note and ".partial-" in note for note in said["notes"]), said
    for label in ("A1", "B1"):  # what the records hold is what the runner hashed of each run's files
        record = read_json(out / C.run_path(label))
        assert all((out / C.array_path(f["digest"])).is_file() for it in record["items"] for f in it["fields"].values())


# --- 2. clocks faked from inside -------------------------------------------------------------------------
FAKER = WORK + '''

    import dataclasses
    import sys
    import time

    _real = (time.perf_counter, time.thread_time, time.process_time)
    _zero = [f() for f in _real]


    def _half(i):
        return lambda: _zero[i] + (_real[i]() - _zero[i]) / 2

    time.perf_counter, time.thread_time, time.process_time = _half(0), _half(1), _half(2)
    worker = sys.modules.get("harness.worker.main")
    if worker is not None:
        loop = worker.run_items

        def run_items(*args, **kwargs):  # every figure the worker reports, scaled by 0.25
            wall, results, region = loop(*args, **kwargs)
            results = [(o, e, w * 0.25, c * 0.25) for o, e, w, c in results]
            region = dataclasses.replace(region, process_cpu_s=region.process_cpu_s * 0.25,
                                         cpu_stall_s=None if region.cpu_stall_s is None else region.cpu_stall_s * 0.25)
            return wall * 0.25, results, region

        worker.run_items = run_items
'''


def test_clocks_faked_inside_the_worker_make_no_claim(tmp_path):
    """Identical code that swaps the clocks and scales the worker's figures: the runner's own wall
    says equal, the worker's figures contradict it (its tripwire names what was swapped), and no
    claim is made."""
    result, out = run(tmp_path, campaign(tmp_path, FAKER, rounds=5))
    assert verdict(out) != "improved", result.stdout
    comparison = read_json(out / C.COMPARISON)
    ratio = comparison["stats"]["paired"]["geomean_ratio"]
    assert 0.6 < ratio < 1.6, ratio  # the runner's clock saw identical work
    assert comparison["stats"]["verdict"] == "inconclusive"
    assert {"B1", "B2", "B3", "B4", "B5"} <= set(comparison["stats"]["outside"]["contradicted"])
    for label in ("B1", "B2", "B3", "B4", "B5"):
        section = read_json(out / C.run_path(label))["outside"]
        assert section["contradicted"] and "tripwire" in section["contradictions"], section
        assert "time.perf_counter" in section["tripwire"] and "harness.worker.main.run_items" in section["tripwire"]
    assert harness("compare", out).returncode == 6  # inconclusive: the gate does not pass it
    for label in ("A1", "A2"):
        assert not read_json(out / C.run_path(label))["outside"]["contradicted"]


# --- 4. the zygote -------------------------------------------------------------------------------------
def installed_copy(where: Path) -> Path:
    """A folder with an installed copy of the code under test (the base's pkg) and a library that
    imports it."""
    site = where / "site"
    (site / "pkg").mkdir(parents=True)
    (site / "pkg" / "__init__.py").write_text(WORK.replace("\n    ", "\n").lstrip())
    (site / "helper.py").write_text("import pkg  # a library that imports the code under test\n")
    return site


@pytest.mark.parametrize("preload, says", [
    (["pkg"], "launch.preload: pkg is the code under test"),
    (["helper"], "preload imported pkg"),
], ids=["the-package", "a-library-importing-it"])
def test_a_zygote_never_preloads_the_code_under_test_nor_an_installed_copy(tmp_path, preload, says):
    site = installed_copy(tmp_path)
    path = campaign(tmp_path, WORK.replace("300_000", "200_000"), launch={"mode": "zygote", "preload": preload},
                    env={"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": str(site)})
    result = harness("check", path, env=cache_env(tmp_path / "cache"), timeout=300)
    assert result.returncode == 2 and no_traceback(result), result.stdout + result.stderr
    assert says in result.stderr, result.stderr


RENICER = WORK + '''

    import json
    import os

    ONLY_TIMED = False  # True: only in a timed run (never in the pre-flight), as a careful attacker would


    def _zygotes():
        me, parent = os.getpid(), os.getppid()
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    cmd = fh.read()
            except OSError:
                continue
            if b"harness.worker.zygote" in cmd and int(pid) not in (me, parent):
                yield int(pid)


    def _timed():
        import sys

        try:
            with open(sys.argv[1]) as fh:
                return json.load(fh)["mode"] == "run"
        except Exception:  # noqa: BLE001
            return True


    TRIED = {}
    for pid in _zygotes() if ONLY_TIMED is False or _timed() else ():
        for what, act in (("nice", lambda: os.setpriority(os.PRIO_PROCESS, pid, 19)),
                          ("affinity", lambda: os.sched_setaffinity(pid, {0})),
                          ("idle", lambda: os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0)))):
            try:
                act()
                TRIED[f"{pid} {what}"] = "done"
            except OSError as exc:
                TRIED[f"{pid} {what}"] = exc.strerror
    print("RENICE " + json.dumps(TRIED), flush=True)
'''


def test_a_candidate_cannot_change_the_scheduling_of_the_bases_zygote(tmp_path):
    """Sandboxed, the candidate's attempts on the other zygote are refused (EPERM); with the sandbox
    off (recorded, shown), they happen, and the runner sees them: in the pre-flight the campaign is
    refused before any timed run; in a timed run the run records them, and no claim is made."""
    path = campaign(tmp_path, RENICER, order="AB", launch={"mode": "zygote", "preload": ["numpy"]})
    if PROBED.landlock is not None:
        result, out = run(tmp_path, path)
        tried, = lines(out, "B1", "RENICE")
        assert tried and set(tried.values()) == {"Operation not permitted"}, tried
        assert read_json(out / C.run_path("B1"))["outside"]["scheduling"] == []
    naive = tmp_path / "naive"
    naive.mkdir()
    (naive / "adv.yaml").write_text(path.read_text() + "sandbox: off\n")
    result = harness("run", naive / "adv.yaml", "--out", naive / "bundle", env=cache_env(tmp_path / "cache"),
                     timeout=600)
    assert result.returncode == 2 and not (naive / "bundle").exists(), result.stdout + result.stderr
    assert "changed the scheduling of another process of the campaign: ZA1: nice" in result.stderr, result.stderr
    careful = tmp_path / "careful"
    careful.mkdir()
    candidate = RENICER.replace("ONLY_TIMED = False", "ONLY_TIMED = True")
    (careful / "c").mkdir()
    text = campaign(careful / "c", candidate, order="AB", launch={"mode": "zygote", "preload": ["numpy"]}).read_text()
    (careful / "adv.yaml").write_text(text + "sandbox: off\n")
    result, out = run(careful, careful / "adv.yaml")
    tried, = lines(out, "B1", "RENICE")
    assert "done" in tried.values(), tried
    section = read_json(out / C.run_path("B1"))["outside"]
    assert section["contradicted"] and "scheduling" in section["contradictions"], section
    assert any(line.startswith("ZA1: nice") for line in section["scheduling"]), section["scheduling"]
    assert read_json(out / C.COMPARISON)["sandbox"] == {"level": "off",
                                                         "reason": "the campaign opted out (sandbox: off)"}
    assert "not sandboxed: the campaign opted out" in harness("summary", out).stdout


# --- 5. a cache at a literal path outside the run folders ----------------------------------------------
def cacher(path: str) -> str:
    return WORK + f'''

    import json
    import os

    CACHE = {path!r}


    def compute(item):
        file = CACHE + "-" + item + ".npy"
        if os.path.exists(file):
            return np.load(file)
        y = work(item)
        try:
            np.save(file, y)
        except OSError as exc:
            print("CACHE " + json.dumps(exc.strerror), flush=True)
        return y
'''


@needs_landlock
def test_a_cache_at_a_literal_path_outside_the_run_folders_is_not_found(tmp_path):
    literal = f"/tmp/abba-attack-cache-{uuid.uuid4().hex}"
    try:
        result, out = run(tmp_path, campaign(tmp_path, cacher(literal), rounds=5))
        assert verdict(out) != "improved", result.stdout
        assert lines(out, "B1", "CACHE") == ["Permission denied"] * 3
        assert not any(p.name.startswith(Path(literal).name) for p in Path("/tmp").iterdir())
    finally:
        for p in Path("/tmp").glob(Path(literal).name + "*"):
            p.unlink()


# --- work moved out of the timed loop --------------------------------------------------------------------
MOVER = WORK + '''

    # the work of every item done at import, before the loop's start mark; run() only looks it up
    DONE = {item: work(item, 1_200_000) for item in ("a", "bb", "ccc")}


    def compute(item):
        return DONE[item]
'''


def test_work_moved_before_the_loop_makes_no_claim(tmp_path):
    """A candidate that does its items' work at import has a loop that saved it all and a process that
    saved none of it: the time outside its loop grew by what the loop saved, and no claim is made."""
    base = WORK.replace("def compute(item):\n        return work(item)",
                        "def compute(item):\n        return work(item, 1_200_000)")
    result, out = run(tmp_path, campaign(tmp_path, MOVER, base=base, rounds=8))
    stats = read_json(out / C.COMPARISON)["stats"]
    assert stats["paired"]["geomean_ratio"] < 0.5  # the loop alone looks far faster
    assert stats["outside"]["moved"]["flagged"] and stats["verdict"] == "inconclusive", stats["outside"]
    assert any(w.startswith("outside: the time outside the candidate's timed loop grew") for w in stats["warnings"])
    assert harness("compare", out).returncode == 6
