"""`faultline ingest tickets|logs|docs|incidents PATH...` and `faultline ingest inventory FOLDER`."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

import typer

from faultline.cli.output import print_json, print_table

app = typer.Typer(help="Load tickets, logs and docs into the warehouse (validated; rejects quarantined).",
                  no_args_is_help=True)

_PATHS = typer.Argument(..., help="Files or folders (searched recursively).")
_FORCE = typer.Option(False, "--force", help="Re-process files even when unchanged since the last ingest.")
_JSON = typer.Option(False, "--json", help="Print the report as JSON.")
_FLOW = typer.Option(False, "--flow", help="Run as a Prefect flow (ephemeral API unless PREFECT_API_URL is set).")
_WAIT = typer.Option(None, "--wait", min=0, help="Seconds to wait for another run that writes the warehouse "
                     "[default: the warehouse_lock_wait_s setting, 0: refuse at once, exit code 75].")


def _locked(ctx: typer.Context, what: str, wait: float | None):
    """The warehouse's run lock for this ingest (faultline.runlock)."""
    from faultline.runlock import settings_lock

    return settings_lock(ctx.obj, f"ingest {what}", wait)


def _run(ctx: typer.Context, kind: str, paths: list[Path], force: bool, as_json: bool, use_flow: bool,
         wait: float | None, **options: object) -> None:
    settings = ctx.obj
    with _locked(ctx, kind, wait):
        if use_flow:
            from flows.ingest import ingest_flow

            report_dict = ingest_flow(kind=kind, paths=[str(p) for p in paths], settings=settings, force=force,
                                      **options)
        else:
            from faultline import db
            from faultline.ingest.api import ingest_paths

            with closing(db.open_warehouse(settings)) as conn:
                report_dict = ingest_paths(conn, settings, kind, paths, force=force,
                                           progress=settings.progress and not as_json, **options).as_dict()
    if as_json:
        print_json(report_dict)
    else:
        print_report(report_dict)
    if report_dict["totals"]["failed_files"]:
        raise typer.Exit(1)


def print_report(report: dict) -> None:
    """Per-file table, messages, and totals."""
    rows = [(f["path"], f["status"], f["records_in"], f["accepted"], f["quarantined"], f["inserted"], f["updated"])
            for f in report["files"]]
    print_table(["file", "status", "in", "accepted", "quarantined", "new", "updated"], rows,
                title=f"ingest {report['kind']} — run {report['run_id']}")
    for f in report["files"]:
        for note in f["messages"] + ([f"error: {f['error']}"] if f["error"] else []):
            typer.echo(f"  {Path(f['path']).name}: {note}")
    t = report["totals"]
    typer.echo(f"{t['files']} file(s): {t['records_in']} records in, {t['accepted']} accepted, "
               f"{t['quarantined']} quarantined, {t['failed_files']} failed, {t['unchanged_files']} unchanged")


@app.command("tickets")
def tickets_command(
    ctx: typer.Context,
    paths: list[Path] = _PATHS,
    mapping: Path | None = typer.Option(None, "--mapping", help="YAML field mapping; detected when omitted."),
    force: bool = _FORCE, as_json: bool = _JSON, use_flow: bool = _FLOW, wait: float | None = _WAIT,
) -> None:
    """Tickets from JSONL, JSON, CSV or Parquet exports (JIRA-style layouts need no mapping)."""
    _run(ctx, "tickets", paths, force, as_json, use_flow, wait, mapping_file=mapping)


@app.command("logs")
def logs_command(
    ctx: typer.Context,
    paths: list[Path] = _PATHS,
    log_format: str | None = typer.Option(
        None, "--log-format", help="Format name, or a template like '<Date> <Time> <Level> <Content>'; "
        "detected per file when omitted."),
    incident: str | None = typer.Option(None, "--incident", help="Incident id these logs belong to."),
    year: int | None = typer.Option(
        None, "--year", min=1970, max=2100, help="Year of timestamps that carry none (classic syslog, IOS-XR); "
        "overrides the log_default_year setting. Without it: a date in the folders or file name, else the year "
        "nearest the tickets already ingested, else the file's modification year. A file read before in another "
        "year is read again."),
    force: bool = _FORCE, as_json: bool = _JSON, use_flow: bool = _FLOW, wait: float | None = _WAIT,
) -> None:
    """Log files (syslog, FRR, IOS-XR, nginx, dnsmasq, Loghub formats; .gz read directly)."""
    if year is not None:
        ctx.obj = ctx.obj.model_copy(update={"log_default_year": year})
    _run(ctx, "logs", paths, force, as_json, use_flow, wait, log_format=log_format, incident_id=incident)


@app.command("docs")
def docs_command(
    ctx: typer.Context,
    paths: list[Path] = _PATHS,
    force: bool = _FORCE, as_json: bool = _JSON, use_flow: bool = _FLOW, wait: float | None = _WAIT,
) -> None:
    """Documentation (rst, markdown, text, html, jsonl catalogues), chunked by section."""
    _run(ctx, "docs", paths, force, as_json, use_flow, wait)


@app.command("incidents")
def incidents_command(
    ctx: typer.Context,
    paths: list[Path] = typer.Argument(..., help="Corpus folders written by `faultline corpus generate`."),
    force: bool = _FORCE, as_json: bool = _JSON, wait: float | None = _WAIT,
) -> None:
    """Generated incidents: tickets, device logs, snapshots and ground truth (invalid ones quarantined)."""
    from faultline import db
    from faultline.ingest.incidents import ingest_incidents

    settings = ctx.obj
    with _locked(ctx, "incidents", wait), closing(db.open_warehouse(settings)) as conn:
        report = ingest_incidents(conn, settings, paths, force=force, progress=settings.progress and not as_json)
    data = report.as_dict()
    if as_json:
        print_json(data)
    else:
        typer.echo(f"run {data['run_id']}: {data['loaded']} incident(s) loaded, {len(data['invalid'])} invalid "
                   f"(quarantined), {len(data['failed'])} failed; files: {data['files']}")
        for incident, error in data["failed"].items():
            typer.echo(f"  {incident}: {error}")
    if data["failed"]:
        raise typer.Exit(1)


@app.command("inventory")
def inventory_command(
    ctx: typer.Context,
    path: Path = typer.Argument(..., help="Inventory folder holding hosts.yaml (groups.yaml, defaults.yaml optional)."),
    name: str | None = typer.Option(None, "--name", help="Inventory name; the folder's name when omitted."),
    force: bool = _FORCE, as_json: bool = _JSON, wait: float | None = _WAIT,
) -> None:
    """A nornir-style SimpleInventory folder: hosts and links replace that inventory's snapshot (docs/inventory.md)."""
    from faultline import db
    from faultline.ingest.inventory import ingest_inventory

    with _locked(ctx, "inventory", wait), closing(db.open_warehouse(ctx.obj)) as conn:
        report = ingest_inventory(conn, ctx.obj, path, name=name, force=force).as_dict()
    if as_json:
        print_json(report)
    else:
        print_report(report)
    if report["totals"]["failed_files"]:
        raise typer.Exit(1)
