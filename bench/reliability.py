"""Reliability under the conditions of a real night: one row per case, every trial against real parts.

Cases (modules in `bench/rel_cases/`): concurrent runs, crashes, full disks, damaged state, misbehaving
models, processes and resources, hostile input, servers, exit codes and degraded sources. Each prints its
trials, how many passed, what a passed trial checks, and the defects the failed ones call for. Cases that
need root say so and are reported as not run without it.

    .venv/bin/python bench/reliability.py [--case NAME ...] [--trials N] [--json]
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import tempfile
import time
import traceback
from dataclasses import asdict
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from rel_cases.common import CaseReport, Trial  # noqa: E402

from faultline.offline import apply_offline_env  # noqa: E402


def case_modules() -> dict[str, ModuleType]:
    """Every case module of `bench/rel_cases/`, by its NAME, in file order."""
    found: dict[str, ModuleType] = {}
    for path in sorted((REPO / "bench" / "rel_cases").glob("case_*.py")):
        module = importlib.import_module(f"rel_cases.{path.stem}")
        found[module.NAME] = module
    return found


def run_case(module: ModuleType, trials: int | None, work: Path) -> CaseReport:
    """Run one case; a case that raises is one failed trial with its traceback's last line."""
    report = CaseReport(case=module.NAME, checks=module.CHECKS)
    if module.NEEDS_ROOT and os.geteuid() != 0:
        report.skipped = "needs root (run the benchmark as root)"
        return report
    start = time.perf_counter()
    try:
        results: list[Trial] = module.run(trials or module.DEFAULT_TRIALS, work)
    except Exception as exc:  # noqa: BLE001 - the case's own failure is a row of the report
        last = traceback.format_exception_only(exc)[-1].strip()
        results = [Trial(ok=False, detail=f"the case raised: {last}", defect="the case itself failed")]
    report.seconds = round(time.perf_counter() - start, 1)
    report.trials = len(results)
    report.passed = sum(r.ok for r in results)
    for number, result in enumerate(results, 1):
        if not result.ok:
            report.failures.append(f"trial {number}: {result.detail}")
            if result.defect and result.defect not in report.defects:
                report.defects.append(result.defect)
    return report


def _print(reports: list[CaseReport]) -> None:
    from faultline.cli.output import print_table

    rows = [(r.case, r.skipped and "not run" or r.trials, r.passed, f"{r.seconds:.0f}", r.checks) for r in reports]
    print_table(["case", "trials", "passed", "seconds", "checks"], rows)
    for r in reports:
        for line in [r.skipped, *r.failures[:10], *(f"defect: {d}" for d in r.defects)]:
            if line:
                print(f"{r.case}: {line}")


def main(argv: list[str] | None = None) -> None:
    cases = case_modules()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", action="append", choices=sorted(cases), help="run only this case (repeat)")
    parser.add_argument("--trials", type=int, help="trials per case (default: each case's own)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--work", type=Path, help="scratch folder, kept (default: a temporary one)")
    args = parser.parse_args(argv)
    if args.trials is not None and args.trials < 1:
        parser.error("--trials must be at least 1")
    apply_offline_env()
    chosen = [cases[name] for name in (args.case or cases)]
    with tempfile.TemporaryDirectory(prefix="faultline-reliability-") as tmp:
        base = args.work or Path(tmp)
        reports = []
        for module in chosen:
            work = base / module.NAME
            work.mkdir(parents=True, exist_ok=True)
            reports.append(run_case(module, args.trials, work))
    if args.json:
        print(json.dumps({"cases": [asdict(r) for r in reports]}, indent=2))
    else:
        _print(reports)


if __name__ == "__main__":
    main()
