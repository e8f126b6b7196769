"""`faultline logs excerpt --log FILE... [--ticket TEXT] [--similar TEXT...] [--json]`."""

from __future__ import annotations

import json
from pathlib import Path

import typer


def excerpt_command(
    ctx: typer.Context,
    log: list[Path] = typer.Option(..., "--log", help="Log file or folder; repeat for several."),
    ticket: str = typer.Option("", "--ticket", help="The ticket's title and description (L5 keywords)."),
    similar: list[str] = typer.Option(
        [], "--similar", help="Title and description of a similar ticket (L5 keywords); repeatable."),
    incident: str | None = typer.Option(
        None, "--incident", help="Incident id to store the excerpt under; default: an id derived from the files."),
    log_format: str | None = typer.Option(
        None, "--log-format", help="Format name, or a template like '<Date> <Time> <Level> <Content>'; "
        "detected per file when omitted."),
    as_json: bool = typer.Option(False, "--json", help="Print the excerpt record as JSON."),
) -> None:
    """The capped log excerpt of ASTRA's LogAgent: five-level filter, noise suppression, ±N context,
    DRAIN3 templates, collapse to the line cap. Stores the excerpt and the templates in the warehouse."""
    from faultline import db
    from faultline.cli.output import print_json
    from faultline.logs.pipeline import build_excerpt, lines_from_files, mine_incident_templates
    from faultline.logs.store import write_excerpt
    from faultline.logs.templates import adhoc_incident_id, default_miner_config, write_templates

    settings = ctx.obj
    lines = lines_from_files(log, settings, log_format)
    incident_id = incident or adhoc_incident_id(log)
    config = default_miner_config()
    mined = mine_incident_templates(lines, config)
    excerpt = build_excerpt(lines, settings=settings, ticket_text=ticket, similar_texts=similar,
                            incident_id=incident_id, miner_config=config, mined=mined)
    conn = db.open_warehouse(settings)
    try:
        write_templates(conn, incident_id, lines, mined, config)
        write_excerpt(conn, excerpt)
    finally:
        conn.close()
    if as_json:
        print_json(json.loads(excerpt.to_json()))
    else:
        typer.echo(excerpt.to_text())
