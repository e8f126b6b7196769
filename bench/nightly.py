"""The whole nightly flow: incidents per minute, peak memory and the share of time per stage.

Runs `flows/nightly.py` in a fresh warehouse on the sample corpus (history + backlog + docs), and
optionally on the backlog replicated N times (`--replicas 10`: every backlog incident copied N times
under new incident and ticket ids, files hard-linked or copied so each copy is ingested as its own).
Each run is a separate process, so its peak memory (RSS, the flow's process) is its own. Figures
are ratios within one run; the machine is shared and noisy.

    .venv/bin/python bench/nightly.py [--corpus DIR] [--replicas 1 --replicas 10] [--workers 2] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def replicate(corpus: Path, out: Path, copies: int) -> Path:
    """A corpus whose backlog holds `copies` renamed copies of each backlog incident (history and docs linked)."""
    out.mkdir(parents=True)
    for part in ("history", "docs"):
        if (corpus / part).is_dir():
            (out / part).symlink_to((corpus / part).resolve())
    for folder in sorted(p for p in (corpus / "backlog").iterdir() if (p / "incident.json").is_file()):
        for k in range(copies):
            target = out / "backlog" / (folder.name if k == 0 else f"{folder.name}-r{k}")
            shutil.copytree(folder, target, copy_function=_link_or_copy)
            if k:
                meta = json.loads((target / "incident.json").read_text())
                meta["incident_id"] = target.name
                _rewrite(target / "incident.json", meta)
                ticket = json.loads((target / "ticket.json").read_text())
                ticket.update(incident_id=target.name, ticket_id=f"{ticket['ticket_id']}-R{k}")
                _rewrite(target / "ticket.json", ticket)
    return out


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def _rewrite(path: Path, data: dict[str, Any]) -> None:
    path.unlink()  # a hard link: replace, never edit the original
    path.write_text(json.dumps(data, indent=2, sort_keys=True))


_CHILD = """
import json, resource, sys, time
from pathlib import Path
from faultline.offline import apply_offline_env
apply_offline_env()
from faultline.config import Settings
from flows.nightly import nightly_flow
work, corpus, workers = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
settings = Settings(duckdb_path=work / "fl.duckdb", lancedb_dir=work / "lancedb", progress=False,
                    nightly_workers=workers)
t0 = time.perf_counter()
summary = nightly_flow(corpus=corpus, settings=settings)
print(json.dumps({"seconds": time.perf_counter() - t0, "summary": summary,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def run_once(corpus: Path, workers: int) -> dict[str, Any]:
    """One nightly run in a fresh warehouse, in its own process."""
    with tempfile.TemporaryDirectory(prefix="faultline-bench-nightly-") as tmp:
        env = {**os.environ, "PREFECT_LOGGING_LEVEL": "WARNING"}
        done = subprocess.run([sys.executable, "-c", _CHILD, tmp, str(corpus), str(workers)], cwd=REPO, env=env,
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"nightly run failed:\n{done.stderr[-3000:]}")
        result = json.loads(done.stdout.strip().splitlines()[-1])
    summary = result["summary"]
    incidents = len({o["incident_id"] for o in summary["outcomes"]})
    stages = summary["stage_seconds"]
    total = result["seconds"]
    return {"incidents": incidents, "units": len(summary["outcomes"]), "failures": len(summary["failures"]),
            "seconds": round(total, 1), "incidents_per_minute": round(60 * incidents / total, 2),
            "peak_rss_mb": round(result["peak_rss_mb"]), "stage_seconds": stages,
            "stage_share": {k: round(v / total, 3) for k, v in stages.items()},
            "per_method": summary and [{k: r[k] for k in ("method", "analysed", "seconds")}
                                       for r in _per_method(summary)]}


def _per_method(summary: dict[str, Any]) -> list[dict[str, Any]]:
    from faultline.nightly.summary import NightSummary

    return NightSummary.model_validate(summary).per_method()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=REPO / "data" / "sample")
    parser.add_argument("--replicas", type=int, action="append", help="backlog copies per run (default: 1)")
    parser.add_argument("--workers", type=int, default=2, help="nightly_workers")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    runs = []
    for copies in args.replicas or [1]:
        with tempfile.TemporaryDirectory(prefix="faultline-bench-corpus-") as tmp:
            corpus = args.corpus if copies == 1 else replicate(args.corpus, Path(tmp) / "corpus", copies)
            started = time.perf_counter()
            runs.append({"replicas": copies, **run_once(corpus, args.workers),
                         "wall_s": round(time.perf_counter() - started, 1)})
    if args.json:
        print(json.dumps({"workers": args.workers, "runs": runs}, indent=2))
        return
    for r in runs:
        shares = ", ".join(f"{k} {100 * v:.0f}%" for k, v in r["stage_share"].items())
        print(f"backlog x{r['replicas']}: {r['incidents']} incidents ({r['units']} analyses, {r['failures']} failed) "
              f"in {r['seconds']} s = {r['incidents_per_minute']} incidents/min; peak RSS {r['peak_rss_mb']} MB; "
              f"time per stage: {shares}")
    if len(runs) > 1:
        base = runs[0]
        for r in runs[1:]:
            print(f"x{r['replicas']} vs x{base['replicas']}: throughput ratio "
                  f"{r['incidents_per_minute'] / base['incidents_per_minute']:.2f}, memory ratio "
                  f"{r['peak_rss_mb'] / base['peak_rss_mb']:.2f}")


if __name__ == "__main__":
    main()
