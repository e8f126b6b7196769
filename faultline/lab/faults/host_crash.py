"""`host_crash` (partial: no container to kill): the host's processes killed, or stopped as on a hung machine, and
its own interfaces set down, so the ports facing it stay up without carrier. Recipe: docs/lab.md#host-faults.
"""

from __future__ import annotations

import os
import random
import signal
from typing import ClassVar

from faultline.lab import mgmt, teardown
from faultline.lab.faults.base import Fault, FaultError, FaultRecord, sh
from faultline.lab.faults.interfaces import interface_state, set_addressing, snapshot, veth_peer
from faultline.lab.service_ops import service_process, service_running, start_recorded
from faultline.lab.state import LabState
from faultline.lab.topology import Topology
from faultline.network.probes import ProbeContext


class HostCrash(Fault):
    """`host_crash`: the host's processes killed and its own network interfaces gone dark."""

    label = "host_crash"
    roles = ("host",)
    mechanisms: ClassVar[dict[str, str]] = {
        "standard": "every process of the host killed, its own interfaces set down (the far ends lose carrier)",
        "hung": "every process of the host stopped (SIGSTOP: a hung machine, nothing runs, nothing answers), its "
                "own interfaces set down (the far ends lose carrier); recovery lets the processes run again",
    }

    def apply(self, state: LabState, topo: Topology, rec: FaultRecord, rng: random.Random) -> None:
        ns = state.device(rec.target).namespace
        names = sorted(i.name for i in topo.nodes[rec.target].interfaces if i.name.startswith("eth"))
        peers = [[*veth_peer(ns, name), name] for name in names]
        by_ns = {d.namespace: d.name for d in state.devices()}
        if not peers or any(p[0] not in by_ns for p in peers):
            raise FaultError(f"{rec.target}'s veth peers are not all lab devices: {peers}")
        before = snapshot(ns)
        pids = teardown.namespace_pids(ns)
        killed = [f"{teardown.comm(pid)}[{pid}]" for pid in pids]
        hung = rec.mechanism_id == "hung"
        if hung:
            signal_all(pids, signal.SIGSTOP)
        else:
            teardown.kill_pids(pids)
        # a dead machine's NIC stops signalling: its own end goes down, the switch or router port stays
        # administratively up and loses carrier (setting that port down would be `link_down` on it)
        for name in names:
            sh(["ip", "-n", ns, "link", "set", name, "down"], "own link down")
        mgmt.crash_node(state, rec.target)
        rec.params = {"peers": [[by_ns[p], p, i, own] for p, i, own in peers], "killed": [] if hung else killed,
                      "stopped": pids if hung else [], "own": names, "before": before}
        done = f"hung: stopped (SIGSTOP) {', '.join(killed) or 'no processes'}" if hung else \
            f"crashed: killed {', '.join(killed) or 'no processes'}"
        rec.mechanism = (f"{rec.target} {done}; its "
                         f"{', '.join(names)} went dark (set down inside the host), so "
                         f"{', '.join(f'{d}:{i}' for d, _, i, _ in rec.params['peers'])} stay up without carrier "
                         "(substitute for docker kill: no container)")

    def artifact_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        for device, _, ifname, own in rec.params["peers"]:
            found = interface_state(ctx, device, ifname)
            if found is None:
                return f"{device} has no {ifname} (far end of {rec.target} {own})"
            if "own" in rec.params and ("UP" not in found[1] or "LOWER_UP" in found[1]):
                return f"{device} {ifname} (far end of {rec.target} {own}) is not up without carrier: {found[1]}"
            if "own" not in rec.params and "UP" in found[1]:
                return f"{device} {ifname} (far end of {rec.target} {own}) is up"
        for name in rec.params.get("own", []):
            found = interface_state(ctx, rec.target, name)
            if found is not None and "UP" in found[1]:
                return f"{rec.target} {name} is still up"
        return None

    def undo(self, state: LabState, topo: Topology, rec: FaultRecord) -> None:
        signal_all([pid for pid in rec.params.get("stopped", []) if teardown.alive(pid)], signal.SIGCONT)
        if "own" in rec.params:
            ns = state.device(rec.target).namespace
            for name in rec.params["own"]:
                sh(["ip", "-n", ns, "link", "set", name, "up"], "own link up")
            # the kernel dropped the routes through the downed links; the host "boots" with its own config
            before = rec.params["before"]
            set_addressing(ns, before["addresses"], before["routes"])
        else:  # a fault recorded before the host's own links went dark: its far ends were set down
            for _, peer_ns, peer_if, _ in rec.params["peers"]:
                sh(["ip", "-n", peer_ns, "link", "set", peer_if, "up"], "peer link up")
        # the host "boots" again: its service (a DHCP client on DHCP hosts) is started afresh
        if service_process(state, rec.target) is not None and not service_running(state, rec.target):
            start_recorded(state, rec.target)
        mgmt.reboot_node(state, rec.target)


def signal_all(pids: list[int], sig: signal.Signals) -> None:
    """Send `sig` to each PID; a process already gone is fine."""
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
