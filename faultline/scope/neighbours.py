"""Links between devices: from the inventory, and learned from the routing protocols' own log lines.

Without an inventory the logs still tell who talks to whom: a BGP or OSPF neighbour line names the peer's address,
and two devices naming neighbours x and y of one point-to-point /31 (or /30) are linked, each owning the address
the other names; FRR also names the peer's hostname. The rule, with examples: docs/scope.md.
"""

from __future__ import annotations

import ipaddress
from collections import defaultdict
from dataclasses import dataclass

import duckdb

_NEIGHBOUR_SQL = r"""
SELECT DISTINCT device,
       regexp_extract(raw, '(?:[Nn]eighbou?r|Nbr|[Pp]eer)\s+([0-9]{1,3}(?:\.[0-9]{1,3}){3})', 1) AS address,
       regexp_extract(raw, '(?:[Nn]eighbou?r|Nbr|[Pp]eer)\s+[0-9.]+\(([A-Za-z][A-Za-z0-9_.-]*)\)', 1) AS peer
FROM log_lines
WHERE device IS NOT NULL AND ts BETWEEN ? AND ?
  AND regexp_matches(raw, '(?:[Nn]eighbou?r|Nbr|[Pp]eer)\s+[0-9]{1,3}(?:\.[0-9]{1,3}){3}')
"""


@dataclass(frozen=True)
class Link:
    """`device` reaches `peer` (over `interface`, when known); `how` says where the link was learned."""

    device: str
    peer: str
    interface: str | None
    peer_interface: str | None
    how: str


def learn_from_logs(conn: duckdb.DuckDBPyConnection, lo, hi) -> tuple[list[Link], dict[str, tuple[str, str]]]:
    """Links and device addresses the neighbour lines logged between `lo` and `hi` (naive log times) reveal."""
    rows = conn.execute(_NEIGHBOUR_SQL, [lo, hi]).fetchall()
    links: dict[tuple[str, str], Link] = {}
    owners: dict[str, tuple[str, str]] = {}
    by_net: dict[int, list[tuple[str, int]]] = defaultdict(list)
    known = {device for device, _a, _p in rows}
    for device, address, peer in rows:
        if peer and peer in known and peer != device:
            links[(device, peer)] = Link(device, peer, None, None, f"{device}'s logs name {peer} as a neighbour")
            links[(peer, device)] = Link(peer, device, None, None, f"{device}'s logs name {peer} as a neighbour")
        try:
            value = int(ipaddress.IPv4Address(address))
        except ValueError:
            continue
        by_net[value >> 1].append((device, value))
        if value % 4 in (1, 2):  # a /30's two hosts
            by_net[-(value >> 2) - 1].append((device, value))
    for members in by_net.values():
        for a, x in members:
            for b, y in members:
                if a == b or x == y:
                    continue
                x_s, y_s = str(ipaddress.IPv4Address(x)), str(ipaddress.IPv4Address(y))
                how = f"{a} names neighbour {x_s} and {b} names {y_s}, the two ends of one point-to-point subnet"
                links.setdefault((a, b), Link(a, b, None, None, how))
                owners.setdefault(y_s, (a, f"learned from the logs: {b} names it as a neighbour"))
                owners.setdefault(x_s, (b, f"learned from the logs: {a} names it as a neighbour"))
    return sorted(links.values(), key=lambda link: (link.device, link.peer)), owners


def neighbours(links: list[Link], devices: set[str]) -> dict[str, list[Link]]:
    """Each device's links to devices outside `devices`, grouped by that outside device."""
    out: dict[str, list[Link]] = defaultdict(list)
    for link in links:
        if link.device in devices and link.peer not in devices:
            out[link.peer].append(link)
    return dict(out)


def describe(link: Link) -> str:
    """"neighbour of spine2 over Hu0/0/0/8" and where that was learned."""
    over = f" over {link.interface}" if link.interface else ""
    return f"neighbour of {link.device}{over} ({link.how})"

