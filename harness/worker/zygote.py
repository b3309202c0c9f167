"""A zygote (`launch: zygote`): `python -m harness.worker.zygote RUNNER_PID [MODULE ...]`,
started by harness/engine/zygote_launcher.py in a variant's tree, under that variant's interpreter
and environment, inside the variant's sandbox (harness/worker/sandbox.py: its tree, interpreter and
inputs readable, the variant's runs folder writable). It imports what every worker imports before
the code under test (the worker module and the harness modules it imports), then the campaign's
`launch.preload` (the libraries both variants import from outside their trees: transformers, torch),
and then, for each request, forks one child that runs exactly what `python -m harness.worker
JOB.json` runs.

Three things it refuses, with a line naming the module: a preloaded module imported from the
variant's tree, or one whose top-level package the revisions' trees hold (ABBA_PROTECTED: an
installed copy of the code under test would serve both variants' runs in place of their trees':
each run imports the code under test itself), and more than one thread once the imports are done
(a library that starts threads at import, such as OpenBLAS, must be told to start none in the
campaign's env: OPENBLAS_NUM_THREADS=1, or be left out): a process that forks must have one
thread, or the child inherits locks no thread will release.

Protocol (one JSON line each way, on the unix socket the launcher gave as stdin and stdout, each a
typed record of harness/records.py):
  -> {"job": JOB.json, "cwd": run folder, "log": worker.log, "env": {...}, "sandbox": RULES|null}
     (ZygoteRequest) with one descriptor attached (SCM_RIGHTS): the child's end of its mark channel
  <- {"pid": PID}                  the child is forked (its own session, like a fresh worker): ZygoteForked
  <- {"pid": PID, "exit": CODE, "maxrss_bytes": N, "cpu_s": S}   it ended (CODE negative: the signal),
                                   reaped here: its rusage (CPU user + system, its reaped children's
                                   too): ZygoteReaped
A closed socket ends the zygote (exit 0). First of all it says {"ready": PID, ...} (ZygoteReady).

The child, before the worker's main: its own session (setsid), stdin from /dev/null and stdout
and stderr into the run's log, the run's folder as cwd and first entry of sys.path (what `-m`
gives a fresh worker), the run's environment exactly (os.environ, and so the C library's) with its
mark channel's descriptor (ABBA_CHANNEL), sys.argv as a fresh worker's, and its own sandbox: only
its run folder writable, the scheduling of itself only (sandbox.restrict). Once the worker's main has returned (its result written) or
raised SystemExit, the child flushes its streams and ends with os._exit, as multiprocessing's
forked children do: the interpreter's teardown of every module the zygote preloaded (0.7 s a run
with torch and transformers loaded) is skipped, and with it atexit handlers and the join of
non-daemon threads, which a finished run's measurement no longer needs. It runs under the
campaign's own interpreter, in the worker's room (harness/worker/__init__.py).
"""
from __future__ import annotations

import json
import os
import socket
import sys

# What a worker imports before it imports the code under test (worker.main's own imports,
# lazy ones included), imported once here: the share of start-up a zygote saves.
import harness.contract  # noqa: F401
import harness.files  # noqa: F401
import harness.plan.workload  # noqa: F401
import harness.records  # noqa: F401
import harness.worker.main as worker
import harness.worker.prctl as prctl
import harness.worker.sandbox as sandbox
import harness.worker.stagetimer  # noqa: F401
from harness.records import ZygoteForked, ZygoteReady, ZygoteReaped, ZygoteRequest, to_json

# The harness's own modules those imports brought in, as this process holds them (reported to the
# launcher): read from sys.modules, so the list cannot drift from the imports above.
PRELOADED = tuple(sorted(name for name in sys.modules if (name == "harness" or name.startswith("harness."))
                          and name != __name__))
# What `python -m harness.worker` puts in sys.argv[0]: a forked child's sys.argv is a fresh worker's.
ENTRY = os.path.join(os.path.dirname(worker.__file__), "__main__.py")
PROTECTED_ENV = "ABBA_PROTECTED"  # the top-level packages of the revisions' trees, comma-separated
CHANNEL_ENV = "ABBA_CHANNEL"  # as harness/engine/outside.py names it


def threads() -> int | None:
    """This process's threads as Linux lists them (None elsewhere)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return None


def protected(names, packages) -> tuple[str, str] | None:
    """(module, top-level package) of the first loaded module whose top-level package is one of the
    revisions' trees' (the code under test), wherever it was imported from; None when none is."""
    for name in sorted(names):
        top = name.split(".")[0]
        if top in packages:
            return name, top
    return None


def preload(modules: list[str], packages: frozenset = frozenset()) -> str | None:
    """Import the campaign's preloaded libraries, never from the variant's tree (the cwd, which
    `-m` put first on sys.path, is off it meanwhile) and never a package of the code under test
    (`packages`, its top-level names), not even an installed copy of one, nor through another
    library's imports. Why the zygote cannot serve, or None."""
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
    copy = protected(set(sys.modules) - before, packages)
    if copy:
        where = getattr(sys.modules.get(copy[0]), "__file__", None) or "a built-in"
        return (f"preload imported {copy[0]} ({where}), a module of the package {copy[1]} that the revisions' trees "
                "hold: both variants' runs would use that copy of the code under test instead of their own trees'; "
                "take it (and what imports it) out of launch.preload")
    return None


def prepared_for(job_path: str, packages: frozenset = frozenset()) -> tuple[object, str | None]:
    """workload.prepare's object for this zygote's runs, made at its first request (the job names
    the prepare, its params and inputs, the same in every run of the campaign), and why it could
    not be (None when it was): each run fails with that line, as a fresh worker's would."""
    before = set(sys.modules)
    try:
        job = worker.Job.read(job_path)
        made = worker.prepare(job, worker.verify_inputs(job.inputs))
    except SystemExit as exc:
        return None, str(exc.code)
    except (OSError, ValueError) as exc:
        return None, f"job file {job_path}: {exc}"
    copy = protected(set(sys.modules) - before, packages)
    if copy:
        return None, (f"workload.prepare imported {copy[0]}, a module of the package {copy[1]} that the revisions' "
                      "trees hold: each run must import the code under test from its own tree")
    count = threads()
    if count not in (None, 1):
        return None, (f"workload.prepare: {count} threads after it ran; a process that forks must have one (set its "
                      "libraries' thread counts to 1 in the campaign's env, or run under `launch: fresh`)")
    return made, None


def child(request: ZygoteRequest, control: socket.socket, channel: int | None, zygote_pid: int,
          prepared: tuple) -> int:
    """In the forked child: become what a fresh worker is, in a sandbox of its own, then run the
    worker's main with what the zygote prepared (or end with why it could not)."""
    control.close()
    os.setsid()
    null = os.open(os.devnull, os.O_RDONLY)
    log = os.open(request.log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(null, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    for fd in (null, log):
        if fd > 2:
            os.close(fd)
    os.chdir(request.cwd)
    os.environ.clear()
    os.environ.update(request.env)
    if channel is not None:
        os.environ[CHANNEL_ENV] = str(channel)
    if request.sandbox:
        try:
            sandbox.restrict(request.sandbox)
        except sandbox.SandboxError as exc:
            print(f"sandbox: {exc}: the run cannot be confined as its campaign asks", file=sys.stderr)
            return sandbox.SANDBOX_EXIT
    import tempfile

    tempfile.tempdir = None  # found again from this run's TMPDIR
    sys.path[0] = os.getcwd()  # `python -m` puts the cwd first; worker.main takes it out again
    sys.argv = [ENTRY, request.job]
    made, refused = prepared
    if refused:
        raise SystemExit(refused)
    return worker.main(request.job, parent_pid=zygote_pid, prepared=made)


def end_child(request: ZygoteRequest, control: socket.socket, channel: int | None, zygote_pid: int,
              prepared: tuple) -> None:
    """Run the child and end it without the interpreter's teardown, with the exit code and
    message the interpreter would give its SystemExit (or traceback)."""
    code: int | str | None  # SystemExit's code may be any of these; os._exit gets an int
    try:
        code = child(request, control, channel, zygote_pid, prepared)
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


class Requests:
    """The launcher's requests on the control socket: JSON lines, each with the descriptor of its
    child's mark channel attached (SCM_RIGHTS), read in order."""

    def __init__(self, control: socket.socket):
        self.control, self.buffer = control, b""
        self.fds: list = []

    def next(self) -> tuple[ZygoteRequest | None, int | None]:
        """(request, its channel fd) or (None, None) when the launcher closed the socket."""
        while b"\n" not in self.buffer:
            data, fds, _flags, _addr = socket.recv_fds(self.control, 1 << 16, 4)
            self.fds += fds
            if not data:
                return None, None
            self.buffer += data
        line, self.buffer = self.buffer.split(b"\n", 1)
        return ZygoteRequest.from_json(json.loads(line)), (self.fds.pop(0) if self.fds else None)


def say(control: socket.socket, message) -> None:
    control.sendall((json.dumps(to_json(message)) + "\n").encode())


def main() -> int:
    if len(sys.argv) < 2 or not sys.argv[1].isdigit():
        sys.exit("usage: python -m harness.worker.zygote RUNNER_PID [MODULE ...]")
    prctl.die_with_parent(int(sys.argv[1]))
    packages = frozenset(p for p in os.environ.pop(PROTECTED_ENV, "").split(",") if p)
    refused = preload(sys.argv[2:], packages)
    if refused:
        sys.exit(f"zygote: {refused}")
    me = os.getpid()
    # The control socket moves off 0 and 1, so that sys.stdin and sys.stdout never touch the protocol.
    control = socket.socket(fileno=os.dup(0))
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)
    os.close(null)
    requests = Requests(control)
    say(control, ZygoteReady(me, threads(), list(PRELOADED) + sys.argv[2:]))
    prepared = None
    while True:
        request, channel = requests.next()
        if request is None:
            return 0
        if prepared is None:  # once, before its first fork: every run of a zygote has the same job but its label
            prepared = prepared_for(request.job, packages)
        if threads() not in (None, 1):
            sys.exit(f"zygote: {threads()} threads; a process that forks must have one")
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            end_child(request, control, channel, me, prepared)
        if channel is not None:
            os.close(channel)
        say(control, ZygoteForked(pid))
        _, status, usage = os.wait4(pid, 0)  # its rusage: the kernel's high-water mark of its resident set
        say(control, ZygoteReaped(pid, os.waitstatus_to_exitcode(status), usage.ru_maxrss * 1024,
                                  usage.ru_utime + usage.ru_stime))


if __name__ == "__main__":
    sys.exit(main())
