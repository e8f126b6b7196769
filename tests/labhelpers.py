"""Helpers shared by the network-lab tests (they need root and leave nothing behind)."""

from __future__ import annotations

import os
import subprocess

import pytest


def require_root() -> None:
    """Fail (never skip) when not root: the lab builds real network namespaces."""
    if os.geteuid() != 0:
        pytest.fail("lab tests need root (network namespaces); run pytest as root")


def lab_namespaces() -> list[str]:
    """Every `fl-*` network namespace on the machine."""
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith("fl-")]


def root_routes() -> str:
    """The root namespace's routing tables, to prove the lab never touches them."""
    return subprocess.run(["ip", "route", "show", "table", "all"], capture_output=True, text=True).stdout


def wait_until_no_lab(timeout: float = 180.0) -> None:
    """Only one lab fits on a machine (shared `fl-` prefix): wait for another one to finish."""
    import time

    deadline = time.monotonic() + timeout
    while lab_namespaces() and time.monotonic() < deadline:
        time.sleep(1)
    assert not lab_namespaces(), f"another lab is still up: {sorted(lab_namespaces())}"
