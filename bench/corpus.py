"""Incident corpus: incidents generated per minute, time per stage, snapshot and log sizes.

Either generates a suite now (root; one lab at a time, or `--jobs N` labs at once as
`faultline corpus generate --jobs N` does) or summarises a corpus already generated
(`--from DIR`, no root), reading each incident's own timings and sizes from its incident.json.
Stages: build (lab up to healthy), baseline (healthy snapshot), inject_verify, record (incident
snapshot + device logs), ticket, recover (to healthy), teardown.

    sudo .venv/bin/python bench/corpus.py --suite tiny [--jobs 2] [--json]
    .venv/bin/python bench/corpus.py --from data/sample [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

STAGES = ("build_s", "baseline_s", "inject_verify_s", "record_s", "ticket_s", "recover_s", "teardown_s")


def load_incidents(root: Path) -> list[dict]:
    """Every incident.json under `root`."""
    return [json.loads(p.read_text()) for p in sorted(root.rglob("incident.json"))]


def summarise(incidents: list[dict], wall_s: float | None = None) -> dict:
    """Per-stage means, throughput and sizes by (scenario, size)."""
    valid = [i for i in incidents if i["status"] == "valid"]
    total_s = sum(sum(i["timings"].values()) for i in incidents)
    stages = {s: round(statistics.mean(i["timings"].get(s, 0.0) for i in valid), 2) for s in STAGES} if valid else {}
    groups: dict[tuple[str, str], list[dict]] = {}
    for inc in valid:
        groups.setdefault((inc["scenario"], inc["size"]), []).append(inc)
    by_lab = []
    for (scenario, size), items in sorted(groups.items()):
        by_lab.append({
            "scenario": scenario, "size": size, "incidents": len(items),
            "seconds_mean": round(statistics.mean(sum(i["timings"].values()) for i in items), 1),
            "snapshot_kb_mean": round(statistics.mean(i["sizes"].get("snapshot_bytes", 0) for i in items) / 1024, 1),
            "baseline_kb_mean": round(statistics.mean(i["sizes"].get("baseline_bytes", 0) for i in items) / 1024, 1),
            "logs_kb_mean": round(statistics.mean(i["sizes"].get("log_bytes", 0) for i in items) / 1024, 1),
        })
    minutes = (wall_s if wall_s is not None else total_s) / 60
    return {
        "incidents": len(incidents), "valid": len(valid), "invalid": len(incidents) - len(valid),
        "invalid_reasons": {i["incident_id"]: i["reason"] for i in incidents if i["status"] != "valid"},
        "incidents_per_minute": round(len(incidents) / minutes, 2) if minutes else None,
        "stage_mean_s": stages, "by_lab": by_lab,
        "seconds": round(wall_s if wall_s is not None else total_s, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suite", help="generate this suite now (root)")
    parser.add_argument("--from", dest="source", type=Path, help="summarise an existing corpus folder")
    parser.add_argument("--jobs", type=int, default=1, help="labs at once when generating (worker processes)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if bool(args.suite) == bool(args.source):
        parser.error("give --suite or --from")
    if args.suite:
        from faultline.config import Settings
        from faultline.corpus.generate import generate_suite
        from faultline.corpus.spec import load_suite
        from faultline.lab import locks

        out = Path(tempfile.mkdtemp(prefix="faultline-bench-corpus-"))
        settings = Settings(lab_dir=Path(f"/tmp/faultline-bench-corpus-lab-{os.getpid()}"), progress=False)
        with locks.machine_lock(notify=lambda message: print(message, file=sys.stderr)):
            t0 = time.monotonic()
            generate_suite(load_suite(args.suite), out, settings, jobs=args.jobs)
            wall = time.monotonic() - t0
        result = summarise(load_incidents(out), wall)
        result["out"], result["jobs"] = str(out), args.jobs
    else:
        result = summarise(load_incidents(args.source))
    if args.json:
        print(json.dumps(result, indent=2))
        return
    jobs = f" with {result['jobs']} labs at once" if result.get("jobs", 1) > 1 else ""
    print(f"{result['incidents']} incidents ({result['valid']} valid) in {result['seconds']} s{jobs}: "
          f"{result['incidents_per_minute']} incidents/min")
    print("mean seconds per stage (valid incidents): "
          + ", ".join(f"{k.removesuffix('_s')} {v}" for k, v in result["stage_mean_s"].items()))
    print(f"{'scenario':<24}{'size':>5}{'n':>4}{'s/inc':>8}{'snap KB':>9}{'base KB':>9}{'logs KB':>9}")
    for row in result["by_lab"]:
        print(f"{row['scenario']:<24}{row['size']:>5}{row['incidents']:>4}{row['seconds_mean']:>8}"
              f"{row['snapshot_kb_mean']:>9}{row['baseline_kb_mean']:>9}{row['logs_kb_mean']:>9}")
    for incident, reason in result["invalid_reasons"].items():
        print(f"invalid {incident}: {reason}")


if __name__ == "__main__":
    main()
