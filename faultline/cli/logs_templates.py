"""`faultline logs templates FILE... [--log-format F] [--top N] [--json]`: DRAIN3 templates of log files.

The files are read and parsed in memory (not ingested); the templates are stored in
`log_templates` under an ad-hoc incident id derived from the files, so the same files always
land on the same id and a rerun replaces its earlier rows.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Optional

import typer


def _files(paths: list[Path]) -> list[Path]:
    from faultline.errors import FaultlineError

    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(sorted(p for p in path.rglob("*") if p.is_file()))
        elif path.is_file():
            found.append(path)
        else:
            raise FaultlineError(f"log file {path} does not exist", fix="check the path")
    if not found:
        raise FaultlineError("no log files found", fix="pass log files, or folders holding them")
    return found


def read_log_lines(paths: list[Path], log_format: str | None, default_year: int | None) -> Any:
    """Parse the files into one frame (source_file, line_no, parsed columns), file by file."""
    import polars as pl

    from faultline.errors import FaultlineError
    from faultline.ingest.logformats import format_from_template, parse_lines
    from faultline.ingest.reading import binary_reason, read_file, text_lines

    fmt: Any = format_from_template(log_format) if log_format and "<" in log_format else log_format
    frames = []
    for path in _files(paths):
        raw = read_file(path)
        why = binary_reason(raw.data)
        if why:
            raise FaultlineError(f"{path} is not a text log: it {why}", fix="pass text logs (gzip is read directly)")
        year = default_year or datetime.fromtimestamp(path.stat().st_mtime).year
        parsed = parse_lines(text_lines(raw.data).select("line_no", "raw"), fmt=fmt, default_year=year)
        frames.append(parsed.with_columns(pl.lit(str(path.resolve())).alias("source_file")))
    return pl.concat(frames, how="vertical_relaxed")


def templates_command(
    ctx: typer.Context,
    files: list[Path] = typer.Argument(..., help="Log files or folders (not ingested; read as they are)."),
    log_format: Optional[str] = typer.Option(
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
    from faultline.logs.templates import (adhoc_incident_id, default_miner_config, mine_templates,
                                          template_stats, write_templates)

    settings = ctx.obj
    lines = read_log_lines(files, log_format, settings.log_default_year)
    formats = [f for f in lines.get_column("format").unique().to_list() if f and f != "raw"]
    config = default_miner_config()
    messages = lines.select(pl.coalesce("message", "raw")).to_series()
    mined = mine_templates(messages, config, fmt=formats[0] if len(formats) == 1 else None)
    incident_id = adhoc_incident_id(files)
    conn = db.connect(settings.duckdb_path)
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
