"""`faultline logs templates FILE... [--log-format F] [--top N] [--json]`: DRAIN3 templates of log files.

The files are read and parsed in memory (not ingested); the templates are stored in
`log_templates` under an ad-hoc incident id derived from the files, so the same files always
land on the same id and a rerun replaces its earlier rows.
"""

from __future__ import annotations

from pathlib import Path

import typer


def templates_command(
    ctx: typer.Context,
    files: list[Path] = typer.Argument(..., help="Log files or folders (not ingested; read as they are)."),
    log_format: str | None = typer.Option(
        None, "--log-format", help="Format name, or a template like '<Date> <Time> <Level> <Content>'; "
        "detected per file when omitted."),
    as_json: bool = typer.Option(False, "--json", help="Print the templates as JSON."),
    top: int = typer.Option(50, "--top", min=1, help="Show the N templates with the most lines."),
) -> None:
    """DRAIN3 templates of log files, most frequent first; stored in log_templates (ad-hoc incident)."""
    import json

    import polars as pl

    from faultline import db
    from faultline.cli.output import print_json, print_table
    from faultline.logs.pipeline import lines_from_files
    from faultline.logs.templates import (
        adhoc_incident_id,
        default_miner_config,
        mine_templates,
        template_stats,
        write_templates,
    )

    settings = ctx.obj
    lines = lines_from_files(files, settings, log_format)
    formats = [f for f in lines.get_column("format").unique().to_list() if f and f != "raw"]
    config = default_miner_config()
    messages = lines.select(pl.coalesce("message", "raw")).to_series()
    mined = mine_templates(messages, config, fmt=formats[0] if len(formats) == 1 else None)
    incident_id = adhoc_incident_id(files)
    conn = db.open_warehouse(settings)
    try:
        write_templates(conn, incident_id, lines, mined, config)
    finally:
        conn.close()
    ranked = template_stats(lines, mined).sort(["line_count", "template_id"], descending=[True, False])
    shown = ranked.head(top)
    if as_json:
        print_json({
            "incident_id": incident_id,
            "lines": lines.height,
            "formats": sorted(formats),
            "templates_total": ranked.height,
            "mined_messages": mined.mined_messages,
            "miner_config": json.loads(config.as_json()),
            "templates": shown.to_dicts(),
        })
        return
    rows = shown.select("template_id", "line_count", "distinct_lines", "worst_severity", "template").rows()
    print_table(["id", "lines", "distinct", "worst", "template"], rows,
                title=f"templates of {lines.height} lines — incident {incident_id}")
    typer.echo(f"{ranked.height} template(s) from {mined.mined_messages} distinct masked message(s); "
               f"showing {len(rows)}")
