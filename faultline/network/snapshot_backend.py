"""The `snapshot` network backend: a recorded incident snapshot answers every probe it recorded, with the healthy
baseline recorded beside it (unless asked to diagnose without one, as on a live network)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from faultline.errors import FaultlineError
from faultline.network.backend import Backend

if TYPE_CHECKING:
    from faultline.config import Settings
    from faultline.network.backends import NetworkTarget


def open_snapshot(settings: Settings, target: NetworkTarget) -> Backend:
    """The registry's opener: `target.snapshot` (a snapshot file, or an incident folder holding one)."""
    path = target.snapshot
    if path is not None and path.is_dir():
        path = path / "snapshot.json.gz"
    if path is None or not path.is_file():
        raise FaultlineError(f"{target.incident_id or 'the incident'} has no recorded snapshot"
                             + (f" ({path} is missing)" if path else ""),
                             fix="record one, or use the lab or ssh network backend")
    return snapshot_backend(path, use_baseline=target.use_baseline)


def snapshot_backend(snapshot_file: Path, baseline_file: Path | None = None, *, use_baseline: bool = True) -> Backend:
    """A backend answering from a recorded incident snapshot, with its healthy baseline when given or found
    beside it (`use_baseline=False`: diagnose as if no baseline existed, like a live network)."""
    from faultline.network import snapshot as snap

    incident = snap.load(snapshot_file)
    if not use_baseline:
        baseline_file = None
    elif baseline_file is None:
        candidate = snapshot_file.with_name("baseline.json.gz")
        baseline_file = candidate if candidate.is_file() and candidate != snapshot_file else None
    base = None
    if baseline_file:
        baseline = snap.load(baseline_file)
        _check_baseline(incident, baseline, snapshot_file, baseline_file)
        base = baseline.context()
    files: dict[str, list[str]] = {}
    names, urls = [], []
    for call in incident.calls:
        if call.probe == "read_file":
            files.setdefault(call.args["dev"], []).append(call.args["path"])
        elif call.probe == "dig" and call.args["name"] not in names:
            names.append(call.args["name"])
        elif call.probe == "http_get" and call.args["url"] not in urls:
            urls.append(call.args["url"])
    return Backend(kind="snapshot", ctx=incident.context(), baseline_ctx=base, scenario=incident.scenario,
                   size=incident.size, files=files, dns_names=names, urls=urls,
                   offered=frozenset(call.probe for call in incident.calls))


def _check_baseline(incident: Any, baseline: Any, snapshot_file: Path, baseline_file: Path) -> None:
    """Refuse a baseline of another network: its scenario, size, phase and devices must be the snapshot's.

    A baseline copied from another incident of the same network (scenario, size and devices alike) is accepted:
    it is a healthy recording of that same network, which is all a baseline is.
    """
    problems = []
    if baseline.phase != "baseline":
        problems.append(f"it was recorded in phase {baseline.phase!r}, not 'baseline'")
    if (baseline.scenario, baseline.size) != (incident.scenario, incident.size):
        problems.append(f"it records scenario {baseline.scenario} size {baseline.size}, the snapshot "
                        f"{incident.scenario} size {incident.size}")
    theirs = {(d["name"], d["role"]) for d in baseline.devices}
    ours = {(d["name"], d["role"]) for d in incident.devices}
    if theirs != ours:
        only = sorted(n for n, _ in ours - theirs)[:5]
        problems.append(f"its devices differ (the snapshot's {', '.join(only) or 'roles'} are not in it)")
    if problems:
        raise FaultlineError(f"{baseline_file} is not the baseline of {snapshot_file}: {'; '.join(problems)}",
                             fix=f"copy this incident's own baseline.json.gz there, or remove {baseline_file} "
                                 "to diagnose without a baseline")
