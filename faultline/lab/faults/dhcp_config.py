"""DHCP server misconfiguration (NIKA v1): a LAN's block missing, or handing out a spoofed gateway or DNS server.

NIKA edits isc-dhcp-server's `subnet {}` block; here the host's LAN block of dnsmasq's config is edited, the
server restarted and every client renewed. Recipes, truth and recovery: docs/lab.md#dns-and-dhcp-faults.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import ClassVar

from faultline.lab import service_ops
from faultline.lab.faults import dhcp_clients as dc
from faultline.lab.faults.base import Fault, FaultError, FaultRecord
from faultline.lab.faults.dns_dhcp import (
    WRONG_DNS,
    file_lines,
    lookup_fails,
    lookup_target,
    nameservers,
)
from faultline.lab.faults.routing import mechanism_of
from faultline.lab.services import resolv_conf
from faultline.lab.state import LabState
from faultline.lab.topology import Topology
from faultline.network.probes import ProbeContext, run_probe


class DhcpConfigFault(Fault):
    """Base: edit the server's block for the target host's LAN, restart dnsmasq, make every client renew.

    The target is the seeded host (its LAN's block is edited); ground truth names the server and the
    host, as NIKA does; v2's resource is the server, whose config was changed.
    """

    roles = ("host",)
    checks_dns: ClassVar[bool] = False  # recovery waits for the LAN's resolv.conf too
    symptom_timeout = 15.0

    @classmethod
    def targets(cls, topo: Topology) -> list[str]:
        return [n for n in super().targets(topo) if topo.nodes[n].dhcp] if dc.dhcp_server(topo) else []

    @classmethod
    def needs(cls) -> str:
        return "a DHCP host (a lab with a dhcp server)"

    def edits(self, lines: list[str], tag: str, gateway: str) -> tuple[list[dict], str]:
        """(edits of the config lines, description) for the LAN block `tag`."""
        raise NotImplementedError

    def faulty(self, healthy: dc.ClientState) -> dc.ClientState:
        """What a client of the edited LAN ends up with after renewing."""
        raise NotImplementedError

    def apply(self, state: LabState, topo: Topology, rec: FaultRecord, rng: random.Random) -> None:
        tag, lan = dc.host_block(topo, rec.target)
        server = topo.dhcp_relays.get(lan.router) or dc.dhcp_server(topo)
        if not service_ops.service_running(state, server):
            raise FaultError(f"{server}'s DHCP service is not running", fix="recover the lab first")
        path = service_ops.config_path(state, server)
        edits, what = self.edits(path.read_text().splitlines(), tag, lan.gateway.address.split("/")[0])
        dc.apply_edits(path, edits)
        insert_added(path, edits)
        service_ops.restart_service(state, server)
        lan_hosts = sorted(set(dc.dhcp_hosts(topo)) & {h.node for h in lan.hosts})
        resolvers = topo.nodes[rec.target].resolvers
        rec.params = {"server": server, "config": str(path), "tag": tag, "subnet": lan.subnet, "edits": edits,
                      "lan_hosts": lan_hosts, "name": lookup_target(topo, resolvers[0])[0] if resolvers else None}
        problem = dc.renew_all(state, topo, lambda h: self.expected(topo, h, lan_hosts))
        rec.params["renew_problem"] = problem
        rec.faulty_devices = sorted([server, rec.target])
        rec.resource_id = f"node/{server}"
        rec.mechanism = (f"{server}: {what} for {lan.subnet} ({tag}, {rec.target}'s LAN) in dnsmasq.conf, dnsmasq "
                         f"restarted, every DHCP client released and renewed (udhcpc SIGUSR2+SIGUSR1; NIKA: "
                         "isc-dhcp-server dhcpd.conf + dhclient -r; dhclient)")

    def expected(self, topo: Topology, host: str, lan_hosts: list[str]) -> dc.ClientState:
        healthy = dc.healthy_client(topo, host)
        misled = [self._rec().target] if mechanism_of(self) == "host_override" else lan_hosts
        if host in misled:
            return self.faulty(healthy)
        return dc.ClientState(healthy.address, healthy.gateway)

    def artifact_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        lines, error = file_lines(ctx, rec.params["server"], rec.params["config"])
        if error:
            return error
        for edit in rec.params["edits"]:
            if edit["old"] in lines or (edit["new"] is not None and edit["new"] not in lines):
                return f"{rec.params['server']}'s dnsmasq.conf has {edit['old']!r} back (the fault's edit is gone)"
            missing = [ln for ln in edit.get("added", []) if ln not in lines]
            if missing:
                return f"{rec.params['server']}'s dnsmasq.conf lacks {missing}"
        return None

    def host_override(self, lines: list[str], option: str, value: str) -> tuple[list[dict], str]:
        """Edits giving the target host alone `option` = `value`: its reservation tagged, an option for the tag."""
        host = self._rec().target
        old = next((ln for ln in lines if ln.startswith("dhcp-host=") and ln.endswith(f",{host}")), None)
        if old is None:
            raise FaultError(f"the DHCP config has no reservation for {host}")
        mac, rest = old.split(",", 1)
        added = f"dhcp-option=tag:{OVERRIDE_TAG},{option},{value}"
        return ([{"old": old, "new": f"{mac},set:{OVERRIDE_TAG},{rest}", "after": None, "added": [added]}],
                f"{host}'s reservation tagged {OVERRIDE_TAG} and {added} added")

    def undo(self, state: LabState, topo: Topology, rec: FaultRecord) -> None:
        server = rec.params["server"]
        remove_added(Path(rec.params["config"]), rec.params["edits"])
        dc.revert_edits(Path(rec.params["config"]), rec.params["edits"])
        if not dc.restart_if_running(state, server):
            return  # the server is down (another fault): its recovery starts it with this config
        lan_hosts = rec.params["lan_hosts"]

        def healthy(host: str) -> dc.ClientState:
            want = dc.healthy_client(topo, host)
            return want if self.checks_dns and host in lan_hosts else dc.ClientState(want.address, want.gateway)


        problem = dc.renew_all(state, topo, healthy)
        if problem:
            raise FaultError(f"{rec.label}: the DHCP clients did not recover: {problem}",
                             fix="run `faultline lab recover` again")


class DhcpMissingSubnet(DhcpConfigFault):
    """`dhcp_missing_subnet`: the range and options of the host's LAN removed; its hosts get no lease."""

    label = "dhcp_missing_subnet"
    mechanisms: ClassVar[dict[str, str]] = {
        "standard": "the LAN's dhcp-range and dhcp-option lines removed",
        "range_typo": "the LAN's dhcp-range rewritten for a subnet that does not exist (a typo in the third "
                      "octet): the options stay, no range matches the LAN",
    }

    def edits(self, lines, tag, gateway):
        block = dc.block_lines(lines, tag)
        if not block:
            raise FaultError(f"the DHCP config has no block for {tag}")
        if mechanism_of(self) == "range_typo":
            old = next(ln for ln in block if ln.startswith("dhcp-range="))
            new = typo_range(old, lines)
            return [{"old": old, "new": new, "after": None}], f"dhcp-range rewritten to {new.split(',')[1]}-"
        anchors = [dc.line_before(lines, block[0])] + block[:-1]
        return ([{"old": ln, "new": None, "after": after} for ln, after in zip(block, anchors)],
                f"dhcp-range and dhcp-option lines removed ({len(block)} lines)")

    def faulty(self, healthy):
        return dc.ClientState(None, None)

    def symptom_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        for iface in run_probe(ctx, "ip_addr", dev=rec.target).record.interfaces:
            v4 = [a for a in iface.addresses if ":" not in a]
            if iface.ifname == dc.IFNAME and v4:
                return f"{rec.target} eth0 still has {v4}"
        check = run_probe(ctx, "dhcp_check", src=rec.target).record
        if check.status != "no_lease":
            return f"dhcp_check from {rec.target}: {check.status} ({check.acked_ip or check.error})"
        return None


class DhcpSpoofedGateway(DhcpConfigFault):
    """`dhcp_spoofed_gateway`: the router option of the host's LAN is .254; its hosts route into nothing."""

    label = "dhcp_spoofed_gateway"
    mechanisms: ClassVar[dict[str, str]] = {
        "standard": "the router option of the host's LAN set to .254",
        "host_override": "the host's reservation tagged and a router option (.254) given to that tag: the LAN's "
                         "option stays right, the host gets the wrong one",
    }

    def edits(self, lines, tag, gateway):
        prefix = f"dhcp-option=tag:{tag},option:router,"
        old = next((ln for ln in lines if ln.startswith(prefix)), None)
        wrong = ".".join(gateway.split(".")[:3] + ["254"])
        if old is None or wrong == gateway:
            raise FaultError(f"the DHCP config has no router option for {tag} other than .254")
        if mechanism_of(self) == "host_override":
            return self.host_override(lines, "option:router", wrong)
        return [{"old": old, "new": prefix + wrong, "after": None}], f"router option {gateway} -> {wrong}"

    def faulty(self, healthy):
        return dc.ClientState(healthy.address, ".".join(healthy.gateway.split(".")[:3] + ["254"]))

    def symptom_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        wrong = spoofed_value(rec)
        routes = run_probe(ctx, "ip_route", dev=rec.target).record.routes
        gateways = [r.gateway for r in routes if r.dst == "default"]
        if gateways != [wrong]:
            return f"{rec.target} default via {gateways or 'nothing'}, not the spoofed {wrong}"
        rows = run_probe(ctx, "reachability", sources=[rec.target], count=2).record.rows
        return None if any(r.status != "ok" for r in rows) else f"{rec.target} still reaches all {len(rows)} hosts"


class DhcpSpoofedDns(DhcpConfigFault):
    """`dhcp_spoofed_dns`: the DNS-server option of the host's LAN is 8.8.8.8; its hosts cannot resolve."""

    label = "dhcp_spoofed_dns"
    checks_dns = True
    mechanisms: ClassVar[dict[str, str]] = {
        "standard": f"the DNS-server option of the host's LAN set to {WRONG_DNS}",
        "host_override": f"the host's reservation tagged and a DNS-server option ({WRONG_DNS}) given to that tag: "
                         "the LAN's option stays right, the host gets the wrong one",
    }

    def edits(self, lines, tag, gateway):
        prefix = f"dhcp-option=tag:{tag},option:dns-server,"
        old = next((ln for ln in lines if ln.startswith(prefix)), None)
        if old is None:
            raise FaultError(f"the DHCP config has no dns-server option for {tag}")
        if mechanism_of(self) == "host_override":
            return self.host_override(lines, "option:dns-server", WRONG_DNS)
        return [{"old": old, "new": prefix + WRONG_DNS, "after": None}], f"dns-server option -> {WRONG_DNS}"

    def faulty(self, healthy):
        return dc.ClientState(healthy.address, healthy.gateway, (WRONG_DNS,))

    def symptom_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        lines, error = file_lines(ctx, rec.target, str(resolv_conf(rec.target)))
        if error or nameservers(lines) != [WRONG_DNS]:
            return error or f"{rec.target}'s resolv.conf lists {nameservers(lines) or 'nothing'}, not [{WRONG_DNS}]"
        return lookup_fails(ctx, rec.target, rec.params["name"])


OVERRIDE_TAG = "guest"  # a per-host class an operator might define


def spoofed_value(rec: FaultRecord) -> str:
    """The wrong value a spoofing injection hands out (last field of its edited or added option line)."""
    edit = rec.params["edits"][0]
    return (edit.get("added") or [edit["new"]])[0].rsplit(",", 1)[1]


def insert_added(path: Path, edits: list[dict]) -> None:
    """Put each edit's `added` lines right after its new line."""
    if not any(e.get("added") for e in edits):
        return
    lines = path.read_text().splitlines()
    for edit in edits:
        for offset, line in enumerate(edit.get("added", []), start=1):
            lines.insert(lines.index(edit["new"]) + offset, line)
    dc.write_atomic(path, "\n".join(lines) + "\n")


def remove_added(path: Path, edits: list[dict]) -> None:
    """Remove the lines `insert_added` put in (already gone is fine)."""
    added = {line for edit in edits for line in edit.get("added", [])}
    lines = path.read_text().splitlines()
    if added & set(lines):
        dc.write_atomic(path, "\n".join(ln for ln in lines if ln not in added) + "\n")


def typo_range(line: str, lines: list[str]) -> str:
    """`line` (a dhcp-range) with the third octet of its addresses changed to one no other range uses."""
    head, first, last, *rest = line.split(",")
    used = {ln.split(",")[1].split(".")[2] for ln in lines if ln.startswith("dhcp-range=")}
    a, b, c, _ = first.split(".")
    octet = next(str((int(c) + k) % 256) for k in range(100, 356) if str((int(c) + k) % 256) not in used)
    moved = [".".join([a, b, octet, ip.split(".")[3]]) for ip in (first, last)]
    return ",".join([head, *moved, *rest])
