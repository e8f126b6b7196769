"""`faultline diagnose` and `faultline eval sade`: SADE on one incident, and scored over a corpus."""

from __future__ import annotations

from pathlib import Path

import typer

from faultline.cli.output import exit_unless_done, print_json, print_table


def _network(ctx: typer.Context, incident: str, backend: str, url: str | None,
             inventory: Path | None = None):
    """The network backend to open and the incident it diagnoses: a recorded snapshot (an incident folder, a
    snapshot file, or an ingested incident's), the running lab, devices over SSH, or an MCP server."""
    from faultline.errors import FaultlineError
    from faultline.network.backends import NetworkTarget
    from faultline.outcome import IncidentRef

    if backend == "ssh" and inventory is None:
        raise FaultlineError("--backend ssh needs --inventory",
                             fix="pass the folder holding hosts.yaml (e.g. one `faultline lab inventory` wrote)")
    if backend != "snapshot":
        return NetworkTarget(incident_id=incident, inventory=inventory, url=url), IncidentRef(
            incident_id=incident, ticket_id=incident)
    path = Path(incident)
    if path.is_dir():
        path = path / "snapshot.json.gz"
    if not path.is_file():
        from faultline import db
        from faultline.outcome import incident_ref

        conn = db.open_warehouse(ctx.obj)
        try:
            recorded = incident_ref(conn, incident).snapshot_path
        finally:
            conn.close()
        if not recorded:
            raise FaultlineError(f"{incident}: neither an incident folder, a snapshot file nor an ingested incident "
                                 "with a snapshot", fix="pass data/sample/backlog/<id> or ingest the corpus first")
        path = Path(recorded)
    ref = IncidentRef(incident_id=path.parent.name, ticket_id=path.parent.name, snapshot_path=str(path))
    return NetworkTarget(incident_id=ref.incident_id, snapshot=path), ref


def diagnose_command(
    ctx: typer.Context,
    incident: str = typer.Argument(..., help="Incident folder, snapshot file or ingested incident id."),
    backend: str = typer.Option("snapshot", "--backend", help="snapshot | lab | mcp | ssh"),
    url: str | None = typer.Option(None, "--url", help="MCP server URL or command (with --backend mcp)."),
    inventory: Path | None = typer.Option(None, "--inventory", help="Inventory folder of the devices (with "
                                             "--backend ssh): hosts.yaml, groups.yaml, defaults.yaml, known_hosts."),
    policy: str = typer.Option("deterministic", "--policy", help="deterministic | llm"),
    model: str | None = typer.Option(None, "--model", help="litellm model for --policy llm."),
    method: str = typer.Option("sade", "--method", help="sade (phase-gated) | flat (every scan everywhere)."),
    save: bool = typer.Option(False, "--save", help="Store steps, flags and submission in the warehouse (and the "
                              "scores, when the incident has a ground truth there)."),
    ticket: str | None = typer.Option(None, "--ticket", help="What the user reported (default: the incident "
                                         "folder's ticket.json title and description); \"\" for none."),
    as_json: bool = typer.Option(False, "--json", help="Print the whole diagnosis as JSON."),
) -> None:
    """Diagnose one incident with SADE and print its submission, steps and flags; exit status 1 when the diagnosis
    ended without a submission (the network could not be probed, or the policy gave up), with --json too."""
    from faultline.network.backends import open_backend
    from faultline.sade.unit import run_sade

    target, ref = _network(ctx, incident, backend, url, inventory)
    if ticket is None:
        from faultline.sade.evaluate import ticket_text

        folder = Path(incident) if Path(incident).is_dir() else Path(incident).parent
        ticket = ticket_text(folder) if backend == "snapshot" else ""
    conn = None
    if save:
        from faultline import db

        conn = db.open_warehouse(ctx.obj)
    try:
        with open_backend(backend, ctx.obj, target) as net:
            diag = run_sade(ctx.obj, ref, conn=conn, network=net, ticket=ticket, method=method,  # type: ignore[arg-type]
                            policy="llm" if policy == "llm" else "deterministic", llm_model=model,
                            on_error="score").diagnosis
    finally:
        if conn is not None:
            conn.close()
    _print_diagnosis(diag, ref.incident_id, as_json)


def _print_diagnosis(diag, incident_id: str, as_json: bool) -> None:
    """The diagnosis as JSON or tables; exit status 1 when it ended without a submission (its status and error
    say why), with --json too."""
    if as_json:
        print_json(diag.model_dump(mode="json"))
        if diag.submission is None:
            raise typer.Exit(1)
        return
    print_table(["#", "phase", "tool", "args", "flags"],
                [(st.seq, st.phase, st.tool, " ".join(f"{k}={v}" for k, v in st.args.items()), ", ".join(st.flags))
                 for st in diag.steps], title=f"{incident_id}: {diag.tool_calls} tool calls, {diag.probe_calls} probes")
    sub = diag.submission
    if sub is None:
        typer.echo(f"no submission ({diag.error})")
        raise typer.Exit(1)
    typer.echo(f"is_anomaly={sub.v1.is_anomaly} faulty_devices={sub.v1.faulty_devices} "
               f"root_cause_name={sub.v1.root_cause_name}")
    typer.echo(f"v2: {[rc.model_dump() for rc in sub.v2.root_causes]}")
    typer.echo(sub.summary)


def eval_sade_command(
    ctx: typer.Context,
    corpus: Path = typer.Option(..., "--corpus", help="Corpus folder of recorded incidents."),
    method: list[str] = typer.Option(["sade"], "--method", help="sade and/or flat (repeatable)."),
    limit: int | None = typer.Option(None, "--limit", help="Only the first N incidents."),
    policy: str = typer.Option("deterministic", "--policy", help="deterministic | llm (SADE's method only)."),
    model: str | None = typer.Option(None, "--model", help="Model for --policy llm, e.g. local or openai/gpt-4o-mini "
                                     "[default: sade_llm_model]."),
    as_json: bool = typer.Option(False, "--json", help="Print per-incident scores and summaries as JSON."),
) -> None:
    """Score SADE on every recorded incident of a corpus: overall, per label and per size. An incident that
    cannot be evaluated (a damaged snapshot) is listed as failed and the others go on; exit status 1 when
    none was scored."""
    from faultline.errors import FaultlineError
    from faultline.sade.evaluate import evaluate_each
    from faultline.sade.scoring import summarise

    if policy not in ("deterministic", "llm"):
        raise FaultlineError(f"unknown --policy {policy!r}", fix="use --policy deterministic or --policy llm")
    done, failed = evaluate_each(corpus, methods=list(method), limit=limit, settings=ctx.obj,
                                 policy="llm" if policy == "llm" else "deterministic", llm_model=model)
    scores, diags = [ev.score for ev in done], [ev.diagnosis for ev in done]
    tables = {g or "overall": summarise(scores, group_by=g) for g in (None, "label", "size")}
    if as_json:
        print_json({"summaries": {k: [s.model_dump() for s in v] for k, v in tables.items()},
                    "incidents": [{"score": s.model_dump(), "probe_calls": d.probe_calls, "tool_calls": d.tool_calls,
                                   "elapsed_s": d.elapsed_s,
                                   "submission": d.submission.model_dump() if d.submission else None}
                                  for s, d in zip(scores, diags)],
                    "failures": [{"incident_id": f.incident_id, "method": f.method, "error": f.error}
                                 for f in failed]})
    else:
        for name, rows in tables.items():
            print_table(["method", name, "n", "detection", "loc F1", "RCA F1", "v2 joint F1", "no-sub"],
                        [(r.method, r.group or "all", r.n, r.detection, r.loc_f1, r.rca_f1, r.v2_f1,
                          r.no_submission_rate) for r in rows], title=f"SADE on {corpus} ({name})")
        for f in failed:
            typer.echo(f"failed {f.method} {f.incident_id}: {f.error}")
    exit_unless_done(len(done), len(failed), "incident evaluations", what=f"in {corpus}")
