"""`faultline diagnose` and `faultline eval sade`: SADE on one incident, and scored over a corpus."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from faultline.cli.output import exit_unless_done, print_json, print_table


def _backend(ctx: typer.Context, incident: str, backend: str, url: Optional[str], inventory: Optional[Path] = None):
    from faultline.errors import FaultlineError
    from faultline.sade.backend import lab_backend, snapshot_backend, ssh_backend

    if backend == "lab":
        return lab_backend(ctx.obj), incident
    if backend == "ssh":
        if inventory is None:
            raise FaultlineError("--backend ssh needs --inventory",
                                 fix="pass the folder holding hosts.yaml (e.g. one `faultline lab inventory` wrote)")
        return ssh_backend(ctx.obj, inventory), incident
    if backend == "mcp":
        from faultline.sade.mcp_backend import mcp_backend

        if not url:
            raise FaultlineError("--backend mcp needs --url", fix="pass --url http://host:port/mcp or a command")
        return mcp_backend(url, token=ctx.obj.mcp_token.get_secret_value()), incident
    path = Path(incident)
    if path.is_dir():
        path = path / "snapshot.json.gz"
    if not path.is_file():
        from faultline import db

        conn = db.open_warehouse(ctx.obj)
        row = conn.execute("SELECT snapshot_path FROM incidents WHERE incident_id = ?", [incident]).fetchone()
        conn.close()
        if not row or not row[0]:
            raise FaultlineError(f"{incident}: neither an incident folder, a snapshot file nor an ingested incident "
                                 "with a snapshot", fix="pass data/sample/backlog/<id> or ingest the corpus first")
        path = Path(row[0])
    return snapshot_backend(path), path.parent.name


def diagnose_command(
    ctx: typer.Context,
    incident: str = typer.Argument(..., help="Incident folder, snapshot file or ingested incident id."),
    backend: str = typer.Option("snapshot", "--backend", help="snapshot | lab | mcp | ssh"),
    url: Optional[str] = typer.Option(None, "--url", help="MCP server URL or command (with --backend mcp)."),
    inventory: Optional[Path] = typer.Option(None, "--inventory", help="Inventory folder of the devices (with "
                                             "--backend ssh): hosts.yaml, groups.yaml, defaults.yaml, known_hosts."),
    policy: str = typer.Option("deterministic", "--policy", help="deterministic | llm"),
    model: Optional[str] = typer.Option(None, "--model", help="litellm model for --policy llm."),
    method: str = typer.Option("sade", "--method", help="sade (phase-gated) | flat (every scan everywhere)."),
    save: bool = typer.Option(False, "--save", help="Store steps, flags and submission in the warehouse."),
    ticket: Optional[str] = typer.Option(None, "--ticket", help="What the user reported (default: the incident "
                                         "folder's ticket.json title and description); \"\" for none."),
    as_json: bool = typer.Option(False, "--json", help="Print the whole diagnosis as JSON."),
) -> None:
    """Diagnose one incident with SADE and print its submission, steps and flags."""
    from faultline.sade.backend import close_backend

    net, incident_id = _backend(ctx, incident, backend, url, inventory)
    try:
        _diagnose_and_print(ctx, net, incident, incident_id, backend, policy, model, method, save, ticket, as_json)
    finally:
        close_backend(net)


def _diagnose_and_print(ctx, net, incident: str, incident_id: str, backend: str, policy: str, model, method: str,
                        save: bool, ticket, as_json: bool) -> None:
    from faultline.sade.engine import diagnose

    run_policy, policy_name = None, "deterministic"
    if policy == "llm":
        from faultline.sade.llm_policy import llm_policy_runner

        run_policy, policy_name = llm_policy_runner(ctx.obj, model=model, incident_id=incident_id)
    if ticket is None:
        from faultline.sade.evaluate import ticket_text

        folder = Path(incident) if Path(incident).is_dir() else Path(incident).parent
        ticket = ticket_text(folder) if backend == "snapshot" else ""
    diag = diagnose(net, incident_id=incident_id, method=method, policy=policy_name, run_policy=run_policy,
                    ticket=ticket)
    if save:
        from faultline import db
        from faultline.sade.store import save_diagnosis

        conn = db.open_warehouse(ctx.obj)
        save_diagnosis(conn, diag, run_id=None)
        conn.close()
    if as_json:
        print_json(diag.model_dump(mode="json"))
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
    corpus: Path = typer.Option(..., "--corpus", help="Corpus folder of recorded incidents."),
    method: list[str] = typer.Option(["sade"], "--method", help="sade and/or flat (repeatable)."),
    limit: Optional[int] = typer.Option(None, "--limit", help="Only the first N incidents."),
    as_json: bool = typer.Option(False, "--json", help="Print per-incident scores and summaries as JSON."),
) -> None:
    """Score SADE on every recorded incident of a corpus: overall, per label and per size. An incident that
    cannot be evaluated (a damaged snapshot) is listed as failed and the others go on; exit status 1 when
    none was scored."""
    from faultline.sade.evaluate import evaluate_each
    from faultline.sade.scoring import summarise

    done, failed = evaluate_each(corpus, methods=list(method), limit=limit)
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
