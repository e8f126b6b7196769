"""Faults caused by commands written in the tests, not by `faultline/lab/faults`: the network shows them, and SADE
must read them from what it shows.

A `ForeignCase` is a scenario, shell commands run on its devices (each in the device's namespace, or in the root
namespace with `device=None`), the symptom that must show before recording, and the ground truth a NOC would
write. `record_case` brings the scenario's lab up, records the healthy baseline and the incident snapshot with the
corpus generator's battery, and writes the folder SADE's evaluation reads (`baseline.json.gz`, `snapshot.json.gz`,
`ground_truth.json`, `incident.json`).

    flock /tmp/faultline-lab.lock .venv/bin/python -m tests.foreign tests/cases/sade/foreign [NAME...]

records the committed cases again (tests/cases/sade/foreign/README.md).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

SETTLE_S = 90.0  # how long a fault may take to show (an OSPF dead interval, a BGP session reset)


@dataclass(frozen=True)
class Cmd:
    """One shell command: in `device`'s namespace, or in the root namespace when `device` is None.

    `{ns[NAME]}` and `{vty[NAME]}` in the text become a device's namespace and its FRR vty socket folder;
    `background` commands keep running until the recording is done (a load, say) and are killed then."""

    device: str | None
    shell: str
    background: bool = False


@dataclass(frozen=True)
class ForeignCase:
    """One fault made by hand, its symptom check and its ground truth."""

    name: str
    scenario: str
    label: str
    devices: tuple[str, ...]
    commands: tuple[Cmd, ...]
    what: str  # what the commands did, in a NOC's words (kept in the ground truth)
    symptom: Callable[[Any, Any], str | None] | None = None  # (ctx, case) -> why it does not show yet, None = shows
    resources: tuple[str, ...] = field(default=())  # v2 resource ids; default node/<device>
    also: tuple[ForeignCase, ...] = ()  # a second fault made at the same time (its own commands, label and devices)

    def faults(self) -> tuple[ForeignCase, ...]:
        """This fault and the ones made beside it."""
        return (self, *self.also)


def _run(case: ForeignCase, cmd: Cmd, state: Any, ctx: Any) -> subprocess.Popen | None:
    namespaces = {d.name: d.namespace for d in state.devices()}
    text = cmd.shell.format(ns=namespaces, vty=ctx.vty_dirs)
    argv = ["sh", "-c", text]
    if cmd.device is not None:
        argv = ["ip", "netns", "exec", namespaces[cmd.device], *argv]
    if cmd.background:
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{case.name}: `{text}` on {cmd.device or 'root'} failed ({proc.returncode}): "
                           f"{(proc.stderr or proc.stdout).strip()[:300]}")
    return None


def users_see_a_problem(ctx: Any, case: ForeignCase) -> str | None:
    """The default symptom: a failing host pair, or a name or page that fails from a user position."""
    from faultline.lab.access import names_and_urls
    from faultline.network.probes import run_probe
    from faultline.network.snapshot import client_positions

    rows = run_probe(ctx, "reachability").record.rows
    if any(r.status != "ok" for r in rows):
        return None
    names, urls = names_and_urls(case.scenario, "s")
    for src in client_positions(ctx.directory.devices())[:1]:
        for name in names:
            if run_probe(ctx, "dig", src=src, name=name).record.status != "NOERROR":
                return None
        for url in urls:
            if run_probe(ctx, "http_get", src=src, url=url).record.status != "ok":
                return None
    return "every pair, name and page still answers"


def record_case(case: ForeignCase, folder: Path, settings: Any, *, timeout: float = 90.0) -> Path:
    """Record `case` into `folder/<case.name>/`; RuntimeError when its symptom never showed."""
    from faultline.lab import lifecycle as lab
    from faultline.lab.access import names_and_urls
    from faultline.lab.scenarios import build_topology
    from faultline.network import snapshot

    out = folder / case.name
    out.mkdir(parents=True, exist_ok=True)
    names, urls = names_and_urls(case.scenario, "s")
    background: list[subprocess.Popen] = []
    try:
        state = lab.up(case.scenario, "s", settings, timeout=timeout)
        ctx = lab.probe_context(state, settings)
        calls = snapshot.standard_calls(ctx, build_topology(case.scenario, "s").protocol, names=names, urls=urls)
        base, _ = snapshot.record(ctx, calls, scenario=case.scenario, size="s", phase="baseline")
        snapshot.save(base, out / "baseline.json.gz")
        fault_at = datetime.now(timezone.utc)
        for cmd in (c for fault in case.faults() for c in fault.commands):
            proc = _run(case, cmd, state, ctx)
            if proc is not None:
                background.append(proc)
        check = case.symptom or users_see_a_problem
        deadline, problem = time.monotonic() + SETTLE_S, "not checked"
        while time.monotonic() < deadline:
            problem = check(lab.probe_context(state, settings), case)
            if problem is None:
                break
            time.sleep(3)
        if problem is not None:
            raise RuntimeError(f"{case.name}: the fault never showed within {SETTLE_S:.0f} s: {problem}")
        snap, _ = snapshot.record(ctx, calls, scenario=case.scenario, size="s", phase="incident")
        snapshot.save(snap, out / "snapshot.json.gz")
    finally:
        try:
            for proc in background:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        finally:
            lab.down(settings)
    _write_truth(case, out, fault_at)
    return out


def _write_truth(case: ForeignCase, out: Path, fault_at: datetime) -> None:
    from faultline.nika.labels import v2_fault_type

    faults = case.faults()
    devices = list(dict.fromkeys(d for f in faults for d in f.devices))
    labels = [f.label for f in faults]
    v1: dict[str, Any] = {"is_anomaly": True, "faulty_devices": devices,
                          "root_cause_name": labels[0] if len(labels) == 1 else "multiple_faults"}
    if len(labels) > 1:
        v1["root_cause_names"] = labels
    truth = {
        "v1": v1,
        "v2": [{"fault_type": v2_fault_type(f.label), "resource_id": r}
               for f in faults for r in (f.resources or tuple(f"node/{d}" for d in f.devices))],
        "faults": [{"label": f.label, "target": f.devices[0], "mechanism": f.what, "mechanism_id": "commands",
                    "v1": {"is_anomaly": True, "faulty_devices": list(f.devices), "root_cause_name": f.label},
                    "commands": [{"device": c.device, "shell": c.shell} for c in f.commands]} for f in faults],
    }
    (out / "ground_truth.json").write_text(json.dumps(truth, indent=2, sort_keys=True) + "\n")
    info = {"incident_id": f"foreign-{case.name}", "scenario": case.scenario, "size": "s", "status": "valid",
            "fault_at": fault_at.isoformat(timespec="seconds"), "spec": {"faults": [], "scenario": case.scenario}}
    (out / "incident.json").write_text(json.dumps(info, indent=2, sort_keys=True) + "\n")


def main(argv: list[str]) -> int:
    """Record the cases named (all without names) into the folder given first."""
    from tests.foreign_cases import CASES
    from tests.labfixtures import lab_dir, settings_for

    folder, wanted = Path(argv[0]), argv[1:] or list(CASES)
    settings = settings_for(lab_dir("foreign"))
    failed = []
    for name in wanted:
        t0 = time.monotonic()
        try:
            record_case(CASES[name], folder, settings)
            print(f"{name}: recorded in {time.monotonic() - t0:.0f} s")
        except Exception as exc:  # noqa: BLE001 - record the others, say which failed
            failed.append(name)
            print(f"{name}: FAILED {exc}", file=sys.stderr)
    print(shlex.join(["failed:", *failed]) if failed else "all recorded")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
