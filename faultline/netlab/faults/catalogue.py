"""Every NIKA v1 label (notes §A.2/§G.2) with its status in this lab: implemented, planned, unsupported.

`feasible` is §G's verdict (R reproducible, P partial, X needs P4/SDN). `how` says the mechanism
used (implemented), the one planned, or why the label cannot be done here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LabelInfo:
    """One NIKA v1 label and its status here."""

    label: str
    category: str
    feasible: str  # R | P | X
    status: str  # implemented | planned | unsupported
    how: str


_P4 = "needs BMv2/p4c (P4 switch); not in this stack"
_SDN = "needs Open vSwitch and an OpenFlow controller (Ryu); Linux bridges cannot do it"
_DNS = "planned with the DNS scenarios (dnsmasq/bind per namespace)"
_DHCP = "planned with ospf_enterprise_dhcp (dnsmasq DHCP + udhcpc clients, renewal forced)"

_ROWS = [
    ("link_down", "link_failure", "R", "implemented", "ip link set IF down (host eth0; on a router a seeded eth*); static routes restored on recover"),
    ("link_flap", "link_failure", "R", "implemented", "root-namespace toggler (sh loop, 1 s down / 1 s up) on the peer veth end via ip -n; PID in the fault record, stopped on recover and lab down"),
    ("link_detach", "link_failure", "R", "implemented", "host eth0 moved into a parking namespace (v2; recorded in the lab state); moved back with its address and routes on recover"),
    ("link_fragmentation_disabled", "link_failure", "R", "implemented", "nft ip table: meta length 10-65535 drop on output (v1's iptables OUTPUT rule)"),
    ("host_crash", "end_host_failure", "P", "implemented", "PARTIAL: every process in the netns killed by PID + far ends of its veths set down from outside (no container to kill); far ends up on recover"),
    ("host_missing_ip", "end_host_failure", "R", "implemented", "ip addr del on eth0 (default route goes with it); address and routes recorded for recover"),
    ("host_ip_conflict", "end_host_failure", "R", "implemented", "host B (target) takes host A's address + default via A's gateway; ground truth [A, B]"),
    ("host_incorrect_ip", "end_host_failure", "R", "implemented", "eth0 address replaced by 10.2.1.x/24 (x seeded), default via 10.2.1.1"),
    ("host_incorrect_gateway", "end_host_failure", "R", "implemented", "ip route replace default via <gateway subnet .254>"),
    ("host_incorrect_netmask", "end_host_failure", "R", "implemented", "same address with /8, default via the original gateway"),
    ("host_incorrect_dns", "end_host_failure", "R", "planned", "rewrite /etc/netns/<ns>/resolv.conf (DNS scenarios)"),
    ("dns_record_error", "end_host_failure", "R", "planned", _DNS),
    ("dns_service_down", "link_failure", "R", "planned", "kill the DNS daemon by PID; " + _DNS),
    ("dhcp_service_down", "link_failure", "R", "planned", "kill dnsmasq by PID; " + _DHCP),
    ("host_vpn_membership_missing", "end_host_failure", "P", "unsupported", "needs wireguard-tools and the rip_small_internet VPN"),
    ("bgp_acl_block", "misconfiguration", "R", "implemented", "nft inet table: tcp dport/sport 179 drop in input/forward/output"),
    ("ospf_acl_block", "misconfiguration", "R", "implemented", "nft inet table: ip protocol ospf drop in input/forward/output"),
    ("arp_acl_block", "misconfiguration", "R", "implemented", "nft arp table: drop everything on input/output + ip neigh flush all"),
    ("icmp_acl_block", "misconfiguration", "R", "implemented", "nft ip table: ip protocol icmp drop in input/forward/output"),
    ("http_acl_block", "misconfiguration", "R", "planned", "nft tcp dport 80 drop on a client (http scenarios)"),
    ("dns_port_blocked", "misconfiguration", "R", "planned", "nft tcp/udp dport 53 drop on the DNS server"),
    ("bgp_asn_misconfig", "misconfiguration", "R", "implemented", "vtysh: router bgp block re-created under AS+600 (live, not frr.conf + restart)"),
    ("bgp_missing_route_advertisement", "misconfiguration", "R", "implemented", "vtysh: no network ... for every announced prefix"),
    ("host_static_blackhole", "misconfiguration", "R", "implemented", "ip route replace blackhole <attached host subnet> in the router netns; connected route restored on recover"),
    ("bgp_blackhole_route_leak", "misconfiguration", "R", "planned", "vtysh: ip route P Null0 + network P"),
    ("bgp_hijacking", "network_under_attack", "R", "planned", "lo address in the victim /25 + network under router bgp (dc_clos_service)"),
    ("dhcp_missing_subnet", "misconfiguration", "R", "planned", _DHCP),
    ("mac_address_conflict", "misconfiguration", "R", "planned", "ip link set eth0 address <peer MAC>; needs a bridged LAN with traffic: on a point-to-point veth (simple_bgp) nothing breaks (tested)"),
    ("ospf_area_misconfiguration", "misconfiguration", "R", "implemented", "vtysh: the networks of the first network line's area moved to area 66 (99 if already 66), live"),
    ("ospf_neighbor_missing", "misconfiguration", "R", "implemented", "vtysh: no network ... area ... for every network of router ospf (live, inverse recorded)"),
    ("frr_service_down", "network_node_error", "R", "implemented", "every FRR daemon of the router killed by PID; recover restarts them"),
    ("arp_cache_poisoning", "network_under_attack", "R", "planned", "ip neigh replace <gw> lladdr 00:11:22:33:44:55 nud permanent"),
    ("dhcp_spoofed_gateway", "network_under_attack", "R", "planned", _DHCP),
    ("dhcp_spoofed_dns", "network_under_attack", "R", "planned", _DHCP),
    ("web_dos_attack", "network_under_attack", "P", "planned", "own HTTP flood generator (no ab/wrk) from the last host against the web server"),
    ("link_high_packet_corruption", "resource_contention", "R", "implemented", "SUBSTITUTE: nft numgen random drop 60% on eth0 egress (no netem)"),
    ("link_bandwidth_throttling", "resource_contention", "R", "implemented", "tc tbf 30kbit/64kb/500kb on eth0 + ping-flood load from another host (no iperf3)"),
    ("incast_traffic_network_limitation", "resource_contention", "P", "planned", "shallow tbf on the web server + own UDP senders (no netem delay, no iperf3)"),
    ("dns_lookup_latency", "resource_contention", "R", "planned", "SUBSTITUTE: NFQUEUE delay helper (1000 ms) on the DNS node (no netem)"),
    ("load_balancer_overload", "resource_contention", "P", "planned", "stress-ng in a cgroup v1 cpu quota holding the LB's PIDs"),
    ("sender_resource_contention", "resource_contention", "P", "planned", "stress-ng in a cgroup v1 cpu quota holding the web server's PIDs"),
    ("receiver_resource_contention", "resource_contention", "P", "planned", "stress-ng in a cgroup v1 cpu quota holding the host's PIDs"),
    ("sender_application_delay", "resource_contention", "R", "planned", "swap the web backend for a slow responder"),
    ("sdn_controller_crash", "network_node_error", "X", "unsupported", _SDN),
    ("southbound_port_block", "network_node_error", "X", "unsupported", _SDN),
    ("southbound_port_mismatch", "network_node_error", "X", "unsupported", _SDN),
    ("flow_rule_shadowing", "network_node_error", "X", "unsupported", _SDN),
    ("flow_rule_loop", "network_node_error", "X", "unsupported", _SDN),
    ("bmv2_switch_down", "link_failure", "X", "unsupported", _P4),
    ("p4_header_definition_error", "network_node_error", "X", "unsupported", _P4),
    ("p4_compilation_error_parser_state", "network_node_error", "X", "unsupported", _P4),
    ("p4_table_entry_missing", "network_node_error", "X", "unsupported", _P4),
    ("p4_table_entry_misconfig", "network_node_error", "X", "unsupported", _P4),
    ("mpls_label_limit_exceeded", "network_node_error", "X", "unsupported", _P4),
    ("p4_aggressive_detection_thresholds", "network_node_error", "X", "unsupported", _P4 + " (and v1's own injection is broken)"),
]

CATALOGUE: list[LabelInfo] = [LabelInfo(*row) for row in _ROWS]


def catalogue() -> list[LabelInfo]:
    """Every NIKA v1 label (55), in the notes' order."""
    return list(CATALOGUE)
