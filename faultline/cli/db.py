"""`faultline db ...`: migrations and ad-hoc SQL over the warehouse."""

from __future__ import annotations

import typer

from faultline.cli.output import print_json, print_table

app = typer.Typer(help="The DuckDB warehouse: migrations and SQL.", no_args_is_help=True)


@app.command("migrate")
def migrate_command(ctx: typer.Context) -> None:
    """Apply pending migrations from warehouse/migrations/."""
    from faultline import db
    from faultline.runlock import settings_lock

    with settings_lock(ctx.obj, "db migrate"):
        conn = db.open_warehouse(ctx.obj, auto_migrate=False)
        try:
            applied = db.migrate(conn)
        finally:
            conn.close()
    if applied:
        for name in applied:
            typer.echo(f"applied {name}")
    else:
        typer.echo(f"{ctx.obj.duckdb_path} is up to date")


@app.command("sql")
def sql_command(
    ctx: typer.Context,
    query: str = typer.Argument(..., help="One SQL statement, e.g. \"select count(*) from tickets\"."),
    as_json: bool = typer.Option(False, "--json", help="Print rows as a JSON list of objects."),
) -> None:
    """Run SQL against the warehouse and print the result."""
    from faultline import db

    conn = db.open_warehouse(ctx.obj)
    result = db.run_query(conn, query)
    if as_json:
        print_json(result.as_dicts())
    else:
        print_table(result.columns, result.rows)
        typer.echo(f"{len(result.rows)} row(s)")


@app.command("tables")
def tables_command(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """List warehouse tables with their grain and row counts."""
    from faultline import db
    from faultline.catalog import load_table_docs

    conn = db.open_warehouse(ctx.obj)
    docs = load_table_docs()
    names = [r[0] for r in conn.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' ORDER BY 1"
    ).fetchall()]
    rows = []
    for name in names:
        count = conn.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0]
        doc = docs.get(name)
        rows.append((name, count, doc.grain if doc else "(undocumented)"))
    if as_json:
        print_json([{"table": n, "rows": c, "grain": g} for n, c, g in rows])
    else:
        print_table(["table", "rows", "grain"], rows)
