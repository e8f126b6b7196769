"""SADE over SSH against the same live lab over local netns exec: latency, connections, diagnosis time, answers.

Builds the lab with its management network (`lab up --mgmt`: OpenSSH in every node, the forced command in
front of every login), writes its inventory (`faultline lab inventory`) and measures, on one machine:

1. per-probe latency, SSH vs `ip netns exec` (median and p95 over `--repeat` calls of five probes);
2. a whole diagnosis of the healthy lab at sizes s and m: seconds, probes, and SSH connections opened,
   through the lab backend and through the SSH backend with pools of 1, 4 and 16 connections;
3. with `--suite NAME`: every incident of a corpus suite injected on the live lab one at a time and
   diagnosed through both backends (same network, same moment, no baseline, no ticket): the submissions
   side by side, and every incident whose answers differ.

Root only (the lab). Take the lab lock first: `flock /tmp/faultline-lab.lock .venv/bin/python bench/ssh_backend.py`.

    .venv/bin/python bench/ssh_backend.py [--scenario simple_bgp] [--sizes s m] [--pools 1 4 16]
        [--repeat 30] [--suite bench_s [--limit N] [--only ID ...] [--no-latency]] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from faultline.config import Settings  # noqa: E402


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def _inventory(settings: Settings, out: Path) -> Path:
    cli = [str(REPO / ".venv" / "bin" / "faultline"), "lab", "inventory", "--out", str(out)]
    env = {"FAULTLINE_LAB_DIR": str(settings.lab_dir), "FAULTLINE_LAB_PREFIX": settings.lab_prefix,
           "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
    subprocess.run(cli, check=True, env=env, capture_output=True)
    return out


def _diagnose(settings: Settings, net: Any, incident: str) -> Any:
    """SADE's unit on the network `net` (its caller closes it), without a ticket: the diagnosis."""
    from faultline.outcome import IncidentRef
    from faultline.sade.unit import run_sade

    ref = IncidentRef(incident_id=incident, ticket_id=incident)
    return run_sade(settings, ref, network=net, ticket="", on_error="score").diagnosis


def _answer(diag: Any) -> tuple:
    sub = diag.submission
    if sub is None:
        return ("no submission", diag.error or "")
    return (sub.v1.is_anomaly, tuple(sorted(sub.v1.faulty_devices)), tuple(sorted(sub.v1.root_cause_name)))


def _probe_plan(state: Any) -> list[tuple[str, dict]]:
    devices = state.devices()
    router = next(d.name for d in devices if d.role == "router")
    host = next(d.name for d in devices if d.role not in ("router", "switch"))
    return [("ip_addr", {"dev": router}), ("ip_route", {"dev": host}), ("processes", {"dev": host}),
            ("vtysh_show", {"dev": router, "command": "show ip route json"}), ("nft_ruleset", {"dev": router})]


def latency(lab_ctx: Any, ssh_ctx: Any, plan: list[tuple[str, dict]], repeat: int) -> list[dict]:
    """Median and p95 seconds per probe through each transport (interleaved, so drift hits both)."""
    from faultline.network.probes import run_probe

    rows = []
    for name, args in plan:
        times: dict[str, list[float]] = {"local": [], "ssh": []}
        for _ in range(repeat):
            for kind, ctx in (("local", lab_ctx), ("ssh", ssh_ctx)):
                t0 = time.perf_counter()
                out = run_probe(ctx, name, **args)
                times[kind].append(time.perf_counter() - t0)
                if getattr(out.record, "error", None):
                    raise SystemExit(f"{kind} {name} {args} failed: {out.record.error}")
        rows.append({"probe": name, "device": next(iter(args.values())),
                     **{f"{k}_median_ms": round(1000 * statistics.median(v), 1) for k, v in times.items()},
                     **{f"{k}_p95_ms": round(1000 * _pct(v, 0.95), 1) for k, v in times.items()},
                     "ratio": round(statistics.median(times["ssh"]) / statistics.median(times["local"]), 1)})
    return rows


def diagnoses(settings: Settings, inventory: Path, pools: list[int], incident: str) -> list[dict]:
    """One diagnosis through the lab backend, then one per SSH pool size."""
    from faultline.network.backends import NetworkTarget, open_backend

    rows = []
    runs: list[tuple[str, Any]] = [("lab", lambda: open_backend("lab", settings))]
    for size in pools:
        tuned = settings.model_copy(update={"ssh_pool_size": size})
        runs.append((f"ssh pool {size}",
                     lambda tuned=tuned: open_backend("ssh", tuned, NetworkTarget(inventory=inventory))))
    for name, make in runs:
        with make() as net:
            t0 = time.perf_counter()
            diag = _diagnose(settings, net, incident)
            took = time.perf_counter() - t0
            stats = getattr(net.ctx.runner, "stats", None)
            rows.append({"backend": name, "seconds": round(took, 2), "probes": diag.probe_calls,
                         "connections": stats.connections_opened if stats else None,
                         "max_open": stats.max_open if stats else None,
                         "failures": stats.failures if stats else None, "answer": list(map(str, _answer(diag)))})
    return rows


def compare_suite(settings: Settings, suite_name: str, limit: int | None, timeout: float,
                  only: list[str] | None = None) -> list[dict]:
    """Each incident of the suite (or those in `only`) on the live lab, diagnosed through both backends."""
    from faultline.corpus.spec import load_suite
    from faultline.lab import faults
    from faultline.lab import lifecycle as lab
    from faultline.network.backends import NetworkTarget, open_backend

    suite = load_suite(suite_name)
    specs = list(enumerate(suite.incidents))[:limit] if limit else list(enumerate(suite.incidents))
    if only:
        specs = [(i, spec) for i, spec in specs if f"{suite.suite}-{i + 1:03d}" in only]
    groups: dict[tuple[str, str], list] = {}
    for index, spec in specs:
        groups.setdefault((spec.scenario, spec.size), []).append((index, spec))
    rows = []
    for (scenario, size), members in groups.items():
        state = lab.up(scenario, size, settings, timeout=timeout, mgmt=True)
        try:
            ctx = lab.probe_context(state, settings)
            for index, spec in members:
                row: dict[str, Any] = {"incident": f"{suite.suite}-{index + 1:03d}", "scenario": scenario,
                                       "labels": [f.label for f in spec.faults] or ["healthy"]}
                try:
                    for n, fault in enumerate(spec.faults):
                        faults.inject(state, fault.label, fault.target, seed=spec.seed * 100 + n,
                                      mechanism=fault.mechanism)
                    if spec.faults:
                        faults.verify(state, ctx)
                    # written now: the readable files the lab backend lists are the ones present after injection
                    inventory = _inventory(settings, Path(tempfile.mkdtemp(prefix="fl-inv-")))
                    for name in ("lab", "ssh"):
                        with open_backend(name, settings, NetworkTarget(inventory=inventory)) as net:
                            t0 = time.perf_counter()
                            diag = _diagnose(settings, net, row["incident"])
                            row[name] = list(map(str, _answer(diag)))
                            row[f"{name}_flags"] = sorted({f"{f.kind}@{f.device}" for f in diag.flags})
                            row[f"{name}_probes"] = diag.probe_calls
                            row[f"{name}_s"] = round(time.perf_counter() - t0, 1)
                    row["same"] = row["lab"] == row["ssh"]
                    if row["same"]:  # the flags only matter for explaining a difference
                        row.pop("lab_flags"), row.pop("ssh_flags")
                except Exception as exc:  # noqa: BLE001 - one incident that does not verify is a row
                    row["error"] = f"{type(exc).__name__}: {exc}"[:300]
                finally:
                    if spec.faults:
                        try:
                            faults.recover(state, timeout=timeout)
                        except Exception as exc:  # noqa: BLE001
                            row["error"] = (row.get("error", "") + f"; recover: {exc}")[:300]
                rows.append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
        finally:
            lab.down(settings)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="simple_bgp")
    parser.add_argument("--sizes", nargs="+", default=["s", "m"])
    parser.add_argument("--pools", nargs="+", type=int, default=[1, 4, 16])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--suite", default=None, help="also compare both backends on this suite's incidents")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--only", nargs="+", default=None, help="only these incidents of --suite (e.g. bench-s-041)")
    parser.add_argument("--no-latency", action="store_true", help="skip parts 1 and 2 (with --suite)")
    parser.add_argument("--timeout", type=float, default=90.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    from faultline.lab import lifecycle as lab
    from faultline.network.backends import NetworkTarget, open_backend

    settings = Settings(lab_dir=Path(tempfile.mkdtemp(prefix="fl-bench-ssh-")), progress=False)
    report: dict[str, Any] = {"scenario": args.scenario, "latency": {}, "diagnosis": {}}
    for size in ([] if args.no_latency else args.sizes):
        state = lab.up(args.scenario, size, settings, timeout=args.timeout, mgmt=True)
        try:
            inventory = _inventory(settings, Path(tempfile.mkdtemp(prefix="fl-inv-")))
            if size == args.sizes[0]:
                with open_backend("ssh", settings, NetworkTarget(inventory=inventory)) as net:
                    report["latency"] = latency(lab.probe_context(state, settings), net.ctx, _probe_plan(state),
                                                args.repeat)
            report["diagnosis"][size] = diagnoses(settings, inventory, args.pools, f"healthy-{size}")
        finally:
            lab.down(settings)
    if args.suite:
        report["suite"] = compare_suite(settings, args.suite, args.limit, args.timeout, args.only)
    if args.json:
        print(json.dumps(report, indent=2))
        return
    if report["latency"]:
        _print_latency(report, args)
    if args.suite:
        _print_suite(report["suite"], args.suite)


def _print_latency(report: dict, args: argparse.Namespace) -> None:
    print(f"per-probe latency on {args.scenario} ({args.repeat} calls each), ms")
    print(f"{'probe':<12} {'device':<16} {'local p50':>9} {'local p95':>9} {'ssh p50':>8} {'ssh p95':>8} {'ratio':>6}")
    for r in report["latency"]:
        print(f"{r['probe']:<12} {r['device']:<16} {r['local_median_ms']:>9} {r['local_p95_ms']:>9} "
              f"{r['ssh_median_ms']:>8} {r['ssh_p95_ms']:>8} {r['ratio']:>6}")
    for size, rows in report["diagnosis"].items():
        print(f"\ndiagnosis of the healthy {args.scenario} lab, size {size}")
        print(f"{'backend':<12} {'seconds':>8} {'probes':>7} {'conns':>6} {'max open':>8} {'failed':>7}  answer")
        for r in rows:
            print(f"{r['backend']:<12} {r['seconds']:>8} {r['probes']:>7} {r['connections']!s:>6} "
                  f"{r['max_open']!s:>8} {r['failures']!s:>7}  {' '.join(r['answer'])}")


def _print_suite(rows: list[dict], suite: str) -> None:
    done = [r for r in rows if "same" in r]
    print(f"\n{suite}: {len(done)} incidents diagnosed both ways, {sum(r['same'] for r in done)} identical "
          f"submissions, {len(rows) - len(done)} not verified/failed")
    for r in rows:
        if not r.get("same", False):
            print(f"  {r['incident']} {','.join(r['labels'])}: lab={r.get('lab')} ssh={r.get('ssh')} "
                  f"{r.get('error', '')}")


if __name__ == "__main__":
    main()
