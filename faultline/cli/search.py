"""`faultline search ...` and `faultline index`: build and query the LanceDB indexes."""

from __future__ import annotations

from dataclasses import asdict

import typer

from faultline.cli.output import print_json, print_table

app = typer.Typer(help="Search tickets and documentation (vector, full-text or hybrid).", no_args_is_help=True)

_KINDS = ("tickets", "docs")
_MODE_HELP = "vector (meaning), text (BM25 keywords) or hybrid (both fused)."
_WHERE_HELP = (
    "SQL prefilter, e.g. \"status = 'Closed' AND created_at < timestamp '2012-01-01 00:00:00'\" "
    "(tickets: status, resolution, created_at, resolved_at; docs: doc_id)."
)


def _run_search(ctx: typer.Context, kind: str, query: str, k: int | None, mode: str,
                where: str | None, as_json: bool) -> None:
    from faultline.retrieval.search import search

    settings = ctx.obj
    hits = search(settings, kind, query, k=k or settings.search_k, mode=mode, where=where)  # type: ignore[arg-type]
    if as_json:
        print_json([asdict(hit) for hit in hits])
        return
    if not hits:
        typer.echo("no matches")
        return

    def num(value: float | None) -> str:
        return "" if value is None else f"{value:.3f}"

    columns = ["rank", "id", "score", "vector", "text"] + (["created"] if kind == "tickets" else []) + ["title"]
    rows = []
    for hit in hits:
        created = [hit.created_at.strftime("%Y-%m-%d") if hit.created_at else ""] if kind == "tickets" else []
        rows.append([hit.rank, hit.id, num(hit.score), num(hit.vector_score), num(hit.text_score), *created,
                     hit.title])
    print_table(columns, rows, title=f"{kind} matching {query[:60]!r} ({mode})")


@app.command("tickets")
def tickets_command(
    ctx: typer.Context,
    query: str = typer.Argument(..., help="What to look for, e.g. a ticket summary or an error message."),
    k: int | None = typer.Option(None, "--k", "-k", min=1, help="Number of hits [default: search_k setting]."),
    mode: str = typer.Option("hybrid", "--mode", help=_MODE_HELP),
    where: str | None = typer.Option(None, "--where", help=_WHERE_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the hits as a JSON list."),
) -> None:
    """Find past tickets similar to QUERY."""
    _run_search(ctx, "tickets", query, k, mode, where, as_json)


@app.command("docs")
def docs_command(
    ctx: typer.Context,
    query: str = typer.Argument(..., help="What to look for, e.g. an error message or a protocol term."),
    k: int | None = typer.Option(None, "--k", "-k", min=1, help="Number of hits [default: search_k setting]."),
    mode: str = typer.Option("hybrid", "--mode", help=_MODE_HELP),
    where: str | None = typer.Option(None, "--where", help=_WHERE_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the hits as a JSON list."),
) -> None:
    """Find documentation sections relevant to QUERY."""
    _run_search(ctx, "docs", query, k, mode, where, as_json)


def index_command(
    ctx: typer.Context,
    kind: str = typer.Option("all", "--kind", help="Which index to sync: tickets, docs or all."),
    as_json: bool = typer.Option(False, "--json", help="Print the sync statistics as JSON."),
    rebuild: bool = typer.Option(False, "--rebuild", help="Drop the index (also a damaged one) and build it "
                                 "again from the warehouse, embedding every row."),
) -> None:
    """Sync the search indexes with the warehouse, embedding only new or changed rows (--rebuild: all rows)."""
    from faultline import db
    from faultline.errors import FaultlineError
    from faultline.retrieval.embed import Embedder
    from faultline.retrieval.index import sync_index
    from faultline.runlock import settings_lock

    if kind not in (*_KINDS, "all"):
        raise FaultlineError(f"unknown index {kind!r}", fix="use --kind tickets, docs or all")
    settings = ctx.obj
    show = settings.progress and not as_json
    with settings_lock(settings, "index sync"):
        conn = db.open_warehouse(settings)
        embedder = Embedder(settings)
        try:
            results = [sync_index(conn, settings, name, embedder, progress=show, rebuild=rebuild)  # type: ignore[arg-type]
                       for name in (_KINDS if kind == "all" else (kind,))]
        finally:
            conn.close()
    if as_json:
        print_json([asdict(stats) for stats in results])
        return
    print_table(["index", "rows", "embedded", "removed", "seconds"],
                [(s.kind, s.rows_total, s.embedded, s.removed, f"{s.seconds:.1f}") for s in results])
    for stats in results:
        if stats.rows_total == 0:
            typer.echo(f"no {stats.kind} in the warehouse yet: run `faultline ingest {stats.kind} FILE...` first")
