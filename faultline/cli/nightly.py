"""`faultline nightly`: tonight's run (the nightly flow) on demand, with a progress bar or plain lines."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Literal

import typer

from faultline.cli.output import print_json, print_table


def nightly_command(
    ctx: typer.Context,
    corpus: Path | None = typer.Option(
        None, "--corpus", help="Ingest this corpus folder first: history/ and backlog/ (generated incidents, a "
        "task run per folder), then tickets/ (any export `faultline ingest tickets` reads), logs/ (device logs, "
        "tagged with no incident) and docs/ (a task run per file); every subfolder is optional. Without it the "
        "warehouse's open tickets are the backlog."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Analyse only the first N incidents with work."),
    incident: list[str] = typer.Option([], "--incident", help="Only this incident or ticket id; repeatable."),
    llm: str | None = typer.Option(None, "--llm", help="litellm model for every LLM step (default: the "
                                      "deterministic analyst)."),
    # NetworkBackend of faultline.nightly.backlog, spelled out: the CLI imports no engine module at start-up
    network: Literal["snapshot", "lab", "ssh"] = typer.Option(
        "snapshot", "--network", help="snapshot: the incidents' recorded snapshots; lab: the live lab (root); ssh: "
        "the devices of --inventory (or the ssh_inventory setting) over SSH."),
    inventory: Path | None = typer.Option(None, "--inventory", help="Inventory folder for --network ssh."),
    rounds: int = typer.Option(5, "--rounds", min=1, max=5, help="Most ASTRA judge/refine rounds."),
    runner: Literal["threads", "processes", "cluster"] | None = typer.Option(
        None, "--runner", help="Where the units run: threads, processes (local Dask worker processes) or cluster "
        "(the Dask scheduler of --dask-address); default: the nightly_task_runner setting."),
    dask_address: str | None = typer.Option(None, "--dask-address", help="Scheduler of the cluster runner, "
                                               "e.g. tcp://10.0.0.5:8786 (implies --runner cluster)."),
    as_json: bool = typer.Option(False, "--json", help="Print the run summary as JSON."),
    wait: float | None = typer.Option(None, "--wait", min=0, help="Seconds to wait for another run that writes "
                                         "the warehouse [default: the warehouse_lock_wait_s setting, 0: refuse at "
                                         "once, exit code 75]."),
) -> None:
    """Run the nightly flow now: analyse the backlog both ways, evaluate, refresh the marts.

    Exit status 1 when a method failed on every incident it ran on (the count is printed): the run went on
    and stored what it could, but a cron job must notice."""
    update: dict[str, object] = {"ssh_inventory": inventory.resolve()} if inventory is not None else {}
    if dask_address:
        update.update(nightly_task_runner="cluster", nightly_dask_address=dask_address)
    if runner:
        update["nightly_task_runner"] = runner
    if wait is not None:
        update["warehouse_lock_wait_s"] = wait
    settings = ctx.obj.model_validate({**ctx.obj.model_dump(), **update}) if update else ctx.obj
    summary = run_nightly(settings, corpus=corpus, limit=limit, incidents=incident or None, llm_model=llm,
                          network_backend=network, max_rounds=rounds, progress=not as_json)
    if as_json:
        print_json(summary)
    else:
        print_summary(summary)
        typer.echo(f"\nwarehouse: {ctx.obj.duckdb_path}  (try: faultline db sql \"select * from mart_sade_metrics\")")
    exit_if_a_method_always_failed(summary)


def exit_if_a_method_always_failed(summary: dict) -> None:
    """Exit with status 1, naming each method and its count, when a method failed on every incident it ran on."""
    from faultline.nightly.summary import NightSummary

    sunk = [r for r in NightSummary.model_validate(summary).per_method() if r["failed"] and not r["analysed"]]
    for row in sunk:
        typer.secho(f"error: all {row['failed']} {row['method']} analyses failed tonight", fg="red", err=True)
    if sunk:
        raise typer.Exit(1)


def run_nightly(settings, *, progress: bool, **params) -> dict:
    """Run the flow with a progress reporter installed (a bar on a terminal, lines otherwise), holding the
    warehouse's run lock (`faultline.runlock`)."""
    from faultline.runlock import settings_lock

    # taken before the flow starts: a refused run leaves no failed flow run behind
    with settings_lock(settings, "nightly run"):
        return _run_flow(settings, progress, params)


def _run_flow(settings, progress: bool, params: dict) -> dict:
    from faultline.nightly.progress import line_reporter, set_reporter
    from flows.nightly import nightly_flow, tonight

    corpus = params.pop("corpus", None)
    bar = None
    if progress and sys.stderr.isatty():
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                       console=Console(stderr=True))
        task_id = bar.add_task("analysing", total=None)
        bar.start()
        set_reporter(lambda message, done, total: bar.update(task_id, completed=done, total=total or None,
                                                             description=message[:60]))
    elif progress:
        set_reporter(line_reporter)
    try:
        return nightly_flow(corpus=str(corpus) if corpus else None, settings=settings, night=tonight(), **params)
    finally:
        set_reporter(None)
        if bar is not None:
            bar.stop()


def print_summary(summary: dict) -> None:
    """The run summary table, failures and skips."""
    from faultline.nightly.summary import NightSummary

    s = NightSummary.model_validate(summary)
    typer.echo(f"nightly run {s.run_id} (Prefect flow run {s.prefect_flow_run_id}): backlog {s.backlog}")
    if s.ingest:
        print_table(["ingested", "files", "unchanged", "accepted", "quarantined", "incidents", "failed"],
                    [[f"{f.folder}/", f.files, f.unchanged, f.accepted, f.quarantined,
                      "-" if f.incidents is None else f.incidents, len(f.failed)] for f in s.ingest])
        for f in s.ingest:
            for name, error in f.failed.items():
                typer.echo(f"  not ingested  {name}: {error[:150]}")
    print_table(["method", "analysed", "failed", "skipped", "scored", "score", "meaning", "seconds"],
                [[r["method"], r["analysed"], r["failed"], r["skipped"], r["scored"],
                  "-" if r["score"] is None else r["score"], r["score_meaning"], r["seconds"]]
                 for r in s.per_method()])
    for f in s.failures:
        typer.echo(f"  failed  {f.method} {f.incident_id}: {f.error_type}: {f.message[:150]}")
    if s.marts:
        typer.echo("marts: " + ", ".join(f"{k} ({v})" for k, v in s.marts.items()))
    if s.dashboard:
        typer.echo(f"dashboards: {s.dashboard}")
