"""`launch: zygote`: a LocalLauncher whose timed and stage runs are forked by a zygote
(harness/worker/zygote.py) instead of started as a new interpreter.

Per variant, one zygote at a time: started in the variant's tree with the run's interpreter and
environment, before the run's process is timed; its generation g serves that variant's runs
(g - 1) * ZYGOTE_RUNS + 1 to g * ZYGOTE_RUNS (rules.generations) and is then ended, so the
next generation is a new exec (a new memory layout, a new hash seed where the campaign asks for
a random one). The pre-flight and instruction runs (under valgrind) stay fresh processes.

Every zygote is in the ledger (role "zygote", run ZA1, ZB2, ...) and every child too (role
"worker" of its run, its parent the zygote), so the cleanup receipt verifies both absent. A child
is timed, watched, killed at its timeout and left-over-checked as a fresh worker is; the zygote
reaps it and reports its exit code and rusage.

Sandboxed as fresh workers are: a zygote runs inside its variant's sandbox (its tree, interpreter,
inputs and workload readable; the variant's runs folder writable; its own user and network
namespace), and each child confines itself further to its own run folder before it imports the
code under test. The launcher talks to a zygote over a unix socket and hands each child the end of
its mark channel with the request (SCM_RIGHTS), so a child is measured from outside as a fresh
worker is; the zygotes' scheduling is read before and after every run (`others`).

The first zygote of each variant is started in the pre-flight (`prepare`), so that a preload that
would import the code under test (from the tree, or an installed copy of a package the trees hold:
ABBA_PROTECTED) is refused in one line before any timed run.
"""
from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from harness import contract as C
from harness import rules as R
from harness.engine import outside
from harness.engine.launch import (TICK_S, WATCH_S, Exit, Launch, LocalLauncher, channel_pair,
                                   scheduling_moved, watched)
from harness.records import Job, Launched, Process, ZygoteForked, ZygoteReady, ZygoteReaped, ZygoteRequest, to_json

ZYGOTE = "harness.worker.zygote"
# What may differ between the runs one zygote forks: the run's own folders (the child sets its
# environment exactly; these are read lazily, never at interpreter start). Any other difference
# in the environment, the interpreter or the tree makes a new zygote.
PER_RUN_ENV = frozenset({"HOME", "TMPDIR", "TMP", "TEMP", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME",
                         "XDG_STATE_HOME"})
PROTECTED_ENV = "ABBA_PROTECTED"  # the trees' top-level packages, which no zygote may import (worker/zygote.py)
STOP_S = 5.0  # a zygote told to end (stdin closed) that is still there after this is killed


class ZygoteError(Exception):
    def __init__(self, message: str, pid: int):
        super().__init__(message)
        self.pid = pid


@dataclass
class Zygote:
    proc: subprocess.Popen
    sock: socket.socket  # the launcher's end of its control socket
    variant: str  # "A" | "B"
    generation: int
    key: tuple  # (python, tree, the environment without PER_RUN_ENV)
    log: Path
    buffer: bytes = b""
    closed: bool = False

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def label(self) -> str:
        return R.zygote_label(C.VARIANTS[self.variant], self.generation)

    def send(self, message: dict, fd: Optional[int] = None) -> None:
        data = (json.dumps(message) + "\n").encode()
        if fd is None:
            self.sock.sendall(data)
        else:
            socket.send_fds(self.sock, [data], [fd])

    def line(self) -> Optional[dict]:
        """A whole reply line already read, or None."""
        if b"\n" not in self.buffer:
            return None
        line, self.buffer = self.buffer.split(b"\n", 1)
        try:
            return json.loads(line)
        except ValueError:
            return {}

    def read(self) -> bool:
        """Read what the zygote sent; False at its end (EOF)."""
        try:
            chunk = self.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return True
        except OSError:
            chunk = b""
        if not chunk:
            self.closed = True
            return False
        self.buffer += chunk
        return True

    def reply(self, deadline: float, tick) -> Optional[dict]:
        """The zygote's next line, or None when it ended (EOF) or the deadline passed."""
        while True:
            found = self.line()
            if found is not None:
                return found
            if self.closed or time.monotonic() >= deadline:
                return None
            ready = selectors.DefaultSelector()
            try:
                ready.register(self.sock, selectors.EVENT_READ)
                events = ready.select(min(TICK_S, max(0.0, deadline - time.monotonic())))
            finally:
                ready.close()
            tick()
            if events:
                self.read()


class ZygoteLauncher(LocalLauncher):
    def __init__(self, tick=lambda: None, preload: tuple = ()):
        super().__init__(tick=tick)
        self.preload = tuple(preload)  # campaign.json's preload: what each zygote imports before it forks
        self.zygotes: dict = {}  # variant letter -> the live Zygote
        self.counts: dict = {}  # variant letter -> runs it forked so far
        self.child: Optional[tuple] = None  # (pid, label) of the child now running
        self.protected: frozenset = frozenset()  # the trees' top-level packages (the code under test)

    def others(self) -> dict:
        """{ZA1: pid, ...}: the live zygotes, whose scheduling no run may change."""
        return {z.label: z.pid for z in self.zygotes.values() if z.proc.poll() is None}

    def prepare(self, variant: str, launch: Launch, protected: frozenset = frozenset()) -> Optional[str]:
        """The variant's first zygote, started now (in the pre-flight): its preload refused here, in
        one line, rather than by the first timed run."""
        self.protected = frozenset(protected)
        letter = "A" if variant == "base" else "B"
        try:
            self._zygote(letter, 1, launch)
        except ZygoteError as exc:
            return str(exc)
        return None

    @staticmethod
    def forks(launch: Launch) -> bool:
        """A timed or stage run's worker with no prefix (an instruction run's valgrind is one)."""
        return launch.role == "worker" and C.LABEL_RE.match(launch.label) is not None \
            and launch.argv[1:3] == ["-m", C.WORKER_MODULE] and len(launch.argv) == 4

    def run(self, launch: Launch) -> Exit:
        if not self.forks(launch):
            return super().run(launch)
        letter = launch.label[0]
        self.counts[letter] = self.counts.get(letter, 0) + 1
        generation = (self.counts[letter] - 1) // C.ZYGOTE_RUNS + 1
        try:
            zygote = self._zygote(letter, generation, launch)
        except ZygoteError as exc:
            return self._failed_start(launch, generation, exc)
        try:
            return self._fork(zygote, launch, generation)
        finally:
            if self.counts[letter] % C.ZYGOTE_RUNS == 0:
                self._stop(letter)

    # --- zygotes ---------------------------------------------------------------------------
    def _key(self, launch: Launch, tree: str) -> tuple:
        return (launch.argv[0], tree, tuple(sorted((k, v) for k, v in launch.env.items() if k not in PER_RUN_ENV)))

    def _zygote(self, letter: str, generation: int, launch: Launch) -> Zygote:
        """The variant's zygote of this generation, started now if it is not running."""
        import psutil

        tree = Job.read(launch.cwd / "job.json").tree
        key = self._key(launch, tree)
        live = self.zygotes.get(letter)
        if live is not None and live.generation == generation and live.key == key and live.proc.poll() is None:
            return live
        if live is not None:
            self._stop(letter)
        log = launch.cwd.parent / f"{R.zygote_label('base' if letter == 'A' else 'candidate', generation)}.log"
        argv = [launch.argv[0], "-m", ZYGOTE, str(os.getpid()), *self.preload]
        # The zygote's sandbox: its variant's, with the variant's runs folder writable (each child
        # narrows it to its own), its scheduling left to its children's own filters.
        confined = launch.sandbox.zygote(launch.cwd.parent).argv(argv) if launch.sandbox is not None else argv
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        env = {**launch.env, PROTECTED_ENV: ",".join(sorted(self.protected))}
        try:
            with open(log, "wb") as err:
                proc = subprocess.Popen(confined, cwd=tree, env=env, stdin=theirs.fileno(), stdout=theirs.fileno(),
                                        stderr=err, start_new_session=True)
        finally:
            theirs.close()
        label = R.zygote_label(C.VARIANTS[letter], generation)
        try:
            self.ledger.add(psutil.Process(proc.pid), label, "zygote", argv)
        except psutil.NoSuchProcess:
            pass
        zygote = Zygote(proc, ours, letter, generation, key, log)
        self.zygotes[letter] = zygote
        self.current, self.current_label = proc, label  # an interrupt now ends the zygote
        try:
            ready = zygote.reply(time.monotonic() + launch.timeout_s, self.tick)
        finally:
            self.current = None
        said = _said(ZygoteReady, ready)
        if said is None or said.ready != proc.pid:
            self._stop(letter)
            raise ZygoteError(f"the zygote {label} (pid {proc.pid}) did not start: {_last_line(log)}", proc.pid)
        return zygote

    def _stop(self, letter: str) -> None:
        """End a zygote: its stdin closed (it exits), killed if it lingers, reaped."""
        zygote = self.zygotes.pop(letter, None)
        if zygote is None:
            return
        try:
            zygote.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        try:
            zygote.proc.wait(STOP_S)
        except subprocess.TimeoutExpired:
            self._kill_run(zygote.pid, zygote.label)
            zygote.proc.wait()
        zygote.sock.close()

    def _failed_start(self, launch: Launch, generation: int, exc: ZygoteError) -> Exit:
        """The run fails when its zygote cannot start: no worker was forked, so its pid is the
        zygote's (the checkers accept that for a failed run only), and its log says why."""
        launch.log.write_bytes(str(exc).encode() + b"\n")
        now = time.time()
        return Exit(exc.pid, 1, False, [], Process(started_at=now, ended_at=now, wall_s=0.0),
                    Launched("zygote", exc.pid, generation))

    # --- one run ---------------------------------------------------------------------------
    def _fork(self, zygote: Zygote, launch: Launch, generation: int) -> Exit:
        import psutil

        from harness.engine import cleanup

        launched = Launched("zygote", zygote.pid, generation)
        before = watched(self, None)
        started_at, t0 = time.time(), time.monotonic()
        marks = outside.Marks(launched=t0)
        deadline = t0 + launch.timeout_s
        ours, theirs = channel_pair()
        request = ZygoteRequest(str(launch.cwd / "job.json"), str(launch.cwd), str(launch.log), dict(launch.env),
                                launch.sandbox.child(launch.cwd) if launch.sandbox is not None else None)
        try:
            zygote.send(to_json(request), theirs.fileno())
        except OSError:
            pass  # it died: no reply follows
        finally:
            theirs.close()
        forked = _said(ZygoteForked, zygote.reply(deadline, self.tick))
        if forked is None or not _count(forked.pid):
            ours.close()
            wall_s = time.monotonic() - t0
            with open(launch.log, "ab") as log:
                log.write(f"the zygote (pid {zygote.pid}) forked no worker: {_last_line(zygote.log)}\n".encode())
            return Exit(zygote.pid, -signal.SIGKILL, time.monotonic() >= deadline, [],
                        Process(started_at=started_at, ended_at=started_at + wall_s, wall_s=wall_s), launched)
        pid = forked.pid
        self.child = (pid, launch.label)
        try:
            self.ledger.add(psutil.Process(pid), launch.label, "worker", None, parent=zygote.pid)
        except psutil.NoSuchProcess:
            pass
        channel = outside.Channel(ours, marks, pid, before.get(zygote.label))
        timed_out, exit_code, maxrss, cpu = self._wait_child(zygote, launch, pid, t0, channel)
        marks.reaped, marks.life_cpu = time.monotonic(), cpu
        channel.drain()
        channel.close()
        self.child = None
        wall_s = time.monotonic() - t0
        cleanup.reap_orphans()
        self.ledger.watch_descendants(os.getpid(), launch.label)
        leftovers = [f"pid {p.pid} ({' '.join(p.cmdline)[:60]})" for p in self.ledger.alive(launch.label)
                     if p.pid != pid]
        self._kill_run(pid, launch.label)
        self.ledger.kill_all(launch.label)
        marks.scheduling += scheduling_moved(before, watched(self, None))
        return Exit(pid, exit_code, timed_out, leftovers,
                    Process(started_at=started_at, ended_at=started_at + wall_s, wall_s=wall_s, maxrss_bytes=maxrss),
                    launched, marks)

    def _wait_child(self, zygote: Zygote, launch: Launch, pid: int, t0: float, channel: "outside.Channel"):
        """Until the zygote says its child ended (or the timeout kills it): woken by the child's marks
        and the zygote's reply. (timed out, exit code, maxrss, CPU at reap)."""
        selector = selectors.DefaultSelector()
        selector.register(channel, selectors.EVENT_READ, "marks")
        selector.register(zygote.sock, selectors.EVENT_READ, "zygote")
        timed_out, next_watch, killed_at = False, 0.0, None
        try:
            while True:
                ended = _said(ZygoteReaped, zygote.line())
                if ended is not None and ended.pid == pid:
                    rss, cpu = ended.maxrss_bytes, ended.cpu_s
                    return (timed_out, ended.exit, rss if _count(rss) and rss > 0 else None,
                            float(cpu) if isinstance(cpu, (int, float)) and not isinstance(cpu, bool) else None)
                if zygote.closed or zygote.proc.poll() is not None:  # it died: its child dies with it (PDEATHSIG)
                    self._kill_run(pid, launch.label)
                    return timed_out, -signal.SIGKILL, None, None
                now = time.monotonic()
                if now >= next_watch:
                    self.ledger.watch_descendants(pid, launch.label)
                    next_watch = now + WATCH_S
                self.tick()
                if not timed_out and now - t0 > launch.timeout_s:
                    timed_out, killed_at = True, now
                    self._kill_run(pid, launch.label)
                if killed_at is not None and now - killed_at > STOP_S:  # killed, and the zygote never said so
                    return timed_out, -signal.SIGKILL, None, None
                wait = min(TICK_S, next_watch - now, max(0.0, t0 + launch.timeout_s - now) + 0.001)
                for key, _ in selector.select(max(0.0, wait)):
                    if key.data == "marks":
                        if not channel.feed():
                            selector.unregister(channel)
                    elif not zygote.read():
                        selector.unregister(zygote.sock)
        finally:
            selector.close()

    def interrupt(self) -> None:
        """From a signal handler: end the child now running (its run then fails)."""
        if self.child is not None:
            self._kill_run(*self.child)
            return
        super().interrupt()

    def kill_all(self) -> None:
        for letter in list(self.zygotes):
            zygote = self.zygotes.pop(letter)
            try:
                zygote.proc.kill()
                zygote.proc.wait(STOP_S)
            except (OSError, subprocess.TimeoutExpired):
                pass
            zygote.sock.close()
        super().kill_all()


def _said(kind, message: Optional[dict]):
    """A zygote's line as the record it should be, or None when it is not one (a zygote runs the
    campaign's preloaded libraries: its word is read as untrusted input)."""
    try:
        return kind.from_json(message) if message is not None else None
    except (KeyError, TypeError):
        return None


def _count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _last_line(path: Path) -> str:
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "no log"
    return lines[-1][:800] if lines else "no output"
