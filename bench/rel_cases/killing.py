"""Killing a Faultline command the way a crash does, and what it leaves behind: the helpers of the crash and
resource cases.

A crash is a SIGKILL of the command's own process only (the kernel's OOM killer, `kill -9`): no `finally`
runs, and the processes it started are not signalled. Whatever they are, they must end by themselves.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from rel_cases.common import FAULTLINE, REPO
from rel_cases.small_corpus import QUICK_ENV

ORPHAN_GRACE_S = 30.0  # a child that watches its parent notices within a second or two; a busy machine is slower


@dataclass
class Watched:
    """A command started with its output (stdout and stderr merged) read line by line as it comes."""

    process: subprocess.Popen[str]
    started: float
    lines: queue.Queue[str | None] = field(default_factory=queue.Queue)
    seen: list[str] = field(default_factory=list)

    def wait_for(self, marker: str, timeout: float) -> float | None:
        """Seconds since the start when a line containing `marker` came; None if the command ended first or
        `timeout` passed."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                continue
            if line is None:
                return None
            self.seen.append(line)
            if marker in line:
                return time.monotonic() - self.started
        return None

    def drain(self) -> str:
        """The output seen so far and what is still queued (call once the process ended)."""
        while True:
            try:
                line = self.lines.get_nowait()
            except queue.Empty:
                break
            if line is not None:
                self.seen.append(line)
        return "".join(self.seen)


def start(db: Path, *args: str, lancedb: Path | None = None, env: dict[str, str] | None = None) -> Watched:
    """Start `faultline --db DB [--lancedb DIR] ARGS` with its output unbuffered and read by a thread."""
    argv = [*FAULTLINE, "--db", str(db), *(["--lancedb", str(lancedb)] if lancedb else []), *args]
    process = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env={**os.environ, **QUICK_ENV, "PYTHONUNBUFFERED": "1", **(env or {})})
    watched = Watched(process, time.monotonic())

    def pump() -> None:
        for line in process.stdout:
            watched.lines.put(line)
        watched.lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return watched


def descendants(pid: int) -> list[psutil.Process]:
    """Every process below `pid` now (children, their children...)."""
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def crash(watched: Watched) -> list[psutil.Process]:
    """SIGKILL the command's process alone; the processes it had started, to be checked for orphans."""
    children = descendants(watched.process.pid)
    try:
        os.kill(watched.process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    watched.process.wait(timeout=60)
    return children


def orphans(children: list[psutil.Process], grace_s: float = ORPHAN_GRACE_S) -> list[str]:
    """The command lines of `children` still alive after `grace_s`; those are killed, so the next trial starts
    clean (the report names them)."""
    deadline = time.monotonic() + grace_s
    alive = [c for c in children if _alive(c)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.5)
        alive = [c for c in alive if _alive(c)]
    left = []
    for child in alive:
        try:
            left.append(" ".join(child.cmdline())[:160])
            child.kill()
        except psutil.NoSuchProcess:
            pass
    return left


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
