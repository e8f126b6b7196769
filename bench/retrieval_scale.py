"""Ticket retrieval at scale: index build, re-sync and hybrid search latency on a synthetic history of
10k-100k tickets, and the ANN vector index's recall against exact search. Product code path throughout.

The history is the ZooKeeper JIRA export replicated. Replica 0 is the export itself; replica r > 0 of a
ticket gets a new key (``ZOOKEEPER-<r*10000 + n>``), its dates shifted by up to two years either way,
and perturbed summary and description: 8 % of the words dropped and three pairs of neighbouring words
swapped, so every replica embeds to its own vector (near its original's, as real recurring tickets do).
Everything is deterministic by ``--seed``; a size's tickets are a prefix of every larger size's.
Comments and links are left out (the index reads neither).

Embedding is the cost: at the product's ``EMBED_CHARS`` (1000) MiniLM takes 30-85 ms a ticket on two
cores (the low end on an idle machine), one to two and a half hours for 100k. ``--embed-chars N``
makes the product embed only the first N characters (it patches ``EMBED_CHARS`` for indexed rows and
queries alike; the full-text index still gets the whole ticket). What that costs: build seconds are
for shorter texts, so each run first embeds ``CALIBRATION`` original tickets at both lengths and
reports ms per ticket for each (the full-length build is about build s x that ratio); vectors are
384 floats at any text length, so search latency and ANN recall are measured on vectors of the same
shape, from less text. The run in docs/dependencies.md used ``--embed-chars 300``.

Per size, in a scratch DuckDB + LanceDB: tickets go in through the ingest API, ``sync_index`` builds
the index from scratch (embedding included, model load excluded), then 1 % of the tickets get a new
description, are ingested again and ``sync_index`` re-syncs (a change past the ``--embed-chars`` cut is
rewritten with its stored vector, not embedded). Queries are original tickets (the
ZooKeeper duplicate queries first, then a seeded sample; summary + description + environment), each
run as ``search(mode="hybrid", k=10)`` with the product's history prefilter (``created_at`` before the
query's, not the query itself), timed wall clock with query embedding after a five-query warm-up.
When ``sync_index`` built an ANN vector index (``index_ann_min_rows``, e.g.
``FAULTLINE_INDEX_ANN_MIN_ROWS=5000`` for a quick run), the same queries also run as vector searches
through ``search(mode="vector")`` and as exact scans (``bypass_vector_index``, same filter), giving the
ANN's recall@10 against flat and both latencies.

    .venv/bin/python bench/retrieval_scale.py [--sizes 10000 --sizes 100000] [--queries 200] [--seed 7]
        [--embed-chars N] [--tickets FILE] [--pairs FILE] [--json] [--work DIR]
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from faultline.datasets import configured_path, require_paths  # noqa: E402
from faultline.offline import apply_offline_env  # noqa: E402

TOP_N = 10
WARMUP = 5
KEY_STRIDE = 10_000  # replica r of ZOOKEEPER-n is ZOOKEEPER-(r * KEY_STRIDE + n)
DROP_SHARE = 0.08
SWAPS = 3
SHIFT_DAYS = 730
CHANGED_SHARE = 0.01
CALIBRATION = 200
_KEPT = ("key", "project", "created", "resolved", "status", "resolution", "priority", "components",
         "versions", "fix_versions", "summary", "description", "environment")


def perturb(text: str | None, rng: random.Random) -> str | None:
    """``text`` with ``DROP_SHARE`` of its words dropped and ``SWAPS`` neighbour pairs swapped; lines kept."""
    if not text:
        return text
    lines = [line.split(" ") for line in text.split("\n")]
    lines = [[w for w in words if not w or rng.random() >= DROP_SHARE] or words[:1] for words in lines]
    long_lines = [words for words in lines if len(words) > 1]
    for _ in range(SWAPS if long_lines else 0):
        words = rng.choice(long_lines)
        i = rng.randrange(len(words) - 1)
        words[i], words[i + 1] = words[i + 1], words[i]
    return "\n".join(" ".join(words) for words in lines)


def _shift(stamp: str | None, days: float) -> str | None:
    return None if not stamp else (datetime.fromisoformat(stamp) + timedelta(days=days)).isoformat()


def replica(ticket: dict[str, Any], r: int, seed: int) -> dict[str, Any]:
    """Replica ``r`` of ``ticket`` (0 is the ticket itself), without comments and links."""
    out = {k: ticket.get(k) for k in _KEPT}
    if r == 0:
        return out
    project, number = ticket["key"].rsplit("-", 1)
    rng = random.Random(f"{seed}:{r}:{ticket['key']}")
    days = rng.uniform(-SHIFT_DAYS, SHIFT_DAYS)
    out.update(key=f"{project}-{r * KEY_STRIDE + int(number)}", created=_shift(ticket["created"], days),
               resolved=_shift(ticket.get("resolved"), days), summary=perturb(ticket.get("summary"), rng),
               description=perturb(ticket.get("description"), rng))
    return out


def history(originals: list[dict[str, Any]], size: int, seed: int) -> list[dict[str, Any]]:
    """The first ``size`` tickets of the replicated history: replica 0 of every ticket, then replica 1, ..."""
    out: list[dict[str, Any]] = []
    r = 0
    while len(out) < size:
        out.extend(replica(t, r, seed) for t in originals[: size - len(out)])
        r += 1
    return out


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")
    return path


def _ingest(conn: Any, settings: Any, path: Path) -> float:
    """Load ``path`` with the product's ingest API; returns seconds."""
    from faultline.ingest.api import ingest_paths

    started = time.perf_counter()
    report = ingest_paths(conn, settings, kind="tickets", paths=[path])
    errors = [f.error for f in report.files if f.status == "failed"]
    if errors or report.totals()["accepted"] == 0:
        raise SystemExit(f"ingest of {path} failed: {'; '.join(e or '' for e in errors) or 'no rows accepted'}")
    return time.perf_counter() - started


def _queries(originals: list[dict[str, Any]], pairs: Path, count: int, seed: int) -> list[dict[str, Any]]:
    """``count`` original tickets as queries: the duplicate-pair query tickets first, then a seeded sample."""
    with pairs.open(newline="", encoding="utf-8") as fh:
        first = {row["query_key"] for row in csv.DictReader(fh) if row["both_in_corpus"].strip() == "1"}
    rest = [t for t in originals if t["key"] not in first]
    random.Random(seed).shuffle(rest)
    chosen = [t for t in originals if t["key"] in first] + rest
    out = []
    for t in chosen[:count]:
        text = "\n".join(p for p in (t.get("summary"), t.get("description"), t.get("environment")) if p)
        created = datetime.fromisoformat(t["created"]).astimezone(UTC)
        where = f"created_at < timestamp '{created:%Y-%m-%d %H:%M:%S.%f}' AND id != '{t['key']}'"
        out.append({"key": t["key"], "text": text, "where": where})
    return out


def _ms(values: list[float]) -> dict[str, float]:
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return {"p50_ms": 1000 * statistics.median(values), "p95_ms": 1000 * cuts[94], "max_ms": 1000 * max(values)}


def _hybrid_latency(settings: Any, embedder: Any, queries: list[dict[str, Any]]) -> dict[str, Any]:
    from faultline.retrieval.search import search

    for q in queries[:WARMUP]:  # first-call costs (index caches, tokenizer), not timed
        search(settings, "tickets", q["text"], k=TOP_N, mode="hybrid", where=q["where"], embedder=embedder)
    seconds = []
    for q in queries:
        started = time.perf_counter()
        search(settings, "tickets", q["text"], k=TOP_N, mode="hybrid", where=q["where"], embedder=embedder)
        seconds.append(time.perf_counter() - started)
    return {"queries": len(queries), **_ms(seconds)}


def _ann_recall(settings: Any, embedder: Any, queries: list[dict[str, Any]]) -> dict[str, Any]:
    """Recall@10 of ``search(mode="vector")`` (ANN) against an exact scan with the same filter; latencies."""
    from faultline.retrieval.index import TABLE_NAMES, open_lancedb
    from faultline.retrieval.search import query_vector, search

    table = open_lancedb(settings).open_table(TABLE_NAMES["tickets"])
    overlaps, ann_s, flat_s = [], [], []
    for _i, q in enumerate(queries):
        started = time.perf_counter()
        ann = search(settings, "tickets", q["text"], k=TOP_N, mode="vector", where=q["where"], embedder=embedder)
        ann_s.append(time.perf_counter() - started)
        started = time.perf_counter()
        flat = (table.search(query_vector(embedder, q["text"]), vector_column_name="vector")
                .distance_type("cosine").where(q["where"], prefilter=True).bypass_vector_index()
                .limit(TOP_N).select(["id"]).to_arrow()["id"].to_pylist())
        flat_s.append(time.perf_counter() - started)
        if flat:
            overlaps.append(len({h.id for h in ann} & set(flat)) / len(flat))
    return {"recall@10": statistics.mean(overlaps), "queries": len(overlaps),
            "ann_vector_p50_ms": 1000 * statistics.median(ann_s[WARMUP:] or ann_s),
            "flat_vector_p50_ms": 1000 * statistics.median(flat_s[WARMUP:] or flat_s)}


def run_size(originals: list[dict[str, Any]], queries: list[dict[str, Any]], size: int, seed: int,
             work: Path, embedder: Any) -> dict[str, Any]:
    """Build, re-sync and query one history of ``size`` tickets in ``work``; returns its figures."""
    from faultline.config import Settings
    from faultline.db import connect
    from faultline.retrieval.index import TABLE_NAMES, open_lancedb, sync_index

    work.mkdir(parents=True, exist_ok=True)
    settings = Settings(duckdb_path=work / "bench.duckdb", lancedb_dir=work / "lancedb", progress=False)
    for stale in (settings.duckdb_path, settings.duckdb_path.with_suffix(".duckdb.wal")):
        stale.unlink(missing_ok=True)
    tickets = history(originals, size, seed)
    conn = connect(settings.duckdb_path)
    load_s = _ingest(conn, settings, _write_jsonl(work / "history.jsonl", tickets))
    build = sync_index(conn, settings, "tickets", embedder)

    rng = random.Random(f"{seed}:changes:{size}")
    changed = [dict(t, description=(perturb(t.get("description"), rng) or "") + " Seen again after the upgrade.")
               for t in rng.sample(tickets, max(1, round(CHANGED_SHARE * size)))]
    reload_s = _ingest(conn, settings, _write_jsonl(work / "changes.jsonl", changed))
    resync = sync_index(conn, settings, "tickets", embedder)
    conn.close()

    table = open_lancedb(settings).open_table(TABLE_NAMES["tickets"])
    vector_index = next((ix.index_type for ix in table.list_indices() if ix.columns == ["vector"]), None)
    result: dict[str, Any] = {
        "tickets": build.rows_total, "load_s": load_s, "build_s": build.seconds, "embedded": build.embedded,
        "changed": len(changed), "reload_s": reload_s, "resync_s": resync.seconds,
        "resync_embedded": resync.embedded, "vector_index": vector_index,
        "hybrid": _hybrid_latency(settings, embedder, queries),
    }
    result["ann"] = _ann_recall(settings, embedder, queries) if vector_index else None
    return result


def _set_embed_chars(chars: int) -> None:
    """Make the product embed the first ``chars`` characters of tickets and queries (``--embed-chars``)."""
    from faultline.retrieval import index, search

    index.EMBED_CHARS = search.EMBED_CHARS = chars


def _calibrate(embedder: Any, originals: list[dict[str, Any]], chars: list[int]) -> dict[str, float]:
    """Embedding ms per ticket for ``CALIBRATION`` original tickets, cut at each of ``chars``."""
    from faultline.retrieval.index import ticket_texts

    out = {}
    for limit in chars:
        _set_embed_chars(limit)
        texts = sorted((ticket_texts(t.get("summary"), t.get("description"), t.get("environment"),
                                     t.get("components")).embed for t in originals[:CALIBRATION]), key=len)
        started = time.perf_counter()
        embedder.embed(texts)
        out[str(limit)] = 1000 * (time.perf_counter() - started) / len(texts)
    return out


def run(tickets: Path, pairs: Path, sizes: list[int], n_queries: int, seed: int, work: Path,
        embed_chars: int | None = None) -> dict[str, Any]:
    """Every size in ``sizes`` (ascending) in its own folder under ``work``; returns the report object."""
    from faultline.config import Settings
    from faultline.retrieval.embed import Embedder
    from faultline.retrieval.index import EMBED_CHARS

    with tickets.open(encoding="utf-8") as fh:
        originals = [json.loads(line) for line in fh if line.strip()]
    if max(int(t["key"].rsplit("-", 1)[1]) for t in originals) >= KEY_STRIDE:
        raise SystemExit(f"ticket numbers reach {KEY_STRIDE}: replica keys would collide")
    queries = _queries(originals, pairs, n_queries, seed)
    settings = Settings(progress=False)
    embedder = Embedder(settings)
    _ = embedder.dim  # load the model outside every timing
    product_chars = EMBED_CHARS
    chars = embed_chars or product_chars
    calibration = _calibrate(embedder, originals, sorted({product_chars, chars}, reverse=True))
    _set_embed_chars(chars)
    report: dict[str, Any] = {
        "dataset": {"tickets": str(tickets), "originals": len(originals), "queries": len(queries), "seed": seed,
                    "perturbation": {"drop_share": DROP_SHARE, "swaps": SWAPS, "shift_days": SHIFT_DAYS}},
        "embedding": {"embed_chars": chars, "product_embed_chars": product_chars,
                      "calibration_ms_per_ticket": calibration},
        "settings": {"index_ann_min_rows": settings.index_ann_min_rows, "index_ann_nprobes": settings.index_ann_nprobes,
                     "index_ann_refine_factor": settings.index_ann_refine_factor,
                     "hybrid_vector_weight": settings.hybrid_vector_weight},
        "sizes": [],
    }
    for size in sorted(sizes):
        report["sizes"].append(run_size(originals, queries, size, seed, work / f"n{size}", embedder))
        (work / "report.json").write_text(json.dumps(report, indent=2))  # kept if a larger size never ends
    return report


def _print_report(report: dict[str, Any]) -> None:
    from faultline.cli.output import print_table

    d, s, e = report["dataset"], report["settings"], report["embedding"]
    print(f"Synthetic history from {d['originals']} ZooKeeper tickets (seed {d['seed']}); {d['queries']} hybrid "
          f"queries, k={TOP_N}, created_at prefilter; ANN from {s['index_ann_min_rows']} rows "
          f"(nprobes {s['index_ann_nprobes']}, refine x{s['index_ann_refine_factor']})")
    rates = ", ".join(f"{ms:.0f} ms at {c} chars" for c, ms in e["calibration_ms_per_ticket"].items())
    print(f"embedded text: first {e['embed_chars']} characters (product: {e['product_embed_chars']}); "
          f"embedding per ticket: {rates}")
    rows = []
    for r in report["sizes"]:
        ann = r["ann"]
        rows.append((r["tickets"], f"{r['build_s']:.0f}", f"{r['resync_s']:.1f} ({r['resync_embedded']})",
                     f"{r['hybrid']['p50_ms']:.0f}", f"{r['hybrid']['p95_ms']:.0f}", r["vector_index"] or "flat",
                     f"{ann['recall@10']:.3f}" if ann else "-",
                     f"{ann['ann_vector_p50_ms']:.0f} / {ann['flat_vector_p50_ms']:.0f}" if ann else "-"))
    print_table(["tickets", "build s", "re-sync s (embedded)", "hybrid p50 ms", "p95 ms", "vector index",
                 "ANN recall@10", "vector p50 ms ANN / flat"], rows)
    print("build: ingest excluded, embedding included; re-sync after 1 % of the tickets changed")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tickets", type=Path, default=configured_path("tickets", "zookeeper.jsonl"))
    parser.add_argument("--pairs", type=Path, default=configured_path("tickets", "zookeeper_duplicates.csv"))
    parser.add_argument("--sizes", type=int, action="append", help="history sizes (repeat; default 10000 and 100000)")
    parser.add_argument("--queries", type=int, default=200, help="timed queries per size (at least 20)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--embed-chars", type=int, help="embed the first N characters (default: the product's)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--work", type=Path, help="scratch folder, kept (default: a temporary one)")
    args = parser.parse_args(argv)
    require_paths(parser, args, "tickets", "pairs")
    sizes = args.sizes or [10_000, 100_000]
    if min(sizes) < 100 or args.queries < 20 or (args.embed_chars is not None and args.embed_chars < 100):
        parser.error("--sizes must be at least 100, --queries at least 20 and --embed-chars at least 100")
    apply_offline_env()
    if args.work:
        report = run(args.tickets, args.pairs, sizes, args.queries, args.seed, args.work, args.embed_chars)
    else:
        with tempfile.TemporaryDirectory(prefix="faultline-bench-") as tmp:
            report = run(args.tickets, args.pairs, sizes, args.queries, args.seed, Path(tmp), args.embed_chars)
    if args.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        _print_report(report)


if __name__ == "__main__":
    main()
