"""`faultline corpus generate|suites|replay`: incidents from the lab, and recorded snapshots replayed."""

from __future__ import annotations

from pathlib import Path

import typer

from faultline.cli.output import print_json, print_table

app = typer.Typer(help="Incident corpus: generate incidents from the network lab (root) and replay snapshots.",
                  no_args_is_help=True)


@app.command("generate")
def generate_command(
    ctx: typer.Context,
    suite: str = typer.Option(..., "--suite", help="A suite YAML file or a built-in suite name."),
    out: Path = typer.Option(..., "--out", help="Output folder (one subfolder per incident)."),
    only: list[str] | None = typer.Option(None, "--only", help="Generate only these incident ids."),
    as_json: bool = typer.Option(False, "--json", help="Print the per-incident results as JSON."),
    jobs: int = typer.Option(
        1, "--jobs", "-j", min=1, max=16,
        help="Labs built at once: N worker processes, worker j with lab prefix fl<j>- (from lab_prefix) and run "
             "dir <lab_dir>/fl<j>. Each lab still needs its share of the CPU: on 2 cores, 2 is the useful most."),
    transport: str = typer.Option("netns", "--transport", help="How snapshots reach the devices: netns (exec in "
                                  "each namespace) or ssh (the lab's management network and the SSH backend)."),
) -> None:
    """Generate every incident of a suite: lab up, baseline, inject, verify, record, recover, down.

    Holds /tmp/faultline-lab.lock for the whole run (unless a parent such as `flock` already holds it),
    so tests and other generation runs on the machine wait; with --jobs each worker also holds the
    lock of its own lab prefix.
    """
    from faultline.corpus.generate import generate_suite
    from faultline.corpus.spec import load_suite
    from faultline.lab import locks
    from faultline.lab.lifecycle import require_root

    if transport not in ("netns", "ssh"):
        from faultline.errors import FaultlineError

        raise FaultlineError(f"unknown transport {transport!r}", fix="use --transport netns or --transport ssh")
    spec = load_suite(suite)
    require_root()
    settings = ctx.obj
    with locks.machine_lock(notify=lambda message: typer.echo(message, err=True)):
        results = generate_suite(spec, out, settings, progress=settings.progress and not as_json, only=only,
                                 jobs=jobs, transport=transport)
    rows = [{"incident": r.incident_id, "status": r.status, "reason": r.reason or "",
             "seconds": round(sum(r.timings.values()), 1)} for r in results]
    if as_json:
        print_json(rows)
    else:
        print_table(["incident", "status", "seconds", "reason"],
                    [(r["incident"], r["status"], r["seconds"], r["reason"][:90]) for r in rows],
                    title=f"suite {spec.suite} → {out}")
        valid = sum(r.status == "valid" for r in results)
        typer.echo(f"{valid} valid, {len(results) - valid} invalid")


@app.command("suites")
def suites_command() -> None:
    """The built-in suites and their incident counts."""
    from faultline.corpus.spec import load_suite, suite_names

    rows = []
    for name in suite_names():
        suite = load_suite(name)
        healthy = sum(s.healthy for s in suite.incidents)
        rows.append((name, len(suite.incidents), healthy, "yes" if suite.historical else "no"))
    print_table(["suite", "incidents", "healthy", "historical"], rows, title="built-in suites")


@app.command("check")
def check_command(
    suite: str = typer.Argument(..., help="A suite YAML file or a built-in suite name."),
    as_json: bool = typer.Option(False, "--json", help="Print the plan and the problems as JSON."),
) -> None:
    """Check a suite without a lab: labels, scenarios, sizes, targets and where each label applies; prints what
    each incident would inject (the seeded targets included). Exit 1 when anything would be refused."""
    from faultline.corpus.check import check_suite
    from faultline.corpus.spec import load_suite

    result = check_suite(load_suite(suite))
    if as_json:
        print_json(result.model_dump(mode="json") | {"ok": result.ok})
    else:
        rows = [(i.incident_id, f"{i.scenario}/{i.size}", i.seed, "healthy" if i.healthy else "; ".join(
            f"{f.label} on {f.target or '?'}{'' if f.given else ' (seeded)'}"
            f"{f' by {f.mechanism}' if f.mechanism and f.mechanism != 'standard' else ''}" for f in i.faults))
            for i in result.incidents]
        print_table(["incident", "scenario/size", "seed", "faults"], rows, title=f"suite {result.suite}")
        print_table(["label", "mechanisms (planned faults)", "not planned"],
                    [(m.label, ", ".join(f"{name} {m.planned.get(name, 0)}" for name in m.mechanisms),
                      ", ".join(m.unused) or "-") for m in result.labels],
                    title="mechanisms per label")
        for p in result.problems:
            typer.echo(f"PROBLEM {p.incident_id} {p.field}: {p.message}" + (f" (fix: {p.fix})" if p.fix else ""))
        typer.echo(f"{len(result.incidents)} incidents, {len(result.problems)} problem(s)")
    if not result.ok:
        raise typer.Exit(1)


@app.command("replay")
def replay_command(
    snapshot_file: Path = typer.Argument(..., help="A snapshot.json.gz or baseline.json.gz."),
    probe: str = typer.Option(..., "--probe", help="Probe name, e.g. ip_route or reachability."),
    arg: list[str] | None = typer.Option(None, "--arg", help="Probe argument KEY=VALUE (repeatable)."),
    as_json: bool = typer.Option(False, "--json", help="Print the typed record as JSON."),
) -> None:
    """Answer one probe call from a recorded snapshot (no root, no lab)."""
    from faultline.network import snapshot
    from faultline.network.probes import run_probe

    snap = snapshot.load(snapshot_file)
    args: dict[str, object] = {}
    for item in arg or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise typer.BadParameter(f"{item!r}: expected KEY=VALUE")
        args[key] = int(value) if value.isdigit() else value
    out = run_probe(snap.context(), probe, **args)
    if as_json:
        print_json(out.record.model_dump(mode="json"))
    else:
        typer.echo(out.raw)


@app.command("summary")
def summary_command(
    folders: list[Path] = typer.Argument(..., help="Corpus folders (searched for incident.json)."),
    markdown: bool = typer.Option(False, "--markdown", help="Print a Markdown table (for a corpus README)."),
) -> None:
    """Which labels each corpus covers: incidents per label × scenario/size, healthy controls, invalid ones."""
    from faultline.corpus.summary import coverage, render_markdown

    table = coverage(folders)
    if markdown:
        typer.echo(render_markdown(table))
        return
    print_table(["label", "incidents", "where"],
                [(label, sum(cells.values()), ", ".join(f"{k} ×{n}" for k, n in sorted(cells.items())))
                 for label, cells in sorted(table["labels"].items())],
                title=f"{table['valid']} valid incidents ({table['healthy']} healthy, {table['multi']} multi-fault), "
                      f"{table['invalid']} invalid")
