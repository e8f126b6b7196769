"""`faultline marts refresh|list`: rebuild the SQL marts of `warehouse/marts/` and show what they hold."""

from __future__ import annotations

import typer

from faultline.cli.output import print_json, print_table

app = typer.Typer(help="SQL marts (warehouse/marts): refresh them and list what each holds.", no_args_is_help=True)


@app.command("refresh")
def refresh_command(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print each mart's rows, seconds and failed tests as JSON."),
    full: bool = typer.Option(False, "--full", help="Rebuild the incremental marts whole too, not only the "
                                                    "incidents written since the last refresh."),
) -> None:
    """Refresh every mart in one transaction and run its tests; exits 1 when a data test failed.

    Marts marked incremental rebuild only the incidents whose analyses changed since the last refresh."""
    from faultline import db
    from faultline.marts import refresh_marts
    from faultline.runlock import settings_lock

    with settings_lock(ctx.obj, "marts refresh"):
        conn = db.open_warehouse(ctx.obj)
        try:
            results = refresh_marts(conn, ctx.obj, full=full)
        finally:
            conn.close()
    failed = sum(len(r.failed_tests) for r in results)
    if as_json:
        print_json([{"mart": r.name, "rows": r.rows, "seconds": round(r.seconds, 4),
                     "refreshed_incidents": r.incidents if r.incremental else None,
                     "failed_tests": [{"test": f.test, "message": f.message} for f in r.failed_tests]}
                    for r in results])
    else:
        print_table(["mart", "rows", "refreshed", "seconds", "failed tests"],
                    [(r.name, r.rows, f"{r.incidents} incident(s)" if r.incremental else "whole", f"{r.seconds:.3f}",
                      "; ".join(f"{f.test} -> {f.message}" for f in r.failed_tests) or "-") for r in results],
                    title=f"marts refreshed in {ctx.obj.duckdb_path}")
        typer.echo(f"{len(results)} mart(s), {failed} failed test(s)")
    if failed:
        raise typer.Exit(1)


@app.command("list")
def list_command(as_json: bool = typer.Option(False, "--json", help="Print as JSON.")) -> None:
    """List the marts with their grain, columns and tests (from their yml files)."""
    from faultline.marts import list_marts

    specs = list_marts()
    if as_json:
        print_json([{"mart": s.name, "grain": s.grain, "description": s.description, "columns": s.columns,
                     "tests": s.tests, "depends_on": s.depends_on, "incremental": s.incremental,
                     "sql": str(s.sql_path)} for s in specs])
        return
    print_table(["mart", "grain", "columns", "tests", "refreshed"],
                [(s.name, s.grain, len(s.columns), len(s.tests), "per incident" if s.incremental else "whole")
                 for s in specs])
