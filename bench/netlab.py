"""Network lab: build-to-healthy time, teardown time and FRR memory for every scenario and size.

For each (scenario, size): `lab.up` (namespaces, links, FRR, then polled readiness: routing
converged and host reachability), the RSS of the lab's daemons, then `lab.down`. The phases are the
lab's own timings (seconds from the first command): network built, daemons started, routing
converged, reachability confirmed (= healthy). Teardown is `lab.down`'s wall time.

Large labs can overflow the host-global ARP table, so the bench raises
net.ipv4.neigh.default.gc_thresh1/2/3 for a lab that needs it and puts the old values back after it.

Root only, and only while no other lab (`fl-*` namespace) is up.

    sudo .venv/bin/python bench/netlab.py [--scenarios a,b] [--sizes s,m,l] [--timeout 240] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from faultline.config import Settings  # noqa: E402
from faultline.netlab import lab, teardown  # noqa: E402
from faultline.netlab.builder import raise_neigh_limits, restore_neigh_limits  # noqa: E402
from faultline.netlab.scenarios import SIZES, build_topology, scenario_names  # noqa: E402

LAB_DIR = Path(f"/tmp/faultline-bench-lab-{os.getpid()}")  # parents world-searchable (FRR runs as frr)


def _rss_mb(pids: list[int]) -> float:
    total_kb = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total_kb += int(line.split()[1])
        except OSError:
            pass
    return round(total_kb / 1024, 1)


def measure(scenario: str, size: str, timeout: float) -> dict[str, object]:
    """Build one lab, measure it, tear it down; errors are reported in the row, not raised."""
    topo = build_topology(scenario, size)
    row: dict[str, object] = {"scenario": scenario, "size": size, "nodes": len(topo.nodes),
                              "routers": len(topo.routers()), "links": len(topo.links)}
    settings = Settings(lab_dir=LAB_DIR, progress=False)
    old_limits = raise_neigh_limits(topo)
    row["arp_limits_raised"] = old_limits is not None
    try:
        try:
            state = lab.up(scenario, size, settings, timeout=timeout)
            row.update(state.timings)
            row["frr_rss_mb"] = _rss_mb([p.pid for p in state.processes])
            row["daemons"] = len(state.processes)
        except Exception as exc:  # noqa: BLE001 - a failed build is a result of the benchmark
            row["error"] = str(exc)[:300]
        t0 = time.monotonic()
        lab.down(settings)
        row["teardown_s"] = round(time.monotonic() - t0, 2)
    finally:
        restore_neigh_limits(old_limits)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", default=",".join(scenario_names()))
    parser.add_argument("--sizes", default=",".join(SIZES))
    parser.add_argument("--timeout", type=float, default=240.0, help="readiness deadline per lab (s)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("bench/netlab.py needs root (network namespaces)", file=sys.stderr)
        return 2
    if teardown.lab_namespaces():
        print("another lab is up (fl-* namespaces exist); bring it down first", file=sys.stderr)
        return 2
    rows = []
    for scenario in args.scenarios.split(","):
        for size in args.sizes.split(","):
            rows.append(measure(scenario, size, args.timeout))
            if not args.json:
                _print_row(rows[-1])
    if args.json:
        print(json.dumps(rows, indent=2))
    return 1 if any("error" in r for r in rows) else 0


def _print_row(row: dict[str, object]) -> None:
    if "error" in row:
        print(f"{row['scenario']:<24} {row['size']}  nodes {row['nodes']:>4}  FAILED: {row['error']}")
        return
    print(f"{row['scenario']:<24} {row['size']}  nodes {row['nodes']:>4}  routers {row['routers']:>3}  "
          f"network {row['network_s']:>5}s  daemons {row['daemons_started_s']:>5}s  "
          f"routing {row['routing_converged_s']:>5}s  healthy {row['healthy_s']:>6}s  "
          f"teardown {row['teardown_s']:>5}s  FRR RSS {row['frr_rss_mb']:>7} MB", flush=True)


if __name__ == "__main__":
    sys.exit(main())
