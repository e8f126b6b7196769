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
    ("host_incorrect_dns", "end_host_failure", "R", "implemented", "/etc/netns/fl-<host>/resolv.conf overwritten with nameserver 8.8.8.8; on a DHCP host its udhcpc hook also supersedes the DHCP name servers with 8.8.8.8 (dhclient supersede) so renewals keep it; both restored on recover"),
    ("dns_record_error", "end_host_failure", "R", "implemented", "SUBSTITUTE for the BIND zone-file sed + restart: one web/LB record (seeded) in the DNS node's dnsmasq hosts file re-pointed to the first host's address (NIKA: hosts[0]), dnsmasq SIGHUP; line restored + SIGHUP on recover"),
    ("dns_service_down", "link_failure", "R", "implemented", "the DNS node's dnsmasq killed by PID (v1 stops named, v2 kills it); started again with its config on recover"),
    ("dhcp_service_down", "link_failure", "R", "implemented", "the DHCP server's dnsmasq killed by PID (v1 stops isc-dhcp-server); symptom: the dhcp_check probe gets no lease; started again on recover"),
    ("host_vpn_membership_missing", "end_host_failure", "P", "unsupported", "needs wireguard-tools and the rip_small_internet VPN"),
    ("bgp_acl_block", "misconfiguration", "R", "implemented", "nft inet table: tcp dport/sport 179 drop in input/forward/output"),
    ("ospf_acl_block", "misconfiguration", "R", "implemented", "nft inet table: ip protocol ospf drop in input/forward/output"),
    ("arp_acl_block", "misconfiguration", "R", "implemented", "nft arp table: drop everything on input/output + ip neigh flush all"),
    ("icmp_acl_block", "misconfiguration", "R", "implemented", "nft ip table: ip protocol icmp drop in input/forward/output"),
    ("http_acl_block", "misconfiguration", "R", "implemented", "nft inet table: tcp dport 80 drop in input/forward/output on a client/host (NIKA v1: on a client host, GT [host]); its HTTP GETs to a web server time out while ping works"),
    ("dns_port_blocked", "misconfiguration", "R", "implemented", "nft inet table, input chain: udp dport 53 drop + tcp dport 53 drop on the DNS node; table deleted on recover"),
    ("bgp_asn_misconfig", "misconfiguration", "R", "implemented", "vtysh: router bgp block re-created under AS+600 (live, not frr.conf + restart)"),
    ("bgp_missing_route_advertisement", "misconfiguration", "R", "implemented", "vtysh: no network ... for every announced prefix, on a router with a host LAN (a spine announces only its loopback: no symptom)"),
    ("host_static_blackhole", "misconfiguration", "R", "implemented", "ip route replace blackhole <attached host subnet> in the router netns; connected route restored on recover"),
    ("bgp_blackhole_route_leak", "misconfiguration", "R", "implemented", "vtysh on a BGP router with a host LAN: ip route P Null0 + network P, P = the /30 of a seeded host behind another router (NIKA v1); staticd started for it (BGP routers run none) and stopped on recover; v2 id: nearest, bgp_blackhole_community_leak"),
    ("bgp_hijacking", "network_under_attack", "R", "implemented", "first /25 of the last web server's (else last host's) /24 added to lo with ip addr, announced with network under router bgp through vtysh on another BGP router (live, no restart); the hijacker answers for the /25"),
    ("dhcp_missing_subnet", "misconfiguration", "R", "implemented", "SUBSTITUTE for the dhcpd.conf subnet block: the dhcp-range + dhcp-option lines of the target host's LAN removed from the DHCP server's dnsmasq.conf, dnsmasq restarted, every DHCP client released and renewed (udhcpc SIGUSR2 then SIGUSR1 for dhclient -r; dhclient), polled; GT [DHCP server, host]; lines put back, restart, renew on recover"),
    ("mac_address_conflict", "misconfiguration", "R", "implemented", "end host A takes end host B's MAC, A and B on one bridged LAN (on a point-to-point veth nothing breaks, tested); GT [A, B]; recover restores the MAC and flushes the LAN's bridge FDBs and ARP entries"),
    ("ospf_area_misconfiguration", "misconfiguration", "R", "implemented", "vtysh: the networks of the first network line's area moved to area 66 (99 if already 66), live"),
    ("ospf_neighbor_missing", "misconfiguration", "R", "implemented", "vtysh: no network ... area ... for every network of router ospf (live, inverse recorded)"),
    ("frr_service_down", "network_node_error", "R", "implemented", "every FRR daemon of the router killed by PID; recover restarts them"),
    ("arp_cache_poisoning", "network_under_attack", "R", "implemented", "ip neigh replace <gateway> lladdr 00:11:22:33:44:55 nud permanent on the host's LAN interface; deleted on recover"),
    ("dhcp_spoofed_gateway", "network_under_attack", "R", "implemented", "dhcp-option router of the target host's LAN set to .254 in the DHCP server's dnsmasq.conf (v1: option routers), dnsmasq restarted, every DHCP client released and renewed (udhcpc SIGUSR2 then SIGUSR1 for dhclient -r; dhclient), polled; GT [DHCP server, host]; lines put back, restart, renew on recover"),
    ("dhcp_spoofed_dns", "network_under_attack", "R", "implemented", "dhcp-option dns-server of the target host's LAN set to 8.8.8.8 in the DHCP server's dnsmasq.conf (v1: option domain-name-servers), dnsmasq restarted, every DHCP client released and renewed (udhcpc SIGUSR2 then SIGUSR1 for dhclient -r; dhclient), polled; GT [DHCP server, host]; lines put back, restart, renew on recover"),
    ("web_dos_attack", "network_under_attack", "P", "implemented", "PARTIAL: own keep-alive HTTP GET flood (loadgen.py http, 500 connections, <= 3000 req/s; NIKA: ab -n 2e8 -c 1000 -k) from the last client/host against the web server, in a cgroup v1 cpu quota of 50% of one core; PID in the fault record; symptom: thousands of requests/s from the attacker in the victim's access log; GT [web]"),
    ("link_high_packet_corruption", "resource_contention", "R", "implemented", "SUBSTITUTE: nft numgen random drop 60% on eth0 egress (no netem)"),
    ("link_bandwidth_throttling", "resource_contention", "R", "implemented", "tc tbf 30kbit/64kb/500kb on eth0 + ping-flood load from another host (no iperf3)"),
    ("incast_traffic_network_limitation", "resource_contention", "P", "implemented", "PARTIAL (and SUBSTITUTE): NIKA's tbf 1mbit/500kb/500kb as the web's eth0 root (no netem delay 20ms: no netem) + ingress shaping via ifb (tbf 1mbit/32kb/64kb) + own paced UDP senders (loadgen.py udp, 3 Mbit/s in total from up to 8 clients/hosts; NIKA: iperf3 20 Mbit/s from every host); symptom: ping rtt ~500 ms and HTTP ~1 s to the web; GT [web], v2 interface/<web>/eth0"),
    ("dns_lookup_latency", "resource_contention", "R", "implemented", "SUBSTITUTE for netem delay 1000ms (no netem): iptables mangle POSTROUTING -o eth0 -p udp --sport 53 -j NFQUEUE --queue-bypass in the DNS node + own stdlib netlink NFQUEUE helper in its namespace releasing each answer 1000 ms late (UDP answers only, not all egress as netem)"),
    ("load_balancer_overload", "resource_contention", "P", "implemented", "PARTIAL/SUBSTITUTE: stress-ng --cpu 2 in the LB, all its processes (and any started there later, kept by a root-side exec-event helper) in a cgroup v1 cpu group capped at 5% of one CPU, instead of an unconfined stress-ng mix"),
    ("sender_resource_contention", "resource_contention", "P", "implemented", "PARTIAL/SUBSTITUTE: stress-ng --cpu 2 in the web server, all its processes (and any started there later) in a cgroup v1 cpu group capped at 5% of one CPU, instead of an unconfined stress-ng mix"),
    ("receiver_resource_contention", "resource_contention", "P", "implemented", "PARTIAL/SUBSTITUTE: stress-ng --cpu 2 in the host, all its processes (and any started there later, e.g. its HTTP client) in a cgroup v1 cpu group capped at 5% of one CPU, instead of an unconfined stress-ng mix"),
    ("sender_application_delay", "resource_contention", "R", "implemented", "SUBSTITUTE: nginx limit_rate 10k on the web server + SIGHUP reload (NIKA swaps in a slow-sender script, 1 KiB per 0.1 s: the same ~10 KB/s); /big.bin (256 KiB) answers 200 at once but does not finish in 3 s; v2 id: nearest, sender_resource_contention"),
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
