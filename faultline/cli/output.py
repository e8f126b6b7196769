"""Printing results: a table for people, JSON (`--json`) for programs."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import typer


def _jsonable(value: Any) -> Any:
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def print_json(payload: Any) -> None:
    """Print one JSON document on stdout."""
    typer.echo(json.dumps(payload, default=_jsonable, ensure_ascii=False, indent=2))


def exit_unless_done(done: int, failed: int, unit: str, *, what: str = "") -> None:
    """Exit with status 1 and the count when no unit succeeded (every one failed, or there was none), so a
    script or a cron job notices; `what` says where (the corpus, the method)."""
    if done:
        return
    where = f" {what}" if what else ""
    message = f"all {failed} {unit}{where} failed" if failed else f"no {unit}{where} to process"
    typer.secho(f"error: {message}", fg="red", err=True)
    raise typer.Exit(1)


def print_table(columns: Sequence[str], rows: Iterable[Sequence[Any]], *, title: str | None = None) -> None:
    """Print rows as a terminal table (values longer than 120 characters are cut)."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, show_lines=False)
    for name in columns:
        table.add_column(name, overflow="fold")
    for row in rows:
        table.add_row(*("" if v is None else _short(v) for v in row))
    Console(width=200).print(table)


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else str(_jsonable(value)
                                                    if not isinstance(value, (int, float, list, dict, bool)) else value)
    return text if len(text) <= 120 else text[:117] + "..."
