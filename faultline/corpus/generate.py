"""Generate incidents from the lab: build, baseline, inject, verify, record, recover, tear down.

For each spec of a suite, in its own folder `<out>/<incident_id>/`:

* `baseline.json.gz` — a snapshot of the healthy lab (every probe on every device);
* `snapshot.json.gz` — the same battery once the fault is verified (symptom observable);
* `logs/<device>/<file>` — the devices' own logs over the incident (FRR daemons, dnsmasq, nginx,
  udhcpc), in formats the log ingestion parses;
* `ticket.json` — what an operator would file (symptom-level; a resolution only for historical suites);
* `ground_truth.json` — NIKA v1/v2 truth, category, and the resolution note (evaluation only);
* `incident.json` — the spec, the status (`valid` | `invalid` with the reason), stage timings, sizes.

A fault that does not verify makes the incident `invalid` (recorded with why, never a normal
incident); any other failure is recorded the same way and the suite goes on. The lab is always
brought down, whatever happened.
"""

from __future__ import annotations

import gzip
import json
import random
import shutil
import time
import traceback
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Literal

from faultline.config import Settings
from faultline.corpus.spec import IncidentSpec, Suite
from faultline.errors import FaultlineError

INCIDENT_FILE = "incident.json"
LOG_SUFFIXES = (".log", ".out")
MAX_LOG_BYTES = 512 * 1024  # per file: the end of the incident is what matters (keeps the corpus small)


@dataclass
class IncidentResult:
    """What generating one incident did."""

    incident_id: str
    status: Literal["valid", "invalid"]
    reason: str | None = None
    timings: dict[str, float] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)


def copy_tail(source: Path, target: Path, limit: int) -> bool:
    """Copy `source` gzipped to `target`, only its last whole lines within `limit` bytes if longer; True if cut.

    Logs are stored gzipped (the log ingestion reads .gz directly): the corpus stays small in git.
    """
    size = source.stat().st_size
    with open(source, "rb") as fh:
        if size > limit:
            fh.seek(size - limit)
        data = fh.read()
    if size > limit:
        data = data[data.find(b"\n") + 1:]
    target.write_bytes(gzip.compress(data, mtime=0))
    return size > limit


def collect_logs(run_dir: Path, dest: Path) -> dict[str, int]:
    """Copy every device log of the lab into `dest/<device>/`; returns bytes per device."""
    from faultline.lab.namespaces import LAB_PREFIX

    sizes: dict[str, int] = {}
    sources = [(p.parent.name.removeprefix(LAB_PREFIX), p) for p in (run_dir / "frr").glob("*/*")]
    sources += [(p.parent.name, p) for p in (run_dir / "svc").glob("*/*")]
    for device, path in sorted(sources):
        if not path.is_file() or not path.name.endswith(LOG_SUFFIXES) or path.stat().st_size == 0:
            continue
        target = dest / device / f"{path.name}.gz"
        target.parent.mkdir(parents=True, exist_ok=True)
        copy_tail(path, target, MAX_LOG_BYTES)
        sizes[device] = sizes.get(device, 0) + target.stat().st_size
    return sizes


def generate_incident(spec: IncidentSpec, incident_id: str, out: Path, settings: Settings, *,
                      historical: bool = False, backdate_days: int = 0, timeout: float = 90.0) -> IncidentResult:
    """Generate one incident into `out/<incident_id>/` (replacing an earlier attempt)."""
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
    try:
        state = lab.up(spec.scenario, spec.size, settings, timeout=timeout)
        ctx = lab.probe_context(state, settings)
        stage("build_s")
        protocol = _protocol(spec)
        calls = snapshot.standard_calls(ctx, protocol, names=names, urls=urls)
        stamps["window_start"] = _now()
        base, base_out = snapshot.record(ctx, calls, scenario=spec.scenario, size=spec.size, phase="baseline")
        result.sizes["baseline_bytes"] = snapshot.save(base, folder / "baseline.json.gz")
        stage("baseline_s")
        stamps["fault_at"] = _now()
        for n, fault in enumerate(spec.faults):
            # each fault draws from its own seed so adding a fault never moves the others' targets
            faults.inject(state, fault.label, fault.target, seed=spec.seed * 100 + n)
        if spec.faults:
            faults.verify(state, ctx)
        stage("inject_verify_s")
        snap, snap_out = snapshot.record(ctx, calls, scenario=spec.scenario, size=spec.size, phase="incident")
        result.sizes["snapshot_bytes"] = snapshot.save(snap, folder / "snapshot.json.gz")
        stamps["recorded_at"] = _now()
        truth = faults.ground_truth(state)
        result.sizes["log_bytes"] = sum(collect_logs(Path(state.run_dir), folder / "logs").values())
        stage("record_s")
        _write_ticket_and_truth(spec, incident_id, folder, state, truth, snap_out, base_out, stamps, historical,
                                backdate_days)
        stage("ticket_s")
        if spec.faults:
            faults.recover(state, timeout=timeout)
            stage("recover_s")
    except FaultNotVerified as exc:
        result.status, result.reason = "invalid", f"fault did not verify: {exc.message}"
    except FaultlineError as exc:
        result.status, result.reason = "invalid", f"{exc.message}" + (f" (fix: {exc.fix})" if exc.fix else "")
    except Exception as exc:  # one failed incident never sinks the suite
        result.status = "invalid"
        result.reason = f"{type(exc).__name__}: {exc}; {traceback.format_exc(limit=3).strip().splitlines()[-1]}"
    finally:
        try:
            lab.down(settings, all=state is None)
        except Exception as exc:  # noqa: BLE001 - recorded; the next `up` would refuse loudly anyway
            result.reason = (result.reason or "") + f"; teardown failed: {exc}"
        stage("teardown_s")
    if result.status == "invalid":
        for name in ("ticket.json", "ground_truth.json", "snapshot.json.gz"):
            (folder / name).unlink(missing_ok=True)
    _write_json(folder / INCIDENT_FILE, {
        "incident_id": incident_id, "spec": spec.model_dump(), "historical": historical, "status": result.status,
        "reason": result.reason, "timings": result.timings, "sizes": result.sizes, **stamps,
        "scenario": spec.scenario, "size": spec.size, "seed": spec.seed,
    })
    return result


def generate_suite(suite: Suite, out: Path, settings: Settings, *, progress: bool = False,
                   only: list[str] | None = None) -> list[IncidentResult]:
    """Generate every incident of `suite` (or the ids in `only`) into `out/`, one lab at a time."""
    from faultline.progress import track

    pairs = [(i, s) for i, s in zip(suite.incident_ids(), suite.incidents) if not only or i in only]
    results = []
    for incident_id, spec in track(pairs, description=f"suite {suite.suite}", enabled=progress):
        results.append(generate_incident(spec, incident_id, out, settings, historical=suite.historical,
                                         backdate_days=suite.backdate_days))
    # the suite's summary: merged with an earlier run's, so `--only` reruns keep the other incidents
    summary = out / f"suite-{suite.suite}.json"
    known = {i["incident_id"]: i for i in json.loads(summary.read_text())["incidents"]} if summary.is_file() else {}
    for r in results:
        known[r.incident_id] = {"incident_id": r.incident_id, "status": r.status, "reason": r.reason,
                                "timings": r.timings, "sizes": r.sizes}
    _write_json(summary, {"suite": suite.suite, "historical": suite.historical,
                          "incidents": [known[i] for i in sorted(known)]})
    return results


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
                            snap_out: list, base_out: list, stamps: dict[str, str], historical: bool,
                            backdate_days: int = 0) -> None:
    from faultline.corpus.symptoms import symptoms_from_probes
    from faultline.corpus.tickets import TicketFacts, resolution_note, write_ticket

    recorded = datetime.fromisoformat(stamps["recorded_at"])
    symptoms = symptoms_from_probes(snap_out, base_out, observed_at=recorded - timedelta(days=backdate_days))
    devices = [(d.name, d.role) for d in state.devices()]
    rng = random.Random(f"ticket:{incident_id}:{spec.seed}")
    # people file a few minutes after they notice, not at the instant the fault lands
    filed = recorded + timedelta(minutes=rng.randint(2, 20)) - timedelta(days=backdate_days)
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


def _write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
