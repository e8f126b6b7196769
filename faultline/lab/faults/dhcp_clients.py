"""The injector's side of DHCP faults: the server's per-LAN config lines, reversible edits, forced renewal.

Edits are recorded so recovery puts back exactly what changed; `renew_all` is NIKA's `dhclient -r; dhclient` for
udhcpc. These helpers act directly, not through the probe API: docs/lab.md#dns-and-dhcp-faults.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from faultline.lab import service_ops
from faultline.lab.faults.base import FaultError, in_ns
from faultline.lab.services import dhcp_lans, main_ip, resolv_conf
from faultline.lab.state import LabState
from faultline.lab.topology import Lan, Topology

IFNAME = "eth0"


@dataclass(frozen=True)
class ClientState:
    """A DHCP host's addressing: eth0's IPv4 CIDR (None: none), default gateway, resolv.conf nameservers.

    In an expectation, `nameservers=None` means "not checked".
    """

    address: str | None
    gateway: str | None
    nameservers: tuple[str, ...] | None = None


def dhcp_server(topo: Topology) -> str | None:
    """The lab's DHCP server node (role `dhcp`), or None when it has none."""
    servers = sorted(n.name for n in topo.nodes.values() if n.role == "dhcp")
    return servers[0] if servers else None


def dhcp_hosts(topo: Topology) -> list[str]:
    """End hosts that take their address by DHCP, sorted."""
    return sorted(n.name for n in topo.nodes.values() if n.dhcp)


def host_block(topo: Topology, host: str) -> tuple[str, Lan]:
    """(dnsmasq tag of the host's LAN block, the LAN) of a DHCP host."""
    for tag, subnet, hosts in dhcp_lans(topo):
        if host in {h.name for h in hosts}:
            return tag, next(lan for lan in topo.lans if lan.subnet == subnet)
    raise FaultError(f"{host} is not served by the lab's DHCP server")


def healthy_client(topo: Topology, host: str) -> ClientState:
    """What a DHCP host should have: its reserved address, its LAN gateway, its resolvers."""
    node = topo.nodes[host]
    address = next(i.address for i in node.interfaces if i.name == IFNAME)
    _, lan = host_block(topo, host)
    return ClientState(address, lan.gateway.address.split("/")[0],
                       tuple(main_ip(topo.nodes[r]) for r in node.resolvers))


def client_state(namespace: str, host: str) -> ClientState:
    """The host's addressing as it is now (eth0 IPv4, default gateway, resolv.conf)."""
    def ip_json(*argv: str) -> list:
        proc = subprocess.run(in_ns(namespace, "ip", "-j", *argv), capture_output=True, text=True, timeout=5,
                              check=False)
        try:
            return json.loads(proc.stdout or "[]")
        except ValueError:
            return []

    addrs = [f"{a['local']}/{a['prefixlen']}" for link in ip_json("-4", "addr", "show", "dev", IFNAME)
             for a in link.get("addr_info", [])]
    gateways = [r["gateway"] for r in ip_json("route", "show", "default") if r.get("gateway")]
    return ClientState(addrs[0] if addrs else None, gateways[0] if gateways else None, read_nameservers(host))


def read_nameservers(host: str) -> tuple[str, ...]:
    """The nameserver lines of the host's resolv.conf (empty when it has none)."""
    try:
        text = resolv_conf(host).read_text()
    except OSError:
        return ()
    return tuple(line.split()[1] for line in text.splitlines()
                 if line.startswith("nameserver ") and len(line.split()) > 1)


def matches(have: ClientState, want: ClientState) -> bool:
    """True when `have` is `want` (nameservers compared only when `want` names them)."""
    if have.address != want.address or (want.address is not None and have.gateway != want.gateway):
        return False
    return want.nameservers is None or have.nameservers == want.nameservers


# --- config edits ----------------------------------------------------------------------------------


def write_atomic(path: Path, text: str) -> None:
    """Replace `path` by a new file with `text` and the same mode (a reader never sees half a file)."""
    mode = path.stat().st_mode & 0o7777 if path.exists() else 0o644
    tmp = path.with_name(f".{path.name}.fl-tmp")
    tmp.write_text(text)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def apply_edits(path: Path, edits: list[dict]) -> None:
    """Apply recorded edits ({old, new, after}) to a config file; FaultError when a line to edit is missing."""
    lines = path.read_text().splitlines()
    for edit in edits:
        if lines.count(edit["old"]) != 1:
            raise FaultError(f"{path}: expected the line {edit['old']!r} exactly once")
        index = lines.index(edit["old"])
        if edit["new"] is None:
            del lines[index]
        else:
            lines[index] = edit["new"]
    write_atomic(path, "\n".join(lines) + "\n")


def revert_edits(path: Path, edits: list[dict]) -> bool:
    """Undo recorded edits where they are still in place; True when the file changed (idempotent)."""
    lines = path.read_text().splitlines()
    before = list(lines)
    for edit in edits:
        if edit["old"] in lines:
            continue
        if edit["new"] is not None and edit["new"] in lines:
            lines[lines.index(edit["new"])] = edit["old"]
        elif edit["new"] is None:
            at = lines.index(edit["after"]) + 1 if edit["after"] in lines else len(lines)
            lines.insert(at, edit["old"])
    if lines != before:
        write_atomic(path, "\n".join(lines) + "\n")
    return lines != before


def block_lines(lines: list[str], tag: str) -> list[str]:
    """The range and option lines of one LAN's block (`set:TAG` / `tag:TAG`)."""
    return [ln for ln in lines if ln.startswith((f"dhcp-range=set:{tag},", f"dhcp-option=tag:{tag},"))]


def line_before(lines: list[str], line: str) -> str | None:
    """The line preceding `line` in `lines` (where a deleted line goes back)."""
    index = lines.index(line)
    return lines[index - 1] if index else None


# --- the server and its clients ----------------------------------------------------------------------


def restart_if_running(state: LabState, server: str) -> bool:
    """Restart the DHCP server so it re-reads its config; left alone when it is stopped (another fault)."""
    if not service_ops.service_running(state, server):
        return False
    service_ops.restart_service(state, server)
    return True


def renew_all(state: LabState, topo: Topology, expect: Callable[[str], ClientState],
              timeout: float = 20.0) -> str | None:
    """Every DHCP client releases (SIGUSR2), then asks again (SIGUSR1); poll until each is as `expect`s.

    Clients whose udhcpc does not run are left out. Returns None when every client settled, else
    what did not (the caller decides whether that is an error).
    """
    hosts = [h for h in dhcp_hosts(topo) if service_ops.service_running(state, h)]
    spaces = {h: state.device(h).namespace for h in hosts}
    for host in hosts:
        service_ops.signal_service(state, host, signal.SIGUSR2)
    # released: the deconfig hook flushed eth0 (so a later match proves a new lease, not the old one)
    problem = _poll_clients(spaces, lambda h, have: have.address is None, "still holds its address", 5.0)
    if problem:
        return problem
    for host in hosts:
        service_ops.signal_service(state, host, signal.SIGUSR1)
    return _poll_clients(spaces, lambda h, have: matches(have, expect(h)), "did not settle", timeout,
                         detail=lambda h: f"expected {asdict(expect(h))}")


def _poll_clients(spaces: dict[str, str], ok: Callable[[str, ClientState], bool], what: str, timeout: float,
                  detail: Callable[[str], str] = lambda h: "") -> str | None:
    deadline = time.monotonic() + timeout
    pending = dict(spaces)
    with ThreadPoolExecutor(max_workers=max(1, min(16, len(spaces)))) as pool:
        while pending:
            names = list(pending)
            states = dict(zip(names, pool.map(client_state, [pending[h] for h in names], names)))
            pending = {h: ns for h, ns in pending.items() if not ok(h, states[h])}
            if not pending:
                return None
            if time.monotonic() >= deadline:
                host = min(pending)
                return (f"{len(pending)} DHCP client(s) {what} after {timeout:.0f} s, e.g. {host}: "
                        f"{asdict(states[host])} {detail(host)}").strip()
            time.sleep(0.1)
    return None
