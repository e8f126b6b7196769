"""Corpus symptoms and operator tickets: symptoms derived from hand-made probe records, tickets for every
supported fault label that never give the fault away, healthy false alarms, historical resolutions.

No lab: every probe output is a record built here, shaped as the real probe returns it.
"""

from __future__ import annotations

import random
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from faultline.corpus.symptoms import Symptom, symptoms_from_probes
from faultline.corpus.tickets import (
    TEXT_DIR,
    Ticket,
    TicketFacts,
    forbidden_terms,
    leak_check,
    write_ticket,
)
from faultline.lab.faults.registry import FAULTS
from faultline.lab.scenarios import build_topology
from faultline.lab.topology import Topology
from faultline.network.probes import ProbeOutput
from faultline.network.reachability import ReachabilityMatrix, ReachabilityRow
from faultline.network.records import (
    DnsAnswer,
    DnsResult,
    HttpTiming,
    Interface,
    InterfaceList,
)
from faultline.nika.labels import catalogue

OPENED = datetime(2026, 3, 4, 2, 25, tzinfo=UTC)
SEEDS = range(5)
SUPPORTED = [c for c in catalogue() if c.status in ("implemented", "planned")]
# words that name how a fault is made; never in a ticket, whatever the label
MECHANISM_WORDS = ["nft", "nftables", "iptables", "tbf", "tc", "netem", "qdisc", "cgroup", "stress-ng", "nfqueue",
                   "vtysh", "numgen", "lladdr", "blackhole", "iperf3", "udhcpc", "dnsmasq", "frr", "bgp", "ospf"]
# what a pasted command output looks like in a ticket
PASTE_MARKS = ("packets transmitted", "<<>> DiG", "curl", "ping:", "ip -br addr")
OUTAGE_CLAIMS = ("can't reach", "cannot reach", "unreachable", "outage", "not working", "broken", "no connection",
                 "timed out", "time out", "times out", "fails", "failing", "down", "won't load", "refuse")
VERIFY_CUES = ("verify", "confirm", "check", "fine", "false alarm", "no impact", "ok")


# ---------------------------------------------------------------- probe records as the probes return them

def out(probe: str, record: Any, raw: str = "", device: str | None = None) -> ProbeOutput:
    return ProbeOutput(probe=probe, device=device, args={}, record=record, raw=raw, result=None)


def reach(rows: list[tuple[str, str, str, str, float | None]]) -> ProbeOutput:
    """rows of (src, dst, dst_ip, status, rtt)."""
    made = []
    for src, dst, ip, status, rtt in rows:
        rx = {"ok": 2, "loss": 1}.get(status, 0)
        made.append(ReachabilityRow(src=src, dst=dst, dst_ip=ip, tx=2, rx=rx, loss=100.0 * (2 - rx) / 2,
                                    rtt=rtt if rx else None, status=status))
    matrix = ReachabilityMatrix(hosts={r.dst: r.dst_ip for r in made}, rows=made, summary={})
    return out("reachability", matrix)


def dig(src: str, name: str, status: str = "NOERROR", answer: str | None = None, ms: int = 1) -> ProbeOutput:
    answers = [DnsAnswer(name=name + ".", ttl=0, rtype="A", data=answer)] if answer else []
    rec = DnsResult(src=src, name=name, server=None, rtype="A", status=status, answers=answers,
                    query_time_ms=None if status == "timeout" else ms,
                    error="connection timed out; no servers could be reached" if status == "timeout" else None)
    return out("dig", rec, device=src)


def http(src: str, url: str, status: str = "ok", total: float = 0.01, code: int | None = 200,
         exit_code: int = 0) -> ProbeOutput:
    rec = HttpTiming(src=src, url=url, status=status, http_code=code, time_namelookup_s=0.001,
                     time_connect_s=0.002, time_starttransfer_s=total * 0.9, time_total_s=total, curl_exit=exit_code,
                     remote_ip=None)
    return out("http_get", rec, raw=f"FLHTTP {code or 0} 0.001 0.002 {total} {total} - {exit_code} ", device=src)


def addr(device: str, address: str | None) -> ProbeOutput:
    iface = Interface(ifname="eth0", ifindex=2, operstate="UP", flags=["BROADCAST", "UP", "LOWER_UP"],
                      addresses=[address] if address else ["fe80::1/64"])
    return out("ip_addr", InterfaceList(device=device, interfaces=[iface]), device=device)


# ---------------------------------------------------------------- symptoms_from_probes


def test_reachability_rows_become_symptoms_only_when_they_changed() -> None:
    base = reach([("h1", "h2", "10.1.1.10", "ok", 0.1), ("h1", "b1", "20.0.0.2", "unreachable", None),
                  ("h1", "h3", "10.1.2.10", "ok", 0.1), ("h1", "h4", "10.1.3.10", "ok", 0.2)])
    now = reach([("h1", "h2", "10.1.1.10", "unreachable", None), ("h1", "b1", "20.0.0.2", "unreachable", None),
                 ("h1", "h3", "10.1.2.10", "loss", 0.1), ("h1", "h4", "10.1.3.10", "ok", 180.0)])
    found = symptoms_from_probes([now], [base])
    assert [(s.kind, s.dst) for s in found] == [("unreachable", "h2"), ("packet_loss", "h3"), ("slow", "h4")]
    assert "2 packets transmitted, 0 received, 100% packet loss" in found[0].evidence
    assert found[0].command == "ping -c 2 10.1.1.10"
    assert "rtt min/avg/max/mdev" in found[1].evidence and found[1].detail == "50% loss (1/2 replies)"
    # without a baseline every failing row counts, the private one too
    assert [s.dst for s in symptoms_from_probes([now])] == ["h2", "b1", "h3"]


def test_dig_failures_and_changed_answers() -> None:
    base = [dig("h1", "web1.local", answer="10.1.5.11"), dig("h1", "web2.local", answer="10.1.5.12"),
            dig("h1", "web3.local", answer="10.1.5.13"), dig("h1", "web0.local", answer="10.1.5.10")]
    now = [dig("h1", "web1.local", status="timeout"), dig("h1", "web2.local", answer="10.1.0.10"),
           dig("h1", "web3.local", answer="10.1.5.13", ms=1004), dig("h1", "web0.local", answer="10.1.5.10")]
    found = symptoms_from_probes(now, base)
    assert [(s.kind, s.dst) for s in found] == [("dns_failure", "web1.local"), ("dns_wrong_answer", "web2.local"),
                                                ("slow", "web3.local")]
    assert ";; connection timed out; no servers could be reached" in found[0].evidence
    assert found[1].detail == "answer 10.1.0.10, baseline 10.1.5.12"
    assert "status: NOERROR" in found[1].evidence and "10.1.0.10" in found[1].evidence
    assert ";; Query time: 1004 msec" in found[2].evidence


def test_dig_uses_the_real_output_when_the_probe_kept_it() -> None:
    raw = ("; <<>> DiG 9.18.28 <<>> +time=2 +tries=1 -t A -q web1.local\n;; global options: +cmd\n"
           ";; connection timed out; no servers could be reached\n")
    rec = dig("h1", "web1.local", status="timeout").record
    found = symptoms_from_probes([out("dig", rec, raw=raw)], [dig("h1", "web1.local", answer="10.1.5.11")])
    assert found[0].evidence == raw.strip() and found[0].command == "dig +time=2 +tries=1 -t A -q web1.local"


def test_http_errors_refusals_and_slow_pages() -> None:
    url = "http://web99.local/"
    base = [http("h1", url), http("h2", url), http("h3", url), http("h4", url, status="timeout", code=None,
                                                                      exit_code=28)]
    now = [http("h1", url, status="timeout", code=None, exit_code=28), http("h2", url, status="refused", code=None,
                                                                            exit_code=7),
           http("h3", url, total=6.2), http("h4", url, status="timeout", code=None, exit_code=28)]
    found = symptoms_from_probes(now, base)
    assert [(s.kind, s.src) for s in found] == [("http_error", "h1"), ("service_refused", "h2"), ("http_slow", "h3")]
    assert found[0].evidence == "curl: (28) Connection timed out after 5001 milliseconds"
    assert "Failed to connect to web99.local port 80" in found[1].evidence
    assert "total 6.200000s" in found[2].evidence and found[2].detail == "total 6.20 s, baseline 0.01 s"
    gateway = symptoms_from_probes([http("h1", url, status="http_error", code=504, total=0.3)], [http("h1", url)])
    assert gateway[0].kind == "http_error" and gateway[0].evidence.startswith("HTTP 504")


def test_lost_address_is_a_symptom_and_symptoms_are_frozen() -> None:
    at = OPENED - timedelta(minutes=3)
    found = symptoms_from_probes([addr("h1", None), addr("h2", "10.1.0.11/24")],
                                 [addr("h1", "10.1.0.10/24"), addr("h2", "10.1.0.11/24")], observed_at=at)
    assert [(s.kind, s.src, s.dst) for s in found] == [("no_address", "h1", None)]
    assert found[0].observed_at == at and found[0].command == "ip -br addr show dev eth0"
    gone = InterfaceList(device="h1", interfaces=[])
    moved = symptoms_from_probes([out("ip_addr", gone)], [addr("h1", "10.1.0.10/24")])
    assert [(s.kind, s.evidence) for s in moved] == [("no_address", 'Device "eth0" does not exist.')]
    failed = InterfaceList(device="h1", interfaces=[], error="Cannot open network namespace")
    assert symptoms_from_probes([out("ip_addr", failed)], [addr("h1", "10.1.0.10/24")]) == []
    with pytest.raises(ValidationError):
        found[0].kind = "slow"  # type: ignore[misc]
    with pytest.raises(ValidationError):
        Symptom(kind="meltdown", src="h1", dst=None, detail="", command="", evidence="")  # type: ignore[arg-type]


# ---------------------------------------------------------------- one hand-made incident per supported label

# label -> (scenario, size, target, second faulty device or None, what users see)
# what users see: iso (the target end host is cut off), loss / slow (to the target), behind (hosts behind the
# target router are cut off), victim:X (X is cut off), dns_fail / dns_wrong / dns_slow (lookups from users),
# own_dns / own_http / own_slow (from the target host only), http_err / http_slow / http_504 (web from users),
# no_addr (the target host, else a few DHCP users, lose their address)
CASES: dict[str, tuple[str, str, str, str | None, str]] = {
    "link_down": ("simple_bgp", "s", "pc2", None, "iso"),
    "link_flap": ("simple_bgp", "s", "pc1", None, "loss"),
    "link_detach": ("rip_small_internet", "s", "host_2", None, "iso"),
    "link_fragmentation_disabled": ("dc_clos_bgp", "s", "pc_0_1", None, "iso"),
    "host_crash": ("ospf_enterprise_static", "m", "host_2_1_1_1", None, "iso"),
    "host_missing_ip": ("ospf_enterprise_static", "s", "host_1_1_1_1", None, "iso+no_addr"),
    "host_ip_conflict": ("simple_bgp", "m", "pc2", "pc1", "iso"),
    "host_incorrect_ip": ("rip_small_internet", "s", "host_1", None, "iso"),
    "host_incorrect_gateway": ("ospf_enterprise_static", "m", "host_1_2_1_1", None, "iso"),
    "host_incorrect_netmask": ("dc_clos_bgp", "s", "pc_0_0", None, "iso"),
    "host_incorrect_dns": ("ospf_enterprise_dhcp", "s", "host_1_1_1_1", None, "own_dns"),
    "dns_record_error": ("ospf_enterprise_dhcp", "s", "dns_server", None, "dns_wrong"),
    "dns_service_down": ("dc_clos_service", "m", "dns_pod0", None, "dns_fail"),
    "dhcp_service_down": ("ospf_enterprise_dhcp", "m", "dhcp_server", None, "no_addr"),
    "bgp_acl_block": ("simple_bgp", "s", "router1", None, "behind"),
    "ospf_acl_block": ("ospf_enterprise_static", "m", "dist_router_1_1", None, "behind"),
    "arp_acl_block": ("ospf_enterprise_static", "s", "host_2_1_1_1", None, "iso"),
    "icmp_acl_block": ("dc_clos_bgp", "m", "leaf_0_2", None, "behind"),
    "http_acl_block": ("ospf_enterprise_static", "s", "host_1_1_1_1", None, "own_http"),
    "dns_port_blocked": ("ospf_enterprise_static", "m", "dns_server", None, "dns_fail"),
    "bgp_asn_misconfig": ("dc_clos_bgp", "s", "leaf_0_1", None, "behind"),
    "bgp_missing_route_advertisement": ("simple_bgp", "m", "router3", None, "behind"),
    "host_static_blackhole": ("simple_bgp", "s", "router2", None, "behind"),
    "bgp_blackhole_route_leak": ("dc_clos_bgp", "m", "leaf_1_0", None, "victim:pc_0_1"),
    "bgp_hijacking": ("dc_clos_service", "m", "leaf_0_1", None, "victim:webserver3_pod1+http_err"),
    "dhcp_missing_subnet": ("ospf_enterprise_dhcp", "m", "host_2_2_1_1", "dhcp_server", "no_addr"),
    "mac_address_conflict": ("simple_bgp", "m", "pc3", "pc4", "loss"),
    "ospf_area_misconfiguration": ("ospf_enterprise_dhcp", "s", "dist_router_2_1", None, "behind"),
    "ospf_neighbor_missing": ("ospf_enterprise_static", "s", "dist_router_1_1", None, "behind"),
    "frr_service_down": ("rip_small_internet", "m", "router_3", None, "behind"),
    "arp_cache_poisoning": ("rip_small_internet", "s", "host_2", None, "iso"),
    "dhcp_spoofed_gateway": ("ospf_enterprise_dhcp", "m", "host_1_2_1_1", "dhcp_server", "iso"),
    "dhcp_spoofed_dns": ("ospf_enterprise_dhcp", "m", "host_2_1_2_2", "dhcp_server", "own_dns"),
    "web_dos_attack": ("ospf_enterprise_static", "s", "web_server_2", None, "http_slow"),
    "link_high_packet_corruption": ("dc_clos_bgp", "s", "pc_0_1", None, "loss"),
    "link_bandwidth_throttling": ("simple_bgp", "s", "pc2", None, "slow+loss"),
    "incast_traffic_network_limitation": ("dc_clos_service", "s", "webserver1_pod0", None, "http_slow"),
    "dns_lookup_latency": ("ospf_enterprise_dhcp", "s", "dns_server", None, "dns_slow"),
    "load_balancer_overload": ("ospf_enterprise_dhcp", "m", "load_balancer", None, "http_504+http_slow"),
    "sender_resource_contention": ("dc_clos_service", "m", "webserver2_pod1", None, "http_slow"),
    "receiver_resource_contention": ("ospf_enterprise_static", "m", "host_1_1_1_2", None, "own_slow"),
    "sender_application_delay": ("ospf_enterprise_dhcp", "s", "web_server_1", None, "http_slow"),
}


def _ip(topo: Topology, name: str) -> str:
    return topo.nodes[name].addresses[0].split("/")[0]


def _ends(topo: Topology) -> list[str]:
    """End hosts the reachability probe covers (not LB backends, not routers or switches)."""
    return sorted(n.name for n in topo.nodes.values() if n.role not in ("router", "switch", "backend"))


def _users(topo: Topology) -> list[str]:
    return sorted(n.name for n in topo.nodes.values() if n.role in ("host", "client"))


def _web(topo: Topology, device: str | None = None) -> str:
    """The URL people use for `device` (or the scenario's main site)."""
    names = {node: fqdn for _, (_, recs) in topo.zones.items() for fqdn, node in recs.items()}
    if device is None:
        device = "load_balancer" if "load_balancer" in topo.nodes else min(
            n.name for n in topo.nodes.values() if n.role == "web")
    return f"http://{names.get(device, _ip(topo, device))}/"


def _cut_off(topo: Topology, cut: list[str]) -> tuple[list, list]:
    rows_now, rows_base = [], []
    for src in _ends(topo):
        for dst in _ends(topo):
            if src != dst and (src in cut or dst in cut):
                rows_now.append((src, dst, _ip(topo, dst), "unreachable", None))
                rows_base.append((src, dst, _ip(topo, dst), "ok", 0.2))
    return [reach(rows_now)], [reach(rows_base)]


def incident(label: str) -> tuple[Topology, list[ProbeOutput], list[ProbeOutput], set[str]]:
    """The topology, the probe outputs during and before the fault, and the faulty devices."""
    scenario, size, target, second, pattern = CASES[label]
    topo = build_topology(scenario, size)
    users = _users(topo)
    now: list[ProbeOutput] = []
    base: list[ProbeOutput] = []
    for part in pattern.split("+"):
        if part == "iso":
            n, b = _cut_off(topo, [target])
        elif part == "behind":
            n, b = _cut_off(topo, [h.node for lan in topo.lans if lan.router == target for h in lan.hosts])
        elif part.startswith("victim:"):
            n, b = _cut_off(topo, [part.split(":")[1]])
        elif part in ("loss", "slow"):
            status, rtt = ("loss", 0.3) if part == "loss" else ("ok", 400.0)
            rows = [(u, t, _ip(topo, t), status, rtt) for u in _ends(topo) for t in [target, second] if t and u != t]
            n, b = [reach(rows)], [reach([(s, d, ip, "ok", 0.3) for s, d, ip, _, _ in rows])]
        elif part in ("dns_fail", "dns_wrong", "dns_slow", "own_dns"):
            zone = next(iter(topo.zones.values()))[1]
            name = max(f for f in zone if f.startswith("web"))
            srcs = [target] if part == "own_dns" else users
            real = _ip(topo, zone[name])
            now_kw = {"dns_fail": {"status": "timeout"}, "own_dns": {"status": "timeout"},
                      "dns_wrong": {"answer": _ip(topo, users[0])}, "dns_slow": {"answer": real, "ms": 1003}}[part]
            n, b = [dig(s, name, **now_kw) for s in srcs], [dig(s, name, answer=real) for s in srcs]
        elif part in ("http_err", "http_slow", "http_504", "own_http", "own_slow"):
            url = _web(topo, None if part in ("own_http", "own_slow") or topo.nodes[target].role not in ("web", "lb")
                       else target)
            if part == "http_err" and pattern.startswith("victim:"):
                url = _web(topo, pattern.split(":")[1].split("+")[0])
            srcs = [target] if part.startswith("own") else users
            kw = {"http_err": {"status": "timeout", "code": None, "exit_code": 28},
                  "own_http": {"status": "timeout", "code": None, "exit_code": 28},
                  "http_504": {"status": "http_error", "code": 504, "total": 0.2},
                  "http_slow": {"total": 7.5}, "own_slow": {"total": 12.0}}[part]
            n, b = [http(s, url, **kw) for s in srcs], [http(s, url) for s in srcs]
        elif part == "no_addr":
            hosts = [target] if target in users else [u for u in users if topo.nodes[u].dhcp][:3]
            n = [addr(h, None) for h in hosts]
            b = [addr(h, topo.nodes[h].addresses[0]) for h in hosts]
        else:
            raise AssertionError(f"unknown symptom pattern {part}")
        now += n
        base += b
    return topo, now, base, {target} | ({second} if second else set())


def ground_truth(label: str, faulty: set[str], target: str) -> dict[str, Any]:
    info = next(c for c in catalogue() if c.label == label)
    v1 = {"is_anomaly": True, "faulty_devices": sorted(faulty), "root_cause_name": label}
    mechanism = f"{info.how} (on {target})"
    return {"v1": {**v1, "root_cause_names": [label]}, "v2": [{"resource_id": f"node/{target}", "fault_type": label}],
            "faults": [{"id": "f1", "label": label, "target": target, "mechanism": mechanism, "v1": v1,
                        "v2": {"resource_id": f"node/{target}", "fault_type": label}, "category": info.category}]}


def facts_for(label: str, seed: int, historical: bool = False) -> TicketFacts:
    topo, now, base, faulty = incident(label)
    observed = OPENED - timedelta(minutes=7 + seed)
    devices = [(n.name, n.role) for n in topo.nodes.values()]
    return TicketFacts(incident_id=f"inc-{label}-{seed}", scenario=topo.scenario, size=topo.size,
                       opened_at=OPENED + timedelta(hours=seed), devices=devices,
                       symptoms=symptoms_from_probes(now, base, observed_at=observed + timedelta(hours=seed)),
                       healthy=False, ground_truth=ground_truth(label, faulty, CASES[label][2]), historical=historical)


def _word(term: str) -> str:
    """As the brief asks: long words also catch their longer forms (block -> blocked), short ones whole."""
    return r"(?<![a-z0-9])" + re.escape(term.lower()) + (r"[a-z0-9]*" if len(term) >= 4 else r"(?![a-z0-9])")


def leaks(ticket: Ticket, facts: TicketFacts, label: str) -> list[str]:
    """Forbidden things in the title and body, checked independently of the writer's own filter."""
    topo = build_topology(facts.scenario, facts.size)
    public = {fqdn for _, (_, recs) in topo.zones.items() for fqdn in recs}
    allowed = public | ({ticket.reporter_device} if ticket.reporter_device else set())
    text = f"{ticket.title}\n{ticket.body}".lower()
    for name in sorted(allowed, key=len, reverse=True):
        text = text.replace(name.lower(), " ")
    found = []
    if label in text:
        found.append(label)
    found += [w for w in label.split("_") if len(w) > 1 and re.search(_word(w), text)]
    found += [w for w in MECHANISM_WORDS if re.search(_word(w), text)]
    mechanism = " ".join(f["mechanism"] for f in facts.ground_truth["faults"]).lower()
    devices = {n.lower() for n, _ in facts.devices}
    idents = {t for t in re.findall(r"[a-z][a-z0-9_-]*[a-z0-9]", mechanism) if re.search(r"[_0-9]", t)} - devices
    found += [t for t in idents if re.search(_word(t), text)]
    faulty = set(facts.ground_truth["v1"]["faulty_devices"]) - allowed
    found += [d for d in faulty if re.search(r"(?<![a-z0-9])" + re.escape(d.lower()) + r"(?![a-z0-9_])", text)]
    return found


def test_every_supported_label_has_a_case_that_fits_its_scenario() -> None:
    assert len(SUPPORTED) >= 40
    assert sorted(CASES) == sorted(c.label for c in SUPPORTED), "add a CASES row for every supported label"
    for label, (scenario, size, target, _, _) in CASES.items():
        topo = build_topology(scenario, size)
        assert target in topo.nodes, label
        if label in FAULTS:  # implemented: the lab itself could put the fault there
            assert target in FAULTS[label].targets(topo), f"{label}: {target} is not a target in {scenario} {size}"


@pytest.mark.parametrize("label", sorted(CASES))
def test_tickets_never_give_the_fault_away(label: str) -> None:
    tickets = []
    for seed in SEEDS:
        facts = facts_for(label, seed)
        assert facts.symptoms, f"{label}: the hand-made incident shows no symptom"
        ticket = write_ticket(facts, random.Random(seed))
        assert not leaks(ticket, facts, label), (label, seed, leaks(ticket, facts, label), ticket.title, ticket.body)
        assert ticket.status == "open" and ticket.resolution is None and ticket.resolved_at is None
        assert ticket.title and ticket.body and ticket.product and ticket.component
        assert ticket == write_ticket(facts, random.Random(seed)), "same facts and seed, same ticket"
        tickets.append(ticket)
    assert len({t.title for t in tickets}) >= 3, [t.title for t in tickets]


def test_tickets_vary_in_reporter_style_and_paste() -> None:
    tickets = [write_ticket(facts_for(label, seed), random.Random(seed)) for label in CASES for seed in SEEDS]
    pasted = [t for t in tickets if any(mark in t.body for mark in PASTE_MARKS)]
    assert len(pasted) >= len(tickets) // 8, f"only {len(pasted)} of {len(tickets)} tickets paste output"
    assert {t.reporter_role for t in tickets} == {"user", "helpdesk", "noc"}
    assert len({t.priority for t in tickets}) >= 3
    one_liners = [t for t in tickets if "\n" not in t.body and len(t.body) < 90]
    assert one_liners, "some reports should be vague one-liners"
    kinds = {m for t in pasted for m in PASTE_MARKS if m in t.body}
    assert {"packets transmitted", "<<>> DiG", "curl"} <= kinds
    assert all(t.reporter_device is None or t.reporter_role == "user" for t in tickets)


def test_a_user_may_name_their_own_faulty_machine() -> None:
    facts = facts_for("host_missing_ip", 0)
    own = [write_ticket(facts, random.Random(s)) for s in range(40)]
    mine = [t for t in own if t.reporter_device == "host_1_1_1_1"]
    assert mine, "the affected user should sometimes be the reporter"
    assert all(not leaks(t, facts, "host_missing_ip") for t in own)


def test_historical_tickets_carry_the_resolution_outside_the_body() -> None:
    notes = yaml.safe_load((TEXT_DIR / "resolutions.yml").read_text())["labels"]
    for label in CASES:
        facts = facts_for(label, 1, historical=True)
        ticket = write_ticket(facts, random.Random(1))
        target = CASES[label][2]
        fix = notes[label]["fix"].format(device=target, other=CASES[label][3] or target, devices=target)
        assert ticket.status == "resolved" and ticket.resolution and ticket.resolved_at > ticket.created_at
        assert f"Fix: {fix}" in ticket.resolution and target in ticket.resolution
        assert not leaks(ticket, facts, label) and "Fix:" not in ticket.body
        # the body is the same symptom-level report an open ticket would have
        assert ticket.body == write_ticket(facts_for(label, 1), random.Random(1)).body


def test_resolutions_cover_every_supported_label() -> None:
    notes = yaml.safe_load((TEXT_DIR / "resolutions.yml").read_text())["labels"]
    missing = [c.label for c in SUPPORTED if c.label not in notes]
    assert not missing, f"add resolution notes for {missing}"
    for label, entry in notes.items():
        assert entry["found"].strip() and entry["fix"].strip(), label
        assert "{device}" in entry["found"] + entry["fix"], f"{label}: the note should name the device"


def test_fallback_phrases_are_clean_for_every_label() -> None:
    words = yaml.safe_load((TEXT_DIR / "tickets.yml").read_text())["fallback"]
    for label in CASES:
        dirty = leak_check(facts_for(label, 0), set())
        assert any(not dirty(t) for t in words["titles"]) and any(not dirty(b) for b in words["bodies"]), label


def test_forbidden_terms_come_from_label_category_mechanism_and_faulty_devices() -> None:
    words, devices = forbidden_terms(facts_for("link_bandwidth_throttling", 0))
    assert {"link_bandwidth_throttling", "link", "bandwidth", "throttling", "contention", "tbf", "iperf3"} <= words
    assert {"ping", "the", "slow"}.isdisjoint(words) and devices == {"pc2"}
    bgp = leak_check(facts_for("bgp_acl_block", 0), set())
    assert bgp("tcp port 179 is closed") and bgp("sessions are blocked") and bgp("router1 is fine")
    assert not bgp("100% packet loss to 10.1.1.10") and not bgp("web0.local is slow")


def healthy_facts(scenario: str, size: str, seed: int, historical: bool = False) -> TicketFacts:
    topo = build_topology(scenario, size)
    gt = {"v1": {"is_anomaly": False, "faulty_devices": [], "root_cause_name": []}, "v2": [], "faults": []}
    return TicketFacts(incident_id=f"healthy-{scenario}-{seed}", scenario=scenario, size=size, opened_at=OPENED,
                       devices=[(n.name, n.role) for n in topo.nodes.values()], symptoms=[], healthy=True,
                       ground_truth=gt, historical=historical)


@pytest.mark.parametrize("scenario", ["simple_bgp", "ospf_enterprise_dhcp", "dc_clos_service", "rip_small_internet"])
def test_a_healthy_incident_gets_a_false_alarm_not_an_outage(scenario: str) -> None:
    tickets = [write_ticket(healthy_facts(scenario, "s", seed), random.Random(seed)) for seed in range(8)]
    for t in tickets:
        text = f"{t.title}\n{t.body}".lower()
        assert not [c for c in OUTAGE_CLAIMS if c in text], (t.title, t.body)
        assert any(cue in text for cue in VERIFY_CUES), (t.title, t.body)
        assert t.priority in ("Minor", "Trivial") and t.resolution is None
    assert len({t.title for t in tickets}) >= 3
    resolved = write_ticket(healthy_facts(scenario, "s", 0, historical=True), random.Random(0))
    assert resolved.status == "resolved" and "no fault" in (resolved.resolution or "").lower()


def test_ticket_metadata_comes_from_the_scenario() -> None:
    campus = write_ticket(facts_for("ospf_acl_block", 0), random.Random(0))
    assert campus.product == "Campus network" and campus.component == "Building 1 access"
    web = write_ticket(facts_for("sender_application_delay", 0), random.Random(0))
    assert web.product == "Campus network" and web.component == "Intranet web"
    assert write_ticket(facts_for("link_down", 0), random.Random(0)).product == "Inter-site WAN"
    ids = {write_ticket(facts_for(label, 0), random.Random(0)).ticket_id for label in CASES}
    assert len(ids) == len(CASES) and all(re.fullmatch(r"NET-\d{7}", i) for i in ids)


def test_two_faults_at_once_hide_both() -> None:
    link, acl = facts_for("link_flap", 0), facts_for("bgp_acl_block", 0)
    faults = link.ground_truth["faults"] + [{**acl.ground_truth["faults"][0], "id": "f2"}]
    v1 = {"is_anomaly": True, "faulty_devices": ["pc1", "router1"], "root_cause_name": "multiple_faults",
          "root_cause_names": ["link_flap", "bgp_acl_block"]}
    facts = link.model_copy(update={"symptoms": link.symptoms + acl.symptoms, "historical": True,
                                    "ground_truth": {"v1": v1, "v2": [], "faults": faults}})
    for seed in SEEDS:
        ticket = write_ticket(facts, random.Random(seed))
        assert not leaks(ticket, facts, "link_flap") and not leaks(ticket, facts, "bgp_acl_block")
        assert ticket.resolution and ticket.resolution.count("Fix:") == 2 and "router1" in ticket.resolution


def test_a_multi_fault_incident_gets_one_resolution_note_per_fault():
    from datetime import datetime, timezone

    from faultline.corpus.tickets import TicketFacts, resolution_note

    def fault(fid, label, target):
        return {"id": fid, "target": target, "mechanism": "x", "category": "link_failure",
                "v1": {"is_anomaly": True, "faulty_devices": [target], "root_cause_name": label},
                "v2": {"resource_id": f"node/{target}", "fault_type": label}}

    truth = {"v1": {"is_anomaly": True, "faulty_devices": ["dns_server", "host_1_1_1_1"],
                    "root_cause_name": "multiple_faults", "root_cause_names": ["link_down", "dns_service_down"]},
             "faults": [fault("f1", "link_down", "host_1_1_1_1"), fault("f2", "dns_service_down", "dns_server")]}
    facts = TicketFacts(incident_id="m1", scenario="ospf_enterprise_static", size="s",
                        opened_at=datetime(2026, 1, 1, tzinfo=timezone.utc), devices=[("dns_server", "dns")],
                        symptoms=[], healthy=False, ground_truth=truth, historical=True)
    note = resolution_note(facts)
    assert len(note.split("\n\n")) == 2 and "host_1_1_1_1" in note and "dns_server" in note
