"""Link faults: an interface administratively down (`link_down`)."""

from __future__ import annotations

import json
import random

from faultline.netlab.faults.base import Fault, FaultError, FaultRecord, in_ns, sh
from faultline.netlab.probes import ProbeContext, run_probe
from faultline.netlab.state import LabState
from faultline.netlab.topology import Topology


def pick_interface(topo: Topology, device: str, rng: random.Random) -> str:
    """A host's eth0 (as NIKA v1) or, on a router, a seeded choice among its eth* interfaces."""
    names = sorted(i.name for i in topo.nodes[device].interfaces if i.name.startswith("eth"))
    if not names:
        raise FaultError(f"{device} has no eth interface")
    return "eth0" if "eth0" in names and topo.nodes[device].role == "host" else rng.choice(names)


def interface_state(ctx: ProbeContext, device: str, ifname: str) -> tuple[str, list[str]] | None:
    """(operstate, flags) of one interface through the `ip_link` probe; None when it does not exist."""
    for iface in run_probe(ctx, "ip_link", dev=device).record.interfaces:
        if iface.ifname == ifname:
            return iface.operstate, iface.flags
    return None


class LinkDown(Fault):
    """`ip link set IF down` on one end of a link (NIKA v1: the node's own interface)."""

    label = "link_down"
    category = "link_failure"
    fault_type = "link_down"
    roles = ("host", "router")

    def apply(self, state: LabState, topo: Topology, rec: FaultRecord, rng: random.Random) -> None:
        ifname = pick_interface(topo, rec.target, rng)
        ns = state.device(rec.target).namespace
        # the kernel flushes routes through a downed interface; keep the static ones to put back
        routes = json.loads(sh(in_ns(ns, "ip", "-j", "route", "show", "dev", ifname), "route list").stdout or "[]")
        static = [r for r in routes if r.get("protocol", "boot") in ("boot", "static") and r.get("gateway")]
        sh(in_ns(ns, "ip", "link", "set", ifname, "down"), "link down")
        rec.params = {"ifname": ifname, "routes": [[r["dst"], r["gateway"]] for r in static]}
        rec.resource_id = f"interface/{rec.target}/{ifname}"
        rec.mechanism = f"ip link set {ifname} down in {rec.target}"

    def artifact_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        found = interface_state(ctx, rec.target, rec.params["ifname"])
        if found is None:
            return f"{rec.target} has no interface {rec.params['ifname']}"
        operstate, flags = found
        if "UP" in flags:
            return f"{rec.target} {rec.params['ifname']} is administratively up (operstate {operstate})"
        return None

    def undo(self, state: LabState, topo: Topology, rec: FaultRecord) -> None:
        ns, ifname = state.device(rec.target).namespace, rec.params["ifname"]
        sh(in_ns(ns, "ip", "link", "set", ifname, "up"), "link up")
        for dst, gateway in rec.params.get("routes", []):
            sh(in_ns(ns, "ip", "route", "replace", dst, "via", gateway, "dev", ifname), "route restore")
