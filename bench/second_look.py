"""The second look's trade-off: RCA F1 against probes, as the service canary after an answer asks from more user
positions and more pages (settings `sade_second_look_users`, `sade_second_look_pages`), and as the routes look
reads no table, the tables already read, or one user's first hop besides (`sade_second_look_routes`).

For each corpus and each breadth (routes: off, seen, first_hop; users: 1, 2, every one; pages: 1, 2, 4; the
own-device look off, on silenced devices, always; the full sweep):
SADE's RCA F1 and localisation F1 over
the corpus and over its two-fault incidents alone, the median and p90 probes, and how many two-fault incidents
were answered with both faults. Run it on a two-fault suite from new seeds
(scripts/make_two_faults_suite.py); docs/benchmarks.md keeps the curve.

    .venv/bin/python bench/second_look.py --corpus DIR [--json]
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

from faultline.config import Settings  # noqa: E402
from faultline.sade.evaluate import evaluate_corpus  # noqa: E402
from faultline.sade.scoring import summarise  # noqa: E402

# (routes, users, pages, own-device look, sweep); users 0 = every position
BREADTHS = (("off", 0, 1, "off", False), ("seen", 0, 1, "off", False), ("seen", 1, 1, "silenced", False),
            ("seen", 2, 1, "silenced", False), ("seen", 0, 1, "silenced", False), ("seen", 0, 2, "silenced", False),
            ("seen", 0, 4, "silenced", False), ("first_hop", 0, 1, "silenced", False),
            ("seen", 0, 1, "always", False), ("first_hop", 0, 1, "always", False), ("seen", 0, 1, "silenced", True))


def point(corpus: Path, routes: str, users: int, pages: int, own: str, sweep: bool) -> dict[str, Any]:
    """One breadth's figures on one corpus."""
    settings = Settings(sade_second_look_users=users, sade_second_look_pages=pages, sade_second_look_routes=routes,
                        sade_second_look_own_device=own, sade_second_look_sweep=sweep, progress=False)
    evaluated = list(evaluate_corpus(corpus, settings=settings))
    two = [e for e in evaluated if len(e.score.labels) >= 2]
    probes = sorted(e.diagnosis.probe_calls for e in evaluated)
    both = sum(1 for e in two if e.score.rca.f1 == 1.0)
    return {"routes": routes, "users": users or "all", "pages": pages, "own_device": own, "sweep": sweep,
            "n": len(evaluated),
            "rca_f1": summarise([e.score for e in evaluated])[0].rca_f1,
            "loc_f1": summarise([e.score for e in evaluated])[0].loc_f1,
            "two_fault_n": len(two), "two_fault_rca_f1": summarise([e.score for e in two])[0].rca_f1 if two else None,
            "two_fault_both_named": both, "median_probes": statistics.median(probes),
            "p90_probes": probes[min(len(probes) - 1, int(0.9 * len(probes)))]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", action="append", type=Path, required=True, help="corpus folder (repeatable)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    report = {str(c): [point(c, *breadth) for breadth in BREADTHS] for c in args.corpus}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    for corpus, points in report.items():
        print(f"\n== {corpus}")
        print(f"{'routes':>9} {'users':>5} {'pages':>5} {'own':>8} {'sweep':>5} {'RCA F1':>7} {'loc F1':>7} "
              f"{'2-fault RCA':>11} {'both named':>10} {'med probes':>10} {'p90':>5}")
        for p in points:
            two = f"{p['two_fault_rca_f1']:.3f}" if p["two_fault_rca_f1"] is not None else "-"
            own, sweep = p["own_device"], "yes" if p["sweep"] else "no"
            print(f"{p['routes']:>9} {p['users']:>5} {p['pages']:>5} {own:>8} {sweep:>5} {p['rca_f1']:>7.3f} "
                  f"{p['loc_f1']:>7.3f} {two:>11} {p['two_fault_both_named']:>4}/{p['two_fault_n']:<5} "
                  f"{p['median_probes']:>10} {p['p90_probes']:>5}")


if __name__ == "__main__":
    main()
