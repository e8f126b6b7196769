"""A service that runs but does not answer: its processes stopped with SIGSTOP, resumed with SIGCONT.

A hung daemon (blocked on a lock, a dead disk, a debugger attached) looks like this to the network: the
process is in the table, its sockets are open, nothing answers. Only the PIDs are recorded.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path


def state_of(pid: int) -> str:
    """The process state letter of /proc/PID/stat ("" when the process is gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def stopped(pid: int) -> bool:
    """True while `pid` is stopped by a signal."""
    return state_of(pid) in ("T", "t")


def freeze(pids: list[int], timeout: float = 2.0) -> None:
    """SIGSTOP each PID and wait until the kernel shows it stopped."""
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + timeout
    while not all(stopped(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.02)


def thaw(pids: list[int]) -> None:
    """SIGCONT each PID that still exists."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass


def not_frozen(pids: list[int]) -> str | None:
    """None when every PID is stopped, else which are not (gone or running)."""
    bad = [f"{pid} ({state_of(pid) or 'gone'})" for pid in pids if not stopped(pid)]
    return f"not stopped: {', '.join(bad)}" if bad else None
