"""Finding and removing what a lab left behind: lab processes (by PID), namespaces, files.

Works from the state file when there is one and from the system alone (`ip netns list`,
`ip netns pids`) when there is not, e.g. after a crash.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from faultline.lab.namespaces import active_prefix, is_lab_namespace

# paths FRR and `ip netns exec` use per namespace when a pathspace or /etc/netns is involved
_PER_NS_DIRS = ("/etc/frr", "/var/run/frr", "/var/log/frr", "/etc/netns")


def all_namespaces() -> list[str]:
    """Every named network namespace on the machine, of any lab or none."""
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=30).stdout
    return sorted(line.split()[0] for line in out.splitlines() if line.strip())


def lab_namespaces(prefix: str | None = None) -> list[str]:
    """Every namespace of the lab with `prefix` (default: this process's lab); other labs' are never listed."""
    prefix = prefix or active_prefix()
    return [n for n in all_namespaces() if is_lab_namespace(n, prefix)]


def namespace_pids(namespace: str) -> list[int]:
    """PIDs of the processes whose network namespace is `namespace`."""
    out = subprocess.run(["ip", "netns", "pids", namespace], capture_output=True, text=True, timeout=30).stdout
    return [int(tok) for tok in out.split() if tok.isdigit()]


def alive(pid: int) -> bool:
    """True while the process runs; a zombie counts as dead (PID 1 here reaps lazily)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def comm(pid: int) -> str:
    """The process name, or "" when it is gone."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def kill_pids(pids: list[int], grace: float = 5.0) -> list[int]:
    """SIGTERM each PID, wait up to `grace` seconds, SIGKILL the rest; returns the PIDs signalled."""
    signalled = []
    for pid in pids:
        if alive(pid):
            try:
                os.kill(pid, signal.SIGTERM)
                signalled.append(pid)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + grace
    while any(alive(p) for p in signalled) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in signalled:
        if alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    return signalled


def delete_namespaces(namespaces: list[str]) -> None:
    """Delete namespaces (their veths, bridges, nft tables and qdiscs go with them)."""
    existing = set(subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split())
    todo = [ns for ns in namespaces if ns in existing]
    if todo:
        # -force: keep going past a namespace that vanished meanwhile
        subprocess.run(["ip", "-force", "-batch", "-"], input="".join(f"netns del {ns}\n" for ns in todo),
                       capture_output=True, text=True, timeout=120)


def per_namespace_paths(namespace: str) -> list[str]:
    """System paths that FRR or `ip netns exec` may have made for `namespace`."""
    return [f"{base}/{namespace}" for base in _PER_NS_DIRS]


def remove_paths(paths: list[str]) -> None:
    """Remove files or directories, ignoring the ones already gone."""
    for raw in paths:
        path = Path(raw)
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
