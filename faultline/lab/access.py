"""What a running lab offers the tools that read it: its state, a probe context, the names users reach.

Diagnosis backends and the MCP lab server use only this module of the lab: it imports no fault
injector and nothing that builds or tears down a lab.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from faultline.config import Settings
from faultline.errors import FaultlineError
from faultline.lab.frr import router_dir
from faultline.lab.namespaces import use_prefix
from faultline.lab.scenarios import build_topology
from faultline.lab.services import service_dir
from faultline.lab.state import LabState, load_state
from faultline.network.backend import Backend
from faultline.network.probes import ProbeContext
from faultline.network.runner import Runner

if TYPE_CHECKING:
    from faultline.network.backends import NetworkTarget

FRR_DAEMONS = {"zebra", "bgpd", "ospfd", "staticd", "ripd"}
# the management plane's daemons (faultline.lab.mgmt): no service of the lab, nothing a probe may read
MGMT_DAEMONS = {"sshd"}


def status(settings: Settings) -> LabState | None:
    """The current lab's state, or None when no lab is up; its prefix becomes this process's lab prefix."""
    state = load_state(Path(settings.lab_dir).resolve())
    if state is not None:
        use_prefix(state.prefix)
    return state


def probe_context(state: LabState, settings: Settings | None = None, runner: Runner | None = None) -> ProbeContext:
    """A ProbeContext for the running lab: its devices, each router's vty socket dir and readable FRR files."""
    use_prefix(state.prefix)  # the router dirs are named after the lab's namespaces
    run_dir = Path(state.run_dir) if settings is None else Path(settings.lab_dir).resolve()
    routers = sorted(d.name for d in state.devices() if d.role == "router")
    dirs = {r: str(router_dir(run_dir, r)) for r in routers}
    roots: dict[str, list[str]] = {r: [d] for r, d in dirs.items()}
    # service configs and logs, and every end host's resolv.conf folder
    for proc in state.processes:
        if proc.name not in FRR_DAEMONS and proc.name not in MGMT_DAEMONS:
            roots.setdefault(proc.device, []).append(str(service_dir(run_dir, proc.device)))
    for device in state.devices():
        if device.role not in ("router", "switch"):
            roots.setdefault(device.name, []).append(f"/etc/netns/{device.namespace}")
    return ProbeContext(directory=state, runner=runner or Runner(), file_roots=roots, vty_dirs=dirs)


def names_and_urls(scenario: str, size: str) -> tuple[list[str], list[str]]:
    """Every DNS name of a lab, and the URL of every web name (web servers and load balancers); a web server
    or load balancer users reach that has no name is fetched by its address, as users of such a site do."""
    topo = build_topology(scenario, size)
    names, urls, named = [], [], set()
    for _, (_, records) in sorted(topo.zones.items()):
        for fqdn, node in sorted(records.items()):
            names.append(fqdn)
            named.add(node)
            if topo.nodes[node].role in ("web", "lb"):
                urls.append(f"http://{fqdn}/")
    for name, node in sorted(topo.nodes.items()):
        if node.role in ("web", "lb") and name not in named and not node.private and node.addresses:
            urls.append(f"http://{node.addresses[0].split('/')[0]}/")
    return names, urls


def open_lab(settings: Settings, target: NetworkTarget | None = None) -> Backend:
    """The `lab` network backend: the running lab (root), probed live, no baseline (the target names nothing)."""
    state = status(settings)
    if state is None:
        raise FaultlineError("no lab is running", fix="start one with `sudo faultline lab up SCENARIO`")
    from faultline.network.snapshot import readable_files

    ctx = probe_context(state, settings)
    files = {dev: readable_files(roots) for dev, roots in ctx.file_roots.items()}
    names, urls = names_and_urls(state.scenario, state.size)
    return Backend(kind="lab", ctx=ctx, scenario=state.scenario, size=state.size, files=files, dns_names=names,
                   urls=urls)
