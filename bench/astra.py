"""ASTRA benchmarks: report quality on the sample corpus, and the pre-fetch on ZooKeeper duplicates.

1. **Sample backlog** (``data/sample``: 48 resolved history incidents, 52 open backlog incidents):
   every backlog incident analysed by the deterministic analyst through the product's path
   (`faultline.astra.batch`: ingest, index, `analyse`, store, score), then scored with
   `faultline.astra.evaluate`: accuracy rubric distribution and the shares >= 3 and >= 4 over faulty
   incidents, healthy controls answered "no fault", fabricated identifiers (share of reports with
   one, and pooled), claims with verified evidence, per-round means and deltas, seconds per incident.
   Goals (issue 7): accuracy >= 3 for >= 90 % of faulty incidents, fabricated identifiers in < 1 % of
   reports, >= 95 % of claims verified, < 10 s per incident.
2. **ZooKeeper duplicates** (``$FAULTLINE_DATA_DIR/tickets``, docs/data.md): the same queries as ``bench/retrieval.py``
   (summary + description + environment of the query ticket), run through the product's pre-fetch
   with history = tickets resolved before the query ticket was created. Recall@5 and MRR@10 of the
   plain hybrid order (the pre-fetch's candidates) against the reranked order (the batch survivors).
   A duplicate still open when the query ticket was filed cannot be found by either (counted).

    .venv/bin/python bench/astra.py [--corpus DIR] [--tickets FILE] [--pairs FILE] [--skip-sample]
                                    [--skip-duplicates] [--rounds N] [--json] [--work DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from faultline.datasets import configured_path, require_paths  # noqa: E402
from faultline.offline import apply_offline_env  # noqa: E402

GOALS = {"share_accuracy_ge3": 0.90, "reports_with_fabricated": 0.01, "verified_share": 0.95,
         "seconds_per_incident": 10.0}
TOP_N = 10


def sample_backlog(corpus: Path, work: Path, rounds: int) -> dict[str, Any]:
    """Part 1: the deterministic analyst over the corpus's backlog, scored."""
    from faultline.astra.batch import evaluate_incidents, load_corpus
    from faultline.astra.evaluate import summarise
    from faultline.config import Settings
    from faultline.db import connect

    settings = Settings(duckdb_path=work / "sample.duckdb", lancedb_dir=work / "sample-lancedb", progress=False)
    conn = connect(settings.duckdb_path)
    started = time.perf_counter()
    ids = load_corpus(conn, settings, corpus)
    load_s = time.perf_counter() - started
    batch = evaluate_incidents(conn, settings, ids, max_rounds=rounds)
    summary = summarise(batch.scores).model_dump(mode="json")
    conn.close()
    met = {
        "share_accuracy_ge3": (summary["share_accuracy_ge3"] or 0) >= GOALS["share_accuracy_ge3"],
        "reports_with_fabricated": (summary["reports_with_fabricated"] or 0) < GOALS["reports_with_fabricated"],
        "verified_share": (summary["verified_share"] or 0) >= GOALS["verified_share"],
        "seconds_per_incident": (summary["seconds_per_incident"] or 1e9) < GOALS["seconds_per_incident"],
    }
    return {"corpus": str(corpus), "evaluated": len(ids), "failures": batch.failures, "load_s": round(load_s, 1),
            "summary": summary, "goals": GOALS, "goals_met": met, "by_family": by_family(corpus, batch.scores),
            "incidents": [{"incident_id": s.incident_id, "accuracy": s.accuracy, "rule": s.accuracy_rule,
                           "fabricated": s.fabricated, "rounds": len(s.rounds), "elapsed_s": s.elapsed_s}
                          for s in batch.scores]}


def by_family(corpus: Path, scores: list[Any]) -> dict[str, dict[str, Any]]:
    """Faulty incidents per fault family of their (first) true label: n and share with accuracy >= 3.

    Reads each incident folder's ground_truth.json (the benchmark may; the analysis never does).
    """
    from faultline.truth.taxonomy import taxonomy

    tax = taxonomy()
    groups: dict[str, list[int]] = {}
    for score in scores:
        path = next((p for p in (corpus / "backlog" / score.incident_id / "ground_truth.json",
                                  corpus / score.incident_id / "ground_truth.json") if p.is_file()), None)
        if path is None or not score.is_faulty:
            continue
        labels = json.loads(path.read_text())["v1"].get("root_cause_names") or []
        family = tax.families.get(labels[0], "?") if labels else "?"
        groups.setdefault(family, []).append(score.accuracy)
    return {f: {"faulty": len(v), "share_accuracy_ge3": round(sum(a >= 3 for a in v) / len(v), 3)}
            for f, v in sorted(groups.items())}


def _rank(ids: list[str], targets: set[str]) -> int | None:
    return next((i for i, t in enumerate(ids[:TOP_N], start=1) if t in targets), None)


def duplicates(tickets: Path, pairs: Path, work: Path) -> dict[str, Any]:
    """Part 2: reranked pre-fetch vs plain hybrid search on the duplicate pairs."""
    from bench.astra_fault_area import MemoEmbedder
    from bench.retrieval import _queries
    from faultline.astra.incident import load_incident
    from faultline.astra.prefetch import prefetch
    from faultline.config import Settings
    from faultline.db import connect
    from faultline.ingest.api import ingest_paths
    from faultline.retrieval.embed import Embedder
    from faultline.retrieval.index import sync_index

    settings = Settings(duckdb_path=work / "zk.duckdb", lancedb_dir=work / "zk-lancedb", progress=False)
    conn = connect(settings.duckdb_path)
    ingest_paths(conn, settings, kind="tickets", paths=[tickets])
    embedder = Embedder(settings)
    sync_index(conn, settings, "tickets", embedder)
    embedder = MemoEmbedder(embedder)
    resolved = dict(conn.execute("SELECT ticket_id, resolved_at FROM tickets").fetchall())
    ranks: dict[str, dict[str, int | None]] = {"hybrid": {}, "reranked": {}}
    reachable: set[str] = set()
    started = time.perf_counter()
    queries = _queries(tickets, pairs)
    for q in queries:
        incident = load_incident(conn, q["key"], with_components=False)
        if any(resolved.get(t) is not None and resolved[t] < q["created"] for t in q["targets"]):
            reachable.add(q["key"])
        pre = prefetch(settings, conn, incident, embedder=embedder)
        ranks["hybrid"][q["key"]] = _rank(pre.hybrid_ids, q["targets"])
        ranks["reranked"][q["key"]] = _rank(pre.reranked_ids, q["targets"])
    seconds = time.perf_counter() - started
    conn.close()
    n = len(queries)
    out: dict[str, Any] = {"queries": n, "duplicate_resolved_before_query": len(reachable),
                           "seconds_per_query": round(seconds / n, 3) if n else None, "orders": {}}
    for name, r in ranks.items():
        out["orders"][name] = {"recall@5": sum(1 for v in r.values() if v and v <= 5) / n,
                               f"mrr@{TOP_N}": sum(1.0 / v for v in r.values() if v) / n,
                               "recall@5_reachable": (sum(1 for k in reachable if r[k] and r[k] <= 5) / len(reachable)
                                                      if reachable else None), "ranks": r}
    h, rr = out["orders"]["hybrid"], out["orders"]["reranked"]
    out["rerank_not_worse"] = rr["recall@5"] >= h["recall@5"] and rr[f"mrr@{TOP_N}"] >= h[f"mrr@{TOP_N}"]
    return out


def _print(report: dict[str, Any]) -> None:
    from faultline.cli.output import print_table

    part = report.get("sample")
    if part:
        s = part["summary"]
        print(f"Sample backlog ({part['corpus']}): {s['incidents']} scored ({s['faulty']} faulty, {s['healthy']} "
              f"healthy), {len(part['failures'])} failed; load + index {part['load_s']} s")
        print_table(["accuracy", "faulty incidents"], sorted(s["accuracy_distribution"].items()))
        fmt = lambda v: "-" if v is None else f"{100 * v:.1f}%"  # noqa: E731
        print_table(["figure", "value", "goal", "met"], [
            ["accuracy >= 3 (faulty)", fmt(s["share_accuracy_ge3"]), ">= 90%", part["goals_met"]["share_accuracy_ge3"]],
            ["accuracy >= 4 (faulty)", fmt(s["share_accuracy_ge4"]), "", ""],
            ["healthy answered 'no fault'", fmt(s["healthy_correct"]), "", ""],
            ["reports with a fabricated identifier", fmt(s["reports_with_fabricated"]), "< 1%",
             part["goals_met"]["reports_with_fabricated"]],
            ["fabricated identifiers (pooled)", fmt(s["fabricated_identifier_rate"]), "", ""],
            ["claims with verified evidence", fmt(s["verified_share"]), ">= 95%", part["goals_met"]["verified_share"]],
            ["mean completeness", fmt(s["mean_completeness"]), "", ""],
            ["seconds per incident (mean/max)", f"{s['seconds_per_incident'] or 0:.2f} / {s['max_seconds'] or 0:.2f}",
             "< 10 s", part["goals_met"]["seconds_per_incident"]],
            ["accuracy delta last-first round (mean)", f"{s['mean_accuracy_delta'] or 0:+.2f}", "", ""],
            ["judge delta last-first round (mean)", f"{s['mean_judge_delta'] or 0:+.2f}", "", ""],
        ])
        print_table(["fault family (truth)", "faulty", "accuracy >= 3"],
                    [[f, v["faulty"], fmt(v["share_accuracy_ge3"])] for f, v in part["by_family"].items()])
        print_table(["round", "incidents", "accuracy", "completeness", "judge"],
                    [[r["round"], r["incidents"], f"{r['accuracy']:.2f}", f"{r['completeness']:.2f}",
                      "-" if r["judge"] is None else f"{r['judge']:.2f}"] for r in s["per_round"]])
    dup = report.get("duplicates")
    if dup:
        print(f"ZooKeeper duplicates: {dup['queries']} queries ({dup['duplicate_resolved_before_query']} with a "
              f"duplicate resolved before the query), {dup['seconds_per_query']} s per pre-fetch")
        print_table(["order", "Recall@5", f"MRR@{TOP_N}", "Recall@5 (duplicate resolved before)"],
                    [[k, f"{v['recall@5']:.3f}", f"{v[f'mrr@{TOP_N}']:.3f}", f"{v['recall@5_reachable'] or 0:.3f}"]
                     for k, v in dup["orders"].items()])
        print(f"reranked pre-fetch not worse than plain hybrid: {dup['rerank_not_worse']}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=REPO / "data" / "sample")
    parser.add_argument("--tickets", type=Path, default=configured_path("tickets", "zookeeper.jsonl"))
    parser.add_argument("--pairs", type=Path, default=configured_path("tickets", "zookeeper_duplicates.csv"))
    parser.add_argument("--rounds", type=int, default=5, help="most judge/refine rounds per incident")
    parser.add_argument("--skip-sample", action="store_true")
    parser.add_argument("--skip-duplicates", action="store_true")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--work", type=Path, help="scratch folder (default: a temporary one)")
    args = parser.parse_args(argv)
    if not args.skip_duplicates:
        require_paths(parser, args, "tickets", "pairs")
    apply_offline_env()

    def run(work: Path) -> dict[str, Any]:
        report: dict[str, Any] = {}
        if not args.skip_sample:
            report["sample"] = sample_backlog(args.corpus, work, args.rounds)
        if not args.skip_duplicates:
            report["duplicates"] = duplicates(args.tickets, args.pairs, work)
        return report

    if args.work:
        args.work.mkdir(parents=True, exist_ok=True)
        report = run(args.work)
    else:
        with tempfile.TemporaryDirectory(prefix="faultline-bench-") as tmp:
            report = run(Path(tmp))
    print(json.dumps(report, indent=2, default=str) if args.json else "", end="\n" if args.json else "")
    if not args.json:
        _print(report)


if __name__ == "__main__":
    main()
