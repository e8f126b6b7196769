"""Does refining the verdict change it for the better? Round 1 against round 2, paired, on stored analyses.

Reads a warehouse where `faultline eval verdict` (or the nightly) already stored ASTRA's analyses and the
network diagnoses of incidents with ground truth, copies it (the original is never written), and fuses every
verdict again with `faultline.verdict.refine`: round 1 from the stored analyses, round 2 after asking the
incident's recorded network about what the logs point at. Both rounds are scored with the verdict's own scoring
(`faultline.verdict.evaluate.score_verdict`: the ASTRA rubric and NIKA's RCA F1). Printed: the checks asked
(confirmed / refuted / not checked), the verdicts whose answer changed, the paired deltas (accuracy, RCA F1:
better / worse / same), the headline figures of both rounds, probe calls spent on the checks and seconds per
verdict.

    .venv/bin/python bench/verdict_refine.py --warehouse /tmp/evs/w.duckdb [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from statistics import mean

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from faultline.offline import apply_offline_env  # noqa: E402


def _share(values: list[bool]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def _figures(scores: list) -> dict:
    faulty = [s for s in scores if s.is_faulty]
    return {"share_accuracy_ge3": _share([s.accuracy >= 3 for s in faulty]),
            "rca_f1": round(mean(max(s.nika.get("rca_f1", 0.0), 0.0) for s in faulty), 4) if faulty else None,
            "healthy_answered_healthy": _share([s.accuracy >= 5 for s in scores if not s.is_faulty]),
            "fabricated_identifiers": sum(len(s.fabricated) for s in scores)}


def run(warehouse: Path) -> dict:
    apply_offline_env()
    from faultline import db
    from faultline.config import Settings
    from faultline.outcome import incident_ref
    from faultline.truth.store import load_truth
    from faultline.verdict.unit import run_verdict

    tmp = Path(tempfile.mkdtemp(prefix="verdict-refine-"))
    copy = tmp / "w.duckdb"
    shutil.copy(warehouse, copy)
    settings = Settings(duckdb_path=copy, lancedb_dir=tmp / "lancedb", progress=False)
    conn = db.open_warehouse(settings)
    ids = [r[0] for r in conn.execute("SELECT DISTINCT incident_id FROM submissions ORDER BY 1").fetchall()]
    firsts, finals, rows, seconds = [], [], [], []
    for incident_id in ids:
        truth = load_truth(conn, incident_id)
        if truth is None:
            continue
        ref = incident_ref(conn, incident_id)
        started = time.perf_counter()
        done = run_verdict(settings, conn, ref, network_backend="snapshot")  # on a copy of the warehouse
        seconds.append(time.perf_counter() - started)
        first, final, a, b = done.first, done.verdict, done.first_score, done.score
        firsts.append(a)
        finals.append(b)
        for k in final.checks:
            rows.append({"incident_id": incident_id, "label": k.label, "devices": k.asked_devices,
                         "outcome": k.outcome, "probe_calls": k.probe_calls, "truth": list(truth.labels),
                         "before": first.labels, "after": final.labels, "accuracy": [a.accuracy, b.accuracy],
                         "rca_f1": [a.nika.get("rca_f1"), b.nika.get("rca_f1")]})
    conn.close()
    shutil.rmtree(tmp, ignore_errors=True)
    asked = {r["incident_id"] for r in rows}
    pairs = [(a, b) for a, b in zip(firsts, finals) if a.incident_id in asked]
    d_acc = [b.accuracy - a.accuracy for a, b in pairs]
    d_rca = [b.nika["rca_f1"] - a.nika["rca_f1"] for a, b in pairs if "rca_f1" in a.nika and "rca_f1" in b.nika]
    outcomes = {o: sum(r["outcome"] == o for r in rows) for o in ("confirmed", "refuted", "not_checked")}
    return {"warehouse": str(warehouse), "incidents": len(finals), "verdicts_that_asked": len(asked),
            "checks": len(rows), **{f"checks_{k}": v for k, v in outcomes.items()},
            "answers_changed": sum(a.labels != b.labels for a, b in pairs),
            "accuracy_delta": {"mean": round(mean(d_acc), 4) if d_acc else None,
                               "better": sum(d > 0 for d in d_acc), "worse": sum(d < 0 for d in d_acc),
                               "same": sum(d == 0 for d in d_acc)},
            "rca_f1_delta": {"mean": round(mean(d_rca), 4) if d_rca else None,
                             "better": sum(d > 0 for d in d_rca), "worse": sum(d < 0 for d in d_rca),
                             "same": sum(d == 0 for d in d_rca)},
            "round1": _figures(firsts), "round2": _figures(finals),
            "probe_calls_on_checks": sum(r["probe_calls"] for r in rows),
            "seconds_per_verdict": round(mean(seconds), 3) if seconds else None, "checks_detail": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warehouse", type=Path, required=True,
                        help="a warehouse with stored analyses and ground truth (e.g. from faultline eval verdict)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if not args.warehouse.is_file():
        parser.error(f"no warehouse at {args.warehouse}: run `faultline eval verdict --corpus DIR` first")
    out = run(args.warehouse)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"{out['warehouse']}: {out['incidents']} verdicts, {out['verdicts_that_asked']} asked the network again "
          f"({out['checks']} checks: {out['checks_confirmed']} confirmed, {out['checks_refuted']} refuted, "
          f"{out['checks_not_checked']} not checked; {out['probe_calls_on_checks']} probe calls)")
    print(f"answers changed: {out['answers_changed']}")
    for key in ("accuracy_delta", "rca_f1_delta"):
        d = out[key]
        print(f"{key}: mean {d['mean']}, better {d['better']}, worse {d['worse']}, same {d['same']}")
    print(f"round 1: {out['round1']}")
    print(f"round 2: {out['round2']}")
    print(f"seconds per verdict (both rounds): {out['seconds_per_verdict']}")
    for r in out["checks_detail"]:
        print(f"  {r['incident_id']}: {r['label']} on {', '.join(r['devices'])} -> {r['outcome']} "
              f"(truth {r['truth']}; {r['before']} -> {r['after']}; rca_f1 {r['rca_f1']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
