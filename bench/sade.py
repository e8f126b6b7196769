"""SADE on recorded lab incidents: the phase-gated deterministic policy next to the flat baseline.

For each corpus folder (default: the sample backlog and history; add a freshly generated suite, e.g. the
`bench_s|m|l` suites written by `faultline corpus generate`) and each method: detection accuracy
(healthy controls included), localization F1, RCA F1 (exact labels), NIKA v2 joint F1, no-submission
rate, median and p90 probe calls (device-level probes asked of the network; the reachability sweep counts
as one), median seconds per incident on the snapshot backend — overall and per size — and every incident
the gated policy got wrong, with what it answered instead. Per mechanism (the ground truth's
`mechanism_id`, "standard" for corpora recorded before labels had several): the same figures per
mechanism, and per label the mechanism SADE does worst on. Per method, the broken networks (ground truth with a
fault) answered healthy or not at all, by incident: the one answer SADE must never give with symptoms in hand.
`--no-baseline` hides the recorded healthy baselines (the situation on a live network or an MCP server);
`--no-ticket` hides the tickets (no ticket-guided triage).

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

from faultline.sade.evaluate import evaluate_corpus, incident_dirs  # noqa: E402
from faultline.sade.scoring import summarise  # noqa: E402

METHODS = ("sade", "flat")


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def mechanisms(corpus: Path) -> dict[str, list[tuple[str, str]]]:
    """incident id -> [(label, mechanism)] from each ground truth (healthy controls: [])."""
    out = {}
    for folder in incident_dirs(corpus):
        info = json.loads((folder / "incident.json").read_text())
        truth = json.loads((folder / "ground_truth.json").read_text())
        out[info["incident_id"]] = [(f["v1"]["root_cause_name"], f.get("mechanism_id") or "standard")
                                    for f in truth.get("faults") or []]
    return out


def by_mechanism(evaluated: list, mechs: dict[str, list[tuple[str, str]]]) -> dict[str, Any]:
    """Scores per mechanism and per (label, mechanism); per label the worst mechanism by RCA F1."""
    groups: dict[str, list] = {}
    pairs: dict[tuple[str, str], list] = {}
    for e in evaluated:
        found = mechs.get(e.score.incident_id) or [("healthy", "healthy")]
        for label, mech in found:
            groups.setdefault(mech, []).append(e.score)
            pairs.setdefault((label, mech), []).append(e.score)
    per_mech = {m: summarise(s)[0].model_dump() for m, s in sorted(groups.items())}
    pair_scores = {pair: summarise(s)[0] for pair, s in sorted(pairs.items())}
    per_pair = {f"{label}:{m}": s.model_dump() for (label, m), s in pair_scores.items()}
    worst: dict[str, dict[str, Any]] = {}
    for (label, m), s in pair_scores.items():
        if label != "healthy" and (label not in worst or s.rca_f1 < worst[label]["rca_f1"]):
            worst[label] = {"mechanism": m, "rca_f1": s.rca_f1, "n": s.n,
                            "mechanisms": sorted({mm for (lb, mm) in pairs if lb == label})}
    return {"per_mechanism": per_mech, "per_label_mechanism": per_pair, "worst_per_label": worst}


def run(corpus: Path, baseline: bool = True, ticket: bool = True) -> dict[str, Any]:
    per_method: dict[str, Any] = {}
    misses = []
    mechs = mechanisms(corpus)
    for method in METHODS:
        evaluated = list(evaluate_corpus(corpus, method=method, baseline=baseline, ticket=ticket))
        scores = [e.score for e in evaluated]
        probes = [e.diagnosis.probe_calls for e in evaluated]
        seconds = [e.diagnosis.elapsed_s for e in evaluated]
        overall = summarise(scores)[0].model_dump() if scores else {}
        by_size = {s.group: s.model_dump() for s in summarise(scores, group_by="size")}
        per_size_probes = {}
        for size in by_size:
            sized = [e.diagnosis.probe_calls for e in evaluated if e.score.size == size]
            per_size_probes[size] = statistics.median(sized) if sized else 0
        # a broken network answered healthy (or not answered): the one answer SADE must never give with symptoms
        healthy_answers = sorted(e.score.incident_id for e in evaluated if e.score.labels and (
            e.diagnosis.submission is None or not e.diagnosis.submission.v1.is_anomaly))
        per_method[method] = {"overall": overall, "by_size": by_size, "median_probes": statistics.median(probes),
                              "broken_answered_healthy": healthy_answers,
                              "p90_probes": _pct(probes, 0.9), "median_probes_by_size": per_size_probes,
                              "median_seconds": round(statistics.median(seconds), 4),
                              "max_seconds": max(seconds), "by_mechanism": by_mechanism(evaluated, mechs)}
        if method == "sade":
            for e in evaluated:
                if e.score.rca.f1 < 1 or e.score.localization.f1 < 1 or e.score.detection < 1:
                    sub = e.diagnosis.submission
                    misses.append({"incident": e.score.incident_id, "scenario": e.score.scenario,
                                   "size": e.score.size, "truth": e.score.labels,
                                   "answered": sub.v1.root_cause_name if sub else None,
                                   "devices": sub.v1.faulty_devices if sub else None,
                                   "rca_f1": e.score.rca.f1, "loc_f1": e.score.localization.f1})
    return {"corpus": str(corpus), "baseline": baseline, "ticket": ticket, "n": len(scores), "methods": per_method,
            "sade_misses": misses}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", action="append", type=Path,
                        help="corpus folder (repeatable); default data/sample/backlog and data/sample/history")
    parser.add_argument("--no-baseline", action="store_true",
                        help="diagnose without the recorded healthy baselines (as on a live network)")
    parser.add_argument("--no-ticket", action="store_true",
                        help="diagnose without the incidents' tickets (no ticket-guided triage)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    corpora = args.corpus or [REPO / "data/sample/backlog", REPO / "data/sample/history"]
    report = [run(c, baseline=not args.no_baseline, ticket=not args.no_ticket) for c in corpora]
    if args.json:
        print(json.dumps(report, indent=2, default=str))
        return
    for r in report:
        print(f"\n== {r['corpus']} ({r['n']} incidents{'' if r['baseline'] else ', no baseline'}"
              f"{'' if r['ticket'] else ', no ticket'})")
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
            broken = m["broken_answered_healthy"]
            print(f"{method:7} broken networks answered healthy: {len(broken)}"
                  f"{' (' + ', '.join(broken) + ')' if broken else ''}")
        sade, flat = r["methods"]["sade"], r["methods"]["flat"]
        print(f"probe ratio flat/sade (medians): {flat['median_probes'] / max(sade['median_probes'], 1):.1f}x")
        print(f"{'mechanism':12} {'method':7} {'n':>4} {'detect':>7} {'loc F1':>7} {'RCA F1':>7}")
        for method, m in r["methods"].items():
            for mech, s in m["by_mechanism"]["per_mechanism"].items():
                print(f"{mech:12} {method:7} {s['n']:>4} {s['detection']:>7.3f} "
                      f"{s['loc_f1']:>7.3f} {s['rca_f1']:>7.3f}")
        several = {k: v for k, v in sade["by_mechanism"]["worst_per_label"].items() if len(v["mechanisms"]) > 1}
        below = {k: v for k, v in sade["by_mechanism"]["worst_per_label"].items() if v["rca_f1"] < 1}
        for label, w in sorted({**several, **below}.items()):
            print(f"  worst mechanism of {label} ({', '.join(w['mechanisms'])}): {w['mechanism']} "
                  f"RCA F1 {w['rca_f1']:.3f} (n={w['n']})")
        for miss in r["sade_misses"]:
            print(f"  miss {miss['incident']} {miss['scenario']}/{miss['size']}: truth {miss['truth']} -> "
                  f"{miss['answered']} on {miss['devices']}")


if __name__ == "__main__":
    main()
