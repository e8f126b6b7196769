"""Host locks between processes that drive labs: `flock` on the machine lock and on one lock per lab prefix, in /tmp.

Who holds which, and why they are re-entrant: docs/lab.md#several-labs-at-once.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from faultline.errors import FaultlineError

MACHINE_LOCK = Path("/tmp/faultline-lab.lock")
_held: dict[Path, tuple[int, int]] = {}  # path -> (fd, depth) of the locks this process holds


def prefix_lock(prefix: str) -> Path:
    """The lock file of the lab prefix `prefix` (e.g. /tmp/faultline-lab-fl2-.lock)."""
    return Path(f"/tmp/faultline-lab-{prefix}.lock")


@contextlib.contextmanager
def holding(path: Path, *, wait: bool = True, what: str = "the lab") -> Iterator[None]:
    """Hold an exclusive flock on `path`; with `wait=False` a busy lock raises FaultlineError at once."""
    if not _acquire(path, wait):
        raise FaultlineError(f"another process is building or tearing down {what} ({path} is locked)",
                             fix="wait for it, or use another lab_prefix and lab_dir")
    try:
        yield
    finally:
        _release(path)


def _acquire(path: Path, wait: bool) -> bool:
    """Take (or re-enter) the flock on `path`; False when `wait` is off and another process holds it."""
    if path in _held:
        fd, depth = _held[path]
        _held[path] = (fd, depth + 1)
        return True
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except BlockingIOError:
        os.close(fd)
        return False
    except BaseException:
        os.close(fd)
        raise
    _held[path] = (fd, 1)
    return True


def _release(path: Path) -> None:
    fd, depth = _held[path]
    if depth > 1:
        _held[path] = (fd, depth - 1)
        return
    del _held[path]
    os.close(fd)  # closing the only descriptor releases the flock


def held_by_ancestor(path: Path) -> bool:
    """Whether this process or one of its ancestors holds a flock on `path` (read from /proc/locks)."""
    try:
        st = path.stat()
    except OSError:
        return False
    wanted = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    holders = set()
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        # "1: FLOCK  ADVISORY  WRITE 4242 00:1b:123 0 EOF" (blocked waiters carry a "->" field first)
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == wanted:
            holders.add(int(fields[4]))
    return bool(holders & _ancestors())


def _ancestors() -> set[int]:
    pids, pid = set(), os.getpid()
    while pid > 1 and pid not in pids:
        pids.add(pid)
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            break
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    return pids


@contextlib.contextmanager
def machine_lock(*, notify: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold the machine lock for a long lab run, unless this process or an ancestor already holds it.

    `notify(message)` is called once if the lock is busy and the run has to wait for it.
    """
    MACHINE_LOCK.touch(exist_ok=True)
    if held_by_ancestor(MACHINE_LOCK):
        yield
        return
    if not _acquire(MACHINE_LOCK, wait=False):
        if notify is not None:
            notify(f"waiting for {MACHINE_LOCK}: another lab run (tests, a corpus generation) holds it")
        _acquire(MACHINE_LOCK, wait=True)
    try:
        yield
    finally:
        _release(MACHINE_LOCK)
