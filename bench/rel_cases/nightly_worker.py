"""A long-lived process that runs the nightly flow again and again, as a Prefect worker serving a nightly
deployment would; after each run it prints one JSON line: the run's status, this process's resident memory,
threads and open files, and the processes below it.

Between runs the analysis ledger is emptied, so every run analyses the backlog again (and starts its docs
server) instead of skipping what the first run finished.

    python bench/rel_cases/nightly_worker.py DB LANCEDB RUNS
"""

from __future__ import annotations

import gc
import json
import sys
from pathlib import Path

import duckdb
import psutil


def main(db: Path, lancedb: Path, runs: int) -> None:
    from faultline.config import Settings
    from faultline.offline import apply_offline_env

    apply_offline_env()
    from flows.nightly import nightly_flow

    settings = Settings(duckdb_path=db, lancedb_dir=lancedb, progress=False, nightly_llm_retry_delay_s=0,
                        nightly_probe_retry_delay_s=0, nightly_sql_retry_delay_s=0)
    me = psutil.Process()
    for number in range(1, runs + 1):
        summary = nightly_flow(settings=settings, max_rounds=1)
        gc.collect()  # what the process holds, not garbage that is merely not collected yet
        children = me.children(recursive=True)
        print(json.dumps({"run": number, "outcomes": len(summary["outcomes"]), "failures": len(summary["failures"]),
                          "rss_mb": me.memory_info().rss / 2**20, "threads": me.num_threads(),
                          "open_files": me.num_fds(), "children": [" ".join(c.cmdline())[:120] for c in children],
                          "children_rss_mb": sum(_rss(c) for c in children) / 2**20}), flush=True)
        conn = duckdb.connect(str(db))
        try:
            conn.execute("DELETE FROM analysis_ledger")
        finally:
            conn.close()


def _rss(process: psutil.Process) -> int:
    try:
        return process.memory_info().rss
    except psutil.NoSuchProcess:
        return 0


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]))
