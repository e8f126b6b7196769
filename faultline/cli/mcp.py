"""`faultline mcp ...`: MCP servers for external agents."""

from __future__ import annotations

from pathlib import Path

import typer

app = typer.Typer(help="MCP servers for external agents (stdio by default, or streamable HTTP).", no_args_is_help=True)


@app.command("lab")
def lab_command(
    ctx: typer.Context,
    snapshot: Path | None = typer.Option(None, "--snapshot", help="Serve a recorded incident snapshot "
                                            "(snapshot.json.gz; no root needed) instead of the running lab."),
    lab: bool = typer.Option(False, "--lab", help="Serve the running lab (root); the default without --snapshot."),
    inventory: Path | None = typer.Option(None, "--inventory", help="Serve the devices of this inventory folder, "
                                             "reached over SSH (hosts.yaml, ..., known_hosts)."),
    incident: str | None = typer.Option(None, "--incident", help="Incident id submissions are stored under "
                                           "(default: the snapshot's folder name)."),
    submission_out: Path | None = typer.Option(None, "--submission-out", help="Write the submission to this "
                                                  "JSON file instead of the warehouse."),
    http: int | None = typer.Option(None, "--http", help="Serve streamable HTTP on this port (path /mcp) "
                                       "instead of stdio."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on with --http; another than a loopback "
                             "address needs the mcp_token setting (FAULTLINE_MCP_TOKEN)."),
) -> None:
    """NIKA's v1 agent tools (reachability, exec_shell, frr_*, submit, ...) over the lab or a snapshot."""
    from faultline.errors import FaultlineError
    from faultline.mcp import lab_server
    from faultline.mcp.http_auth import check_bind
    from faultline.network.backends import NetworkTarget, open_backend

    token = ctx.obj.mcp_token.get_secret_value()
    if http is not None:
        check_bind(host, token)  # before a lab or snapshot is opened
    if sum((snapshot is not None, lab, inventory is not None)) > 1:
        raise FaultlineError("--snapshot, --lab and --inventory exclude each other", fix="pick one network to serve")
    if inventory is not None:
        kind, target = "ssh", NetworkTarget(inventory=inventory)
    elif snapshot is not None:
        if not snapshot.is_file():
            raise FaultlineError(f"{snapshot} does not exist", fix="give an incident's snapshot.json.gz")
        # no baseline: an agent sees only the incident network
        kind, target = "snapshot", NetworkTarget(snapshot=snapshot, use_baseline=False)
        incident = incident or snapshot.resolve().parent.name
    else:
        kind, target = "lab", NetworkTarget()
    backend = open_backend(kind, ctx.obj, target)
    if incident is None and submission_out is None:
        raise FaultlineError("submissions need an incident id or an output file",
                             fix="pass --incident ID or --submission-out FILE")
    session = lab_server.open_session(backend, incident_id=incident, out_file=submission_out, settings=ctx.obj)
    lab_server.serve(session, http_port=http, host=host, token=token)


@app.command("docs")
def docs_command(
    ctx: typer.Context,
    http: int | None = typer.Option(None, "--http", help="Serve streamable HTTP on this port (path /mcp) "
                                       "instead of stdio."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on with --http; another than a loopback "
                             "address needs the mcp_token setting (FAULTLINE_MCP_TOKEN)."),
    exit_with_parent: bool = typer.Option(False, "--exit-with-parent", help="Stop when the process that started "
                                          "this one ends, however it ends (a run's own server)."),
) -> None:
    """search_docs and fetch_doc over the doc-chunk index (build it with `faultline index`)."""
    from faultline.mcp import docs_server

    docs_server.serve(ctx.obj, http_port=http, host=host, exit_with_parent=exit_with_parent)
