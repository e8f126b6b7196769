"""The verdict on the command line: `faultline verdict INCIDENT` (the stored verdict, or one fused now from the
stored analyses) and `faultline eval verdict --corpus DIR` (registered in `cli/eval.py`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from faultline.cli.output import exit_unless_done, print_json, print_table


def verdict_command(
    ctx: typer.Context,
    incident_id: str = typer.Argument(..., help="Incident id (or ticket id) in the warehouse."),
    refresh: bool = typer.Option(False, "--refresh", help="Fuse it again from the stored analyses (asking its "
                                 "recorded network about what the logs point at) and store it."),
    as_json: bool = typer.Option(False, "--json", help="Print the verdict record as JSON."),
) -> None:
    """Print the verdict of INCIDENT: one answer from its ticket, logs, history, docs and network diagnosis (fused now
    and stored, with its scores when the incident has a ground truth, unless one is stored)."""
    from faultline import db
    from faultline.outcome import incident_ref
    from faultline.verdict.store import load_verdict
    from faultline.verdict.unit import run_verdict

    settings = ctx.obj
    conn = db.open_warehouse(settings)
    try:
        verdict = None if refresh else load_verdict(conn, incident_id)
        if verdict is None:
            ref = incident_ref(conn, incident_id)
            verdict = run_verdict(settings, conn, ref, network_backend="snapshot").verdict
    finally:
        conn.close()
    if as_json:
        print_json(verdict.model_dump(mode="json"))
        return
    typer.echo(verdict.text.rstrip())


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def eval_verdict_command(
    ctx: typer.Context,
    corpus: Path = typer.Option(..., "--corpus", help="Corpus root with history/ and backlog/ (e.g. data/sample), "
                                "or a folder of incidents; loaded if needed."),
    extra: list[Path] = typer.Option([], "--with", help="More incident or doc folders to load as context; repeatable."),
    llm: str | None = typer.Option(None, "--llm", help="litellm model for ASTRA's LLM steps [default: deterministic]."),
    rounds: int = typer.Option(5, "--rounds", min=1, max=5, help="Most ASTRA judge/refine rounds per incident."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Evaluate only the first N incidents."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary and per-incident scores as JSON."),
) -> None:
    """Analyse every open incident of a corpus with ASTRA and SADE, fuse the verdict and score all three (rubric,
    NIKA metrics, fabricated identifiers; rows in `evaluations`, methods astra, sade and verdict)."""
    from faultline import db
    from faultline.verdict.batch import evaluate_corpus

    settings = ctx.obj
    conn = db.open_warehouse(settings)
    try:
        batch = evaluate_corpus(conn, settings, corpus, extra=list(extra),
                                analyst=f"llm:{llm}" if llm else "deterministic", max_rounds=rounds, limit=limit,
                                progress=settings.progress and not as_json)
    finally:
        conn.close()
    if as_json:
        print_json(batch.as_dict())
    else:
        _print(batch)
    exit_unless_done(len(batch.scores), len(batch.failures), "incidents", what=f"in {corpus}")


def _print(batch: Any) -> None:
    s = batch.summary
    typer.echo(f"Verdict evaluation run {batch.run_id}: {s.incidents} incidents ({s.faulty} faulty, {s.healthy} "
               f"healthy), {len(batch.failures)} failed, {len(batch.without_network)} without network evidence")
    figures = [("share of faulty with accuracy >= 3", "share_accuracy_ge3", _pct),
               ("mean accuracy (0-5)", "mean_accuracy", _num), ("RCA F1 (faulty)", "rca_f1", _num),
               ("detection", "detection", _num), ("healthy answered healthy", "healthy_answered_healthy", _pct),
               ("fabricated identifiers", "fabricated_identifiers", _num)]
    print_table(["figure", "verdict", "ASTRA alone", "SADE alone"],
                [[name, fmt(s.verdict.get(key)), fmt(s.astra.get(key)), fmt(s.sade.get(key))]
                 for name, key, fmt in figures], title="verdict beside ASTRA alone and SADE alone")
    print_table(["figure", "value"], [
        ["faulty verdicts with a fix from a precedent or the docs", _pct(s.verdict.get("fix_known"))],
        ["mean confidence", _num(s.verdict.get("mean_confidence"))],
        ["verified statements per verdict", _num(s.verdict.get("verified_claims_per_verdict"))],
        ["incidents where sources disagreed", str(s.disagreements)],
        ["... and the verdict was right", str(s.disagreements_right)],
        *[[f"decided by rule {rule}", str(n)] for rule, n in sorted(s.rules.items())]], title="verdicts")
    r = s.refinement
    if r:
        print_table(["figure", "value"], [
            ["verdicts that asked the network again", str(r.get("verdicts_checked"))],
            ["checks (confirmed)", f"{r.get('checks')} ({r.get('checks_confirmed')})"],
            ["answers changed by them", str(r.get("answers_changed"))],
            ["accuracy, round 2 - round 1 (mean)", _num(r.get("mean_accuracy_delta"))],
            ["RCA F1, round 2 - round 1 (mean)", _num(r.get("mean_rca_f1_delta"))],
            ["RCA F1 better / worse / same",
             f"{r.get('rca_f1_better')} / {r.get('rca_f1_worse')} / {r.get('rca_f1_same')}"]],
            title="refinement: the network asked again")
    for incident_id, message in sorted(batch.failures.items()):
        typer.echo(f"FAILED {incident_id}: {message}")
