"""A full disk is the run's failure, not one file's or one incident's: recognised, named, and stopped early.

`out_of_space` turns the error, wherever it surfaces, into an `OutOfSpace` naming the file, the space left there
and the fix; `require_room` refuses a large write before it starts. Why, and how a run resumes:
docs/nightly.md#a-full-disk.
"""

from __future__ import annotations

import errno
import re
import shutil
from pathlib import Path

import duckdb

from faultline.errors import FaultlineError

_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
_DUCKDB_FULL = re.compile(r"no space left on device|disk quota exceeded|not enough space", re.IGNORECASE)
_QUOTED_PATH = re.compile(r"\"(/[^\"]+)\"|'(/[^']+)'")
RESUME = "then run the same command again: what was written before the disk filled is kept and skipped"


class OutOfSpace(FaultlineError):
    """No space left where Faultline writes: names the path and the space free there (and needed, when known)."""


def free_bytes(path: Path | str) -> int | None:
    """Bytes free to this user on the filesystem of `path` (or of its nearest existing parent)."""
    here = Path(path)
    while not here.exists() and here != here.parent:
        here = here.parent
    try:
        return shutil.disk_usage(here).free
    except OSError:
        return None


def size(n: int | None) -> str:
    """Bytes for a person: 3.2 MB."""
    if n is None:
        return "an unknown amount"
    if n < 1024:
        return f"{n} bytes"
    value = float(n)
    for unit in ("KB", "MB", "GB", "TB"):  # noqa: B007 - the unit the loop stops at is the one returned
        value /= 1024
        if value < 1024:
            break
    return f"{value:.1f} {unit}"


def out_of_space(exc: BaseException, where: Path | str | None = None) -> OutOfSpace | None:
    """`exc` as an `OutOfSpace` error when it (or an error it was raised from or while handling) says the disk
    is full; None otherwise. `where` names the file when the error does not."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OutOfSpace):
            return current
        path = _full_path(current)
        if path is not None:
            target = path or (str(where) if where else "")
            told = f"writing {target} ({size(free_bytes(target))} free there)" if target else f"({current})"
            return OutOfSpace(f"no space left {told}",
                              fix=f"free space on that filesystem (or move the file elsewhere), {RESUME}")
        current = current.__cause__ or current.__context__
    return None


def rollback(conn: duckdb.DuckDBPyConnection) -> None:
    """ROLLBACK the open transaction, if any: a COMMIT that failed (a full disk) has already ended it, and a
    ROLLBACK then would raise over the error that matters."""
    try:
        conn.execute("ROLLBACK")
    except duckdb.TransactionException as exc:
        if "no transaction is active" not in str(exc):
            raise


def require_room(folder: Path, needed: int, what: str, fix: str) -> None:
    """Refuse, before writing, `what` of `needed` bytes into `folder` when its filesystem has less free."""
    free = free_bytes(folder)
    if free is not None and free < needed:
        raise OutOfSpace(f"{what} needs {size(needed)} in {folder}, which has {size(free)} free", fix=fix)


def _full_path(exc: BaseException) -> str | None:
    """The file a disk-full error names ('' when it names none); None when `exc` is not one."""
    if isinstance(exc, OSError) and exc.errno in _ERRNOS:
        return str(exc.filename2 or exc.filename or "")  # a copy's error names its source first
    text = str(exc)
    if type(exc).__module__.startswith(("duckdb", "_duckdb")) and _DUCKDB_FULL.search(text):
        match = _QUOTED_PATH.search(text)
        return (match.group(1) or match.group(2)) if match else ""
    return None
