"""The faults of issue 40's classes, each made with plain commands (not `faultline/lab/faults`), and the answer a NOC
would write for it. Recorded by `tests/foreign.py`; diagnosed by tests/test_sade_foreign.py."""

from __future__ import annotations

from typing import Any

from tests.foreign import Cmd, ForeignCase, users_see_a_problem

# a process of one namespace by its command name: the PIDs `ip netns pids` lists, filtered by /proc/PID/comm
_PIDS = "for p in $(ip netns pids {ns[%s]}); do [ \"$(cat /proc/$p/comm)\" = %s ] && echo $p; done"


def _pids(device: str, comm: str) -> str:
    return _PIDS % (device, comm)


def _edit_name_server(edit: str) -> tuple[Cmd, ...]:
    """The name server's configuration edited by `edit` (shell, the file's path in `$conf`), and the server
    restarted as it ran (in the foreground, with its own command line) until the recording is done."""
    return (Cmd(None, "p=$(" + _pids("dns_server", "dnsmasq") + "); tr '\\0' ' ' < /proc/$p/cmdline "
                      "> /tmp/name-server.args && conf=$(tr ' ' '\\n' < /tmp/name-server.args | "
                      f"sed -n 's/^--conf-file=//p') && {edit} && kill $p && sleep 1"),
            Cmd("dns_server", "exec $(cat /tmp/name-server.args)", background=True))


def _name_fails(ctx: Any, case: ForeignCase) -> str | None:
    """A user's name lookup no longer answers (the pages need it too)."""
    from faultline.network.probes import run_probe

    status = run_probe(ctx, "dig", src="host_1_1_1_1", name="web0.local").record.status
    return None if status != "NOERROR" else "web0.local still resolves"


def _answers(ctx: Any, name: str, address: str) -> str | None:
    """A user's lookup of `name` now answers `address`."""
    from faultline.network.probes import run_probe

    rec = run_probe(ctx, "dig", src="host_1_1_1_1", name=name).record
    got = [a.data for a in rec.answers if a.rtype == "A"] if rec.status == "NOERROR" else []
    return None if address in got else f"{name} answers {got or rec.status}"


def _flapped(ctx: Any, device: str, ifname: str, times: int) -> str | None:
    """The link has gone down and up `times` times since it came up (a NOC sees a flap over minutes, not at once)."""
    from faultline.network.probes import run_probe

    counts = {i.ifname: i.carrier_changes or 0 for i in run_probe(ctx, "link_counters", dev=device).record.interfaces}
    return None if counts.get(ifname, 0) >= times else f"{ifname} changed carrier {counts.get(ifname, 0)} times so far"


def _drop_both_ways(match: str) -> str:
    """iptables rules dropping what `match` selects, in and out."""
    return f"iptables -A INPUT {match} -j DROP && iptables -A OUTPUT {match} -j DROP"


def _routes_avoid(ctx: Any, router: str, other: str) -> str | None:
    """`router` routes nothing through any address of `other` (its sessions with it are gone)."""
    from faultline.network.probes import run_probe

    theirs = {a.split("/")[0] for a in ctx.directory.device(other).addresses}
    hops = {h for r in run_probe(ctx, "ip_route", dev=router).record.routes for h in [r.gateway, *r.nexthops] if h}
    return None if not hops & theirs else f"{router} still routes through {other} ({sorted(hops & theirs)})"


def _routes_hold(ctx: Any, router: str, prefix: str) -> str | None:
    """`router`'s kernel routes hold `prefix`."""
    from faultline.network.probes import run_probe

    routes = {r.dst for r in run_probe(ctx, "ip_route", dev=router).record.routes}
    return None if prefix in routes else f"{router} has no route for {prefix} yet"


def _no_lease(ctx: Any, case: ForeignCase) -> str | None:
    """A user's DHCP request gets no answer."""
    from faultline.network.probes import run_probe

    status = run_probe(ctx, "dhcp_check", src="host_1_1_1_1").record.status
    return None if status == "no_lease" else f"host_1_1_1_1's DHCP request: {status}"


def _page_fails(ctx: Any, case: ForeignCase, src: str, url: str) -> str | None:
    from faultline.network.probes import run_probe

    status = run_probe(ctx, "http_get", src=src, url=url).record.status
    return None if status != "ok" else f"{url} still loads from {src}"


def _all_of(*checks: Any) -> Any:
    def check(ctx: Any, case: ForeignCase) -> str | None:
        return next((why for c in checks if (why := c(ctx, case)) is not None), None)
    return check


CASES: dict[str, ForeignCase] = {c.name: c for c in (
    ForeignCase(
        name="dns-frozen", scenario="ospf_enterprise_static", label="dns_service_down", devices=("dns_server",),
        what="the name server's process stopped by SIGSTOP: it runs, holds its port, and answers nothing",
        commands=(Cmd(None, f"kill -STOP $({_pids('dns_server', 'dnsmasq')})"),), symptom=_name_fails),
    ForeignCase(
        name="dns-rebound", scenario="ospf_enterprise_static", label="dns_service_down", devices=("dns_server",),
        what="the name server's configuration edited to port=5353 and the server restarted: it runs and answers, "
             "but not on the port users ask",
        commands=_edit_name_server("sed -i 's/^port=53$/port=5353/' \"$conf\""),
        symptom=_name_fails),
    ForeignCase(
        name="dns-config-record", scenario="ospf_enterprise_static", label="dns_record_error", devices=("dns_server",),
        what="web0.local's record moved from the name server's hosts file into its configuration (host-record=) "
             "with a user's address, and the server restarted",
        # the record moved out of the hosts file into the configuration, with a user's address by mistake
        commands=_edit_name_server("sed -i '/web0.local/d' \"$(sed -n 's/^addn-hosts=//p' \"$conf\")\" && "
                                   "sed -i '$a host-record=web0.local,10.1.0.10' \"$conf\""),
        symptom=lambda ctx, case: _answers(ctx, "web0.local", "10.1.0.10")),
    ForeignCase(
        name="bgp-remote-as", scenario="simple_bgp", label="bgp_asn_misconfig", devices=("router2",),
        what="router2's neighbour statement for router1 changed to remote-as 9 (router1 is AS 1)",
        commands=(Cmd(None, "vtysh --vty_socket {vty[router2]} -c 'configure terminal' -c 'router bgp 2' "
                            "-c 'neighbor 10.0.0.0 remote-as 9'"),)),
    ForeignCase(
        name="ospf-passive", scenario="ospf_enterprise_static", label="ospf_neighbor_missing",
        devices=("dist_router_1_1",),
        what="dist_router_1_1's uplink to core_router_1 made OSPF-passive: no hello, no adjacency, its LAN's "
             "routes gone",
        commands=(Cmd(None, "vtysh --vty_socket {vty[dist_router_1_1]} -c 'configure terminal' "
                            "-c 'interface eth0' -c 'ip ospf passive'"),)),
    ForeignCase(
        name="host-blackhole-prefix", scenario="ospf_enterprise_static", label="host_static_blackhole",
        devices=("host_2_1_1_1",),
        what="a blackhole route for the server LAN (10.1.2.0/24) on host_2_1_1_1; its default route is intact",
        commands=(Cmd("host_2_1_1_1", "ip route add blackhole 10.1.2.0/24"),)),
    ForeignCase(
        name="iptables-reject", scenario="ospf_enterprise_static", label="http_acl_block", devices=("web_server_0",),
        what="iptables on web_server_0 rejects TCP port 80 with a reset",
        commands=(Cmd("web_server_0", "iptables -A INPUT -p tcp --dport 80 -j REJECT --reject-with tcp-reset"),)),
    ForeignCase(
        name="iptables-random-drop", scenario="ospf_enterprise_static", label="link_high_packet_corruption",
        devices=("host_2_1_1_1",),
        what="iptables on host_2_1_1_1 drops 40% of what leaves eth0 at random (statistic match)",
        commands=(Cmd("host_2_1_1_1", "iptables -A OUTPUT -o eth0 -m statistic --mode random --probability 0.4 "
                                      "-j DROP"),)),
    ForeignCase(
        name="htb-queue", scenario="ospf_enterprise_static", label="link_bandwidth_throttling",
        devices=("host_2_1_1_1",),
        what="an htb shaper of 64 kbit/s on host_2_1_1_1's eth0 with a deep queue (nothing dropped: packets wait "
             "seconds), loaded by a backup job's bulk traffic",
        commands=(Cmd("host_2_1_1_1", "tc qdisc replace dev eth0 root handle 1: htb default 10 && "
                                      "tc class add dev eth0 parent 1: classid 1:10 htb rate 64kbit ceil 64kbit && "
                                      "tc qdisc add dev eth0 parent 1:10 handle 10: pfifo limit 5000"),
                  Cmd("host_2_1_1_1", "ping -q -n -i 0.02 -s 1000 10.1.0.10", background=True)),
        symptom=users_see_a_problem),
    ForeignCase(
        name="port-flap", scenario="rip_small_internet", label="link_flap", devices=("host_2",),
        what="router_2's port towards host_2 goes down and up every second (a failing cable or optic)",
        commands=(Cmd(None, "while true; do ip -n {ns[router_2]} link set eth2 down; sleep 1; "
                            "ip -n {ns[router_2]} link set eth2 up; sleep 1; done", background=True),),
        symptom=lambda ctx, case: _flapped(ctx, "router_2", "eth2", 8)),
    # two faults at once: one every user sees, one only the routing tables show
    ForeignCase(
        name="spine-bgp-filtered-beside-a-user", scenario="dc_clos_bgp", label="host_missing_ip",
        devices=("pc_0_0",), resources=("interface/pc_0_0/eth0",),
        what="pc_0_0's addresses flushed from eth0 (its default route gone with them)",
        commands=(Cmd("pc_0_0", "ip -4 addr flush dev eth0"),),
        also=(ForeignCase(
            name="spine-bgp-filtered", scenario="dc_clos_bgp", label="bgp_acl_block", devices=("spine_0_1",),
            what="iptables on spine_0_1 drops BGP (TCP 179) both ways: its sessions with the leaves and the super "
                 "spine go down, and every user still has the path through spine_0_0",
            commands=(Cmd("spine_0_1", _drop_both_ways("-p tcp --dport 179")),)),),
        symptom=_all_of(users_see_a_problem, lambda ctx, case: _routes_avoid(ctx, "leaf_0_0", "spine_0_1"))),
    ForeignCase(
        name="hijack-redistributed-beside-a-user", scenario="simple_bgp", label="icmp_acl_block", devices=("pc1",),
        what="iptables on pc1 drops ICMP both ways",
        commands=(Cmd("pc1", _drop_both_ways("-p icmp")),),
        also=(ForeignCase(
            name="hijack-redistributed", scenario="simple_bgp", label="bgp_hijacking", devices=("router1",),
            what="10.1.1.1/26 (a quarter of router2's user LAN) added on router1's loopback and announced by "
                 "`redistribute connected`: router2 sends that quarter of its own LAN to router1",
            commands=(Cmd("router1", "ip addr add 10.1.1.1/26 dev lo"),
                      Cmd(None, "vtysh --vty_socket {vty[router1]} -c 'configure terminal' -c 'router bgp 1' "
                                "-c 'redistribute connected'"))),),
        symptom=_all_of(users_see_a_problem, lambda ctx, case: _routes_hold(ctx, "router2", "10.1.1.0/26"))),
    ForeignCase(
        name="dhcp-frozen-beside-a-filtered-host", scenario="ospf_enterprise_dhcp", label="icmp_acl_block",
        devices=("host_2_1_1_1",),
        what="iptables on host_2_1_1_1 drops ICMP both ways",
        commands=(Cmd("host_2_1_1_1", _drop_both_ways("-p icmp")),),
        also=(ForeignCase(
            name="dhcp-frozen", scenario="ospf_enterprise_dhcp", label="dhcp_service_down", devices=("dhcp_server",),
            what="the DHCP server's process stopped by SIGSTOP: the leases handed out still last, no new one is "
                 "offered",
            commands=(Cmd(None, f"kill -STOP $({_pids('dhcp_server', 'dnsmasq')})"),)),),
        symptom=_all_of(users_see_a_problem, _no_lease)),
    ForeignCase(
        name="resolver-beside-a-web-filter", scenario="ospf_enterprise_dhcp", label="host_incorrect_dns",
        devices=("host_1_1_1_1",),
        what="host_1_1_1_1's resolv.conf points at 192.0.2.53, a resolver this network does not run",
        commands=(Cmd(None, "echo 'nameserver 192.0.2.53' > /etc/netns/{ns[host_1_1_1_1]}/resolv.conf"),),
        also=(ForeignCase(
            name="web-filter", scenario="ospf_enterprise_dhcp", label="http_acl_block", devices=("host_2_1_1_1",),
            what="iptables on host_2_1_1_1 rejects the web port it asks (TCP 80 out)",
            commands=(Cmd("host_2_1_1_1", "iptables -A OUTPUT -p tcp --dport 80 -j REJECT"),)),),
        symptom=_all_of(lambda ctx, case: _page_fails(ctx, case, "host_1_1_1_1", "http://web0.local/"),
                        lambda ctx, case: _page_fails(ctx, case, "host_2_1_1_1", "http://web0.local/"))),
    ForeignCase(
        name="flap-behind-a-dead-peer", scenario="simple_bgp", label="link_down", devices=("pc1",),
        resources=("interface/pc1/eth0",),
        what="pc1's eth0 set down",
        commands=(Cmd("pc1", "ip link set eth0 down"),),
        also=(ForeignCase(
            name="flap", scenario="simple_bgp", label="link_flap", devices=("pc2",),
            what="router2's port towards pc2 goes down and up every second (a failing cable or optic)",
            commands=(Cmd(None, "while true; do ip -n {ns[router2]} link set eth1 down; sleep 1; "
                                "ip -n {ns[router2]} link set eth1 up; sleep 1; done", background=True),)),),
        symptom=_all_of(users_see_a_problem, lambda ctx, case: _flapped(ctx, "router2", "eth1", 8))),
    ForeignCase(
        name="ospfd-down", scenario="ospf_enterprise_static", label="frr_service_down", devices=("dist_router_1_1",),
        what="dist_router_1_1's ospfd killed; zebra and the other daemons run on, and its OSPF statements vanish "
             "from the running configuration with it",
        commands=(Cmd(None, f"kill -9 $({_pids('dist_router_1_1', 'ospfd')})"),)),
    ForeignCase(
        name="bgpd-down", scenario="simple_bgp", label="frr_service_down", devices=("router1",),
        what="router1's bgpd killed; zebra and the other daemons run on",
        commands=(Cmd(None, f"kill -9 $({_pids('router1', 'bgpd')})"),)),
)}
