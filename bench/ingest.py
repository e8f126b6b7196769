"""Ingest throughput: log lines/s for a generated syslog file, tickets/s for the ZooKeeper export, and the
project's sample corpus (about 2,400 small files) ingested with each file validated on its own and with
small files validated together.

Each phase runs in its own process so its peak RSS is its own. Prints a table, or JSON with --json.

    .venv/bin/python bench/ingest.py [--lines 1000000] [--tickets FILE] [--corpus data/sample] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from faultline.datasets import configured_path, require_paths  # noqa: E402

_HOSTS = [f"{role}{i}" for role in ("edge", "core", "leaf", "spine", "srv") for i in range(1, 9)]
_PROGS = ["bgpd", "ospfd", "zebra", "sshd", "kernel", "dnsmasq", "nginx", "systemd", "cron"]
_MSGS = [
    "%ADJCHANGE: neighbor 10.{a}.{b}.1 in vrf default Down Hold Timer Expired",
    "%ADJCHANGE: neighbor 10.{a}.{b}.1 in vrf default Up",
    "Accepted publickey for ops from 192.168.{a}.{b} port {p} ssh2",
    "eth{a}: link {state}",
    "DHCPACK(eth0) 10.{a}.{b}.{c} 3c:22:fb:{a:02x}:{b:02x}:{c:02x} host-{c}",
    "query[A] web{a}.local from 10.{a}.{b}.{c}",
    "connect() failed (111: Connection refused) while connecting to upstream 10.{a}.{b}.{c}:8080",
    "Started session {p} of user ops.",
    "nbr 10.{a}.{b}.2 state changed from Full to Down: KillNbr",
]


def generate_syslog(path: Path, lines: int, seed: int = 7) -> None:
    """Write `lines` RFC 3164 lines with a PRI, varied hosts, programs and messages."""
    rng = random.Random(seed)
    with path.open("w") as out:
        for i in range(lines):
            second = i // 40
            stamp = (f"Nov {1 + second // 86400 % 28:2d} {second // 3600 % 24:02d}:"
                     f"{second // 60 % 60:02d}:{second % 60:02d}")
            pri = 8 * rng.choice((3, 4, 16, 23)) + rng.choice((2, 3, 4, 5, 6, 6, 6, 7))
            msg = rng.choice(_MSGS).format(a=rng.randrange(256), b=rng.randrange(256), c=rng.randrange(256),
                                           p=rng.randrange(1024, 65535), state=rng.choice(("up", "down")))
            out.write(f"<{pri}>{stamp} {rng.choice(_HOSTS)} {rng.choice(_PROGS)}[{rng.randrange(100, 9999)}]: {msg}\n")


def _phase(kind: str, path: str, db: str) -> None:
    """Run one ingest in this process and print its figures as JSON (child mode)."""
    from faultline.offline import apply_offline_env

    apply_offline_env()
    from faultline import db as warehouse
    from faultline.config import Settings
    from faultline.ingest.api import ingest_paths

    settings = Settings(duckdb_path=Path(db), progress=False, log_default_year=2026)
    conn = warehouse.open_warehouse(settings)
    # Warm-up: a tiny file of the same kind loads the libraries (Great Expectations alone takes
    # ~3 s to import), so the timed run measures throughput, not start-up.
    warm = Path(db).with_suffix(".warmup" + Path(path).suffix)
    warm.write_text(Path(path).read_text().split("\n", 1)[0] + "\n")
    start = time.perf_counter()
    ingest_paths(warehouse.connect(":memory:"), settings, kind, [warm])
    startup = time.perf_counter() - start
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    report = ingest_paths(conn, settings, kind, [Path(path)])
    seconds = time.perf_counter() - start
    totals = report.totals()
    table = {"tickets": "tickets", "logs": "log_lines"}[kind]
    stored = conn.execute(f"SELECT count(*) FROM {table} WHERE source_file = ?",
                          [str(Path(path).resolve())]).fetchone()[0]
    print(json.dumps({
        "kind": kind, "records": totals["records_in"], "accepted": totals["accepted"],
        "quarantined": totals["quarantined"], "stored": stored, "seconds": round(seconds, 3),
        "per_second": round(totals["records_in"] / seconds, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "rss_before_mb": round(rss_before / 1024, 1), "startup_seconds": round(startup, 2),
    }))


def _corpus_phase(mode: str, path: str, db: str) -> None:
    """Ingest a corpus of incident folders (child mode): `one` validates file by file, `together` in batches."""
    from faultline.offline import apply_offline_env

    apply_offline_env()
    from faultline import db as warehouse
    from faultline.config import Settings
    from faultline.ingest import api
    from faultline.ingest.incidents import incident_folders, ingest_incidents

    if mode == "one":
        api.TOGETHER_FILES = 1  # every flush holds one file: one Great Expectations run per file, as before
    settings = Settings(duckdb_path=Path(db), progress=False, log_default_year=2026)
    warm = Path(db).with_suffix(".warmup.log")
    warm.write_text("Jun 14 15:16:01 r1 sshd[5]: ok\n")
    api.ingest_paths(warehouse.connect(":memory:"), settings, "logs", [warm])  # imports, first validation
    conn = warehouse.open_warehouse(settings)
    roots = [Path(path) / part for part in ("history", "backlog")]
    start = time.perf_counter()
    report = ingest_incidents(conn, settings, roots)
    seconds = time.perf_counter() - start
    files = len(report.files)
    print(json.dumps({"kind": f"corpus/{mode}", "records": sum(f.records_in for f in report.files),
                      "stored": sum(f.accepted for f in report.files), "files": files,
                      "incidents": len(incident_folders(roots)), "seconds": round(seconds, 3),
                      "per_second": round(files / seconds, 1), "startup_seconds": 0.0,
                      "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}))


def _run_phase(kind: str, path: Path, db: Path) -> dict:
    done = subprocess.run([sys.executable, __file__, "--phase", kind, str(path), str(db)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{kind} phase failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=1_000_000, help="syslog lines to generate")
    parser.add_argument("--tickets", type=Path, default=configured_path("tickets", "zookeeper.jsonl"),
                        help="JIRA-style ticket export (default: $FAULTLINE_DATA_DIR/tickets/zookeeper.jsonl)")
    parser.add_argument("--corpus", type=Path, default=REPO / "data" / "sample",
                        help="a corpus with history/ and backlog/ incident folders (default: data/sample)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--phase", nargs=3, metavar=("KIND", "PATH", "DB"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        if args.phase[0].startswith("corpus/"):
            _corpus_phase(args.phase[0].split("/", 1)[1], *args.phase[1:])
        else:
            _phase(*args.phase)
        return
    require_paths(parser, args, "tickets")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        log = work / "generated.log"
        start = time.perf_counter()
        generate_syslog(log, args.lines)
        gen_s = time.perf_counter() - start
        logs = _run_phase("logs", log, work / "logs.duckdb")
        tickets = _run_phase("tickets", args.tickets, work / "tickets.duckdb")
        one = _run_phase("corpus/one", args.corpus, work / "one.duckdb")
        together = _run_phase("corpus/together", args.corpus, work / "together.duckdb")
        result = {"log_file_mb": round(log.stat().st_size / 2**20, 1), "generate_seconds": round(gen_s, 2),
                  "logs": logs, "tickets": tickets, "corpus_one_by_one": one, "corpus_together": together,
                  "corpus_speedup": round(one["seconds"] / together["seconds"], 2)}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"generated {args.lines:,} syslog lines ({result['log_file_mb']} MB) in {result['generate_seconds']} s")
    print(f"{'phase':<16} {'records':>10} {'stored':>10} {'seconds':>8} {'per second':>12} {'peak RSS MB':>12} "
          f"{'start-up s':>10}")
    for row in (logs, tickets, one, together):
        print(f"{row['kind']:<16} {row['records']:>10,} {row['stored']:>10,} {row['seconds']:>8.2f} "
              f"{row['per_second']:>12,.0f} {row['peak_rss_mb']:>12.0f} {row['startup_seconds']:>10.2f}")
    print(f"sample corpus: {together['files']:,} files of {together['incidents']} incidents; validated together "
          f"{result['corpus_speedup']}x faster than file by file (per second: files)")
    print("seconds/per second: the timed ingest after a one-record warm-up; start-up s: that warm-up "
          "(library imports, first validation)")


if __name__ == "__main__":
    main()
