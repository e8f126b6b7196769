"""CPU caps for fault helper processes: cgroup v1 `cpu` groups made and joined from the root side.

Groups are `faultline_web_<lab prefix><fault id>`; a helper joins its group in a root-namespace shell before it
execs into the namespace, so it never runs a moment uncapped (docs/lab.md#cgroup-v1-from-the-root-side).
"""

from __future__ import annotations

import time
from pathlib import Path

from faultline.lab.faults.base import FaultError

CPU_ROOT = Path("/sys/fs/cgroup/cpu")
PREFIX = "faultline_web_"  # only groups made here (other faults name theirs differently)
PERIOD_US = 100_000


def create(name: str, cpu_pct: int, lab_prefix: str = "") -> Path:
    """A cpu cgroup capped at `cpu_pct` percent of one CPU; FaultError when cgroup v1 cpu is missing.

    `lab_prefix` starts the name: cgroups are machine-wide, fault ids only unique within a lab.
    """
    if not (CPU_ROOT / "cgroup.procs").exists():
        raise FaultError(f"no cgroup v1 cpu controller at {CPU_ROOT}", fix="mount the cpu controller (cgroup v1)")
    sweep(lab_prefix)
    group = CPU_ROOT / f"{PREFIX}{lab_prefix}{name.removeprefix(PREFIX)}"
    group.mkdir(exist_ok=True)
    (group / "cpu.cfs_period_us").write_text(str(PERIOD_US))
    (group / "cpu.cfs_quota_us").write_text(str(PERIOD_US * cpu_pct // 100))
    return group


def exec_in(group: Path, namespace: str, argv: list[str]) -> list[str]:
    """A command that joins `group`, then execs `argv` in `namespace` (same PID throughout)."""
    script = 'g=$1; ns=$2; shift 2; echo $$ > "$g/cgroup.procs" && exec ip netns exec "$ns" "$@"'
    return ["sh", "-c", script, "sh", str(group), namespace, *argv]


def remove(group: Path, timeout: float = 3.0) -> None:
    """Delete `group` once empty (exiting processes leave it within moments); gone already is fine."""
    if not group.name.startswith(PREFIX) or group.parent != CPU_ROOT:
        raise FaultError(f"refusing to remove {group}: not a faultline cgroup")
    deadline = time.monotonic() + timeout
    while group.exists():
        try:
            group.rmdir()
        except OSError:
            if time.monotonic() >= deadline:
                raise FaultError(f"cgroup {group} still holds processes: {procs(group)}",
                                 fix="stop the fault's helper, then recover again") from None
            time.sleep(0.1)


def procs(group: Path) -> list[int]:
    """PIDs in `group` (empty when it does not exist)."""
    try:
        return [int(x) for x in (group / "cgroup.procs").read_text().split()]
    except OSError:
        return []


def sweep(lab_prefix: str = "") -> list[str]:
    """Remove empty groups of the lab with `lab_prefix` (left when it went down without recovering its faults)."""
    removed = []
    for group in CPU_ROOT.glob(f"{PREFIX}{lab_prefix}*"):
        if group.is_dir() and not procs(group):
            try:
                group.rmdir()
                removed.append(group.name)
            except OSError:
                pass
    return removed
