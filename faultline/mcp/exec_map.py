"""`exec_shell` for MCP agents: a shell command line mapped onto one read-only probe, or refused.

The line is split with `shlex` (never run by a shell) and answered with the output of the probe its program maps
to (`ip addr` is the probe's `ip -j addr show`), the same on the live lab and on a snapshot; anything else raises
`ProbeError`, which the server returns as NIKA's validation error. The programs: docs/nika.md#nika-v1-mcp-servers.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import Any

from faultline.network.devices import Device, DeviceDirectory
from faultline.network.reachability import main_ip
from faultline.network.validate import ProbeError

_SHELL_TOKENS = {"|", "||", "&", "&&", ";", ">", ">>", "<", "<<", "2>", "2>&1", "&>"}
_SHOW = {"show", "list", "ls", "sh", "lst"}
_IP_OBJECTS = {"ip_addr": {"addr", "address", "a", "ad"}, "ip_route": {"route", "r", "ro"},
               "ip_link": {"link", "l", "li"}, "ip_neigh": {"neigh", "neighbor", "neighbour", "n", "ne"}}
_IPTABLES_WRITES = {"-A", "-D", "-I", "-R", "-F", "-X", "-N", "-P", "-Z", "-E", "--append", "--delete", "--insert",
                    "--replace", "--flush", "--delete-chain", "--new-chain", "--policy", "--zero", "--rename-chain"}

Mapped = tuple[str, dict[str, Any]]


def _refuse(command: str, why: str) -> ProbeError:
    return ProbeError(f"refused command {command!r}: {why}",
                      fix="exec_shell runs read-only diagnostics only: ip addr|route|link|neigh, nft list ruleset, "
                          "tc -s qdisc show, ss, ps, nstat, bridge fdb show, iptables -S, cat FILE, tail -n N FILE, "
                          "vtysh -c 'show ...', ping, traceroute, dig, curl URL, udhcpc")


def _operands(tokens: list[str], takes_value: set[str] = frozenset()) -> list[str]:
    """Non-option tokens, skipping the values of options listed in `takes_value`."""
    out, skip = [], False
    for tok in tokens:
        if skip:
            skip = False
        elif tok in takes_value:
            skip = True
        elif not tok.startswith("-"):
            out.append(tok)
    return out


def _option(tokens: list[str], *names: str) -> str | None:
    for i, tok in enumerate(tokens):
        if tok in names and i + 1 < len(tokens):
            return tokens[i + 1]
    return None


def _ip(cmd: str, args: list[str], dev: Device, _: DeviceDirectory) -> Mapped:
    words = _operands(args)
    if not words:
        raise _refuse(cmd, "ip needs an object (addr, route, link, neigh)")
    for probe, names in _IP_OBJECTS.items():
        if words[0] in names:
            if len(words) > 1 and words[1] not in _SHOW and words[1] != "dev":
                raise _refuse(cmd, f"only `ip {words[0]} show` is allowed")
            return probe, {"dev": dev.name}
    raise _refuse(cmd, f"ip object {words[0]!r} is not available")


def _fixed(probe: str, required: tuple[str, ...] = ()) -> Callable[[str, list[str], Device, DeviceDirectory], Mapped]:
    def mapper(cmd: str, args: list[str], dev: Device, _: DeviceDirectory) -> Mapped:
        words = _operands(args)
        if required and tuple(words[: len(required)]) != required:
            raise _refuse(cmd, f"only `{' '.join(required)}` is allowed")
        if probe == "tc_qdisc" and len(words) > 1 and words[1] not in _SHOW:
            raise _refuse(cmd, "only `tc qdisc show` is allowed")
        if probe == "sockets" and any(a in ("-K", "--kill") for a in args):
            raise _refuse(cmd, "ss --kill changes state")
        return probe, {"dev": dev.name}

    return mapper


def _iptables(cmd: str, args: list[str], dev: Device, _: DeviceDirectory) -> Mapped:
    if any(a in _IPTABLES_WRITES for a in args):
        raise _refuse(cmd, "iptables may only list rules (-S or -L)")
    return "iptables_rules", {"dev": dev.name, "table": _option(args, "-t", "--table") or "filter"}


def _files(cmd: str, args: list[str], dev: Device, _: DeviceDirectory, *, tail: bool) -> Mapped:
    paths = _operands(args, {"-n", "--lines"})
    if len(paths) != 1:
        raise _refuse(cmd, "give exactly one file")
    if not tail:
        return "read_file", {"dev": dev.name, "path": paths[0]}
    lines = _option(args, "-n", "--lines") or "200"
    if not lines.isdigit():
        raise _refuse(cmd, "tail -n needs a number")
    return "tail_file", {"dev": dev.name, "path": paths[0], "lines": int(lines)}


def _vtysh(cmd: str, args: list[str], dev: Device, _: DeviceDirectory) -> Mapped:
    shows = [args[i + 1] for i, tok in enumerate(args[:-1]) if tok in ("-c", "--command")]
    if len(shows) != 1:
        raise _refuse(cmd, "give exactly one -c 'show ...' command")
    return "vtysh_show", {"dev": dev.name, "command": " ".join(shows[0].split())}


def _target_ip(cmd: str, target: str, directory: DeviceDirectory) -> str:
    try:
        found = main_ip(directory.device(target))
    except KeyError:
        return target  # an address; the probe validates it
    if found is None:
        raise _refuse(cmd, f"device {target!r} has no address")
    return found


def _ping(cmd: str, args: list[str], dev: Device, directory: DeviceDirectory) -> Mapped:
    ops = _operands(args, {"-c", "-i", "-W", "-w", "-s", "-I", "-t"})
    if len(ops) != 1:
        raise _refuse(cmd, "give one destination")
    count = _option(args, "-c") or "3"
    if not count.isdigit():
        raise _refuse(cmd, "ping -c needs a number")
    return "ping", {"src": dev.name, "dst_ip": _target_ip(cmd, ops[0], directory), "count": int(count)}


def _traceroute(cmd: str, args: list[str], dev: Device, directory: DeviceDirectory) -> Mapped:
    ops = _operands(args, {"-m", "-q", "-w", "-f"})
    if len(ops) != 1:
        raise _refuse(cmd, "give one destination")
    hops = _option(args, "-m") or "15"
    if not hops.isdigit():
        raise _refuse(cmd, "traceroute -m needs a number")
    return "traceroute", {"src": dev.name, "dst_ip": _target_ip(cmd, ops[0], directory), "max_hops": int(hops)}


def _dig(cmd: str, args: list[str], dev: Device, _: DeviceDirectory) -> Mapped:
    server = next((a[1:] for a in args if a.startswith("@")), None)
    rtype = _option(args, "-t") or "A"
    words = [a for a in _operands(args, {"-t", "-q", "-p"}) if not a.startswith(("@", "+"))]
    name = _option(args, "-q") or (words[0] if words else None)
    if name is None:
        raise _refuse(cmd, "give a name to look up")
    if len(words) > 1 and name == words[0]:
        rtype = words[1]
    port = _option(args, "-p")
    if port is not None and not port.isdigit():
        raise _refuse(cmd, "dig -p needs a port number")
    return "dig", {"src": dev.name, "name": name, "server": server, "rtype": rtype, "tcp": "+tcp" in args,
                   **({"port": int(port)} if port and int(port) != 53 else {})}


def _curl(cmd: str, args: list[str], dev: Device, _: DeviceDirectory) -> Mapped:
    urls = [a for a in args if a.startswith(("http://", "https://"))]
    if len(urls) != 1:
        raise _refuse(cmd, "give one http(s) URL")
    return "http_get", {"src": dev.name, "url": urls[0]}


def _udhcpc(cmd: str, args: list[str], dev: Device, _: DeviceDirectory) -> Mapped:
    return "dhcp_check", {"src": dev.name, "ifname": _option(args, "-i", "--interface") or "eth0"}


_PROGRAMS: dict[str, Callable[[str, list[str], Device, DeviceDirectory], Mapped]] = {
    "ip": _ip, "ifconfig": _fixed("ip_addr"), "nft": _fixed("nft_ruleset", ("list", "ruleset")),
    "tc": _fixed("tc_qdisc", ("qdisc",)), "ss": _fixed("sockets"), "netstat": _fixed("sockets"),
    "ps": _fixed("processes"), "nstat": _fixed("nstat"), "bridge": _fixed("bridge_fdb", ("fdb",)),
    "iptables": _iptables, "vtysh": _vtysh, "ping": _ping, "traceroute": _traceroute, "dig": _dig, "curl": _curl,
    "udhcpc": _udhcpc,
    "cat": lambda c, a, d, r: _files(c, a, d, r, tail=False), "tail": lambda c, a, d, r: _files(c, a, d, r, tail=True),
}


def command_to_probe(command: str, device: Device, directory: DeviceDirectory) -> Mapped:
    """The (probe, arguments) that answers `command` on `device`; ProbeError when it is not allowed."""
    if not isinstance(command, str) or not command.strip():
        raise ProbeError("empty command", fix="give a command such as `ip addr`")
    if any(c in command for c in ("`", "$(", "\n", "\r", "\x00")):
        raise _refuse(command, "no command substitution or multiple lines")
    try:
        tokens = shlex.split(command)
    except ValueError as exc:
        raise _refuse(command, f"cannot parse it ({exc})") from None
    if any(tok in _SHELL_TOKENS for tok in tokens):
        raise _refuse(command, "no pipes, redirections or command lists")
    if tokens[0] == "busybox" and len(tokens) > 1:
        tokens = tokens[1:]
    program = tokens[0].rsplit("/", 1)[-1]
    mapper = _PROGRAMS.get(program)
    if mapper is None:
        raise _refuse(command, f"{program!r} is not an allowed program")
    return mapper(command, tokens[1:], device, directory)
