"""Phase D — does a service answer, and if not, why: a name server asked from its own namespace, and each
service's listening sockets and the state of the processes holding them.

A process that exists says little: a stopped (SIGSTOP) server holds its port and answers nothing, a server
restarted on another port runs and answers, but not where users ask. The flags:

- `dns_no_answer`: the name server, asked for a name at its own address on the port users ask, from its own
  namespace, did not answer (timeout, refused); the network path plays no part in that query;
- `service_stopped`: a process holding (or that held, in the baseline) the service's socket is stopped (state
  T or t in /proc): it keeps the port and never reads it;
- `service_bound_elsewhere`: nothing listens on the port users ask at the device's address, while the
  process that served it listens on another port or address.

A filter is not judged here (the `filters` check reads it): a port that is filtered with its process running and
listening raises none of these why-not flags. The port checked is the one users ask (53, 67, 80: a resolver or a DHCP
client names no other); the baseline's sockets, or without a baseline what the configuration says (`port=` in a
name server's dnsmasq.conf), show why the service is not there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from faultline.network.devices import Device
from faultline.network.parse_services import socket_address, socket_owners
from faultline.network.records import SocketTable
from faultline.sade.scans.common import flag, ipv4
from faultline.sade.session import Session

SCAN = "service_snapshot"
# the transport and standard port users reach each service role on
SERVICE_PORTS = {"dns": ("udp", 53), "dhcp": ("udp", 67), "web": ("tcp", 80), "lb": ("tcp", 80)}
FAMILY = {"dns": "dns", "dhcp": "dhcp"}
OWN_FLAGS = {"dns_no_answer", "service_stopped", "service_bound_elsewhere"}
PORT_FILTERS = {"dns": {"acl_dns"}, "dhcp": {"acl_other"}, "web": {"acl_http"}, "lb": {"acl_http"}}  # l2's kinds
WILDCARDS = {"0.0.0.0", "*", "::"}
STOPPED = {"T", "t"}  # stopped by a signal, or by a tracer
NO_ANSWER = {"timeout", "refused", "error"}
_PORT_LINE = re.compile(r"^\s*port\s*=\s*(\d+)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Listener:
    """One listening socket of the service's transport: address, port, and the processes holding it."""

    address: str
    port: int
    owners: tuple[tuple[str, int], ...]


def listeners(table: SocketTable, transport: str) -> list[Listener]:
    """The sockets of `transport` (udp, tcp) that wait for peers: LISTEN for TCP, any unconnected UDP socket."""
    out = []
    for s in table.sockets:
        if s.netid != transport or (transport == "tcp" and s.state != "LISTEN"):
            continue
        address, port = socket_address(s.local)
        if port is not None:
            out.append(Listener(address, port, tuple(socket_owners(s.process))))
    return out


def _serves(listener: Listener, addresses: set[str]) -> bool:
    return listener.address in WILDCARDS or listener.address in addresses


def _configured_port(session: Session, dev: Device) -> str:
    """What the name server's own configuration file says of its port ("" when it says nothing or cannot be
    read): read only without a baseline, whose listeners are the reference otherwise."""
    path = next((p for p in session.backend.files.get(dev.name, []) if p.endswith("dnsmasq.conf")), None)
    if path is None:
        return ""
    out = session.probe("read_file", dev=dev.name, path=path, note="service configuration: its port")
    if out is None or out.record.error:
        return ""
    m = _PORT_LINE.search(out.record.text)
    return f"{path}: port={m.group(1)}" if m else ""


def _service_answers(session: Session, dev: Device) -> None:
    """Name servers: whether it answers a query at its own address on the port users ask; when it does not (or
    cannot be asked), why not: whether the service listens where it is configured and whether the processes
    holding its port run."""
    if dev.role not in SERVICE_PORTS:
        return
    transport, default = SERVICE_PORTS[dev.role]
    family = FAMILY.get(dev.role, "service")
    if _explained(session, dev, family):
        return
    base_out = session.baseline("sockets", dev=dev.name)
    port = default  # where users reach the service: a resolver, a DHCP client, a browser name no other port
    if dev.role == "dns" and _ask_itself(session, dev, port, family):
        return  # it answers where it is configured: nothing to explain here
    if dev.role == "dhcp" and _lease_given(session):
        return
    if dev.role in ("web", "lb") and _page_served(session, dev):
        return
    out = session.probe("sockets", dev=dev.name, note="listening sockets")
    if out is None or out.record.error:
        return
    addresses = {p[0] for a in dev.addresses if (p := ipv4(a))}
    now = listeners(out.record, transport)
    before = listeners(base_out.record, transport) if base_out is not None else []
    served_before = [x for x in before if x.port == port and _serves(x, addresses)]
    # who serves: the processes that held the port in the baseline, else those holding it now
    servers = {name for x in served_before for name, _ in x.owners} or \
              {name for x in now if x.port == port for name, _ in x.owners}
    serving = [x for x in now if x.port == port and _serves(x, addresses)]
    if not serving and (served_before or base_out is None):
        elsewhere = [x for x in now if (not servers or {n for n, _ in x.owners} & servers)
                     and x.address not in ("127.0.0.1", "::1")]
        if elsewhere:
            where = ", ".join(sorted({f"{x.address}:{x.port}" for x in elsewhere}))
            said = _configured_port(session, dev) if dev.role == "dns" and base_out is None else ""
            flag(session, SCAN, dev, "service_bound_elsewhere", f"{transport} port {port} (where users ask"
                 f"{'; ' + said if said else ''}) has no listener at "
                 f"{' '.join(sorted(addresses)) or dev.name}; the service listens on {where}"
                 f"{' (baseline: ' + port_list(served_before) + ')' if served_before else ''}",
                 family=family, port=port, listening=sorted({x.port for x in elsewhere}), vs_baseline=bool(before))
    _stopped(session, dev, family, now, servers, port)


def _explained(session: Session, dev: Device, family: str) -> bool:
    """The device already shows why its service fails its users (a configuration finding of its family, a filter
    on it): nothing for this check to add, and a filter is never read as a dead service."""
    return any(f.device == dev.name and f.strength == "strong" and f.kind not in OWN_FLAGS
               and (f.family == family or f.kind in PORT_FILTERS[dev.role]) for f in session.flags)


def _seen(session: Session, tool: str) -> list:
    """The outputs of `tool` this diagnosis already has (free)."""
    outs = (session.seen(tool, **step.args) for step in session.steps if step.tool == tool)
    return [out for out in outs if out is not None]


def _lease_given(session: Session) -> bool:
    """The DHCP service answers: a client's lease request this diagnosis made was acknowledged, and none failed."""
    checks = _seen(session, "dhcp_check")
    return bool(checks) and all(out.record.status == "ok" for out in checks)


def _page_served(session: Session, dev: Device) -> bool:
    """The web service answers: every request this diagnosis made that reached the device's address got a page
    (or none reached it: nothing says it fails)."""
    mine = {p[0] for a in dev.addresses if (p := ipv4(a))}
    reached = [out for out in _seen(session, "http_get") if out.record.remote_ip in mine]
    return all(out.record.status in ("ok", "http_error") for out in reached)


def port_list(items: list[Listener]) -> str:
    return ", ".join(sorted({f"{x.address}:{x.port}" for x in items}))


def _stopped(session: Session, dev: Device, family: str, now: list[Listener], servers: set[str], port: int) -> None:
    """A process of the service stopped by a signal: it holds its sockets and reads none of them."""
    if not session.backend.offers("cpu_usage"):
        return
    usage = session.probe("cpu_usage", dev=dev.name, interval_s=1.0, note="process states")
    if usage is None or usage.record.error:
        return
    pids = {pid for x in now if x.port == port for _, pid in x.owners}
    stopped = [p for p in usage.record.processes if p.state in STOPPED and (p.pid in pids or p.comm in servers)]
    if stopped:
        flag(session, SCAN, dev, "service_stopped", "stopped (state T), holding the service's port "
             f"{port}: " + "; ".join(f"pid {p.pid} {p.comm} state {p.state}" for p in stopped[:4]), family=family,
             pids=[p.pid for p in stopped])


def _ask_itself(session: Session, dev: Device, port: int, family: str) -> bool:
    """The name server asked at its own address from its own namespace: no link, router or remote filter lies
    between the question and the answer. Whether it answered (any response code: it is up and listening)."""
    names = session.backend.dns_names
    ip = next((p[0] for a in dev.addresses if (p := ipv4(a))), None)
    if not names or ip is None:
        return False
    args = {"src": dev.name, "name": names[0], "server": ip, **({"port": port} if port != 53 else {})}
    out = session.probe("dig", note="the name server asked at its own address", **args)
    if out is None:
        return False
    rec = out.record
    if rec.status in NO_ANSWER:
        flag(session, SCAN, dev, "dns_no_answer", f"dig @{ip} -p {port} {names[0]} from {dev.name} itself: "
             f"{rec.status} ({rec.error or 'no answer'})", family=family, port=port, status=rec.status)
        return False
    return True


CHECKS = [_service_answers]
