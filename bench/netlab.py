"""Network lab: build-to-healthy time, teardown time and FRR memory for every scenario and size.

For each (scenario, size): `lab.up` (namespaces, links, FRR, then polled readiness: routing
converged and host reachability), the RSS of the lab's daemons, then `lab.down`. The phases are the
lab's own timings (seconds from the first command): network built, daemons started, routing
converged, reachability confirmed (= healthy). Teardown is `lab.down`'s wall time.

Large labs can overflow the host-global ARP table, so the bench raises
net.ipv4.neigh.default.gc_thresh1/2/3 for a lab that needs it and puts the old values back after it.

`--faults` runs the fault pass instead (sizes default to s): per (scenario, size) the lab comes up
once, then every implemented label that applies there is injected on a seeded target, verified
(artifact + symptom through the probe API) and recovered until the lab is healthy again. A row
records inject+verify seconds, recover-to-healthy seconds and the error of a failed step; a lab
left unhealthy is rebuilt so the next label starts clean. The verified-injection rate is
verified / attempted, overall and per label.

Root only, and only while no other lab (`fl-*` namespace) is up.

    sudo .venv/bin/python bench/netlab.py [--scenarios a,b] [--sizes s,m,l] [--timeout 240] [--json]
    sudo .venv/bin/python bench/netlab.py --faults [--labels a,b] [--seed 0] [--scenarios ...] [--json]
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
from faultline.lab import faults, teardown  # noqa: E402
from faultline.lab import lifecycle as lab  # noqa: E402
from faultline.lab.builder import raise_neigh_limits, restore_neigh_limits  # noqa: E402
from faultline.lab.scenarios import SIZES, build_topology, scenario_names  # noqa: E402

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


def fault_pass(scenario: str, size: str, labels: list[str], seed: int, timeout: float) -> list[dict[str, object]]:
    """One lab, every applicable label injected, verified and recovered in turn; failures are rows."""
    topo = build_topology(scenario, size)
    todo = [label for label in labels if faults.applicable(label, topo)]
    settings = Settings(lab_dir=LAB_DIR, progress=False)
    rows: list[dict[str, object]] = []
    try:
        state = lab.up(scenario, size, settings, timeout=timeout)
    except Exception as exc:  # noqa: BLE001 - a lab that does not come up fails every label of it
        return [{"scenario": scenario, "size": size, "label": label, "verified": False,
                 "error": f"lab up: {exc}"[:300]} for label in todo]
    try:
        for index, label in enumerate(todo):
            row: dict[str, object] = {"scenario": scenario, "size": size, "label": label, "verified": False}
            t0 = time.monotonic()
            try:
                rec = faults.inject(state, label, seed=seed)
                row["target"] = rec.target
                faults.verify(state, lab.probe_context(state, settings), rec.id)
                row["verified"] = True
            except Exception as exc:  # noqa: BLE001 - a fault that did not land is a result
                row["error"] = f"{type(exc).__name__}: {exc}"[:300]
            row["inject_verify_s"] = round(time.monotonic() - t0, 2)
            try:  # also after a failed inject: waits until the lab is healthy, whatever was left behind
                row["recover_s"] = faults.recover(state, timeout=60)["healthy_s"]
            except Exception as exc:  # noqa: BLE001 - then rebuild, so the next label starts clean
                row["recover_error"] = f"{type(exc).__name__}: {exc}"[:300]
                lab.down(settings)
                try:
                    state = lab.up(scenario, size, settings, timeout=timeout)
                    row["rebuilt"] = True
                except Exception as up_exc:  # noqa: BLE001 - the labels left cannot run on this scenario
                    rows.append(row)
                    return rows + [{"scenario": scenario, "size": size, "label": rest, "verified": False,
                                    "error": f"lab rebuild: {up_exc}"[:300]} for rest in todo[index + 1:]]
            rows.append(row)
            print(_fault_line(row), file=sys.stderr, flush=True)
    finally:
        lab.down(settings)
    return rows


def fault_summary(rows: list[dict[str, object]]) -> dict[str, object]:
    """Verified / attempted, overall and per label."""
    per_label: dict[str, dict[str, int]] = {}
    for row in rows:
        count = per_label.setdefault(str(row["label"]), {"attempted": 0, "verified": 0})
        count["attempted"] += 1
        count["verified"] += bool(row["verified"])
    verified = sum(bool(r["verified"]) for r in rows)
    return {"attempted": len(rows), "verified": verified, "rate": round(verified / len(rows), 3) if rows else None,
            "per_label": dict(sorted(per_label.items()))}


def _fault_line(row: dict[str, object]) -> str:
    status = "ok" if row["verified"] else "FAIL"
    extra = "; ".join(str(row[k]) for k in ("error", "recover_error") if k in row)
    return (f"{row['scenario']:<24} {row['size']}  {row['label']:<34} {row.get('target', '-'):<16} {status:<4} "
            f"inject+verify {row.get('inject_verify_s', '-'):>6}s  recover {row.get('recover_s', '-'):>6}s"
            f"{'  ' + extra if extra else ''}")


def _print_fault_matrix(rows: list[dict[str, object]]) -> None:
    scenarios = sorted({f"{r['scenario']}/{r['size']}" for r in rows})
    cells = {(str(r["label"]), f"{r['scenario']}/{r['size']}"): r for r in rows}
    print(f"\ninject+verify/recover-to-healthy seconds; - = label does not apply\n{'label':<34} "
          + " ".join(f"{s:<26}" for s in scenarios))
    for label in sorted({str(r["label"]) for r in rows}):
        out = []
        for s in scenarios:
            r = cells.get((label, s))
            out.append("-" if r is None else
                       f"{'ok' if r['verified'] else 'FAIL'} "
                       f"{r.get('inject_verify_s', '-')}/{r.get('recover_s', '-')}s")
        print(f"{label:<34} " + " ".join(f"{c:<26}" for c in out))
    failed = [r for r in rows if not r["verified"] or "recover_error" in r]
    if failed:
        print("\nfailures:")
        for r in failed:
            print("  " + _fault_line(r))
    summary = fault_summary(rows)
    print(f"\nverified injections: {summary['verified']}/{summary['attempted']} ({summary['rate']})")
    for label, count in summary["per_label"].items():  # type: ignore[union-attr]
        print(f"  {label:<34} {count['verified']}/{count['attempted']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", default=",".join(scenario_names()))
    parser.add_argument("--sizes", default=None, help="default s,m,l (build pass) or s (--faults)")
    parser.add_argument("--timeout", type=float, default=240.0, help="readiness deadline per lab (s)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument("--faults", action="store_true", help="run the fault pass instead of the build pass")
    parser.add_argument("--labels", default=",".join(_implemented()), help="fault labels for --faults "
                        "(default: every label the catalogue marks implemented)")
    parser.add_argument("--seed", type=int, default=0, help="seed for every fault's target (--faults)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("bench/netlab.py needs root (network namespaces)", file=sys.stderr)
        return 2
    if teardown.lab_namespaces():
        print("another lab is up (fl-* namespaces exist); bring it down first", file=sys.stderr)
        return 2
    if args.faults:
        return run_faults(args.scenarios.split(","), (args.sizes or "s").split(","), args.labels.split(","),
                          args.seed, args.timeout, args.json)
    args.sizes = args.sizes or ",".join(SIZES)
    rows = []
    for scenario in args.scenarios.split(","):
        for size in args.sizes.split(","):
            rows.append(measure(scenario, size, args.timeout))
            if not args.json:
                _print_row(rows[-1])
    if args.json:
        print(json.dumps(rows, indent=2))
    return 1 if any("error" in r for r in rows) else 0


def run_faults(scenarios: list[str], sizes: list[str], labels: list[str], seed: int, timeout: float,
               as_json: bool) -> int:
    """The fault pass over every (scenario, size); exit 1 when some injection was not verified."""
    rows = [row for scenario in scenarios for size in sizes
            for row in fault_pass(scenario, size, labels, seed, timeout)]
    if as_json:
        print(json.dumps({"rows": rows, "summary": fault_summary(rows)}, indent=2))
    else:
        _print_fault_matrix(rows)
    return 0 if all(r["verified"] for r in rows) else 1


def _implemented() -> list[str]:
    from faultline.nika.labels import catalogue

    return sorted(i.label for i in catalogue() if i.status == "implemented" and i.label in faults.FAULTS)


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
