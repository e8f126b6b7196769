"""Lab services per node: DNS, DHCP (server, relays, clients), web servers and a load balancer.

Each is a plain foreground process in its node's namespace, with its files under `<run_dir>/svc/<node>/`, logging
to the lab's syslog collector; what runs where, configured how: docs/lab.md#services.
"""

from __future__ import annotations

import ipaddress
import subprocess
from pathlib import Path

from faultline.lab.builder import host_mac
from faultline.lab.namespaces import namespace_name
from faultline.lab.syslog import logging_prefix
from faultline.lab.topology import Node, Topology

LEASE = "2m"  # short leases: renewals (and a server's absence) show within a minute
BIG_FILE_BYTES = 256 * 1024
# where each service's process is; `service_argv` builds its command line
SERVICE_ROLES = {"dns": "dnsmasq", "dhcp": "dnsmasq", "web": "nginx", "backend": "nginx", "lb": "nginx"}


def service_dir(run_dir: Path, node: str) -> Path:
    """One node's service files: config, pid, web root, the access log, the process's stdout (`<name>.out`)."""
    return run_dir / "svc" / node


def resolv_conf(node: str) -> Path:
    """The node's resolv.conf as `ip netns exec` bind-mounts it over /etc/resolv.conf."""
    return Path("/etc/netns") / namespace_name(node) / "resolv.conf"


def main_ip(node: Node) -> str:
    """The node's first address without its prefix length."""
    return node.addresses[0].split("/", 1)[0]


def zone_lines(topo: Topology, dns: str) -> list[str]:
    """The hosts-file lines (`IP FQDN`) of `dns`'s zone."""
    _, records = topo.zones[dns]
    return [f"{main_ip(topo.nodes[target])} {fqdn}" for fqdn, target in sorted(records.items())]


def render_dns(topo: Topology, run_dir: Path, node: str) -> str:
    """dnsmasq.conf of an authoritative DNS node."""
    sdir = service_dir(run_dir, node)
    zone, _ = topo.zones[node]
    return "\n".join([
        "# authoritative for the zone only: no upstream, no recursion, no /etc/hosts",
        "no-resolv", "no-hosts", "no-poll", f"addn-hosts={sdir / 'hosts'}", f"local=/{zone}/",
        f"listen-address={main_ip(topo.nodes[node])}", "bind-interfaces", "port=53", "user=root",
        # one pid file per instance: several dnsmasq run at once and must not share /run/dnsmasq's
        f"pid-file={sdir / 'dnsmasq.pid'}",
        # no log-facility: dnsmasq logs to syslog (facility daemon), the device's collector socket
        "log-queries", "",
    ])


def dhcp_lans(topo: Topology) -> list[tuple[str, str, list[Node]]]:
    """(tag, subnet, DHCP hosts) for every routed LAN that has DHCP hosts."""
    out = []
    for index, lan in enumerate(topo.lans):
        hosts = [topo.nodes[h.node] for h in lan.hosts if topo.nodes[h.node].dhcp]
        if hosts:
            out.append((f"lan{index}", lan.subnet, hosts))
    return out


def dhcp_range_lines(topo: Topology, tag: str, subnet: str, dns_ips: list[str]) -> list[str]:
    """The dnsmasq lines serving one LAN: range, router and DNS options (the blocks faults edit)."""
    net = ipaddress.ip_network(subnet)
    first, last = net.network_address + 100, net.network_address + 200
    lines = [f"dhcp-range=set:{tag},{first},{last},{net.netmask},{LEASE}",
             f"dhcp-option=tag:{tag},option:router,{net.network_address + 1}"]
    if dns_ips:
        lines.append(f"dhcp-option=tag:{tag},option:dns-server,{','.join(dns_ips)}")
    return lines


def render_dhcp(topo: Topology, run_dir: Path, node: str) -> str:
    """dnsmasq.conf of the DHCP server: DNS off, per-LAN ranges and options, one reservation per host."""
    sdir = service_dir(run_dir, node)
    lines = ["# DHCP only (port=0 turns DNS off); relayed requests carry the LAN's gateway as giaddr",
             "port=0", "no-resolv", "no-hosts", "user=root", "dhcp-authoritative", "no-ping", "log-dhcp",
             f"pid-file={sdir / 'dnsmasq.pid'}", f"dhcp-leasefile={sdir / 'leases'}"]
    for tag, subnet, hosts in dhcp_lans(topo):
        dns_ips = sorted({main_ip(topo.nodes[r]) for h in hosts for r in h.resolvers})
        lines += [f"# {subnet}"] + dhcp_range_lines(topo, tag, subnet, dns_ips)
        for host in hosts:
            address = next(i.address for i in host.interfaces if i.name == "eth0")
            lines.append(f"dhcp-host={host_mac(address)},{address.split('/')[0]},{host.name}")
    return "\n".join(lines) + "\n"


def render_relay(topo: Topology, run_dir: Path, router: str) -> str:
    """dnsmasq.conf of a DHCP relay on a router: every LAN gateway of the router relays to the server."""
    sdir = service_dir(run_dir, router)
    server = main_ip(topo.nodes[topo.dhcp_relays[router]])
    lines = ["port=0", "no-resolv", "no-hosts", "user=root", "log-dhcp", f"pid-file={sdir / 'dnsmasq.pid'}"]
    for lan in topo.routed_lans():
        if lan.router == router:
            lines += [f"interface={lan.gateway.name}",
                      f"dhcp-relay={lan.gateway.address.split('/')[0]},{server}"]
    return "\n".join(lines) + "\n"


_NGINX_HEAD = """worker_processes 1;
daemon off;
user nobody nogroup;
pid {sdir}/nginx.pid;
error_log syslog:server=unix:/dev/log,nohostname info;
events {{ worker_connections 1024; }}
http {{
    access_log syslog:server=unix:/dev/log,nohostname,severity=info combined;
    access_log {sdir}/access.log;
    client_body_temp_path {sdir}/tmp/body;
    proxy_temp_path {sdir}/tmp/proxy;
    fastcgi_temp_path {sdir}/tmp/fastcgi;
    uwsgi_temp_path {sdir}/tmp/uwsgi;
    scgi_temp_path {sdir}/tmp/scgi;
    types {{ text/html html; application/octet-stream bin; }}
    default_type application/octet-stream;
    keepalive_timeout 5;
"""


def render_web(topo: Topology, run_dir: Path, node: str, limit_rate: str | None = None) -> str:
    """nginx.conf of a web server (or LB backend); `limit_rate` slows every response (a fault)."""
    sdir = service_dir(run_dir, node)
    rate = f"        limit_rate {limit_rate};\n" if limit_rate else ""
    return (_NGINX_HEAD.format(sdir=sdir)
            + f"    server {{\n        listen {main_ip(topo.nodes[node])}:80;\n        root {sdir}/www;\n"
            + rate + "        location / { }\n    }\n}\n")


def render_lb(topo: Topology, run_dir: Path, node: str) -> str:
    """nginx.conf of a load balancer: round robin over its backends, the chosen one in a header."""
    sdir = service_dir(run_dir, node)
    servers = "".join(f"        server {main_ip(topo.nodes[b])}:80 max_fails=1 fail_timeout=5s;\n"
                      for b in topo.lb_backends[node])
    return (_NGINX_HEAD.format(sdir=sdir)
            + f"    upstream backends {{\n{servers}    }}\n"
            + f"    server {{\n        listen {main_ip(topo.nodes[node])}:80;\n"
            + "        location / {\n            proxy_pass http://backends;\n"
            + "            proxy_connect_timeout 2s;\n            proxy_read_timeout 10s;\n"
            + "            add_header X-Backend $upstream_addr;\n        }\n    }\n}\n")


_UDHCPC_HOOK = """#!/bin/sh
# udhcpc hook of lab host {node}: touches only {ifname}, the default route and this host's resolv.conf
case "$1" in
  deconfig)
    ip addr flush dev "$interface"; ip link set "$interface" up ;;
  bound|renew)
    if ! ip -4 addr show dev "$interface" | grep -q "inet $ip/"; then ip addr flush dev "$interface"; fi
    ip addr replace "$ip/${{mask:-24}}" dev "$interface"
    [ -n "$router" ] && ip route replace default via "${{router%% *}}" dev "$interface"
    : > {resolv}
    for s in $dns; do echo "nameserver $s" >> {resolv}; done
    busybox logger -t udhcpc -p daemon.info "$1 $ip/${{mask:-24}} router=$router dns=$dns lease=$lease" ;;
  leasefail|nak)
    busybox logger -t udhcpc -p daemon.warning "$1 $message" ;;
esac
"""


def write_service_files(topo: Topology, run_dir: Path) -> None:
    """Write every service's config and data files, and every end host's resolv.conf."""
    for node in topo.nodes.values():
        if node.resolvers or node.dhcp:
            path = resolv_conf(node.name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(f"nameserver {main_ip(topo.nodes[r])}\n" for r in node.resolvers))
        conf = _config_for(topo, run_dir, node)
        if conf is None:
            continue
        sdir = service_dir(run_dir, node.name)
        sdir.mkdir(parents=True, exist_ok=True)
        sdir.chmod(0o755)
        name, text = conf
        (sdir / name).write_text(text)
        if node.role in ("dns",):
            (sdir / "hosts").write_text("\n".join(zone_lines(topo, node.name)) + "\n")
        if node.role in ("web", "backend"):
            www = sdir / "www"
            www.mkdir(exist_ok=True)
            www.chmod(0o755)
            (www / "index.html").write_text(f"<html><body><h1>{node.name}</h1></body></html>\n")
            # deterministic filler: a transfer big enough that a slow sender is measurable
            (www / "big.bin").write_bytes((node.name.encode() + b"\n") * (BIG_FILE_BYTES // (len(node.name) + 1)))
        if node.role in ("web", "backend", "lb"):
            (sdir / "tmp").mkdir(exist_ok=True)
    for path in (run_dir, run_dir / "svc"):
        if path.is_dir():
            path.chmod(0o755)  # nginx workers run as nobody and must reach their web root


def _config_for(topo: Topology, run_dir: Path, node: Node) -> tuple[str, str] | None:
    if node.role == "dns":
        return "dnsmasq.conf", render_dns(topo, run_dir, node.name)
    if node.role == "dhcp":
        return "dnsmasq.conf", render_dhcp(topo, run_dir, node.name)
    if node.role == "router" and node.name in topo.dhcp_relays:
        return "dnsmasq.conf", render_relay(topo, run_dir, node.name)
    if node.role in ("web", "backend"):
        return "nginx.conf", render_web(topo, run_dir, node.name)
    if node.role == "lb":
        return "nginx.conf", render_lb(topo, run_dir, node.name)
    if node.dhcp:
        eth0 = next(i for i in node.interfaces if i.name == "eth0")
        return "udhcpc.sh", _UDHCPC_HOOK.format(node=node.name, ifname=eth0.name, resolv=resolv_conf(node.name))
    return None


def service_argv(topo: Topology, run_dir: Path, node: str) -> tuple[str, list[str]] | None:
    """(process name, command inside the namespace) of `node`'s service, or None when it runs none."""
    sdir = service_dir(run_dir, node)
    conf = _config_for(topo, run_dir, topo.nodes[node])
    if conf is None:
        return None
    if conf[0] == "dnsmasq.conf":
        return "dnsmasq", ["dnsmasq", "--keep-in-foreground", f"--conf-file={sdir / 'dnsmasq.conf'}"]
    if conf[0] == "nginx.conf":
        # -e stderr: an error before the config is read lands in nginx.out
        return "nginx", ["nginx", "-e", "stderr", "-p", f"{sdir}/", "-c", str(sdir / "nginx.conf")]
    # udhcpc: retry discovery forever (a host that lost its lease keeps asking), -S: log to syslog
    return "udhcpc", ["busybox", "udhcpc", "-f", "-S", "-i", "eth0", "-s", str(sdir / "udhcpc.sh"),
                      "-t", "0", "-T", "1", "-A", "1", "-x", f"hostname:{node}"]


def start_service(topo: Topology, run_dir: Path, node: str) -> tuple[str, int] | None:
    """Start `node`'s service in its namespace; (process name, PID), or None when it runs none."""
    spec = service_argv(topo, run_dir, node)
    if spec is None:
        return None
    name, argv = spec
    sdir = service_dir(run_dir, node)
    if name == "udhcpc":
        (sdir / "udhcpc.sh").chmod(0o755)
    with open(sdir / f"{name}.out", "ab") as log:
        # `ip netns exec` and the logging prefix exec the command, so the PID is the service's own
        proc = subprocess.Popen(["ip", "netns", "exec", namespace_name(node), *logging_prefix(run_dir, node), *argv],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    return name, proc.pid


def service_nodes(topo: Topology) -> list[str]:
    """Nodes that run a service, servers before relays before clients (clients need both)."""
    def rank(node: Node) -> int:
        return 0 if node.role in SERVICE_ROLES else 1 if node.role == "router" else 2
    nodes = [n for n in topo.nodes.values() if _config_for(topo, Path("/"), n) is not None]
    return [n.name for n in sorted(nodes, key=rank)]


def start_services(topo: Topology, run_dir: Path) -> list[tuple[str, str, int]]:
    """Write every service's files and start them; (node, process name, PID) for each."""
    write_service_files(topo, run_dir)
    started = []
    for node in service_nodes(topo):
        spec = start_service(topo, run_dir, node)
        if spec is not None:
            started.append((node, *spec))
    return started


# --- readiness ------------------------------------------------------------------------------------


def _in_ns(node: str, argv: list[str], timeout: float = 5.0) -> str:
    try:
        proc = subprocess.run(["ip", "netns", "exec", namespace_name(node), *argv], capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return ""
    return proc.stdout


def service_problems(topo: Topology) -> list[str]:
    """What is not answering yet: DNS records, HTTP servers, DHCP hosts without their address."""
    from concurrent.futures import ThreadPoolExecutor

    checks = []
    for dns, (_, records) in topo.zones.items():
        for fqdn, target in records.items():
            checks.append((dns, ["dig", "+short", "+time=1", "+tries=1", f"@{main_ip(topo.nodes[dns])}", fqdn],
                           main_ip(topo.nodes[target]), f"{dns}: {fqdn} does not resolve"))
    for node in topo.nodes.values():
        if node.role in ("web", "backend", "lb"):
            checks.append((node.name, ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "2",
                                       f"http://{main_ip(node)}/"], "200", f"{node.name}: HTTP not answering 200"))
        if node.dhcp:
            checks.append((node.name, ["ip", "-4", "-o", "addr", "show", "dev", "eth0"],
                           f"inet {node.interfaces[0].address} ", f"{node.name}: no DHCP lease yet"))

    def failed(check: tuple[str, list[str], str, str]) -> str | None:
        node, argv, expected, problem = check
        return None if expected in _in_ns(node, argv) else problem

    if not checks:
        return []
    with ThreadPoolExecutor(max_workers=min(16, len(checks))) as pool:
        return [p for p in pool.map(failed, checks) if p]
