"""The lab's NIKA-shaped scenarios: topology shape and addressing (pure), FRR rendering for OSPF, RIP
and static routes (pure), and one real build at size s per scenario (root).

The real builds (marked `lab`) need root: skipped without it, failed with --require-all (as CI runs them).
"""

from __future__ import annotations

import ipaddress
import time
from pathlib import Path

import pytest

from faultline.lab.builder import neigh_entries_needed, raise_neigh_limits
from faultline.lab.frr import render_ospf, render_rip, router_daemons
from faultline.lab.readiness import host_pairs, readiness_pairs
from faultline.lab.scenarios import SCENARIOS, SIZES, build_topology
from faultline.lab.topology import Topology
from tests.labfixtures import (
    lab_dir,
    lab_fixture,
    lab_namespaces,
    root_routes,
    running_lab,
    settings_for,
    wait_until_no_lab,
)

LAB_DIR = lab_dir("scenarios")
NEW = ("ospf_enterprise_static", "rip_small_internet", "dc_clos_bgp", "dc_clos_service", "ospf_enterprise_dhcp")

# (routers, end hosts, switches) per size, from docs/lab.md#scenarios (NIKA's totals: docs/nika.md#v1-scenario-ids)
# (rip: NIKA's counts minus the VPN server)
COUNTS = {
    "ospf_enterprise_static": {"s": (6, 7, 2), "m": (8, 21, 8), "l": (12, 133, 32)},  # 15 / 37 / 177
    "rip_small_internet": {"s": (4, 4, 0), "m": (7, 12, 0), "l": (13, 40, 0)},  # 8 / 19 / 53
    "dc_clos_bgp": {"s": (5, 2, 0), "m": (18, 8, 0), "l": (68, 32, 0)},  # 7 / 26 / 100
    "dc_clos_service": {"s": (5, 3, 0), "m": (18, 10, 0), "l": (52, 36, 0)},  # 8 / 28 / 88
    "ospf_enterprise_dhcp": {"s": (6, 12, 2), "m": (8, 26, 8), "l": (12, 138, 32)},  # 20 / 42 / 182
}
PROTOCOL = {"ospf_enterprise_static": "ospf", "rip_small_internet": "rip", "dc_clos_bgp": "bgp",
            "dc_clos_service": "bgp", "ospf_enterprise_dhcp": "ospf"}




# --- pure: shape and addressing --------------------------------------------------------------


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("scenario", NEW)
def test_node_counts_and_roles_match_nika(scenario, size):
    topo = build_topology(scenario, size)
    routers, hosts, switches = COUNTS[scenario][size]
    assert (len(topo.routers()), len(topo.end_hosts()), len(topo.switches())) == (routers, hosts, switches)
    assert len(topo.nodes) == routers + hosts + switches
    assert topo.protocol == PROTOCOL[scenario] and topo.protocols() == {PROTOCOL[scenario]}


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("scenario", NEW)
def test_addressing_is_deterministic_disjoint_and_gatewayed(scenario, size):
    first, second = build_topology(scenario, size), build_topology(scenario, size)
    assert {n: x.addresses for n, x in first.nodes.items()} == {n: x.addresses for n, x in second.nodes.items()}
    every = [a.split("/")[0] for node in first.nodes.values() for a in node.addresses]
    assert len(every) == len(set(every)), "an address is used twice"
    nets = [ipaddress.ip_network(link.a.address, strict=False) for link in first.links]
    nets += [ipaddress.ip_network(lan.subnet) for lan in first.lans]
    nets += [ipaddress.ip_network(node.loopback) for node in first.routers()]
    for i, a in enumerate(nets):
        for b in nets[i + 1:]:
            assert not a.overlaps(b), f"{a} overlaps {b}"
    on_a_lan = set()
    for lan in first.lans:
        subnet = ipaddress.ip_network(lan.subnet)
        gateway = ipaddress.ip_interface(lan.gateway.address)
        # a LAN hangs off a router, except a load balancer's private backend LAN
        assert lan.gateway.node == lan.router
        assert first.nodes[lan.router].role == "router" or all(first.nodes[h.node].private for h in lan.hosts)
        assert gateway.network == subnet
        for host in lan.hosts:
            assert ipaddress.ip_address(host.address.split("/")[0]) in subnet
            assert first.nodes[host.node].gateway == str(gateway.ip)
            on_a_lan.add(host.node)
    assert on_a_lan == {h.name for h in first.end_hosts()}, "a host is on no LAN"
    # interface names fit the kernel's 15 characters and are unique per node
    for node in first.nodes.values():
        names = [i.name for i in node.interfaces]
        assert len(names) == len(set(names)) and all(len(n) <= 15 for n in names)


def test_ospf_enterprise_areas_and_switches():
    topo = build_topology("ospf_enterprise_static", "m")
    areas = {link.a.node + "-" + link.b.node: link.area for link in topo.links}
    assert areas["core_router_1-core_router_2"] == 0 and areas["core_router_1-dist_router_1_1"] == 1
    user_lans = [lan for lan in topo.lans if lan.router.startswith("dist_router")]
    assert len(user_lans) == 4 and all(lan.area == 1 and len(lan.switches) == 2 for lan in user_lans)
    assert all(set(lan.host_switch) == set(lan.switches) for lan in user_lans)
    server_lan = [lan for lan in topo.lans if lan.router == "switch_server_access"][0]
    assert server_lan.area == 0 and [h.node for h in server_lan.hosts][0] == "dns_server"


def test_dc_clos_asns_and_wiring():
    topo = build_topology("dc_clos_bgp", "l")
    asn = {n.name: n.asn for n in topo.routers()}
    assert {asn[f"super_spine_{k}"] for k in range(4)} == {65000}
    assert asn["spine_2_5"] == 65125 and asn["leaf_3_7"] == 65237
    # every super-spine to every spine, every spine to every leaf of its pod
    assert len(topo.links) == 4 * 32 + 4 * 8 * 8
    assert len(topo.neighbours("leaf_0_0")) == 8 and len(topo.neighbours("super_spine_0")) == 32


# --- pure: FRR rendering -----------------------------------------------------------------------


def test_ospf_render_has_p2p_passive_lan_and_areas():
    topo = build_topology("ospf_enterprise_static", "s")
    conf = render_ospf(topo, "dist_router_1_1")
    assert "interface eth0\n ip ospf network point-to-point" in conf
    assert "interface br0\n ip ospf passive" in conf
    assert " network 10.1.0.0/24 area 1" in conf and " network 10.255.0.4/32 area 1" in conf
    assert "redistribute static" not in conf
    assert router_daemons(topo, "dist_router_1_1") == ("ospfd",)


def test_rip_render_is_v2_with_passive_lans():
    topo = build_topology("rip_small_internet", "s")
    conf = render_rip(topo, "ext_router_1")
    assert " version 2" in conf and " network eth0" in conf
    assert " network 10.1.2.0/24" in conf and " passive-interface br2" in conf
    assert "permit 10.255.0.4/32" in conf
    assert router_daemons(topo, "ext_router_1") == ("ripd",)


def _static_pair(size: str = "s") -> Topology:
    """Two OSPF routers; router_b holds a static route that OSPF must carry to router_a."""
    topo = Topology(scenario="static_pair", size=size, protocol="ospf")
    topo.add_router("router_a")
    topo.add_router("router_b")
    topo.connect("router_a", "router_b")
    topo.add_lan("router_a", [topo.add_host("pc_a").name])
    topo.add_lan("router_b", [topo.add_host("pc_b").name])
    topo.add_static_route("router_b", "10.99.0.0/24", "10.1.1.10")
    return topo


def test_static_routes_render_and_start_staticd():
    topo = _static_pair()
    conf = render_ospf(topo, "router_b")
    assert "ip route 10.99.0.0/24 10.1.1.10" in conf and " redistribute static" in conf
    assert router_daemons(topo, "router_b") == ("ospfd", "staticd")
    assert router_daemons(topo, "router_a") == ("ospfd",)
    assert topo.protocols() == {"ospf", "static"}


# --- pure: readiness sampling and ARP limits ---------------------------------------------------


def test_readiness_pings_all_pairs_when_small_and_a_covering_sample_when_large():
    small = build_topology("rip_small_internet", "s")
    assert readiness_pairs(small) == host_pairs(small)
    large = build_topology("ospf_enterprise_static", "l")
    sample = readiness_pairs(large)
    assert len(sample) < len(host_pairs(large)) // 5
    assert {s for s, _, _ in sample} == {h.name for h in large.end_hosts()}
    assert {d for _, d, _ in sample} == {h.name for h in large.end_hosts()}
    lan_of = {h.node: lan.subnet for lan in large.lans for h in lan.hosts}
    assert {(lan_of[s], lan_of[d]) for s, d, _ in sample} == {(a, b) for a in set(lan_of.values())
                                                              for b in set(lan_of.values())}


def test_small_labs_leave_the_arp_limits_alone():
    assert neigh_entries_needed(build_topology("dc_clos_bgp", "s")) == 2 * 6 + 2 * 2
    assert raise_neigh_limits(build_topology("dc_clos_bgp", "s")) is None  # only reads /proc


# --- real builds at size s ---------------------------------------------------------------------


@lab_fixture(scope="function")
def lab_settings():
    return settings_for(LAB_DIR)


def _up_healthy_down(scenario: str, settings, daemons: set[str], check=None):
    from faultline.lab.teardown import alive

    wait_until_no_lab()
    routes_before = root_routes()
    topo = build_topology(scenario, "s")
    with running_lab(scenario, settings, timeout=60) as (state, _):
        assert state.status == "healthy"
        assert sorted(state.namespaces) == sorted(f"fl-{n}" for n in topo.nodes)
        assert {p.name for p in state.processes} == {"zebra"} | daemons
        assert all(alive(p.pid) for p in state.processes)
        assert state.timings["healthy_s"] < 60
        if check is not None:
            check(state)
    assert not lab_namespaces()
    assert not any(alive(p.pid) for p in state.processes)
    assert not Path(state.run_dir).exists()
    assert not any(Path("/etc/netns", ns).exists() for ns in state.namespaces)
    assert root_routes() == routes_before
    return state


SERVICES = {"dc_clos_service": {"dnsmasq", "nginx"}, "rip_small_internet": {"nginx"},
            "ospf_enterprise_static": {"dnsmasq", "nginx"},
            "ospf_enterprise_dhcp": {"dnsmasq", "nginx", "udhcpc"}}


@pytest.mark.lab
@pytest.mark.parametrize("scenario", NEW)
def test_scenario_builds_healthy_and_tears_down(scenario, lab_settings):
    daemons = {"ospf": {"ospfd"}, "rip": {"ripd"}, "bgp": {"bgpd"}}[PROTOCOL[scenario]]
    _up_healthy_down(scenario, lab_settings, daemons | SERVICES.get(scenario, set()))


def _in(ns: str, *argv: str) -> str:
    import subprocess

    return subprocess.run(["ip", "netns", "exec", f"fl-{ns}", *argv], capture_output=True, text=True,
                          timeout=15).stdout


@pytest.mark.lab
def test_campus_hosts_get_their_address_by_dhcp_and_reach_the_load_balanced_site(lab_settings):
    def check(state):
        host = "host_1_1_1_1"
        expected = state.device(host).addresses[0]
        assert f"inet {expected} " in _in(host, "ip", "-4", "-o", "addr", "show", "dev", "eth0")
        assert "default via 10.1.0.1" in _in(host, "ip", "route")  # the router option of its LAN
        dns_ip = state.device("dns_server").addresses[0].split("/")[0]
        assert _in(host, "cat", "/etc/resolv.conf").split() == ["nameserver", dns_ip]
        # the lease came through the distribution router's relay
        assert "DHCPACK" in Path(state.run_dir, "syslog", "dhcp_server", "messages").read_text()  # the collector's
        lb_ip = state.device("load_balancer").addresses[0].split("/")[0]
        assert _in(host, "dig", "+short", "web99.local").split() == [lb_ip]
        served = {_in(host, "curl", "-s", "--max-time", "3", "http://web99.local/") for _ in range(6)}
        assert {page.strip() for page in served} == {f"<html><body><h1>backend_web_{i}</h1></body></html>"
                                                    for i in (1, 2, 3)}, "round robin over the 3 backends"
        # the backends' LAN is private: users cannot reach it directly
        backend_ip = state.device("backend_web_1").addresses[0].split("/")[0]
        assert _in(host, "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "2",
                   f"http://{backend_ip}/") == "000"

    _up_healthy_down("ospf_enterprise_dhcp", lab_settings, {"ospfd", "dnsmasq", "nginx", "udhcpc"}, check)


@pytest.mark.lab
def test_clos_clients_resolve_pod_names_and_load_pages(lab_settings):
    def check(state):
        web_ip = state.device("webserver1_pod0").addresses[0].split("/")[0]
        assert _in("client_0", "dig", "+short", "web1.pod0").split() == [web_ip]
        assert "webserver1_pod0" in _in("client_0", "curl", "-s", "--max-time", "3", "http://web1.pod0/")
        assert "NXDOMAIN" in _in("client_0", "dig", "web7.pod0")

    _up_healthy_down("dc_clos_service", lab_settings, {"bgpd", "dnsmasq", "nginx"}, check)


@pytest.mark.lab
def test_static_route_is_installed_and_redistributed(lab_settings, monkeypatch):
    from faultline.lab.readiness import vtysh_json

    monkeypatch.setitem(SCENARIOS, "static_pair", _static_pair)
    with running_lab("static_pair", lab_settings, timeout=60) as (state, _):
        run_dir = Path(state.run_dir)
        assert "staticd" in {p.name for p in state.processes if p.device == "router_b"}
        own = vtysh_json(run_dir, "router_b", "show ip route 10.99.0.0/24 json")["10.99.0.0/24"]
        assert own[0]["protocol"] == "static" and own[0].get("installed")
        # the external LSA may land just after readiness (which checks LANs only): poll briefly
        deadline = time.monotonic() + 10
        while True:
            learned = vtysh_json(run_dir, "router_a", "show ip route 10.99.0.0/24 json")
            if learned.get("10.99.0.0/24", [{}])[0].get("protocol") == "ospf" or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert learned.get("10.99.0.0/24", [{}])[0].get("protocol") == "ospf", learned
    assert not lab_namespaces()


@pytest.mark.lab
def test_large_clos_raises_the_shared_arp_limits_and_down_restores_them(lab_settings):
    from faultline.lab.builder import neigh_entries_needed, read_neigh_limits

    wait_until_no_lab()
    before = read_neigh_limits()
    with running_lab("dc_clos_bgp", lab_settings, size="l", timeout=120) as (state, _):
        assert state.status == "healthy" and len(state.namespaces) == 100
        raised = read_neigh_limits()
        needed = neigh_entries_needed(build_topology("dc_clos_bgp", "l"))
        if before["net.ipv4.neigh.default.gc_thresh2"] < 2 * needed:  # Debian's defaults: 128/512/1024
            assert state.neigh_limits == before  # the old values are recorded for down
            assert all(raised[key] > before[key] for key in before)
        else:  # a host already configured for large labs is left alone
            assert state.neigh_limits is None and raised == before
    assert read_neigh_limits() == before
    assert not lab_namespaces()


def test_super_spines_sharing_an_as_accept_each_others_client_prefixes():
    from faultline.lab.frr import render_bgp

    topo = build_topology("dc_clos_service", "m")
    conf = render_bgp(topo, "super_spine_0")
    peers = [remote.address.split("/")[0] for _, remote in topo.neighbours("super_spine_0")]
    assert all(f"  neighbor {p} allowas-in 1" in conf for p in peers)
    assert "allowas-in" not in render_bgp(topo, "leaf_0_0")  # unique ASes keep the loop check


def test_every_web_server_users_reach_has_a_url_by_name_or_by_address() -> None:
    from faultline.lab.access import names_and_urls

    for scenario in SCENARIOS:
        topo = build_topology(scenario, "s")
        names, urls = names_and_urls(scenario, "s")
        for name, node in topo.nodes.items():
            if node.role not in ("web", "lb") or node.private:
                continue
            fqdns = [f for _, records in topo.zones.values() for f, owner in records.items() if owner == name]
            wanted = [f"http://{f}/" for f in fqdns] or [f"http://{node.addresses[0].split('/')[0]}/"]
            assert set(wanted) <= set(urls), (scenario, name)
    # rip_small_internet runs no DNS: its web servers are fetched by address (the service canary had nothing)
    assert names_and_urls("rip_small_internet", "s") == ([], ["http://10.1.2.10/", "http://10.1.2.11/"])
