"""`faultline logs ...`: log excerpts and templates."""

from __future__ import annotations

import typer

app = typer.Typer(help="The log engine: excerpts (five-level filter) and DRAIN3 templates.", no_args_is_help=True)


def _register() -> None:
    from faultline.cli import logs_excerpt, logs_templates

    app.command("excerpt")(logs_excerpt.excerpt_command)
    app.command("templates")(logs_templates.templates_command)


_register()
