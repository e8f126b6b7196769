"""Generate incidents from the lab: build, baseline, inject, verify, record, recover, tear down.

One folder per incident of a suite (snapshots, staged device logs, ticket, ground truth, `incident.json`), then
the suite's syslog archive, inventories and summary; a fault that does not verify makes the incident invalid,
and the lab always comes down. The stages and the files: docs/corpus.md#generating-an-incident.
"""

from __future__ import annotations

import functools
import json
import random
import shutil
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Literal

from faultline.config import Settings
from faultline.corpus.spec import IncidentSpec, Suite
from faultline.errors import FaultlineError

INCIDENT_FILE = "incident.json"


@dataclass
class IncidentResult:
    """What generating one incident did."""

    incident_id: str
    status: Literal["valid", "invalid"]
    reason: str | None = None
    timings: dict[str, float] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)


def generate_incident(spec: IncidentSpec, incident_id: str, out: Path, settings: Settings, *,
                      historical: bool = False, slots: Mapping[str, datetime] | None = None,
                      timeout: float = 90.0, transport: str = "netns") -> IncidentResult:
    """Generate one incident into `out/<incident_id>/` (replacing an earlier attempt).

    `slots`: where each incident begins on its suite's timeline (`Suite.slots()`); every time this one
    records is moved by one delta onto its slot. Without a slot the lab's own clock is kept.
    `transport`: how the snapshots' probes reach the devices: `netns` (exec in each namespace) or `ssh`
    (the lab gets its management network and the probes go through the SSH backend, as on a real network;
    injection and verification stay the lab's own).
    """
    from faultline.lab import faults
    from faultline.lab import lifecycle as lab
    from faultline.lab.access import names_and_urls
    from faultline.lab.faults.base import FaultNotVerified
    from faultline.network import snapshot

    folder = out / incident_id
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    result = IncidentResult(incident_id, "valid")
    stamps: dict[str, str] = {}
    t = time.monotonic()

    def stage(name: str) -> None:
        nonlocal t
        now = time.monotonic()
        result.timings[name] = round(result.timings.get(name, 0.0) + now - t, 2)
        t = now

    names, urls = names_and_urls(spec.scenario, spec.size)
    state = None
    ssh_net = None
    real_start = datetime.fromisoformat(_now())  # to the millisecond, as every stamp: lab_up_at = the slot's start
    slot_start = (slots or {}).get(incident_id)
    shift = (slot_start - real_start) if slot_start is not None else timedelta(0)
    stamps["lab_up_at"] = real_start.isoformat(timespec="milliseconds")
    recorded: datetime | None = None  # the collector's lines are the incident's up to here
    try:
        state = lab.up(spec.scenario, spec.size, settings, timeout=timeout, mgmt=transport == "ssh")
        ctx = lab.probe_context(state, settings)
        if transport == "ssh":
            ssh_net = _ssh_network(state, settings)
            ctx = ssh_net.ctx
        stage("build_s")
        protocol = _protocol(spec)
        calls = snapshot.standard_calls(ctx, protocol, names=names, urls=urls)
        stamps["window_start"] = _now()
        base, base_out = snapshot.record(ctx, calls, scenario=spec.scenario, size=spec.size, phase="baseline")
        base.taken_at = _shift_iso(base.taken_at, shift)
        result.sizes["baseline_bytes"] = snapshot.save(base, folder / "baseline.json.gz")
        stage("baseline_s")
        stamps["fault_at"] = _now()
        for n, fault in enumerate(spec.faults):
            # each fault draws from its own seed so adding a fault never moves the others' targets
            faults.inject(state, fault.label, fault.target, seed=spec.seed * 100 + n, mechanism=fault.mechanism)
        if spec.faults:
            faults.verify(state, lab.probe_context(state, settings))
        stage("inject_verify_s")
        snap, snap_out = snapshot.record(ctx, calls, scenario=spec.scenario, size=spec.size, phase="incident")
        snap.taken_at = _shift_iso(snap.taken_at, shift)
        result.sizes["snapshot_bytes"] = snapshot.save(snap, folder / "snapshot.json.gz")
        stamps["recorded_at"] = _now()
        recorded = datetime.fromisoformat(stamps["recorded_at"])
        truth = faults.ground_truth(state)
        stage("record_s")
        _write_ticket_and_truth(spec, incident_id, folder, state, truth, snap_out, base_out,
                                datetime.fromisoformat(stamps["recorded_at"]) + shift, historical)
        stage("ticket_s")
        if spec.faults:
            faults.recover(state, timeout=timeout)
            stage("recover_s")
    except FaultNotVerified as exc:
        result.status, result.reason = "invalid", f"fault did not verify: {exc.message}"
    except FaultlineError as exc:
        result.status, result.reason = "invalid", f"{exc.message}" + (f" (fix: {exc.fix})" if exc.fix else "")
    except Exception as exc:  # noqa: BLE001 - one failed incident never sinks the suite
        result.status = "invalid"
        result.reason = f"{type(exc).__name__}: {exc}; {traceback.format_exc(limit=3).strip().splitlines()[-1]}"
    finally:
        # the collector's lines from lab up to the recorded snapshot, before `down` removes the collector: the
        # lab heals the fault (recover) and tears down within seconds, which no real network does before its
        # ticket is even filed, so those lines are not the incident's
        result.sizes.update(_stage_syslog(state, folder, real_start, shift, end=recorded))
        if ssh_net is not None:
            ssh_net.close()
        try:
            lab.down(settings, all=state is None)
        except Exception as exc:  # noqa: BLE001 - recorded; the next `up` would refuse loudly anyway
            result.reason = (result.reason or "") + f"; teardown failed: {exc}"
        stage("teardown_s")
    if result.status == "invalid":
        for name in ("ticket.json", "ground_truth.json", "snapshot.json.gz"):
            (folder / name).unlink(missing_ok=True)
    stamps["lab_down_at"] = _now()
    _write_json(folder / INCIDENT_FILE, {
        "incident_id": incident_id, "spec": spec.model_dump(), "historical": historical, "status": result.status,
        "reason": result.reason, "timings": result.timings, "sizes": result.sizes,
        **{key: _shift_iso(value, shift) for key, value in stamps.items()},
        "time_shift_s": round(shift.total_seconds(), 6), "scenario": spec.scenario, "size": spec.size,
        "seed": spec.seed,
    })
    return result


def generate_suite(suite: Suite, out: Path, settings: Settings, *, progress: bool = False,
                   only: list[str] | None = None, jobs: int = 1, transport: str = "netns") -> list[IncidentResult]:
    """Generate every incident of `suite` (or the ids in `only`) into `out/`; results in suite order.

    `jobs` 1: one lab at a time, with the settings' lab_prefix and lab_dir. More: that many worker
    processes, each with a lab of its own (`faultline.corpus.parallel`).
    """
    from faultline.progress import track

    pairs = [(i, s) for i, s in zip(suite.incident_ids(), suite.incidents) if not only or i in only]
    if jobs > 1:
        from faultline.corpus.parallel import run_in_labs

        work = functools.partial(generate_incident, out=out, historical=suite.historical,
                                 slots=suite.slots(), transport=transport)
        lost = functools.partial(_lost_incident, out=out, historical=suite.historical)
        runs = run_in_labs([(spec, incident_id) for incident_id, spec in pairs], settings, jobs=jobs, work=work,
                           lost=lost, labs=[(spec.scenario, spec.size) for _, spec in pairs])
        done = dict(track(runs, description=f"suite {suite.suite} ({jobs} labs)", enabled=progress, total=len(pairs)))
        results = [done[position] for position in range(len(pairs))]
    else:
        results = []
        for incident_id, spec in track(pairs, description=f"suite {suite.suite}", enabled=progress):
            results.append(generate_incident(spec, incident_id, out, settings, historical=suite.historical,
                                             slots=suite.slots(), transport=transport))
    # the collector's archive of the whole suite, from every incident's staged lines (faultline.corpus.archive)
    from faultline.corpus.archive import assemble_archive

    assemble_archive(out, suite)
    write_inventories(out, suite)
    # the suite's summary: merged with an earlier run's, so `--only` reruns keep the other incidents
    summary = out / f"suite-{suite.suite}.json"
    known = {i["incident_id"]: i for i in json.loads(summary.read_text())["incidents"]} if summary.is_file() else {}
    for r in results:
        known[r.incident_id] = {"incident_id": r.incident_id, "status": r.status, "reason": r.reason,
                                "timings": r.timings, "sizes": r.sizes}
    _write_json(summary, {"suite": suite.suite, "historical": suite.historical,
                          "incidents": [known[i] for i in sorted(known)]})
    return results


def _lost_incident(item: tuple[IncidentSpec, str], reason: str, *, out: Path, historical: bool) -> IncidentResult:
    """The invalid result, and incident.json, of an incident whose worker process died generating it."""
    spec, incident_id = item
    folder = out / incident_id
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("ticket.json", "ground_truth.json", "snapshot.json.gz"):
        (folder / name).unlink(missing_ok=True)
    _write_json(folder / INCIDENT_FILE, {
        "incident_id": incident_id, "spec": spec.model_dump(), "historical": historical, "status": "invalid",
        "reason": reason, "timings": {}, "sizes": {}, "scenario": spec.scenario, "size": spec.size, "seed": spec.seed,
    })
    return IncidentResult(incident_id, "invalid", reason)


def inventory_name(scenario: str, size: str) -> str:
    """The name of a lab network's inventory in a corpus (`<out>/inventory/<name>/`) and in the warehouse."""
    return f"{scenario}_{size}"


def write_inventories(out: Path, suite: Suite) -> list[Path]:
    """The inventory of every network the suite ran (`<out>/inventory/<scenario>_<size>/`), as a NOC exports one."""
    from faultline.lab.inventory import write_lab_inventory
    from faultline.lab.scenarios import build_topology

    written = []
    for scenario, size in sorted({(spec.scenario, spec.size) for spec in suite.incidents}):
        folder = out / "inventory" / inventory_name(scenario, size)
        write_lab_inventory(build_topology(scenario, size), folder)
        written.append(folder)
    return written


def _ssh_network(state: Any, settings: Settings) -> Any:  # -> Backend
    """The running lab's devices through the SSH backend, from the inventory its management network serves."""
    from faultline.lab.inventory import write_mgmt_inventory
    from faultline.network.backends import NetworkTarget, open_backend

    folder = write_mgmt_inventory(state, settings, Path(state.run_dir) / "ssh-inventory")
    return open_backend("ssh", settings, NetworkTarget(inventory=folder))


def ticket_record(ticket: Any, incident_id: str, spec: IncidentSpec) -> dict[str, Any]:
    """The ticket in Faultline's own ticket layout (what `faultline ingest tickets` reads without a mapping).

    Fields the layout has no column for (reporter, incident, scenario) land in the ticket's attributes.
    """
    data = ticket.model_dump(mode="json")
    resolved = data["status"] == "resolved"
    return {
        "ticket_id": data["ticket_id"], "project": data["product"], "title": data["title"],
        "description": data["body"], "status": "Resolved" if resolved else "Open",
        "resolution": "Fixed" if resolved else None, "resolution_note": data["resolution"],
        "priority": data["priority"], "components": [data["component"]], "created_at": data["created_at"],
        "updated_at": data["resolved_at"] or data["created_at"], "resolved_at": data["resolved_at"],
        "reporter": data["reporter"], "reporter_role": data["reporter_role"], "incident_id": incident_id,
        "scenario": spec.scenario, "size": spec.size,
    }


def _protocol(spec: IncidentSpec) -> str:
    from faultline.lab.scenarios import build_topology

    return build_topology(spec.scenario, spec.size).protocol


def _write_ticket_and_truth(spec: IncidentSpec, incident_id: str, folder: Path, state: Any, truth: dict[str, Any],
                            snap_out: list, base_out: list, recorded: datetime, historical: bool) -> None:
    """Ticket and ground truth; `recorded` is when the incident snapshot was taken, on the suite's timeline."""
    from faultline.corpus.symptoms import symptoms_from_probes
    from faultline.corpus.tickets import TicketFacts, resolution_note, write_ticket

    symptoms = symptoms_from_probes(snap_out, base_out, observed_at=recorded)
    devices = [(d.name, d.role) for d in state.devices()]
    rng = random.Random(f"ticket:{incident_id}:{spec.seed}")
    # people file a few minutes after they notice, not at the instant the fault lands
    filed = recorded + timedelta(minutes=rng.randint(2, 20))
    facts = TicketFacts(incident_id=incident_id, scenario=spec.scenario, size=spec.size, opened_at=filed,
                        devices=devices, symptoms=symptoms, healthy=spec.healthy, ground_truth=truth,
                        historical=historical)
    ticket = write_ticket(facts, rng)
    _write_json(folder / "ticket.json", ticket_record(ticket, incident_id, spec))
    truth = dict(truth)
    truth["categories"] = sorted({f["category"] for f in truth["faults"]})
    truth["resolution"] = resolution_note(facts)
    truth["symptoms"] = [s.model_dump(mode="json") for s in symptoms]
    _write_json(folder / "ground_truth.json", truth)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def _shift_iso(value: str, shift: timedelta) -> str:
    """An ISO time stamp moved onto the suite's timeline (same precision, UTC)."""
    when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    when = when if when.tzinfo else when.replace(tzinfo=timezone.utc)
    return (when + shift).astimezone(timezone.utc).isoformat(timespec="milliseconds")


def _stage_syslog(state: Any, folder: Path, start: datetime, shift: timedelta,
                  end: datetime | None = None) -> dict[str, int]:
    """Stage what the lab's collector received from `start` to `end` (default: now); an empty file when the lab
    never came up."""
    from faultline.corpus.archive import stage_incident
    from faultline.lab.syslog import collected, syslog_dir

    lines = collected(syslog_dir(Path(state.run_dir))) if state is not None else iter(())
    try:
        return stage_incident(lines, folder, start=start, end=end or datetime.now(timezone.utc), delta=shift)
    except OSError:  # a collector that never wrote: nothing to stage
        return stage_incident(iter(()), folder, start=start, end=start, delta=shift)


def _write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
