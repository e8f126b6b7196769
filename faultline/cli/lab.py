"""`faultline lab ...`: bring the network lab up, down, and show its status (root only)."""

from __future__ import annotations

import typer

from faultline.cli.output import print_json, print_table

app = typer.Typer(help="The network lab: scenarios in Linux network namespaces (needs root).",
                  no_args_is_help=True)


@app.command("up")
def up_command(
    ctx: typer.Context,
    scenario: str = typer.Argument(..., help="Scenario name, e.g. simple_bgp."),
    size: str = typer.Option("s", "--size", help="Lab size: s, m or l."),
    timeout: float = typer.Option(60.0, "--timeout", help="Seconds to wait for the lab to be healthy."),
) -> None:
    """Build SCENARIO and wait until routing has converged and every host reaches every host."""
    from faultline.netlab import lab

    state = lab.up(scenario, size, ctx.obj, timeout=timeout)
    typer.echo(f"lab {state.scenario} ({state.size}) healthy in {state.timings['healthy_s']:.1f} s: "
               f"{len(state.namespaces)} namespaces, {len(state.processes)} daemons")


@app.command("down")
def down_command(
    ctx: typer.Context,
    all_: bool = typer.Option(False, "--all", help="Also remove every fl-* namespace and its processes, "
                              "with or without a state file (after a crash)."),
) -> None:
    """Stop the lab's processes (by PID), delete its namespaces and remove its run dir."""
    from faultline.netlab import lab

    result = lab.down(ctx.obj, all=all_)
    typer.echo(f"removed {len(result['namespaces'])} namespaces, killed {len(result['killed_pids'])} "
               f"processes in {result['seconds']} s")


@app.command("status")
def status_command(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print the lab state as JSON."),
) -> None:
    """Show the running lab: scenario, status, devices and daemons."""
    from faultline.netlab import lab

    state = lab.status(ctx.obj)
    if as_json:
        print_json(state.to_json() if state else {"status": "down"})
        return
    if state is None:
        typer.echo("no lab is up")
        return
    typer.echo(f"{state.scenario} ({state.size}): {state.status}, run dir {state.run_dir}")
    pids = {p.device: [] for p in state.processes}
    for p in state.processes:
        pids[p.device].append(f"{p.name}:{p.pid}")
    print_table(["device", "role", "namespace", "addresses", "daemons"],
                [(d.name, d.role, d.namespace, " ".join(d.addresses), " ".join(pids.get(d.name, [])))
                 for d in state.devices()])
