"""Linux process controls the runner and its workers need, standard library only (a worker
imports this under the user's own interpreter, where psutil may not exist)."""
from __future__ import annotations

import ctypes
import os
import signal

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


def prctl(option: int, value: int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def become_subreaper() -> bool:
    """Orphaned grandchildren get re-parented to us instead of init, so we can still see, kill
    and reap them (Linux only; harmless elsewhere)."""
    return prctl(PR_SET_CHILD_SUBREAPER, 1)


def die_with_parent(parent_pid: int) -> None:
    """A worker whose harness was SIGKILLed must not live on unowned (Linux only)."""
    if prctl(PR_SET_PDEATHSIG, signal.SIGKILL) and os.getppid() != parent_pid:
        os._exit(70)  # the parent died before we asked
