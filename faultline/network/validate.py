"""Argument validation for probes: every value that reaches a command line passes one of these first.

Each validator returns the value in a normalised form (the form then used in argv) or raises
`ProbeError`. Patterns are anchored with `fullmatch`, so a trailing newline never slips through.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from faultline.errors import FaultlineError

if TYPE_CHECKING:  # not imported at run time: the SSH forced command loads this module for every command
    from faultline.network.devices import Device, DeviceDirectory

_DEVICE = re.compile(r"[a-z][a-z0-9_-]{0,30}")
_LABEL = r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9])?"
_HOSTNAME = re.compile(rf"(?=.{{1,253}}\Z){_LABEL}(?:\.{_LABEL})*\.?")
_INTERFACE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,14}")
_URL = re.compile(
    r"(?P<scheme>https?)://(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]{1,253})(?::(?P<port>[0-9]{1,5}))?"
    r"(?P<rest>/[A-Za-z0-9._~/%+=-]*(?:\?[A-Za-z0-9._~/%+=&-]*)?)?"
)
_VTYSH_TOKEN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./:-]*")
DNS_TYPES = frozenset({"A", "AAAA", "CNAME", "MX", "NS", "PTR", "SOA", "SRV", "TXT", "ANY"})
IPTABLES_TABLES = frozenset({"filter", "nat", "mangle", "raw"})
# read-only vtysh commands, as token prefixes: "show ip bgp summary json" matches ("show", "ip", "bgp")
VTYSH_PREFIXES: tuple[tuple[str, ...], ...] = tuple(tuple(p.split()) for p in (
    "show ip bgp", "show bgp", "show ip ospf", "show ipv6 ospf6", "show ip route", "show ipv6 route",
    "show ip rip", "show running-config", "show interface", "show ip protocols", "show version",
    "show ip nht", "show route-map", "show ip prefix-list", "show bfd", "show zebra",
))


class ProbeError(FaultlineError):
    """A probe call was refused: unknown probe, unknown device or an argument that failed validation."""


def _need_str(what: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ProbeError(f"{what} must be a string, got {type(value).__name__}")
    return value


def device(directory: DeviceDirectory, name: Any) -> Device:
    """A device name that is well-formed and present in the directory."""
    name = _need_str("device name", name)
    from faultline.network.devices import valid_device_name

    if not (_DEVICE.fullmatch(name) and valid_device_name(name)):
        raise ProbeError(f"invalid device name {name!r}", fix="use a lab device name such as 'r1' or 'h1'")
    try:
        return directory.device(name)
    except KeyError:
        known = ", ".join(d.name for d in directory.devices()[:20])
        raise ProbeError(f"unknown device {name!r}", fix=f"known devices: {known}") from None


def ip(value: Any) -> str:
    """An IPv4 or IPv6 address without scope id, returned in canonical form."""
    value = _need_str("IP address", value)
    if "%" in value:
        raise ProbeError(f"invalid IP address {value!r}", fix="scoped IPv6 addresses are not accepted")
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        raise ProbeError(f"invalid IP address {value!r}", fix="give a plain address such as 10.0.1.2") from None


def hostname(value: Any) -> str:
    """A DNS name made of letters, digits, '-' and '_' labels (no leading '-', no spaces)."""
    value = _need_str("hostname", value)
    if not _HOSTNAME.fullmatch(value):
        raise ProbeError(f"invalid hostname {value!r}", fix="give a DNS name such as web.lab.test")
    return value


def dns_type(value: Any) -> str:
    value = _need_str("record type", value).upper()
    if value not in DNS_TYPES:
        raise ProbeError(f"unsupported DNS record type {value!r}", fix=f"one of {', '.join(sorted(DNS_TYPES))}")
    return value


def url(value: Any) -> str:
    """An http(s) URL with a plain host or bracketed IPv6, optional port, and a conservative path/query."""
    value = _need_str("URL", value)
    match = _URL.fullmatch(value)
    port = match and match.group("port")
    if not match or (port and not 1 <= int(port) <= 65535):
        raise ProbeError(f"invalid URL {value!r}", fix="give http://HOST[:PORT]/path with no spaces or quotes")
    host = match.group("host")
    if host.startswith("["):
        ip(host[1:-1])
    elif not _HOSTNAME.fullmatch(host):
        raise ProbeError(f"invalid host in URL {value!r}")
    return value


def interface(value: Any) -> str:
    value = _need_str("interface name", value)
    if not _INTERFACE.fullmatch(value):
        raise ProbeError(f"invalid interface name {value!r}", fix="give a name such as eth0")
    return value


def number(what: str, value: Any, low: float, high: float, *, integer: bool = True) -> Any:
    """A number within [low, high]; booleans and strings are refused."""
    ok_type = isinstance(value, int) if integer else isinstance(value, (int, float))
    if isinstance(value, bool) or not ok_type or not low <= value <= high:
        raise ProbeError(f"{what} must be {'an integer' if integer else 'a number'} in [{low}, {high}], got {value!r}")
    return value


def choice(what: str, value: Any, allowed: frozenset[str]) -> str:
    value = _need_str(what, value)
    if value not in allowed:
        raise ProbeError(f"invalid {what} {value!r}", fix=f"one of {', '.join(sorted(allowed))}")
    return value


def vtysh_command(value: Any) -> str:
    """A `show ...` command of single-space-separated plain tokens, starting with an allowed prefix."""
    value = _need_str("vtysh command", value)
    tokens = value.split(" ")
    if not all(_VTYSH_TOKEN.fullmatch(t) for t in tokens):
        raise ProbeError(f"refused vtysh command {value!r}",
                         fix="only plain 'show ...' words are allowed: no pipes, ';', quotes or newlines")
    if not any(tuple(tokens[: len(p)]) == p for p in VTYSH_PREFIXES):
        allowed = "; ".join(" ".join(p) for p in VTYSH_PREFIXES)
        raise ProbeError(f"refused vtysh command {value!r}", fix=f"allowed prefixes: {allowed}")
    return value


def file_path(value: Any, roots: Sequence[str | os.PathLike[str]]) -> str:
    """An absolute path with no '..' whose real location is inside one of `roots`; returns the real path."""
    value = _need_str("path", value)
    if not roots:
        raise ProbeError("this device has no readable files", fix="configure file roots for the device")
    if not value.startswith("/") or any(c in value for c in "\x00\n\r") or ".." in Path(value).parts:
        raise ProbeError(f"refused path {value!r}", fix="give an absolute path without '..'")
    real = os.path.realpath(value)
    for root in roots:
        real_root = os.path.realpath(root)
        if real == real_root or real.startswith(real_root.rstrip("/") + "/"):
            return real
    raise ProbeError(f"path {value!r} is outside the device's files",
                     fix=f"allowed roots: {', '.join(str(x) for x in roots)}")
