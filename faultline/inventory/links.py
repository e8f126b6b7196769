"""Links between inventory hosts: each entry checked, both directions present once, conflicts rejected.

A host lists its links in `data.links` as `{interface, peer, peer_interface}`. The two sides of one
link are matched by interfaces; a link only one side lists gets its reverse added (`derived`). A
link is its own record: a bad one is quarantined and the host that lists it is kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from faultline.inventory.elements import validation_reason
from faultline.inventory.models import InventoryLink, InventoryReject
from faultline.inventory.yamlfile import raw_json


class LinkEntry(BaseModel):
    """One item of a host's data.links."""

    model_config = ConfigDict(extra="forbid")

    interface: str
    peer: str
    peer_interface: str | None = None


@dataclass
class Listed:
    """A host's own link entries as read, with the line of each."""

    host: str
    items: list[Any]
    lines: tuple[int, ...]


@dataclass
class LinkResult:
    """Links of both directions, rejected link records, and how many link records were accepted."""

    links: list[InventoryLink] = field(default_factory=list)
    rejects: list[InventoryReject] = field(default_factory=list)
    accepted: int = 0


def _reject(result: LinkResult, line: int, check: str, reason: str, item: Any) -> None:
    result.rejects.append(InventoryReject(file="hosts.yaml", target_table="inventory_links", record_no=line,
                                          check=check, reason=reason, raw=raw_json(item)))


def build_links(listed: list[Listed], *, inventory: str, source_file: str, known: set[str],
                quarantined_hosts: set[str], host_line: dict[str, int]) -> LinkResult:
    """Check every listed link, reject conflicts, fill missing peer interfaces, add missing reverses."""
    result = LinkResult()
    rows: dict[tuple[str, str, str], tuple[InventoryLink, int, Any]] = {}
    for entry in listed:
        for index, item in enumerate(entry.items):
            line = entry.lines[index] if index < len(entry.lines) else host_line.get(entry.host, 0)
            try:
                link = LinkEntry.model_validate(item)
            except ValidationError as exc:
                _reject(result, line, "malformed_link", f"host '{entry.host}' has a malformed link at line {line}: "
                        f"{validation_reason(exc)}; write it as {{interface, peer, peer_interface}}", item)
                continue
            where = f"host '{entry.host}' link {link.interface} -> '{link.peer}'"
            if link.peer not in known:
                why = ("was quarantined (see its own reason)" if link.peer in quarantined_hosts
                       else "is not in the inventory")
                _reject(result, line, "unknown_peer", f"{where}: peer '{link.peer}' {why}; the host is kept "
                        "without this link; add the peer to hosts.yaml or fix the name", item)
                continue
            key = (entry.host, link.interface, link.peer)
            if key in rows:
                _reject(result, line, "duplicate_link", f"{where} is listed twice (first at line "
                        f"{rows[key][1]}); list each link once", item)
                continue
            rows[key] = (InventoryLink(inventory=inventory, host=entry.host, interface=link.interface,
                                       peer=link.peer, peer_interface=link.peer_interface,
                                       source_file=source_file), line, item)
    _reject_conflicts(rows, result)
    result.accepted = len(rows)
    listed_links = [link for link, _, _ in rows.values()]
    _fill_peer_interfaces(listed_links)
    result.links = listed_links + _reverses(listed_links)
    return result


def _reject_conflicts(rows: dict[tuple[str, str, str], tuple[InventoryLink, int, Any]], result: LinkResult) -> None:
    """Two sides naming each other's interfaces differently: the later-listed side is rejected."""
    for key in list(rows):
        if key not in rows:
            continue
        link, line, _ = rows[key]
        if link.peer_interface is None:
            continue
        other = rows.get((link.peer, link.peer_interface, link.host))
        if other is None or other[0].peer_interface in (None, link.interface):
            continue
        later_key = key if line > other[1] else (link.peer, link.peer_interface, link.host)
        bad, bad_line, item = rows.pop(later_key)
        good = other[0] if later_key == key else link
        _reject(result, bad_line, "conflicting_link",
                f"host '{bad.host}' link {bad.interface} -> '{bad.peer}' {bad.peer_interface} contradicts "
                f"'{good.host}' {good.interface} -> '{good.peer}' {good.peer_interface}; make both sides agree",
                item)


def _fill_peer_interfaces(links: list[InventoryLink]) -> None:
    """A side that omits peer_interface takes it from the other side's entry naming its interface."""
    for link in links:
        if link.peer_interface is not None:
            continue
        matches = [lk for lk in links if lk.host == link.peer and lk.peer == link.host
                   and lk.peer_interface == link.interface]
        if len(matches) == 1:
            link.peer_interface = matches[0].interface


def _reverses(links: list[InventoryLink]) -> list[InventoryLink]:
    """The direction no host listed, for every listed link."""
    listed = {(lk.host, lk.interface, lk.peer) for lk in links}
    seen: set[tuple[str, str | None, str, str | None]] = set()
    out = []
    for link in links:
        if link.peer_interface is not None and (link.peer, link.peer_interface, link.host) in listed:
            continue
        key = (link.peer, link.peer_interface, link.host, link.interface)
        if key in seen:
            continue
        seen.add(key)
        out.append(InventoryLink(inventory=link.inventory, host=link.peer, interface=link.peer_interface,
                                 peer=link.host, peer_interface=link.interface, derived=True,
                                 source_file=link.source_file))
    return out
