"""ASTRA on the command line: `faultline report INCIDENT` (a report with its claims and evidence) and
`faultline eval astra --corpus DIR` (the evaluation against ground truth; registered in `cli/eval.py`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from faultline.cli.output import exit_unless_done, print_json, print_table


def _analyst(llm: str | None) -> str:
    return f"llm:{llm}" if llm else "deterministic"


def report_command(
    ctx: typer.Context,
    incident_id: str = typer.Argument(..., help="Incident id (or ticket id) in the warehouse."),
    llm: str | None = typer.Option(None, "--llm", help="litellm model for the LLM steps, e.g. "
                                      "openai/gpt-4o-mini [default: the deterministic analyst]."),
    rounds: int = typer.Option(5, "--rounds", min=1, max=5, help="Most judge/refine rounds."),
    rerun: bool = typer.Option(False, "--rerun", help="Analyse again even if a stored analysis exists."),
    as_json: bool = typer.Option(False, "--json", help="Print the analysis (and its evaluation) as JSON."),
) -> None:
    """Print the ASTRA report of INCIDENT: stored if already analysed, else analysed now and stored (with its
    scores when the incident has a ground truth). Exit status 2 when the analysis failed (with --json too, after
    the JSON, whose "error" says why)."""
    from faultline import db
    from faultline.astra.incident import load_incident
    from faultline.astra.store import load_result

    settings = ctx.obj
    analyst = _analyst(llm)
    conn = db.open_warehouse(settings)
    try:
        incident = load_incident(conn, incident_id)
        result = None if rerun else load_result(conn, incident.incident_id, analyst)
        stored = result is not None
        if stored:
            from faultline.astra.unit import score_stored

            score = score_stored(conn, result, incident)
        else:
            from faultline.astra.unit import run_astra
            from faultline.errors import FaultlineError

            try:
                done = run_astra(settings, conn, incident.incident_id, analyst=analyst, max_rounds=rounds)
            except FaultlineError as exc:
                if as_json:  # a script reads the failure on stdout too; the exit status still says it failed
                    print_json({"incident": incident.model_dump(mode="json"), "stored": False, "result": None,
                                "evaluation": None, "error": exc.message, "fix": exc.fix})
                raise
            result, score = done.result, done.score
    finally:
        conn.close()
    if as_json:
        print_json({"incident": incident.model_dump(mode="json"), "stored": stored,
                    "result": result.model_dump(mode="json"),
                    "evaluation": score.model_dump(mode="json") if score else None})
        return
    _print_report(result, score, stored)


def _print_report(result: Any, score: Any, stored: bool) -> None:
    final = result.rounds[-1]
    typer.echo(final.report.text.rstrip())
    typer.echo("")
    status = {e.claim_id: e for e in result.evidence}
    rows = []
    for claim in result.claims:
        ev = status.get(claim.claim_id)
        rows.append([claim.round, claim.agent, claim.tag or "", ev.status if ev else "UNVERIFIED",
                     ev.confidence if ev else "", claim.text, ev.quote if ev else ""])
    print_table(["round", "agent", "tag", "evidence", "confidence", "claim", "quote"], rows,
                title=f"claims and evidence ({len(result.claims)})")
    round_rows = [[r.round, " ".join(f"{s.criterion}={s.score}" for s in r.scores), "yes" if r.revise else "no",
                   len(r.followups), f"{r.elapsed_s:.2f}", ", ".join(dict.fromkeys(s.judge for s in r.scores))]
                  for r in result.rounds]
    print_table(["round", "judge", "revise", "follow-ups", "seconds", "judged by"], round_rows, title="rounds")
    origin = "stored analysis" if stored else "new analysis (stored)"
    typer.echo(f"{origin} by {result.analyst}, {result.elapsed_s:.2f} s")
    if score is not None:
        typer.echo(f"against ground truth: accuracy {score.accuracy}/5 ({score.accuracy_rule}); completeness "
                   f"{score.completeness:.2f}; fabricated identifiers {len(score.fabricated)} of {score.identifiers}"
                   + (f" ({', '.join(score.fabricated)})" if score.fabricated else ""))


def eval_astra_command(
    ctx: typer.Context,
    corpus: Path = typer.Option(..., "--corpus", help="Corpus root with history/ and backlog/ (e.g. data/sample), "
                                "or a folder of incidents; loaded if needed."),
    extra: list[Path] = typer.Option([], "--with", help="More incident or doc folders to load as context "
                                     "(history, documentation); repeatable."),
    llm: str | None = typer.Option(None, "--llm", help="litellm model for the LLM steps [default: deterministic]."),
    rounds: int = typer.Option(5, "--rounds", min=1, max=5, help="Most judge/refine rounds per incident."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Evaluate only the first N incidents."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary and per-incident scores as JSON."),
) -> None:
    """Analyse every open incident of a corpus with ASTRA and score it: accuracy rubric, completeness,
    fabricated identifiers, verified evidence (claims about the incident), reference claims (docs, resolved
    tickets), per-round means (rows in `evaluations`, method astra)."""
    from faultline import db
    from faultline.astra.batch import evaluate_incidents, load_corpus

    settings = ctx.obj
    conn = db.open_warehouse(settings)
    try:
        ids = load_corpus(conn, settings, corpus, extra=list(extra))[:limit]
        batch = evaluate_incidents(conn, settings, ids, analyst=_analyst(llm), max_rounds=rounds,
                                   progress=settings.progress and not as_json)
    finally:
        conn.close()
    if as_json:
        print_json(batch.as_dict())
    else:
        _print_summary(batch)
    exit_unless_done(len(batch.scores), len(batch.failures), "incidents", what=f"in {corpus}")


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _print_summary(batch: Any) -> None:
    from faultline.astra.evaluate import summarise

    s = summarise(batch.scores)
    typer.echo(f"ASTRA evaluation run {batch.run_id}: {s.incidents} incidents scored ({s.faulty} faulty, "
               f"{s.healthy} healthy), {len(batch.failures)} failed, {len(batch.skipped)} without ground truth")
    print_table(["accuracy", "faulty incidents"], [[k, v] for k, v in sorted(s.accuracy_distribution.items())],
                title="accuracy rubric (0-5) over faulty incidents")
    print_table(["figure", "value"], [
        ["accuracy >= 3", _pct(s.share_accuracy_ge3)], ["accuracy >= 4", _pct(s.share_accuracy_ge4)],
        ["mean accuracy", _num(s.mean_accuracy)], ["healthy controls answered 'no fault'", _pct(s.healthy_correct)],
        ["mean completeness", _pct(s.mean_completeness)],
        ["reports with a fabricated identifier", _pct(s.reports_with_fabricated)],
        ["fabricated identifiers (pooled)", _pct(s.fabricated_identifier_rate)],
        ["claims about this incident with verified evidence", _pct(s.verified_share)],
        ["reference claims (docs, resolved tickets)",
         f"{_pct(s.reference_share)} ({s.reference_claims} of {s.claims})"],
        ["mean accuracy delta (last - first round)", _num(s.mean_accuracy_delta)],
        ["mean judge delta (last - first round)", _num(s.mean_judge_delta)],
        ["seconds per incident (mean / max)", f"{_num(s.seconds_per_incident)} / {_num(s.max_seconds)}"],
    ], title="summary")
    print_table(["round", "incidents", "accuracy", "completeness", "judge mean"],
                [[r.round, r.incidents, f"{r.accuracy:.2f}", _pct(r.completeness), _num(r.judge)]
                 for r in s.per_round], title="per round")
    for source, (count, why) in batch.missing_sources().items():
        typer.echo(f"analysed without {source}: {count} of {len(batch.scores)} incidents ({why})")
    for incident_id, message in sorted(batch.failures.items()):
        typer.echo(f"failed {incident_id}: {message}")
