"""The whole nightly flow: incidents per minute, peak memory and the share of time per stage.

Runs `flows/nightly.py` in a fresh warehouse on the sample corpus (history + backlog + docs), and
optionally on the backlog replicated N times (`--replicas 10`: every backlog incident copied N times
under new incident and ticket ids, files hard-linked or copied so each copy is ingested as its own),
on each task runner asked for (`--runner threads|processes|cluster`, repeatable; `cluster` starts a
scheduler and `--workers` workers with the dask command-line tools on localhost, as a cluster's machines
would). Each run is a separate process; a sampler reads the resident memory of the flow's process and
of every process the run starts (worker processes and the cluster's, the docs MCP servers, the temporary
Prefect server) twice a second, and reports the flow's peak and the peak of all of them together, and
the CPU seconds all of them used (`cores_busy`: CPU seconds over the run's wall time; on 2 cores, a
runner at 1.9 has no idle core left for another to use).
Figures are ratios within one run; the machine is shared and noisy.

    .venv/bin/python bench/nightly.py [--corpus DIR] [--replicas 1 --replicas 10] [--workers 2]
        [--runner threads --runner processes] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Self

REPO = Path(__file__).resolve().parents[1]


def replicate(corpus: Path, out: Path, copies: int) -> Path:
    """A corpus whose backlog holds `copies` renamed copies of each backlog incident (history and docs linked)."""
    out.mkdir(parents=True)
    for part in ("history", "docs"):
        if (corpus / part).is_dir():
            (out / part).symlink_to((corpus / part).resolve())
    (out / "backlog").mkdir()
    for shared in sorted(p for p in (corpus / "backlog").iterdir()
                         if p.is_dir() and not (p / "incident.json").exists()):
        (out / "backlog" / shared.name).symlink_to(shared.resolve())  # the collector's archive, the inventories
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
t_start = time.perf_counter()
from faultline.offline import apply_offline_env
apply_offline_env()
from faultline.config import Settings
from flows.nightly import nightly_flow
work, corpus, workers, runner, address = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
settings = Settings(duckdb_path=work / "fl.duckdb", lancedb_dir=work / "lancedb", progress=False,
                    nightly_workers=workers, nightly_task_runner=runner, nightly_dask_address=address)
t0 = time.perf_counter()
summary = nightly_flow(corpus=corpus, settings=settings)
print(json.dumps({"seconds": time.perf_counter() - t0, "summary": summary, "wall_s": time.perf_counter() - t_start,
                  "flow_start_s": t0 - t_start,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


class MemorySampler:
    """Peak resident memory of some process trees, and the CPU time of the "tree" group's processes,
    sampled every half second in a thread (a process's last half second of CPU can be missed)."""

    def __init__(self) -> None:
        self.roots: dict[str, list[int]] = {}  # group name -> root pids
        self.peak: dict[str, float] = {}
        self.series: list[tuple[float, float]] = []  # (monotonic time, flow RSS MB)
        self.cpu: dict[int, float] = {}  # pid -> user + system seconds last seen, every process of "tree"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        import psutil

        while not self._stop.wait(0.5):
            for group, pids in list(self.roots.items()):
                rss = 0.0
                for pid in pids:
                    try:
                        root = psutil.Process(pid)
                        tree = [root, *root.children(recursive=True)] if group == "tree" else [root]
                        rss += sum(p.memory_info().rss for p in tree) / 2**20
                        if group == "tree":
                            for p in tree:
                                times = p.cpu_times()
                                self.cpu[p.pid] = times.user + times.system
                    except psutil.Error:
                        continue
                self.peak[group] = max(self.peak.get(group, 0.0), rss)
                if group == "flow":
                    self.series.append((time.monotonic(), rss))


def _cluster(workers: int, folder: Path, sampler: MemorySampler) -> tuple[str, list[subprocess.Popen]]:
    """A scheduler and `workers` one-thread workers started with the dask command-line tools on localhost."""
    from faultline.config import Settings

    dask = [sys.executable, "-m", "dask"]
    # as the README asks of a cluster's operator: Dask's debugging logs as short as the flow's client keeps them
    message_log = str(Settings().nightly_dask_message_log)
    env = {"DASK_DISTRIBUTED__ADMIN__LOW_LEVEL_LOG_LENGTH": message_log, **os.environ, "PYTHONPATH": str(REPO),
           "PREFECT_LOGGING_LEVEL": "WARNING"}
    address_file = folder / "scheduler.json"
    quiet = {"cwd": REPO, "env": env, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL,
             "start_new_session": True}  # stopped as a group: a worker's own children go with it
    procs = [subprocess.Popen([*dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                               "--scheduler-file", str(address_file)], **quiet)]
    while not address_file.exists():
        time.sleep(0.2)
    address = json.loads(address_file.read_text())["address"]
    for n in range(workers):
        procs.append(subprocess.Popen([*dask, "worker", address, "--nthreads", "1", "--nworkers", "1",
                                       "--no-dashboard", "--local-directory", str(folder / f"w{n}")], **quiet))
    return address, procs


def run_once(corpus: Path, workers: int, runner: str = "threads") -> dict[str, Any]:
    """One nightly run in a fresh warehouse, in its own process."""
    with tempfile.TemporaryDirectory(prefix="faultline-bench-nightly-") as tmp, MemorySampler() as sampler:
        env = {**os.environ, "PREFECT_LOGGING_LEVEL": "WARNING"}
        address, cluster = _cluster(workers, Path(tmp), sampler) if runner == "cluster" else ("", [])
        try:
            child = subprocess.Popen([sys.executable, "-c", _CHILD, tmp, str(corpus), str(workers), runner, address],
                                     cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            spawned = time.monotonic()
            sampler.roots["flow"] = [child.pid]
            sampler.roots["tree"] = [child.pid, *(p.pid for p in cluster)]
            out, err = child.communicate()
        finally:
            for proc in cluster:
                os.killpg(proc.pid, signal.SIGTERM)
            for proc in cluster:
                proc.wait(timeout=60)
        if child.returncode != 0:
            raise SystemExit(f"nightly run failed:\n{err[-3000:]}")
        result = json.loads(out.strip().splitlines()[-1])
    summary = result["summary"]
    incidents = len({o["incident_id"] for o in summary["outcomes"]})
    stages = summary["stage_seconds"]
    total = result["seconds"]
    peak = {"flow": sampler.peak.get("flow", 0.0), "all": sampler.peak.get("tree", 0.0)}
    by_stage = _peak_by_stage(sampler.series, spawned + result["flow_start_s"], stages)
    return {"runner": runner, "incidents": incidents, "units": len(summary["outcomes"]),
            "failures": len(summary["failures"]), "seconds": round(total, 1),
            "incidents_per_minute": round(60 * incidents / total, 2),
            "peak_rss_mb": round(result["peak_rss_mb"]),
            "peak_rss_sampled_mb": {k: round(v) for k, v in peak.items()},
            "flow_peak_rss_by_stage_mb": by_stage,
            "cpu_s": round(sum(sampler.cpu.values())),
            "cores_busy": round(sum(sampler.cpu.values()) / result["wall_s"], 2),
            "stage_seconds": stages,
            "stage_share": {k: round(v / total, 3) for k, v in stages.items()},
            "per_method": summary and [{k: r[k] for k in ("method", "analysed", "seconds")}
                                       for r in _per_method(summary)]}


def _peak_by_stage(series: list[tuple[float, float]], start: float, stages: dict[str, float]) -> dict[str, int]:
    """The flow's peak RSS within each stage, the stages laid end to end from the flow's start in the order
    they ran (Prefect's own set-up between them is a second or two, so a boundary is that approximate)."""
    peaks: dict[str, int] = {}
    for stage, seconds in stages.items():
        end = start + seconds
        inside = [rss for t, rss in series if start <= t < end]
        if inside:
            peaks[stage] = round(max(inside))
        start = end
    return peaks


def _per_method(summary: dict[str, Any]) -> list[dict[str, Any]]:
    from faultline.nightly.summary import NightSummary

    return NightSummary.model_validate(summary).per_method()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=REPO / "data" / "sample")
    parser.add_argument("--replicas", type=int, action="append", help="backlog copies per run (default: 1)")
    parser.add_argument("--workers", type=int, default=2, help="nightly_workers")
    parser.add_argument("--runner", action="append", choices=("threads", "processes", "cluster"),
                        help="nightly_task_runner (repeatable; default: threads)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    runs = []
    for copies in args.replicas or [1]:
        with tempfile.TemporaryDirectory(prefix="faultline-bench-corpus-") as tmp:
            corpus = args.corpus if copies == 1 else replicate(args.corpus, Path(tmp) / "corpus", copies)
            for runner in args.runner or ["threads"]:
                started = time.perf_counter()
                runs.append({"replicas": copies, **run_once(corpus, args.workers, runner),
                             "wall_s": round(time.perf_counter() - started, 1)})
    if args.json:
        print(json.dumps({"workers": args.workers, "runs": runs}, indent=2))
        return
    for r in runs:
        shares = ", ".join(f"{k} {100 * v:.0f}%" for k, v in r["stage_share"].items())
        mem = r["peak_rss_sampled_mb"]
        print(f"backlog x{r['replicas']} on {r['runner']}: {r['incidents']} incidents ({r['units']} analyses, "
              f"{r['failures']} failed) in {r['seconds']} s = {r['incidents_per_minute']} incidents/min; peak RSS "
              f"flow {mem['flow']} MB, with every process it started {mem['all']} MB; "
              f"flow peak by stage {r['flow_peak_rss_by_stage_mb']} MB; "
              f"CPU {r['cpu_s']} s = {r['cores_busy']} cores busy on average; "
              f"time per stage: {shares}")
    by_key = {(r["replicas"], r["runner"]): r for r in runs}
    for (copies, runner), r in by_key.items():
        base = by_key.get((copies, "threads"))
        if runner != "threads" and base:
            print(f"x{copies}: {runner} vs threads: throughput ratio "
                  f"{r['incidents_per_minute'] / base['incidents_per_minute']:.2f}")
    sizes = sorted({c for c, _ in by_key})
    for runner in args.runner or ["threads"]:
        for copies in sizes[1:]:
            base, r = by_key.get((sizes[0], runner)), by_key.get((copies, runner))
            if base and r:
                print(f"{runner}: x{copies} vs x{sizes[0]}: throughput ratio "
                      f"{r['incidents_per_minute'] / base['incidents_per_minute']:.2f}, flow memory ratio "
                      f"{r['peak_rss_sampled_mb']['flow'] / base['peak_rss_sampled_mb']['flow']:.2f}")


if __name__ == "__main__":
    main()
