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
    mgmt: bool = typer.Option(False, "--mgmt", help="Add a management network (subnet lab_mgmt_subnet, bridge "
                              "<lab_prefix>mgmt) with an OpenSSH server in every node, for the SSH backend; "
                              "`lab inventory` then writes an SSH-ready inventory with known_hosts."),
) -> None:
    """Build SCENARIO and wait until routing has converged and every host reaches every host."""
    from faultline.lab import lifecycle as lab

    state = lab.up(scenario, size, ctx.obj, timeout=timeout, mgmt=mgmt)
    typer.echo(f"lab {state.scenario} ({state.size}) healthy in {state.timings['healthy_s']:.1f} s: "
               f"{len(state.namespaces)} namespaces, {len(state.processes)} daemons")
    if state.mgmt is not None:
        typer.echo(f"management network {state.mgmt['subnet']} on {state.mgmt['bridge']}: ssh -i "
                   f"{state.mgmt['client_key']} root@<address> (addresses: `lab status`; inventory: `lab inventory`)")


@app.command("down")
def down_command(
    ctx: typer.Context,
    all_: bool = typer.Option(False, "--all", help="Also remove every namespace with this lab's prefix (lab_prefix, "
                              "fl- by default) and its processes, with or without a state file (after a crash); "
                              "labs with other prefixes are left alone."),
) -> None:
    """Stop the lab's processes (by PID), delete its namespaces and remove its run dir."""
    from faultline.lab import lifecycle as lab

    result = lab.down(ctx.obj, all=all_)
    links = f", {len(result['mgmt_links'])} management links" if result["mgmt_links"] else ""
    typer.echo(f"removed {len(result['namespaces'])} namespaces{links}, killed {len(result['killed_pids'])} "
               f"processes in {result['seconds']} s")


@app.command("status")
def status_command(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print the lab state as JSON."),
) -> None:
    """Show the running lab: scenario, status, devices and daemons."""
    from faultline.lab import lifecycle as lab

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
    mgmt = state.mgmt["addresses"] if state.mgmt else {}
    print_table(["device", "role", "namespace", "addresses", "daemons"] + (["mgmt"] if mgmt else []),
                [(d.name, d.role, d.namespace, " ".join(d.addresses), " ".join(pids.get(d.name, [])))
                 + ((mgmt.get(d.name, ""),) if mgmt else ()) for d in state.devices()])


def _running_lab(settings):  # -> LabState
    from faultline.errors import FaultlineError
    from faultline.lab import lifecycle as lab

    lab.require_root()
    state = lab.status(settings)
    if state is None:
        raise FaultlineError("no lab is up", fix="start one with `faultline lab up simple_bgp`")
    return state


@app.command("inject")
def inject_command(
    ctx: typer.Context,
    label: str = typer.Argument(..., help="NIKA v1 fault label, e.g. link_down (see `faultline lab faults`)."),
    target: str = typer.Option(None, "--target", help="Device to put the fault on (default: drawn from --seed)."),
    seed: int = typer.Option(0, "--seed", help="Seed for the target and every other random choice."),
    mechanism: str = typer.Option(None, "--mechanism", help="How to cause it: one of the label's mechanisms "
                                  "(`lab faults --json`); default: the standard one."),
    as_json: bool = typer.Option(False, "--json", help="Print the fault record and its ground truth as JSON."),
) -> None:
    """Inject fault LABEL into the running lab and record it (then `lab verify`, `lab recover`)."""
    from faultline.lab import faults

    state = _running_lab(ctx.obj)
    rec = faults.inject(state, label, target, seed, mechanism=mechanism or "standard")
    if as_json:
        print_json({"id": rec.id, "target": rec.target, "mechanism": rec.mechanism, **rec.ground_truth()})
        return
    typer.echo(f"{rec.id}: {rec.label} on {rec.target} ({rec.resource_id}): {rec.mechanism}")


@app.command("verify")
def verify_command(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print the incident's ground truth as JSON."),
) -> None:
    """Check every injected fault: its artifact is there and its symptom shows through the probes."""
    from faultline.lab import faults
    from faultline.lab import lifecycle as lab

    state = _running_lab(ctx.obj)
    verified = faults.verify(state, lab.probe_context(state, ctx.obj))
    if as_json:
        print_json(faults.ground_truth(state))
        return
    if not verified:
        typer.echo("no faults injected")
    for rec in verified:
        typer.echo(f"{rec.id}: {rec.label} on {rec.target}: verified")


@app.command("recover")
def recover_command(
    ctx: typer.Context,
    timeout: float = typer.Option(30.0, "--timeout", help="Seconds to wait for the lab to be healthy again."),
) -> None:
    """Undo every injected fault and wait until the lab is healthy again."""
    from faultline.lab import faults

    state = _running_lab(ctx.obj)
    result = faults.recover(state, timeout=timeout)
    typer.echo(f"recovered {len(result['recovered'])} fault(s); healthy after {result['healthy_s']} s")


@app.command("faults")
def faults_command(
    all_: bool = typer.Option(False, "--all", help="List every NIKA v1 label with its status here."),
    size: str = typer.Option("s", "--size", help="Lab size the `scenarios` column is computed for: s, m or l."),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """The fault labels `lab inject` supports (with --all: every NIKA v1 label and its status).

    `scenarios` lists the registered scenarios where the label can be injected at --size.
    """
    from dataclasses import asdict

    from faultline.lab.faults.applicability import scenario_table
    from faultline.nika.labels import catalogue

    where = scenario_table(size)
    rows = [info for info in catalogue() if all_ or info.status == "implemented"]
    from faultline.lab.faults import fault_class, fault_labels

    known = set(fault_labels())

    def mechanisms(label: str) -> dict[str, str]:
        return dict(fault_class(label).mechanisms) if label in known else {}

    if as_json:
        print_json([{**asdict(info), "scenarios": where.get(info.label, []), "mechanisms": mechanisms(info.label)}
                    for info in rows])
        return
    print_table(["label", "category", "feasible", "status", "scenarios", "mechanisms", "mechanism"],
                [(i.label, i.category, i.feasible, i.status, " ".join(where.get(i.label, [])),
                  " ".join(mechanisms(i.label)), i.how) for i in rows])


@app.command("inventory")
def inventory_command(
    ctx: typer.Context,
    scenario: str = typer.Option(None, "--scenario", help="Scenario to describe (default: the running lab's)."),
    size: str = typer.Option(None, "--size", help="Lab size: s, m or l (default: the running lab's, else s)."),
    out: str = typer.Option(None, "--out", help="Folder to write (default: inventory/<scenario>_<size>)."),
) -> None:
    """Write a lab topology as a nornir-style inventory folder (no root, no running lab needed).

    Load it with `faultline ingest inventory FOLDER`. When the running lab of that scenario and size
    has a management network (`lab up --mgmt`), the hosts are its SSH targets and the folder gets a
    known_hosts file, ready for the SSH backend.
    """
    from pathlib import Path

    from faultline.errors import FaultlineError
    from faultline.lab.access import status
    from faultline.lab.inventory import lab_access, write_lab_inventory
    from faultline.lab.scenarios import build_topology

    state = status(ctx.obj)
    if scenario is None:
        if state is None:
            raise FaultlineError("no --scenario given and no lab is up",
                                 fix="pass --scenario, e.g. `faultline lab inventory --scenario simple_bgp`")
        scenario, size = state.scenario, size or state.size
    size = size or "s"
    topo = build_topology(scenario, size)
    folder = Path(out) if out else Path("inventory") / f"{scenario}_{size}"
    running = state is not None and (state.scenario, state.size) == (scenario, size)
    access = lab_access(state, ctx.obj) if running else None
    written = write_lab_inventory(topo, folder, access)
    typer.echo(f"wrote the inventory of {scenario} ({size}): {len(topo.nodes)} hosts to {folder} "
               f"({', '.join(p.name for p in written)})")
