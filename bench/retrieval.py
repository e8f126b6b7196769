"""ZooKeeper duplicate-ticket retrieval benchmark, run through the product's own code path.

Tickets go into a scratch DuckDB via the ingest API, the ticket index is built with
``sync_index`` and every query is a ``search`` call. Ground truth: the pairs of
``zookeeper_duplicates.csv`` with both tickets in the corpus. Against leakage
(docs/data.md) a query is the ticket's summary + description + environment only (no comments, links or
resolution), and it searches only tickets created strictly before it (a Lance prefilter on
``created_at``), never itself. Reports Recall@1/5/10 and MRR@10 (reciprocal rank of the first
duplicate within the top 10, 0 when absent) per mode, plus index and query timings (queries/s
after a two-query warm-up, query embedding included; wall clock, so other load on the machine
shows up in it).

    .venv/bin/python bench/retrieval.py [--tickets FILE] [--pairs FILE] [--json] [--work DIR]
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from faultline.datasets import configured_path, require_paths  # noqa: E402
from faultline.offline import apply_offline_env  # noqa: E402

TOP_N = 10
CUTOFFS = (1, 5, 10)
# (label, mode, fusion): the three modes (hybrid with the product's default fusion), plus
# reciprocal-rank fusion for comparison.
RUNS: tuple[tuple[str, str, str], ...] = (
    ("vector", "vector", "score"), ("text", "text", "score"), ("hybrid", "hybrid", "score"),
    ("hybrid, RRF k=60", "hybrid", "rrf"),
)


def _load_tickets(conn: Any, settings: Any, path: Path) -> str:
    """Load the JSONL into the warehouse with the product's ingest API; returns its name."""
    from faultline.ingest.api import ingest_paths

    report = ingest_paths(conn, settings, kind="tickets", paths=[path])
    errors = [f.error for f in report.files if f.status == "failed"]
    if errors or report.totals()["accepted"] == 0:
        raise SystemExit(f"ingest of {path} failed: {'; '.join(e or '' for e in errors) or 'no rows accepted'}")
    return "faultline.ingest.api.ingest_paths"


def _queries(tickets: Path, pairs: Path) -> list[dict[str, Any]]:
    """One query per query ticket: leakage-free text, creation time and its duplicate(s)."""
    targets: dict[str, set[str]] = {}
    with pairs.open(newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            if row["both_in_corpus"].strip() == "1":
                targets.setdefault(row["query_key"], set()).add(row["duplicate_key"])
    records: dict[str, dict[str, Any]] = {}
    with tickets.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                r = json.loads(line)
                if r["key"] in targets:
                    records[r["key"]] = r
    out = []
    for key in sorted(targets, key=lambda k: int(k.rsplit("-", 1)[1])):
        r = records[key]
        text = "\n".join(p for p in (r.get("summary"), r.get("description"), r.get("environment")) if p)
        created = datetime.fromisoformat(r["created"]).astimezone(timezone.utc)
        out.append({"key": key, "text": text, "created": created, "targets": targets[key]})
    return out


def _evaluate(settings: Any, embedder: Any, queries: list[dict[str, Any]], mode: str, fusion: str) -> dict[str, Any]:
    from faultline.retrieval.search import search

    ranks: list[int | None] = []
    started = time.perf_counter()
    for q in queries:
        where = (f"created_at < timestamp '{q['created']:%Y-%m-%d %H:%M:%S.%f}' "
                 f"AND id != '{q['key']}'")
        hits = search(settings, "tickets", q["text"], k=TOP_N, mode=mode, where=where,  # type: ignore[arg-type]
                      embedder=embedder, fusion=fusion)  # type: ignore[arg-type]
        ranks.append(next((h.rank for h in hits if h.id in q["targets"]), None))
    seconds = time.perf_counter() - started
    n = len(queries)
    result: dict[str, Any] = {f"recall@{c}": sum(1 for r in ranks if r and r <= c) / n for c in CUTOFFS}
    result[f"mrr@{TOP_N}"] = sum(1.0 / r for r in ranks if r) / n
    result["queries_per_s"] = n / seconds
    result["ranks"] = dict(zip((q["key"] for q in queries), ranks))
    return result


def run(tickets: Path, pairs: Path, work: Path) -> dict[str, Any]:
    """Build the index in ``work`` and evaluate every mode; returns the report object."""
    from faultline.config import Settings
    from faultline.db import connect
    from faultline.retrieval.embed import Embedder
    from faultline.retrieval.index import sync_index

    settings = Settings(duckdb_path=work / "bench.duckdb", lancedb_dir=work / "lancedb", progress=False)
    shutil.rmtree(settings.lancedb_dir, ignore_errors=True)  # always measure a build from scratch
    for stale in (settings.duckdb_path, settings.duckdb_path.with_suffix(".duckdb.wal")):
        stale.unlink(missing_ok=True)
    conn = connect(settings.duckdb_path)
    started = time.perf_counter()
    loader = _load_tickets(conn, settings, tickets)
    load_s = time.perf_counter() - started
    embedder = Embedder(settings)
    started = time.perf_counter()
    _ = embedder.dim  # load the model outside the index timing
    model_s = time.perf_counter() - started
    stats = sync_index(conn, settings, "tickets", embedder)
    resync = sync_index(conn, settings, "tickets", embedder)
    queries = _queries(tickets, pairs)
    _evaluate(settings, embedder, queries[:2], "hybrid", "score")  # warm-up: first-call costs, not timed
    modes = {label: _evaluate(settings, embedder, queries, mode, fusion) for label, mode, fusion in RUNS}
    return {
        "dataset": {"tickets": str(tickets), "pairs": str(pairs), "indexed": stats.rows_total,
                    "queries": len(queries), "loader": loader},
        "protocol": {"top_n": TOP_N, "query": "summary + description + environment",
                     "filter": "created_at < query created_at AND id != query",
                     "hybrid_vector_weight": settings.hybrid_vector_weight},
        "timings": {"load_s": load_s, "model_load_s": model_s, "index_build_s": stats.seconds,
                    "embedded": stats.embedded, "resync_s": resync.seconds, "resync_embedded": resync.embedded},
        "modes": modes,
    }


def _print_report(report: dict[str, Any]) -> None:
    from faultline.cli.output import print_table

    d, t = report["dataset"], report["timings"]
    print(f"ZooKeeper duplicates: {d['queries']} queries over {d['indexed']} tickets "
          f"(loaded with {d['loader']}); MRR over the top {report['protocol']['top_n']}")
    rows = [(label, *(f"{m[f'recall@{c}']:.3f}" for c in CUTOFFS), f"{m[f'mrr@{TOP_N}']:.3f}",
             f"{m['queries_per_s']:.1f}") for label, m in report["modes"].items()]
    print_table(["mode", "R@1", "R@5", "R@10", f"MRR@{TOP_N}", "queries/s"], rows)
    print(f"load {t['load_s']:.1f} s, model load {t['model_load_s']:.1f} s, index build "
          f"{t['index_build_s']:.1f} s ({t['embedded']} embedded), re-sync {t['resync_s']:.2f} s "
          f"({t['resync_embedded']} embedded)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tickets", type=Path, default=configured_path("tickets", "zookeeper.jsonl"))
    parser.add_argument("--pairs", type=Path, default=configured_path("tickets", "zookeeper_duplicates.csv"))
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--work", type=Path, help="scratch folder (default: a temporary one)")
    args = parser.parse_args(argv)
    require_paths(parser, args, "tickets", "pairs")
    apply_offline_env()
    if args.work:
        args.work.mkdir(parents=True, exist_ok=True)
        report = run(args.tickets, args.pairs, args.work)
    else:
        with tempfile.TemporaryDirectory(prefix="faultline-bench-") as tmp:
            report = run(args.tickets, args.pairs, Path(tmp))
    if args.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        _print_report(report)


if __name__ == "__main__":
    main()
