"""The marts refresh on a growing history: seconds, DuckDB's peak memory and the process's peak RSS.

Copies a warehouse the nightly filled (default `var/demo/faultline.duckdb`, written by `faultline demo`) and
replicates every per-incident row N times under new incident ids (`<id>-rK`; the ids of tables keyed by their
own id get the same suffix), as if N nights like it had been stored; the collector's log lines are not copied
(no mart reads them). Then, each in a fresh process while a thread samples `duckdb_memory()` every 20 ms:
`refresh_marts(full=True)`, every mart rebuilt from the whole history (what the first night after an upgrade
does), and then a night's refresh: the original warehouse's incidents marked in `marts_stale`, as if tonight
had analysed them again, and `refresh_marts` as the nightly calls it (the incremental marts rebuild those
incidents' rows only, the others the whole history). Figures are ratios within one run.

    .venv/bin/python bench/marts.py [--warehouse FILE] [--replicas 1 --replicas 10 --replicas 100] [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

_CHILD = """
import json, sys, threading, time
import duckdb
from faultline.db import keep_checkpoints_incremental
from faultline.marts import refresh_marts
def hwm_mb():
    # this process's own peak (VmHWM); ru_maxrss would also count the parent's, inherited through the spawn
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) // 1024 for line in status if line.startswith("VmHWM:"))
conn = duckdb.connect(sys.argv[1])
keep_checkpoints_incremental(conn)  # as the nightly's writer, which refreshes the marts
peak, done = [0.0], threading.Event()
def sample():
    probe = conn.cursor()
    while not done.is_set():
        used = probe.execute("SELECT sum(memory_usage_bytes) FROM duckdb_memory()").fetchone()[0] or 0
        peak[0] = max(peak[0], used / 1e6)
        time.sleep(0.02)
thread = threading.Thread(target=sample, daemon=True)
thread.start()
started = time.perf_counter()
results = refresh_marts(conn, full=sys.argv[2] == "full")
seconds = time.perf_counter() - started
done.set(); thread.join()
print(json.dumps({"seconds": round(seconds, 2), "duckdb_peak_mb": round(peak[0]),
                  "peak_rss_mb": hwm_mb(),
                  "mart_rows": sum(r.rows for r in results), "failed_tests": sum(len(r.failed_tests) for r in results),
                  "incremental_marts": sum(r.incremental for r in results)}))
"""


def replicate_history(path: Path, copies: int) -> int:
    """Add `copies - 1` renamed copies of every per-incident row of the warehouse at `path`; returns how many
    incidents it then holds analyses of."""
    import duckdb

    from faultline.db import keep_checkpoints_incremental, migrate

    conn = duckdb.connect(str(path))
    try:
        migrate(conn)  # a warehouse from before the newest migrations
        keep_checkpoints_incremental(conn)  # appended copies: never rewrite the stored rows
        tables = [r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.columns WHERE column_name = 'incident_id' AND "
            "table_schema = 'main' AND table_name NOT LIKE 'mart_%' AND table_name NOT IN ('log_lines', "
            "'marts_stale')").fetchall()]
        for table in tables:
            key = [r[0] for r in conn.execute(
                "SELECT unnest(constraint_column_names) FROM duckdb_constraints() WHERE table_name = ? AND "
                "constraint_type = 'PRIMARY KEY'", [table]).fetchall()]
            own_ids = [] if not key or "incident_id" in key else key
            for k in range(1, copies):
                renamed = ", ".join([f"incident_id || '-r{k}' AS incident_id",
                                     *(f'"{c}" || \'-r{k}\' AS "{c}"' for c in own_ids)])
                conn.execute(f'INSERT INTO "{table}" SELECT * REPLACE ({renamed}) FROM "{table}" '
                             "WHERE incident_id IS NOT NULL AND NOT regexp_matches(incident_id, '-r[0-9]+$')")
            conn.execute("CHECKPOINT")
        return int(conn.execute("SELECT count(*) FROM (SELECT incident_id FROM astra_rounds UNION "
                                "SELECT incident_id FROM submissions)").fetchone()[0])
    finally:
        conn.close()


def run_once(warehouse: Path, copies: int, work: Path) -> dict[str, Any]:
    target = work / f"x{copies}.duckdb"
    shutil.copyfile(warehouse, target)
    started = time.perf_counter()
    incidents = replicate_history(target, copies)
    built = time.perf_counter() - started
    whole = _refresh(target, "full", copies)
    night = mark_one_night(target)
    return {"replicas": copies, "incidents": incidents, "replicate_s": round(built, 1), "full": whole,
            "night": {"incidents": night, **_refresh(target, "night", copies)}}


def mark_one_night(path: Path) -> int:
    """Mark the original warehouse's analysed incidents stale, as a night that analysed them again would;
    how many."""
    import duckdb

    conn = duckdb.connect(str(path))
    try:
        conn.execute("INSERT INTO marts_stale SELECT DISTINCT incident_id, 'astra', now() FROM astra_rounds "
                     "WHERE NOT regexp_matches(incident_id, '-r[0-9]+$')")
        return int(conn.execute("SELECT count(DISTINCT incident_id) FROM marts_stale").fetchone()[0])
    finally:
        conn.close()


def _refresh(target: Path, mode: str, copies: int) -> dict[str, Any]:
    child = subprocess.run([sys.executable, "-c", _CHILD, str(target), mode], capture_output=True, text=True,
                           cwd=REPO, check=False)
    if child.returncode:
        raise SystemExit(f"the {mode} refresh at x{copies} failed:\n{child.stderr[-3000:]}")
    return json.loads(child.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warehouse", type=Path, default=REPO / "var" / "demo" / "faultline.duckdb",
                        help="a warehouse a nightly filled (default: the demo's)")
    parser.add_argument("--replicas", type=int, action="append", help="history copies (default: 1, 10, 100)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if not args.warehouse.is_file():
        raise SystemExit(f"no warehouse at {args.warehouse}: run `.venv/bin/faultline demo` first, or pass "
                         "--warehouse FILE (a warehouse the nightly has filled)")
    runs = []
    with tempfile.TemporaryDirectory(prefix="faultline-bench-marts-") as tmp:
        for copies in args.replicas or [1, 10, 100]:
            runs.append(run_once(args.warehouse, copies, Path(tmp)))
    if args.json:
        print(json.dumps({"warehouse": str(args.warehouse), "runs": runs}, indent=2))
        return
    for r in runs:
        for mode in ("full", "night"):
            m = r[mode]
            what = "every mart rebuilt" if mode == "full" else f"a night of {m['incidents']} incidents"
            print(f"x{r['replicas']} ({r['incidents']} analysed incidents), {what}: {m['seconds']} s, DuckDB peak "
                  f"{m['duckdb_peak_mb']} MB, process peak RSS {m['peak_rss_mb']} MB, {m['mart_rows']} mart rows, "
                  f"{m['failed_tests']} failed mart test(s), {m['incremental_marts']} mart(s) incremental")
    if len(runs) > 1:
        first, last = runs[0], runs[-1]
        for mode in ("full", "night"):
            a, b = first[mode], last[mode]
            per_k = (b["peak_rss_mb"] - a["peak_rss_mb"]) / max(1, last["incidents"] - first["incidents"]) * 1000
            print(f"{mode}: x{last['replicas']} vs x{first['replicas']}: "
                  f"seconds ratio {b['seconds'] / a['seconds']:.2f}, "
                  f"peak RSS ratio {b['peak_rss_mb'] / a['peak_rss_mb']:.2f}; about {per_k:.0f} MB of peak RSS "
                  "per 1,000 incidents of history")


if __name__ == "__main__":
    main()
