"""Parsing for the `cgroup_cpu` probe: the cgroup v1 `cpu` group of each process, and each group's cap.

The probe reads, from the root namespace (inside a lab namespace `ip netns exec` hides
/sys/fs/cgroup), `grep -H` over `/proc/<pid>/cgroup` of the device's processes and then over the
`cpu.cfs_quota_us`, `cpu.cfs_period_us` and `cpu.stat` files of the groups found. Group paths come
from the kernel but are still checked (`safe_group`) before they are put on a command line.
"""

from __future__ import annotations

import re

from faultline.network import allowlist
from faultline.network.records import CgroupCpu, CgroupCpuGroup

CPU_HIERARCHY = "/sys/fs/cgroup/cpu"  # where this machine mounts the v1 cpu controller
GROUP_FILES = ("cpu.cfs_quota_us", "cpu.cfs_period_us", "cpu.stat")
# "/proc/123/cgroup:4:cpu:/path" (or "cpu,cpuacct" where the controllers are co-mounted)
_CPU_LINE = re.compile(r"/proc/(\d+)/cgroup:\d+:(?:[^:]*,)?cpu(?:,[^:]*)?:(/.*)")
_SAFE_PATH = re.compile(r"/(?:[A-Za-z0-9_.@+-]+(?:/[A-Za-z0-9_.@+-]+)*)?")
CPU_LINE_PATTERN = allowlist.CPU_LINE_PATTERN  # the grep -E pattern selecting those lines


def cpu_groups(stdout: str) -> dict[int, str]:
    """pid -> cpu cgroup path ("/" = the root group) from `grep -H` over /proc/<pid>/cgroup files."""
    found = {}
    for line in stdout.splitlines():
        match = _CPU_LINE.fullmatch(line.strip())
        if match:
            found[int(match.group(1))] = match.group(2)
    return found


def safe_group(path: str) -> bool:
    """A plain absolute group path: no '..' or '.', no spaces, quotes or ':' (safe in argv and in parsing)."""
    return bool(_SAFE_PATH.fullmatch(path)) and not {".", ".."} & set(path.split("/"))


def group_dir(path: str) -> str:
    """The group's directory under the cpu hierarchy."""
    return CPU_HIERARCHY if path == "/" else CPU_HIERARCHY + path


def group_files(paths: list[str]) -> list[str]:
    """The files to read for each group, in order."""
    return [f"{group_dir(p)}/{name}" for p in paths for name in GROUP_FILES]


def parse_cgroup_cpu(device: str, members: dict[int, str], stdout: str, error: str | None = None) -> CgroupCpu:
    """The record: one entry per group holding the device's processes, with the values read for it."""
    values: dict[str, dict[str, int]] = {}
    for line in stdout.splitlines():
        fname, sep, text = line.partition(":")
        if not sep:
            continue
        folder, _, name = fname.rpartition("/")
        words = text.split()
        try:
            if name == "cpu.stat" and len(words) == 2:
                values.setdefault(folder, {})[words[0]] = int(words[1])
            elif name in ("cpu.cfs_quota_us", "cpu.cfs_period_us") and len(words) == 1:
                values.setdefault(folder, {})[name] = int(words[0])
        except ValueError:
            continue
    groups = []
    for path in sorted(set(members.values())):
        got = values.get(group_dir(path), {})
        quota, period = got.get("cpu.cfs_quota_us"), got.get("cpu.cfs_period_us")
        limit = round(100.0 * quota / period, 2) if quota is not None and quota > 0 and period else None
        groups.append(CgroupCpuGroup(
            path=path, pids=sorted(pid for pid, p in members.items() if p == path),
            cfs_quota_us=quota, cfs_period_us=period, cpu_limit_pct=limit,
            nr_periods=got.get("nr_periods"), nr_throttled=got.get("nr_throttled"),
            throttled_time_ns=got.get("throttled_time")))
    return CgroupCpu(device=device, hierarchy=CPU_HIERARCHY, groups=groups, error=error)
