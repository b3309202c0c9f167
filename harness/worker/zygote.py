"""A zygote (`launch: zygote`): `python -m harness.worker.zygote RUNNER_PID [MODULE ...]`,
started by harness/engine/zygote_launcher.py in a variant's tree, under that variant's interpreter
and environment. It imports what every worker imports before the code under test (the worker
module and the harness modules it imports), then the campaign's `launch.preload` (the libraries
both variants import from outside their trees: transformers, torch), and then, for each request,
forks one child that runs exactly what `python -m harness.worker JOB.json` runs.

Two things it refuses, with a line naming the module: a preloaded module imported from the
variant's tree (the code under test: each run imports that itself), and more than one thread
once the imports are done (a library that starts threads at import, such as OpenBLAS, must be
told to start none in the campaign's env: OPENBLAS_NUM_THREADS=1, or be left out): a process
that forks must have one thread, or the child inherits locks no thread will release.

Protocol (one JSON line each way, on the pipes the launcher gave as stdin and stdout):
  -> {"job": JOB.json, "cwd": run folder, "log": worker.log, "env": {...}}
  <- {"pid": PID}                  the child is forked (its own session, like a fresh worker)
  <- {"pid": PID, "exit": CODE}    it ended (CODE negative: the signal), reaped here
A closed stdin ends the zygote (exit 0). First of all it says {"ready": PID}.

The child, before the worker's main: its own session (setsid), stdin from /dev/null and stdout
and stderr into the run's log, the run's folder as cwd and first entry of sys.path (what `-m`
gives a fresh worker), the run's environment exactly (os.environ, and so the C library's), and
sys.argv as a fresh worker's. Once the worker's main has returned (its result written) or
raised SystemExit, the child flushes its streams and ends with os._exit, as multiprocessing's
forked children do: the interpreter's teardown of every module the zygote preloaded (0.7 s a run
with torch and transformers loaded) is skipped, and with it atexit handlers and the join of
non-daemon threads, which a finished run's measurement no longer needs. It runs under the
campaign's own interpreter, in the worker's room (harness/worker/__init__.py).
"""
from __future__ import annotations

import json
import os
import sys

# What a worker imports before it imports the code under test (worker.main's own imports,
# lazy ones included), imported once here: the share of start-up a zygote saves.
import harness.contract  # noqa: F401
import harness.files  # noqa: F401
import harness.plan.workload  # noqa: F401
import harness.records  # noqa: F401
import harness.worker.main as worker
import harness.worker.prctl as prctl
import harness.worker.stagetimer  # noqa: F401

# The harness's own modules those imports brought in, as this process holds them (reported to the
# launcher): read from sys.modules, so the list cannot drift from the imports above.
PRELOADED = tuple(sorted(name for name in sys.modules if (name == "harness" or name.startswith("harness."))
                          and name != __name__))
# What `python -m harness.worker` puts in sys.argv[0]: a forked child's sys.argv is a fresh worker's.
ENTRY = os.path.join(os.path.dirname(worker.__file__), "__main__.py")


def threads() -> int | None:
    """This process's threads as Linux lists them (None elsewhere)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return None


def preload(modules: list[str]) -> str | None:
    """Import the campaign's preloaded libraries, never from the variant's tree (the cwd, which
    `-m` put first on sys.path, is off it meanwhile). Why the zygote cannot serve, or None."""
    import importlib

    tree = os.path.realpath(os.getcwd())
    before = set(sys.modules)
    first = sys.path.pop(0)
    try:
        for name in modules:
            try:
                importlib.import_module(name)
            except BaseException as exc:  # an import may raise anything, SystemExit among them
                return f"preload {name}: {exc.__class__.__name__}: {exc}"[:800]
            count = threads()
            if count not in (None, 1):
                return (f"preload {name}: {count} threads after its import; a process that forks must have one "
                        "(set its thread count to 1 in the campaign's env, e.g. OPENBLAS_NUM_THREADS: \"1\", "
                        "or leave it out of launch.preload)")
    finally:
        sys.path.insert(0, first)
    found = worker.from_tree(set(sys.modules) - before, tree)
    if found:
        return (f"preload imported {found[0]} from the variant's tree ({found[1]}): the code under test is imported "
                "by each run, not by the zygote; take it out of launch.preload")
    return None


def prepared_for(job_path: str) -> tuple[object, str | None]:
    """workload.prepare's object for this zygote's runs, made at its first request (the job names
    the prepare, its params and inputs, the same in every run of the campaign), and why it could
    not be (None when it was): each run fails with that line, as a fresh worker's would."""
    try:
        job = worker.Job.read(job_path)
        made = worker.prepare(job, worker.verify_inputs(job.inputs))
    except SystemExit as exc:
        return None, str(exc.code)
    except (OSError, ValueError) as exc:
        return None, f"job file {job_path}: {exc}"
    count = threads()
    if count not in (None, 1):
        return None, (f"workload.prepare: {count} threads after it ran; a process that forks must have one (set its "
                      "libraries' thread counts to 1 in the campaign's env, or run under `launch: fresh`)")
    return made, None


def say(fd: int, message: dict) -> None:
    data = (json.dumps(message) + "\n").encode()
    while data:
        data = data[os.write(fd, data):]


def child(request: dict, reader, replies: int, zygote_pid: int, prepared: tuple) -> int:
    """In the forked child: become what a fresh worker is, then run the worker's main with what
    the zygote prepared (or end with why it could not)."""
    reader.close()
    os.close(replies)
    os.setsid()
    null = os.open(os.devnull, os.O_RDONLY)
    log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(null, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    for fd in (null, log):
        if fd > 2:
            os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    import tempfile

    tempfile.tempdir = None  # found again from this run's TMPDIR
    sys.path[0] = os.getcwd()  # `python -m` puts the cwd first; worker.main takes it out again
    sys.argv = [ENTRY, request["job"]]
    made, refused = prepared
    if refused:
        raise SystemExit(refused)
    return worker.main(request["job"], parent_pid=zygote_pid, prepared=made)


def end_child(request: dict, reader, replies: int, zygote_pid: int, prepared: tuple) -> None:
    """Run the child and end it without the interpreter's teardown, with the exit code and
    message the interpreter would give its SystemExit (or traceback)."""
    code: int | str | None  # SystemExit's code may be any of these; os._exit gets an int
    try:
        code = child(request, reader, replies, zygote_pid, prepared)
    except SystemExit as exc:
        code = exc.code
    except BaseException:  # noqa: BLE001 - what the interpreter would print, then exit 1
        import traceback

        traceback.print_exc()
        code = 1
    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code & 0xFF)


def main() -> int:
    if len(sys.argv) < 2 or not sys.argv[1].isdigit():
        sys.exit("usage: python -m harness.worker.zygote RUNNER_PID [MODULE ...]")
    prctl.die_with_parent(int(sys.argv[1]))
    refused = preload(sys.argv[2:])
    if refused:
        sys.exit(f"zygote: {refused}")
    me = os.getpid()
    # The pipes move off 0 and 1, so that sys.stdin and sys.stdout never touch the protocol.
    requests, replies = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)
    os.close(null)
    reader = os.fdopen(requests, "rb", buffering=0)
    say(replies, {"ready": me, "threads": threads(), "preloaded": list(PRELOADED) + sys.argv[2:]})
    prepared = None
    while True:
        line = reader.readline(1 << 20)
        if not line:
            return 0
        request = json.loads(line)
        if prepared is None:  # once, before its first fork: every run of a zygote has the same job but its label
            prepared = prepared_for(request["job"])
        if threads() not in (None, 1):
            sys.exit(f"zygote: {threads()} threads; a process that forks must have one")
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            end_child(request, reader, replies, me, prepared)
        say(replies, {"pid": pid})
        _, status, usage = os.wait4(pid, 0)  # its rusage: the kernel's high-water mark of its resident set
        say(replies, {"pid": pid, "exit": os.waitstatus_to_exitcode(status), "maxrss_bytes": usage.ru_maxrss * 1024})


if __name__ == "__main__":
    sys.exit(main())
