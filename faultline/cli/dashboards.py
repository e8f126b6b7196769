"""`faultline dashboards build`: write the static dashboard site from the warehouse marts."""

from __future__ import annotations

from pathlib import Path

import typer

app = typer.Typer(help="Static HTML dashboards built from the SQL marts (open them from disk).",
                  no_args_is_help=True)


@app.command("build")
def build_command(
    ctx: typer.Context,
    out: Path | None = typer.Option(None, "--out", help="Folder to write the site into [default: the "
                                       "dashboards_dir setting, else a dashboards/ folder beside the warehouse file]."),
    refresh: bool = typer.Option(True, "--refresh/--no-refresh",
                                 help="Refresh the marts first (default), or build from the marts as they are."),
) -> None:
    """Build the site (overview, incidents, stratification, rounds, SADE, cost, a page per incident); print index.html."""  # noqa: E501 - typer's help text; a wrapped docstring shows wrapped in the command list
    from dashboards import build_dashboards
    from faultline import db
    from faultline.marts import refresh_marts
    from faultline.runlock import settings_lock

    settings = ctx.obj
    target = out or settings.dashboards_folder()
    with settings_lock(settings, "dashboards build"):
        conn = db.open_warehouse(settings)
        try:
            if refresh:
                failed = [f"{r.name}: {f.test}" for r in refresh_marts(conn, settings) for f in r.failed_tests]
                if failed:
                    typer.secho(f"warning: {len(failed)} mart test(s) failed ({'; '.join(failed[:5])}); "
                                "see `faultline marts refresh`", fg="yellow", err=True)
            result = build_dashboards(conn, target)
        finally:
            conn.close()
    typer.echo(f"{len(result.pages)} page(s) ({result.incident_pages} incident page(s)) in {result.seconds:.2f}s",
               err=True)
    if result.missing_marts:
        typer.echo(f"marts not built yet (their pages say so): {', '.join(result.missing_marts)}", err=True)
    typer.echo(str(result.index))
