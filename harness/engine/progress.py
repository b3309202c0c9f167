"""Campaign progress: a bar on a terminal, plain lines otherwise (logs, CI)."""
from __future__ import annotations

import sys
import time


def _kind(label: str) -> str:
    return "instructions" if label.startswith("I") else "wall"


def _fmt(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}"


class Progress:
    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        # Under the cli, stderr is a guard (harness/render/text.py Terminal) that shows every control
        # character escaped. The bar itself moves the cursor, so it draws on the stream below the
        # guard, and what it writes between its redraws (notes, a run's status) is escaped first.
        self.raw = getattr(self.stream, "unguarded", self.stream)
        self.clean = getattr(self.stream, "escape", str)
        self.tty = self.stream.isatty()
        self.bar = None
        self.durations: list[tuple[str, float]] = []  # (label, seconds) of each finished run
        self.last_refresh = 0.0

    def note(self, msg: str) -> None:
        if self.bar is not None:
            self.bar.write(self.clean(f"harness: {msg}"), file=self.raw)
        else:
            print(f"harness: {msg}", file=self.stream, flush=True)

    def start(self, name: str, labels: list[str]) -> None:
        self.labels = labels
        self.t0 = time.monotonic()
        if self.tty:
            from tqdm import tqdm

            self.bar = tqdm(total=len(labels), desc=self.clean(name), unit="run", file=self.raw,
                            bar_format="{desc} {n_fmt}/{total_fmt} runs |{bar}| {elapsed} {postfix}")
        else:
            self.note(f"campaign '{name}': {len(labels)} runs in order {' '.join(labels)}")

    def replan(self, labels: list[str], done: int) -> None:
        """The plan grew (`rounds: auto`, after its first round); `done` runs are finished."""
        self.labels = labels
        if self.bar is not None:
            self.bar.total = len(labels)
            self.bar.refresh()

    def _estimate(self, index: int) -> str:
        """What is left, each kind of run at its own pace: a run under valgrind (IA1, IB1) takes
        tens of times a wall run; until one has run, it is left out and said to be."""
        left = self.labels[index:]
        paces: dict[str, list[float]] = {}
        for label, seconds in self.durations:
            paces.setdefault(_kind(label), []).append(seconds)
        if not paces:
            return "estimate after the first run"
        known = [label for label in left if _kind(label) in paces]
        total = sum(sum(paces[_kind(label)]) / len(paces[_kind(label)]) for label in known)
        unknown = len(left) - len(known)
        return f"about {_fmt(total)} left" + (f" and {unknown} instruction run(s) not yet timed" if unknown else "")

    def run_started(self, index: int, label: str, variant: str) -> None:
        self.run_t0 = time.monotonic()
        text = f"run {index + 1}/{len(self.labels)} {label} ({variant})"
        if self.bar is not None:
            self.bar.set_postfix_str(f"{text}, {self._estimate(index)}")
        else:
            self.note(f"{text} started; elapsed {_fmt(time.monotonic() - self.t0)}, {self._estimate(index)}")

    def tick(self) -> None:
        """Called while a run is going: keeps the bar's elapsed time moving (once a second)."""
        if self.bar is not None and time.monotonic() - self.last_refresh >= 1.0:
            self.last_refresh = time.monotonic()
            self.bar.refresh()

    def run_finished(self, index: int, label: str, record) -> None:
        """record: the RunRecord or InstructionRecord the run gave."""
        self.durations.append((label, time.monotonic() - self.run_t0))
        wall = getattr(record, "wall_s", None)
        count = getattr(record, "instructions", None)
        detail = (f"timed {wall:.3f} s" if wall is not None else f"{count:,} instructions" if count is not None
                  else record.reason or "")
        if self.bar is not None:
            self.bar.update(1)
            self.bar.write(self.clean(f"  {label}: {record.status} {detail}"), file=self.raw)
        else:
            self.note(f"{label}: {record.status} {detail}")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    # `with Progress() as progress:` closes the bar however the block ends, so that what
    # a command prints next (an error, the summary) starts on a clean line.
    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Silent:
    """The progress interface doing nothing (library use, selftests)."""

    def note(self, msg: str) -> None: ...
    def start(self, name: str, labels: list[str]) -> None: ...
    def replan(self, labels: list[str], done: int) -> None: ...
    def run_started(self, index: int, label: str, variant: str) -> None: ...
    def tick(self) -> None: ...
    def run_finished(self, index: int, label: str, record) -> None: ...
    def close(self) -> None: ...
