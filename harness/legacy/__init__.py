"""The checkers of earlier bundle generations, frozen: a bundle sealed by an earlier harness is
checked under its own generation's rules when the reviewer asks (`--legacy`), shown as such with
that generation's known holes, and never as today's.

A generation is a set of schema ids that main once wrote: bag-info's Abba-Format and each
document's schema id. Its checker is, by construction, the pair harness/rehash.py +
harness/contract.py at the last commit of main that wrote that set (rehash.py is standard library
only and loads contract.py from beside itself). generations.json lists every generation: its
ids, the first and last commit of main that wrote it, the SHA-256 of its pair frozen under
vendor/ID/ (copied with `git show LAST:harness/rehash.py`; tests/unit/test_legacy.py holds the
copies to git), and its known holes: what a later generation closed, and what stays open.

Nothing here is the bundle's choice. Its labels only say which rules it claims; the reviewer
decides whether earlier rules may judge at all; and those rules then judge all of it, closed as
they were: a bundle of today relabelled as an earlier generation carries what that generation's
contract never declared and is refused by it, and whatever passes is shown as that generation's,
its holes listed, with the exit code of a verification and never today's words.

The frozen checker runs as its own process (`python -S -E -s -B -X utf8 vendor/ID/rehash.py
BUNDLE`, what a reviewer would type), never on a file whose digest is not the manifest's, with a
wall-clock limit, an address-space limit and its output read up to a bound; what it prints is
bundle text to its callers, who escape every line. Standard library only and no import of the
harness: rehash.py loads this file from beside itself when a reviewer runs it alone.
"""
import hashlib
import json
import os
import re
import selectors
import shlex
import signal
import stat
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MANIFEST = os.path.join(HERE, "generations.json")
VENDOR = os.path.join(HERE, "vendor")
FILES = ("rehash.py", "contract.py", "rules.py")  # a generation's checker; pre-v6: rehash.py alone; rules.py: since issue 47
TIMEOUT_S = 1800  # a frozen checker's wall clock: hashing a few GB of arrays takes minutes, never this
MEMORY_BYTES = 4 << 30  # its address space: every checker since v6 checks the largest honest bundle in 256 MB
OUTPUT_BYTES = 4 << 20  # what is kept of each of its streams; the rest is read and dropped
READ_BYTES = 4096  # what is read of a document to learn its schema id (its first key)
SCHEMA_FIRST = re.compile(r'\A\s*\{\s*"schema"\s*:\s*"(abba-harness/[a-z_-]{1,32}/v[0-9]{1,4})"')
# The documents whose schema ids tell one format's generations apart (None: the first of its folder
# that the manifest lists); the label names the fewest of them, in this order.
IDENTIFY_KINDS = {
    "run": None,
    "campaign": "data/campaign.json",
    "comparison": "data/comparison.json",
    "environment": "data/environment.json",
    "cleanup": "data/receipts/cleanup.json",
    "runner": "data/receipts/runner.json",
    "revisions": "data/receipts/revisions.json",
    "inputs": "data/receipts/inputs.json",
    "workload": "data/receipts/workload.json",
    "builds": "data/receipts/builds.json",
    "reproduction": "data/receipts/reproduction.json",
    "golden": "data/golden.json",
    "noise_floor": "data/noise_floor.json",
    "instructions": None,
}
ABBA_REPO = "ABBA_REPO"  # said for a clone of abba-harness in the commands a refusal gives


class Refused(Exception):
    """A frozen checker that cannot be run (its files edited, missing or a link): one line."""


class Generation:
    """One entry of generations.json."""

    def __init__(self, entry: dict, index: int):
        self.index = index
        self.id: str = entry["id"]
        self.format: "str | None" = entry["format"]
        self.schemas: "dict[str, str]" = dict(entry["schemas"])
        self.version: str = entry["version"]
        self.first: str = entry["first"]
        self.last: str = entry["last"]
        self.dates: "list[str]" = list(entry["dates"])
        self.files: "dict[str, str]" = dict(entry["files"])

    @property
    def label(self) -> str:
        """abba-harness/bundle/v7 with run/v5: the format, and the ids that tell it from its format's
        other generations."""
        if self.format is None:
            return "the format before abba-harness/bundle/v6, without an Abba-Format line"
        same = [g for g in generations() if g.format == self.format and g is not self]
        apart = []
        for kind in IDENTIFY_KINDS:
            if not same:
                break
            if any(g.schemas.get(kind) != self.schemas.get(kind) for g in same) and kind in self.schemas:
                apart.append(self.schemas[kind].split("/", 1)[1])
                same = [g for g in same if g.schemas.get(kind) == self.schemas.get(kind)]
        return f"{self.format} with {', '.join(apart)}" if apart else self.format

    @property
    def rules(self) -> str:
        """"the rules of abba-harness/bundle/v7 with run/v5 (harness 0.1.0 at 6c8ebaa)"."""
        return f"the rules of {self.label} (harness {self.version} at {self.last[:7]})"

    @property
    def folder(self) -> str:
        return os.path.join(VENDOR, self.id)


_CACHE: "dict[str, tuple[list[Generation], list[dict]]]" = {}


def _manifest() -> "tuple[list[Generation], list[dict]]":
    if MANIFEST not in _CACHE:
        with open(MANIFEST, encoding="utf-8") as fh:
            data = json.load(fh)
        _CACHE[MANIFEST] = ([Generation(e, n) for n, e in enumerate(data["generations"])], list(data["holes"]))
    return _CACHE[MANIFEST]


def generations() -> "list[Generation]":
    """Every frozen generation, oldest first."""
    return _manifest()[0]


def by_id(gid: str) -> Generation:
    return next(g for g in generations() if g.id == gid)


def holes(gen: Generation) -> "list[str]":
    """The known holes of gen's rules, each with where it was closed (or that it is open): one
    line each, from generations.json."""
    order = {g.id: g.index for g in generations()}
    out = []
    for hole in _manifest()[1]:
        lo = order[hole["from"]]
        hi = order[hole["to"]] if hole.get("to") else len(order)
        if lo <= gen.index <= hi:
            out.append(f"{hole['text']} ({hole['status']})")
    return out


# --- which generation a bundle claims ------------------------------------------------------
def _read(root: str, rel: str, limit: int, prefix: bool = False) -> "bytes | None":
    """The bytes of root/rel, never through a link at any step, never from anything but a
    regular file, at most limit of them (prefix: its first limit bytes, whatever its size); None
    for any of those, or any error."""
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    if not nofollow or os.open not in os.supports_dir_fd:
        return None
    fds = []
    try:
        fds.append(os.open(root, os.O_RDONLY | os.O_DIRECTORY | nofollow))
        parts = rel.split("/")
        for part in parts[:-1]:
            fds.append(os.open(part, os.O_RDONLY | os.O_DIRECTORY | nofollow, dir_fd=fds[-1]))
        fds.append(os.open(parts[-1], os.O_RDONLY | nofollow | getattr(os, "O_NONBLOCK", 0), dir_fd=fds[-1]))
        info = os.fstat(fds[-1])
        if not stat.S_ISREG(info.st_mode) or (info.st_size > limit and not prefix):
            return None
        want = min(info.st_size, limit)
        chunks, got = [], 0
        while got <= want:  # a byte past it: a file that grew meanwhile is refused, or cut to its prefix
            chunk = os.read(fds[-1], min(1 << 20, want + 1 - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        data = b"".join(chunks)
        return data[:limit] if prefix else (data if len(data) <= limit else None)
    except OSError:
        return None
    finally:
        for fd in fds:
            os.close(fd)


def _schema(root: str, rel: str) -> "str | None":
    """The schema id a document opens with: every harness wrote it as the first key, so only the
    first bytes are read (a hostile document costs nothing to look at); None when it does not
    open so. The rules chosen then parse the whole document, strictly."""
    data = _read(root, rel, READ_BYTES, prefix=True)
    found = SCHEMA_FIRST.match(data.decode("utf-8", "replace")) if data is not None else None
    return found.group(1) if found else None


def bag_info(root: str) -> "dict[str, str] | None":
    """bag-info.txt's lines, read before anything is checked (to choose the rules only), when it is
    the file the tag manifest lists (its SHA-256 there); None otherwise, so that a damaged tag
    file is named by today's checks rather than taken for an earlier bundle's."""
    data = _read(root, "bag-info.txt", 1 << 16)
    rows = (_read(root, "tagmanifest-sha256.txt", 1 << 16) or b"").decode("utf-8", "replace").splitlines()
    if data is None or f"{hashlib.sha256(data).hexdigest()}  bag-info.txt" not in rows:
        return None
    fields: "dict[str, str]" = {}
    for line in data.decode("utf-8", "replace").splitlines():
        key, sep, value = line.partition(": ")
        if sep and key not in fields:
            fields[key] = value
    return fields


def _firsts(root: str) -> "dict[str, str]":
    """The first run and instruction record the manifest lists: {"run": rel, "instructions": rel}."""
    data = _read(root, "manifest-sha256.txt", 64 << 20) or b""
    out: "dict[str, str]" = {}
    for line in data.decode("utf-8", "replace").splitlines():
        rel = line.partition("  ")[2]
        for kind, folder in (("run", "data/runs/"), ("instructions", "data/instructions/")):
            if kind not in out and rel.startswith(folder) and rel.endswith(".json") and rel.count("/") == 2:
                out[kind] = rel
    return out


def identify(root: str) -> "Generation | None":
    """The frozen generation whose ids the bundle at root carries, or None (today's, a bundle of
    no generation this harness knows, or one it cannot read: today's checks then judge it, and
    refuse what is not theirs). Read before any check, to choose rules only: bag-info's
    Abba-Format (no line: before v6), then, where one format had several generations, the
    schema ids of the documents that tell them apart. Every read is bounded and never follows a
    link; nothing read here is trusted: the chosen rules check all of it."""
    info = bag_info(root)
    if info is None:
        return None
    fmt = info.get("Abba-Format")
    candidates = [g for g in generations() if g.format == fmt]
    if not candidates:
        return None
    if fmt is None:
        return candidates[0]
    firsts = _firsts(root)
    for kind, rel in IDENTIFY_KINDS.items():
        rel = rel or firsts.get(kind)
        found = _schema(root, rel) if rel else None
        if found is not None:
            candidates = [g for g in candidates if g.schemas.get(kind) == found]
    return candidates[0] if len(candidates) == 1 else None


# --- running a frozen checker -------------------------------------------------------------
def _sha256(path: str) -> str:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise OSError("not a regular file")
        return hashlib.sha256(fh.read()).hexdigest()


def frozen(gen: Generation) -> str:
    """The path of gen's frozen rehash.py, once every file of its pair is the manifest's to the
    byte; Refused (one line, with the way back) otherwise."""
    for name, want in sorted(gen.files.items()):
        path = os.path.join(gen.folder, name)
        try:
            got = _sha256(path)
        except OSError as exc:
            raise Refused(f"{path}: the frozen checker of {gen.label} cannot be read ({exc.strerror or exc}); "
                          f"restore it from git: `git -C {ABBA_REPO} show {gen.last}:harness/{name} > {name}`") \
                from None
        if got != want:
            raise Refused(f"{path}: SHA-256 {got[:16]}..., generations.json pins {want[:16]}...: the frozen "
                          f"checker of {gen.label} was edited, and judges nothing; restore it from git "
                          f"(`git -C {ABBA_REPO} show {gen.last}:harness/{name}`)")
    return os.path.join(gen.folder, "rehash.py")


class Outcome:
    """What a frozen checker said: its exit code and its lines (bundle text: escape them)."""

    def __init__(self, code: int, out: "list[str]", err: "list[str]"):
        self.code, self.out, self.err = code, out, err


def _limit_memory() -> None:  # pragma: no cover - runs in the child
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    except (ImportError, ValueError, OSError):
        pass


def run(gen: Generation, root: str, max_array_bytes: "int | None" = None, timeout: float = TIMEOUT_S) -> Outcome:
    """gen's frozen checker on root, as a process of its own: exit 0 intact under its rules, 1
    problems, 2 unusable; a checker past its wall clock is killed and reads as unusable."""
    script = frozen(gen)
    bundle = root if not root.startswith("-") else os.path.join(".", root)
    cmd = [sys.executable, "-S", "-E", "-s", "-B", "-X", "utf8", script, bundle]
    if max_array_bytes is not None:
        cmd += ["--max-array-bytes", str(max_array_bytes)]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, preexec_fn=_limit_memory if os.name == "posix" else None)
    kept = {"out": bytearray(), "err": bytearray()}
    cut = set()
    sel = selectors.DefaultSelector()
    assert proc.stdout is not None and proc.stderr is not None  # both are PIPE
    sel.register(proc.stdout, selectors.EVENT_READ, "out")
    sel.register(proc.stderr, selectors.EVENT_READ, "err")
    deadline = time.monotonic() + timeout
    timed_out = False
    try:
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            for key, _ in sel.select(min(left, 1.0)):
                chunk = os.read(key.fd, 1 << 16)
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                room = OUTPUT_BYTES - len(kept[key.data])
                kept[key.data] += chunk[:max(room, 0)]
                if len(chunk) > room:
                    cut.add(key.data)
    finally:
        sel.close()
        if timed_out or proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
        proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    out = kept["out"].decode("utf-8", "replace").splitlines()
    err = kept["err"].decode("utf-8", "replace").splitlines()
    for name in sorted(cut):
        (out if name == "out" else err).append(f"(its output past {OUTPUT_BYTES} bytes left out)")
    if timed_out:
        return Outcome(2, out, err + [f"the frozen checker of {gen.label} ran past {timeout:g} s and was stopped"])
    code = proc.returncode
    if code not in (0, 1, 2):
        return Outcome(2, out, err + [f"the frozen checker of {gen.label} ended with exit {code} (killed, or out "
                                      f"of its {MEMORY_BYTES >> 30} GiB address space)"])
    return Outcome(code, out, err)


# --- what the reviewer reads --------------------------------------------------------------
def fetch(gen: Generation) -> str:
    """The shell command that puts gen's harness, as git holds it at its last commit, in
    ./abba-LAST7 (ABBA_REPO: a clone of abba-harness)."""
    last = gen.last[:7]
    return f"mkdir abba-{last} && git -C {ABBA_REPO} archive {last} harness | tar -x -C abba-{last}"


def refusal(gen: Generation, root: str, current: str) -> str:
    """One line: the bundle is of an earlier generation, today's rules do not judge it, and the
    exact commands that check it under its own."""
    b = shlex.quote(root)
    last = gen.last[:7]
    return (f"a bundle of an earlier generation, {gen.label}, written by harness {gen.version} at "
            f"{gen.first[:7]}..{last} ({gen.dates[0]}..{gen.dates[1]}); these checkers judge {current} only, and a "
            f"bundle never chooses its rules: `harness verify --legacy {b}` (or `python -S harness/rehash.py --legacy "
            f"{b}`) checks it under that generation's own frozen rules and lists their known holes; the same checker "
            f"from git: `{fetch(gen)}`, then "
            f"`python -S abba-{last}/harness/rehash.py {b}` (or `PYTHONPATH=abba-{last} python -m harness verify "
            f"{b}`, and compare, summary or report the same way)")


def not_checked(gen: Generation, root: str) -> str:
    """What --legacy leaves to the generation's own harness."""
    last = gen.last[:7]
    return (f"not checked under --legacy: campaign.yaml against campaign.json, the harness's own second "
            f"re-derivation, anchors (--repo), a reproduction receipt (--original), and of a signature (--trust) "
            f"more than whose it is and that it covers this bundle's digest; that generation's harness checks them: "
            f"`{fetch(gen)}`, then `PYTHONPATH=abba-{last} python -m harness verify {shlex.quote(root)} --repo PATH`")


def report(gen: Generation, outcome: Outcome, root: str, current: str) -> "tuple[int, list[str], list[str]]":
    """(exit code, stdout lines, stderr lines) for a bundle checked under gen's frozen rules.
    Every line may hold bundle text: the caller escapes each before printing."""
    said = [f"  {line}" for line in outcome.out]
    if outcome.code == 2:
        why = "; ".join(outcome.err) or "no reason given"
        return 2, [], [f"under {gen.rules}: unusable: {why}"]
    if outcome.code == 1:
        return 1, [f"FAIL {root}: under {gen.rules}, its frozen checker says:", *said,
                   f"{root}: does not hold even under the rules of {gen.label}; do not trust this bundle"], []
    lines = [f"OK {root}: verified under {gen.rules}, not today's ({current}); its frozen checker "
             f"(harness/legacy/vendor/{gen.id}/rehash.py, the manifest's to the byte) says:",
             *said, f"known holes of the rules of {gen.label} (a bundle that passes them may still hide these):"]
    lines += [f"  - {hole}" for hole in holes(gen)]
    lines.append(not_checked(gen, root))
    return 0, lines, []
