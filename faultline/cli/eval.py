"""`faultline eval sade|astra|verdict`: score an analysis method against a corpus's ground truth."""

from __future__ import annotations

import typer

from faultline.cli.astra import eval_astra_command
from faultline.cli.sade import eval_sade_command
from faultline.cli.verdict import eval_verdict_command

app = typer.Typer(help="Evaluate an analysis method against ground truth.", no_args_is_help=True)
app.command("sade")(eval_sade_command)
app.command("astra")(eval_astra_command)
app.command("verdict")(eval_verdict_command)
