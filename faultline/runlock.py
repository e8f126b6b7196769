"""One writing run per warehouse at a time: a lock file beside the DuckDB file that says who holds it.

The commands that write the warehouse take `<warehouse>.lock` with flock(2) and write who they are into it; a
second run waits or refuses with a `WarehouseBusy` naming the first. Why a lock of our own, why the file stays,
and how it nests: docs/dependencies.md#one-writing-run-per-warehouse.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shlex
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, ValidationError

from faultline.errors import FaultlineError

if TYPE_CHECKING:
    from faultline.config import Settings

LOCK_SUFFIX = ".lock"
POLL_S = 0.25
EXIT_BUSY = 75  # EX_TEMPFAIL: the warehouse is busy, try again later (a cron wrapper can tell it from a failure)


class Holder(BaseModel):
    """Who holds a warehouse's lock: what is written into the lock file."""

    model_config = ConfigDict(extra="forbid")
    pid: int
    host: str
    started_at: datetime
    command: str
    purpose: str

    def describe(self) -> str:
        """One line for a person: what runs, where, since when."""
        age = max(0, int((datetime.now(UTC) - self.started_at).total_seconds()))
        alive = "" if self.host != socket.gethostname() or _alive(self.pid) else (
            "; that process has ended, so a process it started still holds the lock")
        return (f"{self.purpose} `{self.command}` (pid {self.pid} on {self.host}, started "
                f"{self.started_at:%Y-%m-%d %H:%M:%S} UTC, {age} s ago{alive})")


class WarehouseBusy(FaultlineError):
    """Another run holds the warehouse; the CLI exits with `EXIT_BUSY`."""

    exit_code = EXIT_BUSY


def lock_path(db_path: Path | str) -> Path:
    """The lock file of a warehouse: `<warehouse file>.lock`, beside it."""
    target = Path(db_path).resolve()
    return target.with_name(target.name + LOCK_SUFFIX)


def read_holder(db_path: Path | str) -> Holder | None:
    """Who the lock file names (the holder, or the last one if it was killed); None when it names no one."""
    try:
        return Holder.model_validate_json(lock_path(db_path).read_bytes())
    except (OSError, ValidationError):
        return None


def command_line() -> str:
    """This process's command line as a person would type it."""
    argv = list(sys.argv) or ["python"]
    if Path(argv[0]).name == "faultline" or argv[0].endswith(os.path.join("faultline", "cli", "main.py")):
        argv[0] = "faultline"
    return shlex.join(argv)[:500]


_HELD: dict[str, list[int]] = {}  # lock file -> [fd, depth] for the locks this process holds
_GUARD = threading.Lock()


@contextmanager
def warehouse_lock(db_path: Path | str, purpose: str, *, wait_s: float = 0.0,
                   on_wait: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold the warehouse's run lock for the block; wait up to `wait_s` seconds for another holder, then raise
    `WarehouseBusy` naming it. `on_wait` hears once that this run is waiting, and for whom."""
    if str(db_path) == ":memory:":
        yield
        return
    path = lock_path(db_path)
    key = str(path)
    with _GUARD:
        if key in _HELD:
            _HELD[key][1] += 1
            nested = True
        else:
            nested = False
    if nested:
        try:
            yield
        finally:
            with _GUARD:
                _HELD[key][1] -= 1
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        _acquire(fd, db_path, wait_s, on_wait)
        me = Holder(pid=os.getpid(), host=socket.gethostname(), started_at=datetime.now(UTC),
                    command=command_line(), purpose=purpose)
        _write_holder(fd, me)
        with _GUARD:
            _HELD[key] = [fd, 1]
        try:
            yield
        finally:
            with _GUARD:
                del _HELD[key]
            _write_holder(fd, None)  # a finished run is named by no one; a killed one stays named until the next
    finally:
        os.close(fd)  # closing the only descriptor releases the flock


def settings_lock(settings: Settings, purpose: str, wait_s: float | None = None) -> AbstractContextManager[None]:
    """`warehouse_lock` on the settings' warehouse; `wait_s` defaults to the `warehouse_lock_wait_s` setting. A
    run that waits says so, and for whom, on stderr."""
    wait = settings.warehouse_lock_wait_s if wait_s is None else wait_s
    return warehouse_lock(settings.duckdb_path, purpose, wait_s=wait,
                          on_wait=lambda note: print(note, file=sys.stderr, flush=True))


def _acquire(fd: int, db_path: Path | str, wait_s: float, on_wait: Callable[[str], None] | None) -> None:
    deadline = time.monotonic() + wait_s
    told = False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise FaultlineError(f"cannot lock {lock_path(db_path)}: {exc}",
                                     fix="the warehouse's folder must be writable and on a filesystem with "
                                     "flock (a local disk or NFS v4)") from exc
        holder = read_holder(db_path)
        who = holder.describe() if holder else "another process (it has not said who it is yet)"
        if time.monotonic() >= deadline:
            waited = f" after waiting {wait_s:g} s" if wait_s else ""
            raise WarehouseBusy(
                f"the warehouse {db_path} is in use{waited} by {who}",
                fix="let that run finish, or wait for it: --wait SECONDS or the warehouse_lock_wait_s setting "
                "(FAULTLINE_WAREHOUSE_LOCK_WAIT_S)")
        if on_wait is not None and not told:
            on_wait(f"waiting up to {wait_s:g} s for {who}")
            told = True
        time.sleep(min(POLL_S, max(0.0, deadline - time.monotonic())))


def _write_holder(fd: int, holder: Holder | None) -> None:
    """Name the holder in the lock file; a full disk leaves it unnamed (the flock, not the text, is the lock)."""
    try:
        os.ftruncate(fd, 0)
        if holder is not None:
            os.pwrite(fd, holder.model_dump_json().encode(), 0)
    except OSError:
        pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
