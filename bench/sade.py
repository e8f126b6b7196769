"""SADE on recorded lab incidents: the phase-gated deterministic policy next to the flat baseline.

For each corpus folder (default: the sample backlog and history; add a freshly generated suite, e.g. the
`bench_s|m|l` suites written by `faultline corpus generate`) and each method: detection accuracy
(healthy controls included), localization F1, RCA F1 (exact labels), NIKA v2 joint F1, no-submission
rate, median and p90 probe calls (device-level probes asked of the network; the reachability sweep counts
as one), median seconds per incident on the snapshot backend — overall and per size — and every incident
the gated policy got wrong, with what it answered instead. `--no-baseline` hides the recorded healthy
baselines (the situation on a live network or an MCP server).

    .venv/bin/python bench/sade.py [--corpus DIR ...] [--no-baseline] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from faultline.sade.evaluate import evaluate_corpus  # noqa: E402
from faultline.sade.scoring import summarize  # noqa: E402

METHODS = ("sade", "flat")


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def run(corpus: Path, baseline: bool = True) -> dict[str, Any]:
    per_method: dict[str, Any] = {}
    misses = []
    for method in METHODS:
        evaluated = list(evaluate_corpus(corpus, method=method, baseline=baseline))
        scores = [e.score for e in evaluated]
        probes = [e.diagnosis.probe_calls for e in evaluated]
        seconds = [e.diagnosis.elapsed_s for e in evaluated]
        overall = summarize(scores)[0].model_dump() if scores else {}
        by_size = {s.group: s.model_dump() for s in summarize(scores, group_by="size")}
        per_size_probes = {}
        for size in by_size:
            sized = [e.diagnosis.probe_calls for e in evaluated if e.score.size == size]
            per_size_probes[size] = statistics.median(sized) if sized else 0
        per_method[method] = {"overall": overall, "by_size": by_size, "median_probes": statistics.median(probes),
                              "p90_probes": _pct(probes, 0.9), "median_probes_by_size": per_size_probes,
                              "median_seconds": round(statistics.median(seconds), 4),
                              "max_seconds": max(seconds)}
        if method == "sade":
            for e in evaluated:
                if e.score.rca.f1 < 1 or e.score.localization.f1 < 1 or e.score.detection < 1:
                    sub = e.diagnosis.submission
                    misses.append({"incident": e.score.incident_id, "scenario": e.score.scenario,
                                   "size": e.score.size, "truth": e.score.labels,
                                   "answered": sub.v1.root_cause_name if sub else None,
                                   "devices": sub.v1.faulty_devices if sub else None,
                                   "rca_f1": e.score.rca.f1, "loc_f1": e.score.localization.f1})
    return {"corpus": str(corpus), "baseline": baseline, "n": len(scores), "methods": per_method, "sade_misses": misses}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", action="append", type=Path,
                        help="corpus folder (repeatable); default data/sample/backlog and data/sample/history")
    parser.add_argument("--no-baseline", action="store_true",
                        help="diagnose without the recorded healthy baselines (as on a live network)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    corpora = args.corpus or [REPO / "data/sample/backlog", REPO / "data/sample/history"]
    report = [run(c, baseline=not args.no_baseline) for c in corpora]
    if args.json:
        print(json.dumps(report, indent=2, default=str))
        return
    for r in report:
        print(f"\n== {r['corpus']} ({r['n']} incidents{'' if r['baseline'] else ', no baseline'})")
        print(f"{'method':7} {'size':5} {'n':>4} {'detect':>7} {'loc F1':>7} {'RCA F1':>7} {'v2 F1':>7} "
              f"{'no-sub':>7} {'med probes':>10}")
        for method, m in r["methods"].items():
            rows = [("all", m["overall"], m["median_probes"])] + [
                (size, s, m["median_probes_by_size"][size]) for size, s in sorted(m["by_size"].items())]
            for size, s, probes in rows:
                print(f"{method:7} {size:5} {s['n']:>4} {s['detection']:>7.3f} {s['loc_f1']:>7.3f} {s['rca_f1']:>7.3f} "
                      f"{(s['v2_f1'] or 0):>7.3f} {s['no_submission_rate']:>7.3f} {probes:>10}")
            print(f"{method:7} p90 probes {m['p90_probes']}, median {m['median_seconds']} s/incident "
                  f"(max {m['max_seconds']} s)")
        sade, flat = r["methods"]["sade"], r["methods"]["flat"]
        print(f"probe ratio flat/sade (medians): {flat['median_probes'] / max(sade['median_probes'], 1):.1f}x")
        for miss in r["sade_misses"]:
            print(f"  miss {miss['incident']} {miss['scenario']}/{miss['size']}: truth {miss['truth']} -> "
                  f"{miss['answered']} on {miss['devices']}")


if __name__ == "__main__":
    main()
