"""Where a diagnosis gets its observations: one interface over a live lab, a recorded snapshot or an MCP server.

A `Backend` is a probe context (device directory + runner) plus, when there is one, the healthy
baseline of the same network (a recorded snapshot taken before the fault). Every probe a diagnosis
makes goes through `Backend.probe`, which counts it; baseline lookups are free (history, not traffic
on the network) and never counted.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from faultline.network.devices import Device
from faultline.network.probes import ProbeContext, ProbeOutput, run_probe
from faultline.network.records import NotRecordedResult

if TYPE_CHECKING:
    from faultline.config import Settings


@dataclass
class Backend:
    """A network to diagnose."""

    kind: Literal["snapshot", "lab", "mcp", "ssh"]
    ctx: ProbeContext
    baseline_ctx: ProbeContext | None = None
    scenario: str | None = None
    size: str | None = None
    probe_calls: int = 0
    # device -> readable files (configs, logs, resolv.conf); service names and URLs users reach
    files: dict[str, list[str]] = field(default_factory=dict)
    dns_names: list[str] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)
    offered: frozenset[str] | None = None  # probes this network can answer (None: every registered probe)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _baseline_cache: dict[str, ProbeOutput | None] = field(default_factory=dict, repr=False)

    def devices(self) -> list[Device]:
        """Every device of the network, in a stable order."""
        return self.ctx.directory.devices()

    def device(self, name: str) -> Device:
        return self.ctx.directory.device(name)

    def offers(self, name: str) -> bool:
        """Whether this network can answer probe `name` at all (a snapshot recorded before a probe existed
        cannot): asking costs nothing."""
        return self.offered is None or name in self.offered

    def probe(self, name: str, /, **args: Any) -> ProbeOutput:
        """Run one probe on the network (counted). A snapshot that lacks the call answers NotRecordedResult."""
        with self._lock:
            self.probe_calls += 1
        return run_probe(self.ctx, name, **args)

    def baseline(self, name: str, /, **args: Any) -> ProbeOutput | None:
        """The same probe answered from the healthy baseline; None without a baseline or when it lacks the call."""
        if self.baseline_ctx is None:
            return None
        key = name + repr(sorted(args.items()))
        if key not in self._baseline_cache:
            out = run_probe(self.baseline_ctx, name, **args)
            self._baseline_cache[key] = None if isinstance(out.record, NotRecordedResult) else out
        return self._baseline_cache[key]


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
    from faultline.errors import FaultlineError

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


def lab_backend(settings: Settings) -> Backend:
    """A backend over the running lab (root): live probes, no baseline."""
    from faultline.errors import FaultlineError
    from faultline.lab import access

    state = access.status(settings)
    if state is None:
        raise FaultlineError("no lab is running", fix="start one with `sudo faultline lab up SCENARIO`")
    from faultline.network.snapshot import readable_files

    ctx = access.probe_context(state, settings)
    files = {dev: readable_files(roots) for dev, roots in ctx.file_roots.items()}
    names, urls = access.names_and_urls(state.scenario, state.size)
    return Backend(kind="lab", ctx=ctx, scenario=state.scenario, size=state.size, files=files, dns_names=names,
                   urls=urls)


def ssh_backend(settings: Settings, inventory: Path, runner: Any = None) -> Backend:
    """A backend over the devices of a nornir-style inventory folder, reached over SSH: live probes, no baseline.

    Readable files are the hosts' `data.files` (paths under their `data.file_roots`); DNS names are the hosts'
    `dns_names`, and a web or load-balancer host's names are the URLs users fetch. Call `close()` on the
    backend's runner (`close_backend`) when done; `runner`: an SshRunner to share (its pool) instead of a new one.
    """
    from faultline.network.ssh_credentials import resolve_credentials
    from faultline.network.ssh_inventory import load_ssh_inventory
    from faultline.network.ssh_runner import PoolOptions, SshRunner

    inv = load_ssh_inventory(inventory)
    creds = resolve_credentials(inventory_folder=inv.folder, known_hosts=settings.ssh_known_hosts,
                                accept_new=settings.ssh_accept_new_host_keys, key_file=settings.ssh_key_file,
                                secrets_file=settings.ssh_secrets_file)
    options = PoolOptions(pool_size=settings.ssh_pool_size, per_device=settings.ssh_per_device,
                          connect_timeout_s=settings.ssh_connect_timeout_s, retries=settings.ssh_retries)
    runner = runner or SshRunner(inv.targets, creds, options)
    ctx = ProbeContext(directory=inv.directory, runner=runner, file_roots=inv.file_roots, vty_dirs=inv.vty_dirs)
    names, urls = inv.dns_names, inv.urls
    return Backend(kind="ssh", ctx=ctx, scenario=inv.site, size=inv.size, files=inv.files, dns_names=names,
                   urls=urls)


def close_backend(backend: Backend) -> None:
    """Release what a backend holds open (SSH connections, an MCP session); a no-op for the others."""
    close = getattr(backend.ctx.runner, "close", None)
    if callable(close):
        close()
