"""DNS and DHCP faults (NIKA v1): wrong resolver, wrong record, DNS down or filtered, DHCP down.

Targets are drawn by role, and NIKA's BIND and isc-dhcp-server become dnsmasq. The DHCP config labels are in
`dhcp_config.py`, the DNS delay in `delay.py`; recipes: docs/lab.md#dns-and-dhcp-faults.
"""

from __future__ import annotations

import random
import signal
from pathlib import Path
from typing import ClassVar

from faultline.lab import service_ops
from faultline.lab.faults import dhcp_clients as dc
from faultline.lab.faults import freeze
from faultline.lab.faults.base import Fault, FaultError, FaultRecord
from faultline.lab.faults.iptables import IptablesVariant, rule
from faultline.lab.faults.nft import NftFilter
from faultline.lab.services import main_ip, resolv_conf, service_dir
from faultline.lab.state import LabState
from faultline.lab.topology import Topology
from faultline.network.probes import ProbeContext, run_probe

WRONG_DNS = "8.8.8.8"  # NIKA's value; unreachable in the lab, so lookups time out
CLIENT_ROLES = ("host", "client")
ALT_DNS_PORT = 5353  # where a re-bound DNS server listens (mDNS's port: a plausible copy-paste)


def supersede(address: str) -> str:
    """The udhcpc hook line that replaces the DHCP-supplied name servers with `address`."""
    return f'dns="{address}"  # supersede the DHCP-supplied name servers'


def gateway_of(topo: Topology, host: str) -> str:
    """The default gateway of an end host (the LAN router's address)."""
    node = topo.nodes[host]
    if node.gateway:
        return node.gateway
    found = next((lan.gateway.address for lan in topo.lans if any(h.node == host for h in lan.hosts)), None)
    if found is None:
        raise FaultError(f"{host} has no gateway")
    return found.split("/")[0]


def zone_client(topo: Topology, dns: str) -> str | None:
    """The first host/client resolving through `dns` (where DNS symptoms are observed), or None."""
    clients = sorted(n.name for n in topo.nodes.values() if n.role in CLIENT_ROLES and dns in n.resolvers)
    return clients[0] if clients else None


def web_records(topo: Topology, dns: str) -> list[str]:
    """FQDNs of `dns`'s zone that name a web server or load balancer, sorted."""
    _, records = topo.zones[dns]
    return sorted(fqdn for fqdn, node in records.items() if topo.nodes[node].role in ("web", "lb"))


def lookup_target(topo: Topology, dns: str) -> tuple[str, str]:
    """(FQDN, its address) a symptom check asks `dns` for: the first web record, else the first record."""
    _, records = topo.zones[dns]
    fqdn = (web_records(topo, dns) or sorted(records))[0]
    return fqdn, main_ip(topo.nodes[records[fqdn]])


def dig_a(ctx: ProbeContext, src: str, name: str, server: str | None = None) -> tuple[str, list[str]]:
    """(dig status, A-record addresses) of `name` asked from `src` (through its resolv.conf when no server)."""
    rec = run_probe(ctx, "dig", src=src, name=name, server=server).record
    return rec.status, [a.data for a in rec.answers if a.rtype == "A"]


def lookup_fails(ctx: ProbeContext, src: str, name: str, server: str | None = None) -> str | None:
    """None when the lookup fails (no answer), else what it answered."""
    status, answers = dig_a(ctx, src, name, server)
    if status == "NOERROR" and answers:
        return f"{src} still resolves {name}{f' at {server}' if server else ''} to {answers}"
    return None


def service_gone(ctx: ProbeContext, device: str, comm: str) -> str | None:
    """None when no `comm` process runs on `device` (processes probe), else which ones do."""
    procs = run_probe(ctx, "processes", dev=device).record
    if procs.error:
        return f"processes on {device}: {procs.error}"
    alive = [p.pid for p in procs.processes if p.comm == comm]
    return f"{comm} still runs on {device} (PID {', '.join(map(str, alive))})" if alive else None


def file_lines(ctx: ProbeContext, device: str, path: str) -> tuple[list[str], str | None]:
    """(lines of a file, None) through the read_file probe, or ([], why it could not be read)."""
    rec = run_probe(ctx, "read_file", dev=device, path=path).record
    if rec.error:
        return [], f"cannot read {path} on {device}: {rec.error}"
    return rec.text.splitlines(), None


def nameservers(lines: list[str]) -> list[str]:
    """The addresses of a resolv.conf's nameserver lines."""
    return [ln.split()[1] for ln in lines if ln.startswith("nameserver ") and len(ln.split()) > 1]


class DnsNodeFault(Fault):
    """Base of faults on a DNS node: a `dns` node with a zone and a host resolving through it."""

    roles = ("dns",)

    @classmethod
    def targets(cls, topo: Topology) -> list[str]:
        return [n for n in super().targets(topo) if n in topo.zones and zone_client(topo, n)]

    @classmethod
    def needs(cls) -> str:
        return "a DNS node (role dns) with a zone and a host resolving through it"

    def lookup_params(self, topo: Topology, dns: str) -> dict:
        """What the symptom check needs: the DNS address, a client, a name and its right address."""
        fqdn, address = lookup_target(topo, dns)
        return {"dns_ip": main_ip(topo.nodes[dns]), "client": zone_client(topo, dns), "name": fqdn, "answer": address}

    def symptom_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        p = rec.params
        return lookup_fails(ctx, p["client"], p["name"], p["dns_ip"])


class HostIncorrectDns(Fault):
    """`host_incorrect_dns`: the host's resolv.conf says `nameserver 8.8.8.8`; on DHCP hosts the hook keeps it so."""

    label = "host_incorrect_dns"
    roles = CLIENT_ROLES
    mechanisms: ClassVar[dict[str, str]] = {
        "standard": f"resolv.conf names {WRONG_DNS}, which the host cannot reach (lookups time out)",
        "wrong_resolver": "resolv.conf names the host's own gateway, which runs no DNS service (lookups are "
                          "refused at once)",
    }

    @classmethod
    def targets(cls, topo: Topology) -> list[str]:
        return [n for n in super().targets(topo) if topo.nodes[n].resolvers
                and all(r in topo.zones for r in topo.nodes[n].resolvers)]

    @classmethod
    def needs(cls) -> str:
        return "a host or client with DNS resolvers"

    def apply(self, state: LabState, topo: Topology, rec: FaultRecord, rng: random.Random) -> None:
        path = resolv_conf(rec.target)
        fqdn, _ = lookup_target(topo, topo.nodes[rec.target].resolvers[0])
        wrong = gateway_of(topo, rec.target) if rec.mechanism_id == "wrong_resolver" else WRONG_DNS
        rec.params = {"path": str(path), "before": path.read_text(), "name": fqdn, "hook": None, "wrong": wrong}
        what = f"{path} overwritten with 'nameserver {wrong}'"
        if topo.nodes[rec.target].dhcp:
            # a lease renewal rewrites resolv.conf from the server's DNS option: the hook first, as
            # dhclient's `supersede domain-name-servers` would, so the wrong resolver survives renewals
            hook = service_ops.config_path(state, rec.target)
            text = hook.read_text()
            first, _, rest = text.partition("\n")
            rec.params.update({"hook": str(hook), "hook_before": text})
            dc.write_atomic(hook, f"{first}\n{supersede(wrong)}\n{rest}")
            what += f"; DHCP client hook {hook.name} supersedes the DHCP name servers with {wrong}"
        path.write_text(f"nameserver {wrong}\n")  # in place: the hook and `ip netns exec` use this inode
        rec.mechanism = f"{rec.target}: {what}"

    def artifact_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        lines, error = file_lines(ctx, rec.target, rec.params["path"])
        wrong = rec.params.get("wrong", WRONG_DNS)
        if error or nameservers(lines) != [wrong]:
            return error or f"{rec.target} resolv.conf lists {nameservers(lines) or 'no nameserver'}, not [{wrong}]"
        if rec.params["hook"]:
            lines, error = file_lines(ctx, rec.target, rec.params["hook"])
            if error or supersede(wrong) not in lines:
                return error or f"{rec.target}'s DHCP hook no longer supersedes the name servers (a renewal undoes it)"
        return None

    def symptom_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        return lookup_fails(ctx, rec.target, rec.params["name"])

    def undo(self, state: LabState, topo: Topology, rec: FaultRecord) -> None:
        if rec.params["hook"]:
            dc.write_atomic(Path(rec.params["hook"]), rec.params["hook_before"])
        Path(rec.params["path"]).write_text(rec.params["before"])


class DnsRecordError(DnsNodeFault):
    """`dns_record_error`: one web record of the zone points to the first host's address (NIKA: hosts[0]), edited
    in the server's hosts file (standard) or moved into its dnsmasq.conf as a `host-record` with the wrong address."""

    label = "dns_record_error"
    mechanisms: ClassVar[dict[str, str]] = {
        "standard": "the record re-pointed in the server's hosts file, dnsmasq SIGHUP",
        "config_record": "the record taken out of the hosts file and written into dnsmasq.conf as "
                         "`host-record=NAME,WRONG`, dnsmasq restarted",
    }

    @classmethod
    def targets(cls, topo: Topology) -> list[str]:
        return [n for n in super().targets(topo) if web_records(topo, n)]

    def apply(self, state: LabState, topo: Topology, rec: FaultRecord, rng: random.Random) -> None:
        _, records = topo.zones[rec.target]
        fqdn = rng.choice(web_records(topo, rec.target))
        wrong_host = min(n.name for n in topo.nodes.values() if n.role in CLIENT_ROLES)  # NIKA: hosts[0]
        right, wrong = main_ip(topo.nodes[records[fqdn]]), main_ip(topo.nodes[wrong_host])
        path = service_dir(Path(state.run_dir), rec.target) / "hosts"
        rec.params = {**self.lookup_params(topo, rec.target), "name": fqdn, "answer": right, "wrong": wrong,
                      "wrong_host": wrong_host, "path": str(path)}
        if rec.mechanism_id == "config_record":
            conf = service_ops.config_path(state, rec.target)
            added = f"host-record={fqdn},{wrong}"
            rec.params.update(edits=[{"old": f"{right} {fqdn}", "new": None, "after": None}], conf=str(conf),
                              added=added)
            dc.apply_edits(path, rec.params["edits"])
            lines = conf.read_text().splitlines()
            at = next((i + 1 for i, ln in enumerate(lines) if ln.startswith("local=/")), len(lines))
            dc.write_atomic(conf, "\n".join([*lines[:at], added, *lines[at:]]) + "\n")
            service_ops.restart_service(state, rec.target)
            rec.mechanism = (f"{rec.target}: record {fqdn} removed from {path.name} and added to {conf.name} as "
                             f"{added} ({wrong_host}'s address), dnsmasq restarted")
            return
        edits = [{"old": f"{right} {fqdn}", "new": f"{wrong} {fqdn}", "after": None}]
        dc.apply_edits(path, edits)
        service_ops.signal_service(state, rec.target, signal.SIGHUP)  # dnsmasq re-reads its hosts files
        rec.params["edits"] = edits
        rec.mechanism = (f"{rec.target}: record {fqdn} changed from {right} to {wrong} ({wrong_host}'s address) "
                         f"in {path.name}, dnsmasq SIGHUP (NIKA: BIND zone file + restart)")

    def artifact_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        lines, error = file_lines(ctx, rec.target, rec.params["path"])
        edit = rec.params["edits"][0]
        if "added" in rec.params:
            conf, conf_error = file_lines(ctx, rec.target, rec.params["conf"])
            if error or conf_error or edit["old"] in lines or rec.params["added"] not in conf:
                return f"{rec.target}: no {rec.params['added']} in dnsmasq.conf, or the record back in its hosts file"
            return None
        if error or edit["new"] not in lines or edit["old"] in lines:
            return f"{rec.target}'s hosts file does not map {rec.params['name']} to {rec.params['wrong']}"
        return None

    def symptom_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        p = rec.params
        status, answers = dig_a(ctx, p["client"], p["name"], p["dns_ip"])
        if answers != [p["wrong"]]:
            return f"{p['client']} resolves {p['name']} at {p['dns_ip']} to {answers or status}, not {p['wrong']}"
        return None

    def undo(self, state: LabState, topo: Topology, rec: FaultRecord) -> None:
        dc.revert_edits(Path(rec.params["path"]), rec.params["edits"])
        running = service_ops.service_running(state, rec.target)  # else dns_service_down's recovery starts it
        if "added" in rec.params:
            conf = Path(rec.params["conf"])
            lines = conf.read_text().splitlines()
            if rec.params["added"] in lines:
                dc.write_atomic(conf, "\n".join(ln for ln in lines if ln != rec.params["added"]) + "\n")
                if running:
                    service_ops.restart_service(state, rec.target)
        elif running:
            service_ops.signal_service(state, rec.target, signal.SIGHUP)


class DnsServiceDown(DnsNodeFault):
    """`dns_service_down`: the DNS node's dnsmasq killed by PID (NIKA: named stopped / killed in v2), frozen, or
    restarted listening on another port."""

    label = "dns_service_down"
    mechanisms: ClassVar[dict[str, str]] = {
        "standard": "dnsmasq killed by PID (NIKA: named stopped)",
        "frozen": "dnsmasq stopped with SIGSTOP: it runs and holds port 53, nothing answers",
        "rebound": f"dnsmasq restarted with `{'port=' + str(ALT_DNS_PORT)}`: it runs and answers, but not on 53",
    }

    def apply(self, state: LabState, topo: Topology, rec: FaultRecord, rng: random.Random) -> None:
        proc = service_ops.service_process(state, rec.target)
        if proc is None or not service_ops.service_running(state, rec.target):
            raise FaultError(f"{rec.target} runs no recorded DNS service")
        rec.params = {**self.lookup_params(topo, rec.target), "pid": proc.pid}
        if rec.mechanism_id == "frozen":
            freeze.freeze([proc.pid])
            rec.mechanism = f"{rec.target}: dnsmasq (PID {proc.pid}) stopped with SIGSTOP; SIGCONT on recover"
            return
        if rec.mechanism_id == "rebound":
            conf = service_ops.config_path(state, rec.target)
            edits = [{"old": "port=53", "new": f"port={ALT_DNS_PORT}", "after": None}]
            dc.apply_edits(conf, edits)
            new = service_ops.restart_service(state, rec.target)
            rec.params.update(conf=str(conf), edits=edits, pid=new.pid)
            rec.mechanism = (f"{rec.target}: port=53 changed to port={ALT_DNS_PORT} in {conf.name}, dnsmasq "
                             f"restarted (PID {new.pid})")
            return
        service_ops.stop_service(state, rec.target)
        rec.mechanism = f"{rec.target}: dnsmasq (PID {proc.pid}) killed; recover starts it with its config"

    def artifact_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        if rec.mechanism_id == "standard":
            return service_gone(ctx, rec.target, "dnsmasq")
        procs = run_probe(ctx, "processes", dev=rec.target).record.processes
        if not any(p.pid == rec.params["pid"] and p.comm == "dnsmasq" for p in procs):
            return f"dnsmasq (PID {rec.params['pid']}) does not run on {rec.target}"
        if rec.mechanism_id == "frozen":
            return freeze.not_frozen([rec.params["pid"]])
        lines, error = file_lines(ctx, rec.target, rec.params["conf"])
        return error or (None if f"port={ALT_DNS_PORT}" in lines else f"{rec.params['conf']} is back on port 53")

    def undo(self, state: LabState, topo: Topology, rec: FaultRecord) -> None:
        if rec.mechanism_id == "frozen":
            freeze.thaw([rec.params["pid"]])
        elif (rec.mechanism_id == "rebound" and dc.revert_edits(Path(rec.params["conf"]), rec.params["edits"])
              and service_ops.service_running(state, rec.target)):
            service_ops.restart_service(state, rec.target)
        if not service_ops.service_running(state, rec.target):
            service_ops.start_recorded(state, rec.target)


class DnsPortBlocked(IptablesVariant, DnsNodeFault, NftFilter):
    """`dns_port_blocked`: nft inet input drops udp and tcp dport 53 on the DNS node; or iptables rejects them."""

    label = "dns_port_blocked"
    family = "inet"
    matches = ("udp dport 53", "tcp dport 53")
    chains = ("input",)
    mechanisms: ClassVar[dict[str, str]] = {
        "standard": "nft table, input chain: udp and tcp dport 53 dropped (queries time out)",
        "iptables_reject": "iptables -A INPUT -p udp/tcp --dport 53 -j REJECT (queries refused with ICMP port "
                           "unreachable / TCP reset)",
    }
    iptables_mechanisms = ("iptables_reject",)

    def iptables_rules_for(self, state: LabState, rec: FaultRecord) -> list[list[str]]:
        return [rule(state, "INPUT", "-p", "udp", "-m", "udp", "--dport", "53", "-j", "REJECT"),
                rule(state, "INPUT", "-p", "tcp", "-m", "tcp", "--dport", "53", "-j", "REJECT",
                     "--reject-with", "tcp-reset")]

    def apply(self, state: LabState, topo: Topology, rec: FaultRecord, rng: random.Random) -> None:
        super().apply(state, topo, rec, rng)
        rec.params.update(self.lookup_params(topo, rec.target))


class DhcpServiceDown(Fault):
    """`dhcp_service_down`: the DHCP server's dnsmasq killed by PID; a client asking for a lease gets none."""

    label = "dhcp_service_down"
    roles = ("dhcp",)
    mechanisms: ClassVar[dict[str, str]] = {
        "standard": "dnsmasq killed by PID (NIKA: isc-dhcp-server stopped)",
        "frozen": "dnsmasq stopped with SIGSTOP: it runs and holds port 67, no request is answered",
    }

    @classmethod
    def targets(cls, topo: Topology) -> list[str]:
        return super().targets(topo) if dc.dhcp_hosts(topo) else []

    @classmethod
    def needs(cls) -> str:
        return "a DHCP server (role dhcp) with DHCP hosts"

    def apply(self, state: LabState, topo: Topology, rec: FaultRecord, rng: random.Random) -> None:
        if rec.mechanism_id == "frozen":
            proc = service_ops.service_process(state, rec.target)
            if proc is None or not service_ops.service_running(state, rec.target):
                raise FaultError(f"{rec.target} runs no recorded DHCP service")
            freeze.freeze([proc.pid])
            rec.params = {"pid": proc.pid, "client": dc.dhcp_hosts(topo)[0]}
            rec.mechanism = f"{rec.target}: dnsmasq (PID {proc.pid}) stopped with SIGSTOP; SIGCONT on recover"
            return
        pid = service_ops.stop_service(state, rec.target)
        if pid is None:
            raise FaultError(f"{rec.target} runs no recorded DHCP service")
        rec.params = {"pid": pid, "client": dc.dhcp_hosts(topo)[0]}
        rec.mechanism = (f"{rec.target}: dnsmasq (PID {pid}) killed (NIKA: isc-dhcp-server stopped); "
                         "clients keep their leases until they expire (2 min); recover starts it again")

    def artifact_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        if rec.mechanism_id == "frozen":
            procs = run_probe(ctx, "processes", dev=rec.target).record.processes
            if not any(p.pid == rec.params["pid"] and p.comm == "dnsmasq" for p in procs):
                return f"dnsmasq (PID {rec.params['pid']}) does not run on {rec.target}"
            return freeze.not_frozen([rec.params["pid"]])
        return service_gone(ctx, rec.target, "dnsmasq")

    def symptom_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        check = run_probe(ctx, "dhcp_check", src=rec.params["client"]).record
        if check.status != "no_lease":
            return f"dhcp_check from {rec.params['client']}: {check.status} ({check.acked_ip or check.error})"
        return None

    def undo(self, state: LabState, topo: Topology, rec: FaultRecord) -> None:
        if rec.mechanism_id == "frozen":
            freeze.thaw([rec.params["pid"]])
        if not service_ops.service_running(state, rec.target):
            service_ops.start_recorded(state, rec.target)
