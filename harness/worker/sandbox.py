"""The worker's sandbox: what the kernel gives an unprivileged process to shut itself in, applied
through ctypes with the standard library alone.

Design. The code under test runs in the worker, so the worker must not reach the harness's
evidence (the staging folder, other runs' folders and outputs, the other revision's tree), nor
anything a later run could read back (/tmp, /dev/shm, the network). Two kernel features do it,
each probed, never assumed:

* Landlock (Linux 5.13+, by syscall: securityfs need not be mounted): a ruleset that handles every
  filesystem right the kernel's ABI knows and allows, beneath each named folder, only reading (the
  revision's tree, the interpreter, the harness's code copy, the pinned inputs, the workload
  folder, the system folders) or everything (the run's own folder). From ABI 4 it also denies TCP
  bind and connect, from ABI 6 it scopes signals and abstract unix sockets to the sandbox (a worker
  cannot stop, kill or talk to a process outside it), and at every ABI it denies ptrace of
  processes outside. It is inherited across fork and execve and cannot be lifted; a thread restricts
  itself only, so it is applied while the process has one thread. `no_new_privs` comes with it.
* A user namespace with a network namespace of its own (unshare), where the kernel allows them
  (Ubuntu 24.04's AppArmor may not): no network at all, loopback only, and whatever capabilities a
  root harness has stop at the namespace. Without it (and without Landlock's TCP rules) the network
  stays open, which the run's record says.

How it is applied. Before the worker's interpreter starts: the launcher runs
`PYTHON -I -S .../harness/worker/sandbox.py RULES -- ARGV...` with the harness's own interpreter,
which applies RULES to itself and execs ARGV (the worker, or valgrind before it), so interpreter
start-up (.pth files, sitecustomize) is inside it too. A zygote (harness/worker/zygote.py) is
started the same way with its variant's rules, and each child it forks restricts itself further
to its own run folder (`restrict`) before the worker imports anything of the code under test.

What the launcher asks for is what the probe found (`probe`): a rule that cannot be applied then
fails the run in one line (exit SANDBOX_EXIT) rather than run it unconfined. `python -I -S
sandbox.py --probe` prints the probe's JSON. Runs in the harness's interpreter and in the worker's
room (Python 3.9+, the standard library only).
"""
from __future__ import annotations

import ctypes
import errno
import json
import os
import struct
import sys

SANDBOX_EXIT = 125  # the wrapper could not apply the rules it was given: the run fails, nothing ran
# Syscall numbers of the Landlock calls: x86-64 and the generic table (aarch64) agree.
SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446
CREATE_RULESET_VERSION = 1 << 0
RULE_PATH_BENEATH, RULE_NET_PORT = 1, 2
PR_SET_NO_NEW_PRIVS = 38
CLONE_NEWUSER, CLONE_NEWNET = 0x10000000, 0x40000000

# Filesystem rights by the ABI that brought them.
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR, MAKE_REG = 1 << 4, 1 << 5, 1 << 6, 1 << 7, 1 << 8
MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1, 5: (1 << 16) - 1}
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX, SCOPE_SIGNAL = 1 << 0, 1 << 1
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV  # what a rule on a file may hold
READ = EXECUTE | READ_FILE | READ_DIR
# What every process needs of the system: read-only, where it exists.
SYSTEM_READ = ("/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/etc", "/proc", "/sys",
               "/dev/urandom", "/dev/random")
SYSTEM_WRITE = ("/dev/null", "/dev/zero", "/dev/full")  # devices a process writes to and reads from

_libc = None


class SandboxError(Exception):
    """A rule the kernel refused: one line naming the step and the errno."""


def libc():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def _syscall(number: int, *args) -> int:
    fn = libc().syscall
    fn.restype = ctypes.c_long
    result = fn(ctypes.c_long(number), *args)
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return result


def landlock_abi() -> tuple:
    """(ABI version, None) or (None, why not): asked of the kernel, not of securityfs."""
    system, machine = os.uname().sysname, os.uname().machine
    if system != "Linux" or machine not in AUDIT_ARCH:  # the syscall numbers and the seccomp filter are these two's
        return None, f"Landlock: not on Linux x86-64 or aarch64 ({system} {machine})"
    try:
        return _syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION)), None
    except OSError as exc:
        why = {errno.ENOSYS: "the kernel has no Landlock (before 5.13, or built without it)",
               errno.EOPNOTSUPP: "Landlock is built in but not enabled (lsm= on the kernel command line)"}
        code = exc.errno or 0
        return None, "Landlock: " + why.get(code, f"{errno.errorcode.get(code, code)}")
    except (AttributeError, OSError) as exc:  # no libc syscall()
        return None, f"Landlock: {exc}"


def _fs_rights(abi: int) -> int:
    return FS_BY_ABI.get(abi, FS_BY_ABI[5])


def _ruleset(abi: int, net: bool) -> int:
    """A new ruleset fd handling every right this ABI knows (TCP too when net: deny the network)."""
    fs = _fs_rights(abi)
    handled_net = (NET_BIND_TCP | NET_CONNECT_TCP) if net and abi >= 4 else 0
    scoped = (SCOPE_ABSTRACT_UNIX | SCOPE_SIGNAL) if abi >= 6 else 0
    if abi >= 6:
        attr = struct.pack("=QQQ", fs, handled_net, scoped)
    elif abi >= 4:
        attr = struct.pack("=QQ", fs, handled_net)
    else:
        attr = struct.pack("=Q", fs)
    buf = ctypes.create_string_buffer(attr, len(attr))
    return _syscall(SYS_CREATE_RULESET, buf, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0))


def _allow(ruleset: int, path: str, rights: int) -> bool:
    """Allow `rights` beneath path (a file gets the file rights among them); False when the path
    does not exist (nothing to allow)."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if not os.path.isdir(f"/proc/self/fd/{fd}"):
            rights &= FILE_RIGHTS
        attr = struct.pack("=Qi", rights, fd)  # struct landlock_path_beneath_attr is packed: 12 bytes
        buf = ctypes.create_string_buffer(attr, len(attr))
        _syscall(SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(RULE_PATH_BENEATH), buf, ctypes.c_uint32(0))
    finally:
        os.close(fd)
    return True


def no_new_privs() -> None:
    if libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise SandboxError(f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(err)}")


def landlock(abi: int, read: list, write: list, net: bool) -> None:
    """Restrict this thread (and what it execs and forks) to `read` (read and execute beneath each)
    and `write` (every right beneath each), the system folders read-only; with net, no TCP bind
    or connect either (ABI 4+)."""
    rights = _fs_rights(abi)
    everything = rights & ~(MAKE_BLOCK | MAKE_CHAR)
    try:
        ruleset = _ruleset(abi, net)
    except OSError as exc:
        raise SandboxError(f"landlock_create_ruleset: {exc.strerror}") from None
    try:
        for path in SYSTEM_READ + tuple(read):
            _allow(ruleset, path, READ)
        for path in SYSTEM_WRITE:
            _allow(ruleset, path, READ_FILE | WRITE_FILE)
        for path in write:
            if not _allow(ruleset, path, everything):
                raise SandboxError(f"landlock: the writable folder {path} does not exist")
        try:
            _syscall(SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0))
        except OSError as exc:
            raise SandboxError(f"landlock_restrict_self: {exc.strerror}") from None
    except OSError as exc:
        raise SandboxError(f"landlock_add_rule: {exc.strerror}") from None
    finally:
        os.close(ruleset)


# --- scheduling: only its own ---------------------------------------------------------------------
# A process may lower the priority of (renice, pin, SCHED_IDLE) any process of its own user, a user
# namespace does not stop that, and the other variant's zygote is one: a seccomp filter lets a
# sandboxed process change the scheduling of itself only (pid 0 or its own), and refuses with EPERM
# any other target. Threads of its own it names by tid are refused too (a library that pins its
# threads then runs them unpinned).
SECCOMP_SET_MODE_FILTER, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 1, 22, 2
RET_ALLOW, RET_EPERM = 0x7FFF0000, 0x00050000 | errno.EPERM
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
# name -> (x86-64 number, aarch64 number, index of the pid argument, (index, value) that must hold too)
SCHEDULING_CALLS: dict = {
    "setpriority": (141, 140, 1, (0, 0)),  # which == PRIO_PROCESS
    "sched_setparam": (142, 118, 0, None), "sched_setscheduler": (144, 119, 0, None),
    "sched_setaffinity": (203, 122, 0, None), "sched_setattr": (314, 274, 0, None),
    "ioprio_set": (251, 30, 1, (0, 1)),  # which == IOPRIO_WHO_PROCESS
    "prlimit64": (302, 261, 0, None),
}
BPF_LD_W_ABS, BPF_JEQ_K, BPF_RET_K = 0x20, 0x15, 0x06


def _bpf(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k & 0xFFFFFFFF)


def scheduling_filter(pid: int) -> bytes:
    """The BPF program: the scheduling calls above allowed on pid 0 and `pid` only."""
    machine = os.uname().machine
    column = 0 if machine == "x86_64" else 1
    arg = lambda i: 16 + 8 * i  # noqa: E731 - the low half of seccomp_data.args[i] (little endian)
    prog = [_bpf(BPF_LD_W_ABS, 0, 0, 4), _bpf(BPF_JEQ_K, 1, 0, AUDIT_ARCH[machine]), _bpf(BPF_RET_K, 0, 0, RET_ALLOW),
            _bpf(BPF_LD_W_ABS, 0, 0, 0)]
    for x86, arm, who, extra in SCHEDULING_CALLS.values():
        nr = x86 if column == 0 else arm
        body = []
        if extra is not None:  # the selector must say "a process", else refused
            body += [_bpf(BPF_LD_W_ABS, 0, 0, arg(extra[0])), _bpf(BPF_JEQ_K, 0, 3, extra[1])]
        body += [_bpf(BPF_LD_W_ABS, 0, 0, arg(who)), _bpf(BPF_JEQ_K, 2, 0, 0), _bpf(BPF_JEQ_K, 1, 0, pid),
                 _bpf(BPF_RET_K, 0, 0, RET_EPERM), _bpf(BPF_RET_K, 0, 0, RET_ALLOW)]
        # not this call: skip its body (and reload the number its body overwrote)
        prog += [_bpf(BPF_JEQ_K, 0, len(body), nr)] + body
    prog.append(_bpf(BPF_RET_K, 0, 0, RET_ALLOW))
    return b"".join(prog)


def own_scheduling_only() -> None:
    """Install the scheduling filter for this process (after no_new_privs)."""
    if os.uname().machine not in AUDIT_ARCH:
        return
    prog = scheduling_filter(os.getpid())
    filters = ctypes.create_string_buffer(prog, len(prog))
    fprog = struct.pack("=HxxxxxxQ", len(prog) // 8, ctypes.addressof(filters))
    buf = ctypes.create_string_buffer(fprog, len(fprog))
    if libc().prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, buf, 0, 0) != 0:
        err = ctypes.get_errno()
        raise SandboxError(f"seccomp: {os.strerror(err)}")


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def namespaces(network: bool) -> None:
    """A user namespace (the same uid and gid inside, no other: a root harness's capabilities stop
    at it) and, unless the campaign declared the network, a network namespace of its own with its
    loopback up: nothing outside this process tree is reachable by any socket."""
    uid, gid = os.geteuid(), os.getegid()
    flags = CLONE_NEWUSER | (0 if network else CLONE_NEWNET)
    if libc().unshare(flags) != 0:
        err = ctypes.get_errno()
        raise SandboxError(f"unshare(user{'' if network else ', net'}): {os.strerror(err)}")
    try:
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1\n")
        _write("/proc/self/gid_map", f"{gid} {gid} 1\n")
    except OSError as exc:
        raise SandboxError(f"user namespace maps: {exc.strerror}") from None
    if not network:
        loopback_up()


def loopback_up() -> None:
    import fcntl
    import socket

    SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        req = struct.pack("16sH22x", b"lo", 0)
        flags = struct.unpack("16sH22x", fcntl.ioctl(sock.fileno(), SIOCGIFFLAGS, req))[1]
        fcntl.ioctl(sock.fileno(), SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", flags | IFF_UP))


def userns_possible() -> tuple:
    """(True, None) when a child can enter a user and network namespace of its own, else (False, why):
    tried in a forked child, so this process stays as it is."""
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            namespaces(network=False)
        except SandboxError as exc:
            code = 1
            try:
                os.write(2, f"{exc}\n".encode()[:300]) if os.environ.get("ABBA_SANDBOX_DEBUG") else None
            except OSError:
                pass
        except BaseException:  # noqa: BLE001 - nothing of a failed probe may escape the child
            code = 2
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) == 0:
        return True, None
    return False, "user and network namespaces: refused by the kernel (e.g. AppArmor's restriction on unprivileged " \
                  "user namespaces, or user.max_user_namespaces = 0)"


def probe(disabled: str = "") -> dict:
    """What this machine gives: {landlock: ABI or None, userns: bool, why: [reasons]}. disabled:
    "landlock", "userns" or both, comma-separated (ABBA_SANDBOX_DISABLE): act as a machine without
    them, to test the fallback."""
    off = {part.strip() for part in disabled.split(",") if part.strip()}
    why = []
    abi, reason = (None, "Landlock: disabled (ABBA_SANDBOX_DISABLE)") if "landlock" in off else landlock_abi()
    if reason:
        why.append(reason)
    userns, reason = (False, "user and network namespaces: disabled (ABBA_SANDBOX_DISABLE)") if "userns" in off \
        else userns_possible()
    if reason:
        why.append(reason)
    return {"landlock": abi, "userns": userns, "why": why}


def apply(rules: dict) -> None:
    """Apply rules as the launcher built them (engine/sandbox.py): {landlock: ABI or null, userns:
    bool, network: bool (the campaign declared it), read: [...], write: [...], scheduling: bool
    (only its own)}. SandboxError when any asked-for part cannot be had."""
    if rules.get("userns"):
        namespaces(bool(rules.get("network")))
    restrict(rules, tcp=not rules.get("userns"))


def restrict(rules: dict, tcp: bool = False) -> None:
    """Landlock and the scheduling filter, for this process and what it forks and execs (a zygote's
    child restricts itself with this, its namespaces being the zygote's). tcp: Landlock denies TCP
    too (where no network namespace of its own cut it already, and loopback there is its own)."""
    no_new_privs()
    if rules.get("landlock"):
        landlock(int(rules["landlock"]), list(rules.get("read") or []), list(rules.get("write") or []),
                 net=tcp and not rules.get("network"))
    if rules.get("scheduling"):
        own_scheduling_only()


def main(argv: list) -> int:
    if argv[1:2] == ["--probe"]:
        print(json.dumps(probe(os.environ.get("ABBA_SANDBOX_DISABLE", ""))))
        return 0
    if len(argv) < 4 or argv[2] != "--":
        print("usage: python -I -S sandbox.py RULES_JSON -- ARGV... | --probe", file=sys.stderr)
        return 2
    try:
        rules = json.loads(argv[1])
        apply(rules)
    except (ValueError, SandboxError) as exc:
        print(f"sandbox: {exc}: the run cannot be confined as its campaign asks (`sandbox: off` opts out, "
              "recorded)", file=sys.stderr)
        return SANDBOX_EXIT
    target = argv[3]
    if os.sep not in target:  # a bare name (valgrind's `setarch`): looked up on the run's PATH, as a shell would
        found = [os.path.join(d, target) for d in os.environ.get("PATH", os.defpath).split(os.pathsep) if d]
        target = next((f for f in found if os.path.isfile(f) and os.access(f, os.X_OK)), target)
    try:
        os.execv(target, argv[3:])
    except OSError as exc:
        print(f"sandbox: cannot start {argv[3]}: {exc.strerror}", file=sys.stderr)
        return SANDBOX_EXIT
    return SANDBOX_EXIT  # execv returns only by raising


if __name__ == "__main__":
    sys.exit(main(sys.argv))
