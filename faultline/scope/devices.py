"""Devices a ticket points at: names, DNS names, addresses, interfaces, role and site words.

The devices known are the inventory's hosts and every device the logs name (a collector files each
sender under its hostname). Names are matched loosely, as people write them: `core_router_1` is
also "core router 1" and "Core-Router-1", `spine2` is also "Spine 2", `dr01` is also "dr1".
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field

_IPV4 = re.compile(r"(?<![\d.])(\d{1,3}(?:\.\d{1,3}){3})(?:/\d{1,2})?(?![\d.]*\d)")
_INTERFACE = re.compile(
    r"(?<![\w/])(HundredGigE|Hu|FourHundredGigE|FH|FortyGigE|Fo|TwentyFiveGigE|TF|TenGigE|Te|GigabitEthernet|Gi|"
    r"Bundle-Ether|BE|Ethernet|Eth|et|xe|ge|swp|eth|ens|enp|eno|veth|bond|vlan)(\d+(?:[/.:]\d+)*)(?![\w/])",
    re.IGNORECASE)
# short and long spellings of the same interface kind (IOS-XR writes Hu0/0/0/8 and HundredGigE0/0/0/8)
_KINDS = {"hu": "hundredgige", "fh": "fourhundredgige", "fo": "fortygige", "tf": "twentyfivegige",
          "te": "tengige", "gi": "gigabitethernet", "be": "bundle-ether", "eth": "ethernet", "et": "ethernet"}
# words that look like device names but are not ("HTTP/2", "IPv4", "v1") are cut by needing letters and digits
_IDENTIFIER = re.compile(r"(?<![\w.-])([A-Za-z][A-Za-z_-]*\d[\w-]*(?:\.[A-Za-z][\w-]*)*)(?![\w-])")


# what a ticket says about a service, and the word its servers carry in their name or role
_SERVICES = {
    "dns": re.compile(r"\b(?:dns|resolv\w*|name resolution|nxdomain|servfail|lookups?|nslookup|dig)\b", re.IGNORECASE),
    "dhcp": re.compile(r"\b(?:dhcp\w*|no ip address|ip address(?:es)? (?:is|are) missing|leases?|169\.254)\b",
                       re.IGNORECASE),
    "web": re.compile(r"\b(?:https?|web ?(?:site|page|server|app)s?|nginx|50[234]|page load\w*)\b", re.IGNORECASE),
}


@dataclass
class Candidate:
    """A device the scope can choose (not a network `Device`): what the inventory and the logs say it is called and
    has."""

    name: str
    addresses: set[str] = field(default_factory=set)
    dns_names: set[str] = field(default_factory=set)
    interfaces: set[str] = field(default_factory=set)
    role: str | None = None
    site: str | None = None
    sources: set[str] = field(default_factory=set)  # inventory, logs


@dataclass(frozen=True)
class Mention:
    """A device the ticket points at, how, and with which of its words."""

    device: str
    kind: str  # named | address | interface | role
    reason: str
    matched: str
    interface: str | None = None


def interface_key(name: str) -> str | None:
    """A canonical form of an interface name (`Hu0/0/0/8` == `HundredGigE0/0/0/8`), or None if it is not one."""
    match = _INTERFACE.fullmatch(name.strip())
    if not match:
        return None
    kind = match.group(1).lower()
    return _KINDS.get(kind, kind) + match.group(2)


def interfaces_in(text: str) -> list[tuple[str, str]]:
    """(as written, canonical key) for every interface name in `text`."""
    return [(m.group(0), _KINDS.get(m.group(1).lower(), m.group(1).lower()) + m.group(2))
            for m in _INTERFACE.finditer(text)]


def name_pattern(name: str) -> re.Pattern[str]:
    """A loose pattern for a device name: any separator (or none) between its parts, leading zeros optional."""
    parts = re.findall(r"[a-z]+|\d+", name.lower())
    body = r"[\s_.\-]*".join("0*" + str(int(p)) if p.isdigit() else re.escape(p) for p in parts)
    return re.compile(r"(?<![a-z0-9])" + body + r"(?![a-z0-9])", re.IGNORECASE)


def _where(span: tuple[int, int], title_len: int) -> str:
    return "the title" if span[0] < title_len else "the description"


def _plural(word: str) -> str:
    return word + ("es" if word.endswith(("s", "x", "h")) else "s")


def _role_pattern(word: str) -> re.Pattern[str]:
    base = re.escape(word.lower()).replace(r"\_", r"[\s_-]?")
    alts = [base, re.escape(_plural(word.lower())).replace(r"\_", r"[\s_-]?")]
    if word.lower().endswith("f"):
        alts.append(re.escape(word.lower()[:-1] + "ves"))
    return re.compile(r"(?<![a-z0-9])(?:" + "|".join(alts) + r")(?![a-z0-9])", re.IGNORECASE)


def families(devices: dict[str, Candidate]) -> dict[str, list[str]]:
    """Name families: `leaf1`..`leaf8` -> {"leaf": [...]}; a family needs at least two members."""
    found: dict[str, list[str]] = {}
    for name in devices:
        match = re.fullmatch(r"([a-z]+(?:[_-][a-z]+)*)[_-]?\d+(?:[_-]\d+)*", name.lower())
        if match:
            found.setdefault(match.group(1), []).append(name)
    return {stem: sorted(names) for stem, names in found.items() if len(names) >= 2 and len(stem) >= 3}


def resolve_mentions(title: str, description: str, devices: dict[str, Candidate],
                     learned: dict[str, tuple[str, str]] | None = None) -> tuple[list[Mention], list[str]]:
    """The devices `title` + `description` point at, and the device-like words that matched none.

    `learned`: address -> (device, how it was learned) for addresses the logs reveal (no inventory).
    """
    text = f"{title}\n{description}"
    split = len(title) + 1
    mentions: list[Mention] = []
    used: list[tuple[int, int]] = []

    def add(device: str, kind: str, reason: str, matched: str, span: tuple[int, int], interface: str | None = None):
        mentions.append(Mention(device, kind, reason, matched, interface))
        used.append(span)

    for name, dev in sorted(devices.items(), key=lambda kv: -len(kv[0])):  # longest names first
        for match in name_pattern(name).finditer(text):
            if any(a <= match.start() < b for a, b in used):
                continue
            add(name, "named", f"named in {_where(match.span(), split)}", match.group(0), match.span())
        for dns in dev.dns_names:
            for match in re.finditer(r"(?<![\w.-])" + re.escape(dns) + r"(?![\w-])", text, re.IGNORECASE):
                add(name, "named", f"its DNS name {dns} is in {_where(match.span(), split)}", match.group(0),
                    match.span())
    owners: dict[str, tuple[str, str]] = dict(learned or {})
    for name, dev in devices.items():
        for address in dev.addresses:
            owners[address] = (name, "inventory")
    for match in _IPV4.finditer(text):
        address = match.group(1)
        try:
            ipaddress.IPv4Address(address)
        except ValueError:
            continue
        if address in owners:
            device, how = owners[address]
            add(device, "address", f"address {address} in {_where(match.span(), split)} is {device}'s ({how})",
                match.group(0), match.span())
    named = {m.device for m in mentions}
    for written, key in interfaces_in(text):
        holders = [n for n, d in devices.items() if key in {interface_key(i) for i in d.interfaces}]
        owner = [n for n in holders if n in named] or (holders if len(holders) <= 3 else [])
        for device in owner:
            mentions.append(Mention(device, "interface", f"interface {written} is {device}'s", written, written))
    lowered = text.lower()
    roles: dict[str, list[str]] = {}
    for name, dev in devices.items():
        for word in (dev.role, dev.site):
            if word and len(word) >= 3:
                roles.setdefault(word, []).append(name)
    for stem, names in families(devices).items():
        roles.setdefault(stem, [])
        roles[stem] = sorted(set(roles[stem]) | set(names))
    for word, names in roles.items():
        match = _role_pattern(word).search(lowered)
        if match and not any(a <= match.start() < b for a, b in used):
            for device in names:
                if device not in named:
                    mentions.append(Mention(device, "role", f"'{match.group(0)}' in {_where(match.span(), split)} "
                                            f"names the {word} group", match.group(0)))
    named = {m.device for m in mentions}
    for service, pattern in _SERVICES.items():
        match = pattern.search(text)
        if not match:
            continue
        for name, dev in devices.items():
            words = f"{name} {dev.role or ''}".lower()
            if name not in named and re.search(rf"(?<![a-z]){service}(?![a-z])", words.replace("_", " ")):
                mentions.append(Mention(name, "service", f"'{match.group(0)}' in {_where(match.span(), split)} "
                                        f"points at the {service.upper()} service it runs", match.group(0)))
    matched_words = {m.matched.lower() for m in mentions}
    unmatched = []
    for match in list(_IDENTIFIER.finditer(text)) + list(_IPV4.finditer(text)):
        word = match.group(1)
        if (word.lower() not in matched_words and not any(a <= match.start() < b for a, b in used)
                and interface_key(word) is None and word not in unmatched):
            unmatched.append(word)
    return mentions, unmatched
