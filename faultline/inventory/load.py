"""Loading a nornir-style SimpleInventory folder into typed hosts and links. Pure: no warehouse.

`hosts.yaml` is required, `groups.yaml` and `defaults.yaml` optional; values resolve host > groups > defaults as in
nornir, a bad entry is a rejected record and the rest loads. The rules: docs/inventory.md#the-format and
docs/inventory.md#validation.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any

from faultline.errors import FaultlineError
from faultline.inventory.elements import READ_KEYS, Element, Notes, parse_element
from faultline.inventory.links import Listed, build_links
from faultline.inventory.models import FileCount, InventoryHost, InventoryReject, LoadedInventory
from faultline.inventory.yamlfile import Entry, raw_json, read_document, read_entries

_ATTRS = ("hostname", "port", "username", "platform")


def inventory_folder(path: Path) -> Path:
    """The inventory folder of `path` (a folder, or its hosts.yaml); FaultlineError when it has no hosts.yaml."""
    path = Path(path).resolve()
    folder = path.parent if path.is_file() and path.name == "hosts.yaml" else path
    if not (folder / "hosts.yaml").is_file():
        raise FaultlineError(f"{path} is not an inventory folder: it has no hosts.yaml",
                             fix="pass a folder holding hosts.yaml (groups.yaml and defaults.yaml are optional)")
    return folder


def load_inventory(folder: Path, name: str | None = None) -> LoadedInventory:
    """Read, validate and resolve the inventory in `folder` (named `name`, else after the folder)."""
    folder = inventory_folder(folder)
    name = name or folder.name
    notes = Notes()
    rejects: list[InventoryReject] = []
    files: dict[str, FileCount] = {}
    defaults = _defaults(folder / "defaults.yaml", notes, files)
    groups, bad_groups = _groups(folder / "groups.yaml", notes, rejects, files)
    hosts_file = folder / "hosts.yaml"
    entries = read_entries(hosts_file)
    count = files["hosts.yaml"] = FileCount(path=str(hosts_file), records_in=len(entries))
    hosts: list[InventoryHost] = []
    listed: list[Listed] = []
    bad_hosts: set[str] = set()
    lines: dict[str, int] = {}

    def reject(entry: Entry, check: str, reason: str) -> None:
        rejects.append(InventoryReject(file="hosts.yaml", target_table="inventory_hosts", record_no=entry.line,
                                       check=check, reason=reason, raw=_raw(entry)))
        if isinstance(entry.key, str):
            bad_hosts.add(entry.key)

    for entry in entries:
        label = f"host {entry.key!r} (hosts.yaml line {entry.line})"
        if entry.error is not None:
            reject(entry, "malformed", f"{label}: {entry.error}; write each key once")
            continue
        if not isinstance(entry.key, str) or not entry.key:
            reject(entry, "malformed", f"{label}: a host name must be text; quote it")
            continue
        if entry.key in lines:
            reject(entry, "duplicate_host", f"{label} is defined again (first at line {lines[entry.key]}); "
                   "the first definition was kept; merge the two entries into one")
            continue
        lines[entry.key] = entry.line
        element = parse_element(entry.value, label, notes)
        if isinstance(element, str):
            reject(entry, "malformed", f"{element}; fix the value")
            continue
        problem = _group_problem(element.groups, groups, bad_groups)
        if problem:
            reject(entry, "unknown_group", f"{label} {problem}")
            continue
        chain = [element] + [groups[g] for g in _lineage(element.groups, groups)] + [defaults]
        host = _resolve(name, entry, chain, str(hosts_file))
        if not host.hostname and not host.addresses:
            reject(entry, "no_address", f"{label} has no address: give it a hostname (IP or DNS name) or "
                   "data.addresses, itself or through a group or defaults")
            continue
        hosts.append(host)
        listed.append(Listed(entry.key, list(element.data.get("links") or []), entry.link_lines))
    for host_name in list(lines):  # a duplicate's first definition stays; only the later one was marked
        if host_name in bad_hosts and any(h.host == host_name for h in hosts):
            bad_hosts.discard(host_name)
    known = {h.host for h in hosts}
    result = build_links(listed, inventory=name, source_file=str(hosts_file), known=known,
                         quarantined_hosts=bad_hosts - known, host_line=lines)
    rejects += result.rejects
    _add_link_interfaces(hosts, result.links)
    host_rejects = sum(r.file == "hosts.yaml" and r.target_table == "inventory_hosts" for r in rejects)
    count.records_in += result.accepted + len(result.rejects)
    count.accepted = len(hosts) + result.accepted
    count.quarantined = host_rejects + len(result.rejects)
    return LoadedInventory(name=name, folder=str(folder), hosts=hosts, links=result.links, rejects=rejects,
                           files=files, messages=notes.messages())


def _raw(entry: Entry) -> str:
    return raw_json({str(entry.key): entry.value}) if entry.error is None else entry.raw


def _defaults(path: Path, notes: Notes, files: dict[str, FileCount]) -> Element:
    if not path.is_file():
        return Element()
    value = read_document(path)
    files["defaults.yaml"] = FileCount(path=str(path), records_in=int(value is not None),
                                       accepted=int(value is not None))
    element = parse_element(value, "defaults", notes, allow_groups=False)
    if isinstance(element, str):
        raise FaultlineError(f"{path}: {element}",
                             fix="fix defaults.yaml (it applies to every host, so nothing was loaded)")
    if element.data.get("links"):
        notes.ignored.append("defaults: data.links ignored (links belong to hosts)")
    return element


def _groups(path: Path, notes: Notes, rejects: list[InventoryReject],
            files: dict[str, FileCount]) -> tuple[dict[str, Element], set[str]]:
    """Valid groups by name, and the names of rejected ones."""
    if not path.is_file():
        return {}, set()
    entries = read_entries(path)
    groups: dict[str, Element] = {}
    where: dict[str, Entry] = {}
    bad: set[str] = set()

    def reject(entry: Entry, check: str, reason: str) -> None:
        rejects.append(InventoryReject(file="groups.yaml", target_table="inventory_hosts", record_no=entry.line,
                                       check=check, reason=reason, raw=_raw(entry)))

    for entry in entries:
        label = f"group {entry.key!r} (groups.yaml line {entry.line})"
        if entry.error is not None or not isinstance(entry.key, str) or not entry.key:
            reject(entry, "malformed", f"{label}: {entry.error or 'a group name must be text'}; fix the entry")
            bad.add(str(entry.key))
            continue
        if entry.key in where:
            reject(entry, "duplicate_group", f"{label} is defined again (first at line {where[entry.key].line}); "
                   "the first definition was kept; merge the two entries into one")
            continue
        where[entry.key] = entry
        element = parse_element(entry.value, label, notes)
        if isinstance(element, str):
            reject(entry, "malformed", f"{element}; fix the value")
            bad.add(entry.key)
            continue
        if element.data.get("links"):
            notes.ignored.append(f"group {entry.key!r}: data.links ignored (links belong to hosts)")
        groups[entry.key] = element
    _refuse_cycles(path, groups)
    changed = True
    while changed:  # a group whose parent is unknown or rejected is rejected, and so on down
        changed = False
        for group_name, element in list(groups.items()):
            problem = _group_problem(element.groups, groups, bad)
            if problem:
                entry = where[group_name]
                reject(entry, "unknown_group", f"group {group_name!r} (groups.yaml line {entry.line}) {problem}")
                del groups[group_name]
                bad.add(group_name)
                changed = True
    files["groups.yaml"] = FileCount(path=str(path), records_in=len(entries), accepted=len(groups),
                                     quarantined=len(entries) - len(groups))
    return groups, bad


def _group_problem(names: list[str], groups: dict[str, Element], bad: set[str]) -> str | None:
    unknown = [g for g in names if g not in groups and g not in bad]
    rejected = [g for g in names if g in bad]
    if unknown:
        return (f"names group(s) {', '.join(map(repr, unknown))} not defined in groups.yaml; "
                "add them to groups.yaml or fix the name")
    if rejected:
        return f"names group(s) {', '.join(map(repr, rejected))} that were quarantined (see their own reasons)"
    return None


def _refuse_cycles(path: Path, groups: dict[str, Element]) -> None:
    state: dict[str, int] = {}  # 1 visiting, 2 done

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for parent in groups[node].groups:
            if parent not in groups:
                continue
            if state.get(parent) == 1:
                cycle = trail[trail.index(parent):] + [parent] if parent in trail else [node, parent]
                raise FaultlineError(f"{path}: groups inherit from each other in a cycle: {' -> '.join(cycle)}",
                                     fix="remove one of these `groups:` entries so inheritance has an end")
            if state.get(parent) is None:
                visit(parent, trail + [parent])
        state[node] = 2

    for group_name in groups:
        if group_name not in state:
            visit(group_name, [group_name])


def _lineage(names: list[str], groups: dict[str, Element]) -> list[str]:
    """Groups in resolution order: each listed group, then its own groups depth-first; each once."""
    out: list[str] = []

    def walk(group_name: str) -> None:
        if group_name in out:
            return
        out.append(group_name)
        for parent in groups[group_name].groups:
            walk(parent)

    for group_name in names:
        walk(group_name)
    return out


def _resolve(inventory: str, entry: Entry, chain: list[Element], source_file: str) -> InventoryHost:
    attrs = {a: next((getattr(e, a) for e in chain if getattr(e, a) is not None), None) for a in _ATTRS}
    data: dict[str, Any] = {}
    for element in chain:
        for key, value in element.data.items():
            data.setdefault(key, value)
    data.pop("links", None)  # a host's own links are read separately
    addresses = []
    if attrs["hostname"]:
        try:
            addresses.append(str(ipaddress.ip_address(attrs["hostname"])))
        except ValueError:
            pass  # a DNS name
    addresses += [str(ipaddress.ip_interface(a).ip) for a in data.get("addresses") or []]
    networks = [str(ipaddress.ip_interface(a)) if "/" in str(a) else str(a) for a in data.get("addresses") or []]
    read = {key: data.pop(key, None) for key in READ_KEYS if key != "links"}
    return InventoryHost(
        inventory=inventory, host=entry.key, groups=list(chain[0].groups), role=read["role"], site=read["site"],
        addresses=list(dict.fromkeys(addresses)), networks=list(dict.fromkeys(networks)),
        dns_names=list(dict.fromkeys(read["dns_names"] or [])),
        interfaces=list(dict.fromkeys(read["interfaces"] or [])), data=data, source_file=source_file,
        source_line=entry.line, **attrs)


def _add_link_interfaces(hosts: list[InventoryHost], links: list) -> None:
    by_name = {h.host: h for h in hosts}
    for link in links:
        host = by_name[link.host]
        if link.interface is not None and link.interface not in host.interfaces:
            host.interfaces.append(link.interface)
