"""Parsing for the `cpu_usage` probe: two samples of /proc (grep -H output, one block per sample).

Each block holds `/proc/stat` (the first line, `cpu ...`, counts jiffies of every CPU; `cpuN` lines one per
CPU; `procs_running`), then `/proc/<pid>/stat` of every process of the device. A process's CPU share is its
utime + stime delta against the wall-clock jiffies of one CPU over the same interval.
"""

from __future__ import annotations

from faultline.network.records import CpuUsage, ProcessCpu

_STAT = "/proc/stat:"


def _blocks(stdout: str) -> list[list[str]]:
    blocks: list[list[str]] = []
    for line in stdout.splitlines():
        if line.startswith(_STAT + "cpu "):
            blocks.append([])
        if blocks:
            blocks[-1].append(line)
    return blocks


def _sample(lines: list[str]) -> tuple[int, int, int, int | None, dict[int, tuple[str, str, int]]]:
    """(total jiffies, idle jiffies, cpus, procs_running, {pid: (comm, state, utime + stime)})."""
    total = idle = cpus = 0
    running = None
    procs: dict[int, tuple[str, str, int]] = {}
    for line in lines:
        path, _, rest = line.partition(":")
        if path == "/proc/stat":
            words = rest.split()
            if words and words[0] == "cpu":
                values = [int(x) for x in words[1:9]]
                total, idle = sum(values), values[3] + values[4]  # idle + iowait
            elif words and words[0].startswith("cpu") and words[0][3:].isdigit():
                cpus += 1
            elif words and words[0] == "procs_running":
                running = int(words[1])
        elif path.startswith("/proc/") and path.endswith("/stat"):
            left, close = rest.find("("), rest.rfind(")")
            fields = rest[close + 2:].split()
            if left < 0 or close < left or len(fields) < 13:
                continue
            procs[int(rest[:left])] = (rest[left + 1:close], fields[0], int(fields[11]) + int(fields[12]))
    return total, idle, cpus, running, procs


def parse_cpu_usage(device: str, stdout: str, interval_s: float, error: str | None = None) -> CpuUsage:
    """The two samples' deltas; an error (and no processes) when there are not two samples."""
    blocks = _blocks(stdout)
    if len(blocks) < 2:
        return CpuUsage(device=device, interval_s=interval_s, processes=[],
                        error=error or f"expected two samples of /proc, got {len(blocks)}")
    t1, i1, _, _, p1 = _sample(blocks[0])
    t2, i2, cpus, running, p2 = _sample(blocks[1])
    span = t2 - t1
    if span <= 0 or cpus <= 0:
        return CpuUsage(device=device, interval_s=interval_s, cpus=cpus or None, running=running, processes=[],
                        error=error or "the CPU counters did not advance between the samples")
    per_cpu = span / cpus  # jiffies one CPU had over the interval
    rows = [ProcessCpu(pid=pid, comm=comm, state=state, cpu_pct=round(100.0 * (used - p1[pid][2]) / per_cpu, 1))
            for pid, (comm, state, used) in sorted(p2.items()) if pid in p1]
    return CpuUsage(device=device, interval_s=interval_s, cpus=cpus, busy_pct=round(100.0 * (1 - (i2 - i1) / span), 1),
                    running=running, processes=rows, error=error)
