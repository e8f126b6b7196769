"""`faultline demo`: the main job on the embedded defaults, in a fresh folder, start to dashboards."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import typer

from faultline.cli.output import print_json

MARKER = ".faultline-demo"


def _fresh(folder: Path) -> None:
    """Empty the demo folder (only one this command made: it carries the marker file)."""
    if folder.exists():
        if not (folder / MARKER).is_file():
            from faultline.errors import FaultlineError

            raise FaultlineError(f"{folder} exists and was not made by `faultline demo`; not touching it",
                                 fix="pass another --dir, or remove the folder yourself")
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / MARKER).write_text("made by `faultline demo`; the next demo run empties this folder\n")


def demo_command(
    ctx: typer.Context,
    folder: Path = typer.Option(Path("var/demo"), "--dir", help="Fresh folder for the demo's warehouse, indexes "
                                "and dashboards (emptied first if an earlier demo made it)."),
    as_json: bool = typer.Option(False, "--json", help="Print the run summary as JSON."),
) -> None:
    """Ingest the shipped sample corpus into a fresh warehouse and run the nightly flow on it with the
    embedded defaults (deterministic analyst, recorded snapshots, ephemeral Prefect); print the run
    summary and where the dashboards are."""
    # the progress bar tells the story; Prefect's per-task log lines stay in the UI (unless asked for)
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    from faultline.cli.nightly import print_summary, run_nightly
    from faultline.resources import sample_dir

    folder = folder.resolve()
    _fresh(folder)
    settings = ctx.obj.model_copy(update={"duckdb_path": folder / "faultline.duckdb",
                                          "lancedb_dir": folder / "lancedb",
                                          "dashboards_dir": folder / "dashboards"})
    started = time.perf_counter()
    summary = run_nightly(settings, corpus=sample_dir(), limit=None, incidents=None, llm_model=None,
                          network_backend="snapshot", max_rounds=5, progress=not as_json)
    if as_json:
        print_json({**summary, "seconds": round(time.perf_counter() - started, 1)})
        return
    print_summary(summary)
    typer.echo(f"\ndone in {time.perf_counter() - started:.0f} s")
    typer.echo(f"dashboards: open {summary['dashboard']} in a browser (works offline, from disk)")
    typer.echo(f"warehouse:  .venv/bin/faultline --db {settings.duckdb_path} db sql "
               "\"select * from mart_sade_metrics where grouping = 'overall'\"")
    typer.echo("SQL cookbook: docs/sql-cookbook.md")


__all__ = ["demo_command"]
