"""ospf_enterprise_dhcp: the enterprise campus with DHCP-addressed hosts and a load-balanced web service.

NIKA's counts (s 20, m 42, l 182); its shape and where it differs from NIKA: docs/lab.md#scenarios.
"""

from __future__ import annotations

from faultline.lab.scenarios.ospf_enterprise_static import WEB_SERVERS, ZONE, build_campus
from faultline.lab.topology import Topology

BACKENDS = 3
BACKEND_SUBNET = "20.200.0.0/24"


def build(size: str) -> Topology:
    """The ospf_enterprise_dhcp topology at `size`."""
    topo, users = build_campus("ospf_enterprise_dhcp", size, "server_access_router")
    servers = [topo.add_host("dns_server", role="dns").name, topo.add_host("dhcp_server", role="dhcp").name]
    servers += [topo.add_host(f"web_server_{i}", role="web").name for i in range(WEB_SERVERS)]
    servers.append(topo.add_host("load_balancer", role="lb").name)
    topo.add_lan("server_access_router", servers, area=0)
    backends = [topo.add_host(f"backend_web_{i}", role="backend").name for i in range(1, BACKENDS + 1)]
    topo.add_lan("load_balancer", backends, subnet=BACKEND_SUBNET)
    topo.lb_backends["load_balancer"] = backends
    topo.add_zone("dns_server", ZONE, {"dns": "dns_server", "web99": "load_balancer",
                                       **{f"web{i}": f"web_server_{i}" for i in range(WEB_SERVERS)}})
    for name in users:
        topo.nodes[name].dhcp = True
    for name in users + servers:
        topo.nodes[name].resolvers = ["dns_server"]
    for router in topo.routers():
        if router.name.startswith("dist_router_"):
            topo.dhcp_relays[router.name] = "dhcp_server"
    return topo
