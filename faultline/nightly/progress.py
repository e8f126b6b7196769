"""Where the nightly flow reports each finished unit: a progress bar or plain lines, chosen by the caller.

Reporters are process-local callables (not flow parameters, which Prefect records and serialises).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

Reporter = Callable[[str, int, int], None]  # (message, done, total)
_reporter: Reporter | None = None


def set_reporter(reporter: Reporter | None) -> None:
    """Install (or remove, with None) the process's reporter."""
    global _reporter
    _reporter = reporter


def report(message: str, done: int, total: int) -> None:
    """Tell the reporter one more unit finished (nothing happens without one)."""
    if _reporter is not None:
        _reporter(message, done, total)


def stage(message: str) -> None:
    """Tell the reporter a new stage began (total 0: nothing to count yet)."""
    report(message, 0, 0)


def line_reporter(message: str, done: int, total: int) -> None:
    """One line per finished unit on stdout (non-interactive runs, logs, tests); stages as their own line."""
    print(f"[{done}/{total}] {message}" if total else f"-- {message}", file=sys.stdout, flush=True)
