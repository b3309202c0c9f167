"""The runner's side of the worker's sandbox (the kernel's side is harness/worker/sandbox.py): what
this machine gives (probed once per campaign, in a process of its own, as every run will apply
it), the rules of one run, and the record a bundle keeps of them.

What a run may read: its revision's tree, its interpreter (its prefixes and the sys.path entries
inside them, as the interpreter itself says), the harness's code copy, the pinned inputs, the
workload folder, what the campaign declares (`sandbox: {read: [...]}`) and the system folders;
what it may write: its own run folder (its cwd, HOME, TMPDIR and output folder) and the folders
the campaign's env names as shared caches. Nothing else: not the staging folder, not other runs'
folders, not the other revision's tree, not /tmp, /dev/shm or the campaign's repository. No
network unless the campaign declares it (`sandbox: {network: true}`), and changes to the
scheduling of its own process only.

Levels, worst last (contract.SANDBOX_LEVELS): full (Landlock and a user namespace: the network
cut unless declared), partial (Landlock without a user namespace: the filesystem is confined and
TCP refused, but UDP and unix sockets stay open and a root harness's capabilities reach the
worker), none (no Landlock on this kernel: nothing is confined) and off (the campaign opted out,
`sandbox: off`). Anything but full is said in the summary's headline and by both checkers.
"""
from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from harness.records import CampaignSandbox, FromJson, SandboxRecord


DISABLE_ENV = "ABBA_SANDBOX_DISABLE"  # "landlock", "userns" or both: act as a machine without them (tests)
PROBE_TIMEOUT_S = 30
ROOTS_PROBE = r"""# abba-harness: roots probe
import json, os, sys
prefixes = sorted({os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)})
inside = lambda p: any(p == q or p.startswith(q + os.sep) for q in prefixes)
paths = [os.path.realpath(p) for p in sys.path if p and os.path.isabs(p)]
print(json.dumps({"prefixes": prefixes, "inside": sorted({p for p in paths if inside(p)}),
                  "outside": sorted({p for p in paths if not inside(p) and os.path.exists(p)}),
                  "executable": os.path.realpath(sys.executable)}))
"""


class SandboxError(Exception):
    """A run cannot be confined as the campaign asks: one line with the cause."""


@dataclass(frozen=True)
class Probe:
    """What the machine gives: Landlock's ABI (None: none), whether user namespaces work, and why
    not (one line per missing part)."""
    landlock: Optional[int]
    userns: bool
    why: tuple


@dataclass(frozen=True)
class Confinement:
    """One worker's sandbox as a launcher applies it: the wrapper's argv prefix (the harness's own
    interpreter running harness/worker/sandbox.py) and the rules it applies; a zygote's child
    restricts itself with `child(run_dir)`'s rules."""
    wrapper: tuple
    rules: dict

    def argv(self, argv: list) -> list:
        return [*self.wrapper, json.dumps(self.rules, separators=(",", ":")), "--", *argv]

    def zygote(self, runs_dir: Path) -> "Confinement":
        """A zygote's sandbox: its variant's runs folder writable (its children narrow it to their
        own), no scheduling filter of its own (its children each install theirs, for their pid)."""
        return Confinement(self.wrapper, {**self.rules, "scheduling": False,
                                          "write": [str(runs_dir)] + list(self.rules["write"][1:])})

    def child(self, run_dir: Path) -> dict:
        """A zygote child's own rules: what its zygote reads, and only its run folder writable."""
        return {**self.rules, "userns": False, "scheduling": True,
                "write": [str(run_dir)] + list(self.rules["write"][1:])}


def wrapper_script(code: Path) -> Path:
    return code / "harness" / "worker" / "sandbox.py"


@functools.lru_cache(maxsize=8)
def probe(code: str, disabled: str) -> Probe:
    """Ask this machine, in a process of its own started as every run's wrapper is."""
    script = wrapper_script(Path(code))
    env = {"PATH": os.environ.get("PATH", ""), DISABLE_ENV: disabled}
    try:
        proc = subprocess.run([sys.executable, "-I", "-S", str(script), "--probe"], capture_output=True, text=True,
                              timeout=PROBE_TIMEOUT_S, stdin=subprocess.DEVNULL, env=env)
        found = json.loads(proc.stdout.strip().splitlines()[-1])
        abi = found["landlock"]
        return Probe(abi if isinstance(abi, int) and abi > 0 else None, found["userns"] is True,
                     tuple(str(w)[:300] for w in found["why"]))
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError, KeyError, TypeError) as exc:
        return Probe(None, False, (f"the sandbox probe failed: {exc.__class__.__name__}: {str(exc)[:200]}",))


@dataclass(frozen=True)
class Roots(FromJson):
    """An interpreter's folders as it says itself (ROOTS_PROBE): its prefixes, the entries of its
    sys.path inside them and outside them, and its real executable."""
    prefixes: list[str]
    inside: list[str]
    outside: list[str]
    executable: str


@functools.lru_cache(maxsize=8)
def interpreter_roots(python: str) -> Roots:
    """An interpreter's folders, as it says itself (isolated: no PYTHONPATH, no user site): what a
    run may read of it. Entries of its sys.path outside its prefixes (an editable install's source
    folder: possibly the code under test's own repository) are not readable; the campaign names any
    it needs in `sandbox: {read: [...]}`."""
    try:
        proc = subprocess.run([python, "-I", "-c", ROOTS_PROBE], capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL, env={"PATH": os.environ.get("PATH", "")})
        roots = json.loads(proc.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError) as exc:
        raise SandboxError(f"python: {python}: cannot list what its runs may read ({exc})") from None
    # the interpreter is the campaign's: its answer is held to its shape before a path of it is used
    paths = lambda v: isinstance(v, list) and len(v) <= 1000 and all(isinstance(p, str) and p.startswith("/") for p in v)
    try:
        said = Roots.from_json(roots)
    except (KeyError, TypeError):
        said = None
    if said is None or not all(paths(v) for v in (said.prefixes, said.inside, said.outside)) \
            or not isinstance(said.executable, str) or not said.executable.startswith("/"):
        raise SandboxError(f"python: {python}: its answer to the sandbox's roots probe is not "
                           "{prefixes, inside, outside: [absolute paths], executable}: a wrapper script must run "
                           "the real python with every argument")
    return said


def declared_write(env: dict) -> list[str]:
    """Folders the campaign's env names (a shared cache: XDG_CACHE_HOME: /path): writable, declared."""
    return sorted({v for v in env.values() if isinstance(v, str) and v.startswith("/") and os.path.isdir(v)})


def level(found: Probe, setting: CampaignSandbox) -> tuple[str, Optional[str]]:
    """(level, why it is not full) of a campaign's runs on this machine."""
    if setting.mode == "off":
        return "off", "the campaign opted out (sandbox: off)"
    if found.landlock is None:
        return "none", "; ".join(found.why) or "no Landlock"
    if not found.userns:
        return "partial", ("; ".join(w for w in found.why if "namespace" in w) or "no user namespace") + \
            ": the filesystem is confined and TCP refused, but UDP and unix sockets are open"
    return "full", None


def record(found: Probe, setting: CampaignSandbox, read: list, write: list) -> SandboxRecord:
    """environment.json's `sandbox`: what every worker of the campaign ran under (read: what its runs
    could read besides their trees and the harness's code copy: the interpreters, the inputs, the
    workload folder and what the campaign declared, which bound where their code can have come
    from; write: the shared folders its env names)."""
    lvl, why = level(found, setting)
    on = lvl in ("full", "partial")
    return SandboxRecord(lvl, why, found.landlock if on else None, on and found.userns,
                         "declared" if setting.network else ("cut" if on and found.userns else "tcp" if on else "open"),
                         on, sorted(set(read) | set(setting.read)), sorted(write))


def confinement(found: Probe, setting: CampaignSandbox, code: Path, tree: str, read: list, run_dir: Path,
                write: list) -> Optional[Confinement]:
    """The rules of one worker (None: the campaign opted out, or nothing can be applied here): its
    tree, the harness's code copy and `read` readable, its run folder and `write` writable."""
    lvl, _ = level(found, setting)
    if lvl not in ("full", "partial"):
        return None
    rules = {"landlock": found.landlock, "userns": found.userns, "network": setting.network,
             "scheduling": True, "read": sorted(set(read) | {tree, str(code)}),
             "write": [str(run_dir)] + sorted(set(write) - {str(run_dir)})}
    return Confinement((sys.executable, "-I", "-S", str(wrapper_script(code))), rules)


def readable(roots: Roots, inputs: list, workload: Optional[str], declared: list, env: Optional[dict] = None,
             launched: Optional[str] = None) -> list[str]:
    """What a run may read besides the system folders, its own tree and the harness's code copy:
    its interpreter, the inputs, the workload folder, the campaign's declared folders and the
    folders its env puts on PYTHONPATH (declared in the campaign file too). `launched`: the path the
    runs start, where it is not the interpreter itself (a wrapper script: its folder, to run it)."""
    out = [*roots.prefixes, *roots.inside, os.path.dirname(roots.executable)]
    if launched:
        out.append(os.path.dirname(os.path.abspath(launched)))
    out += [p for p in ((env or {}).get("PYTHONPATH") or "").split(os.pathsep) if p.startswith("/")]
    out += [p for p in inputs if p]
    if workload:
        out.append(workload)
    out += declared
    return sorted({os.path.realpath(p) for p in out})
