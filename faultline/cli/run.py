"""`faultline run`: the main job, as a Prefect flow."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from faultline.cli.output import print_json


def run_command(
    ctx: typer.Context,
    corpus: Optional[Path] = typer.Option(None, "--corpus", help="Folder with history/ and backlog/ (generated incidents) and/or tickets/, logs/, docs/ "
                                          "(default: the sample the project ships)."),
    k: int = typer.Option(3, "--k", help="Similar tickets and doc sections per open ticket."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Run the main job: ingest the corpus, refresh search indexes, gather evidence for open tickets."""
    from faultline.resources import sample_dir
    from flows.main import main_flow

    folder = corpus or sample_dir()
    result = main_flow(corpus=str(folder), settings=ctx.obj, k=k)
    if as_json:
        print_json(result)
        return
    typer.echo(f"run {result['run_id']} (Prefect flow run {result['prefect_flow_run_id']})")
    for kind, totals in result["ingest"].items():
        if "loaded" in totals:  # a generated corpus folder
            typer.echo(f"  ingest {kind}: {totals['loaded']} incident(s) loaded, {len(totals['invalid'])} invalid, "
                       f"{len(totals['failed'])} failed; files {totals['files']}")
            continue
        typer.echo(f"  ingest {kind}: {totals['files']} file(s), {totals['accepted']} accepted, "
                   f"{totals['quarantined']} quarantined, {totals['failed_files']} failed, "
                   f"{totals['unchanged_files']} unchanged")
    for kind, stats in result["index"].items():
        typer.echo(f"  index {kind}: {stats['rows_total']} rows, {stats['embedded']} embedded")
    typer.echo(f"  open tickets: {result['open_tickets']}")
    for item in result["evidence"]:
        t = item["ticket"]
        typer.echo(f"\n{t['ticket_id']}  {t['title']}")
        for hit in item["similar"]:
            typer.echo(f"  similar  {hit['score']:.3f}  {hit['id']}  {hit['title']}")
        for hit in item["docs"]:
            typer.echo(f"  doc      {hit['score']:.3f}  {hit['title']}")
        excerpt = item.get("log_excerpt")
        if excerpt:
            counts = excerpt["level_counts"]
            typer.echo(f"  logs     excerpt of {excerpt['excerpt_lines']} of {excerpt['input_lines']} lines "
                       f"(L1 {counts['L1']}, L2 {counts['L2']}, L3 {counts['L3']}, L4 {counts['L4']}, "
                       f"L5 {counts['L5']}, context {counts['context']})")
            for text in excerpt["key_lines"]:
                typer.echo(f"           {text[:150]}")
    typer.echo(f"\nwarehouse: {ctx.obj.duckdb_path}  (try: faultline db sql \"select * from runs\")")
