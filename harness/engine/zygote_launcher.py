"""`launch: zygote`: a LocalLauncher whose timed and stage runs are forked by a zygote
(harness/worker/zygote.py) instead of started as a new interpreter.

Per variant, one zygote at a time: started in the variant's tree with the run's interpreter and
environment, before the run's process is timed; its generation g serves that variant's runs
(g - 1) * ZYGOTE_RUNS + 1 to g * ZYGOTE_RUNS (contract.generations) and is then ended, so the
next generation is a new exec (a new memory layout, a new hash seed where the campaign asks for
a random one). The pre-flight and instruction runs (under valgrind) stay fresh processes.

Every zygote is in the ledger (role "zygote", run ZA1, ZB2, ...) and every child too (role
"worker" of its run, its parent the zygote), so the cleanup receipt verifies both absent. A child
is timed, watched, killed at its timeout and left-over-checked as a fresh worker is; the zygote
reaps it and reports its exit code.
"""
from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from harness import contract as C
from harness.engine.launch import POLL_S, WATCH_S, Exit, Launch, LocalLauncher
from harness.records import Job, Launched, Process

ZYGOTE = "harness.worker.zygote"
# What may differ between the runs one zygote forks: the run's own folders (the child sets its
# environment exactly; these are read lazily, never at interpreter start). Any other difference
# in the environment, the interpreter or the tree makes a new zygote.
PER_RUN_ENV = frozenset({"HOME", "TMPDIR", "TMP", "TEMP", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME",
                         "XDG_STATE_HOME"})
STOP_S = 5.0  # a zygote told to end (stdin closed) that is still there after this is killed


class ZygoteError(Exception):
    def __init__(self, message: str, pid: int):
        super().__init__(message)
        self.pid = pid


@dataclass
class Zygote:
    proc: subprocess.Popen
    variant: str  # "A" | "B"
    generation: int
    key: tuple  # (python, tree, the environment without PER_RUN_ENV)
    log: Path
    buffer: bytes = b""

    @property
    def pid(self) -> int:
        return self.proc.pid

    def send(self, message: dict) -> None:
        assert self.proc.stdin is not None  # started with stdin=PIPE
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def reply(self, deadline: float, tick) -> Optional[dict]:
        """The zygote's next line, or None when it ended (EOF) or the deadline passed."""
        assert self.proc.stdout is not None  # started with stdout=PIPE
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buffer:
            if time.monotonic() >= deadline:
                return None
            ready, _, _ = select.select([fd], [], [], POLL_S)
            tick()
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    return None
                self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)


class ZygoteLauncher(LocalLauncher):
    def __init__(self, tick=lambda: None, preload: tuple = ()):
        super().__init__(tick=tick)
        self.preload = tuple(preload)  # campaign.json's preload: what each zygote imports before it forks
        self.zygotes: dict = {}  # variant letter -> the live Zygote
        self.counts: dict = {}  # variant letter -> runs it forked so far
        self.child: Optional[tuple] = None  # (pid, label) of the child now running

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
        log = launch.cwd.parent / f"{C.zygote_label('base' if letter == 'A' else 'candidate', generation)}.log"
        argv = [launch.argv[0], "-m", ZYGOTE, str(os.getpid()), *self.preload]
        with open(log, "wb") as err:
            proc = subprocess.Popen(argv, cwd=tree, env=launch.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=err, start_new_session=True)
        label = C.zygote_label(C.VARIANTS[letter], generation)
        try:
            self.ledger.add(psutil.Process(proc.pid), label, "zygote", argv)
        except psutil.NoSuchProcess:
            pass
        zygote = Zygote(proc, letter, generation, key, log)
        self.zygotes[letter] = zygote
        self.current, self.current_label = proc, label  # an interrupt now ends the zygote
        try:
            ready = zygote.reply(time.monotonic() + launch.timeout_s, self.tick)
        finally:
            self.current = None
        if not ready or ready.get("ready") != proc.pid:
            self._stop(letter)
            raise ZygoteError(f"the zygote {label} (pid {proc.pid}) did not start: {_last_line(log)}", proc.pid)
        return zygote

    def _stop(self, letter: str) -> None:
        """End a zygote: its stdin closed (it exits), killed if it lingers, reaped."""
        zygote = self.zygotes.pop(letter, None)
        if zygote is None:
            return
        try:
            zygote.proc.stdin.close()
        except OSError:
            pass
        try:
            zygote.proc.wait(STOP_S)
        except subprocess.TimeoutExpired:
            self._kill_run(zygote.pid, C.zygote_label(C.VARIANTS[letter], zygote.generation))
            zygote.proc.wait()
        zygote.proc.stdout.close()

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
        started_at, t0 = time.time(), time.monotonic()
        deadline = t0 + launch.timeout_s
        try:
            zygote.send({"job": str(launch.cwd / "job.json"), "cwd": str(launch.cwd), "log": str(launch.log),
                         "env": dict(launch.env)})
        except OSError:
            pass  # it died: no reply follows
        forked = zygote.reply(deadline, self.tick)
        if not forked or "pid" not in forked:
            wall_s = time.monotonic() - t0
            with open(launch.log, "ab") as log:
                log.write(f"the zygote (pid {zygote.pid}) forked no worker: {_last_line(zygote.log)}\n".encode())
            return Exit(zygote.pid, -signal.SIGKILL, time.monotonic() >= deadline, [],
                        Process(started_at=started_at, ended_at=started_at + wall_s, wall_s=wall_s), launched)
        pid = forked["pid"]
        self.child = (pid, launch.label)
        try:
            self.ledger.add(psutil.Process(pid), launch.label, "worker", None, parent=zygote.pid)
        except psutil.NoSuchProcess:
            pass
        timed_out, next_watch, exit_code, maxrss = False, 0.0, None, None
        while True:
            if time.monotonic() >= next_watch:
                self.ledger.watch_descendants(pid, launch.label)
                next_watch = time.monotonic() + WATCH_S
            if not timed_out and time.monotonic() - t0 > launch.timeout_s:
                timed_out = True
                self._kill_run(pid, launch.label)
            # After a kill the zygote reaps the child at once; its line comes within a poll.
            ended = zygote.reply(time.monotonic() + POLL_S if not timed_out else time.monotonic() + STOP_S,
                                 self.tick)
            if ended is not None and ended.get("pid") == pid and "exit" in ended:
                exit_code = ended["exit"]
                rss = ended.get("maxrss_bytes")
                maxrss = rss if isinstance(rss, int) and not isinstance(rss, bool) and rss > 0 else None
                break
            if zygote.proc.poll() is not None:  # the zygote died: its child dies with it (PDEATHSIG)
                self._kill_run(pid, launch.label)
                exit_code = -signal.SIGKILL
                break
            if timed_out and ended is None:
                exit_code = -signal.SIGKILL
                break
        self.child = None
        wall_s = time.monotonic() - t0
        cleanup.reap_orphans()
        self.ledger.watch_descendants(os.getpid(), launch.label)
        leftovers = [f"pid {p.pid} ({' '.join(p.cmdline)[:60]})" for p in self.ledger.alive(launch.label)
                     if p.pid != pid]
        self._kill_run(pid, launch.label)
        self.ledger.kill_all(launch.label)
        return Exit(pid, exit_code, timed_out, leftovers,
                    Process(started_at=started_at, ended_at=started_at + wall_s, wall_s=wall_s, maxrss_bytes=maxrss),
                    launched)

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
        super().kill_all()


def _last_line(path: Path) -> str:
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "no log"
    return lines[-1][:800] if lines else "no output"
