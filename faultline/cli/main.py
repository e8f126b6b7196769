"""The `faultline` command. Heavy libraries are imported inside the commands that use them."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from faultline.offline import apply_offline_env

app = typer.Typer(
    name="faultline",
    help="Evidence-backed root-cause analysis over network ticket backlogs.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@app.callback()
def _root(
    ctx: typer.Context,
    db: Path | None = typer.Option(None, "--db", help="DuckDB warehouse file [env FAULTLINE_DUCKDB_PATH]."),
    lancedb: Path | None = typer.Option(None, "--lancedb", help="LanceDB folder [env FAULTLINE_LANCEDB_DIR]."),
    config: Path | None = typer.Option(None, "--config", help="TOML settings file [env FAULTLINE_CONFIG]."),
) -> None:
    from faultline.config import load_settings

    ctx.obj = load_settings(config, duckdb_path=db, lancedb_dir=lancedb)


_registered: list[bool] = []


def _register() -> None:
    if _registered:
        return
    from faultline.cli import astra, corpus, db, ingest, lab, logs, mcp, sade, search
    from faultline.cli import eval as eval_cli

    _registered.append(True)

    app.add_typer(db.app, name="db")
    app.add_typer(ingest.app, name="ingest")
    app.add_typer(search.app, name="search")
    app.add_typer(logs.app, name="logs")
    app.add_typer(lab.app, name="lab")
    app.add_typer(corpus.app, name="corpus")
    app.add_typer(mcp.app, name="mcp")
    app.add_typer(eval_cli.app, name="eval")
    from faultline.cli import marts as marts_cli
    app.add_typer(marts_cli.app, name="marts")
    from faultline.cli import dashboards as dashboards_cli
    app.add_typer(dashboards_cli.app, name="dashboards")
    app.command("index")(search.index_command)
    app.command("diagnose")(sade.diagnose_command)
    app.command("report")(astra.report_command)
    from faultline.cli import verdict as verdict_cli
    app.command("verdict")(verdict_cli.verdict_command)
    from faultline.cli import nightly as nightly_cli
    app.command("nightly")(nightly_cli.nightly_command)
    from faultline.cli import demo as demo_cli
    app.command("demo")(demo_cli.demo_command)


def main(argv: list[str] | None = None) -> None:
    """Entry point: expected failures print a message and a fix, never a traceback."""
    apply_offline_env()
    from faultline.errors import FaultlineError

    _register()
    try:
        # without standalone mode click returns the code of typer.Exit instead of exiting
        code = app(args=argv, standalone_mode=False)
    except FaultlineError as exc:
        typer.secho(f"error: {exc.message}", fg="red", err=True)
        if exc.fix:
            typer.echo(f"  fix: {exc.fix}", err=True)
        sys.exit(getattr(exc, "exit_code", 2))  # a busy warehouse has its own code (faultline.runlock)
    except (typer.Abort, KeyboardInterrupt):
        typer.echo("aborted", err=True)
        sys.exit(130)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except Exception as exc:  # usage errors: typer carries its own copy of click
        if hasattr(exc, "show") and hasattr(exc, "exit_code"):
            exc.show()
            sys.exit(exc.exit_code)
        from faultline.diskspace import out_of_space

        full = out_of_space(exc)  # a full disk wherever it surfaced: the path and the space left, not a traceback
        if full is None:
            raise
        typer.secho(f"error: {full.message}", fg="red", err=True)
        typer.echo(f"  fix: {full.fix}", err=True)
        sys.exit(2)
    if isinstance(code, int) and code:
        sys.exit(code)


if __name__ == "__main__":
    main()
